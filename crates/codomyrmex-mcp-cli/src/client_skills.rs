//! `client skills` and `client skill NAME`: a server's skills (the Skills extension,
//! SEP-2640) through the library's skills API.
//!
//! `skills` lists the entries (`skills/list`, every page) and reads no file. `skill NAME`
//! finds one skill (by name in the listing, or by the URI of its `SKILL.md` through
//! `skills/get`), reads its `SKILL.md`, verified against the entry (size, SHA-256 and
//! frontmatter), and prints it with the skill's file list; no other file is read. Content
//! that fails verification is not printed: the command fails with exit status 6.
//!
//! What is shown to a person goes through the client's control-character stripping in
//! `client_cmd::run` (the text returned here is made inert there); `--json` prints exact
//! JSON.

use std::fmt::Write as _;

use codomyrmex_mcp::client::skills::{Skill, SkillError, SkillListing, SkillResources};
use codomyrmex_mcp::{ClientError, McpClient};
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
    if json {
        return Ok(pretty(&json!({"skill": session.skill(), "content": text})));
    }
    let mut out = render_entry(session.skill());
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

fn render_entry(skill: &Skill) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}\n    {}",
        skill.name().unwrap_or("?"),
        skill.uri,
        skill.description().unwrap_or("")
    );
    match &skill.resources {
        SkillResources::Files(files) => {
            out.push_str("files:\n");
            for f in files {
                let _ = writeln!(out, "  {}  {} bytes  {}", f.uri, f.size, f.digest);
            }
        }
        SkillResources::Dynamic => out.push_str("files: dynamic (not verifiable)\n"),
    }
    out
}
