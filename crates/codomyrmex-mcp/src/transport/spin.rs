//! The input spin, shared by the transports: once a transport has written its answers and no
//! call is in flight, it polls its input (`poll(2)` with a zero timeout) for a bounded while
//! before its thread may park.
//!
//! Why: at one call in flight the server's thread has nothing to do between writing a
//! response and the client's next request. Parking there (`epoll_wait`) lets an idle vCPU
//! halt, and waking a halted vCPU costs tens of microseconds on a VM: more than the call
//! itself. A client that answers within the spin finds the server still running; its input
//! is then already readable when the thread parks, so `epoll_wait` returns at once.
//!
//! One [`Spin`] holds the rules; each transport says when it is idle and which descriptor to
//! poll: the stdio writer its input pipe (`stdio_spin.rs`, [`McpServerConfig::stdio_spin`]),
//! an HTTP connection its socket once its response is written (`http/conn_spin.rs`,
//! [`McpServerConfig::http_spin`]; one `Spin` per server, shared by its connections). A
//! client's connection, the other way round, polls its socket while its one call waits for
//! the answer (`client/answer_spin.rs`: the same rules with that call aside,
//! [`Spin::wait_for_answer`]).
//!
//! What it is not: a reader. It never consumes input, so what is read, and in what order, is
//! the same with any spin; it only delays the moment the thread may sleep. It is bounded (it
//! stops after its spin, a `poll` at most every spin-loop hint), and it ends at once when the
//! input is readable or closed, or when a call starts anywhere under the same `Spin`. It does
//! not start:
//!
//! - while work is in flight (a call, or input the stdio read loop has buffered): the thread
//!   has work then;
//! - after a busy spell in which calls overlapped (a pipelining stdio client, or several HTTP
//!   connections with calls at once): such a client sends the next call without waiting for
//!   an answer, so the input does not come back within a spin, and spinning would only hold a
//!   worker thread that the other calls need (at 64 stdio calls in flight it cost about 14% of
//!   the calls/s, `docs/perf-notes.md`);
//! - while another thread spins under the same `Spin`: at most one thread spins, so another
//!   worker is always free to take the I/O driver;
//! - on a busy machine: when more tasks are runnable than there are CPUs (the kernel's count of
//!   runnable tasks, `/proc/loadavg`'s fourth field, sampled at most every [`SAMPLE_EVERY`]) in
//!   [`BUSY_COUNTS`] counts more than in the quiet ones since.
//!   Other processes then want the cores, and a spin is worse than parking: it spends the
//!   thread's share of the CPU before the next request comes, so the scheduler makes that
//!   request wait behind the other processes, where a parked thread would be woken at once.
//!   Measured with two other busy processes on the 2 cores, the spins raised the p99 of one
//!   connection above rmcp's (docs/performance.md, "Under CPU contention"). A spin that only
//!   watched its own CPU share missed it: a 100 µs spin is rarely preempted, the cost comes at
//!   the next wake-up.
//!
//! [`McpServerConfig::stdio_spin`]: crate::McpServerConfig::stdio_spin
//! [`McpServerConfig::http_spin`]: crate::McpServerConfig::http_spin

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the machine's runnable tasks are counted (when a spin is about to start).
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// The runnable tasks in `/proc/loadavg`'s text (its fourth field, `RUNNING/TOTAL`).
fn runnable_in_loadavg(text: &str) -> Option<u32> {
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .0
        .parse()
        .ok()
}

/// Whether a machine of `cpus` CPUs is busy with `runnable` tasks, the one counting them
/// among them: the others would fill every CPU.
fn is_busy_with(runnable: u32, cpus: u32) -> bool {
    runnable > cpus
}

/// How many busy counts in a row (less the quiet ones since) make the machine busy: one count
/// catches a moment (the peer a spin waits for may be running then, reading the answer), a
/// competing load shows in every count.
const BUSY_COUNTS: u8 = 2;

/// One call in [`Spin`]'s `calls`: one more in flight, one more started.
const ONE_CALL: u64 = 1 << 32 | 1;

/// The calls in flight, in [`Spin`]'s `calls`.
const IN_FLIGHT: u64 = u32::MAX as u64;

/// The calls started, in a value of [`Spin`]'s `calls`.
fn started(calls: u64) -> u32 {
    (calls >> 32) as u32
}

/// What a spin polls: a descriptor (on Linux; elsewhere [`Spin::new`] builds no spin).
#[cfg(target_os = "linux")]
pub(crate) trait Pollable: std::os::fd::AsFd {}
#[cfg(target_os = "linux")]
impl<T: std::os::fd::AsFd> Pollable for T {}
/// What a spin polls: anything, since no spin is built on this platform.
#[cfg(not(target_os = "linux"))]
pub(crate) trait Pollable {}
#[cfg(not(target_os = "linux"))]
impl<T> Pollable for T {}

