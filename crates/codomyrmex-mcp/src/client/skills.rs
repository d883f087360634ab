//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) from the client side:
//! list a server's skills ([`McpClient::list_skills`], every page, bounded like every list),
//! get one entry ([`McpClient::get_skill`]), and read a skill's files lazily through a
//! [`SkillSession`] ([`McpClient::open_skill`]).
//!
//! Nothing is read ahead of need: listing and opening read no file; [`SkillSession::load`]
//! reads `SKILL.md`, and [`SkillSession::read`] one supporting file when asked. Every file
//! read is verified against the entry it was listed with: only listed files are read, each
//! read's length must be the listed `size` and its SHA-256 the listed `digest`, and
//! `SKILL.md`'s YAML frontmatter must equal the entry's `frontmatter` field by field. Content
//! that does not match is refused with a [`SkillError`] and never returned, and the session
//! refuses every later read: the entry is stale or the server lies, and the way on is a
//! fresh entry ([`McpClient::get_skill`]). A `"dynamic"` skill has no manifest: its files are
//! read unverified (its frontmatter is still compared), within the skill's directory and the
//! extension's 16 MiB total.
//!
//! Digests are not a security boundary (the same server writes the listing and the
//! content): a match says the content is what the entry promised, not that it is safe.

use base64::Engine as _;
use codomyrmex_mcp_core::skills::frontmatter;
use serde_json::{Map, Value, json};

use super::{ClientError, McpClient};
use crate::wire::skills::{DirectoryEntry, GetSkillResult, Skill, SkillResource, SkillResources};
use crate::wire::skills::{
    MAX_SKILL_RESOURCES, MAX_SKILL_TOTAL_BYTES, METHOD_DIRECTORY_READ, METHOD_SKILLS_GET,
    METHOD_SKILLS_LIST, SKILL_MD, digest_of, is_digest,
};

/// Why a skill call failed, or why content was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The request itself failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The entry breaks the extension's rules: such a skill is never loaded.
    #[error("invalid skill entry {uri}: {why}")]
    InvalidEntry {
        /// The entry's `uri` (or where it was in the listing).
        uri: String,
        /// What is wrong with it.
        why: String,
    },
    /// The entry lists more files or bytes than the extension's per-skill limits (512
    /// files, 16 MiB); for a `"dynamic"` skill, more was read than 16 MiB.
    #[error("skill {uri} is over the extension's limits: {why}")]
    OverLimit {
        /// The skill's `uri`.
        uri: String,
        /// Which limit.
        why: String,
    },
    /// A read of a file the entry does not list (a verification failure).
    #[error("{uri} is not a file the skill's entry lists")]
    Unlisted {
        /// The file asked for.
        uri: String,
    },
    /// The file's length is not the listed `size` (a verification failure).
    #[error("{uri}: the server sent {read} bytes, the skill's entry lists {listed}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's `size`.
        listed: u64,
        /// The length read.
        read: u64,
    },
    /// The file's SHA-256 is not the listed `digest` (a verification failure).
    #[error("{uri}: the content's digest is {read}, the skill's entry lists {listed}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's `digest`.
        listed: String,
        /// The digest of what was read.
        read: String,
    },
    /// `SKILL.md`'s frontmatter is not the entry's `frontmatter` (a verification failure).
    #[error("{uri}: the SKILL.md frontmatter does not match the skill's entry: {why}")]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The fields that differ, or why the frontmatter could not be read.
        why: String,
    },
    /// The `resources/read` result holds no usable content for the file.
    #[error("{uri}: {why}")]
    Content {
        /// The file.
        uri: String,
        /// What is wrong with the result.
        why: String,
    },
    /// A supporting file was asked for before the skill's `SKILL.md` was loaded.
    #[error("skill {uri} is not loaded: load its SKILL.md first")]
    NotLoaded {
        /// The skill's `uri`.
        uri: String,
    },
    /// An earlier read of this skill failed verification: nothing more is read under this
    /// entry (get the entry again with `skills/get`).
    #[error("skill {uri} failed verification earlier; get its entry again before reading it")]
    Refused {
        /// The skill's `uri`.
        uri: String,
    },
}

/// A listing entry that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InvalidSkill {
    /// The entry's `uri`, or `skills[N]` when it has none.
    pub uri: String,
    /// Why it cannot be loaded.
    pub reason: String,
}

