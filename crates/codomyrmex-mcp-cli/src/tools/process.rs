//! Running child processes for the git, json and shell tools: output capture with caps, the
//! environment they get, and the process group that makes them die with the server.
//!
//! [`ChildGroup`] is the one mechanism by which `json.query`'s worker and `shell.run`'s
//! programs (with everything they start in their group) end when the server ends, SIGKILL
//! included. It does not follow a process that leaves the group (`setsid`, `setpgid`), and
//! the git tools' short-lived `git` processes do not use it.
//!
//! [`Held`] is how a child is given a place under the root: never a path string the child
//! (or the kernel, at `chdir` or `exec`) resolves again, which a directory swapped for a
//! symlink between the confinement's check and the spawn would redirect, but a descriptor
//! the confinement opened, named through `/proc`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The hidden subcommand of the guard that leads a [`ChildGroup`].
pub const GUARD_ARG: &str = "__group-guard";

/// Output read from a pipe, cut at a cap.
#[derive(Debug, Default, Clone)]
pub struct Captured {
    /// The first bytes, up to the cap.
    pub bytes: Vec<u8>,
    /// Every byte seen, kept or not.
    pub total: u64,
}

impl Captured {
    /// Whether bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Reads `reader` to its end, keeping the first `max` bytes and counting the rest.
pub async fn capture<R: AsyncRead + Unpin>(mut reader: R, max: usize) -> io::Result<Captured> {
    let mut out = Captured::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        out.total += n as u64;
        let room = max.saturating_sub(out.bytes.len());
        out.bytes.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// An entry under the root opened through the confinement (`ConfinedRoot::resolve`), held
/// open for as long as a child may use it, and the names a child reaches that very entry by.
///
/// Why `/proc` and not `fchdir` in `pre_exec`: the workspace forbids `unsafe` code, and
/// `pre_exec` is `unsafe`. `Command::current_dir` with `/proc/self/fd/N` is safe and exact:
/// the child runs `chdir` after the fork and before `exec`, while its copy of the server's
/// descriptors (close-on-exec ones included) is still open, and the kernel resolves the
/// magic link to the directory the descriptor was opened on, whatever has become of its
/// path since. A program that needs a name after `exec` (git's `GIT_OBJECT_DIRECTORY`, say)
/// gets `/proc/<server pid>/fd/N`, the server's own descriptor, open until the child has
/// exited; no descriptor is left open across `exec`.
#[derive(Debug)]
pub struct Held {
    fd: OwnedFd,
}

impl Held {
    /// Holds `fd`, a descriptor from the confinement's walk.
    pub fn new(fd: OwnedFd) -> Self {
        Self { fd }
    }

    /// The working directory to give `Command::current_dir` (resolved by the child between
    /// its fork and `exec`).
    pub fn child_dir(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The name a program reaches the entry by after `exec`: the server's descriptor.
    pub fn program_path(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.fd.as_raw_fd()
        ))
    }
}

/// Removes this program's own settings (tokens among them) from a child's environment.
pub fn scrub_env(cmd: &mut tokio::process::Command) {
    for (key, _) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| k.starts_with("CODOMYRMEX_MCP_"))
        {
            cmd.env_remove(key);
        }
    }
}

/// A process group for one call's children that is killed when the call ends and when the
/// server dies, however it dies.
///
/// With a helper program (this executable), the group's leader is a guard process,
/// `codomyrmex-mcp __group-guard`, whose stdin is a pipe that only the server holds open (the
/// write end is close-on-exec, so no other child inherits it). The kernel closes that pipe when
/// the server exits for any reason, SIGKILL included, and the group closes it when dropped; the
/// guard then kills its whole group, itself included. This does not depend on which thread
/// spawned the children (unlike `PR_SET_PDEATHSIG`, which fires when the spawning *thread*
/// exits) and needs no code between `fork` and `exec`.
///
/// Without a helper (unit tests), the first adopted child leads a new group: the group still
/// dies with the call, but not with the server.
#[derive(Debug)]
pub struct ChildGroup {
    /// The guard and the write end of its stdin; dropping the latter tells the guard to kill
    /// the group. The guard stays unreaped while held, so its pid (the group id) is not reused.
    _guard: Option<(tokio::process::Child, tokio::process::ChildStdin)>,
    /// The group id, once known.
    pgid: Option<u32>,
}

impl ChildGroup {
    /// A group led by a guard run from `helper`, or (without one) by its first child.
    pub fn start(helper: Option<&Path>) -> io::Result<Self> {
        let Some(program) = helper else {
            return Ok(Self {
                _guard: None,
                pgid: None,
            });
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.arg(GUARD_ARG)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        let Some(stdin) = child.stdin.take() else {
            return Err(io::Error::other("the process guard's stdin is missing"));
        };
        let pgid = child.id();
        Ok(Self {
            _guard: Some((child, stdin)),
            pgid,
        })
    }

    /// Makes `cmd` start in this group (or lead a new one, if the group has no leader yet).
    pub fn adopt(&self, cmd: &mut tokio::process::Command) {
        #[cfg(unix)]
        cmd.process_group(self.pgid.and_then(|p| i32::try_from(p).ok()).unwrap_or(0));
        #[cfg(not(unix))]
        let _ = cmd;
    }

    /// Records `child` (just spawned after [`adopt`](Self::adopt)) as the leader if the group
    /// had none.
    pub fn spawned(&mut self, child: &tokio::process::Child) {
        if self.pgid.is_none() {
            self.pgid = child.id();
        }
    }

    /// Kills every process of the group (the guard included).
    pub fn kill(&self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .pgid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The guard's main: waits until its stdin reaches end of file (the server closed it or died),
/// then kills its own process group, itself included.
pub fn guard_main() -> std::process::ExitCode {
    use std::io::Read as _;
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    #[cfg(unix)]
    {
        let me = rustix::process::getpid();
        // Only a guard that leads its group (as the server starts it) kills the group.
        if rustix::process::getpgrp() == me {
            let _ = rustix::process::kill_process_group(me, rustix::process::Signal::KILL);
        }
    }
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn capture_keeps_the_head_and_counts_the_rest() {
        let data = vec![b'x'; 100_000];
        let c = capture(&data[..], 10).await.unwrap();
        assert_eq!(c.bytes.len(), 10);
        assert_eq!(c.total, 100_000);
        assert!(c.truncated());
        let c = capture(&b"short"[..], 10).await.unwrap();
        assert_eq!(c.text(), "short");
        assert!(!c.truncated());
    }
}
