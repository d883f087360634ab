//! [`ConfinedRoot`]: the one mechanism that confines paths to a root directory.
//!
//! Every path into a served root — `ServeDirectory`, the `serve` binary's resources and file,
//! JSON, search and git tools, and anything later — is resolved here, never by
//! `canonicalize` and a prefix check (ARCHITECTURE.md, "One confinement mechanism").
//!
//! ## How a path is resolved
//! 1. The argument is checked without touching the file system ([`ConfinedRoot::argument`]):
//!    not empty, at most [`MAX_PATH_BYTES`] bytes and [`MAX_COMPONENT_BYTES`] per component,
//!    no NUL byte, no `..` component, and absolute only when under the root.
//! 2. It is walked component by component from a directory descriptor of the root, each step
//!    an `openat` with `O_NOFOLLOW`. A symlink met on the way is read (`readlinkat`) and its
//!    target walked in its place, at most [`MAX_SYMLINK_HOPS`] times per resolution. A `..`
//!    in a target goes up the walk's own stack of opened directories and fails closed above
//!    the root; an absolute target is followed only when it names a place under the root.
//! 3. On Linux, `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` is tried first
//!    ([`Resolver::Auto`]); the kernel then does the walk in one call. When it refuses, the
//!    manual walk decides (so a refusal, and an absolute target under the root, get the same
//!    answer as without `openat2`); the tests run one table through both and compare.
//!
//! Every error fails closed: no error path returns a path that was not walked. Writes create
//! files (`O_CREAT | O_EXCL | O_NOFOLLOW`) and directories (`mkdirat`) in the walk's
//! directory descriptors ([`ConfinedRoot::open_for_write`], [`ConfinedRoot::make_dir`]).
//! Files are opened from the walk's descriptors, checked with `fstat` (a regular file, not a FIFO,
//! device or directory), and read with a cap on the bytes actually read, never on the size
//! the file reports (`/proc` files report 0).
//!
//! Directories are enumerated the same way ([`ConfinedRoot::open_dir`], [`ConfinedRoot::walk_tree`]):
//! a directory is opened through the walk and its entries read from that descriptor; a child
//! directory is entered with `openat(O_DIRECTORY | O_NOFOLLOW)` from its parent's descriptor,
//! so a walk never follows a symlink, not even one swapped in for a directory mid-walk.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{FileType, Mode, OFlags};

#[cfg(target_os = "linux")]
mod fast;
mod tree;
mod walk;
mod write;

pub use tree::{ConfinedDir, MAX_DIR_ENTRIES, MAX_TREE_DEPTH, TreeEntry, TreeFilter, TreeWalk};
pub use write::WriteMode;

#[cfg(test)]
mod tests;

