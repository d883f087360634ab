//! Directory enumeration inside a root: [`ConfinedDir`] and the depth-first [`TreeWalk`].
//!
//! A directory is opened through the confined resolution ([`ConfinedRoot::open_dir`]) and its
//! entries are read from that descriptor (`getdents`), never by path. A child directory is
//! entered with `openat(O_DIRECTORY | O_NOFOLLOW)` from its parent's descriptor, so a directory
//! swapped for a symlink during a walk is refused (`ELOOP`/`ENOTDIR`), not followed out of the
//! root; entries are `lstat`ed (`statat` with `AT_SYMLINK_NOFOLLOW`) when the walk reaches them.
//! Files in a directory (an ignore file, a file to search) are opened from its descriptor with
//! `O_NOFOLLOW` and checked with `fstat`. What is listed or skipped (hidden names, ignore
//! files) is the caller's [`TreeFilter`]; how the tree is reached is this module's alone.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{ConfineError, ConfinedRoot, LastLink, READ_FLAGS};

/// The most entries one directory may have to be listed (names are held to be sorted: at most
/// about 28 MB for one directory of 255-byte names).
pub const MAX_DIR_ENTRIES: usize = 100_000;

/// The deepest a [`TreeWalk`] descends, whatever `max_depth` it was given: each level holds a
/// directory descriptor and its names, so a tree made deep on purpose (a hostile clone, a
/// client's `make_directory`) cannot take the process's descriptors (its `RLIMIT_NOFILE`,
/// often 1,024) or memory. A directory at this depth is listed, not descended into.
pub const MAX_TREE_DEPTH: usize = 256;

/// Flags for a directory opened to read its entries.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// A directory inside a root, opened through the confined walk: its entries and children are
/// reached from its descriptor only. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ConfinedDir {
    fd: Arc<OwnedFd>,
    rel: PathBuf,
}

/// One entry of a directory, as `lstat` saw it (a symlink is a symlink, never followed).
#[derive(Debug, Clone)]
pub struct TreeEntry {
    parent: ConfinedDir,
    name: OsString,
    rel: PathBuf,
    kind: FileType,
    size: u64,
    modified: Option<SystemTime>,
    depth: usize,
}

impl TreeEntry {
    /// The entry's name in its directory.
    pub fn name(&self) -> &OsStr {
        &self.name
    }

    /// The entry's path relative to the root (empty for the root).
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// Its type, from `lstat` (a symlink is [`FileType::Symlink`]).
    pub fn kind(&self) -> FileType {
        self.kind
    }

    /// Its size in bytes, from `lstat`.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its modification time, from `lstat` (`None` where the platform gives none).
    pub fn modified(&self) -> Option<SystemTime> {
        self.modified
    }

    /// How deep it is below the walk's start (the start is 0).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Opens the entry, when it is a regular file, from its directory's descriptor (never
    /// through a symlink: a link is resolved with [`ConfinedRoot::open_file`]).
    pub fn open_file(&self) -> Result<File, ConfineError> {
        if self.depth == 0 {
            return Err(ConfineError::IsADirectory);
        }
        self.parent.open_file(&self.name)
    }
}

/// The modification time a `stat` reports (`None` before the epoch or out of range).
fn modified(st: &rustix::fs::Stat) -> Option<SystemTime> {
    let secs = u64::try_from(st.st_mtime).ok()?;
    let nanos = u32::try_from(st.st_mtime_nsec).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

/// Checks that `name` is one entry's name: not empty, `.` or `..`, and without a `/`.
fn check_name(name: &OsStr) -> Result<(), ConfineError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || name == "." || name == ".." || bytes.contains(&b'/') {
        return Err(ConfineError::ParentDir);
    }
    if bytes.contains(&0) {
        return Err(ConfineError::Nul);
    }
    Ok(())
}

impl ConfinedDir {
    /// The directory's path relative to the root (empty for the root).
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// The names of its entries (without `.` and `..`), sorted, read from its descriptor; a
    /// directory of more than [`MAX_DIR_ENTRIES`] entries is refused
    /// ([`ConfineError::TooManyEntries`]), so one directory costs a bounded amount of memory.
    pub fn names(&self) -> Result<Vec<OsString>, ConfineError> {
        self.names_within(MAX_DIR_ENTRIES)
    }

