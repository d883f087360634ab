//! Server-Sent Events: framing, replayable stream logs and the response body.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::context::MessageSink;
use crate::registry::BoxFuture;
use crate::wire::OutgoingMessage;

/// Frames one message as an SSE `message` event, with an optional event id.
pub(crate) fn frame(message: &OutgoingMessage, id: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(96);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    // Compact JSON has no raw newlines, so one `data:` line carries it.
    message.write_to(&mut out);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A bounded, replayable log of one SSE stream's events (legacy era), so a client that lost
/// the connection can resume with `Last-Event-ID`.
pub(crate) struct StreamLog {
    id: u64,
    capacity: usize,
    state: Mutex<LogState>,
}

struct LogState {
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    closed: bool,
    live: Option<mpsc::Sender<Bytes>>,
}

impl StreamLog {
    pub(crate) fn new(id: u64, capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            id,
            capacity: capacity.max(1),
            state: Mutex::new(LogState {
                events: VecDeque::new(),
                next_seq: 1,
                closed: false,
                live: None,
            }),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a message; delivers it live if a reader keeps up. A reader that does not is
    /// detached (it can resume from the log) so the server never buffers without bound.
    pub(crate) fn append(&self, message: &OutgoingMessage) -> bool {
        let mut s = self.lock();
        if s.closed {
            return false;
        }
        let seq = s.next_seq;
        s.next_seq += 1;
        let bytes = frame(message, Some(&format!("{}-{}", self.id, seq)));
        if s.events.len() >= self.capacity {
            s.events.pop_front();
        }
        s.events.push_back((seq, bytes.clone()));
        if let Some(live) = &s.live
            && live.try_send(bytes).is_err()
        {
            s.live = None;
        }
        true
    }

    /// Writes the priming event (an id and empty data) that lets a client resume.
    pub(crate) fn prime(&self, retry: Duration) -> Bytes {
        let s = self.lock();
        let last = s.next_seq - 1;
        Bytes::from(format!(
            "id: {}-{}\nretry: {}\ndata: \n\n",
            self.id,
            last,
            retry.as_millis()
        ))
    }

    /// Ends the stream: live readers finish after what they have.
    pub(crate) fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.live = None;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Attaches a new live reader, replaying events after `after_seq`. Replaces any earlier
    /// reader.
    pub(crate) fn attach(&self, after_seq: u64) -> mpsc::Receiver<Bytes> {
        let mut s = self.lock();
        let (tx, rx) = mpsc::channel(self.capacity + 16);
        for (seq, bytes) in &s.events {
            if *seq > after_seq {
                let _ = tx.try_send(bytes.clone());
            }
        }
        if !s.closed {
            s.live = Some(tx);
        }
        rx
    }
}

/// A sink that appends to a stream log.
pub(crate) struct LogSink(pub(crate) Arc<StreamLog>);

impl MessageSink for LogSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.0.append(&message)
    }
}

/// A sink feeding a per-request (non-resumable) stream.
pub(crate) struct ChannelSink(pub(crate) mpsc::Sender<OutgoingMessage>);

impl MessageSink for ChannelSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.0.try_send(message).is_ok()
    }
}

/// The body of an SSE response.
///
/// Either it reads a live channel of framed events (legacy, resumable streams), or it owns the
/// request's work: it polls the engine's future itself, so when the client goes away and the
/// body is dropped, the work is dropped too — which cancels it (modern era).
pub(crate) struct SseBody {
    prelude: Option<Bytes>,
    events: Option<mpsc::Receiver<Bytes>>,
    notes: Option<mpsc::Receiver<OutgoingMessage>>,
    work: Option<BoxFuture<'static, Option<OutgoingMessage>>>,
    final_message: Option<Option<OutgoingMessage>>,
    keep_alive: Option<tokio::time::Interval>,
    /// Ends the stream when the server shuts down (streams that never end on their own).
    stop: Option<Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>>,
    done: bool,
}

impl SseBody {
    /// A body that replays and follows a stream log.
    pub(crate) fn follow(
        prelude: Option<Bytes>,
        events: mpsc::Receiver<Bytes>,
        keep_alive: Option<Duration>,
    ) -> Self {
        Self {
            prelude,
            events: Some(events),
            notes: None,
            work: None,
            final_message: None,
            keep_alive: keep_alive.map(interval),
            stop: None,
            done: false,
        }
    }

