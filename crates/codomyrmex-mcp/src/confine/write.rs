//! Paths a write will create, move or remove: resolved by the same walk as reads.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::walk::Walk;
use super::{ConfineError, ConfinedRoot, LastLink};

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
            let dir = walk.finish(rustix::fs::OFlags::DIRECTORY)?;
            rustix::fs::statat(dir.into_fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map_err(ConfineError::from_errno)?;
        }
        Ok(out)
    }
}
