//! [`RedisChangeBus`]: list changes and resource updates between instances, over Redis
//! pub/sub on the channel `P:changes` (`P` the key prefix), as JSON
//! [`ChangeMessage`]s. It listens on the process's one pub/sub connection (the
//! [`RedisConnection`]'s, shared with the message bus and the SSE readers): one handler fans
//! each message out to every feed. A feed lives while its subscriber holds it; when the
//! connection is lost, the connection reconnects and subscribes again by itself. What is
//! published meanwhile is not replayed (pub/sub keeps nothing): changes are advisory, and a
//! feed that falls more than [`FEED_BUFFER`] messages behind skips the oldest.

use std::sync::Arc;

use codomyrmex_mcp::change_bus::{
    ChangeBus, ChangeBusError, ChangeBusFuture, ChangeFeed, ChangeMessage,
};
use codomyrmex_mcp::engine::ServerEvent;
use futures_util::StreamExt as _;
use tokio::sync::broadcast;

use crate::RedisConnection;

/// How many messages a feed may fall behind before it skips the oldest.
pub const FEED_BUFFER: usize = 1024;

/// The [`ChangeBus`] on Redis pub/sub; cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisChangeBus {
    redis: RedisConnection,
}

fn unavailable(e: &redis::RedisError) -> ChangeBusError {
    ChangeBusError::Unavailable(format!("Redis: {e}"))
}

impl RedisChangeBus {
    /// Changes on `redis`'s channel under its prefix.
    pub fn new(redis: RedisConnection) -> Self {
        Self { redis }
    }

    fn channel(&self) -> String {
        format!("{}:changes", self.redis.prefix)
    }

    /// The fan-out of the channel, subscribed on the shared connection the first time (the
    /// connection holds it, so every change bus built on it shares it).
    async fn fanout(&self) -> Result<&broadcast::Sender<Vec<u8>>, ChangeBusError> {
        self.redis
            .changes
            .get_or_try_init(|| async {
                let hub = self
                    .redis
                    .hub()
                    .await
                    .map_err(|e| ChangeBusError::Unavailable(e.to_string()))?;
                let (tx, _) = broadcast::channel(FEED_BUFFER);
                let sender = tx.clone();
                let handler: crate::pubsub::Handler = Arc::new(move |payload: Vec<u8>| {
                    // No feed listening: nothing to do.
                    let _ = sender.send(payload);
                });
                hub.handle(self.channel(), handler)
                    .await
                    .map_err(|e| ChangeBusError::Unavailable(e.to_string()))?;
                Ok(tx)
            })
            .await
    }
}

impl ChangeBus for RedisChangeBus {
    fn publish<'a>(&'a self, origin: &'a str, event: &'a ServerEvent) -> ChangeBusFuture<'a, ()> {
        Box::pin(async move {
            let message = serde_json::to_vec(&ChangeMessage::new(origin, event))
                .map_err(|e| ChangeBusError::Unavailable(e.to_string()))?;
            let _: i64 = redis::cmd("PUBLISH")
                .arg(self.channel())
                .arg(message)
                .query_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(())
        })
    }

    fn subscribe(&self) -> ChangeBusFuture<'_, ChangeFeed> {
        Box::pin(async move {
            let rx = self.fanout().await?.subscribe();
            let feed = futures_util::stream::unfold(rx, |mut rx| async move {
                loop {
                    match rx.recv().await {
                        Ok(payload) => return Some((payload, rx)),
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            tracing::warn!(skipped = n, "a change feed fell behind");
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            })
            .filter_map(|payload| async move {
                // Anything unreadable (another build's kind, a stray publisher) is skipped.
                let message: ChangeMessage = serde_json::from_slice(&payload).ok()?;
                let event = message.event()?;
                Some((message.origin, event))
            });
            Ok(Box::pin(feed) as ChangeFeed)
        })
    }
}
