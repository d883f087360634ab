//! The sandbox: every path a tool touches is confined to one root directory.
//!
//! A path argument is refused, before the file system is touched, when it:
//! - contains a `..` component (`ACCESS_DENIED`), even one that would stay inside;
//! - is absolute and not under the root (`ACCESS_DENIED`);
//! - is longer than [`MAX_PATH_BYTES`], has a component longer than [`MAX_COMPONENT_BYTES`], or
//!   contains a NUL byte (`INVALID_PATH`).
//!
//! It is then resolved with symlinks followed, and refused when the result leaves the root
//! (`ACCESS_DENIED`) or has a name that is not UTF-8 (`INVALID_PATH`). For paths that do not
//! exist yet (writes), the deepest existing ancestor is resolved and checked, and a dangling
//! symlink is refused. Paths the writing tools use are also refused when they have a `.git`
//! component, as given or as resolved ([`Sandbox::resolve_writable`]).
//!
//! Files are opened with [`open_checked`]: the last component is not followed if it became a
//! symlink, a FIFO does not block the open, and the opened handle must be a regular file.
//! Checks and the operation that follows are otherwise not atomic: a process that can swap
//! *directories* for symlinks inside the root while a tool runs can race them.

use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// The longest path argument, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest path component, in bytes (Linux's `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// A root directory that paths are confined to.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The canonical root.
    root: PathBuf,
    /// The root as configured (absolute), when it differs from the canonical one; absolute
    /// arguments may use either form.
    alias: Option<PathBuf>,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let given = root.as_ref();
        let absolute = std::path::absolute(given)?;
        let root = absolute.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("the root {} is not a directory", given.display()),
            ));
        }
        let alias = (absolute != root).then_some(absolute);
        Ok(Self { root, alias })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root as configured, when it differs from the canonical one.
    pub fn alias(&self) -> Option<&Path> {
        self.alias.as_deref()
    }

    /// Whether the canonical path `p` is the root or inside it.
    pub fn contains(&self, p: &Path) -> bool {
        p.starts_with(&self.root)
    }

    /// `p` (canonical, inside the root) relative to the root with `/` separators; `.` for the
    /// root itself.
    pub fn relative(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            // Never an absolute path in a message: callers pass paths inside the root.
            Err(_) => "<outside the root>".to_owned(),
        }
    }

    /// Refuses `resolved` (the resolution of `raw`) when `raw` or `resolved` has a component
    /// named `.git` (ASCII case-insensitively): the writing tools never touch a repository's
    /// metadata, where a config or hook would make git run programs.
    pub fn refuse_git_metadata(&self, raw: &str, resolved: &Path) -> Result<(), ToolError> {
        let rel = resolved.strip_prefix(&self.root).unwrap_or(resolved);
        if names_git(Path::new(raw)) || names_git(rel) {
            return Err(ToolError::access_denied(format!(
                "{}: is or is inside a .git directory; repository metadata is not changed by \
                 the file tools, nor part of the working tree for the git tools",
                shorten(raw)
            )));
        }
        Ok(())
    }

    /// [`Self::resolve_new`] for a path a tool will write, create or remove: also refused
    /// inside `.git` ([`Self::refuse_git_metadata`]), before anything is resolved.
    pub fn resolve_writable(&self, raw: &str) -> Result<PathBuf, ToolError> {
        self.refuse_git_metadata(raw, Path::new(""))?;
        let path = self.resolve_new(raw)?;
        self.refuse_git_metadata(raw, &path)?;
        Ok(path)
    }

    /// [`Self::resolve_entry`] for an entry a tool will move, create or remove: also refused
    /// inside `.git` ([`Self::refuse_git_metadata`]), before anything is resolved.
    pub fn resolve_entry_writable(
        &self,
        raw: &str,
        must_exist: bool,
    ) -> Result<PathBuf, ToolError> {
        self.refuse_git_metadata(raw, Path::new(""))?;
        let path = self.resolve_entry(raw, must_exist)?;
        self.refuse_git_metadata(raw, &path)?;
        Ok(path)
    }

    /// Checks `raw` without touching the file system and joins it to the root.
    fn lexical(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let shown = shorten(raw);
        if raw.is_empty() {
            return Err(ToolError::invalid_path(
                "the path is empty; use \".\" for the root",
            ));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(ToolError::invalid_path(format!(
                "the path is {} bytes long; the limit is {MAX_PATH_BYTES}",
                raw.len()
            )));
        }
        if raw.contains('\0') {
            return Err(ToolError::invalid_path(format!(
                "{shown}: the path contains a NUL byte"
            )));
        }
        let path = Path::new(raw);
        let mut rel = PathBuf::new();
        for component in path.components() {
            match component {
                Component::ParentDir => {
                    return Err(ToolError::access_denied(format!(
                        "{shown}: `..` is not allowed; paths are relative to the root and must stay inside it"
                    )));
                }
                Component::Normal(name) => {
                    if name.len() > MAX_COMPONENT_BYTES {
                        return Err(ToolError::invalid_path(format!(
                            "{shown}: a path component is {} bytes long; the limit is {MAX_COMPONENT_BYTES}",
                            name.len()
                        )));
                    }
                    rel.push(name);
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        if path.is_absolute() {
            let normalized: PathBuf = path.components().collect();
            let inside = normalized
                .strip_prefix(&self.root)
                .ok()
                .or_else(|| {
                    self.alias
                        .as_deref()
                        .and_then(|a| normalized.strip_prefix(a).ok())
                })
                .map(Path::to_path_buf);
            return match inside {
                Some(inside) => Ok(self.root.join(inside)),
                None => Err(ToolError::access_denied(format!(
                    "{shown}: absolute paths must be inside the root; use a path relative to it"
                ))),
            };
        }
        Ok(self.root.join(rel))
    }

    /// Resolves `canonical`'s relative part and checks it is UTF-8.
    fn finish(&self, canonical: PathBuf, raw: &str) -> Result<PathBuf, ToolError> {
        if !self.contains(&canonical) {
            return Err(ToolError::access_denied(format!(
                "{}: resolves outside the root (through a symlink)",
                shorten(raw)
            )));
        }
        let rel = canonical.strip_prefix(&self.root).unwrap_or(Path::new(""));
        if rel.to_str().is_none() {
            return Err(ToolError::invalid_path(format!(
                "{}: resolves to a name that is not valid UTF-8",
                shorten(raw)
            )));
        }
        Ok(canonical)
    }

    /// Resolves an existing path: symlinks are followed and the result must stay inside.
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(raw)?;
        match lexical.canonicalize() {
            Ok(canonical) => self.finish(canonical, raw),
            Err(e) => {
                // Don't reveal whether something exists outside the root.
                let (ancestor, _) = self.existing_ancestor(&lexical, raw)?;
                self.finish(ancestor, raw)?;
                Err(ToolError::io(&e, &shorten(raw)))
            }
        }
    }

    /// Resolves a path that may not exist yet (a write's target). Its deepest existing ancestor
    /// must resolve inside the root; the missing components are appended to it.
    pub fn resolve_new(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(raw)?;
        let (ancestor, tail) = self.existing_ancestor(&lexical, raw)?;
        let mut path = self.finish(ancestor, raw)?;
        for name in tail.iter().rev() {
            path.push(name);
        }
        Ok(path)
    }

    /// Resolves a directory entry without following a symlink in its last component (for
    /// `move`, which renames links rather than their targets). Its parent must exist and
    /// resolve inside the root. With `must_exist`, the entry itself must exist.
    pub fn resolve_entry(&self, raw: &str, must_exist: bool) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(raw)?;
        let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
            return Ok(self.root.clone());
        };
        if lexical == self.root {
            return Ok(self.root.clone());
        }
        let parent =
            parent
                .canonicalize()
                .map_err(|e| match self.existing_ancestor(parent, raw) {
                    Err(denied) => denied,
                    Ok((ancestor, _)) => match self.finish(ancestor, raw) {
                        Err(denied) => denied,
                        Ok(_) => ToolError::io(&e, &shorten(raw)),
                    },
                })?;
        let path = self.finish(parent, raw)?.join(name);
        if must_exist && let Err(e) = std::fs::symlink_metadata(&path) {
            return Err(ToolError::io(&e, &shorten(raw)));
        }
        Ok(path)
    }

    /// Whether `raw` names a symlink (not followed), once checked lexically.
    pub fn is_symlink(&self, raw: &str) -> bool {
        self.lexical(raw)
            .ok()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.file_type().is_symlink())
    }

    /// The canonical form of the deepest existing ancestor of `lexical` (itself included), and
    /// the names below it, deepest first.
    fn existing_ancestor(
        &self,
        lexical: &Path,
        raw: &str,
    ) -> Result<(PathBuf, Vec<std::ffi::OsString>), ToolError> {
        let mut current = lexical.to_path_buf();
        let mut tail = Vec::new();
        loop {
            match std::fs::symlink_metadata(&current) {
                Ok(meta) => {
                    return match current.canonicalize() {
                        Ok(c) => Ok((c, tail)),
                        Err(_) if meta.file_type().is_symlink() => {
                            Err(ToolError::access_denied(format!(
                                "{}: goes through a symlink whose target does not exist",
                                shorten(raw)
                            )))
                        }
                        Err(e) => Err(ToolError::io(&e, &shorten(raw))),
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let Some(name) = current.file_name().map(ToOwned::to_owned) else {
                        return Err(ToolError::io(&e, &shorten(raw)));
                    };
                    tail.push(name);
                    if !current.pop() {
                        return Err(ToolError::io(&e, &shorten(raw)));
                    }
                }
                Err(e) => return Err(ToolError::io(&e, &shorten(raw))),
            }
        }
    }
}

