//! The sandbox: the tools' adapter to the library's [`ConfinedRoot`], the one mechanism that
//! confines every path to the root (ARCHITECTURE.md, "One confinement mechanism").
//!
//! It holds no resolution logic: a path argument is checked and resolved by
//! [`ConfinedRoot`] (component by component from the root's descriptor, symlinks read and
//! walked under a hop limit, `openat2` where the kernel has it), and its errors are mapped
//! here to the tools' kinds:
//! - a `..` component, even one that would stay inside, an absolute path not under the root,
//!   a symlink on the way that leads out (or whose target does not exist, or a loop):
//!   `ACCESS_DENIED`;
//! - a path longer than 4096 bytes, a component longer than 255 bytes, a
//!   NUL byte, a resolved name that is not UTF-8: `INVALID_PATH`.
//!
//! Paths the writing tools use are also refused when they have a `.git` component, as given or
//! as resolved ([`Sandbox::resolve_writable`]). Files are read, written and created, and
//! directories made and entries renamed, through descriptors from the walk
//! ([`Sandbox::open_file`], [`Sandbox::open_for_write`], [`Sandbox::make_dir`],
//! [`Sandbox::rename`]), never by path.

use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

use codomyrmex_mcp::confine::{self, ConfineError, ConfinedRoot, LastLink, WriteMode};
use rustix::fs::FileType;

use super::ToolError;

/// A root directory that paths are confined to.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: ConfinedRoot,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Self {
            root: ConfinedRoot::open(root)?,
        })
    }

    /// The confinement itself (shared with the resources the server serves).
    pub fn confined(&self) -> &ConfinedRoot {
        &self.root
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The root as configured, when it differs from the canonical one.
    pub fn alias(&self) -> Option<&Path> {
        self.root.alias()
    }

    /// `p` (a path this sandbox returned, or one below it) relative to the root with `/`
    /// separators; `.` for the root itself.
    pub fn relative(&self, p: &Path) -> String {
        match p.strip_prefix(self.root()) {
            Ok(rel) => ConfinedRoot::display(rel),
            // Never an absolute path in a message: callers pass paths inside the root.
            Err(_) => "<outside the root>".to_owned(),
        }
    }

    /// Refuses `resolved` (the resolution of `raw`) when `raw` or `resolved` has a component
    /// named `.git` (ASCII case-insensitively): the writing tools never touch a repository's
    /// metadata, where a config or hook would make git run programs.
    pub fn refuse_git_metadata(&self, raw: &str, resolved: &Path) -> Result<(), ToolError> {
        let rel = resolved.strip_prefix(self.root()).unwrap_or(resolved);
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

    /// `raw` checked and made relative to the root (absolute paths under it accepted).
    fn argument(&self, raw: &str) -> Result<PathBuf, ToolError> {
        self.root
            .argument(raw, true)
            .map_err(|e| tool_error(e, raw))
    }

    /// The absolute path of `rel` (resolved), refused when it is not UTF-8.
    fn absolute(&self, rel: &Path, raw: &str) -> Result<PathBuf, ToolError> {
        if rel.to_str().is_none() {
            return Err(tool_error(ConfineError::NotUtf8, raw));
        }
        Ok(self.root().join(rel))
    }

    /// Resolves an existing path: symlinks are followed and must stay inside. The tools use
    /// [`Self::metadata`] or [`Self::open_file`], which also give what they found.
    #[cfg(test)]
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let rel = self.argument(raw)?;
        let found = self
            .root
            .resolve(&rel, LastLink::Follow)
            .map_err(|e| tool_error(e, raw))?;
        self.absolute(found.rel(), raw)
    }

    /// Resolves `raw` (relative to the root, no `..`) for the git tools' own checks, which
    /// pass paths they build themselves.
    pub fn resolve_rel(&self, rel: &Path) -> Result<PathBuf, ConfineError> {
        let found = self.root.resolve(rel, LastLink::Follow)?;
        Ok(self.root().join(found.rel()))
    }

    /// The metadata of what `raw` resolves to (symlinks followed, inside the root), from
    /// `fstat` of the walk's descriptor. Returns the resolved path and the metadata.
    pub fn metadata(&self, raw: &str) -> Result<(PathBuf, std::fs::Metadata), ToolError> {
        let rel = self.argument(raw)?;
        let found = self
            .root
            .resolve(&rel, LastLink::Follow)
            .map_err(|e| tool_error(e, raw))?;
        let path = self.absolute(found.rel(), raw)?;
        let meta = found.stat().map_err(|e| tool_error(e, raw))?;
        Ok((path, meta))
    }

    /// Opens the regular file `raw` for reading, through the walk's descriptors. Returns its
    /// resolved path, the file and the file's size as `fstat` reports it.
    pub fn open_file(&self, raw: &str) -> Result<(PathBuf, File, u64), ToolError> {
        let rel = self.argument(raw)?;
        let (file, rel) = self.root.open_file(&rel).map_err(|e| tool_error(e, raw))?;
        let path = self.absolute(&rel, raw)?;
        let size = confine::fstat(&file).map_err(|e| tool_error(e, raw))?.len();
        Ok((path, file, size))
    }

    /// Resolves a path that may not exist yet (a write's target). Its existing part must
    /// resolve inside the root; the missing components are appended to it.
    pub fn resolve_new(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let rel = self.argument(raw)?;
        let rel = self
            .root
            .resolve_new(&rel)
            .map_err(|e| tool_error(e, raw))?;
        self.absolute(&rel, raw)
    }

    /// Resolves a directory entry without following a symlink in its last component (for
    /// `move`, which renames links rather than their targets). Its parent must exist and
    /// resolve inside the root. With `must_exist`, the entry itself must exist.
    pub fn resolve_entry(&self, raw: &str, must_exist: bool) -> Result<PathBuf, ToolError> {
        let rel = self.argument(raw)?;
        let rel = self
            .root
            .resolve_entry(&rel, must_exist)
            .map_err(|e| tool_error(e, raw))?;
        self.absolute(&rel, raw)
    }

    /// Opens the regular file `raw` for a write as `opening` says, created (with its missing
    /// parents when `make_parents`) from the walk's descriptors. Returns the file and whether
    /// it was created.
    pub fn open_for_write(
        &self,
        raw: &str,
        opening: WriteMode,
        make_parents: bool,
    ) -> Result<(File, bool), ToolError> {
        let rel = self.argument(raw)?;
        let (file, rel, created) = self
            .root
            .open_for_write(&rel, opening, make_parents)
            .map_err(|e| tool_error(e, raw))?;
        self.absolute(&rel, raw)?;
        Ok((file, created))
    }

    /// Makes the directory `raw` (its missing parents too with `parents`) from the walk's
    /// descriptors. Returns whether it was made.
    pub fn make_dir(&self, raw: &str, parents: bool) -> Result<bool, ToolError> {
        let rel = self.argument(raw)?;
        let (_, created) = self
            .root
            .make_dir(&rel, parents)
            .map_err(|e| tool_error(e, raw))?;
        Ok(created)
    }

    /// Renames the entry `from` to `to` between the walk's directory descriptors (neither
    /// last component's symlink followed); an existing `to` is refused unless `replace`
    /// ([`ConfineError::Exists`]), a directory always ([`ConfineError::ReplacesADirectory`]).
    /// The library's error is returned for the caller to word.
    pub fn rename(&self, from: &str, to: &str, replace: bool) -> Result<(), ConfineError> {
        let (from_rel, to_rel) = (
            self.root.argument(from, true)?,
            self.root.argument(to, true)?,
        );
        self.root.rename(&from_rel, &to_rel, replace)
    }

    /// Whether `raw` names a symlink (not followed), once checked.
    pub fn is_symlink(&self, raw: &str) -> bool {
        self.root
            .argument(raw, true)
            .ok()
            .and_then(|rel| self.root.resolve(&rel, LastLink::Keep).ok())
            .and_then(|found| found.file_type().ok())
            .is_some_and(|t| t == FileType::Symlink)
    }
}

