//! The stdio transport's input spin: after the writer has written everything it had and no
//! call is in flight, it polls the input pipe for up to `stdio_spin` before its thread may
//! park. The rules and the polling are the transports' shared [`Spin`]; this is its stdio
//! side: the pipe it polls (a duplicate of the input's descriptor), and the work in flight
//! the read loop and the calls count.
//!
//! Spinning blocks the writer's worker thread; nothing else of the connection is runnable
//! at that moment (the spin does not run while a call is in flight, the read loop holds
//! buffered input, or an answer is queued).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use crate::transport::spin::Spin;
#[cfg(test)]
use crate::transport::spin::Spun;

/// The input to poll and the spin's rules.
pub(super) struct InputSpin {
    input: OwnedFd,
    spin: Arc<Spin>,
}

/// Work in flight; counted until dropped.
pub(super) struct InFlight {
    spin: Arc<Spin>,
    call: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.spin.leave(self.call);
    }
}

impl InputSpin {
    /// A spin of `spin` on `input` (a duplicate of its descriptor is kept); `None` when the
    /// spin is zero or the descriptor cannot be duplicated.
    pub(super) fn new(input: &impl AsFd, spin: Duration) -> Option<Self> {
        let spin = Spin::new(spin)?;
        let input = input.as_fd().try_clone_to_owned().ok()?;
        Some(Self {
            input,
            spin: Arc::new(spin),
        })
    }

    /// Counts work in flight (input the read loop has buffered) until the returned value is
    /// dropped.
    pub(super) fn call_started(&self) -> InFlight {
        self.counted(false)
    }

    /// Counts a call in flight until the returned value is dropped, and how many overlap.
    pub(super) fn call(&self) -> InFlight {
        self.counted(true)
    }

    /// Counts a call the client sent before it had the answer to another (a pipelining
    /// client): the busy spell is then one in which calls overlapped, though the read loop
    /// answers such calls one by one.
    pub(super) fn overlapped(&self) {
        self.spin.overlapped();
    }

    fn counted(&self, call: bool) -> InFlight {
        self.spin.enter(call);
        InFlight {
            spin: self.spin.clone(),
            call,
        }
    }

    /// Called by the writer when it has written everything queued.
    pub(super) fn after_write(&self) {
        let _ = self.spin.wait(&self.input);
    }

    /// Polls the input until it is readable, the spin has passed, or work is in flight.
    #[cfg(test)]
    pub(super) fn wait(&self) -> Spun {
        self.spin.wait(&self.input)
    }
}

/// The spin [`SPIN_ENV`](super::SPIN_ENV) asks for: whole microseconds. Anything else is
/// ignored (with a warning) and the configured spin holds.
pub(super) fn from_env(value: Option<&str>) -> Option<Duration> {
    crate::transport::spin::from_env(super::SPIN_ENV, value)
}

#[cfg(test)]
#[path = "stdio_spin_tests.rs"]
mod tests;
