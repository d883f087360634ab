//! Writes inside the root: targets resolved by the same walk as reads, and created, opened
//! and made relative to the walk's directory descriptors (`openat` with `O_CREAT | O_EXCL |
//! O_NOFOLLOW`, `mkdirat`, `renameat`), never by path.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

use super::walk::Walk;
use super::{ConfineError, ConfinedRoot, LastLink, STEP_FLAGS};

/// How [`ConfinedRoot::open_for_write`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Replace its content (created if missing).
    Overwrite,
    /// Refuse it: the file must be new.
    CreateNew,
    /// Add to its end (created if missing).
    Append,
}

/// The flags every write's open has: no symlink followed, no FIFO waited on.
const WRITE_FLAGS: OFlags = OFlags::WRONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

impl<'r> Walk<'r> {
    /// Makes the directory `name` in the top of the stack (`mkdirat`) and pushes it.
    fn make_dir(&mut self, name: OsString) -> Result<(), ConfineError> {
        match rustix::fs::mkdirat(self.current_fd(), &name, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(ConfineError::from_errno(e)),
        }
        let fd = rustix::fs::openat(
            self.current_fd(),
            &name,
            STEP_FLAGS | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(ConfineError::from_errno)?;
        self.push(fd, name);
        Ok(())
    }
}

/// Checks that `fd` is a regular file.
fn regular(fd: OwnedFd) -> Result<File, ConfineError> {
    let st = rustix::fs::fstat(&fd).map_err(ConfineError::from_errno)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(File::from(fd)),
        FileType::Directory => Err(ConfineError::IsADirectory),
        _ => Err(ConfineError::NotRegular),
    }
}

impl ConfinedRoot {
    /// Resolves a path that may not exist yet (a write's target): the existing part is walked
    /// like a read (symlinks followed, confined) and the missing components, which have no
    /// symlinks to follow, are appended. A symlink whose target does not exist is refused
    /// ([`ConfineError::DanglingLink`]). Returns the path relative to the root.
    pub fn resolve_new(&self, rel: &Path) -> Result<PathBuf, ConfineError> {
        let mut walk = Walk::new(self);
        let missing = walk.run(rel, LastLink::Follow)?;
        let mut out = walk.rel();
        out.extend(missing.iter());
        if out.as_os_str().len() >= super::MAX_PATH_BYTES {
            return Err(ConfineError::ResolvedTooLong);
        }
        Ok(out)
    }

    /// Resolves a directory entry without following a symlink in its last component (for
    /// moving or removing links rather than their targets): its parent must exist and is
    /// walked like a read. With `must_exist`, the entry itself must exist. Returns the path
    /// relative to the root (empty for the root).
    pub fn resolve_entry(&self, rel: &Path, must_exist: bool) -> Result<PathBuf, ConfineError> {
        let names: Vec<OsString> = super::names(rel).collect();
        let Some((name, parent)) = names.split_last() else {
            return Ok(PathBuf::new());
        };
        let parent: PathBuf = parent.iter().collect();
        let mut walk = Walk::new(self);
        let missing = walk.run(&parent, LastLink::Follow)?;
        if !missing.is_empty() {
            return Err(ConfineError::NotFound);
        }
        let mut out = walk.rel();
        out.push(name);
        if must_exist {
            rustix::fs::statat(
                walk.current_fd(),
                name,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(ConfineError::from_errno)?;
        }
        Ok(out)
    }

    /// Opens the regular file at `rel` for writing, from the walk's descriptors: an existing
    /// file (symlinks on the way followed inside the root) is opened in its directory with
    /// `O_NOFOLLOW`; a new one is created there with `O_CREAT | O_EXCL`, its missing parent
    /// directories made with `mkdirat` when `make_parents`. Returns the file, its path under
    /// the root and whether it was created.
    pub fn open_for_write(
        &self,
        rel: &Path,
        how: WriteMode,
        make_parents: bool,
    ) -> Result<(File, PathBuf, bool), ConfineError> {
        let mut walk = Walk::new(self);
        let missing = walk.run(rel, LastLink::Follow)?;
        let Some((name, dirs)) = missing.split_last() else {
            // It exists: the top of the stack, opened again in its directory.
            if how == WriteMode::CreateNew {
                return Err(ConfineError::Io(std::io::Error::from(
                    rustix::io::Errno::EXIST,
                )));
            }
            let mut flags = WRITE_FLAGS;
            flags |= match how {
                WriteMode::Append => OFlags::APPEND,
                _ => OFlags::TRUNC,
            };
            let rel = walk.rel();
            let Some((parent, name)) = walk.parent_and_name() else {
                return Err(ConfineError::IsADirectory);
            };
            // Looked at before it is opened: opening a device for writing can act on it.
            let st = rustix::fs::statat(parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map_err(ConfineError::from_errno)?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => {}
                FileType::Directory => return Err(ConfineError::IsADirectory),
                _ => return Err(ConfineError::NotRegular),
            }
            let fd = rustix::fs::openat(parent, name, flags, Mode::empty())
                .map_err(ConfineError::from_errno)?;
            return Ok((regular(fd)?, rel, false));
        };
        for dir in dirs {
            if !make_parents {
                return Err(ConfineError::NotFound);
            }
            walk.make_dir(dir.clone())?;
        }
        let mut flags = WRITE_FLAGS | OFlags::CREATE | OFlags::EXCL;
        if how == WriteMode::Append {
            flags |= OFlags::APPEND;
        }
        let fd = rustix::fs::openat(
            walk.current_fd(),
            name,
            flags,
            Mode::from_bits_truncate(0o666),
        )
        .map_err(ConfineError::from_errno)?;
        let mut out = walk.rel();
        out.push(name);
        Ok((regular(fd)?, out, true))
    }

    /// Makes the directory `rel` with `mkdirat` from the walk's descriptors (its missing
    /// parents too with `parents`). Returns its path under the root and whether it was made;
    /// an existing directory is not an error, an existing other entry is.
    pub fn make_dir(&self, rel: &Path, parents: bool) -> Result<(PathBuf, bool), ConfineError> {
        let mut walk = Walk::new(self);
        let missing = walk.run(rel, LastLink::Follow)?;
        if missing.is_empty() {
            let found = walk.finish(STEP_FLAGS)?;
            let st = rustix::fs::fstat(&found.fd).map_err(ConfineError::from_errno)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                return Err(ConfineError::Io(std::io::Error::from(
                    rustix::io::Errno::EXIST,
                )));
            }
            return Ok((found.rel, false));
        }
        if !parents && missing.len() > 1 {
            return Err(ConfineError::NotFound);
        }
        for dir in missing {
            walk.make_dir(dir)?;
        }
        Ok((walk.rel(), true))
    }