/// Opens `path` (resolved, inside the root) with `options`, without following a symlink in its
/// last component and without blocking on a FIFO, and checks that what was opened is a regular
/// file. A symlink or FIFO swapped in after the sandbox's checks is refused, not followed or
/// waited on.
pub fn open_checked(
    options: &mut fs::OpenOptions,
    path: &Path,
    shown: &str,
) -> Result<File, ToolError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(i32::try_from(flags.bits()).unwrap_or(0));
    }
    let file = options.open(path).map_err(|e| {
        // ELOOP: the last component became a symlink; ENXIO: a FIFO without a reader.
        #[cfg(unix)]
        if let Some(errno) = rustix::io::Errno::from_io_error(&e)
            && [rustix::io::Errno::LOOP, rustix::io::Errno::NXIO].contains(&errno)
        {
            return ToolError::access_denied(format!(
                "{shown}: changed into a symlink or special file while being opened"
            ));
        }
        ToolError::io(&e, shown)
    })?;
    let meta = file.metadata().map_err(|e| ToolError::io(&e, shown))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            super::kinds::IS_A_DIRECTORY,
            format!("{shown} is a directory; use file_system.list_directory"),
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::invalid_argument(format!(
            "{shown} is not a regular file (a FIFO, socket or device)"
        )));
    }
    Ok(file)
}

