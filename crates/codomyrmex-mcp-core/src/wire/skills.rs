//! The wire types of the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640):
//! `skills/list`, `skills/get` and `resources/directory/read`, the skill entry with its
//! `{uri, digest, size}` manifest or `"dynamic"`, and the capability object.
//!
//! Data only, as the rest of [`crate::wire`]: the engine decides what a request means, the
//! skill registry what a skill is. The digest format (`sha256:` and 64 lowercase hex digits
//! of the file's raw bytes) is here because both sides need it: the server to publish a
//! digest, the client to verify one ([`digest_of`], [`is_digest`]).

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";
/// `skills/list`: the skills a server serves, paginated.
pub const METHOD_SKILLS_LIST: &str = "skills/list";
/// `skills/get`: the entry of one skill, by the URI of its `SKILL.md`.
pub const METHOD_SKILLS_GET: &str = "skills/get";
/// `resources/directory/read`: the direct children of a directory resource.
pub const METHOD_DIRECTORY_READ: &str = "resources/directory/read";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The URI scheme skills are served under.
pub const SKILL_SCHEME: &str = "skill";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The MIME type of a `SKILL.md` resource.
pub const SKILL_MD_MIME_TYPE: &str = "text/markdown";
/// The `_meta` key prefix reserved for this extension on skill resources.
pub const SKILL_META_PREFIX: &str = "io.modelcontextprotocol.skills/";
/// Within frontmatter `metadata`, the key prefix reserved for metadata MCP extensions define.
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";
/// The most entries a skill's `resources` may have, `SKILL.md` included.
pub const MAX_SKILL_RESOURCES: usize = 512;
/// The most bytes a skill's files may total: 16 MiB.
pub const MAX_SKILL_TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// The `resources` value of a skill whose content is generated.
pub const DYNAMIC: &str = "dynamic";

/// The extension's settings under `capabilities.extensions["io.modelcontextprotocol/skills"]`:
/// inline, no envelope. An empty object declares the extension with no optional feature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// The server implements `resources/directory/read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_read: bool,
}

/// One file of a skill: its URI, the SHA-256 digest and the length of its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits of the file's raw bytes.
    pub digest: String,
    /// The length in bytes of the file's raw content (the bytes the digest covers).
    pub size: u64,
}

impl SkillResource {
    /// The entry for `bytes` served at `uri`, its digest and size computed from them.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> Self {
        Self {
            uri: uri.into(),
            digest: digest_of(bytes),
            size: bytes.len() as u64,
        }
    }

    /// Whether `bytes` are what this entry describes: the same length and digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.size == bytes.len() as u64 && self.digest == digest_of(bytes)
    }
}

/// A skill's files: a complete manifest, or `"dynamic"` when stable digests cannot be
/// published. Any other value is refused when decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Files(Vec<SkillResource>),
    /// The content is generated; the entry publishes no manifest.
    Dynamic,
}

impl SkillResources {
    /// The manifest, unless the skill is dynamic.
    pub fn files(&self) -> Option<&[SkillResource]> {
        match self {
            Self::Files(f) => Some(f),
            Self::Dynamic => None,
        }
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Files(files) => files.serialize(s),
            Self::Dynamic => s.serialize_str(DYNAMIC),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ResourcesVisitor;
        impl<'de> Visitor<'de> for ResourcesVisitor {
            type Value = SkillResources;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "an array of {{uri, digest, size}} or the string \"{DYNAMIC}\""
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SkillResources, E> {
                if v == DYNAMIC {
                    Ok(SkillResources::Dynamic)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<SkillResources, A::Error> {
                let files =
                    Vec::<SkillResource>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(SkillResources::Files(files))
            }
        }
        d.deserialize_any(ResourcesVisitor)
    }
}

/// The entry of one skill, the same in `skills/list` and `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` YAML frontmatter as a JSON object, every field the author wrote
    /// (`name` and `description` always).
    pub frontmatter: Map<String, Value>,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
}

impl Skill {
    /// `frontmatter.name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// `frontmatter.description`, when it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }
}

/// `skills/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSkillsParams {
    /// The cursor of the page to read (a previous result's `nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `skills/list` result (a `PaginatedResult` and `CacheableResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The entries of this page; an entry is never split across pages.
    pub skills: Vec<Skill>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the listing may be treated as current, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `"public"` or `"private"` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

/// `skills/get` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// `skills/get` result (a `CacheableResult`; no cursor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: Skill,
    /// How long the entry may be treated as current, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `"public"` or `"private"` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

/// `resources/directory/read` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The URI of the directory resource, without a trailing slash.
    pub uri: String,
    /// The cursor of the page to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One direct child of a directory: a file's ordinary resource metadata, or a subdirectory
/// (`mimeType` [`DIRECTORY_MIME_TYPE`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryEntry {
    /// The child's URI.
    pub uri: String,
    /// Its name (the last path segment).
    pub name: String,
    /// Its MIME type; [`DIRECTORY_MIME_TYPE`] for a subdirectory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its size in bytes, for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl DirectoryEntry {
    /// Whether the child is a directory.
    pub fn is_directory(&self) -> bool {
        self.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
    }
}

