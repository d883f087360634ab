//! What the core asks of the program it runs in: a [`Runtime`] (spawning, timers, a blocking
//! pool), a [`TimeSource`] (monotonic and wall time) and [`Entropy`] (secure random bytes).
//!
//! The core never reads the clock, sleeps, spawns or draws OS randomness itself (clippy's
//! `disallowed-methods` and the dependency-tree test enforce it): every such effect goes
//! through one of these traits, held in a [`Platform`]. The `codomyrmex-mcp` library
//! provides the tokio/OS implementation and registers it as the default
//! ([`DefaultPlatform`]); tests inject their own (a paused clock, failing entropy).
//!
//! This is not an executor or a timer wheel: each trait is the smallest seam a driver fills.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs the work the core hands out: background tasks, timers and blocking calls.
pub trait Runtime: Send + Sync + 'static {
    /// Runs `work` in the background until it ends.
    fn spawn(&self, work: BoxFuture<'static, ()>);
    /// A future that resolves at `deadline` (at once if it has passed).
    fn sleep_until(&self, deadline: Instant) -> BoxFuture<'static, ()>;
    /// Drives `work` to its end on a thread where it may block (a blocking pool), then
    /// resolves. A panic in `work` resolves to `Err(())`.
    fn run_blocking(&self, work: BoxFuture<'static, ()>) -> BoxFuture<'static, Result<(), ()>>;
    /// Carries out `invocation` (permit, deadline, unwind guard, blocking pool) and resolves
    /// to what its completion returns: the driver's one execution policy, asked for by the
    /// task work the engine still runs in the background itself.
    fn drive(
        &self,
        invocation: crate::invocation::Invocation,
    ) -> BoxFuture<'static, Option<crate::wire::OutgoingMessage>>;
}

/// The time the core works with: monotonic for deadlines and rate limits, wall time for
/// what is shared or sealed (`requestState` expiry, task timestamps).
pub trait TimeSource: Send + Sync + 'static {
    /// The monotonic time now. Never decreases.
    fn now(&self) -> Instant;
    /// The wall-clock time now.
    fn wall(&self) -> SystemTime;
}

/// Why secure random bytes could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no secure randomness is available: {0}")]
pub struct EntropyError(pub String);

/// A source of secure random bytes (the `requestState` key, task ids).
pub trait Entropy: Send + Sync + 'static {
    /// Fills `buf` with secure random bytes, or fails; it never fills them with anything
    /// predictable.
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError>;
}

/// The three seams together, as an engine holds them.
#[derive(Clone)]
pub struct Platform {
    /// Spawning, timers and the blocking pool.
    pub runtime: Arc<dyn Runtime>,
    /// Monotonic and wall time.
    pub time: Arc<dyn TimeSource>,
    /// Secure random bytes.
    pub entropy: Arc<dyn Entropy>,
}

impl std::fmt::Debug for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Platform(..)")
    }
}

/// The platform a program registers as the default (`inventory::submit!`); the
/// `codomyrmex-mcp` library registers its tokio/OS one. The first registered wins.
pub struct DefaultPlatform(pub fn() -> Platform);

inventory::collect!(DefaultPlatform);

impl Platform {
    /// The registered default platform, or [`Platform::unavailable`] when none is linked in.
    pub fn default_platform() -> Platform {
        static DEFAULT: std::sync::OnceLock<Platform> = std::sync::OnceLock::new();
        DEFAULT
            .get_or_init(
                || match inventory::iter::<DefaultPlatform>.into_iter().next() {
                    Some(p) => (p.0)(),
                    None => Platform::unavailable(),
                },
            )
            .clone()
    }

    /// A platform that can do nothing: no spawning (task work fails), no timers (deadlines
    /// never fire), blocking work inline, no entropy (sealing and tasks fail closed) and a
    /// frozen clock. Only for programs that link the core without a runtime.
    pub fn unavailable() -> Platform {
        Platform {
            runtime: Arc::new(NoRuntime),
            time: Arc::new(FrozenTime::starting_at(
                fallback_origin(),
                SystemTime::UNIX_EPOCH,
            )),
            entropy: Arc::new(NoEntropy),
        }
    }
}

/// A [`Runtime`] that cannot run anything in the background.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRuntime;

impl Runtime for NoRuntime {
    fn spawn(&self, _work: BoxFuture<'static, ()>) {
        tracing::error!("no runtime is configured: background work was dropped");
    }
    fn sleep_until(&self, _deadline: Instant) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
    fn run_blocking(&self, work: BoxFuture<'static, ()>) -> BoxFuture<'static, Result<(), ()>> {
        // Inline, on the caller's thread.
        Box::pin(crate::util::catch_unwind(work))
    }
    fn drive(
        &self,
        invocation: crate::invocation::Invocation,
    ) -> BoxFuture<'static, Option<crate::wire::OutgoingMessage>> {
        tracing::error!("no runtime is configured: an invocation was dropped");
        let parts = invocation.into_parts();
        let message = parts
            .complete
            .complete(crate::invocation::Outcome::Cancelled);
        Box::pin(std::future::ready(message))
    }
}

