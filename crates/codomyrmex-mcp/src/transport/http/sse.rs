//! Server-Sent Events: framing and the response body. The replay logs behind `Last-Event-ID`
//! are in [`replay`](super::replay).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::MessageSink;
use crate::platform::BoxFuture;
use crate::wire::OutgoingMessage;

use super::replay::Cursor;
use super::sse_frame::frame;

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

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
    events: Option<Cursor>,
    /// Framed events from an external store ([`cluster::feed`](super::cluster::feed)).
    feed: Option<futures_util::stream::BoxStream<'static, Bytes>>,
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
        events: Cursor,
        keep_alive: Option<Duration>,
    ) -> Self {
        Self {
            prelude,
            events: Some(events),
            feed: None,
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
            feed: None,
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
    /// A body that sends framed events from an external store's feed, until it ends.
    pub(crate) fn feed(
        prelude: Option<Bytes>,
        feed: futures_util::stream::BoxStream<'static, Bytes>,
        keep_alive: Option<Duration>,
    ) -> Self {
        Self {
            prelude,
            events: None,
            feed: Some(feed),
            notes: None,
            work: None,
            final_message: None,
            keep_alive: keep_alive.map(interval),
            stop: None,
            done: false,
        }
    }

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
            match events.poll_next(cx) {
                Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(Frame::data(b)))),
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
        }
        // Mode 1b: following an external store.
        if let Some(feed) = &mut this.feed {
            match futures_util::Stream::poll_next(feed.as_mut(), cx) {
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
}
