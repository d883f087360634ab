//! Skills (SEP-2640): the core's [`SkillDefinition`] and [`McpSkillRegistry`], and loading
//! skills from a directory.
//!
//! A skill directory holds a `SKILL.md` (YAML frontmatter with at least `name` and
//! `description`) and any supporting files. [`load_skills`] finds every `SKILL.md` under a
//! root and makes each directory holding one a skill, its path under the root the skill's
//! path (`acme/billing/refunds` is served at `skill://acme/billing/refunds/SKILL.md`). A
//! skill's files are every regular file under its directory, nested skills' files included
//! (the extension's completeness rule); hidden names (`.git`, `.env`) and symlinks are left
//! out. A `SKILL.md` at the root itself makes the root one skill, named after the root.
//!
//! Files are read only through [`ConfinedRoot`]: the tree is walked from directory
//! descriptors (no symlink followed), each file opened from its parent's descriptor,
//! checked to be a regular file and read with a cap on the bytes actually read. The bytes are
//! read once, at load, and served from memory, so each file's digest and size describe exactly
//! what `resources/read` returns; a change on disk is served after the skills are loaded
//! again. A skill that breaks a rule of the extension (name, limits, frontmatter) is refused
//! with a [`SkillLoadError`] that names it; the others still load.
//!
//! ```no_run
//! use std::sync::Arc;
//! use codomyrmex_mcp::skills::{self, McpSkillRegistry};
//! use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry};
//!
//! let loaded = skills::skills_from_dir("./skills")?;
//! for (path, why) in &loaded.refused {
//!     eprintln!("skill {path} not served: {why}");
//! }
//! let registry = McpSkillRegistry::new();
//! for skill in loaded.skills {
//!     registry.add(skill)?;
//! }
//! let server = McpServer::new(McpServerConfig::new("docs", "1.0.0"), Arc::new(McpToolRegistry::new()))
//!     .with_skills(Arc::new(registry));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

pub use codomyrmex_mcp_core::skills::*;
use codomyrmex_mcp_core::wire::skills::{MAX_SKILL_RESOURCES, MAX_SKILL_TOTAL_BYTES, SKILL_MD};

use crate::confine::{ConfineError, ConfinedRoot, TreeEntry, TreeFilter};

/// The most entries a skills directory's walk lists (files and directories).
pub const MAX_WALKED_ENTRIES: usize = 100_000;
/// The deepest a skill file may be under the root.
pub const MAX_DEPTH: usize = 32;
/// The most bytes all the skills of one directory may hold in memory together: 256 MiB.
pub const MAX_LOADED_BYTES: u64 = 256 * 1024 * 1024;

/// Why a skills directory, or one skill in it, could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SkillLoadError {
    /// The directory could not be opened or walked.
    #[error("{0}")]
    Confine(#[from] ConfineError),
    /// The skill breaks a rule of the extension.
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// A path is not UTF-8 (skill paths and file paths become URIs).
    #[error("the path {0:?} is not UTF-8")]
    NotUtf8(PathBuf),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file, relative to the root.
        path: String,
        /// Why.
        source: ConfineError,
    },
    /// The directory holds more than the walk lists.
    #[error("the skills directory has more than {MAX_WALKED_ENTRIES} entries")]
    TooManyEntries,
    /// The skills together hold more than [`MAX_LOADED_BYTES`].
    #[error("the skills together hold more than {MAX_LOADED_BYTES} bytes")]
    TooLarge,
}

/// What [`load_skills`] found: the skills, and each one refused with its reason.
#[derive(Debug, Default)]
pub struct LoadedSkills {
    /// The skills that follow the extension's rules.
    pub skills: Vec<SkillDefinition>,
    /// The skills refused, by path, and why.
    pub refused: Vec<(String, SkillLoadError)>,
}

/// Leaves hidden names out of the walk.
struct NoHidden;

impl TreeFilter for NoHidden {
    fn enter(&mut self, _dir: &crate::confine::ConfinedDir) {}
    fn leave(&mut self) {}
    fn keep(&mut self, entry: &TreeEntry) -> bool {
        !entry.name().as_encoded_bytes().starts_with(b".")
    }
}

/// `rel` as a `/`-separated UTF-8 path.
fn slash_path(rel: &Path) -> Result<String, SkillLoadError> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(
                n.to_str()
                    .ok_or_else(|| SkillLoadError::NotUtf8(rel.to_path_buf()))?,
            ),
            _ => return Err(SkillLoadError::NotUtf8(rel.to_path_buf())),
        }
    }
    Ok(out.join("/"))
}

