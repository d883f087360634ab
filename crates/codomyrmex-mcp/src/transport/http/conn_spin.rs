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
//! response: its next event comes from the server, not the socket. And only when this
//! connection is the only one with recent traffic: the server's last [`STREAK`] calls all
//! came over it. Other connections' requests wait in their sockets, unseen by a spin on this
//! one, while it holds the worker: at 64 busy connections the workers never idle anyway, and
//! a spin would only delay the others (a first version without this rule spun after most
//! answers there and took about 26 µs of server CPU per call against 15, because a call
//! counts as in flight only while its handler runs). The server's one [`Spin`] decides the
//! rest: no spin while any request of the server is being handled, none after calls
//! overlapped, and one spinner at a time.
//!
//! What it is not: a reader or a timer. It reads nothing (hyper reads as before, from the
//! same readiness), and an idle connection polls once, for at most the bound, then parks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::transport::spin::{Pollable, Spin};

/// How many of the server's last calls must have come over a connection for it to spin.
pub(crate) const STREAK: u64 = 8;

/// A server's spin, shared by its connections.
#[derive(Debug)]
pub(crate) struct ServerSpin {
    pub(crate) spin: Spin,
    /// Answers not followed by a spin because other connections had recent calls: for the
    /// tests.
    #[cfg(test)]
    pub(crate) shared: std::sync::atomic::AtomicUsize,
}

impl ServerSpin {
    pub(crate) fn new(spin: Spin) -> Self {
        Self {
            spin,
            #[cfg(test)]
            shared: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

/// One connection's spin state, on the server's [`ServerSpin`].
#[derive(Debug)]
pub(crate) struct ConnSpin {
    server: Arc<ServerSpin>,
    /// This connection's latest call: its number among the server's calls (high 32 bits,
    /// from [`Spin::enter`]) and how many of this connection's calls in a row were the
    /// server's next one each time (low 32 bits, up to [`STREAK`]). Only this connection
    /// writes it, so the server's calls share no counter but the [`Spin`]'s.
    streak: AtomicU64,
    /// The last response's body had a known size: a spin may follow once it is written.
    armed: AtomicBool,
}

impl ConnSpin {
    pub(crate) fn new(server: Arc<ServerSpin>) -> Self {
        Self {
            server,
            streak: AtomicU64::new(0),
            armed: AtomicBool::new(false),
        }
    }

    /// A request's handler starts: a call in flight for the whole server, and the latest.
    /// A spin the previous response armed is over: its next request came before hyper's
    /// read would have blocked, and the reads hyper makes while this call runs (to notice a
    /// client that went away) are no wait for a request.
    pub(crate) fn call_started(&self) {
        self.armed.store(false, Ordering::Relaxed);
        let number = self.server.spin.enter(true);
        let (last, run) = split(self.streak.load(Ordering::Relaxed));
        // This connection's previous call was the server's last one: the streak goes on.
        let run = if run > 0 && last.wrapping_add(1) == number {
            (run + 1).min(STREAK)
        } else {
            1
        };
        self.streak
            .store(u64::from(number) << 32 | run, Ordering::Relaxed);
    }

    /// The handler [`call_started`](Self::call_started) counted is done.
    pub(crate) fn call_ended(&self) {
        self.server.spin.leave(true);
    }

    /// The server's last [`STREAK`] calls all came over this connection: its own last
    /// [`STREAK`] calls followed each other, and no call has started since.
    fn alone(&self) -> bool {
        let (last, run) = split(self.streak.load(Ordering::Relaxed));
        run >= STREAK && last.wrapping_add(1) == self.server.spin.calls_started()
    }

    /// The handler's response is ready; `whole`: its body's size is known.
    pub(crate) fn response_ready(&self, whole: bool) {
        self.armed.store(whole, Ordering::Relaxed);
    }

    /// hyper's read of `socket` would block; `flushed`: its last write was followed by a
    /// flush (nothing of the connection waits to be written). Spins once per whole response.
    pub(crate) fn read_pending(&self, socket: &impl Pollable, flushed: bool) {
        if !flushed || !self.armed.load(Ordering::Relaxed) {
            return;
        }
        self.armed.store(false, Ordering::Relaxed);
        if !self.alone() {
            #[cfg(test)]
            self.server.shared.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let _ = self.server.spin.wait(socket);
    }
}

/// A streak's call number and run.
fn split(streak: u64) -> (u32, u64) {
    ((streak >> 32) as u32, streak & 0xffff_ffff)
}

#[cfg(all(test, target_os = "linux"))]
#[path = "conn_spin_tests.rs"]
mod tests;
