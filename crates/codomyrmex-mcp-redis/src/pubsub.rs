//! [`Hub`]: one Redis pub/sub connection per [`RedisConnection`](crate::RedisConnection),
//! shared by everything that listens: SSE readers waiting for a stream's next event
//! ([`Hub::watch`], a channel subscribed while someone waits on it) and the message bus's
//! handlers ([`Hub::handle`], subscribed for good).
//!
//! A task owns the connection's message stream. When the connection drops, every waiter is
//! woken (it reads the store again and learns what happened) and the task reconnects with a
//! backoff, subscribing again to every channel in use. Subscribing and unsubscribing are
//! serialized, so a channel is never unsubscribed under a new waiter.
//!
//! [`Hub::epoch`] tells whether messages may have been missed: `None` while the connection
//! is down, and a new number after each reconnect.
//!
//! What it is not: a delivery guarantee. A message published while the connection is down is
//! lost; waiters bound their wait, so they read the store again anyway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use codomyrmex_mcp::store::StoreError;
use futures_util::StreamExt as _;
use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::Notify;

/// What a permanent subscription does with each payload.
pub(crate) type Handler = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

#[derive(Default)]
struct State {
    sink: Option<PubSubSink>,
    /// Channels with waiters: how many, and what wakes them.
    waits: HashMap<String, (usize, Arc<Notify>)>,
    handlers: HashMap<String, Handler>,
}

struct Inner {
    client: redis::Client,
    /// Bumped when the connection is lost and again when it is back: odd while it is down.
    generation: std::sync::atomic::AtomicU64,
    state: Mutex<State>,
    /// Serializes SUBSCRIBE and UNSUBSCRIBE.
    ops: tokio::sync::Mutex<()>,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The shared pub/sub connection; cheap to clone.
#[derive(Clone)]
pub(crate) struct Hub {
    inner: Arc<Inner>,
}

fn unavailable(e: &redis::RedisError) -> StoreError {
    StoreError::Unavailable(format!("Redis pub/sub: {e}"))
}

impl Hub {
    /// Connects a pub/sub connection to `client`'s Redis and starts its task.
    pub(crate) async fn connect(client: redis::Client) -> Result<Self, StoreError> {
        let (sink, stream) = client
            .get_async_pubsub()
            .await
            .map_err(|e| unavailable(&e))?
            .split();
        let inner = Arc::new(Inner {
            client,
            generation: std::sync::atomic::AtomicU64::new(0),
            state: Mutex::new(State {
                sink: Some(sink),
                ..State::default()
            }),
            ops: tokio::sync::Mutex::new(()),
        });
        tokio::spawn(run(Arc::downgrade(&inner), stream));
        Ok(Self { inner })
    }

    /// `None` while the connection is down (what is published now is lost to this process),
    /// else how many times it was renewed: a change means messages may have been missed.
    pub(crate) fn epoch(&self) -> Option<u64> {
        let g = self
            .inner
            .generation
            .load(std::sync::atomic::Ordering::Acquire);
        g.is_multiple_of(2).then_some(g / 2)
    }

    /// Subscribes to `channel` while the returned [`Watch`] lives.
    pub(crate) async fn watch(&self, channel: String) -> Result<Watch, StoreError> {
        let _op = self.inner.ops.lock().await;
        let (first, notify, sink) = {
            let mut s = self.inner.lock();
            let sink = s.sink.clone();
            let entry = s
                .waits
                .entry(channel.clone())
                .or_insert_with(|| (0, Arc::new(Notify::new())));
            entry.0 += 1;
            (entry.0 == 1, entry.1.clone(), sink)
        };
        let watch = Watch {
            hub: self.clone(),
            channel,
            notify,
        };
        if first {
            let Some(mut sink) = sink else {
                return Err(StoreError::Unavailable(
                    "Redis pub/sub is reconnecting".into(),
                ));
            };
            sink.subscribe(&watch.channel)
                .await
                .map_err(|e| unavailable(&e))?;
        }
        Ok(watch)
    }

    /// Calls `handler` with every payload published on `channel`, for good.
    pub(crate) async fn handle(&self, channel: String, handler: Handler) -> Result<(), StoreError> {
        let _op = self.inner.ops.lock().await;
        let sink = {
            let mut s = self.inner.lock();
            s.handlers.insert(channel.clone(), handler);
            s.sink.clone()
        };
        let Some(mut sink) = sink else {
            // Subscribed when the task reconnects.
            return Ok(());
        };
        sink.subscribe(&channel).await.map_err(|e| unavailable(&e))
    }

    fn release(&self, channel: String) {
        let last = {
            let mut s = self.inner.lock();
            match s.waits.get_mut(&channel) {
                Some(entry) => {
                    entry.0 = entry.0.saturating_sub(1);
                    entry.0 == 0
                }
                None => false,
            }
        };
        if !last {
            return;
        }
        let inner = self.inner.clone();
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            let _op = inner.ops.lock().await;
            let sink = {
                let mut s = inner.lock();
                if s.waits.get(&channel).is_some_and(|e| e.0 > 0) {
                    // A new waiter came meanwhile.
                    return;
                }
                s.waits.remove(&channel);
                if s.handlers.contains_key(&channel) {
                    return;
                }
                s.sink.clone()
            };
            if let Some(mut sink) = sink {
                let _ = sink.unsubscribe(&channel).await;
            }
        });
    }
}

/// A subscription to one channel, for a waiter; unsubscribed when the last one is dropped.
pub(crate) struct Watch {
    hub: Hub,
    channel: String,
    notify: Arc<Notify>,
}

impl Watch {
    /// What wakes the waiters (enable a `notified()` before reading the store).
    pub(crate) fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.hub.release(std::mem::take(&mut self.channel));
    }
}

/// The connection's task: dispatches messages; on a drop, wakes every waiter and reconnects.
async fn run(inner: Weak<Inner>, mut stream: PubSubStream) {
    let mut backoff = Duration::from_millis(100);
    loop {
        while let Some(msg) = stream.next().await {
            let Some(inner) = inner.upgrade() else { return };
            let channel = msg.get_channel_name();
            let (handler, notify) = {
                let s = inner.lock();
                (
                    s.handlers.get(channel).cloned(),
                    s.waits.get(channel).map(|e| e.1.clone()),
                )
            };
            if let Some(h) = handler {
                h(msg.get_payload_bytes().to_vec());
            }
            if let Some(n) = notify {
                n.notify_waiters();
            }
            backoff = Duration::from_millis(100);
        }
        // The connection is gone.
        {
            let Some(inner) = inner.upgrade() else { return };
            let mut s = inner.lock();
            s.sink = None;
            inner
                .generation
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            for (_, n) in s.waits.values() {
                n.notify_waiters();
            }
        }
        tracing::warn!("Redis pub/sub connection lost; reconnecting");
        stream = loop {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
            let Some(inner) = inner.upgrade() else { return };
            let Ok(ps) = inner.client.get_async_pubsub().await else {
                continue;
            };
            let (mut sink, stream) = ps.split();
            let _op = inner.ops.lock().await;
            let channels: Vec<String> = {
                let s = inner.lock();
                s.waits.keys().chain(s.handlers.keys()).cloned().collect()
            };
            if !channels.is_empty() && sink.subscribe(&channels).await.is_err() {
                continue;
            }
            let mut s = inner.lock();
            s.sink = Some(sink);
            inner
                .generation
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            // Waiters read the store again: what was published meanwhile is lost.
            for (_, n) in s.waits.values() {
                n.notify_waiters();
            }
            break stream;
        };
    }
}
