//! Skills through the gateway (SEP-2640): an upstream's skills mounted under its namespace.
//!
//! An upstream skill `skill://acme/refunds/SKILL.md` of upstream `kb` is the gateway's
//! `skill://kb/acme/refunds/SKILL.md` ([`super::uri`]): the namespace becomes the first path
//! segment, and the skill's name (the last one) stays, as its `SKILL.md` says it must. Only
//! URI fields are renamed; [`local_entry`] renames a `skills/list` entry's `uri` and its
//! manifest's, and leaves the frontmatter, digests and sizes as the upstream sent them.
//!
//! The gateway serves the skills from its own skill registry ([`mirror`]): when it mounts an
//! upstream, it reads each listed skill's files through the library's client, which verifies
//! each against the upstream's entry (size, SHA-256, frontmatter), and registers the very
//! bytes under the local URIs. The entry the gateway publishes is computed from those bytes,
//! so its digests and sizes are the upstream's; `skills/list`, `skills/get`,
//! `resources/directory/read` and `resources/read` of a skill file are answered from it.
//! What cannot be held this way is left out and reported: a `"dynamic"` skill (its content
//! is generated at each read), a skill whose files fail verification, and whatever would take
//! an upstream past [`MAX_MIRRORED_BYTES`]. A skill is read again when its upstream's lists
//! change or it reconnects.

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::skills::check_entry;
use codomyrmex_mcp::skills::{McpSkillRegistry, SkillDefinition};
use codomyrmex_mcp::wire::skills::SKILL_MD;
use codomyrmex_mcp::wire::skills::{Skill, SkillResources};
use serde_json::Value;

use super::uri::{local_uri, split_local_uri};

/// The most bytes of skill files the gateway holds for one upstream: 64 MiB (four skills at
/// the extension's per-skill limit).
pub const MAX_MIRRORED_BYTES: u64 = 64 * 1024 * 1024;

/// A `skills/list` entry of `namespace`'s upstream, checked as the library's client checks
/// one, with its `uri` and its manifest's URIs under the namespace: the skill's name, its
/// upstream `SKILL.md` URI and the local entry.
pub fn local_entry(namespace: &str, raw: &Value) -> Result<(String, String, Value), String> {
    let skill: Skill = serde_json::from_value(raw.clone()).map_err(|e| e.to_string())?;
    check_entry(&skill).map_err(|e| e.to_string())?;
    let name = skill.name().unwrap_or_default().to_owned();
    let rename = |uri: &str| {
        local_uri(namespace, uri)
            .ok_or_else(|| format!("{:?} is not a URI the gateway can rename", shown(uri)))
    };
    let mut local = skill.clone();
    local.uri = rename(&skill.uri)?;
    if let SkillResources::Files(files) = &mut local.resources {
        for f in files.iter_mut() {
            f.uri = rename(&f.uri)?;
        }
    }
    let local = serde_json::to_value(&local).map_err(|e| e.to_string())?;
    Ok((name, skill.uri, local))
}

/// The upstream's entry of a local one ([`local_entry`]'s inverse).
fn upstream_entry(local: &Value) -> Result<Skill, String> {
    let mut skill: Skill = serde_json::from_value(local.clone()).map_err(|e| e.to_string())?;
    let back = |uri: &str| {
        split_local_uri(uri)
            .map(|(_, u)| u)
            .ok_or_else(|| format!("{:?} is not a local URI", shown(uri)))
    };
    skill.uri = back(&skill.uri)?;
    if let SkillResources::Files(files) = &mut skill.resources {
        for f in files.iter_mut() {
            f.uri = back(&f.uri)?;
        }
    }
    Ok(skill)
}

/// The skill path of a local `SKILL.md` URI (`skill://kb/acme/refunds/SKILL.md` is
/// `kb/acme/refunds`).
fn skill_path(local_uri: &str) -> Option<&str> {
    local_uri
        .strip_prefix("skill://")?
        .strip_suffix(SKILL_MD)?
        .strip_suffix('/')
}

