//! A keep-alive connection's side of the input spin ([`Spin`], shared with stdio): once a
//! whole response is written and hyper finds no next request on the socket, the socket is
//! polled for up to `http_spin` before the read returns `Pending` and the worker may park.
//!
//! At one connection the worker has nothing else to do between a response and the client's
//! next request; parked in `epoll_wait`, its vCPU halts and the next request pays the
//! wake-up. Spinning, the request is readable when the worker parks, so `epoll_wait` returns
//! at once and the connection is polled again on the same thread.
//!
//! When: the read that would block comes after a response whose body had a known size (a
//! JSON answer, an error, `202`: the message ends with it) and after hyper's last write was
//! flushed, so nothing of the connection waits to be written. Not after a streamed (SSE)
//! response: its next event comes from the server, not the socket. The server's one [`Spin`]
//! decides the rest: no spin while any request of the server is being handled, none after
//! calls of several connections overlapped (at 64 busy connections the workers never idle,
//! and a spin would hold a worker the other connections need), and one spinner at a time.
//!
//! What it is not: a reader or a timer. It reads nothing (hyper reads as before, from the
//! same readiness), and an idle connection polls once, for at most the bound, then parks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::transport::spin::Spin;

/// What the spin polls: a socket's descriptor (on Linux; elsewhere there is no spin).
#[cfg(target_os = "linux")]
pub(crate) trait Socket: std::os::fd::AsFd {}
#[cfg(target_os = "linux")]
impl<T: std::os::fd::AsFd> Socket for T {}
/// What the spin polls: nothing here (no spin on this platform).
#[cfg(not(target_os = "linux"))]
pub(crate) trait Socket {}
#[cfg(not(target_os = "linux"))]
impl<T> Socket for T {}

/// One connection's spin state, on the server's [`Spin`].
#[derive(Debug)]
pub(crate) struct ConnSpin {
    spin: Arc<Spin>,
    /// The last response's body had a known size: a spin may follow once it is written.
    armed: AtomicBool,
}

impl ConnSpin {
    pub(crate) fn new(spin: Arc<Spin>) -> Self {
        Self {
            spin,
            armed: AtomicBool::new(false),
        }
    }

    /// A request's handler starts: a call in flight for the whole server.
    pub(crate) fn call_started(&self) {
        self.spin.enter(true);
    }

    /// The handler [`call_started`](Self::call_started) counted is done.
    pub(crate) fn call_ended(&self) {
        self.spin.leave(true);
    }

    /// The handler's response is ready; `whole`: its body's size is known.
    pub(crate) fn response_ready(&self, whole: bool) {
        self.armed.store(whole, Ordering::Relaxed);
    }

    /// hyper's read of `socket` would block; `flushed`: its last write was followed by a
    /// flush (nothing of the connection waits to be written). Spins once per whole response.
    pub(crate) fn read_pending(&self, socket: &impl Socket, flushed: bool) {
        if !flushed || !self.armed.load(Ordering::Relaxed) {
            return;
        }
        self.armed.store(false, Ordering::Relaxed);
        #[cfg(target_os = "linux")]
        let _ = self.spin.wait(socket);
        #[cfg(not(target_os = "linux"))]
        {
            let _ = socket;
            match *self.spin {}
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "conn_spin_tests.rs"]
mod tests;