/// The library's refusal as the tools' error, `raw` shortened in the message.
pub fn tool_error(e: ConfineError, raw: &str) -> ToolError {
    let shown = shorten(raw);
    match e {
        ConfineError::Empty | ConfineError::TooLong(_) => ToolError::invalid_path(e.to_string()),
        e if e.is_invalid_path() => ToolError::invalid_path(format!("{shown}: {e}")),
        e if e.is_access_denied() => ToolError::access_denied(format!("{shown}: {e}")),
        ConfineError::TooManyLinks => ToolError::access_denied(format!("{shown}: {e}")),
        ConfineError::IsADirectory => ToolError::new(
            super::kinds::IS_A_DIRECTORY,
            format!("{shown} is a directory; use file_system.list_directory"),
        ),
        ConfineError::NotRegular => ToolError::invalid_argument(format!(
            "{shown} is not a regular file (a FIFO, socket or device)"
        )),
        ConfineError::TooLarge(cap) => ToolError::new(
            super::kinds::TOO_LARGE,
            format!("{shown} is larger than {cap} bytes"),
        ),
        ConfineError::TooManyEntries(cap) => ToolError::new(
            super::kinds::TOO_LARGE,
            format!("{shown} has more than {cap} entries"),
        ),
        ConfineError::Io(e) => ToolError::io(&e, &shown),
        other => ToolError::io(&io::Error::from(other), &shown),
    }
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
    use codomyrmex_mcp::confine::MAX_COMPONENT_BYTES;

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
