//! The stdio transport's input spin: after the writer has written everything it had and no
//! call is in flight, it polls the input pipe (`poll(2)` with a zero timeout) for up to
//! `stdio_spin` before its thread may park.
//!
//! Why: at one call in flight the server's thread has nothing to do between writing a
//! response and the client's next request. Parking there (`epoll_wait`) lets an idle vCPU
//! halt, and waking a halted vCPU costs tens of microseconds on a VM: more than the call
//! itself. A client that answers within the spin finds the server still running; its input
//! is then already readable when the thread parks, so `epoll_wait` returns at once.
//!
//! What it is not: a reader. It never consumes input, so what the read loop reads, and in
//! what order, is the same with any spin; it only delays the moment the thread may sleep.
//! It is bounded (an idle server stops polling after `stdio_spin`, a `poll` at most every
//! spin-loop hint), it ends at once when the input is readable or closed, and it does not
//! run while a call is in flight, the read loop holds buffered input, or an answer is queued
//! (the thread has work then). Nor does it run after a busy spell in which calls overlapped:
//! a client that keeps several calls in flight sends the next without waiting for an answer,
//! so its input does not come back within a spin, and spinning would only hold a worker
//! thread (at 64 in flight it cost about 14% of the calls/s, `docs/perf-notes.md`).
//! Spinning blocks the writer's worker thread; nothing else of the connection is runnable
//! at that moment.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// The input to poll, how long, and the work and calls in flight.
pub(super) struct InputSpin {
    input: OwnedFd,
    spin: Duration,
    in_flight: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    /// The most calls in flight at once since the writer last went idle.
    peak: AtomicUsize,
}

/// Work in flight; counted until dropped (a call also in the calls' count).
pub(super) struct InFlight(Arc<AtomicUsize>, Option<Arc<AtomicUsize>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
        if let Some(calls) = &self.1 {
            calls.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How a spin ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Spun {
    /// The input became readable (or closed, or failed): the thread has work again.
    Ready,
    /// Nothing came within the spin.
    Expired,
    /// Not spun: work is in flight.
    Skipped,
    /// Not spun: calls overlapped since the writer last went idle (a pipelining client).
    Pipelined,
}

impl InputSpin {
    /// A spin of `spin` on `input` (a duplicate of its descriptor is kept); `None` when the
    /// spin is zero or the descriptor cannot be duplicated.
    pub(super) fn new(input: &impl AsFd, spin: Duration) -> Option<Self> {
        let spin = spin.min(crate::McpServerConfig::MAX_STDIO_SPIN);
        if spin.is_zero() {
            return None;
        }
        let input = input.as_fd().try_clone_to_owned().ok()?;
        Some(Self {
            input,
            spin,
            in_flight: Arc::new(AtomicUsize::new(0)),
            calls: Arc::new(AtomicUsize::new(0)),
            peak: AtomicUsize::new(0),
        })
    }

    /// Counts work in flight (input the read loop has buffered) until the returned value is
    /// dropped.
    pub(super) fn call_started(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.in_flight.clone(), None)
    }

    /// Counts a call in flight until the returned value is dropped, and how many overlap.
    pub(super) fn call(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        let calls = self.calls.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(calls, Ordering::AcqRel);
        InFlight(self.in_flight.clone(), Some(self.calls.clone()))
    }

    /// Called by the writer when it has written everything queued.
    pub(super) fn after_write(&self) {
        let _ = self.wait();
    }

    /// Polls the input until it is readable, the spin has passed, or work is in flight.
    pub(super) fn wait(&self) -> Spun {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Spun::Skipped;
        }
        // Idle now: the busy spell that ended decides, and the next one starts counting.
        if self.peak.swap(0, Ordering::AcqRel) > 1 {
            return Spun::Pipelined;
        }
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let until = Instant::now() + self.spin;
        loop {
            let mut fds = [PollFd::new(&self.input, PollFlags::IN)];
            match poll(&mut fds, Some(&zero)) {
                // Readable, hung up or in error: the read loop has something to see.
                Ok(n) if n > 0 => return Spun::Ready,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return Spun::Ready,
            }
            if self.in_flight.load(Ordering::Acquire) > 0 {
                return Spun::Skipped;
            }
            if Instant::now() >= until {
                return Spun::Expired;
            }
            std::hint::spin_loop();
        }
    }
}

/// The spin [`SPIN_ENV`](super::SPIN_ENV) asks for: whole microseconds. Anything else is
/// ignored (with a warning) and the configured spin holds.
pub(super) fn from_env(value: Option<&str>) -> Option<Duration> {
    super::env_number(super::SPIN_ENV, value).map(Duration::from_micros)
}

#[cfg(test)]
#[path = "stdio_spin_tests.rs"]
mod tests;