/// Every page of `skills/list`: the valid entries, and those left out with their reason.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct SkillListing {
    /// The entries that follow the extension's rules, in the server's order.
    pub skills: Vec<Skill>,
    /// The entries left out (no `resources`, a malformed digest, a name that is not the
    /// path's last segment, over the limits...).
    pub invalid: Vec<InvalidSkill>,
}

/// One file of a skill, read and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's URI.
    pub uri: String,
    /// Its MIME type, as the server said.
    pub mime_type: Option<String>,
    /// Its raw bytes (the bytes the digest covers: a text's UTF-8, a blob decoded).
    pub bytes: Vec<u8>,
}

impl SkillFile {
    /// The content as text, when it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Nothing read yet.
    Opened,
    /// `SKILL.md` read and verified: supporting files may be read.
    Loaded,
    /// A read failed verification: nothing more is read.
    Refused,
}

/// One skill being read under the entry it was opened with ([`McpClient::open_skill`]).
#[derive(Debug)]
pub struct SkillSession<'c> {
    client: &'c McpClient,
    skill: Skill,
    root: String,
    stage: Stage,
    /// Bytes read so far (bounds a `"dynamic"` skill).
    retrieved: u64,
}

impl McpClient {
    /// Every skill the server lists (`skills/list`, every page), bounded by the client's
    /// [`ClientLimits`](super::ClientLimits) as every list is. Entries that break the
    /// extension's rules are left out and reported in [`SkillListing::invalid`]. No file is
    /// read.
    pub async fn list_skills(&self) -> Result<SkillListing, SkillError> {
        let entries = self.list_all(METHOD_SKILLS_LIST, "skills").await?;
        let mut listing = SkillListing::default();
        for (i, raw) in entries.into_iter().enumerate() {
            let label = raw
                .get("uri")
                .and_then(Value::as_str)
                .map_or_else(|| format!("skills[{i}]"), str::to_owned);
            let checked = serde_json::from_value::<Skill>(raw)
                .map_err(|e| SkillError::InvalidEntry {
                    uri: label.clone(),
                    why: e.to_string(),
                })
                .and_then(|skill| check_entry(&skill).map(|()| skill));
            match checked {
                Ok(skill) => listing.skills.push(skill),
                Err(e) => listing.invalid.push(InvalidSkill {
                    uri: label,
                    reason: e.to_string(),
                }),
            }
        }
        Ok(listing)
    }

    /// The entry of the skill whose `SKILL.md` is `uri` (`skills/get`), listed or not,
    /// checked as a listing entry is; an answer for another skill is refused. No file is
    /// read.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, SkillError> {
        let raw = self.request(METHOD_SKILLS_GET, json!({"uri": uri})).await?;
        let result: GetSkillResult =
            serde_json::from_value(raw).map_err(|e| SkillError::InvalidEntry {
                uri: uri.to_owned(),
                why: format!("skills/get result: {e}"),
            })?;
        if result.skill.uri != uri {
            return Err(SkillError::InvalidEntry {
                uri: uri.to_owned(),
                why: format!(
                    "skills/get answered with the entry of {:?}",
                    result.skill.uri
                ),
            });
        }
        check_entry(&result.skill)?;
        Ok(result.skill)
    }

    /// The direct children of the directory resource `uri` (`resources/directory/read`,
    /// every page, bounded by the client's [`ClientLimits`](super::ClientLimits) as every list
    /// is; a cursor given twice ends it). Each child must be a direct child of `uri` (its URI
    /// `uri/` and one clean segment), and a child is never given twice: anything else is
    /// [`SkillError::InvalidEntry`]. No file is read. Within a skill, prefer
    /// [`SkillSession::list_directory`], which also checks the children against the entry.
    pub async fn read_directory(&self, uri: &str) -> Result<Vec<DirectoryEntry>, SkillError> {
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let raw = self
            .list_all_with(METHOD_DIRECTORY_READ, "resources", &params)
            .await?;
        let mut seen = std::collections::HashSet::new();
        let mut children = Vec::with_capacity(raw.len());
        for (i, child) in raw.into_iter().enumerate() {
            let child: DirectoryEntry =
                serde_json::from_value(child).map_err(|e| SkillError::InvalidEntry {
                    uri: uri.to_owned(),
                    why: format!("resources[{i}]: {e}"),
                })?;
            let direct = child
                .uri
                .strip_prefix(uri)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|seg| !matches!(seg, "" | "." | "..") && !seg.contains('/'));
            if !direct {
                return Err(invalid(
                    uri,
                    format!("{:?} is not a direct child of the directory", child.uri),
                ));
            }
            if !seen.insert(child.uri.clone()) {
                return Err(invalid(uri, format!("{:?} is listed twice", child.uri)));
            }
            children.push(child);
        }
        Ok(children)
    }

    /// A session reading `skill`'s files under this entry. Checks the entry (the
    /// extension's rules and limits) and reads nothing.
    pub fn open_skill(&self, skill: Skill) -> Result<SkillSession<'_>, SkillError> {
        check_entry(&skill)?;
        let root = skill_root(&skill.uri)
            .ok_or_else(|| invalid(&skill.uri, "the uri does not end in /SKILL.md"))?
            .to_owned();
        Ok(SkillSession {
            client: self,
            skill,
            root,
            stage: Stage::Opened,
            retrieved: 0,
        })
    }
}

