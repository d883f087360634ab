//! What the core takes in from the program it runs in: a [`TimeSource`] (monotonic and wall
//! time) and [`Entropy`] (secure random bytes), and [`Timestamp`], the `now` a message is
//! handled at (`Engine::handle_at`). Every decision `handle` makes synchronously uses that
//! `now`; the `TimeSource` is read only where a time is needed later, inside work the engine
//! hands out (a task's `lastUpdatedAt`, a `requestState` sealed when a round ends, a
//! store read's continuation), and by the entry points without `_at`, once, to make the
//! `now` they handle at.
//!
//! The core never reads the clock or draws OS randomness itself (clippy's `disallowed-methods`
//! and the dependency-tree test enforce it): both come in through these traits, held in a
//! [`Platform`]. It cannot spawn or sleep at all: handler work leaves the engine as
//! [`Invocation`](crate::invocation::Invocation) values and timers as
//! [`Timers`](crate::invocation::Timers), which a driver carries out. The `codomyrmex-mcp`
//! library provides the tokio/OS implementation and registers it as the default
//! ([`DefaultPlatform`]); tests inject their own (a virtual clock, failing entropy).
//!
//! This is not an executor or a timer wheel: each trait is the smallest seam a host fills.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The time the core works with: monotonic for deadlines and rate limits, wall time for
/// what is shared or sealed (`requestState` expiry, task timestamps).
pub trait TimeSource: Send + Sync + 'static {
    /// The monotonic time now. Never decreases.
    fn now(&self) -> Instant;
    /// The wall-clock time now.
    fn wall(&self) -> SystemTime;
}

/// An instant as the core takes it in: what [`Engine::handle_at`](crate::engine::Engine::handle_at)
/// and the other `_at` entry points are handled at. Monotonic time for deadlines, TTLs and
/// rate limits; wall time for what is shared or sealed (`requestState` expiry, task
/// timestamps). Plain data: making one reads no clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    /// Monotonic time.
    pub mono: Instant,
    /// Wall-clock time.
    pub wall: SystemTime,
}

impl Timestamp {
    /// Both times as `time` tells them now.
    pub fn of(time: &dyn TimeSource) -> Self {
        Self {
            mono: time.now(),
            wall: time.wall(),
        }
    }
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

/// The two inputs together, as an engine holds them.
#[derive(Clone)]
pub struct Platform {
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

    /// A platform with no entropy (sealing and tasks fail closed) and a frozen clock. Only
    /// for programs that link the core without a host.
    pub fn unavailable() -> Platform {
        Platform {
            time: Arc::new(FrozenTime::starting_at(
                fallback_origin(),
                SystemTime::UNIX_EPOCH,
            )),
            entropy: Arc::new(NoEntropy),
        }
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

/// The origin of tests' virtual clocks: read once; tests move time by adding to it.
#[cfg(test)]
pub(crate) fn test_origin() -> Instant {
    crate::test_runtime::origin()
}

/// The platform of the core's own tests: the tests' virtual clock (`crate::test_runtime`,
/// moved only by the tests) and counting entropy (distinct, deterministic ids).
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// The virtual clock of the test running on this thread.
    pub(crate) struct VirtualTime;

    impl TimeSource for VirtualTime {
        fn now(&self) -> Instant {
            crate::test_runtime::now()
        }
        fn wall(&self) -> SystemTime {
            // A fixed epoch moved by the virtual clock.
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(1_800_000_000)
                + crate::test_runtime::elapsed()
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
            time: Arc::new(VirtualTime),
            entropy: ENTROPY.clone(),
        }
    }

    inventory::submit! { DefaultPlatform(platform) }
}
