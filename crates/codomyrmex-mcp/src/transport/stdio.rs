//! Newline-delimited JSON-RPC over a byte stream: stdin/stdout, or any `AsyncRead` and
//! `AsyncWrite` pair (a socket, an in-memory duplex).
//!
//! - One message per line; stdout carries only protocol messages.
//! - A line longer than the configured maximum is discarded and answered with `-32600`.
//! - The read loop polls each call once, in place: one that finishes there (a synchronous
//!   tool) is answered without a task; one that waits runs on a task of its own, concurrently
//!   with the rest, and so does every call for a while after one held the loop too long
//!   (`stdio_inline.rs`). Responses may come out of order.
//! - On EOF, in-flight calls get the configured grace period, then are cancelled. A shutdown
//!   future ([`serve_until`], [`serve_stdio_until`]; a signal, say) ends the input the same way.
//! - If the output closes, the loop stops reading and cancels everything.
//! - On stdin and stdout as pipes (Linux), once everything is written and no call is in
//!   flight, the writer polls the input for up to `stdio_spin` before its thread may sleep
//!   ([`McpServerConfig::stdio_spin`], `spin`). It reads nothing: what is read,
//!   and in what order, is the same with any spin.
//! - [`serve_stdio`] first raises the capacity of stdin and stdout, where they are pipes (Linux),
//!   to `stdio_pipe_size`, so that a large message crosses in one write
//!   ([`McpServerConfig::stdio_pipe_size`], `pipe_size`).
//!
//! [`McpServerConfig::stdio_spin`]: crate::McpServerConfig::stdio_spin
//! [`McpServerConfig::stdio_pipe_size`]: crate::McpServerConfig::stdio_pipe_size

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt as _;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

#[cfg(all(target_os = "linux", feature = "http"))]
#[path = "stdio_spin.rs"]
mod spin;
#[cfg(not(all(target_os = "linux", feature = "http")))]
mod spin {
    //! No input spin on this platform or without tokio's pipes: [`InputSpin`] is never built.

    /// Never constructed here.
    pub(super) enum InputSpin {}

    impl InputSpin {
        pub(super) fn call_started(&self) -> InFlight {
            match *self {}
        }
        pub(super) fn call(&self) -> InFlight {
            match *self {}
        }
        pub(super) fn after_write(&self) {
            match *self {}
        }
    }

    /// Never constructed here.
    pub(super) enum InFlight {}
}

#[path = "stdio_inline.rs"]
mod inline;
use inline::InlineGate;

#[cfg(target_os = "linux")]
#[path = "stdio_pipe_size.rs"]
mod pipe_size;
#[cfg(not(target_os = "linux"))]
mod pipe_size {
    //! No pipe capacity to set on this platform.

    /// Leaves the pipes as they are.
    pub(super) fn raise_std_pipes(_want: usize) {}
}

use crate::MessageSink;
use crate::engine::{Engine, Handled};
use crate::wire::decode;
use crate::wire::{ErrorCode, ErrorObject, OutgoingMessage};

/// How many outgoing messages may queue before senders wait (responses) or drop
/// (notifications).
const OUTBOX: usize = 1024;

/// Why serving stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// The environment variable that overrides `stdio_spin` for [`serve_stdio`], in whole
/// microseconds.
pub const SPIN_ENV: &str = "CODOMYRMEX_MCP_STDIO_SPIN_US";

/// The environment variable that overrides `stdio_pipe_size` for [`serve_stdio`], in bytes.
pub const PIPE_SIZE_ENV: &str = "CODOMYRMEX_MCP_STDIO_PIPE_SIZE";

/// A future that asks serving to stop, as if the input had ended.
type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Serves one connection until the input ends (or the output closes).
pub async fn serve<R, W>(engine: Engine, reader: R, writer: W) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(engine, reader, writer, std::future::pending()).await
}

