//! The size of what hyper keeps per connection for a call in flight.
//!
//! hyper holds a connection's call future in the connection's own state and moves each
//! call's future into it. That state was last touched a whole round of connections ago, so
//! every byte of the future written there is a cache miss: the stack's future is kept to a
//! few cache lines, configured layers included.

use std::sync::Arc;

use axum::http::Request;
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;

use super::conn::{Activity, InPlace, Tracked};
use super::conn_timer::ConnTimer;
use super::{HttpConfig, HttpServer};
use crate::engine::Engine;
use crate::{McpServerConfig, McpToolRegistry};

/// Three cache lines.
const LIMIT: usize = 192;

fn future_size<S: hyper::service::Service<Request<Incoming>>>(_: &S) -> usize {
    std::mem::size_of::<S::Future>()
}

/// The size of the future hyper keeps for a call on a server with `config`.
fn call_future_size(config: HttpConfig) -> usize {
    let engine = Engine::new(
        McpServerConfig::new("stack-tests", "0.0.0"),
        Arc::new(McpToolRegistry::new()),
    );
    let server = HttpServer::new(engine, config);
    let stack = server
        .build::<Incoming>(8080, CancellationToken::new(), Arc::default())
        .expect("a valid configuration");
    let tracked = Tracked::new(
        stack,
        Arc::new(Activity::new(None)),
        std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
        ConnTimer::default(),
    );
    future_size(&InPlace::new(tracked))
}

#[test]
// The optional layers are `Either`s, so the type, and its size, is the same for every
// configuration: CORS, authentication and the rest count whether they are on or not.
fn a_calls_future_is_a_few_cache_lines() {
    let size = call_future_size(HttpConfig::default());
    assert!(size <= LIMIT, "the call's future is {size} bytes");
}