impl SkillSession<'_> {
    /// The entry this session reads under.
    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    /// The skill's root directory URI (its `SKILL.md` URI without `/SKILL.md`).
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Loads the skill: reads its `SKILL.md`, verifies it against the entry (size, digest,
    /// frontmatter) and returns it. Supporting files can be read once this succeeded.
    pub async fn load(&mut self) -> Result<SkillFile, SkillError> {
        let uri = self.skill.uri.clone();
        let file = self.fetch(&uri).await?;
        let checked = check_frontmatter(&uri, &file, &self.skill);
        self.settle(checked)?;
        self.stage = Stage::Loaded;
        Ok(file)
    }

    /// Reads one of the skill's files, verified against the entry: `path` is relative to
    /// the skill's root (`references/GUIDE.md`) or a full URI. Only after
    /// [`load`](Self::load); a file the entry does not list is refused without a request.
    pub async fn read(&mut self, path: &str) -> Result<SkillFile, SkillError> {
        match self.stage {
            Stage::Opened => {
                return Err(SkillError::NotLoaded {
                    uri: self.skill.uri.clone(),
                });
            }
            Stage::Refused => {
                return Err(SkillError::Refused {
                    uri: self.skill.uri.clone(),
                });
            }
            Stage::Loaded => {}
        }
        let uri = self.resolve(path);
        self.fetch(&uri).await
    }

    /// The direct children of the skill's directory `path` (relative to the skill's root,
    /// `""` for the root itself, or a full URI), through
    /// [`McpClient::read_directory`]. Reads no file, so it needs no [`load`](Self::load).
    /// A directory outside the skill is refused without a request. Under a manifest, every
    /// child is checked against the entry: a file must be listed with the same `size`, a
    /// subdirectory must hold a listed file, and a listed file directly in the directory must
    /// be among the children. A mismatch ([`SkillError::Unlisted`],
    /// [`SkillError::SizeMismatch`], [`SkillError::InvalidEntry`]), like a malformed listing,
    /// refuses the session as a failed read does. A `"dynamic"` skill's children are returned as the server gives
    /// them.
    pub async fn list_directory(&mut self, path: &str) -> Result<Vec<DirectoryEntry>, SkillError> {
        if self.stage == Stage::Refused {
            return Err(SkillError::Refused {
                uri: self.skill.uri.clone(),
            });
        }
        let uri = if path.is_empty() || path == self.root {
            self.root.clone()
        } else {
            self.resolve(path.trim_end_matches('/'))
        };
        if uri != self.root && !within(&self.root, &uri) {
            return self.settle(Err(SkillError::Unlisted { uri }));
        }
        let children = match self.client.read_directory(&uri).await {
            // A malformed listing refuses the session, as a contradicting one does.
            Err(e @ SkillError::InvalidEntry { .. }) => return self.settle(Err(e)),
            other => other?,
        };
        let checked = match &self.skill.resources {
            SkillResources::Files(files) => check_children(&uri, files, &children),
            SkillResources::Dynamic => Ok(()),
        };
        self.settle(checked)?;
        Ok(children)
    }

    /// `path` as a URI under the skill's root (a full URI is kept as it is).
    fn resolve(&self, path: &str) -> String {
        if path.contains("://") {
            path.to_owned()
        } else {
            format!("{}/{}", self.root, path)
        }
    }

    /// Reads `uri`, verified; a verification failure refuses the session.
    async fn fetch(&mut self, uri: &str) -> Result<SkillFile, SkillError> {
        if self.stage == Stage::Refused {
            return Err(SkillError::Refused {
                uri: self.skill.uri.clone(),
            });
        }
        let listed = match &self.skill.resources {
            SkillResources::Files(files) => {
                let found = files.iter().find(|f| f.uri == uri).cloned();
                Some(self.settle(found.ok_or_else(|| SkillError::Unlisted {
                    uri: uri.to_owned(),
                }))?)
            }
            SkillResources::Dynamic => {
                if !within(&self.root, uri) {
                    return self.settle(Err(SkillError::Unlisted {
                        uri: uri.to_owned(),
                    }));
                }
                None
            }
        };
        let result = self.client.read_resource(uri).await?;
        let file = self.settle(file_of(uri, &result))?;
        let verified = match &listed {
            Some(entry) => verify(entry, &file.bytes),
            None => {
                self.retrieved = self.retrieved.saturating_add(file.bytes.len() as u64);
                if self.retrieved > MAX_SKILL_TOTAL_BYTES {
                    Err(SkillError::OverLimit {
                        uri: self.skill.uri.clone(),
                        why: format!("more than {MAX_SKILL_TOTAL_BYTES} bytes read"),
                    })
                } else {
                    Ok(())
                }
            }
        };
        self.settle(verified)?;
        Ok(file)
    }

    /// `outcome`, and a failure refuses every later read of this session.
    fn settle<T>(&mut self, outcome: Result<T, SkillError>) -> Result<T, SkillError> {
        if outcome.is_err() {
            self.stage = Stage::Refused;
        }
        outcome
    }
}