/// Opens `dir` through the confinement and loads every skill under it ([`load_skills`]).
pub fn skills_from_dir(dir: impl AsRef<Path>) -> Result<LoadedSkills, SkillLoadError> {
    let root = ConfinedRoot::open(dir.as_ref()).map_err(ConfineError::Io)?;
    load_skills(&root)
}

/// Loads every skill under `root` (see the module docs). Fails as a whole only when the root
/// cannot be walked or is larger than the walk's bounds; a skill that breaks a rule is in
/// [`LoadedSkills::refused`].
pub fn load_skills(root: &ConfinedRoot) -> Result<LoadedSkills, SkillLoadError> {
    let mut files: Vec<TreeEntry> = Vec::new();
    let mut seen = 0usize;
    for entry in root.walk_tree(Path::new(""), Some(MAX_DEPTH), NoHidden)? {
        seen += 1;
        if seen > MAX_WALKED_ENTRIES {
            return Err(SkillLoadError::TooManyEntries);
        }
        if entry.kind() == rustix::fs::FileType::RegularFile {
            files.push(entry);
        }
    }
    let skill_dirs: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.name() == SKILL_MD)
        .map(|f| f.rel().parent().unwrap_or(Path::new("")).to_path_buf())
        .collect();
    let mut loaded = LoadedSkills::default();
    let mut budget = MAX_LOADED_BYTES;
    for dir in skill_dirs {
        let path = if dir.as_os_str().is_empty() {
            match root.path().file_name().and_then(|n| n.to_str()) {
                Some(name) => name.to_owned(),
                None => {
                    loaded.refused.push((
                        root.path().display().to_string(),
                        SkillLoadError::NotUtf8(root.path().to_path_buf()),
                    ));
                    continue;
                }
            }
        } else {
            match slash_path(&dir) {
                Ok(p) => p,
                Err(e) => {
                    loaded.refused.push((dir.display().to_string(), e));
                    continue;
                }
            }
        };
        let members: Vec<&TreeEntry> = files.iter().filter(|f| f.rel().starts_with(&dir)).collect();
        match load_one(&path, &dir, &members, &mut budget) {
            Ok(skill) => loaded.skills.push(skill),
            Err(SkillLoadError::TooLarge) => return Err(SkillLoadError::TooLarge),
            Err(e) => loaded.refused.push((path, e)),
        }
    }
    Ok(loaded)
}

/// Reads `entry`, at most `cap` bytes (more is refused, whatever size the file reports).
fn read_capped(entry: &TreeEntry, cap: u64) -> Result<Vec<u8>, SkillLoadError> {
    let shown = || ConfinedRoot::display(entry.rel());
    let file = entry.open_file().map_err(|source| SkillLoadError::Read {
        path: shown(),
        source,
    })?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| SkillLoadError::Read {
            path: shown(),
            source: ConfineError::Io(e),
        })?;
    if bytes.len() as u64 > cap {
        return Err(SkillLoadError::Read {
            path: shown(),
            source: ConfineError::TooLarge(cap),
        });
    }
    Ok(bytes)
}