/// Whether `p` has a component named `.git`, ASCII case-insensitively.
fn names_git(p: &Path) -> bool {
    p.components()
        .any(|c| matches!(c, Component::Normal(name) if name.eq_ignore_ascii_case(".git")))
}

/// `raw` cut to a readable length for messages.
pub fn shorten(raw: &str) -> String {
    const MAX: usize = 120;
    if raw.len() <= MAX {
        return raw.to_owned();
    }
    let mut end = MAX;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &raw[..end], raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::kinds;

    fn fixture() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
        std::fs::write(dir.path().join("sub/file.txt"), "hi").unwrap();
        let sb = Sandbox::new(dir.path()).unwrap();
        (dir, sb)
    }

    #[test]
    fn relative_paths_resolve_inside() {
        let (_d, sb) = fixture();
        let p = sb.resolve("sub/file.txt").unwrap();
        assert_eq!(sb.relative(&p), "sub/file.txt");
        assert_eq!(sb.relative(&sb.resolve(".").unwrap()), ".");
        assert_eq!(
            sb.relative(&sb.resolve("./sub/./deeper").unwrap()),
            "sub/deeper"
        );
    }

    #[test]
    fn parent_components_are_refused() {
        let (_d, sb) = fixture();
        for raw in [
            "..",
            "../etc/passwd",
            "sub/../../x",
            "sub/../file.txt",
            "./..",
        ] {
            let e = sb.resolve(raw).unwrap_err();
            assert_eq!(e.kind, kinds::ACCESS_DENIED, "{raw}");
            let e = sb.resolve_new(raw).unwrap_err();
            assert_eq!(e.kind, kinds::ACCESS_DENIED, "{raw}");
        }
    }

    #[test]
    fn absolute_paths_outside_are_refused_and_inside_accepted() {
        let (d, sb) = fixture();
        for raw in ["/etc/passwd", "/", "/tmp"] {
            assert_eq!(
                sb.resolve(raw).unwrap_err().kind,
                kinds::ACCESS_DENIED,
                "{raw}"
            );
            assert_eq!(
                sb.resolve_new(raw).unwrap_err().kind,
                kinds::ACCESS_DENIED,
                "{raw}"
            );
        }
        let inside = d.path().join("sub/file.txt");
        let p = sb.resolve(inside.to_str().unwrap()).unwrap();
        assert_eq!(sb.relative(&p), "sub/file.txt");
        // A sibling whose name starts with the root's is outside.
        let sibling = format!("{}-evil/x", d.path().display());
        assert_eq!(
            sb.resolve_new(&sibling).unwrap_err().kind,
            kinds::ACCESS_DENIED
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let (d, sb) = fixture();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("secret-link"))
            .unwrap();
        std::os::unix::fs::symlink("/nonexistent-target-xyz", d.path().join("dangling")).unwrap();
        for raw in [
            "out",
            "out/secret",
            "secret-link",
            "out/missing",
            "out/new/deeper",
        ] {
            assert_eq!(
                sb.resolve(raw).unwrap_err().kind,
                kinds::ACCESS_DENIED,
                "{raw}"
            );
            assert_eq!(
                sb.resolve_new(raw).unwrap_err().kind,
                kinds::ACCESS_DENIED,
                "{raw}"
            );
        }
        assert_eq!(
            sb.resolve_new("dangling").unwrap_err().kind,
            kinds::ACCESS_DENIED
        );
        assert_eq!(
            sb.resolve_new("dangling/x").unwrap_err().kind,
            kinds::ACCESS_DENIED
        );
        // A symlink that stays inside is fine.
        std::os::unix::fs::symlink(d.path().join("sub"), d.path().join("inner")).unwrap();
        assert_eq!(
            sb.relative(&sb.resolve("inner/file.txt").unwrap()),
            "sub/file.txt"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_root_accepts_both_absolute_forms() {
        let (d, _) = fixture();
        let links = tempfile::tempdir().unwrap();
        let link = links.path().join("root-link");
        std::os::unix::fs::symlink(d.path(), &link).unwrap();
        let sb = Sandbox::new(&link).unwrap();
        let via_link = link.join("sub/file.txt");
        assert_eq!(
            sb.relative(&sb.resolve(via_link.to_str().unwrap()).unwrap()),
            "sub/file.txt"
        );
    }

    #[test]
    fn very_long_paths_are_refused_cleanly() {
        let (_d, sb) = fixture();
        let long_component = "x".repeat(MAX_COMPONENT_BYTES + 1);
        let e = sb.resolve(&long_component).unwrap_err();
        assert_eq!(e.kind, kinds::INVALID_PATH);
        assert!(e.message.contains("255"), "{}", e.message);
        assert!(
            e.message.len() < 400,
            "message not shortened: {}",
            e.message.len()
        );
        let long_path = "a/".repeat(3000);
        let e = sb.resolve_new(&long_path).unwrap_err();
        assert_eq!(e.kind, kinds::INVALID_PATH);
        assert!(e.message.contains("4096"), "{}", e.message);
        // Many short components within the limit: refused by the OS, still cleanly.
        let deep = "d/".repeat(2000);
        let e = sb.resolve(&deep).unwrap_err();
        assert!(
            [kinds::NOT_FOUND, kinds::INVALID_PATH].contains(&e.kind),
            "{e}"
        );
    }

    #[test]
    fn nul_bytes_and_empty_paths_are_refused() {
        let (_d, sb) = fixture();
        assert_eq!(sb.resolve("a\0b").unwrap_err().kind, kinds::INVALID_PATH);
        assert_eq!(sb.resolve("").unwrap_err().kind, kinds::INVALID_PATH);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn non_utf8_targets_are_refused() {
        use std::os::unix::ffi::OsStrExt;
        let (d, sb) = fixture();
        let bad = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
        std::fs::write(d.path().join(bad), "x").unwrap();
        std::os::unix::fs::symlink(d.path().join(bad), d.path().join("to-bad")).unwrap();
        let e = sb.resolve("to-bad").unwrap_err();
        assert_eq!(e.kind, kinds::INVALID_PATH);
        // The lossy rendering of the name does not reach the file either.
        let lossy = bad.to_string_lossy().into_owned();
        assert_eq!(sb.resolve(&lossy).unwrap_err().kind, kinds::NOT_FOUND);
    }

    #[test]
    fn new_paths_append_missing_components() {
        let (_d, sb) = fixture();
        let p = sb.resolve_new("sub/new/dir/file.txt").unwrap();
        assert_eq!(sb.relative(&p), "sub/new/dir/file.txt");
        assert_eq!(sb.resolve("sub/new").unwrap_err().kind, kinds::NOT_FOUND);
    }
}
