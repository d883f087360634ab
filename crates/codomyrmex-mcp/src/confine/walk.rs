//! The manual walk: one `openat(O_NOFOLLOW)` per component from the root's descriptor, symlinks
//! read with `readlinkat` and walked in place under a hop limit, `..` on the walk's own stack.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::{
    ConfineError, ConfinedRoot, LastLink, MAX_PATH_BYTES, MAX_SYMLINK_HOPS, Resolved, STEP_FLAGS,
    names,
};

/// One opened directory (or, last, any entry) on the walk.
struct Step {
    fd: OwnedFd,
    name: OsString,
}

/// What is still to walk: the argument's own components after those a symlink put in front.
struct Pending {
    queue: VecDeque<OsString>,
    /// How many of `queue`'s last entries are the argument's own.
    own: usize,
}

impl Pending {
    /// The next component, and whether it came from a symlink's target.
    fn next(&mut self) -> Option<(OsString, bool)> {
        let from_link = self.queue.len() > self.own;
        let name = self.queue.pop_front()?;
        if !from_link {
            self.own -= 1;
        }
        Some((name, from_link))
    }
}

/// The walk's state: the stack of entries opened below the root.
pub(super) struct Walk<'r> {
    root: &'r ConfinedRoot,
    stack: Vec<Step>,
    hops: usize,
}

impl<'r> Walk<'r> {
    pub(super) fn new(root: &'r ConfinedRoot) -> Self {
        Self {
            root,
            stack: Vec::new(),
            hops: 0,
        }
    }

    /// The directory the next component is looked up in.
    pub(super) fn current_fd(&self) -> BorrowedFd<'_> {
        self.stack
            .last()
            .map_or_else(|| self.root.dir().as_fd(), |s| s.fd.as_fd())
    }

    /// The parent of the top of the stack and the top's name (`None` for the root).
    pub(super) fn parent_and_name(&self) -> Option<(BorrowedFd<'_>, &OsString)> {
        let top = self.stack.last()?;
        let parent = match self.stack.len() {
            1 => self.root.dir().as_fd(),
            n => self.stack[n - 2].fd.as_fd(),
        };
        Some((parent, &top.name))
    }

    /// Pushes an entry opened in the top of the stack.
    pub(super) fn push(&mut self, fd: OwnedFd, name: OsString) {
        self.stack.push(Step { fd, name });
    }

    /// Where the top of the stack is, relative to the root.
    pub(super) fn rel(&self) -> PathBuf {
        self.stack.iter().map(|s| s.name.as_os_str()).collect()
    }

    /// The bytes of the path walked so far (separators included).
    fn rel_len(&self) -> usize {
        self.stack.iter().map(|s| s.name.len() + 1).sum()
    }

    /// Walks `rel`. On success every component is on the stack (the last one's symlink
    /// followed or not as `last` says). On `NotFound` for one of the argument's own
    /// components, returns the components not found (that one first), for creating them.
    pub(super) fn run(
        &mut self,
        rel: &Path,
        last: LastLink,
    ) -> Result<Vec<OsString>, ConfineError> {
        let queue: VecDeque<OsString> = names(rel).collect();
        let own = queue.len();
        let mut pending = Pending { queue, own };
        while let Some((name, from_link)) = pending.next() {
            if name == ".." {
                // Only a symlink's target has `..` (arguments are checked): go up the stack,
                // never above the root.
                if self.stack.pop().is_none() {
                    return Err(ConfineError::Escapes);
                }
                continue;
            }
            if name == "." {
                continue;
            }
            let is_last = pending.queue.is_empty();
            let st = match rustix::fs::statat(self.current_fd(), &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(rustix::io::Errno::NOENT) if from_link => {
                    return Err(ConfineError::DanglingLink);
                }
                Err(rustix::io::Errno::NOENT) => {
                    let mut missing = vec![name];
                    missing.extend(pending.queue.drain(..));
                    return Ok(missing);
                }
                Err(e) => return Err(ConfineError::from_errno(e)),
            };
            let kind = FileType::from_raw_mode(st.st_mode);
            let is_link = kind == FileType::Symlink;
            // Something follows (a name or `..`): only a directory or a link to one will do,
            // as in the kernel (`file/..` is not the file's directory).
            if !is_link && !is_last && kind != FileType::Directory {
                return Err(ConfineError::NotADirectory);
            }
            if is_link && (!is_last || last == LastLink::Follow) {
                self.hops += 1;
                if self.hops > MAX_SYMLINK_HOPS {
                    return Err(ConfineError::TooManyLinks);
                }
                let target = rustix::fs::readlinkat(self.current_fd(), &name, Vec::new())
                    .map_err(ConfineError::from_errno)?;
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                self.expand(&target, &mut pending)?;
                continue;
            }
            let fd = rustix::fs::openat(self.current_fd(), &name, STEP_FLAGS, Mode::empty())
                .map_err(ConfineError::from_errno)?;
            self.stack.push(Step { fd, name });
            if self.rel_len() > MAX_PATH_BYTES {
                return Err(ConfineError::ResolvedTooLong);
            }
        }
        Ok(Vec::new())
    }

    /// Puts a symlink's `target` in front of what is still to walk. An absolute target is
    /// walked from the root when it names a place under the root, and refused otherwise.
    fn expand(&mut self, target: &Path, pending: &mut Pending) -> Result<(), ConfineError> {
        let target = if target.is_absolute() {
            let normalized: PathBuf = target
                .components()
                .filter(|c| !matches!(c, Component::CurDir))
                .collect();
            let Some(inside) = self.root.strip_root(&normalized) else {
                return Err(ConfineError::Escapes);
            };
            self.stack.clear();
            inside
        } else {
            target.to_path_buf()
        };
        for component in target.components().rev() {
            match component {
                Component::Normal(n) => pending.queue.push_front(n.to_owned()),
                Component::ParentDir => pending.queue.push_front("..".into()),
                Component::CurDir => {}
                // Stripped above; anything else is not a path on this system.
                Component::RootDir | Component::Prefix(_) => return Err(ConfineError::Escapes),
            }
        }
        Ok(())
    }

    /// Opens the top of the stack (or the root) again with `flags` and hands it out.
    pub(super) fn finish(self, flags: OFlags) -> Result<Resolved, ConfineError> {
        let rel = self.rel();
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match self.parent_and_name() {
            None => rustix::fs::openat(self.root.dir(), ".", flags, Mode::empty()),
            Some((parent, name)) => rustix::fs::openat(parent, name, flags, Mode::empty()),
        }
        .map_err(ConfineError::from_errno)?;
        Ok(Resolved { fd, rel })
    }
}

/// Resolves an existing `rel` by the walk and opens it with `flags`.
pub(super) fn resolve(
    root: &ConfinedRoot,
    rel: &Path,
    last: LastLink,
    flags: OFlags,
) -> Result<Resolved, ConfineError> {
    let mut walk = Walk::new(root);
    let missing = walk.run(rel, last)?;
    if !missing.is_empty() {
        return Err(ConfineError::NotFound);
    }
    walk.finish(flags)
}
