//! The driver side of the sans-IO split, on tokio: the [`Platform`] the protocol core takes
//! its inputs from, and the driver that carries out what it hands out.
//!
//! The core (`codomyrmex-mcp-core`) never spawns, sleeps, reads the clock or draws OS
//! randomness. Time and entropy come in through a [`Platform`]: [`OsTime`] (the OS clocks,
//! through tokio's, so a paused test clock holds) and [`OsEntropy`] (`getrandom`); this module
//! registers [`platform`] as the core's default, so every engine built in a program that
//! links this crate uses it unless its builder is given another. Work and timers come out as
//! values: the core's driver ([`codomyrmex_mcp_core::driver`]) carries out the handler calls
//! the engine hands out as [`Invocation`](codomyrmex_mcp_core::invocation::Invocation)s, under
//! the one execution policy, and keeps the engine's timer; `driver.rs` runs it on tokio
//! ([`Tokio`], registered as the core's default runtime) behind [`drive`] and [`settle`].
//!
//! It is not an executor: the work runs on the tokio runtime the caller is in.

mod change_bridge;
mod driver;
mod task_sync;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

pub use change_bridge::{ChangeBridgeHandle, spawn_change_bridge};
pub use driver::{Drive, TOKIO, Tokio, drive, settle};
pub use task_sync::{TaskSyncHandle, TaskWakeups, spawn_task_sync, spawn_task_sync_woken};

use codomyrmex_mcp_core::platform::{DefaultPlatform, Entropy, EntropyError, Platform, TimeSource};

/// The OS clocks. Monotonic time is tokio's, so tests with a paused clock see virtual time.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsTime;

impl TimeSource for OsTime {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The OS's secure randomness (`getrandom`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, buf: &mut [u8]) -> Result<(), EntropyError> {
        getrandom::fill(buf).map_err(|e| EntropyError(e.to_string()))
    }
}

/// The tokio/OS platform: [`OsTime`], [`OsEntropy`].
pub fn platform() -> Platform {
    Platform {
        time: Arc::new(OsTime),
        entropy: Arc::new(OsEntropy),
    }
}

inventory::submit! { DefaultPlatform(platform) }
