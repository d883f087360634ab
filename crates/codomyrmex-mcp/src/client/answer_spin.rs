//! A client's side of the input spin (the transports' `Spin`): once a request is written
//! and flushed and the read of its answer would block, the connection's socket is polled for
//! up to the spin before the read returns `Pending` and the worker may park.
//!
//! Why: a client between a server and its caller (the gateway in front of a REST API) has
//! nothing to do while its one call waits for the answer. Parked in `epoll_wait`, its vCPU
//! halts, and the answer pays for waking it: tens of microseconds on a VM, more than a local
//! server takes to answer. Spinning, the answer is readable when the worker parks, so
//! `epoll_wait` returns at once.
//!
//! The rules are the server's (`transport::spin`), the waiting call aside: no spin while another call
//! of the same [`AnswerSpin`] is in flight, none after calls overlapped, one spinner at a time,
//! bounded, and it reads nothing (the read that follows is the one that would have come).
//! One more, for a slow server (a REST API across a network): after a spin the answer did
//! not end, the next [`REST_AFTER_EXPIRED`] requests are not spun for, so such a server costs
//! at most one bound of CPU per that many calls.
//!
//! [`SpinningTcp`] wraps a connection's TCP socket (under TLS, if any) and tells the spin
//! when a request starts (its first write), when it is flushed, and when its answer begins
//! (the first read that brings bytes).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::transport::spin::{Pollable, Spin, Spun};

/// The spin when nothing else is said: the server's default input spin.
pub const DEFAULT_ANSWER_SPIN: Duration = Duration::from_micros(100);

/// The environment variable that overrides the spin (whole microseconds; `0` turns it off).
pub const ANSWER_SPIN_ENV: &str = "CODOMYRMEX_MCP_ANSWER_SPIN_US";

/// Requests not spun for after a spin the answer did not end.
pub const REST_AFTER_EXPIRED: u32 = 15;

/// The spin of one client's connections (shared by them, as a server's by its connections).
#[derive(Debug)]
pub struct AnswerSpin {
    spin: Spin,
    /// Requests still to go unspun after an expired spin.
    resting: AtomicU32,
}

impl AnswerSpin {
    /// A spin of `spin` (at most [`McpServerConfig::MAX_INPUT_SPIN`]), unless
    /// [`ANSWER_SPIN_ENV`] says otherwise; `None` when it is zero, and off Linux.
    ///
    /// [`McpServerConfig::MAX_INPUT_SPIN`]: crate::McpServerConfig::MAX_INPUT_SPIN
    pub fn new(spin: Duration) -> Option<Arc<Self>> {
        let spin = crate::transport::spin::from_env(
            ANSWER_SPIN_ENV,
            std::env::var(ANSWER_SPIN_ENV).ok().as_deref(),
        )
        .unwrap_or(spin);
        Some(Arc::new(Self {
            spin: Spin::new(spin)?,
            resting: AtomicU32::new(0),
        }))
    }

    /// The read of a flushed request's answer would block: spin, unless resting.
    fn answer_pending(&self, socket: &impl Pollable) {
        let resting = self.resting.load(Ordering::Relaxed);
        if resting > 0 {
            self.resting.store(resting - 1, Ordering::Relaxed);
            return;
        }
        if self.spin.wait_for_answer(socket) == Spun::Expired {
            self.resting.store(REST_AFTER_EXPIRED, Ordering::Relaxed);
        }
    }

    /// What the spins did, for the tests.
    #[cfg(test)]
    fn seen(&self) -> &crate::transport::spin::Seen {
        &self.spin.seen
    }
}

/// Where a connection's current request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exchange {
    /// No request written since the last answer began.
    Idle,
    /// A request is being written (counted as a call in flight).
    Writing,
    /// Written and flushed: its answer is awaited (still counted); not yet spun for.
    Awaiting,
    /// Its answer was spun for once; still counted until it begins.
    Spun,
}

/// A connection's socket, telling its client's [`AnswerSpin`] what the spin needs.
#[derive(Debug)]
pub struct SpinningTcp {
    inner: TcpStream,
    spin: Option<Arc<AnswerSpin>>,
    exchange: Exchange,
}

impl SpinningTcp {
    /// `inner`, on `spin` if there is one (without, it only passes the calls on).
    pub fn new(inner: TcpStream, spin: Option<Arc<AnswerSpin>>) -> Self {
        Self {
            inner,
            spin,
            exchange: Exchange::Idle,
        }
    }

    /// The request in flight is over (its answer began, or the stream is dropped).
    fn answered(&mut self) {
        if self.exchange != Exchange::Idle {
            self.exchange = Exchange::Idle;
            if let Some(spin) = &self.spin {
                spin.spin.leave(true);
            }
        }
    }

    /// A write moved bytes: a request starts, if none was in flight.
    fn wrote(&mut self) {
        match self.exchange {
            Exchange::Idle => {
                if let Some(spin) = &self.spin {
                    spin.spin.enter(true);
                }
                self.exchange = Exchange::Writing;
            }
            Exchange::Awaiting | Exchange::Spun => self.exchange = Exchange::Writing,
            Exchange::Writing => {}
        }
    }
}

impl Drop for SpinningTcp {
    fn drop(&mut self) {
        self.answered();
    }
}

impl AsyncRead for SpinningTcp {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let out = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &out {
            // The answer began (or the stream ended, or failed): the call is no longer waiting.
            Poll::Ready(_) => self.answered(),
            // Interest in the socket is registered: after the spin, the answer wakes it.
            Poll::Pending => {
                if self.exchange == Exchange::Awaiting {
                    self.exchange = Exchange::Spun;
                    if let Some(spin) = &self.spin {
                        spin.answer_pending(&self.inner);
                    }
                }
            }
        }
        out
    }
}

impl AsyncWrite for SpinningTcp {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(out, Poll::Ready(Ok(n)) if n > 0) {
            self.wrote();
        }
        out
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(out, Poll::Ready(Ok(n)) if n > 0) {
            self.wrote();
        }
        out
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let out = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(out, Poll::Ready(Ok(()))) && self.exchange == Exchange::Writing {
            self.exchange = Exchange::Awaiting;
        }
        out
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "answer_spin_tests.rs"]
mod tests;