/// Serves one connection until the input ends, the output closes or `shutdown` resolves.
///
/// When `shutdown` resolves, reading stops exactly as at end of input: in-flight calls get the
/// configured grace period (`shutdown_grace`) to finish and send their responses, then the
/// rest are cancelled and this returns `Ok(())`.
pub async fn serve_until<R, W>(
    engine: Engine,
    reader: R,
    writer: W,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // The connection runs as a task of its own. On a multi-thread runtime the caller is often
    // `block_on`'s thread, which is not a worker: a read loop there would be woken across
    // threads for every line and would hand every call to a worker across threads again.
    // As a task, the loop, the calls it spawns and the writer they wake stay on the worker
    // that the input woke. Dropping this future aborts the task, as dropping the loop would.
    serve_with(engine, reader, writer, Box::pin(shutdown), None).await
}

/// [`serve_until`], with the input spin when the input is a pipe.
async fn serve_with<R, W>(
    engine: Engine,
    reader: R,
    writer: W,
    shutdown: Shutdown,
    spin: Option<Arc<spin::InputSpin>>,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut task = AbortOnDrop(tokio::spawn(serve_connection(
        engine, reader, writer, shutdown, spin,
    )));
    match (&mut task.0).await {
        Ok(outcome) => outcome,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Cancelled: the runtime is shutting down.
        Err(_) => Ok(()),
    }
}

