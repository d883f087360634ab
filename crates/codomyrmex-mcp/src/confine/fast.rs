//! The `openat2` fast path (Linux 5.6+): the kernel walks the path under
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`. It only ever answers "found"; when the kernel
//! refuses (an escape, an absolute symlink, a loop, a missing file, no `openat2`), the manual
//! walk decides, so both resolvers give the same results.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use super::{ConfinedRoot, LastLink, MAX_PATH_BYTES, Resolved};

/// The kernel's name for `fd` (`/proc/self/fd/N`), when `/proc` is there.
fn fd_path(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
    rustix::fs::readlink(link, Vec::new())
        .ok()
        .map(|c| c.into_bytes())
}

/// The kernel's name for the root's descriptor, the prefix of every name under it.
pub(super) fn proc_path(dir: &OwnedFd) -> Option<Vec<u8>> {
    fd_path(dir.as_fd())
}

/// Resolves `rel` with `openat2`; `None` when the kernel refused or the result's place under
/// the root cannot be named (the walk then decides).
pub(super) fn resolve(
    root: &ConfinedRoot,
    rel: &Path,
    last: LastLink,
    flags: OFlags,
) -> Option<Resolved> {
    let prefix = root.inner.proc_path.as_deref()?;
    // The kernel follows the last component's symlink unless told not to (the walk's own
    // final open never needs to: it has resolved the link already).
    let mut flags = flags | OFlags::CLOEXEC;
    flags.set(OFlags::NOFOLLOW, last == LastLink::Keep);
    let path: &Path = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let fd = rustix::fs::openat2(
        root.dir(),
        path,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
    .ok()?;
    let name = fd_path(fd.as_fd())?;
    let rest = name.strip_prefix(prefix)?;
    let rest = match rest {
        [] => &[][..],
        [b'/', rest @ ..] if !prefix.ends_with(b"/") => rest,
        rest if prefix.ends_with(b"/") => rest,
        _ => return None,
    };
    // The walk refuses a resolved path of MAX_PATH_BYTES or more (separators counted).
    if rest.len() >= MAX_PATH_BYTES {
        return None;
    }
    let rel = PathBuf::from(std::ffi::OsString::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rest),
    ));
    Some(Resolved { fd, rel })
}