/// A spin's bound and the work in flight under it.
#[derive(Debug)]
pub(crate) struct Spin {
    spin: Duration,
    /// Work in flight other than calls: input buffered but not yet handled.
    buffered: AtomicUsize,
    /// Calls: how many are in flight (the low 32 bits), and how many have started so far
    /// (the high 32 bits, wrapping): one atomic, so that a call's start and end each change
    /// one counter that every worker shares (a call is the hot path at many connections).
    calls: AtomicU64,
    /// The most calls in flight at once since the transport last went idle.
    peak: AtomicUsize,
    /// A thread is spinning.
    spinning: AtomicBool,
    /// The CPUs this process may run on.
    cpus: u32,
    /// When this `Spin` was made: the origin of `next_sample`.
    born: Instant,
    /// Nanoseconds after `born` from which the next spin counts the runnable tasks again.
    next_sample: AtomicU64,
    /// Busy counts less quiet ones, from 0 to [`BUSY_COUNTS`] + 1: the machine is busy, and no
    /// spin starts, from [`BUSY_COUNTS`].
    score: AtomicU8,
    /// Whether spins look at the machine's load. Always in a build; the tests of the other
    /// rules turn it off, since a loaded test machine would turn their spins off.
    judge: bool,
    /// How the spins ended, and how many polls they made: for the tests.
    #[cfg(test)]
    pub(crate) seen: Seen,
}

/// How a spin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spun {
    /// The input became readable (or closed, or failed): the thread has work again.
    Ready,
    /// Nothing came within the spin.
    Expired,
    /// Not spun, or stopped: work is in flight.
    Skipped,
    /// Not spun: calls overlapped since the transport last went idle.
    Overlapped,
    /// Not spun: another thread is spinning.
    Elsewhere,
    /// Not spun: the machine is busy (more runnable tasks than CPUs, by the last counts).
    Busy,
}

/// What the spins of one [`Spin`] did, counted for the tests.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// `poll(2)` calls.
    pub(crate) polls: AtomicUsize,
    /// Calls of [`Spin::wait`], by outcome, in the order of [`Spun`]'s variants.
    pub(crate) outcomes: [AtomicUsize; 6],
}

#[cfg(test)]
impl Seen {
    /// How many waits ended so.
    pub(crate) fn count(&self, outcome: Spun) -> usize {
        self.outcomes[outcome as usize].load(Ordering::SeqCst)
    }

    /// How many `poll(2)` calls the spins made.
    pub(crate) fn polls(&self) -> usize {
        self.polls.load(Ordering::SeqCst)
    }
}

impl Spin {
    /// A spin of `spin` (at most [`McpServerConfig::MAX_INPUT_SPIN`]); `None` when it is zero,
    /// and off Linux (it polls with `poll(2)` through rustix).
    ///
    /// [`McpServerConfig::MAX_INPUT_SPIN`]: crate::McpServerConfig::MAX_INPUT_SPIN
    pub(crate) fn new(spin: Duration) -> Option<Self> {
        let spin = spin.min(crate::McpServerConfig::MAX_INPUT_SPIN);
        (cfg!(target_os = "linux") && !spin.is_zero()).then(|| Self {
            spin,
            buffered: AtomicUsize::new(0),
            calls: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            spinning: AtomicBool::new(false),
            cpus: std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
            born: Instant::now(),
            next_sample: AtomicU64::new(0),
            score: AtomicU8::new(0),
            judge: !cfg!(test),
            #[cfg(test)]
            seen: Seen::default(),
        })
    }

    /// The same spin, looking at the machine's load as a build does (the tests of that rule).
    #[cfg(test)]
    pub(crate) fn judging(mut self) -> Self {
        self.judge = true;
        self
    }

    /// Whether the machine is busy at `now`: what the counts said, counted again with `count`
    /// (the runnable tasks, `None` when unknown: a quiet count) once [`SAMPLE_EVERY`] has
    /// passed since the last count.
    fn is_busy(&self, now: Instant, count: impl FnOnce() -> Option<u32>) -> bool {
        let at =
            u64::try_from(now.saturating_duration_since(self.born).as_nanos()).unwrap_or(u64::MAX);
        let next = self.next_sample.load(Ordering::Acquire);
        if at < next {
            return self.score.load(Ordering::Acquire) >= BUSY_COUNTS;
        }
        let after = at.saturating_add(u64::try_from(SAMPLE_EVERY.as_nanos()).unwrap_or(u64::MAX));
        // One counter per period: another thread that got here first has counted.
        if self
            .next_sample
            .compare_exchange(next, after, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return self.score.load(Ordering::Acquire) >= BUSY_COUNTS;
        }
        let busy_now = count().is_some_and(|runnable| is_busy_with(runnable, self.cpus));
        let score = self.score.load(Ordering::Acquire);
        let score = if busy_now {
            score.saturating_add(1).min(BUSY_COUNTS + 1)
        } else {
            score.saturating_sub(1)
        };
        self.score.store(score, Ordering::Release);
        score >= BUSY_COUNTS
    }

    /// The bound.
    #[cfg(test)]
    pub(crate) fn bound(&self) -> Duration {
        self.spin
    }

