//! Transports: thin adapters that move bytes between a peer and the [`Engine`](crate::engine::Engine).
//!
//! A transport frames and decodes messages, hands them to the engine with a session and a
//! sink, drives the futures the engine returns, and writes what comes back. It holds no
//! protocol rules of its own.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub(crate) mod spin;
pub mod stdio;
