//! What the tree walk behind `file_system.list_directory`, `file_system.search` and the root's
//! resource listing lists: the [`TreeFilter`] that applies `.gitignore`, `.ignore` and
//! `.git/info/exclude` (with `ignore`'s matcher, on names), hidden names, the search's globs,
//! and a file-size cap, and skips names that are not UTF-8 (counted).
//!
//! How the tree is reached is the library's [`ConfinedRoot::walk_tree`]: from descriptors,
//! never following a symlink. The ignore files themselves are read from the descriptor of the
//! directory they are in (`O_NOFOLLOW`, `fstat`-checked, capped), so an ignore file that is a
//! symlink is not read, and nothing above the root is: parents of the walk's start contribute
//! their ignore files up to the root, never beyond it.
//!
//! Precedence follows `ignore`'s walker: the globs first (a match decides), then `.ignore`
//! files (the deepest directory's decision first), then `.gitignore` files, then
//! `.git/info/exclude`; a name no rule decides is hidden when it starts with `.`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use codomyrmex_mcp::confine::{
    ConfineError, ConfinedDir, ConfinedRoot, TreeEntry, TreeFilter, TreeWalk,
};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::Override;
use rustix::fs::FileType;

/// The largest ignore file read, in bytes; a larger one is not applied.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// How [`walker`] walks (also used by the root's resource listing).
pub(crate) struct WalkOptions {
    pub(crate) include_hidden: bool,
    pub(crate) respect_gitignore: bool,
    pub(crate) max_depth: Option<usize>,
    pub(crate) max_filesize: Option<u64>,
}

/// The ignore files of one directory on the walk (or above its start, up to the root).
struct Level {
    rel: PathBuf,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

/// The walk's filter: ignore rules, hidden names, globs and the file-size cap.
pub(crate) struct IgnoreRules {
    include_hidden: bool,
    respect: bool,
    max_filesize: Option<u64>,
    overrides: Option<(PathBuf, Override)>,
    levels: Vec<Level>,
    non_utf8: u64,
}

impl IgnoreRules {
    /// Names left out because they are not valid UTF-8.
    pub(crate) fn skipped_non_utf8(&self) -> u64 {
        self.non_utf8
    }

    /// The ignore files of `dir`, read from its descriptor.
    fn level(&self, dir: &ConfinedDir) -> Level {
        let exclude = dir
            .open_dir(OsStr::new(".git"))
            .and_then(|git| git.open_dir(OsStr::new("info")))
            .ok()
            .and_then(|info| matcher(&info, "exclude"));
        Level {
            rel: dir.rel().to_path_buf(),
            ignore: matcher(dir, ".ignore"),
            gitignore: matcher(dir, ".gitignore"),
            exclude,
        }
    }

    /// The ignore rules' decision for `rel` (deepest directory first within each kind).
    fn ignore_match(&self, rel: &Path, is_dir: bool) -> Match<()> {
        let pick = |get: fn(&Level) -> Option<&Gitignore>| {
            for level in self.levels.iter().rev() {
                let (Some(m), Ok(under)) = (get(level), rel.strip_prefix(&level.rel)) else {
                    continue;
                };
                match m.matched(under, is_dir) {
                    Match::None => {}
                    Match::Ignore(_) => return Match::Ignore(()),
                    Match::Whitelist(_) => return Match::Whitelist(()),
                }
            }
            Match::None
        };
        for get in [
            (|l: &Level| l.ignore.as_ref()) as fn(&Level) -> Option<&Gitignore>,
            |l| l.gitignore.as_ref(),
            |l| l.exclude.as_ref(),
        ] {
            let m = pick(get);
            if !m.is_none() {
                return m;
            }
        }
        Match::None
    }
}

/// The rules of the ignore file `name` in `dir`, when it is a regular file (not a symlink)
/// of at most [`MAX_IGNORE_FILE_BYTES`].
fn matcher(dir: &ConfinedDir, name: &str) -> Option<Gitignore> {
    let bytes = dir
        .read_file(OsStr::new(name), MAX_IGNORE_FILE_BYTES)
        .ok()??;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(".");
    for line in text.lines() {
        // A malformed line is skipped, as git and `ignore` do.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

impl TreeFilter for IgnoreRules {
    fn enter(&mut self, dir: &ConfinedDir) {
        let level = if self.respect {
            self.level(dir)
        } else {
            Level {
                rel: dir.rel().to_path_buf(),
                ignore: None,
                gitignore: None,
                exclude: None,
            }
        };
        self.levels.push(level);
    }

    fn leave(&mut self) {
        self.levels.pop();
    }

    fn keep(&mut self, entry: &TreeEntry) -> bool {
        let is_dir = entry.kind() == FileType::Directory;
        let rel = entry.rel();
        let mut decided = Match::None;
        if let Some((start, globs)) = &self.overrides
            && let Ok(under) = rel.strip_prefix(start)
        {
            decided = match globs.matched(under, is_dir) {
                Match::None => Match::None,
                Match::Ignore(_) => Match::Ignore(()),
                Match::Whitelist(_) => Match::Whitelist(()),
            };
        }
        if decided.is_none() && self.respect {
            decided = self.ignore_match(rel, is_dir);
        }
        if decided.is_ignore() {
            return false;
        }
        let name = entry.name();
        if decided.is_none() && !self.include_hidden && name.as_encoded_bytes().starts_with(b".") {
            return false;
        }
        if entry.kind() == FileType::RegularFile
            && self.max_filesize.is_some_and(|max| entry.size() > max)
        {
            return false;
        }
        if name.to_str().is_none() {
            self.non_utf8 += 1;
            return false;
        }
        !(self.respect && name == ".git")
    }
}

/// A walk of the directory `rel` (resolved inside `root`) that never follows a symlink and
/// lists what [`IgnoreRules`] keeps. Parents of `rel` up to the root contribute their ignore
/// files; `overrides` are globs relative to `rel`.
pub(crate) fn walker(
    root: &ConfinedRoot,
    rel: &Path,
    o: &WalkOptions,
    overrides: Option<Override>,
) -> Result<TreeWalk<IgnoreRules>, ConfineError> {
    let start = root.open_dir(rel)?;
    let mut rules = IgnoreRules {
        include_hidden: o.include_hidden,
        respect: o.respect_gitignore,
        max_filesize: o.max_filesize,
        overrides: overrides.map(|g| (start.rel().to_path_buf(), g)),
        levels: Vec::new(),
        non_utf8: 0,
    };
    if o.respect_gitignore && !start.rel().as_os_str().is_empty() {
        // The start's parents, from the root down, each opened from the one above it.
        let names: Vec<_> = start.rel().iter().map(OsStr::to_owned).collect();
        let mut dir = root.open_dir(Path::new(""))?;
        for name in names.iter().take(names.len() - 1) {
            let next = dir.open_dir(name)?;
            let level = rules.level(&dir);
            rules.levels.push(level);
            dir = next;
        }
        let level = rules.level(&dir);
        rules.levels.push(level);
    }
    root.walk_from(start, o.max_depth, rules)
}
