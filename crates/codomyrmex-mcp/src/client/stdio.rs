//! The client's stdio transport: newline-delimited JSON-RPC over a byte stream, and a server
//! started as a child process ([`StdioCommand`]) with its command, arguments, environment
//! and working directory, shut down cleanly (stdin closed, a grace period, then killed).
//!
//! Only moves bytes: a line longer than [`MAX_LINE`](super::MAX_LINE) ends the connection
//! with a transport error instead of growing without bound.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{ClientEnds, ClientError, Closer, Inbound, MAX_LINE, Outgoing};

/// A server to start: program, arguments, extra environment and working directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program (looked up on `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// The working directory (the client's when `None`).
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// Reads lines of at most `MAX_LINE` bytes; `Err` names what went wrong.
async fn read_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<bool, String> {
    line.clear();
    loop {
        let buf = reader
            .fill_buf()
            .await
            .map_err(|e| format!("reading from the server failed: {e}"))?;
        if buf.is_empty() {
            return Ok(!line.is_empty());
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > MAX_LINE + 1 {
            return Err(format!(
                "the server sent a line longer than {MAX_LINE} bytes"
            ));
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            return Ok(true);
        }
    }
}

/// The client's ends of a newline-delimited stream.
pub(crate) fn line_link<R, W>(reader: R, writer: W) -> ClientEnds
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::channel::<Outgoing>(256);
    let (in_tx, in_rx) = super::inbound::channel();
    tokio::spawn(async move {
        let mut writer = writer;
        while let Some(Outgoing { mut bytes, .. }) = out_rx.recv().await {
            bytes.push(b'\n');
            if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
        // Dropping the writer closes the server's input.
        let _ = writer.shutdown().await;
    });
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            match read_line(&mut reader, &mut line).await {
                Ok(true) => {
                    while matches!(line.last(), Some(b'\n' | b'\r')) {
                        line.pop();
                    }
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    if in_tx
                        .send(Inbound::Message(std::mem::take(&mut line)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Ok(false) => return,
                Err(message) => {
                    let _ = in_tx
                        .send(Inbound::Failed {
                            id: None,
                            status: None,
                            message,
                        })
                        .await;
                    return;
                }
            }
        }
    });
    (out_tx, in_rx)
}

/// Starts the server and returns the client's ends and its shutdown.
pub(crate) fn spawn(command: &StdioCommand) -> Result<(ClientEnds, Closer), ClientError> {
    let mut cmd = tokio::process::Command::new(&command.program);
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(dir) = &command.cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| ClientError::Transport {
        status: None,
        message: format!("cannot start {:?}: {e}", command.program),
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ClientError::Transport {
            status: None,
            message: "the server's pipes are missing".into(),
        });
    };
    let ends = line_link(stdout, stdin);
    let closer: Closer = Box::new(move |grace: Duration| {
        Box::pin(async move {
            // The writer task closes stdin once the client's outbox is dropped; give the
            // server `grace` to exit on that, then kill it.
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        })
    });
    Ok((ends, closer))
}