/// Aborts the task when dropped (a no-op once it has finished).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn serve_connection<R, W>(
    engine: Engine,
    reader: R,
    writer: W,
    mut shutdown: Shutdown,
    spin: Option<Arc<spin::InputSpin>>,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = engine.new_session();
    let (tx, rx) = mpsc::channel::<OutgoingMessage>(OUTBOX);
    let sink: Arc<dyn MessageSink> = Arc::new(ChannelSink(tx.clone()));
    let writer_task = tokio::spawn(write_loop(rx, writer, spin.clone()));
    let writer_gone = writer_task.abort_handle();

    // Tell a legacy session about list changes and subscribed resource updates: the engine
    // queues them in the session's own queue (every event ready now, so a burst of list
    // changes is one notice), and this writes what `poll_transmit` gives.
    let mut events = engine.listeners().events();
    let watcher = {
        let engine = engine.clone();
        let session = session.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                engine
                    .listeners()
                    .handle_event(engine.now(), &session, &event);
                while let Some(Some(event)) = events.next().now_or_never() {
                    engine
                        .listeners()
                        .handle_event(engine.now(), &session, &event);
                }
                while let Some(n) = session.poll_transmit() {
                    if tx.send(n).await.is_err() {
                        return;
                    }
                }
            }
        })
    };

    let max = engine.config().max_message_size;
    let mut reader = BufReader::with_capacity(READ_BUFFER, reader);
    let mut line = Vec::with_capacity(4096);
    let mut tasks: JoinSet<()> = JoinSet::new();
    // Counted as work in flight while input is buffered here, unread by the pipe's poll: the
    // writer must not spin on this thread while the read loop has lines to handle.
    let mut reading: Option<spin::InFlight> = None;
    let mut inline = InlineGate::default();
    let outcome = loop {
        if writer_gone.is_finished() {
            break Ok(());
        }
        line.clear();
        if reader.buffer().is_empty() {
            reading = None;
        } else if reading.is_none() {
            reading = spin.as_ref().map(|s| s.call_started());
        }
        // Input first: a line that is already buffered is taken without registering interest
        // in the channel closing (a lock on each side), which matters at high rates. A closed
        // output is still seen: here whenever the input would wait, and at the top of the
        // loop through `writer_gone` (the writer drops the channel's receiver as it finishes).
        let read = tokio::select! {
            biased;
            r = read_line(&mut reader, &mut line, max) => r,
            () = closed(&tx) => break Ok(()),
            () = &mut shutdown => {
                tracing::info!(in_flight = tasks.len(), "shutdown requested; draining");
                break Ok(());
            }
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
            Ok(whole @ (Line::Complete | Line::InBuffer(_))) => {
                let bytes = match whole {
                    Line::InBuffer(n) => &reader.buffer()[..n],
                    _ => &line[..],
                };
                let bytes = trim(bytes);
                let handled = (!bytes.is_empty())
                    .then(|| engine.handle_decoded(&session, decode(bytes), &sink));
                if let Line::InBuffer(n) = whole {
                    // The line and its newline.
                    reader.consume(n + 1);
                }
                let Some(handled) = handled else { continue };
                match handled {
                    Handled::Nothing => {}
                    Handled::Reply(m) => {
                        if tx.send(m).await.is_err() {
                            break Ok(());
                        }
                    }
                    fut => {
                        let mut fut = crate::runtime::drive(fut);
                        // Counted until its answer is queued (or it is cancelled). A line
                        // that came with others (buffered behind one, or with bytes behind
                        // it) is a call sent before an earlier answer: the calls overlap,
                        // though the first poll here may answer each before the next.
                        let in_flight = spin.as_ref().map(|s| {
                            if reading.is_some() || !reader.buffer().is_empty() {
                                s.overlapped();
                            }
                            s.call()
                        });
                        // Polled here first (`stdio_inline.rs`): a call that finishes at
                        // once needs no task. With no waker: a call that waits is polled
                        // again on its task, with the task's.
                        let first = match inline.start() {
                            Some(started) => {
                                let mut cx = Context::from_waker(Waker::noop());
                                let first = fut.as_mut().poll(&mut cx);
                                inline.polled(started);
                                first
                            }
                            None => Poll::Pending,
                        };
                        match first {
                            Poll::Ready(answer) => {
                                let wait = answer.and_then(|m| queue_answer(&tx, m));
                                if let Some(wait) = wait
                                    && wait.await.is_err()
                                {
                                    break Ok(());
                                }
                                drop(in_flight);
                            }
                            Poll::Pending => {
                                tasks.spawn(call_task(fut, tx.clone(), in_flight));
                            }
                        }
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
    // The writer ends when every sender is gone. One that outlives the connection (held by
    // state the connection does not own) must not hold the process: the writer gets the grace
    // period to flush what is queued, then stops.
    let mut writer_task = writer_task;
    if tokio::time::timeout(grace, &mut writer_task).await.is_err() {
        tracing::warn!("the output did not close within the shutdown grace; closing it");
        writer_task.abort();
    }
    outcome
}

/// A call's task: its answer, once ready, queued for the writer; the call counted in flight
/// until then.
// Not an `async fn`, which would keep each argument twice in the task.
#[allow(clippy::manual_async_fn)]
fn call_task(
    answer: crate::platform::BoxFuture<'static, Option<OutgoingMessage>>,
    tx: mpsc::Sender<OutgoingMessage>,
    in_flight: Option<spin::InFlight>,
) -> impl Future<Output = ()> + Send + 'static {
    async move {
        // In statements of their own: the answer is not kept while the rare wait is awaited.
        let wait = match answer.await {
            Some(m) => queue_answer(&tx, m),
            None => None,
        };
        if let Some(wait) = wait {
            // Closed while waiting: the answer has no one to go to.
            let _ = wait.await;
        }
        drop(in_flight);
    }
}

/// Queues a call's answer for the writer, or, when the channel is full, the boxed wait for
/// room. Almost always there is room at once: the channel's send future (328 bytes) is made
/// only for the rare wait, so that a call's task, which tokio copies from stage to stage,
/// stays small (its size is held by a test).
// The wait's own type, boxed thin: a `dyn` box would make the call's task a word larger.
#[allow(clippy::type_complexity)]
fn queue_answer(
    tx: &mpsc::Sender<OutgoingMessage>,
    m: OutgoingMessage,
) -> Option<Pin<Box<impl Future<Output = Result<(), mpsc::error::SendError<OutgoingMessage>>> + '_>>>
{
    match tx.try_send(m) {
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => None,
        Err(mpsc::error::TrySendError::Full(m)) => Some(Box::pin(tx.send(m))),
    }
}

/// Resolves when the writer has gone away (every receiver dropped).
async fn closed(tx: &mpsc::Sender<OutgoingMessage>) {
    tx.closed().await;
}

/// Serves on this process's stdin and stdout.
///
/// On Linux, when both are pipes (as under an MCP client), they are driven by the runtime's
/// reactor as non-blocking pipes; otherwise (a file, a terminal, a socket, another platform)
/// stdin is read on a thread of its own and tokio's `stdout()` is used, which cost a hand-off
/// between threads per operation.
pub async fn serve_stdio(engine: Engine) -> Result<(), StdioError> {
    serve_stdio_until(engine, std::future::pending()).await
}

/// [`serve_stdio`] until stdin ends or `shutdown` resolves (see [`serve_until`]); pass
/// `transport::http::shutdown_signal()` to shut down on SIGINT and SIGTERM like at EOF.
pub async fn serve_stdio_until(
    engine: Engine,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StdioError> {
    let shutdown: Shutdown = Box::pin(shutdown);
    let pipe_size = super::env_number(PIPE_SIZE_ENV, std::env::var(PIPE_SIZE_ENV).ok().as_deref())
        .map_or(engine.config().stdio_pipe_size, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    pipe_size::raise_std_pipes(pipe_size);
    #[cfg(all(target_os = "linux", feature = "http"))]
    if let Some((reader, writer)) = pipes::open() {
        let configured = engine.config().stdio_spin;
        let spin = spin::from_env(std::env::var(SPIN_ENV).ok().as_deref()).unwrap_or(configured);
        let spin = spin::InputSpin::new(&reader, spin).map(Arc::new);
        return serve_with(engine, reader, writer, shutdown, spin).await;
    }
    let stdin = thread_stdin::open();
    serve_with(engine, stdin, tokio::io::stdout(), shutdown, None).await
}

/// stdin read by a detached thread.
///
/// tokio's `stdin()` reads on the runtime's blocking pool, and a blocking read cannot be
/// cancelled: when serving ends because stdout closed while stdin stays open (a socket, a
/// terminal), shutting the runtime down would wait for that read forever and the process
/// would never exit. A plain thread does not hold the runtime up; it ends with the process.
mod thread_stdin {
    use std::io::Read;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};
    use tokio::sync::mpsc;

    const CHUNK: usize = 64 * 1024;

    pub(super) struct ThreadStdin {
        chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>,
        current: Vec<u8>,
        used: usize,
    }

    pub(super) fn open() -> ThreadStdin {
        let (tx, chunks) = mpsc::channel(4);
        let spawned = std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let mut stdin = std::io::stdin().lock();
                loop {
                    let mut buf = vec![0; CHUNK];
                    let chunk = match stdin.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => {
                            buf.truncate(n);
                            Ok(buf)
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => Err(e),
                    };
                    let failed = chunk.is_err();
                    if tx.blocking_send(chunk).is_err() || failed {
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            // Without a reader thread there is no input: report it as a read error.
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Err(e));
            return ThreadStdin {
                chunks: rx,
                current: Vec::new(),
                used: 0,
            };
        }
        ThreadStdin {
            chunks,
            current: Vec::new(),
            used: 0,
        }
    }

    impl AsyncRead for ThreadStdin {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            while self.used == self.current.len() {
                match self.chunks.poll_recv(cx) {
                    Poll::Pending => return Poll::Pending,
                    // The thread ended: end of input.
                    Poll::Ready(None) => return Poll::Ready(Ok(())),
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(Some(Ok(chunk))) => {
                        self.current = chunk;
                        self.used = 0;
                    }
                }
            }
            let this = &mut *self;
            let n = buf.remaining().min(this.current.len() - this.used);
            buf.put_slice(&this.current[this.used..this.used + n]);
            this.used += n;
            Poll::Ready(Ok(()))
        }
    }
}

/// stdin and stdout as non-blocking pipes. Needs tokio's `net`, which the `http` feature
/// enables.
#[cfg(all(target_os = "linux", feature = "http"))]
mod pipes {
    use tokio::net::unix::pipe;

    /// Both standard streams, if both are pipes and the runtime has I/O enabled.
    ///
    /// They are reopened through `/proc/self/fd`, which gives this transport open file
    /// descriptions of its own: `O_NONBLOCK` is set on those only, so descriptors 0 and 1 (and
    /// any child process that inherits them) stay blocking. Opening with `O_NONBLOCK` also
    /// never waits for the other end of the pipe.
    pub(super) fn open() -> Option<(pipe::Receiver, pipe::Sender)> {
        // Registering with the reactor panics on a runtime built without I/O; fall back then.
        std::panic::catch_unwind(|| {
            let reader = pipe::OpenOptions::new()
                .open_receiver("/proc/self/fd/0")
                .ok()?;
            let writer = pipe::OpenOptions::new()
                .open_sender("/proc/self/fd/1")
                .ok()?;
            Some((reader, writer))
        })
        .ok()
        .flatten()
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<OutgoingMessage>,
    mut writer: W,
    spin: Option<Arc<spin::InputSpin>>,
) {
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
        // All written: if nothing else is to come, give the peer a moment to answer before
        // this thread may sleep.
        if let Some(spin) = &spin
            && rx.is_empty()
        {
            spin.after_write();
        }
    }
}

/// The read buffer: a 64 KiB message and then some (the pipes hold 256 KiB by default,
/// `stdio_pipe_size`), so that such a message is read in one `read` and handled where it lies.
/// Its pages are touched only as far as input fills it.
const READ_BUFFER: usize = 256 * 1024;

enum Line {
    /// A whole line, in `line`.
    Complete,
    /// A whole line of this many bytes at the start of the reader's buffer, followed by its
    /// newline; not consumed yet (the caller handles it where it lies, then consumes it).
    InBuffer(usize),
    TooLong,
    Eof,
}

/// Reads one line into `line` without letting it grow past `max` bytes, or finds a whole one
/// in the reader's buffer ([`Line::InBuffer`]) without copying it.
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
        let newline = find_newline(available);
        if let Some(i) = newline
            && line.is_empty()
            && !too_long
            && i <= max
        {
            return Ok(Line::InBuffer(i));
        }
        let (chunk, done) = match newline {
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

/// The index of the first `\n` in `bytes`.
///
/// `memchr` (SIMD where the CPU has it): a byte-at-a-time search was a tenth of the server's
/// CPU time on 64 KiB lines, and a word-at-a-time one still 1.4 instructions a byte.
fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
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

#[cfg(test)]
mod call_task_tests {
    /// The size of what `f` returns, without calling it.
    fn output_size<A, B, C, F>(_: impl FnOnce(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// tokio copies a task's future into its cell when it is spawned and moves it from
    /// stage to stage (running, finished, read): at 64 calls in flight over stdio every call
    /// is such a task. It was 464 bytes while it awaited the channel's send in place.
    #[test]
    fn a_calls_task_is_small() {
        let size = output_size(super::call_task);
        assert!(size <= 64, "a call's task is {size} bytes");
    }
}

#[cfg(test)]
mod find_newline_tests {
    use super::find_newline;

    #[test]
    fn finds_the_first_newline_at_every_position_and_alignment() {
        for len in 0..40 {
            for at in 0..=len {
                for start in 0..8 {
                    let mut bytes = vec![b'x'; start + len];
                    // Bytes next to b'\n' in value, to catch a sloppy zero-byte test.
                    for (i, b) in bytes.iter_mut().enumerate() {
                        *b = [b'x', 0x0b, 0x09, 0x8a, 0x00, 0xff][i % 6];
                    }
                    let expected = (at < len).then_some(at);
                    if at < len {
                        bytes[start + at] = b'\n';
                        if at + 3 < len {
                            bytes[start + at + 3] = b'\n';
                        }
                    }
                    let slice = &bytes[start..];
                    assert_eq!(
                        find_newline(slice),
                        expected,
                        "len {len} at {at} start {start}"
                    );
                    assert_eq!(find_newline(slice), slice.iter().position(|&b| b == b'\n'));
                }
            }
        }
    }
}

#[cfg(test)]
/// The stdio tests' registry: one `echo` tool that answers its `text` argument as text.
fn echo_registry() -> Arc<crate::McpToolRegistry> {
    use serde_json::{Map, Value, json};
    let registry = Arc::new(crate::McpToolRegistry::new());
    registry
        .register(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |mut args: Map<String, Value>| {
                let text = match args.remove("text") {
                    Some(Value::String(t)) => t,
                    _ => String::new(),
                };
                crate::ToolOutput::content(vec![crate::ContentBlock::text(text)])
            },
        )
        .unwrap();
    registry
}

#[cfg(test)]
#[path = "stdio_read_tests.rs"]
mod read_tests;

#[cfg(test)]
#[path = "stdio_inline_tests.rs"]
mod inline_tests;
