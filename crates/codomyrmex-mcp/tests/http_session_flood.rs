//! Under a flood of new sessions, no `initialize` is refused while an idle session can be
//! evicted (issue #26, finding 11), with the in-memory session store: see
//! [`flood_support`] for the flood, its count (`MCP_FLOOD_INITIALIZES`), the binary it floods
//! when `CODOMYRMEX_MCP_FLOOD_BIN` names one, and what is checked.
//! The same flood against the Redis store is `codomyrmex-mcp-redis`'s `session_flood` test.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod flood_support;
mod http_support;

use std::sync::Arc;

use codomyrmex_mcp::store::{MemorySessionStore, SessionStore};
use http_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_initializes_evicts_idle_sessions_and_refuses_none() {
    let total = flood_support::flood_count();
    if let Some(bin) = flood_support::flood_bin() {
        // The binary's own in-memory store: its sessions are the ones alive in its process.
        let s = flood_support::Served::start(&bin, None);
        let flood = flood_support::flood(s.addr, total).await;
        let stored = s.check_reports().await;
        flood_support::check(s.addr, total, &flood, stored).await;
        return;
    }
    let store = Arc::new(MemorySessionStore::new());
    let config = config().with_session_store(store.clone());
    assert_eq!(config.max_sessions, flood_support::CAP, "the default cap");
    let s = start(config).await;
    let flood = flood_support::flood(s.addr, total).await;
    let stored = store.count().await.unwrap();
    flood_support::check(s.addr, total, &flood, stored).await;
    s.stop().await;
}
