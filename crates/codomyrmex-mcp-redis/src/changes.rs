//! [`RedisChangeBus`]: list changes and resource updates between instances, over Redis
//! pub/sub on the channel `P:changes` (`P` the key prefix), as JSON
//! [`ChangeMessage`]s. Each subscription is a connection of its own (pub/sub needs one);
//! its feed ends when that connection is lost, and the subscriber subscribes again. What is
//! published meanwhile is not replayed (pub/sub keeps nothing): changes are advisory.

use codomyrmex_mcp::change_bus::{
    ChangeBus, ChangeBusError, ChangeBusFuture, ChangeFeed, ChangeMessage, ServerEvent,
};
use futures_util::StreamExt as _;

use crate::RedisConnection;

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
            let mut pubsub = self
                .redis
                .client
                .get_async_pubsub()
                .await
                .map_err(|e| unavailable(&e))?;
            pubsub
                .subscribe(self.channel())
                .await
                .map_err(|e| unavailable(&e))?;
            let feed = pubsub.into_on_message().filter_map(|msg| async move {
                let payload: Vec<u8> = msg.get_payload().ok()?;
                // Anything unreadable (another build's kind, a stray publisher) is skipped.
                let message: ChangeMessage = serde_json::from_slice(&payload).ok()?;
                let event = message.event()?;
                Some((message.origin, event))
            });
            Ok(Box::pin(feed) as ChangeFeed)
        })
    }
}