    /// A body that drives `work`, streaming the notifications it sends to `notes` and then
    /// its final message.
    pub(crate) fn drive(
        work: BoxFuture<'static, Option<OutgoingMessage>>,
        notes: mpsc::Receiver<OutgoingMessage>,
        keep_alive: Option<Duration>,
    ) -> Self {
        Self {
            prelude: None,
            events: None,
            notes: Some(notes),
            work: Some(work),
            final_message: None,
            keep_alive: keep_alive.map(interval),
            stop: None,
            done: false,
        }
    }
}

impl SseBody {
    /// Ends the stream (dropping any work it drives) when `token` is cancelled.
    pub(crate) fn until(mut self, token: &tokio_util::sync::CancellationToken) -> Self {
        self.stop = Some(Box::pin(token.clone().cancelled_owned()));
        self
    }
}

fn interval(period: Duration) -> tokio::time::Interval {
    let mut i = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    i
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(stop) = &mut this.stop
            && stop.as_mut().poll(cx).is_ready()
        {
            this.done = true;
            this.work = None;
            return Poll::Ready(None);
        }
        if let Some(p) = this.prelude.take() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        // Mode 1: following a log.
        if let Some(events) = &mut this.events {
            match events.poll_recv(cx) {
                Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(Frame::data(b)))),
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
        }
        // Mode 2: driving work.
        if let Some(work) = &mut this.work
            && let Poll::Ready(m) = work.as_mut().poll(cx)
        {
            this.work = None;
            this.final_message = Some(m);
        }
        if let Some(notes) = &mut this.notes {
            match notes.poll_recv(cx) {
                Poll::Ready(Some(m)) => return Poll::Ready(Some(Ok(Frame::data(frame(&m, None))))),
                Poll::Ready(None) | Poll::Pending => {}
            }
            if let Some(last) = this.final_message.take() {
                // Notifications sent before the work finished are already queued: drain them
                // first so the response comes last.
                if let Ok(m) = notes.try_recv() {
                    this.final_message = Some(last);
                    return Poll::Ready(Some(Ok(Frame::data(frame(&m, None)))));
                }
                this.done = true;
                return match last {
                    Some(m) => Poll::Ready(Some(Ok(Frame::data(frame(&m, None))))),
                    None => Poll::Ready(None),
                };
            }
        }
        if let Some(k) = &mut this.keep_alive
            && k.poll_tick(cx).is_ready()
        {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::RequestId;
    use serde_json::json;

    fn note(n: i64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params: json!({"progress": n}),
        }
    }

    #[test]
    fn frames_are_single_data_lines() {
        let b = frame(
            &OutgoingMessage::Response {
                id: RequestId::from(1),
                result: json!({"t": "a\nb"}),
            },
            Some("3-1"),
        );
        let s = std::str::from_utf8(&b).unwrap();
        assert_eq!(
            s,
            "id: 3-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\\nb\"}}\n\n"
        );
    }

    #[tokio::test]
    async fn logs_replay_after_an_id_and_stay_bounded() {
        let log = StreamLog::new(7, 3);
        for n in 0..5 {
            assert!(log.append(&note(n)));
        }
        let mut rx = log.attach(3);
        let first = rx.recv().await.unwrap();
        assert!(
            std::str::from_utf8(&first)
                .unwrap()
                .starts_with("id: 7-4\n")
        );
        let second = rx.recv().await.unwrap();
        assert!(
            std::str::from_utf8(&second)
                .unwrap()
                .starts_with("id: 7-5\n")
        );
        log.close();
        assert!(rx.recv().await.is_none());
        assert!(!log.append(&note(9)));
        // Only the last three were kept.
        let mut all = log.attach(0);
        let mut n = 0;
        while all.recv().await.is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn a_slow_reader_is_detached_not_buffered() {
        let log = StreamLog::new(1, 4);
        let rx = log.attach(0);
        for n in 0..100 {
            log.append(&note(n));
        }
        // The channel holds at most capacity + 16; the rest is only in the bounded log.
        assert!(rx.len() <= 4 + 16);
        assert!(log.lock().live.is_none());
    }
}
