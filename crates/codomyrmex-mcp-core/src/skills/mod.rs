//! Skills (SEP-2640, `io.modelcontextprotocol/skills`): what a skill is and the registry the
//! engine serves `skills/list`, `skills/get`, `resources/directory/read` and `skill://`
//! `resources/read` from.
//!
//! A [`SkillDefinition`] holds a skill's files in memory: its `SKILL.md` (whose frontmatter is
//! read once, [`frontmatter`]) and its supporting files, so every digest and size in its entry
//! is computed from the very bytes a read returns. The core does no I/O: the library's
//! `skills` module reads a skill directory through its one confinement and builds a
//! definition from the bytes. The extension's rules are checked when a skill is built or
//! registered, and refused with a [`SkillError`] that says which rule:
//!
//! - the skill name (the last segment of its path) follows the Agent Skills naming rules
//!   ([`check_name`]) and equals the frontmatter `name`; `description` is a non-empty string;
//! - the first path segment is a URI `reg-name` and every segment and file path is plain
//!   (no empty, `.` or `..` segment, no control character);
//! - at most [`MAX_SKILL_RESOURCES`] files and [`MAX_SKILL_TOTAL_BYTES`] bytes per skill;
//! - frontmatter `metadata` keys under [`RESERVED_METADATA_PREFIX`] are refused (reserved for
//!   MCP extensions; this one defines none), as are `_meta` keys under [`SKILL_META_PREFIX`]
//!   (reserved for the extension) and `_meta` keys with no reverse-domain prefix.

pub mod frontmatter;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};

use crate::wire::ResourceContents;
use crate::wire::skills::{
    DIRECTORY_MIME_TYPE, DirectoryEntry, MAX_SKILL_RESOURCES, MAX_SKILL_TOTAL_BYTES,
    RESERVED_METADATA_PREFIX, SKILL_MD, SKILL_MD_MIME_TYPE, SKILL_META_PREFIX, Skill,
    SkillResource, SkillResources,
};

use frontmatter::FrontmatterError;

/// Why a skill was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The `SKILL.md` frontmatter could not be read.
    #[error("skill {path}: {source}")]
    Frontmatter {
        /// The skill's path.
        path: String,
        /// Why.
        source: FrontmatterError,
    },
    /// A naming rule is broken.
    #[error("skill {path}: {reason}")]
    Invalid {
        /// The skill's path.
        path: String,
        /// Which rule, in words.
        reason: String,
    },
    /// A per-skill limit of the extension is exceeded.
    #[error("skill {path}: {reason}")]
    TooLarge {
        /// The skill's path.
        path: String,
        /// Which limit.
        reason: String,
    },
    /// Another skill is registered at the same URI.
    #[error("a skill is already registered at {0}")]
    Duplicate(String),
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase ASCII
/// letters, digits and hyphens, no leading, trailing or consecutive hyphen.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("the name {name:?} must be 1 to 64 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!(
            "the name {name:?} may contain only lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "the name {name:?} may not start or end with a hyphen or contain two in a row"
        ));
    }
    Ok(())
}

/// Whether `b` may appear unescaped in a URI path segment (RFC 3986 `pchar` less `%`).
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

/// `segment` with every byte that is not a `pchar` percent-encoded.
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if is_pchar(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `segment` with its percent escapes decoded (for display; invalid escapes kept as written).
fn decode_segment(segment: &str) -> String {
    let b = segment.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'%'));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks a `/`-separated relative path: segments not empty, not `.` or `..`, no control
/// character or backslash.
fn check_rel(rel: &str, what: &str) -> Result<(), String> {
    if rel.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    for seg in rel.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(format!(
                "the {what} {rel:?} has an empty, \".\" or \"..\" segment"
            ));
        }
        if seg.chars().any(|c| c.is_control() || c == '\\') {
            return Err(format!(
                "the {what} {rel:?} contains a control character or a backslash"
            ));
        }
    }
    Ok(())
}

/// One file of a skill, held in memory.
#[derive(Debug, Clone)]
struct SkillFile {
    uri: String,
    bytes: Arc<[u8]>,
    mime_type: String,
}