/// Checks `bytes` against the file's entry: the size first (a truncated or padded read is
/// refused without hashing), then the digest.
fn verify(entry: &SkillResource, bytes: &[u8]) -> Result<(), SkillError> {
    let read = bytes.len() as u64;
    if read != entry.size {
        return Err(SkillError::SizeMismatch {
            uri: entry.uri.clone(),
            listed: entry.size,
            read,
        });
    }
    let digest = digest_of(bytes);
    if digest != entry.digest {
        return Err(SkillError::DigestMismatch {
            uri: entry.uri.clone(),
            listed: entry.digest.clone(),
            read: digest,
        });
    }
    Ok(())
}

/// `SKILL.md`'s frontmatter against the entry's, field by field.
fn check_frontmatter(uri: &str, file: &SkillFile, skill: &Skill) -> Result<(), SkillError> {
    let mismatch = |why: String| SkillError::FrontmatterMismatch {
        uri: uri.to_owned(),
        why,
    };
    // The server's reader: a frontmatter it refuses has no agreed JSON form, so it cannot
    // be verified and is refused (fail closed), never guessed at.
    let front = frontmatter::parse(&file.bytes)
        .map_err(|e| mismatch(format!("it cannot be verified: {e}")))?;
    let differ = differing_fields(&front, &skill.frontmatter);
    if differ.is_empty() {
        Ok(())
    } else {
        Err(mismatch(format!("fields {} differ", differ.join(", "))))
    }
}

/// Whether two frontmatter values are the same: JSON equality, numbers by value (`2` and
/// `2.0` are the same number).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// The fields on which two frontmatters differ (a field one lacks counts as `null`, as in
/// the suite's comparison), sorted.
fn differing_fields(file: &Map<String, Value>, entry: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<&String> = file.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            let a = file.get(*k).unwrap_or(&Value::Null);
            let b = entry.get(*k).unwrap_or(&Value::Null);
            !same_value(a, b)
        })
        .cloned()
        .collect()
}

/// The file's bytes from a `resources/read` result: the content whose `uri` is the file's,
/// its `text` as UTF-8 or its `blob` decoded.
fn file_of(uri: &str, result: &Value) -> Result<SkillFile, SkillError> {
    let content = |why: &str| SkillError::Content {
        uri: uri.to_owned(),
        why: why.to_owned(),
    };
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| content("the resources/read result has no contents array"))?;
    let item = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .ok_or_else(|| content("the resources/read result has no content for this uri"))?;
    let bytes = match (item.get("text"), item.get("blob")) {
        (Some(Value::String(t)), None) => t.clone().into_bytes(),
        (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|_| content("the content's blob is not base64"))?,
        _ => return Err(content("the content has neither a text nor a blob string")),
    };
    Ok(SkillFile {
        uri: uri.to_owned(),
        mime_type: item
            .get("mimeType")
            .and_then(Value::as_str)
            .map(str::to_owned),
        bytes,
    })
}

fn invalid(uri: &str, why: impl Into<String>) -> SkillError {
    SkillError::InvalidEntry {
        uri: uri.to_owned(),
        why: why.into(),
    }
}

