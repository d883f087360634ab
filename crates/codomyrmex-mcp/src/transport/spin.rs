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
//! [`McpServerConfig::http_spin`]; one `Spin` per server, shared by its connections).
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
//! - for [`BUSY_BACKOFF`] after a spin that lost the CPU: when the thread that spun got less
//!   than three quarters of the spin's wall time as CPU time (its own clock,
//!   `CLOCK_THREAD_CPUTIME_ID`), other processes were running on its core, and on a machine
//!   that busy a spin is worse than parking: it spends the thread's share of the CPU before the
//!   next request comes, so the scheduler then makes that request wait behind the other
//!   processes, where a parked thread would be woken at once. Measured with two other busy
//!   processes on the 2 cores, the spin raised the p99 of one HTTP connection above rmcp's
//!   (docs/performance.md, "Under CPU contention"). After the back-off one spin probes again.
//!
//! [`McpServerConfig::stdio_spin`]: crate::McpServerConfig::stdio_spin
//! [`McpServerConfig::http_spin`]: crate::McpServerConfig::http_spin

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long spins stay off after one lost the CPU to other processes.
pub(crate) const BUSY_BACKOFF: Duration = Duration::from_secs(1);

/// The shortest spin whose CPU share is judged: a shorter one says too little.
const JUDGED_FROM: Duration = Duration::from_micros(20);

/// Whether a spin of `wall` that got `cpu` of CPU time lost its core to other processes: less
/// than three quarters of its wall time ran.
fn lost_the_cpu(wall: Duration, cpu: Duration) -> bool {
    wall >= JUDGED_FROM && cpu.as_nanos() * 4 < wall.as_nanos() * 3
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
    /// Work in flight: calls, and input buffered but not yet handled.
    in_flight: AtomicUsize,
    /// Calls in flight.
    calls: AtomicUsize,
    /// The most calls in flight at once since the transport last went idle.
    peak: AtomicUsize,
    /// A thread is spinning.
    spinning: AtomicBool,
    /// When this `Spin` was made: the origin of `busy_until`.
    born: Instant,
    /// Nanoseconds after `born` until which no spin starts (0: none), set when a spin lost the
    /// CPU (see the module's documentation).
    busy_until: AtomicU64,
    /// Whether spins judge their CPU share. Always in a build; the tests of the other rules
    /// turn it off, since a loaded test machine would make any spin lose the CPU.
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
    /// Not spun: a recent spin lost the CPU to other processes (for [`BUSY_BACKOFF`]).
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
            in_flight: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            spinning: AtomicBool::new(false),
            born: Instant::now(),
            busy_until: AtomicU64::new(0),
            judge: !cfg!(test),
            #[cfg(test)]
            seen: Seen::default(),
        })
    }

    /// The same spin, judging its CPU share as a build does (the tests of that rule).
    #[cfg(test)]
    pub(crate) fn judging(mut self) -> Self {
        self.judge = true;
        self
    }

    /// Takes in a spin that ended at `now` after `wall`, having run for `cpu`: when it lost
    /// the CPU, no spin starts for [`BUSY_BACKOFF`].
    fn judge(&self, now: Instant, wall: Duration, cpu: Duration) {
        if lost_the_cpu(wall, cpu) {
            let until = now.saturating_duration_since(self.born) + BUSY_BACKOFF;
            let nanos = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
            self.busy_until.store(nanos, Ordering::Release);
        }
    }

    /// Whether spins are off at `now` because a recent one lost the CPU.
    fn is_busy(&self, now: Instant) -> bool {
        let until = self.busy_until.load(Ordering::Acquire);
        until != 0 && now.saturating_duration_since(self.born).as_nanos() < u128::from(until)
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

    /// Counts work in flight (a call when `call`), until the matching [`Self::leave`].
    pub(crate) fn enter(&self, call: bool) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if call {
            let calls = self.calls.fetch_add(1, Ordering::AcqRel) + 1;
            if calls > self.peak.load(Ordering::Relaxed) {
                self.peak.fetch_max(calls, Ordering::AcqRel);
            }
        }
    }

    /// Ends what [`Self::enter`] with the same `call` counted.
    pub(crate) fn leave(&self, call: bool) {
        if call {
            self.calls.fetch_sub(1, Ordering::AcqRel);
        }
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// Polls `input` until it is readable, the spin has passed, or work is in flight.
    pub(crate) fn wait(&self, input: &impl Pollable) -> Spun {
        let outcome = self.spin_on(input);
        #[cfg(test)]
        self.seen.outcomes[outcome as usize].fetch_add(1, Ordering::SeqCst);
        outcome
    }

    fn spin_on(&self, input: &impl Pollable) -> Spun {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Spun::Skipped;
        }
        // Idle now: the busy spell that ended decides, and the next one starts counting.
        if self.peak.load(Ordering::Relaxed) != 0 && self.peak.swap(0, Ordering::AcqRel) > 1 {
            return Spun::Overlapped;
        }
        if self.judge && self.is_busy(Instant::now()) {
            return Spun::Busy;
        }
        if self
            .spinning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Spun::Elsewhere;
        }
        let outcome = if self.judge {
            let cpu = thread_cpu_time();
            let start = Instant::now();
            let outcome = self.poll_until(input);
            let now = Instant::now();
            if let (Some(before), Some(after)) = (cpu, thread_cpu_time()) {
                self.judge(now, now - start, after.saturating_sub(before));
            }
            outcome
        } else {
            self.poll_until(input)
        };
        self.spinning.store(false, Ordering::Release);
        outcome
    }

    #[cfg(target_os = "linux")]
    fn poll_until(&self, input: &impl Pollable) -> Spun {
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
            if self.in_flight.load(Ordering::Acquire) > 0 {
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
    fn poll_until(&self, _: &impl Pollable) -> Spun {
        Spun::Expired
    }
}

/// The CPU time the calling thread has run (`CLOCK_THREAD_CPUTIME_ID`), or `None` where it
/// cannot be read.
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

/// Never reached: no spin is built off Linux.
#[cfg(not(target_os = "linux"))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// A spin in whole microseconds from an environment variable (`name`, for the warning):
/// anything else is ignored (with a warning), and the configured spin holds.
pub(crate) fn from_env(name: &str, value: Option<&str>) -> Option<Duration> {
    super::env_number(name, value).map(Duration::from_micros)
}

#[cfg(all(test, target_os = "linux"))]
#[path = "spin_tests.rs"]
mod tests;