/// The longest path argument, in bytes (Linux's `PATH_MAX`); also the longest resolved path.
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest path component, in bytes (Linux's `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// How many symlinks one resolution follows at most (the kernel's `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Why a path was refused or could not be resolved. Messages never name anything outside
/// the root; callers prefix the path as the client gave it.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The argument is empty.
    #[error("the path is empty; use \".\" for the root")]
    Empty,
    /// The argument is longer than [`MAX_PATH_BYTES`].
    #[error("the path is {0} bytes long; the limit is {MAX_PATH_BYTES}")]
    TooLong(usize),
    /// A component of the argument is longer than [`MAX_COMPONENT_BYTES`].
    #[error("a path component is {0} bytes long; the limit is {MAX_COMPONENT_BYTES}")]
    ComponentTooLong(usize),
    /// The argument contains a NUL byte.
    #[error("the path contains a NUL byte")]
    Nul,
    /// The argument has a `..` component.
    #[error("`..` is not allowed; paths are relative to the root and must stay inside it")]
    ParentDir,
    /// The argument is absolute and not under the root (or absolute paths are not accepted).
    #[error("absolute paths must be inside the root; use a path relative to it")]
    Absolute,
    /// A symlink on the way leads out of the root (`..` above it, or an absolute target
    /// elsewhere), or an entry changed into a symlink while it was opened.
    #[error("resolves outside the root (through a symlink)")]
    Escapes,
    /// A symlink on the way has a target that does not exist.
    #[error("goes through a symlink whose target does not exist")]
    DanglingLink,
    /// More than [`MAX_SYMLINK_HOPS`] symlinks, or a loop.
    #[error("goes through more than {MAX_SYMLINK_HOPS} symlinks (a loop?)")]
    TooManyLinks,
    /// The resolved path is longer than [`MAX_PATH_BYTES`].
    #[error("resolves to a path longer than {MAX_PATH_BYTES} bytes")]
    ResolvedTooLong,
    /// Nothing exists at the path (inside the root).
    #[error("no such file or directory")]
    NotFound,
    /// A component on the way is not a directory.
    #[error("not a directory")]
    NotADirectory,
    /// A file was needed and this is a directory.
    #[error("is a directory")]
    IsADirectory,
    /// A regular file was needed and this is a FIFO, socket or device.
    #[error("is not a regular file (a FIFO, socket or device)")]
    NotRegular,
    /// The directory has more entries than the cap.
    #[error("has more than {0} entries")]
    TooManyEntries(usize),
    /// The entry exists (a rename's destination without replacing).
    #[error("already exists")]
    Exists,
    /// A rename would replace this directory (a directory is never replaced).
    #[error("is a directory; a directory is never replaced")]
    ReplacesADirectory,
    /// The file has more bytes than the cap.
    #[error("is larger than the limit of {0} bytes")]
    TooLarge(u64),
    /// The resolved path is not valid UTF-8 where UTF-8 is required.
    #[error("resolves to a name that is not valid UTF-8")]
    NotUtf8,
    /// Another operating-system error (permission denied, ...).
    #[error("{0}")]
    Io(io::Error),
}

impl ConfineError {
    /// Whether this is a refusal to leave the root (as opposed to a missing or bad file).
    pub fn is_access_denied(&self) -> bool {
        matches!(
            self,
            Self::ParentDir | Self::Absolute | Self::Escapes | Self::DanglingLink
        )
    }

    /// Whether the argument itself is malformed (empty, too long, NUL, not UTF-8).
    pub fn is_invalid_path(&self) -> bool {
        matches!(
            self,
            Self::Empty
                | Self::TooLong(_)
                | Self::ComponentTooLong(_)
                | Self::Nul
                | Self::ResolvedTooLong
                | Self::NotUtf8
        )
    }

    /// Maps an `errno` from an `openat`/`statat` on the walk.
    fn from_errno(e: rustix::io::Errno) -> Self {
        use rustix::io::Errno;
        match e {
            Errno::NOENT => Self::NotFound,
            Errno::NOTDIR => Self::NotADirectory,
            Errno::ISDIR => Self::IsADirectory,
            // O_NOFOLLOW met a symlink swapped in after the walk looked: refused, not followed.
            Errno::LOOP => Self::Escapes,
            Errno::NAMETOOLONG => Self::ResolvedTooLong,
            // A FIFO opened without a reader.
            Errno::NXIO => Self::NotRegular,
            other => Self::Io(io::Error::from(other)),
        }
    }
}

impl From<ConfineError> for io::Error {
    fn from(e: ConfineError) -> Self {
        let kind = match &e {
            ConfineError::NotFound => io::ErrorKind::NotFound,
            ConfineError::NotADirectory => io::ErrorKind::NotADirectory,
            ConfineError::IsADirectory | ConfineError::ReplacesADirectory => {
                io::ErrorKind::IsADirectory
            }
            ConfineError::Exists => io::ErrorKind::AlreadyExists,
            ConfineError::Io(inner) => inner.kind(),
            e if e.is_access_denied() => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, e)
    }
}

/// How a [`ConfinedRoot`] resolves paths. Every choice gives the same results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` where the kernel has it, else the walk.
    #[default]
    Auto,
    /// The component-by-component walk only.
    Walk,
    /// `openat2` (Linux); a refusal is re-derived by the walk, as with `Auto`.
    #[cfg(target_os = "linux")]
    Openat2,
}