    /// Whether a thread is spinning now.
    #[cfg(test)]
    pub(crate) fn is_spinning(&self) -> bool {
        self.spinning.load(Ordering::SeqCst)
    }

    /// Counts work in flight (a call when `call`), until the matching [`Self::leave`]. For a
    /// call, its number among the calls started under this `Spin` (wrapping): a call started
    /// just before another has the number before it.
    pub(crate) fn enter(&self, call: bool) -> u32 {
        if !call {
            self.buffered.fetch_add(1, Ordering::AcqRel);
            return 0;
        }
        let before = self.calls.fetch_add(ONE_CALL, Ordering::AcqRel);
        let calls = usize::try_from((before & IN_FLIGHT) + 1).unwrap_or(usize::MAX);
        if calls > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(calls, Ordering::AcqRel);
        }
        started(before)
    }

    /// Counts the busy spell as one in which calls overlapped, as two calls in flight at once
    /// would: for a call the client sent before it had the answer to another, where the
    /// transport handles each at once and so never has two in flight (the stdio read loop,
    /// `stdio_inline.rs`).
    pub(crate) fn overlapped(&self) {
        if self.peak.load(Ordering::Relaxed) < 2 {
            self.peak.fetch_max(2, Ordering::AcqRel);
        }
    }

    /// Ends what [`Self::enter`] with the same `call` counted.
    pub(crate) fn leave(&self, call: bool) {
        if call {
            self.calls.fetch_sub(1, Ordering::AcqRel);
        } else {
            self.buffered.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// How many calls have started under this `Spin` (wrapping): the number the next call's
    /// [`Self::enter`] returns.
    pub(crate) fn calls_started(&self) -> u32 {
        started(self.calls.load(Ordering::Acquire))
    }

    /// Work in flight: calls and buffered input.
    fn in_flight(&self) -> usize {
        let calls =
            usize::try_from(self.calls.load(Ordering::Acquire) & IN_FLIGHT).unwrap_or(usize::MAX);
        calls.saturating_add(self.buffered.load(Ordering::Acquire))
    }

    /// Polls `input` until it is readable, the spin has passed, or work is in flight.
    pub(crate) fn wait(&self, input: &impl Pollable) -> Spun {
        self.wait_beside(input, 0)
    }

    /// [`Self::wait`] for a client whose one call in flight waits for its answer on `input`:
    /// the same rules, that call aside (it is counted, and it is what the spin waits for).
    pub(crate) fn wait_for_answer(&self, input: &impl Pollable) -> Spun {
        self.wait_beside(input, 1)
    }

    /// Polls `input` unless more than `own` works are in flight.
    fn wait_beside(&self, input: &impl Pollable, own: usize) -> Spun {
        let outcome = self.spin_on(input, own);
        #[cfg(test)]
        self.seen.outcomes[outcome as usize].fetch_add(1, Ordering::SeqCst);
        outcome
    }

    fn spin_on(&self, input: &impl Pollable, own: usize) -> Spun {
        if self.in_flight() > own {
            return Spun::Skipped;
        }
        // Idle now (but for the waiter's own call): the busy spell that ended decides, and the
        // next one starts counting.
        if self.peak.load(Ordering::Relaxed) != 0 && self.peak.swap(0, Ordering::AcqRel) > 1 {
            return Spun::Overlapped;
        }
        if self.judge && self.is_busy(Instant::now(), runnable_tasks) {
            return Spun::Busy;
        }
        if self
            .spinning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Spun::Elsewhere;
        }
        let outcome = self.poll_until(input, own);
        self.spinning.store(false, Ordering::Release);
        outcome
    }

    #[cfg(target_os = "linux")]
    fn poll_until(&self, input: &impl Pollable, own: usize) -> Spun {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};

        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let until = Instant::now() + self.spin;
        loop {
            #[cfg(test)]
            self.seen.polls.fetch_add(1, Ordering::SeqCst);
            let mut fds = [PollFd::new(input, PollFlags::IN)];
            match poll(&mut fds, Some(&zero)) {
                // Readable, hung up or in error: the transport has something to see.
                Ok(n) if n > 0 => return Spun::Ready,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return Spun::Ready,
            }
            if self.in_flight() > own {
                return Spun::Skipped;
            }
            if Instant::now() >= until {
                return Spun::Expired;
            }
            std::hint::spin_loop();
        }
    }

    /// Never reached: no spin is built off Linux.
    #[cfg(not(target_os = "linux"))]
    fn poll_until(&self, _: &impl Pollable, _: usize) -> Spun {
        Spun::Expired
    }
}

/// The machine's runnable tasks now (`/proc/loadavg`), or `None` where it cannot be read.
fn runnable_tasks() -> Option<u32> {
    runnable_in_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// A spin in whole microseconds from an environment variable (`name`, for the warning):
/// anything else is ignored (with a warning), and the configured spin holds.
pub(crate) fn from_env(name: &str, value: Option<&str>) -> Option<Duration> {
    super::env_number(name, value).map(Duration::from_micros)
}

#[cfg(all(test, target_os = "linux"))]
#[path = "spin_tests.rs"]
mod tests;