    /// Renames the entry `from` to `to` (neither last component's symlink followed; their
    /// directories walked like a read) with `renameat` between the walk's descriptors.
    /// `to` is looked at in its directory's descriptor (`fstatat`, no symlink followed):
    /// without `replace`, an existing `to` is refused ([`ConfineError::Exists`], and
    /// `RENAME_NOREPLACE` on Linux); a directory is never replaced
    /// ([`ConfineError::ReplacesADirectory`]). Any other error looking at it is returned.
    pub fn rename(&self, from: &Path, to: &Path, replace: bool) -> Result<(), ConfineError> {
        let (from_dir, from_name) = self.parent_walk(from)?;
        let (to_dir, to_name) = self.parent_walk(to)?;
        let (from_fd, to_fd) = (from_dir.current_fd(), to_dir.current_fd());
        match rustix::fs::statat(to_fd, &to_name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) if !replace => return Err(ConfineError::Exists),
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                return Err(ConfineError::ReplacesADirectory);
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(ConfineError::from_errno(e)),
        }
        #[cfg(target_os = "linux")]
        if !replace {
            use rustix::fs::RenameFlags;
            match rustix::fs::renameat_with(
                from_fd,
                &from_name,
                to_fd,
                &to_name,
                RenameFlags::NOREPLACE,
            ) {
                // A file system without RENAME_NOREPLACE: the caller has checked `to` is free.
                Err(rustix::io::Errno::INVAL) => {}
                Err(rustix::io::Errno::EXIST) => return Err(ConfineError::Exists),
                other => return other.map_err(ConfineError::from_errno),
            }
        }
        let _ = replace;
        rustix::fs::renameat(from_fd, &from_name, to_fd, &to_name).map_err(ConfineError::from_errno)
    }

    /// The walk to the directory holding `rel`'s last component, and that component's name.
    fn parent_walk(&self, rel: &Path) -> Result<(Walk<'_>, OsString), ConfineError> {
        let mut names: Vec<OsString> = super::names(rel).collect();
        // The root itself is never renamed.
        let name = names
            .pop()
            .ok_or_else(|| ConfineError::Io(std::io::Error::from(rustix::io::Errno::BUSY)))?;
        let parent: PathBuf = names.iter().collect();
        let mut walk = Walk::new(self);
        if !walk.run(&parent, LastLink::Follow)?.is_empty() {
            return Err(ConfineError::NotFound);
        }
        Ok((walk, name))
    }
}