/// A skill: its path, frontmatter and files (see the module docs for the rules it keeps).
#[derive(Debug, Clone)]
pub struct SkillDefinition {
    path: String,
    root_uri: String,
    name: String,
    frontmatter: Map<String, Value>,
    /// By path relative to the skill root; `SKILL.md` always among them.
    files: BTreeMap<String, SkillFile>,
    total: u64,
    dynamic: bool,
    meta: Map<String, Value>,
}

impl SkillDefinition {
    /// A skill at `path` (`/`-separated; its last segment is the skill's name, the segments
    /// before it an organizational prefix) whose `SKILL.md` is `skill_md`: served at
    /// `skill://{path}/SKILL.md`. The frontmatter is read from `skill_md`.
    pub fn new(path: &str, skill_md: impl Into<Vec<u8>>) -> Result<Self, SkillError> {
        let invalid = |reason: String| SkillError::Invalid {
            path: path.to_owned(),
            reason,
        };
        check_rel(path, "skill path").map_err(invalid)?;
        let mut segments = path.split('/');
        let first = segments.next().unwrap_or_default();
        if !first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        {
            return Err(invalid(format!(
                "the first path segment {first:?} must be a URI host name (letters, digits, \"-._~\")"
            )));
        }
        let name = path.rsplit('/').next().unwrap_or(path).to_owned();
        check_name(&name).map_err(invalid)?;
        let skill_md: Vec<u8> = skill_md.into();
        let frontmatter =
            frontmatter::parse(&skill_md).map_err(|source| SkillError::Frontmatter {
                path: path.to_owned(),
                source,
            })?;
        match frontmatter.get("name") {
            Some(Value::String(n)) if *n == name => {}
            Some(Value::String(n)) => {
                return Err(invalid(format!(
                    "the frontmatter name {n:?} must equal the last path segment {name:?}"
                )));
            }
            _ => return Err(invalid("the frontmatter has no string `name`".into())),
        }
        match frontmatter.get("description") {
            Some(Value::String(d)) if !d.is_empty() => {}
            _ => {
                return Err(invalid(
                    "the frontmatter has no non-empty string `description`".into(),
                ));
            }
        }
        if let Some(metadata) = frontmatter.get("metadata") {
            let Value::Object(metadata) = metadata else {
                return Err(invalid(
                    "the frontmatter `metadata` must be a mapping".into(),
                ));
            };
            if let Some(k) = metadata
                .keys()
                .find(|k| k.starts_with(RESERVED_METADATA_PREFIX))
            {
                return Err(invalid(format!(
                    "the metadata key {k:?} is under {RESERVED_METADATA_PREFIX:?}, reserved for MCP extensions (none is defined)"
                )));
            }
        }
        let root_uri = format!(
            "skill://{}",
            path.split('/')
                .map(encode_segment)
                .collect::<Vec<_>>()
                .join("/")
        );
        let mut skill = Self {
            path: path.to_owned(),
            root_uri,
            name,
            frontmatter,
            files: BTreeMap::new(),
            total: 0,
            dynamic: false,
            meta: Map::new(),
        };
        skill.insert(SKILL_MD, skill_md, Some(SKILL_MD_MIME_TYPE.into()))?;
        Ok(skill)
    }

    /// Adds the supporting file `rel` (`/`-separated, relative to the skill root).
    pub fn with_file(self, rel: &str, bytes: impl Into<Vec<u8>>) -> Result<Self, SkillError> {
        self.with_typed_file(rel, bytes, None)
    }

    /// Adds the supporting file `rel` with its MIME type (guessed from its name and content
    /// when `None`).
    pub fn with_typed_file(
        mut self,
        rel: &str,
        bytes: impl Into<Vec<u8>>,
        mime_type: Option<String>,
    ) -> Result<Self, SkillError> {
        if rel == SKILL_MD {
            return Err(self.invalid(format!("{SKILL_MD} is given to SkillDefinition::new")));
        }
        self.insert(rel, bytes.into(), mime_type)?;
        Ok(self)
    }

