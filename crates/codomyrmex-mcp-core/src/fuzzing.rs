//! Internals exposed for the fuzz targets in `fuzz/` and for robustness tests.
//!
//! Not a stable API: free to change in any release (it is public only because the fuzz
//! targets are another crate). Each
//! function is a thin forwarder to crate-private code, so the fuzzers exercise exactly what
//! the server runs.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::engine::mrtr::{Binding, Sealer};
use crate::wire::ErrorObject;

/// Seals and opens multi round-trip `requestState` values exactly as the engine does.
pub struct RequestStateSealer(Sealer, std::sync::Arc<dyn crate::platform::TimeSource>);

impl std::fmt::Debug for RequestStateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestStateSealer(..)")
    }
}

impl RequestStateSealer {
    /// A sealer with a fixed key and time to live.
    pub fn new(key: [u8; 32], ttl: Duration) -> Self {
        let platform = crate::platform::Platform::default_platform();
        Self(
            Sealer::new(
                Some(key),
                ttl,
                &crate::platform::NoEntropy,
                platform.time.clone(),
            ),
            platform.time,
        )
    }

    /// Seals the earlier responses and the handler's state for a request.
    pub fn seal(
        &self,
        method: &str,
        target: &str,
        principal: Option<&str>,
        responses: &Map<String, Value>,
        state: Option<&Value>,
    ) -> String {
        let binding = Binding {
            method,
            target,
            principal,
        };
        // A keyed sealer always seals.
        self.0.seal(&binding, responses, state).unwrap_or_default()
    }

    /// Seals arbitrary payload bytes with a valid tag, so that a fuzzer reaches the payload
    /// checks behind the integrity check.
    pub fn seal_payload(&self, payload: &[u8]) -> String {
        self.0.seal_payload(payload).unwrap_or_default()
    }

    /// Verifies and opens a sealed state for a request, as `tools/call`, `prompts/get` and
    /// `resources/read` do with a client's `requestState`.
    pub fn open(
        &self,
        sealed: &str,
        method: &str,
        target: &str,
        principal: Option<&str>,
    ) -> Result<(Map<String, Value>, Option<Value>), ErrorObject> {
        let binding = Binding {
            method,
            target,
            principal,
        };
        self.0.open(sealed, &binding, self.1.wall())
    }
}