    /// [`Self::names`] with at most `cap` entries.
    fn names_within(&self, cap: usize) -> Result<Vec<OsString>, ConfineError> {
        let dir = rustix::fs::Dir::read_from(self.fd.as_fd()).map_err(ConfineError::from_errno)?;
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry.map_err(ConfineError::from_errno)?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name != "." && name != ".." {
                if names.len() == cap {
                    return Err(ConfineError::TooManyEntries(cap));
                }
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// `lstat` of the entry `name`: its type, size and modification time (a symlink is not
    /// followed).
    fn stat(&self, name: &OsStr) -> Result<(FileType, u64, Option<SystemTime>), ConfineError> {
        check_name(name)?;
        let st = rustix::fs::statat(self.fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(ConfineError::from_errno)?;
        Ok((
            FileType::from_raw_mode(st.st_mode),
            u64::try_from(st.st_size).unwrap_or(0),
            modified(&st),
        ))
    }

    /// Its entries, sorted by name, each as `lstat` saw it (a symlink is never followed);
    /// entries gone since they were read are left out. Bounded as [`Self::names`] is.
    pub fn entries(&self) -> Result<Vec<TreeEntry>, ConfineError> {
        let mut out = Vec::new();
        for name in self.names()? {
            let Ok((kind, size, modified)) = self.stat(&name) else {
                continue;
            };
            out.push(TreeEntry {
                parent: self.clone(),
                rel: self.rel.join(&name),
                name,
                kind,
                size,
                modified,
                depth: 1,
            });
        }
        Ok(out)
    }

    /// Opens the child directory `name`; a symlink (even one swapped in after it was listed)
    /// is refused, never followed.
    pub fn open_dir(&self, name: &OsStr) -> Result<ConfinedDir, ConfineError> {
        check_name(name)?;
        let fd = rustix::fs::openat(self.fd.as_fd(), name, DIR_FLAGS, Mode::empty())
            .map_err(ConfineError::from_errno)?;
        Ok(ConfinedDir {
            fd: Arc::new(fd),
            rel: self.rel.join(name),
        })
    }

    /// Opens the child `name` for reading when it is a regular file (not a symlink, FIFO,
    /// device or directory: checked with `fstat` of what was opened).
    pub fn open_file(&self, name: &OsStr) -> Result<File, ConfineError> {
        check_name(name)?;
        let fd = rustix::fs::openat(self.fd.as_fd(), name, READ_FLAGS, Mode::empty())
            .map_err(ConfineError::from_errno)?;
        let st = rustix::fs::fstat(&fd).map_err(ConfineError::from_errno)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(File::from(fd)),
            FileType::Directory => Err(ConfineError::IsADirectory),
            _ => Err(ConfineError::NotRegular),
        }
    }

    /// Reads the regular file `name` in this directory, at most `cap` bytes (a file with
    /// more is refused, whatever size it reports). `Ok(None)` when there is no such entry.
    pub fn read_file(&self, name: &OsStr, cap: u64) -> Result<Option<Vec<u8>>, ConfineError> {
        let file = match self.open_file(name) {
            Ok(file) => file,
            Err(ConfineError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(ConfineError::Io)?;
        if bytes.len() as u64 > cap {
            return Err(ConfineError::TooLarge(cap));
        }
        Ok(Some(bytes))
    }
}

/// What a [`TreeWalk`] lists and descends into. The walk itself (descriptors, no symlink
/// followed) is not the filter's to change.
pub trait TreeFilter {
    /// A directory is entered: the walk's start first, then each directory descended into,
    /// before any of its entries is offered. The filter may read files in it (ignore files).
    fn enter(&mut self, dir: &ConfinedDir);
    /// The directory entered last is left (all its entries were offered).
    fn leave(&mut self);
    /// Whether `entry` is listed and, for a directory, descended into.
    fn keep(&mut self, entry: &TreeEntry) -> bool;
}

/// One directory on the walk's stack, with the names still to offer.
struct Frame {
    dir: ConfinedDir,
    names: std::vec::IntoIter<OsString>,
    depth: usize,
}

/// A depth-first walk under a root, in name order within each directory: a directory comes
/// before its entries. Yields the start itself first (depth 0). Entries that vanish, and
/// directories that cannot be opened as directories from their parent's descriptor (a
/// symlink swapped in, permission denied), are not descended into.
pub struct TreeWalk<F> {
    start: Option<TreeEntry>,
    stack: Vec<Frame>,
    filter: F,
    max_depth: Option<usize>,
}

impl<F> std::fmt::Debug for TreeWalk<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeWalk")
            .field("depth", &self.stack.len())
            .field("max_depth", &self.max_depth)
            .finish_non_exhaustive()
    }
}

impl<F: TreeFilter> TreeWalk<F> {
    /// The filter (for what it counted).
    pub fn tree_filter(&self) -> &F {
        &self.filter
    }

    /// Enters `dir` at `depth`: reads its names and tells the filter (a directory whose names
    /// cannot be read, or has too many, is not entered).
    fn push(&mut self, dir: ConfinedDir, depth: usize) -> Result<(), ConfineError> {
        let names = dir.names()?;
        self.filter.enter(&dir);
        self.stack.push(Frame {
            dir,
            names: names.into_iter(),
            depth,
        });
        Ok(())
    }
}

impl<F: TreeFilter> Iterator for TreeWalk<F> {
    type Item = TreeEntry;

    fn next(&mut self) -> Option<TreeEntry> {
        if let Some(start) = self.start.take() {
            return Some(start);
        }
        loop {
            let frame = self.stack.last_mut()?;
            let Some(name) = frame.names.next() else {
                self.stack.pop();
                self.filter.leave();
                continue;
            };
            let depth = frame.depth + 1;
            // Gone since it was listed, or not stat-able: not offered.
            let Ok((kind, size, modified)) = frame.dir.stat(&name) else {
                continue;
            };
            let entry = TreeEntry {
                parent: frame.dir.clone(),
                rel: frame.dir.rel.join(&name),
                name,
                kind,
                size,
                modified,
                depth,
            };
            if !self.filter.keep(&entry) {
                continue;
            }
            if kind == FileType::Directory
                && depth < MAX_TREE_DEPTH
                && self.max_depth.is_none_or(|max| depth < max)
                && let Ok(dir) = entry.parent.open_dir(&entry.name)
            {
                // Entries that cannot be read: the directory is listed, not descended into.
                let _ = self.push(dir, depth);
            }
            return Some(entry);
        }
    }
}

impl ConfinedRoot {
    /// Opens the directory at `rel` (symlinks on the way resolved inside the root) to read
    /// its entries.
    pub fn open_dir(&self, rel: &Path) -> Result<ConfinedDir, ConfineError> {
        let found = self.resolve_with(rel, LastLink::Follow, DIR_FLAGS)?;
        Ok(ConfinedDir {
            fd: Arc::new(found.fd),
            rel: found.rel,
        })
    }

    /// Walks the tree under the directory `rel` depth first (see [`TreeWalk`]), `filter`
    /// deciding what is listed, at most `max_depth` levels below it.
    pub fn walk_tree<F: TreeFilter>(
        &self,
        rel: &Path,
        max_depth: Option<usize>,
        filter: F,
    ) -> Result<TreeWalk<F>, ConfineError> {
        let dir = self.open_dir(rel)?;
        self.walk_from(dir, max_depth, filter)
    }

    /// [`Self::walk_tree`] from a directory already opened.
    pub fn walk_from<F: TreeFilter>(
        &self,
        dir: ConfinedDir,
        max_depth: Option<usize>,
        filter: F,
    ) -> Result<TreeWalk<F>, ConfineError> {
        let st = rustix::fs::fstat(dir.fd.as_fd()).map_err(ConfineError::from_errno)?;
        let start = TreeEntry {
            parent: dir.clone(),
            name: OsString::new(),
            rel: dir.rel.clone(),
            kind: FileType::Directory,
            size: u64::try_from(st.st_size).unwrap_or(0),
            modified: modified(&st),
            depth: 0,
        };
        let mut walk = TreeWalk {
            start: Some(start),
            stack: Vec::new(),
            filter,
            max_depth,
        };
        if max_depth != Some(0) {
            walk.push(dir, 0)?;
        }
        Ok(walk)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Keeps every entry.
    struct All;

    impl TreeFilter for All {
        fn enter(&mut self, _: &ConfinedDir) {}
        fn leave(&mut self) {}
        fn keep(&mut self, _: &TreeEntry) -> bool {
            true
        }
    }

    /// A tree deeper than the cap (built at test time): the walk lists the directory at the
    /// cap and goes no deeper, holding at most the cap's number of directory descriptors.
    #[test]
    fn a_walk_goes_no_deeper_than_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let deep = MAX_TREE_DEPTH + 40;
        let mut rel = PathBuf::new();
        for _ in 0..deep {
            rel.push("d");
        }
        std::fs::create_dir_all(dir.path().join(&rel)).unwrap();
        let root = ConfinedRoot::open(dir.path()).unwrap();
        let mut walk = root.walk_tree(Path::new(""), None, All).unwrap();
        let mut deepest = 0;
        let mut most_open = 0;
        while let Some(entry) = walk.next() {
            deepest = deepest.max(entry.depth);
            most_open = most_open.max(walk.stack.len());
        }
        assert_eq!(deepest, MAX_TREE_DEPTH);
        assert!(most_open <= MAX_TREE_DEPTH, "{most_open}");
    }

    #[test]
    fn a_directory_with_more_entries_than_the_cap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        let root = ConfinedRoot::open(dir.path()).unwrap();
        let top = root.open_dir(Path::new("")).unwrap();
        assert_eq!(top.names_within(5).unwrap().len(), 5);
        assert!(matches!(
            top.names_within(4),
            Err(ConfineError::TooManyEntries(4))
        ));
    }
}
