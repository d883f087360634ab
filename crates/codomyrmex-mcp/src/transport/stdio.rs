//! Newline-delimited JSON-RPC over a byte stream: stdin/stdout, or any `AsyncRead` and
//! `AsyncWrite` pair (a socket, an in-memory duplex).
//!
//! - One message per line; stdout carries only protocol messages.
//! - A line longer than the configured maximum is discarded and answered with `-32600`.
//! - Requests run concurrently; responses may come out of order.
//! - On EOF, in-flight calls get the configured grace period, then are cancelled.
//! - If the output closes, the loop stops reading and cancels everything.

use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::context::MessageSink;
use crate::engine::{Engine, Handled};
use crate::wire::jsonrpc::decode;
use crate::wire::{ErrorCode, ErrorObject, OutgoingMessage};

/// How many outgoing messages may queue before senders wait (responses) or drop
/// (notifications).
const OUTBOX: usize = 1024;

/// Why serving stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// Reading the input failed.
    #[error("reading input failed: {0}")]
    Read(#[source] std::io::Error),
}

struct ChannelSink(mpsc::Sender<OutgoingMessage>);

impl MessageSink for ChannelSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.0.try_send(message).is_ok()
    }
}

/// Serves one connection until the input ends (or the output closes).
pub async fn serve<R, W>(engine: Engine, reader: R, writer: W) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = engine.new_session();
    let (tx, rx) = mpsc::channel::<OutgoingMessage>(OUTBOX);
    let sink: Arc<dyn MessageSink> = Arc::new(ChannelSink(tx.clone()));
    let writer_task = tokio::spawn(write_loop(rx, writer));
    let writer_gone = writer_task.abort_handle();

    // Tell a legacy session about list changes and subscribed resource updates.
    let mut events = engine.events();
    let watcher = {
        let engine = engine.clone();
        let session = session.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                if let Some(n) = engine.legacy_notification(&session, &event)
                    && tx.send(n).await.is_err()
                {
                    break;
                }
            }
        })
    };

    let max = engine.config().max_message_size;
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::with_capacity(4096);
    let mut tasks: JoinSet<()> = JoinSet::new();
    let outcome = loop {
        if writer_gone.is_finished() {
            break Ok(());
        }
        line.clear();
        let read = tokio::select! {
            r = read_line(&mut reader, &mut line, max) => r,
            () = closed(&tx) => break Ok(()),
        };
        match read {
            Err(e) => break Err(StdioError::Read(e)),
            Ok(Line::Eof) => break Ok(()),
            Ok(Line::TooLong) => {
                let msg = OutgoingMessage::Error {
                    id: None,
                    error: ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        format!("Invalid request: message exceeds the {max}-byte limit"),
                    ),
                };
                if tx.send(msg).await.is_err() {
                    break Ok(());
                }
            }
            Ok(Line::Complete) => {
                let bytes = trim(&line);
                if bytes.is_empty() {
                    continue;
                }
                match engine.handle_decoded(&session, decode(bytes), &sink) {
                    Handled::Nothing => {}
                    Handled::Reply(m) => {
                        if tx.send(m).await.is_err() {
                            break Ok(());
                        }
                    }
                    Handled::Pending(fut) => {
                        let tx = tx.clone();
                        tasks.spawn(async move {
                            if let Some(m) = fut.await {
                                let _ = tx.send(m).await;
                            }
                        });
                    }
                }
            }
        }
        while tasks.try_join_next().is_some() {}
    };

    // Input is done: give in-flight calls their grace period, then cancel the rest.
    let grace = engine.config().shutdown_grace;
    let drained =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        session.cancel_all();
        tasks.shutdown().await;
    }
    watcher.abort();
    drop(sink);
    drop(tx);
    let _ = writer_task.await;
    outcome
}

/// Resolves when the writer has gone away (every receiver dropped).
async fn closed(tx: &mpsc::Sender<OutgoingMessage>) {
    tx.closed().await;
}

/// Serves on this process's stdin and stdout.
pub async fn serve_stdio(engine: Engine) -> Result<(), StdioError> {
    serve(engine, tokio::io::stdin(), tokio::io::stdout()).await
}

async fn write_loop<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<OutgoingMessage>, mut writer: W) {
    let mut buf = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        buf.clear();
        first.write_to(&mut buf);
        buf.push(b'\n');
        // Coalesce whatever else is ready into one write.
        while buf.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(m) => {
                    m.write_to(&mut buf);
                    buf.push(b'\n');
                }
                Err(_) => break,
            }
        }
        if writer.write_all(&buf).await.is_err() || writer.flush().await.is_err() {
            tracing::warn!("output closed; stopping");
            return;
        }
    }
}

enum Line {
    Complete,
    TooLong,
    Eof,
}

/// Reads one line into `line` without letting it grow past `max` bytes.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}
