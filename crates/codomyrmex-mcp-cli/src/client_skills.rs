//! `client skills` and `client skill NAME`: a server's skills (the Skills extension,
//! SEP-2640) through the library's skills API.
//!
//! `skills` lists the entries (`skills/list`, every page) and reads no file. `skill NAME`
//! finds one skill (by name in the listing, or by the URI of its `SKILL.md` through
//! `skills/get`), reads its `SKILL.md`, verified against the entry (size, SHA-256 and
//! frontmatter), and prints it with the skill's file list; no other file is read. The file
//! list is the skill's tree as `resources/directory/read` gives it, sub-directories and all,
//! each directory checked against the entry (a server without the method: the entry's
//! manifest). Content that fails verification is not printed: the command fails with exit
//! status 6.
//!
//! What is shown to a person goes through the client's control-character stripping in
//! `client_cmd::run` (the text returned here is made inert there); `--json` prints exact
//! JSON.

use std::fmt::Write as _;

use codomyrmex_mcp::client::skills::{SkillError, SkillListing, SkillSession};
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::wire::skills::{DirectoryEntry, Skill, SkillResources};
use serde_json::{Value, json};

use crate::client_failure::{Failure, Status};

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

impl From<SkillError> for Failure {
    fn from(e: SkillError) -> Self {
        match e {
            SkillError::Client(ClientError::Server(err)) if err.code == METHOD_NOT_FOUND => {
                Failure {
                    status: Status::ServerError,
                    message: "the server does not serve skills (it has no skills/list or \
                              skills/get)"
                        .into(),
                }
            }
            SkillError::Client(c) => c.into(),
            other => Failure {
                status: Status::Protocol,
                message: format!("refused: {other}"),
            },
        }
    }
}

/// `client skills`: every listed skill, and the entries left out with why.
pub(crate) async fn list(client: &McpClient, json: bool) -> Result<String, Failure> {
    let listing = client.list_skills().await?;
    if json {
        return Ok(pretty(&json!(listing)));
    }
    Ok(render_listing(&listing))
}