/// Whether a symlink in the last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastLink {
    /// Follow it (reads).
    Follow,
    /// Resolve the entry itself (moving or removing a link, `stat` of a link).
    Keep,
}

/// What a resolution found: a descriptor of the entry, opened from the walk, and where it is
/// under the root.
#[derive(Debug)]
pub struct Resolved {
    fd: OwnedFd,
    rel: PathBuf,
}

impl Resolved {
    /// The entry's path relative to the root, symlinks resolved (empty for the root).
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// The entry's type, from `fstat` of the descriptor.
    pub fn file_type(&self) -> Result<FileType, ConfineError> {
        let st = rustix::fs::fstat(&self.fd).map_err(ConfineError::from_errno)?;
        Ok(FileType::from_raw_mode(st.st_mode))
    }

    /// The entry's metadata, from `fstat` of the descriptor (never by path).
    pub fn stat(self) -> Result<std::fs::Metadata, ConfineError> {
        fstat(&File::from(self.fd))
    }

    /// The descriptor.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

/// The metadata of a file opened through the confinement, from `fstat` of its descriptor:
/// the one way code serving a root learns an entry's size, type or times (never by path).
pub fn fstat(file: &File) -> Result<std::fs::Metadata, ConfineError> {
    file.metadata().map_err(ConfineError::Io)
}

/// A root directory that paths are confined to: a descriptor of it and its canonical path.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct ConfinedRoot {
    inner: Arc<Inner>,
    resolver: Resolver,
}

#[derive(Debug)]
struct Inner {
    dir: OwnedFd,
    path: PathBuf,
    alias: Option<PathBuf>,
    #[cfg(target_os = "linux")]
    proc_path: Option<Vec<u8>>,
}

