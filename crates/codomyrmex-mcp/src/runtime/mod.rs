//! The driver side of the sans-IO split: the tokio/OS [`Platform`] the protocol core runs on.
//!
//! The core (`codomyrmex-mcp-core`) never spawns, sleeps, reads the clock or draws OS
//! randomness; it asks a [`Platform`] for it. This module is that platform for programs on
//! tokio: [`TokioRuntime`] (spawn, timers, the blocking pool), [`OsTime`] (the OS clocks, through
//! tokio's, so a paused test clock holds) and [`OsEntropy`] (`getrandom`). It registers
//! [`platform`] as the core's default, so every engine built in a program that links this crate
//! runs on it unless its builder is given another.
//!
//! It is not an executor: the work runs on the tokio runtime the caller is in. The driver
//! ([`drive`], `driver.rs`) carries out the handler calls the engine hands out as
//! [`Invocation`](codomyrmex_mcp_core::invocation::Invocation) values.

mod driver;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

pub use driver::{Drive, drive, run, settle};

use codomyrmex_mcp_core::platform::{
    BoxFuture, DefaultPlatform, Entropy, EntropyError, Platform, Runtime, TimeSource,
};

/// Spawning, timers and the blocking pool of the current tokio runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    fn spawn(&self, work: BoxFuture<'static, ()>) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(work);
            }
            Err(_) => tracing::error!("background work outside a tokio runtime was dropped"),
        }
    }

    fn sleep_until(&self, deadline: Instant) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep_until(tokio::time::Instant::from_std(
            deadline,
        )))
    }

    fn run_blocking(&self, work: BoxFuture<'static, ()>) -> BoxFuture<'static, Result<(), ()>> {
        match tokio::runtime::Handle::try_current() {
            // Off the runtime's workers, inside its context (so the work may use tokio).
            Ok(handle) => {
                let join = tokio::task::spawn_blocking({
                    let handle = handle.clone();
                    move || handle.block_on(work)
                });
                Box::pin(async move { join.await.map_err(|_| ()) })
            }
            // No runtime (a plain `block_on`): run it here.
            Err(_) => work_inline(work),
        }
    }

    fn drive(
        &self,
        invocation: codomyrmex_mcp_core::invocation::Invocation,
    ) -> BoxFuture<'static, Option<codomyrmex_mcp_core::wire::OutgoingMessage>> {
        Box::pin(run(invocation))
    }
}

fn work_inline(work: BoxFuture<'static, ()>) -> BoxFuture<'static, Result<(), ()>> {
    Box::pin(async move {
        let guarded = std::panic::AssertUnwindSafe(work);
        futures_util::FutureExt::catch_unwind(guarded)
            .await
            .map_err(|_| ())
    })
}

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

/// The tokio/OS platform: [`TokioRuntime`], [`OsTime`], [`OsEntropy`].
pub fn platform() -> Platform {
    Platform {
        runtime: Arc::new(TokioRuntime),
        time: Arc::new(OsTime),
        entropy: Arc::new(OsEntropy),
    }
}

inventory::submit! { DefaultPlatform(platform) }
