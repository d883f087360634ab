//! [`RoundTrip`]: the state of one round of a multi round-trip request (2026-07-28), as the
//! tool sees it: the answers and state the client sent back, and what the tool asks and
//! saves for the next round. Plain data: sealing it into `requestState` is the engine's
//! (`engine/mrtr.rs`), carrying it to the tool the context's.

use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

/// The input gathered for one round of a request, and what the handler asks for next.
#[derive(Debug, Default)]
pub(crate) struct RoundTrip {
    /// Responses from every earlier round, by input key.
    pub(crate) responses: Map<String, Value>,
    /// State the handler saved in an earlier round.
    pub(crate) state: Option<Value>,
    /// Inputs requested this round.
    pub(crate) requested: Mutex<Map<String, Value>>,
    /// State the handler saves for the next round.
    pub(crate) next_state: Mutex<Option<Value>>,
    /// A capability the handler needed and the client lacked.
    pub(crate) missing_capability: Mutex<Option<&'static str>>,
}

impl RoundTrip {
    pub(crate) fn request(&self, key: &str, request: Value) {
        self.requested
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), request);
    }

    pub(crate) fn take_requested(&self) -> Map<String, Value> {
        std::mem::take(
            &mut *self
                .requested
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    pub(crate) fn take_next_state(&self) -> Option<Value> {
        self.next_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    pub(crate) fn set_next_state(&self, state: Value) {
        *self
            .next_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(state);
    }

    pub(crate) fn note_missing(&self, capability: &'static str) {
        let mut m = self
            .missing_capability
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        m.get_or_insert(capability);
    }

    pub(crate) fn missing(&self) -> Option<&'static str> {
        *self
            .missing_capability
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