/// [`Entropy`] that always fails: sealing and task creation fail closed.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEntropy;

impl Entropy for NoEntropy {
    fn fill(&self, _buf: &mut [u8]) -> Result<(), EntropyError> {
        Err(EntropyError("no entropy source is configured".into()))
    }
}

/// A [`TimeSource`] standing still, or moved by hand: the virtual clock of tests and of
/// programs without a runtime.
#[derive(Debug)]
pub struct FrozenTime {
    base: Instant,
    wall: SystemTime,
    offset: std::sync::Mutex<Duration>,
}

/// The origin of the frozen clock of [`Platform::unavailable`]: the one clock read in the
/// core, made once, and only when no platform is linked in (then nothing timed works anyway,
/// and an error says so). No decision depends on its value.
#[allow(clippy::disallowed_methods)]
fn fallback_origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(|| {
        tracing::error!("no platform is registered: the core's clock stands still");
        Instant::now()
    })
}

impl FrozenTime {
    /// A clock standing at `mono` and `wall`.
    pub fn starting_at(mono: Instant, wall: SystemTime) -> Self {
        Self {
            base: mono,
            wall,
            offset: std::sync::Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut o = self
            .offset
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *o = o.saturating_add(by);
    }

    fn offset(&self) -> Duration {
        *self
            .offset
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl TimeSource for FrozenTime {
    fn now(&self) -> Instant {
        self.base + self.offset()
    }
    fn wall(&self) -> SystemTime {
        self.wall + self.offset()
    }
}

/// Runs `work` on `runtime`'s blocking pool and returns its output; `Err(())` if it panicked
/// or the runtime dropped it.
pub(crate) async fn blocking<T: Send + 'static>(
    runtime: &dyn Runtime,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, ()> {
    let (tx, rx) = futures_channel::oneshot::channel();
    runtime
        .run_blocking(Box::pin(async move {
            let _ = tx.send(work.await);
        }))
        .await?;
    rx.await.map_err(|_| ())
}

/// The origin of tests' virtual clocks: read once; tests move time by adding to it.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) fn test_origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The platform of the core's own tests: tokio's test runtime (so `start_paused` tests run
/// on virtual time), tokio's clock, and counting entropy (distinct, deterministic ids).
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    pub(crate) struct TokioTestRuntime;

    impl Runtime for TokioTestRuntime {
        fn spawn(&self, work: BoxFuture<'static, ()>) {
            tokio::spawn(work);
        }
        fn sleep_until(&self, deadline: Instant) -> BoxFuture<'static, ()> {
            Box::pin(tokio::time::sleep_until(deadline.into()))
        }
        fn run_blocking(&self, work: BoxFuture<'static, ()>) -> BoxFuture<'static, Result<(), ()>> {
            let handle = tokio::runtime::Handle::current();
            let join = tokio::task::spawn_blocking(move || handle.block_on(work));
            Box::pin(async move { join.await.map_err(|_| ()) })
        }
        fn drive(
            &self,
            invocation: crate::invocation::Invocation,
        ) -> BoxFuture<'static, Option<crate::wire::OutgoingMessage>> {
            Box::pin(crate::invocation::testing::drive_invocation(invocation))
        }
    }

    pub(crate) struct TokioTime;

    impl TimeSource for TokioTime {
        fn now(&self) -> Instant {
            tokio::time::Instant::now().into_std()
        }
        fn wall(&self) -> SystemTime {
            // A fixed epoch moved by tokio's (possibly paused) clock.
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(1_800_000_000)
                + self.now().saturating_duration_since(test_origin())
        }
    }

    /// Distinct bytes on every call; never all zero.
    pub(crate) struct CountingEntropy(AtomicU64);

    impl Entropy for CountingEntropy {
        fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError> {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            let seed = n.to_le_bytes();
            for (i, b) in buf.iter_mut().enumerate() {
                *b = seed[i % 8] ^ (i as u8).wrapping_mul(151).wrapping_add(1);
            }
            Ok(())
        }
    }

    pub(crate) fn platform() -> Platform {
        static ENTROPY: std::sync::LazyLock<Arc<CountingEntropy>> =
            std::sync::LazyLock::new(|| Arc::new(CountingEntropy(AtomicU64::new(1))));
        Platform {
            runtime: Arc::new(TokioTestRuntime),
            time: Arc::new(TokioTime),
            entropy: ENTROPY.clone(),
        }
    }

    inventory::submit! { DefaultPlatform(platform) }
}