/// `resources/directory/read` result (a `PaginatedResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The directory's direct children (not recursive).
    pub resources: Vec<DirectoryEntry>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The digest of `bytes` as the extension writes it: `sha256:` and 64 lowercase hex digits.
pub fn digest_of(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

/// Whether `digest` is in the extension's format (`sha256:` and 64 lowercase hex digits).
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digest_is_sha256_lowercase_hex() {
        // SHA-256 of the empty string.
        assert_eq!(
            digest_of(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_digest(&digest_of(b"abc")));
        assert!(!is_digest(
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
        ));
        assert!(!is_digest("sha256:abc"));
        assert!(!is_digest(
            "md5:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        ));
    }

    #[test]
    fn a_resource_entry_matches_only_its_bytes() {
        let r = SkillResource::of("skill://a/SKILL.md", b"hello");
        assert_eq!(r.size, 5);
        assert!(r.matches(b"hello"));
        assert!(!r.matches(b"hellO"));
        assert!(!r.matches(b"hello!"));
    }

    #[test]
    fn resources_are_an_array_or_dynamic_and_nothing_else() {
        let files: SkillResources = serde_json::from_value(json!([
            {"uri": "skill://a/SKILL.md", "digest": digest_of(b"x"), "size": 1}
        ]))
        .unwrap();
        assert_eq!(files.files().map(<[_]>::len), Some(1));
        let dynamic: SkillResources = serde_json::from_value(json!("dynamic")).unwrap();
        assert_eq!(dynamic, SkillResources::Dynamic);
        assert_eq!(serde_json::to_value(&dynamic).unwrap(), json!("dynamic"));
        for bad in [
            json!("static"),
            json!(null),
            json!({}),
            json!(3),
            json!([{"uri": "x"}]),
        ] {
            assert!(
                serde_json::from_value::<SkillResources>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_entry_round_trips_in_the_extension_shape() {
        let wire = json!({
            "uri": "skill://acme/billing/refunds/SKILL.md",
            "frontmatter": {"name": "refunds", "description": "Process refunds", "license": "MIT"},
            "resources": [
                {"uri": "skill://acme/billing/refunds/SKILL.md", "digest": digest_of(b"a"), "size": 1}
            ]
        });
        let skill: Skill = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(skill.name(), Some("refunds"));
        assert_eq!(skill.description(), Some("Process refunds"));
        assert_eq!(serde_json::to_value(&skill).unwrap(), wire);
        // A missing `resources` is invalid, not defaulted.
        let mut no_resources = wire;
        no_resources.as_object_mut().unwrap().remove("resources");
        assert!(serde_json::from_value::<Skill>(no_resources).is_err());
    }

    #[test]
    fn results_and_params_use_the_extension_field_names() {
        let list = ListSkillsResult {
            skills: vec![],
            next_cursor: Some("c".into()),
            ttl_ms: Some(0),
            cache_scope: Some("private".into()),
        };
        assert_eq!(
            serde_json::to_value(&list).unwrap(),
            json!({"skills": [], "nextCursor": "c", "ttlMs": 0, "cacheScope": "private"})
        );
        let get: GetSkillResult = serde_json::from_value(json!({
            "skill": {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
                      "resources": "dynamic"},
            "ttlMs": 5, "cacheScope": "public", "resultType": "complete"
        }))
        .unwrap();
        assert_eq!(get.skill.resources, SkillResources::Dynamic);
        assert_eq!(get.ttl_ms, Some(5));
        let dir: ReadDirectoryResult = serde_json::from_value(json!({
            "resources": [
                {"uri": "skill://a/templates", "name": "templates", "mimeType": "inode/directory"},
                {"uri": "skill://a/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": 3}
            ]
        }))
        .unwrap();
        assert!(dir.resources[0].is_directory());
        assert!(!dir.resources[1].is_directory());
        assert_eq!(
            serde_json::to_value(ReadDirectoryParams {
                uri: "skill://a".into(),
                cursor: None
            })
            .unwrap(),
            json!({"uri": "skill://a"})
        );
        assert_eq!(
            serde_json::to_value(ListSkillsParams::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn the_capability_is_inline_and_empty_by_default() {
        assert_eq!(
            serde_json::to_value(SkillsCapability::default()).unwrap(),
            json!({})
        );
        assert_eq!(
            serde_json::to_value(SkillsCapability {
                directory_read: true
            })
            .unwrap(),
            json!({"directoryRead": true})
        );
        let c: SkillsCapability = serde_json::from_value(json!({})).unwrap();
        assert!(!c.directory_read);
    }
}