/// Checks a directory's `children` against the skill's manifest `files`: each file child is
/// listed with the same size, each subdirectory holds a listed file, and every listed file
/// directly in `dir` is among the children.
fn check_children(
    dir: &str,
    files: &[SkillResource],
    children: &[DirectoryEntry],
) -> Result<(), SkillError> {
    for child in children {
        if child.is_directory() {
            let prefix = format!("{}/", child.uri);
            if !files.iter().any(|f| f.uri.starts_with(&prefix)) {
                return Err(SkillError::Unlisted {
                    uri: child.uri.clone(),
                });
            }
            continue;
        }
        let listed =
            files
                .iter()
                .find(|f| f.uri == child.uri)
                .ok_or_else(|| SkillError::Unlisted {
                    uri: child.uri.clone(),
                })?;
        if let Some(size) = child.size
            && size != listed.size
        {
            return Err(SkillError::SizeMismatch {
                uri: child.uri.clone(),
                listed: listed.size,
                read: size,
            });
        }
    }
    let missing = files.iter().find(|f| {
        f.uri
            .strip_prefix(dir)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| !rest.contains('/'))
            && !children.iter().any(|c| c.uri == f.uri)
    });
    match missing {
        Some(f) => Err(invalid(
            dir,
            format!(
                "the entry lists {:?}, which the directory does not list",
                f.uri
            ),
        )),
        None => Ok(()),
    }
}

/// The skill's root: its `SKILL.md` URI without `/SKILL.md`, when it has a skill path.
fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let (_, path) = root.split_once("://")?;
    (!path.is_empty()).then_some(root)
}

/// Whether `uri` names a file under `root`: `root/` and clean segments (no empty, `.` or
/// `..` segment).
fn within(root: &str, uri: &str) -> bool {
    uri.strip_prefix(root)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| rest.split('/').all(|s| !matches!(s, "" | "." | "..")))
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase
/// letters, digits and hyphens, no leading, trailing or doubled hyphen.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The extension's rules for an entry, which a client checks before loading it: its `uri`
/// is a `SKILL.md` under a skill path whose last segment is `frontmatter.name`; the
/// frontmatter has a `name` and a `description`; a manifest is complete (it lists the
/// `SKILL.md`), names only files in the skill's directory, each once, with well-formed
/// digests, and stays within 512 files and 16 MiB.
pub fn check_entry(skill: &Skill) -> Result<(), SkillError> {
    let uri = &skill.uri;
    let root = skill_root(uri).ok_or_else(|| {
        invalid(
            uri,
            "the uri is not the SKILL.md of a skill path (scheme://path/SKILL.md)",
        )
    })?;
    let last = root.rsplit('/').next().unwrap_or(root);
    let last = last.rsplit("://").next().unwrap_or(last);
    let name = skill
        .name()
        .ok_or_else(|| invalid(uri, "the frontmatter has no string name"))?;
    if name != last {
        return Err(invalid(
            uri,
            format!("the frontmatter name {name:?} is not the path's last segment {last:?}"),
        ));
    }
    if !valid_name(name) {
        return Err(invalid(
            uri,
            format!("the name {name:?} breaks the Agent Skills naming rules"),
        ));
    }
    if skill.description().is_none() {
        return Err(invalid(uri, "the frontmatter has no string description"));
    }
    let SkillResources::Files(files) = &skill.resources else {
        return Ok(());
    };
    if files.len() > MAX_SKILL_RESOURCES {
        return Err(SkillError::OverLimit {
            uri: uri.clone(),
            why: format!(
                "{} files listed, the limit is {MAX_SKILL_RESOURCES}",
                files.len()
            ),
        });
    }
    let mut total: u64 = 0;
    let mut seen = std::collections::HashSet::new();
    for f in files {
        if f.uri != *uri && !within(root, &f.uri) {
            return Err(invalid(
                uri,
                format!(
                    "it lists {:?}, which is not in the skill's directory",
                    f.uri
                ),
            ));
        }
        if !seen.insert(f.uri.as_str()) {
            return Err(invalid(uri, format!("it lists {:?} twice", f.uri)));
        }
        if !is_digest(&f.digest) {
            return Err(invalid(
                uri,
                format!("the digest of {:?} is not sha256:<64 lowercase hex>", f.uri),
            ));
        }
        total = total.saturating_add(f.size);
    }
    if !seen.contains(uri.as_str()) {
        return Err(invalid(uri, "its resources do not list its SKILL.md"));
    }
    if total > MAX_SKILL_TOTAL_BYTES {
        return Err(SkillError::OverLimit {
            uri: uri.clone(),
            why: format!("{total} bytes listed, the limit is {MAX_SKILL_TOTAL_BYTES}"),
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