    /// Publishes `"dynamic"` instead of a manifest: for a skill whose content is generated
    /// and whose digests could not stay stable.
    pub fn dynamic(mut self) -> Self {
        self.dynamic = true;
        self
    }

    /// Adds `key` to the `_meta` of the skill's `SKILL.md` resource. The key needs a
    /// reverse-domain prefix of its own (`com.example/key`); the extension's prefix
    /// [`SKILL_META_PREFIX`] is reserved.
    pub fn with_meta(mut self, key: &str, value: Value) -> Result<Self, SkillError> {
        if key.starts_with(SKILL_META_PREFIX) {
            return Err(self.invalid(format!(
                "the _meta key {key:?} is under {SKILL_META_PREFIX:?}, reserved for the Skills extension"
            )));
        }
        let prefixed = key.split_once('/').is_some_and(|(prefix, rest)| {
            !rest.is_empty()
                && prefix.contains('.')
                && prefix.split('.').all(|l| {
                    !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        });
        if !prefixed {
            return Err(self.invalid(format!(
                "the _meta key {key:?} needs a reverse-domain prefix (e.g. com.example/{key})"
            )));
        }
        self.meta.insert(key.to_owned(), value);
        Ok(self)
    }

    fn invalid(&self, reason: String) -> SkillError {
        SkillError::Invalid {
            path: self.path.clone(),
            reason,
        }
    }

    fn insert(
        &mut self,
        rel: &str,
        bytes: Vec<u8>,
        mime: Option<String>,
    ) -> Result<(), SkillError> {
        check_rel(rel, "file path").map_err(|r| self.invalid(r))?;
        if self.files.contains_key(rel) {
            return Err(self.invalid(format!("the file {rel:?} is given twice")));
        }
        if self.files.len() >= MAX_SKILL_RESOURCES {
            return Err(SkillError::TooLarge {
                path: self.path.clone(),
                reason: format!("more than {MAX_SKILL_RESOURCES} files (the extension's limit)"),
            });
        }
        let total = self.total.saturating_add(bytes.len() as u64);
        if total > MAX_SKILL_TOTAL_BYTES {
            return Err(SkillError::TooLarge {
                path: self.path.clone(),
                reason: format!(
                    "its files total more than {MAX_SKILL_TOTAL_BYTES} bytes (the extension's limit of 16 MiB)"
                ),
            });
        }
        let mime_type = mime.unwrap_or_else(|| crate::util::mime_for(rel, &bytes).to_owned());
        let uri = format!(
            "{}/{}",
            self.root_uri,
            rel.split('/')
                .map(encode_segment)
                .collect::<Vec<_>>()
                .join("/")
        );
        self.total = total;
        self.files.insert(
            rel.to_owned(),
            SkillFile {
                uri,
                bytes: bytes.into(),
                mime_type,
            },
        );
        Ok(())
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The skill's path (prefix and name).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{}/{SKILL_MD}", self.root_uri)
    }

    /// Its root directory's URI (no trailing slash).
    pub fn root_uri(&self) -> &str {
        &self.root_uri
    }

    /// Its frontmatter.
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// Its `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Its files' paths, relative to its root.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The bytes its files total.
    pub fn total_size(&self) -> u64 {
        self.total
    }

    /// Its entry, as `skills/list` and `skills/get` carry it.
    pub fn entry(&self) -> Skill {
        let resources = if self.dynamic {
            SkillResources::Dynamic
        } else {
            // SKILL.md first, then the rest by path.
            let mut files: Vec<SkillResource> = Vec::with_capacity(self.files.len());
            if let Some(f) = self.files.get(SKILL_MD) {
                files.push(SkillResource::of(f.uri.clone(), &f.bytes));
            }
            files.extend(
                self.files
                    .iter()
                    .filter(|(rel, _)| rel.as_str() != SKILL_MD)
                    .map(|(_, f)| SkillResource::of(f.uri.clone(), &f.bytes)),
            );
            SkillResources::Files(files)
        };
        Skill {
            uri: self.uri(),
            frontmatter: self.frontmatter.clone(),
            resources,
        }
    }

    /// The file at `uri`, if it is one of this skill's.
    fn file_at(&self, uri: &str) -> Option<&SkillFile> {
        uri.strip_prefix(&self.root_uri)?.strip_prefix('/')?;
        // URIs are stored encoded; compare by URI, not by decoded path.
        self.files.values().find(|f| f.uri == uri)
    }

    /// The resource contents of the file at `uri`: text when it is UTF-8, else base64.
    fn contents(&self, file: &SkillFile) -> ResourceContents {
        let meta = (file.uri == self.uri() && !self.meta.is_empty()).then(|| self.meta.clone());
        match std::str::from_utf8(&file.bytes) {
            Ok(text) => ResourceContents::Text {
                uri: file.uri.clone(),
                mime_type: Some(file.mime_type.clone()),
                text: text.to_owned(),
                meta,
            },
            Err(_) => ResourceContents::Blob {
                uri: file.uri.clone(),
                mime_type: Some(file.mime_type.clone()),
                blob: crate::util::base64_encode(&file.bytes),
                meta,
            },
        }
    }

    /// The direct children of the directory `uri` within this skill, when it is one.
    fn children(&self, uri: &str) -> Option<BTreeMap<String, DirectoryEntry>> {
        let sub = if uri == self.root_uri {
            String::new()
        } else {
            format!("{}/", uri.strip_prefix(&self.root_uri)?.strip_prefix('/')?)
        };
        let mut out = BTreeMap::new();
        for file in self.files.values() {
            let Some(rest) = file.uri[self.root_uri.len() + 1..].strip_prefix(&sub) else {
                continue;
            };
            let (child, is_dir) = match rest.split_once('/') {
                Some((dir, _)) => (dir, true),
                None => (rest, false),
            };
            let child_uri = format!("{uri}/{child}");
            let name = decode_segment(child);
            let entry = if is_dir {
                DirectoryEntry {
                    uri: child_uri.clone(),
                    name,
                    mime_type: Some(DIRECTORY_MIME_TYPE.into()),
                    description: None,
                    size: None,
                }
            } else {
                DirectoryEntry {
                    uri: child_uri.clone(),
                    name,
                    mime_type: Some(file.mime_type.clone()),
                    description: None,
                    size: Some(file.bytes.len() as u64),
                }
            };
            out.entry(child_uri).or_insert(entry);
        }
        (!out.is_empty() || sub.is_empty()).then_some(out)
    }

    /// The `resources/list` entry of its `SKILL.md`.
    pub fn skill_md_resource(&self) -> Value {
        let mut r = Map::new();
        r.insert("uri".into(), Value::String(self.uri()));
        r.insert("name".into(), Value::String(self.name.clone()));
        r.insert(
            "description".into(),
            Value::String(self.description().into()),
        );
        r.insert("mimeType".into(), Value::String(SKILL_MD_MIME_TYPE.into()));
        if let Some(f) = self.files.get(SKILL_MD) {
            r.insert("size".into(), Value::from(f.bytes.len() as u64));
        }
        if !self.meta.is_empty() {
            r.insert("_meta".into(), Value::Object(self.meta.clone()));
        }
        Value::Object(r)
    }
}

/// The skills a server serves, by the URI of their `SKILL.md`. Cheap to share.
///
/// ```
/// use codomyrmex_mcp_core::skills::{McpSkillRegistry, SkillDefinition};
///
/// let skills = McpSkillRegistry::new();
/// let skill = SkillDefinition::new(
///     "git-workflow",
///     "---\nname: git-workflow\ndescription: Our Git conventions\n---\n# Git\n",
/// )?
/// .with_file("checklist.md", "- rebase before merging\n")?;
/// let uri = skill.uri();
/// assert_eq!(uri, "skill://git-workflow/SKILL.md");
/// skills.add(skill)?;
/// assert!(skills.remove(&uri));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct McpSkillRegistry {
    skills: RwLock<BTreeMap<String, Arc<SkillDefinition>>>,
    directory_read: bool,
    /// Counts changes, so cached `resources/list` pages (which list each `SKILL.md`) go stale.
    generation: AtomicU64,
}

impl McpSkillRegistry {
    /// An empty registry that also answers `resources/directory/read` (and declares
    /// `directoryRead: true`).
    pub fn new() -> Self {
        Self {
            skills: RwLock::default(),
            directory_read: true,
            generation: AtomicU64::new(0),
        }
    }