fn load_one(
    path: &str,
    dir: &Path,
    members: &[&TreeEntry],
    budget: &mut u64,
) -> Result<SkillDefinition, SkillLoadError> {
    if members.len() > MAX_SKILL_RESOURCES {
        return Err(SkillError::TooLarge {
            path: path.to_owned(),
            reason: format!(
                "{} files, more than the extension's limit of {MAX_SKILL_RESOURCES}",
                members.len()
            ),
        }
        .into());
    }
    let skill_md_rel = dir.join(SKILL_MD);
    let Some(skill_md) = members.iter().find(|f| f.rel() == skill_md_rel) else {
        return Err(SkillError::Invalid {
            path: path.to_owned(),
            reason: format!("no {SKILL_MD} at its root"),
        }
        .into());
    };
    let mut left = MAX_SKILL_TOTAL_BYTES;
    let take = |entry: &TreeEntry, left: &mut u64, budget: &mut u64| {
        let bytes = read_capped(entry, (*left).min(*budget)).map_err(|e| match e {
            SkillLoadError::Read {
                source: ConfineError::TooLarge(_),
                ..
            } if *budget < *left => SkillLoadError::TooLarge,
            SkillLoadError::Read {
                source: ConfineError::TooLarge(_),
                ..
            } => SkillError::TooLarge {
                path: path.to_owned(),
                reason: format!(
                    "its files total more than {MAX_SKILL_TOTAL_BYTES} bytes (the extension's limit of 16 MiB)"
                ),
            }
            .into(),
            other => other,
        })?;
        let n = bytes.len() as u64;
        *left = left.saturating_sub(n);
        *budget = budget.saturating_sub(n);
        Ok::<_, SkillLoadError>(bytes)
    };
    let mut skill = SkillDefinition::new(path, take(skill_md, &mut left, budget)?)?;
    for entry in members {
        if entry.rel() == skill_md_rel {
            continue;
        }
        let rel = entry.rel().strip_prefix(dir).unwrap_or(entry.rel());
        let rel = slash_path(rel)?;
        let bytes = take(entry, &mut left, budget)?;
        skill = skill.with_file(&rel, bytes)?;
    }
    Ok(skill)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use codomyrmex_mcp_core::wire::skills::digest_of;

    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, bytes).unwrap();
        }
        dir
    }

    fn md(name: &str) -> Vec<u8> {
        format!("---\nname: {name}\ndescription: The {name} skill\n---\n# {name}\n").into_bytes()
    }

    #[test]
    fn every_skill_md_makes_a_skill_with_all_its_files() {
        let (a, refunds, nested) = (md("pdf"), md("refunds"), md("inner"));
        let dir = tree(&[
            ("pdf/SKILL.md", &a),
            ("pdf/templates/invoice.md", b"invoice"),
            ("pdf/.hidden", b"secret"),
            ("pdf/inner/SKILL.md", &nested),
            ("acme/billing/refunds/SKILL.md", &refunds),
            ("notes.txt", b"not a skill"),
        ]);
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("pdf/passwd")).unwrap();
        let loaded = skills_from_dir(dir.path()).unwrap();
        assert!(loaded.refused.is_empty(), "{:?}", loaded.refused);
        let mut uris: Vec<String> = loaded.skills.iter().map(|s| s.uri()).collect();
        uris.sort();
        assert_eq!(
            uris,
            [
                "skill://acme/billing/refunds/SKILL.md",
                "skill://pdf/SKILL.md",
                "skill://pdf/inner/SKILL.md"
            ]
        );
        let pdf = loaded.skills.iter().find(|s| s.name() == "pdf").unwrap();
        let files: Vec<&str> = pdf.files().collect();
        assert_eq!(
            files,
            ["SKILL.md", "inner/SKILL.md", "templates/invoice.md"]
        );
        let entry = pdf.entry();
        let manifest = entry.resources.files().unwrap();
        assert_eq!(manifest[0].digest, digest_of(&a));
        assert_eq!(manifest[0].size, a.len() as u64);
    }

    #[test]
    fn a_skill_that_breaks_a_rule_is_refused_by_name_and_the_others_load() {
        let good = md("good");
        let dir = tree(&[
            ("good/SKILL.md", &good),
            (
                "Bad_Name/SKILL.md",
                b"---\nname: Bad_Name\ndescription: d\n---\n",
            ),
            ("mismatch/SKILL.md", &md("other")),
            ("nofm/SKILL.md", b"# no frontmatter"),
        ]);
        let loaded = skills_from_dir(dir.path()).unwrap();
        assert_eq!(loaded.skills.len(), 1);
        let mut refused: Vec<String> = loaded
            .refused
            .iter()
            .map(|(p, e)| format!("{p}: {e}"))
            .collect();
        refused.sort();
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(
            refused[0].starts_with("Bad_Name: ") && refused[0].contains("lowercase"),
            "{refused:?}"
        );
        assert!(
            refused[1].contains("must equal the last path segment"),
            "{refused:?}"
        );
        assert!(refused[2].contains("frontmatter"), "{refused:?}");
    }

    #[test]
    fn a_skill_over_the_size_limit_is_refused_while_reading() {
        let big = md("big");
        let dir = tree(&[("big/SKILL.md", &big)]);
        let f = fs::File::create(dir.path().join("big/blob.bin")).unwrap();
        f.set_len(MAX_SKILL_TOTAL_BYTES).unwrap();
        let loaded = skills_from_dir(dir.path()).unwrap();
        assert!(loaded.skills.is_empty());
        let (path, e) = &loaded.refused[0];
        assert_eq!(path, "big");
        assert!(e.to_string().contains("16 MiB"), "{e}");
    }

    #[test]
    fn a_root_that_is_itself_a_skill_is_named_after_it() {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("solo");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("SKILL.md"), md("solo")).unwrap();
        let loaded = skills_from_dir(&root).unwrap();
        assert_eq!(loaded.skills[0].uri(), "skill://solo/SKILL.md");
        assert!(skills_from_dir(parent.path().join("missing")).is_err());
    }
}
