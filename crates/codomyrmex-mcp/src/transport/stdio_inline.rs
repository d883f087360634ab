//! Where a stdio call runs: in the read loop when it finishes at its first poll, on a task of
//! its own when it waits.
//!
//! The read loop polls each call's future once, in place. A call that finishes there (a
//! synchronous tool, or an async one that never waits) is answered without a task: nothing is
//! spawned, no other thread is woken, and what the call allocated is freed before the next
//! line is parsed, so that the allocator hands the same memory to the next call. At 64 calls
//! in flight this is most of the transport's cost (`docs/performance.md`, "A stdio call that
//! finishes at once stays in the read loop"). A call that returns `Pending` is handed, as it
//! is, to a task of its own, which polls it again with its own waker.
//!
//! What it costs: while the first poll runs, the loop reads nothing. A tool that computes for
//! long without being marked `blocking` ([`ToolSettings::blocking`]) would hold up every line
//! behind it, where on a task of its own it holds up only the worker it runs on. So the first
//! poll is timed, and one that takes longer than [`INLINE_BUDGET`] sends the connection's
//! next calls to tasks of their own for [`SPAWN_SPELL`], after which the read loop tries
//! again.
//!
//! [`ToolSettings::blocking`]: crate::ToolSettings::blocking

use std::time::{Duration, Instant};

/// The longest a call's first poll may hold the read loop before the connection's next calls
/// go to tasks of their own: a tool that runs longer than this at once is better off on
/// another worker than in the way of the lines behind it.
pub(super) const INLINE_BUDGET: Duration = Duration::from_micros(200);

/// How long the connection's calls go to tasks of their own after a first poll took longer
/// than [`INLINE_BUDGET`].
pub(super) const SPAWN_SPELL: Duration = Duration::from_millis(100);

/// Whether the read loop may poll the next call in place: its memory of the last slow first
/// poll.
#[derive(Debug, Default)]
pub(super) struct InlineGate {
    /// Until when calls go to tasks of their own.
    spawn_until: Option<Instant>,
}

impl InlineGate {
    /// When the next call may be polled in place, the time its first poll starts (read from
    /// the clock); `None` while a slow first poll's spell lasts.
    pub(super) fn start(&mut self) -> Option<Instant> {
        let now = Instant::now();
        self.start_at(now).then_some(now)
    }

    /// Whether a call may be polled in place at `now`.
    fn start_at(&mut self, now: Instant) -> bool {
        match self.spawn_until {
            Some(until) if now < until => false,
            Some(_) => {
                self.spawn_until = None;
                true
            }
            None => true,
        }
    }

    /// A first poll that started at `started` has returned (the clock read again).
    pub(super) fn polled(&mut self, started: Instant) {
        self.polled_at(started, Instant::now());
    }

    /// A first poll that ran from `started` to `now`.
    fn polled_at(&mut self, started: Instant, now: Instant) {
        let took = now.saturating_duration_since(started);
        if took > INLINE_BUDGET {
            tracing::debug!(
                took_us = took.as_micros(),
                "a call held the read loop; the next calls run on tasks of their own for a while"
            );
            self.spawn_until = Some(now + SPAWN_SPELL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_first_polls_keep_calls_in_place() {
        let mut gate = InlineGate::default();
        let t0 = Instant::now();
        for i in 0..100u32 {
            let at = t0 + Duration::from_micros(u64::from(i) * 10);
            assert!(gate.start_at(at));
            gate.polled_at(at, at + INLINE_BUDGET);
        }
    }

    #[test]
    fn a_slow_first_poll_sends_calls_to_tasks_for_the_spell_only() {
        let mut gate = InlineGate::default();
        let t0 = Instant::now();
        assert!(gate.start_at(t0));
        let end = t0 + INLINE_BUDGET + Duration::from_micros(1);
        gate.polled_at(t0, end);
        assert!(!gate.start_at(end));
        assert!(!gate.start_at(end + SPAWN_SPELL - Duration::from_micros(1)));
        assert!(gate.start_at(end + SPAWN_SPELL));
        // The spell is over: quick polls keep it over.
        assert!(gate.start_at(end + SPAWN_SPELL * 2));
    }

    #[test]
    fn a_clock_that_goes_back_is_a_quick_poll() {
        let mut gate = InlineGate::default();
        let t0 = Instant::now() + Duration::from_secs(1);
        gate.polled_at(t0, t0 - Duration::from_millis(5));
        assert!(gate.start_at(t0));
    }
}
