//! The stdio transport's pipe capacity: at start-up, [`serve_stdio`](super::serve_stdio)
//! raises the capacity of stdin and stdout, when they are pipes, to `stdio_pipe_size`
//! (`fcntl(F_SETPIPE_SZ)`, Linux).
//!
//! Why: a pipe holds 64 KiB by default. A message that does not fit (a 64 KiB request or its
//! answer) is written in several rounds, each of which blocks the writer until the reader has
//! drained the pipe: a sleep and a wake-up on both sides per round, which on a VM whose idle
//! vCPUs halt costs more than the copying. With room for the whole message, the client writes
//! its request and the server its answer in one go, and each side wakes once per message.
//!
//! What it is not: a buffer of ours. The capacity is kernel memory that holds only what is
//! written and not yet read, and it is charged to the user who created the pipe (the client),
//! against `/proc/sys/fs/pipe-user-pages-soft`; past that the kernel refuses to grow pipes
//! of unprivileged users. The size is capped at `/proc/sys/fs/pipe-max-size`, a pipe that is
//! already as large is left alone (never shrunk), and every failure (not a pipe, refused, an
//! unreadable limit) leaves the pipe as it was: it is never an error of the server. It does
//! not change what is read or written, or in what order.

use std::os::fd::AsFd;

use rustix::io::Errno;

/// What raising a pipe's capacity did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Raised {
    /// The setting is zero: nothing was tried.
    Off,
    /// The descriptor is not a pipe (a file, a terminal, a socket): left alone.
    NotAPipe,
    /// The pipe already holds at least this much: left alone.
    AlreadyLarge(usize),
    /// The capacity went from the first figure to the second.
    To(usize, usize),
    /// The kernel refused (EPERM past the user's pipe pages, say): left as it was.
    Refused(usize, Errno),
}

/// Where Linux says how large an unprivileged process may make a pipe.
const PIPE_MAX_SIZE: &str = "/proc/sys/fs/pipe-max-size";

/// Raises stdin's and stdout's capacity to `want` bytes (capped at the system's limit) where
/// they are pipes. Never fails; what happened is logged at debug level.
pub(super) fn raise_std_pipes(want: usize) {
    if want == 0 {
        return;
    }
    let max = system_max();
    let stdin = raise(std::io::stdin(), want, max);
    let stdout = raise(std::io::stdout(), want, max);
    tracing::debug!(?stdin, ?stdout, want, ?max, "stdio pipe capacity");
}

/// The largest pipe an unprivileged process may ask for, if the system says.
fn system_max() -> Option<usize> {
    parse_max(&std::fs::read_to_string(PIPE_MAX_SIZE).ok()?)
}

fn parse_max(text: &str) -> Option<usize> {
    text.trim().parse().ok().filter(|&n| n > 0)
}

/// Raises `fd`'s capacity to `want` bytes, capped at `max`, if it is a smaller pipe.
pub(super) fn raise(fd: impl AsFd, want: usize, max: Option<usize>) -> Raised {
    if want == 0 {
        return Raised::Off;
    }
    let want = max.map_or(want, |max| want.min(max));
    // F_GETPIPE_SZ fails (EBADF) on anything that is not a pipe.
    let Ok(now) = rustix::pipe::fcntl_getpipe_size(&fd) else {
        return Raised::NotAPipe;
    };
    if now >= want {
        return Raised::AlreadyLarge(now);
    }
    match rustix::pipe::fcntl_setpipe_size(&fd, want) {
        Ok(to) => Raised::To(now, to),
        Err(e) => Raised::Refused(now, e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const KIB: usize = 1024;

    #[test]
    fn a_pipe_is_raised_and_capped_and_never_shrunk() {
        let (rx, tx) = rustix::pipe::pipe().unwrap();
        let start = rustix::pipe::fcntl_getpipe_size(&rx).unwrap();
        let want = start * 4;
        match raise(&rx, want, Some(start * 2)) {
            Raised::To(from, to) => {
                assert_eq!(from, start);
                assert_eq!(to, start * 2, "capped at the system's limit");
            }
            // Past the user's pipe pages the kernel refuses: the pipe stays as it was.
            Raised::Refused(from, e) => {
                assert_eq!((from, e), (start, Errno::PERM));
                return;
            }
            other => panic!("{other:?}"),
        }
        // Both ends are the same pipe.
        assert_eq!(rustix::pipe::fcntl_getpipe_size(&tx).unwrap(), start * 2);
        assert_eq!(raise(&tx, start, None), Raised::AlreadyLarge(start * 2));
        assert_eq!(rustix::pipe::fcntl_getpipe_size(&tx).unwrap(), start * 2);
    }

    #[test]
    fn zero_is_off_and_leaves_the_pipe_alone() {
        let (rx, _tx) = rustix::pipe::pipe().unwrap();
        let start = rustix::pipe::fcntl_getpipe_size(&rx).unwrap();
        assert_eq!(raise(&rx, 0, None), Raised::Off);
        assert_eq!(rustix::pipe::fcntl_getpipe_size(&rx).unwrap(), start);
    }

    #[test]
    fn a_file_is_not_a_pipe_and_is_left_alone() {
        let file = tempfile::tempfile().unwrap();
        assert_eq!(raise(&file, 256 * KIB, None), Raised::NotAPipe);
        let null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(raise(&null, 256 * KIB, Some(KIB * KIB)), Raised::NotAPipe);
    }

    #[test]
    fn the_system_limit_is_a_positive_whole_number_or_nothing() {
        assert_eq!(parse_max("1048576\n"), Some(1024 * KIB));
        assert_eq!(parse_max("0"), None);
        assert_eq!(parse_max(""), None);
        assert_eq!(parse_max("lots"), None);
        assert_eq!(parse_max("-1"), None);
    }
}