    /// Without `resources/directory/read`: the capability object is then empty.
    pub fn without_directory_read(mut self) -> Self {
        self.directory_read = false;
        self
    }

    /// Whether `resources/directory/read` is served.
    pub fn directory_read(&self) -> bool {
        self.directory_read
    }

    /// Registers `skill`; a second skill at the same URI is refused.
    pub fn add(&self, skill: SkillDefinition) -> Result<(), SkillError> {
        let uri = skill.uri();
        let mut skills = self.skills.write().unwrap_or_else(|e| e.into_inner());
        if skills.contains_key(&uri) {
            return Err(SkillError::Duplicate(uri));
        }
        skills.insert(uri, Arc::new(skill));
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Removes the skill whose `SKILL.md` is at `uri`; whether there was one.
    pub fn remove(&self, uri: &str) -> bool {
        let mut skills = self.skills.write().unwrap_or_else(|e| e.into_inner());
        let removed = skills.remove(uri).is_some();
        if removed {
            self.generation.fetch_add(1, Ordering::Release);
        }
        removed
    }

    /// A counter that moves on every `add` and `remove`.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many skills are registered.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<SkillDefinition>>> {
        self.skills.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The skill whose `SKILL.md` is at `uri`.
    pub fn get(&self, uri: &str) -> Option<Arc<SkillDefinition>> {
        self.read().get(uri).cloned()
    }

    /// Every skill, by URI.
    pub fn skills(&self) -> Vec<Arc<SkillDefinition>> {
        self.read().values().cloned().collect()
    }

    /// One page of entries after the URI `after`, and the URI to continue from.
    pub fn page(&self, after: Option<&str>, size: usize) -> (Vec<Value>, Option<String>) {
        let skills = self.read();
        crate::util::page_after(&skills, after, size, |s| {
            serde_json::to_value(s.entry()).unwrap_or(Value::Null)
        })
    }

    /// The contents of the skill file at `uri`, when a registered skill has one there.
    pub fn read_file(&self, uri: &str) -> Option<ResourceContents> {
        if !uri.starts_with("skill://") {
            return None;
        }
        let skills = self.read();
        skills
            .values()
            .find_map(|s| s.file_at(uri).map(|f| s.contents(f)))
    }

    /// The direct children of the directory resource `uri` (a skill root or a directory of
    /// one's files), by URI; `None` when `uri` is no such directory.
    pub fn directory(&self, uri: &str) -> Option<BTreeMap<String, DirectoryEntry>> {
        let skills = self.read();
        let mut found: Option<BTreeMap<String, DirectoryEntry>> = None;
        for s in skills.values() {
            if let Some(children) = s.children(uri) {
                found.get_or_insert_with(BTreeMap::new).extend(children);
            }
        }
        found
    }

    /// The `resources/list` entries of every skill's `SKILL.md`.
    pub fn skill_md_resources(&self) -> Vec<Value> {
        self.read()
            .values()
            .map(|s| s.skill_md_resource())
            .collect()
    }

    /// Up to `size` `resources/list` entries of `SKILL.md` files whose URIs sort after
    /// `after`, each with its URI, in ascending byte order (the order `resources/list` pages
    /// in), and whether more follow.
    pub fn skill_md_page(&self, after: Option<&str>, size: usize) -> (Vec<(String, Value)>, bool) {
        use std::ops::Bound;
        let skills = self.read();
        let lower = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut iter = skills.range::<str, _>((lower, Bound::Unbounded));
        let page: Vec<(String, Value)> = iter
            .by_ref()
            .take(size.max(1))
            .map(|(uri, s)| (uri.clone(), s.skill_md_resource()))
            .collect();
        (page, iter.next().is_some())
    }
}

#[cfg(test)]
mod tests;