/// Flags for a descriptor that only names an entry on the walk.
#[cfg(target_os = "linux")]
const STEP_FLAGS: OFlags = OFlags::PATH.union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
#[cfg(not(target_os = "linux"))]
const STEP_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Flags for opening a file to read.
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl ConfinedRoot {
    /// The root at `root`, which must be an existing directory. The configured root is the one
    /// path resolved by the operating system (it is the operator's, not a client's).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let given = root.as_ref();
        let absolute = std::path::absolute(given)?;
        // The operator's root, not a client's path: the one place the OS resolves a path.
        let path = absolute.canonicalize()?;
        let dir = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::NOTDIR {
                io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("the root {} is not a directory", given.display()),
                )
            } else {
                io::Error::from(e)
            }
        })?;
        let alias = (absolute != path).then_some(absolute);
        #[cfg(target_os = "linux")]
        let proc_path = fast::proc_path(&dir);
        Ok(Self {
            inner: Arc::new(Inner {
                dir,
                path,
                alias,
                #[cfg(target_os = "linux")]
                proc_path,
            }),
            resolver: Resolver::Auto,
        })
    }

    /// The same root, resolved with `resolver` (the tests compare the resolvers).
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The root as configured (absolute), when it differs from the canonical one.
    pub fn alias(&self) -> Option<&Path> {
        self.inner.alias.as_deref()
    }

    /// `rel` (relative to the root) with `/` separators; `.` for the root itself.
    pub fn display(rel: &Path) -> String {
        if rel.as_os_str().is_empty() {
            return ".".to_owned();
        }
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Checks a client's path argument without touching the file system and returns it
    /// relative to the root. With `absolute_inside`, an absolute path under the root (in its
    /// canonical or configured form) is accepted; otherwise every absolute path is refused.
    pub fn argument(&self, raw: &str, absolute_inside: bool) -> Result<PathBuf, ConfineError> {
        if raw.is_empty() {
            return Err(ConfineError::Empty);
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(ConfineError::TooLong(raw.len()));
        }
        if raw.contains('\0') {
            return Err(ConfineError::Nul);
        }
        let path = Path::new(raw);
        let mut rel = PathBuf::new();
        for component in path.components() {
            match component {
                Component::ParentDir => return Err(ConfineError::ParentDir),
                Component::Normal(name) => {
                    if name.len() > MAX_COMPONENT_BYTES {
                        return Err(ConfineError::ComponentTooLong(name.len()));
                    }
                    rel.push(name);
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        if path.is_absolute() || raw.starts_with('\\') {
            if !absolute_inside {
                return Err(ConfineError::Absolute);
            }
            let normalized: PathBuf = path.components().collect();
            return self.strip_root(&normalized).ok_or(ConfineError::Absolute);
        }
        Ok(rel)
    }

    /// `abs` relative to the root, when it is under it (canonical or configured form).
    fn strip_root(&self, abs: &Path) -> Option<PathBuf> {
        abs.strip_prefix(&self.inner.path)
            .ok()
            .or_else(|| {
                self.inner
                    .alias
                    .as_deref()
                    .and_then(|a| abs.strip_prefix(a).ok())
            })
            .map(Path::to_path_buf)
    }

    /// Resolves `rel` (from [`Self::argument`]) and opens what it names with `flags`
    /// (`O_NOFOLLOW` and `O_CLOEXEC` are added).
    fn resolve_with(
        &self,
        rel: &Path,
        last: LastLink,
        flags: OFlags,
    ) -> Result<Resolved, ConfineError> {
        #[cfg(target_os = "linux")]
        if self.resolver != Resolver::Walk
            && let Some(found) = fast::resolve(self, rel, last, flags)
        {
            return Ok(found);
        }
        walk::resolve(self, rel, last, flags)
    }

    /// Resolves an existing entry: every symlink on the way (and in the last component, with
    /// [`LastLink::Follow`]) must stay under the root.
    pub fn resolve(&self, rel: &Path, last: LastLink) -> Result<Resolved, ConfineError> {
        self.resolve_with(rel, last, STEP_FLAGS)
    }

    /// Opens the regular file at `rel` for reading, without blocking on a FIFO. Returns the
    /// file and where it is under the root.
    pub fn open_file(&self, rel: &Path) -> Result<(File, PathBuf), ConfineError> {
        let found = self.resolve_with(rel, LastLink::Follow, READ_FLAGS)?;
        let st = rustix::fs::fstat(&found.fd).map_err(ConfineError::from_errno)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok((File::from(found.fd), found.rel)),
            FileType::Directory => Err(ConfineError::IsADirectory),
            _ => Err(ConfineError::NotRegular),
        }
    }

    /// The type of the entry at `rel` itself (a symlink in its last component not followed;
    /// the components before it walked like a read), `None` when nothing is there. Every
    /// other error, a walk that leaves the root included, is returned: callers fail closed.
    pub fn entry_kind(&self, rel: &Path) -> Result<Option<FileType>, ConfineError> {
        match self.resolve(rel, LastLink::Keep) {
            Ok(found) => found.file_type().map(Some),
            Err(ConfineError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads the regular file at `rel`, at most `cap` bytes: a file with more is refused,
    /// whatever size it reports.
    pub fn read_file(&self, rel: &Path, cap: u64) -> Result<Vec<u8>, ConfineError> {
        let (file, _) = self.open_file(rel)?;
        let mut bytes = Vec::new();
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(ConfineError::Io)?;
        if bytes.len() as u64 > cap {
            return Err(ConfineError::TooLarge(cap));
        }
        Ok(bytes)
    }

    /// The root's descriptor.
    fn dir(&self) -> &OwnedFd {
        &self.inner.dir
    }
}

/// The names of `rel`'s normal components.
fn names(rel: &Path) -> impl Iterator<Item = OsString> + '_ {
    rel.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_owned()),
        _ => None,
    })
}