/// `client skill NAME`: one skill's `SKILL.md`, verified, and its file list.
pub(crate) async fn show(client: &McpClient, name: &str, json: bool) -> Result<String, Failure> {
    let skill = find(client, name).await?;
    let mut session = client.open_skill(skill)?;
    let file = session.load().await?;
    let text = file.text().ok_or_else(|| Failure {
        status: Status::Protocol,
        message: "the skill's SKILL.md is not UTF-8 text".into(),
    })?;
    let tree = tree(&mut session).await?;
    if json {
        let mut v = json!({"skill": session.skill(), "content": text});
        if let Some(tree) = &tree {
            v["files"] = json!(tree);
        }
        return Ok(pretty(&v));
    }
    let mut out = render_entry(session.skill(), tree.as_deref());
    out.push('\n');
    out.push_str(text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The skill `name` names: the URI of a `SKILL.md` (through `skills/get`, listed or not), or
/// the name of exactly one listed skill. Several listed skills of that name are an error
/// that names their URIs, never a silent choice.
async fn find(client: &McpClient, name: &str) -> Result<Skill, Failure> {
    if name.contains("://") {
        return Ok(client.get_skill(name).await?);
    }
    let listing = client.list_skills().await?;
    let mut matching: Vec<Skill> = listing
        .skills
        .into_iter()
        .filter(|s| s.name() == Some(name))
        .collect();
    match matching.len() {
        1 => Ok(matching.remove(0)),
        0 => Err(Failure {
            status: Status::Usage,
            message: format!(
                "the server lists no skill named {name:?} (`client skills` lists them; a \
                 skill it does not list can be named by the URI of its SKILL.md)"
            ),
        }),
        _ => Err(Failure {
            status: Status::Usage,
            message: format!(
                "{} skills are named {name:?}; name one by its URI: {}",
                matching.len(),
                matching
                    .iter()
                    .map(|s| s.uri.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    s.push('\n');
    s
}

fn render_listing(listing: &SkillListing) -> String {
    let mut out = String::new();
    if listing.skills.is_empty() {
        out.push_str("(no skills listed)\n");
    }
    for s in &listing.skills {
        let files = match &s.resources {
            SkillResources::Files(f) => format!("{} file(s)", f.len()),
            SkillResources::Dynamic => "dynamic".into(),
        };
        let _ = writeln!(
            out,
            "{}  {}  [{files}]\n    {}",
            s.name().unwrap_or("?"),
            s.uri,
            s.description().unwrap_or("")
        );
    }
    for bad in &listing.invalid {
        let _ = writeln!(out, "left out: {}: {}", bad.uri, bad.reason);
    }
    out
}

/// The most entries [`tree`] lists: the extension's most files of one skill, and as many
/// directories.
const MAX_TREE_ENTRIES: usize = 2 * codomyrmex_mcp::wire::skills::MAX_SKILL_RESOURCES;

/// The skill's files and directories, depth first in the server's order, from
/// `resources/directory/read` (each directory checked against the entry by the session);
/// `None` when the server does not serve the method. A tree of more than
/// [`MAX_TREE_ENTRIES`] entries is refused.
async fn tree(session: &mut SkillSession<'_>) -> Result<Option<Vec<DirectoryEntry>>, Failure> {
    let root = session.root().to_owned();
    match session.list_directory(&root).await {
        Err(SkillError::Client(ClientError::Server(e))) if e.code == METHOD_NOT_FOUND => Ok(None),
        Err(e) => Err(e.into()),
        Ok(children) => {
            let mut out = Vec::new();
            expand(session, children, &mut out).await?;
            Ok(Some(out))
        }
    }
}

/// Appends `children` to `out`, each directory followed by its own tree.
async fn expand(
    session: &mut SkillSession<'_>,
    children: Vec<DirectoryEntry>,
    out: &mut Vec<DirectoryEntry>,
) -> Result<(), Failure> {
    for child in children {
        if out.len() >= MAX_TREE_ENTRIES {
            return Err(Failure {
                status: Status::Protocol,
                message: format!(
                    "refused: the skill's tree has more than {MAX_TREE_ENTRIES} entries"
                ),
            });
        }
        let dir = child.is_directory().then(|| child.uri.clone());
        out.push(child);
        if let Some(dir) = dir {
            let sub = session.list_directory(&dir).await?;
            Box::pin(expand(session, sub, out)).await?;
        }
    }
    Ok(())
}

fn render_entry(skill: &Skill, tree: Option<&[DirectoryEntry]>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}\n    {}",
        skill.name().unwrap_or("?"),
        skill.uri,
        skill.description().unwrap_or("")
    );
    let listed = |uri: &str| {
        skill
            .resources
            .files()
            .and_then(|files| files.iter().find(|f| f.uri == uri))
    };
    match (&skill.resources, tree) {
        (_, Some(tree)) => {
            out.push_str("files:\n");
            for entry in tree {
                if entry.is_directory() {
                    let _ = writeln!(out, "  {}/", entry.uri);
                } else if let Some(f) = listed(&entry.uri) {
                    let _ = writeln!(out, "  {}  {} bytes  {}", f.uri, f.size, f.digest);
                } else {
                    let size = entry.size.map_or_else(|| "?".into(), |s| s.to_string());
                    let _ = writeln!(out, "  {}  {size} bytes", entry.uri);
                }
            }
        }
        (SkillResources::Files(files), None) => {
            out.push_str("files:\n");
            for f in files {
                let _ = writeln!(out, "  {}  {} bytes  {}", f.uri, f.size, f.digest);
            }
        }
        (SkillResources::Dynamic, None) => out.push_str("files: dynamic (not verifiable)\n"),
    }
    out
}