/// Reads the skills of `entries` (local `SKILL.md` URI and local entry) from `client`, each
/// verified against its upstream entry, and registers them in `registry` under the local
/// URIs; returns what was left out, and why. At most [`MAX_MIRRORED_BYTES`] are read in
/// all; a skill whose name a skill already registered has (another upstream's) is left out.
pub async fn mirror(
    client: &McpClient,
    entries: Vec<(String, Value)>,
    registry: &McpSkillRegistry,
) -> Vec<String> {
    let mut left_out = Vec::new();
    let mut budget = MAX_MIRRORED_BYTES;
    for (local, entry) in &entries {
        match mirror_one(client, local, entry, &mut budget).await {
            Ok(definition) => {
                // Clients find a skill by its name: another upstream's keeps it.
                let taken = registry
                    .skills()
                    .into_iter()
                    .find(|s| s.name() == definition.name() && s.uri() != definition.uri());
                if let Some(earlier) = taken {
                    left_out.push(format!(
                        "skill {}: the name {:?} is already taken by {}",
                        shown(local),
                        definition.name(),
                        earlier.uri()
                    ));
                } else if let Err(e) = registry.add(definition) {
                    left_out.push(format!("skill {}: {e}", shown(local)));
                }
            }
            Err(why) => left_out.push(format!("skill {}: {why}", shown(local))),
        }
    }
    left_out
}

async fn mirror_one(
    client: &McpClient,
    local: &str,
    entry: &Value,
    budget: &mut u64,
) -> Result<SkillDefinition, String> {
    let skill = upstream_entry(entry)?;
    let SkillResources::Files(files) = skill.resources.clone() else {
        return Err("a \"dynamic\" skill: its content cannot be served through the gateway".into());
    };
    let total: u64 = files.iter().map(|f| f.size).sum();
    if total > *budget {
        return Err(format!(
            "its {total} bytes would take the upstream past the gateway's {MAX_MIRRORED_BYTES} \
             bytes of skill files"
        ));
    }
    let path = skill_path(local).ok_or("its URI is not a skill's SKILL.md")?;
    let root = skill
        .uri
        .strip_suffix(SKILL_MD)
        .unwrap_or(&skill.uri)
        .to_owned();
    let mut session = client
        .open_skill(skill.clone())
        .map_err(|e| e.to_string())?;
    let skill_md = session.load().await.map_err(|e| e.to_string())?;
    let mut definition = SkillDefinition::new(path, skill_md.bytes).map_err(|e| e.to_string())?;
    for f in files.iter().filter(|f| f.uri != skill.uri) {
        let rel = f
            .uri
            .strip_prefix(&root)
            .ok_or_else(|| format!("{:?} is outside the skill", shown(&f.uri)))?;
        let file = session.read(&f.uri).await.map_err(|e| e.to_string())?;
        definition = definition
            .with_typed_file(rel, file.bytes, file.mime_type)
            .map_err(|e| e.to_string())?;
    }
    // The entry served is computed from the bytes read: it must be the upstream's, renamed.
    let served = serde_json::to_value(definition.entry()).map_err(|e| e.to_string())?;
    if served.get("resources") != entry.get("resources") || served.get("uri") != entry.get("uri") {
        return Err("its files could not be served under the same names, digests and sizes".into());
    }
    *budget -= total;
    Ok(definition)
}

/// A URI as a message shows it: at most 200 characters.
fn shown(uri: &str) -> String {
    uri.chars().take(200).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use codomyrmex_mcp::wire::skills::digest_of;
    use serde_json::json;

    use super::*;

    fn entry(prefix: &str) -> Value {
        json!({
            "uri": format!("skill://{prefix}refunds/SKILL.md"),
            "frontmatter": {"name": "refunds", "description": "Process refunds"},
            "resources": [
                {"uri": format!("skill://{prefix}refunds/SKILL.md"), "digest": digest_of(b"a"), "size": 1},
                {"uri": format!("skill://{prefix}refunds/ref/guide.md"), "digest": digest_of(b"bc"), "size": 2}
            ]
        })
    }

    #[test]
    fn only_uris_are_renamed_both_ways() {
        let (name, upstream, local) = local_entry("kb", &entry("acme/")).unwrap();
        assert_eq!(name, "refunds");
        assert_eq!(upstream, "skill://acme/refunds/SKILL.md");
        assert_eq!(local, entry("kb/acme/"));
        assert_eq!(
            skill_path(local["uri"].as_str().unwrap()),
            Some("kb/acme/refunds")
        );
        let back = serde_json::to_value(upstream_entry(&local).unwrap()).unwrap();
        assert_eq!(back, entry("acme/"));
    }

    #[test]
    fn an_entry_the_client_would_refuse_is_refused() {
        let mut bad = entry("");
        bad["frontmatter"]["name"] = json!("other");
        assert!(local_entry("kb", &bad).is_err());
        assert!(local_entry("kb", &json!({"uri": "skill://x/SKILL.md"})).is_err());
    }
}
