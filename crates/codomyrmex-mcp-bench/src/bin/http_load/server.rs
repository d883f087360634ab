//! A server under test: the process started from a subject's command (or a server already
//! running, `@HOST:PORT`), its address, and its `/proc` readings. It does not speak HTTP
//! beyond waiting until the port accepts connections.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::Result;
use crate::args::{Options, Subject};

pub(crate) struct Server {
    child: Option<Child>,
    /// The server's process id; for a running server (`@ADDR`), this process's, so that its
    /// figures read as the client's only.
    pub(crate) pid: u32,
    pub(crate) addr: SocketAddr,
}

impl Server {
    pub(crate) async fn spawn(opts: &Options, subject: &Subject) -> Result<Self> {
        if let Some(addr) = subject.command[0].strip_prefix('@') {
            // A server that is already running (for profiling it): nothing to start or stop.
            let addr = addr
                .parse()
                .map_err(|e| format!("{}: bad address {addr:?}: {e}", subject.name))?;
            return Ok(Self {
                child: None,
                pid: std::process::id(),
                addr,
            });
        }
        let templated = subject.command.iter().any(|w| w.contains("{port}"));
        let port = if templated {
            // A free port: bind, read the port, let it go. The server binds it next.
            let probe = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            probe.local_addr()?.port()
        } else {
            0
        };
        let command: Vec<String> = subject
            .command
            .iter()
            .map(|w| w.replace("{port}", &port.to_string()))
            .collect();
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if opts.show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command[0]))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let mut lines = tokio::io::BufReader::new(stdout);
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = if templated {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            loop {
                if TcpStream::connect(addr).await.is_ok() {
                    break addr;
                }
                if Instant::now() > deadline {
                    return Err(format!("{}: nothing listening on {addr}", subject.name).into());
                }
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("{}: the server exited with {status}", subject.name).into());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } else {
            let mut line = String::new();
            loop {
                line.clear();
                let read = tokio::time::timeout_at(deadline.into(), lines.read_line(&mut line))
                    .await
                    .map_err(|_| format!("{}: no LISTENING line", subject.name))??;
                if read == 0 {
                    return Err(format!("{}: the server closed stdout", subject.name).into());
                }
                if let Some(a) = line.trim().strip_prefix("LISTENING ") {
                    break a
                        .trim()
                        .parse()
                        .map_err(|e| format!("{}: bad address {a:?}: {e}", subject.name))?;
                }
            }
        };
        // Keep the pipe drained so the server never blocks on stdout.
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink).await;
        });
        Ok(Self {
            child: Some(child),
            pid,
            addr,
        })
    }

    pub(crate) async fn stop(self) {
        if let Some(mut child) = self.child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}
