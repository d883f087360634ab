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

/// A whole number from the environment variable `var` (its value `value`). Anything else is
/// ignored, with a warning, and the configured setting holds.
pub(crate) fn env_number(var: &str, value: Option<&str>) -> Option<u64> {
    let value = value?;
    match value.trim().parse::<u64>() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!(value, "{var} is not a whole number; ignored");
            None
        }
    }
}
