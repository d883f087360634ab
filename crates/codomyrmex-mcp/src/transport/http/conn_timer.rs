//! A connection's one timer: the deadlines of its requests (hyper's header-read timeout, the
//! body-read timeout) on a single tokio sleep that is re-armed only when a deadline earlier
//! than the armed one is asked for, or when the armed one fires before the deadline it stood
//! for.
//!
//! On a keep-alive connection every request asks for a new deadline a little later than the
//! last one. A fresh tokio sleep per deadline registers and deregisters an entry in tokio's
//! timer wheel per request (under its lock), and each registration earlier than the
//! runtime's next wake-up wakes the thread parked on the I/O driver to re-program its
//! `epoll_wait` timeout: two cross-thread wake-ups per call at one connection. Here a later
//! deadline costs a clock read and two uncontended locks (the armed sleep, already holding
//! the waiters' waker, is not polled again); the armed sleep fires at the
//! earliest deadline that was asked for, and a deadline still in the future when it fires
//! re-arms it at its own. Every deadline still resolves at its instant, not before, not
//! later (give or take tokio's millisecond timer resolution, as before).
//!
//! It is not a general timer: one per connection, polled from the connection's task (other
//! tasks may poll its deadlines too: every waiter is woken when the armed sleep fires).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// The clock: tokio's (which tests can pause), as an `Instant`.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A connection's timer; clones share it.
#[derive(Clone, Default)]
pub(crate) struct ConnTimer(Arc<Shared>);

#[derive(Default)]
struct Shared {
    /// The armed sleep, at or before the earliest pending deadline; made on first use.
    armed: Mutex<Option<Armed>>,
    /// Woken when the armed sleep fires.
    waiters: Arc<Waiters>,
    /// How often the armed sleep was (re-)armed: for the tests.
    #[cfg(test)]
    arms: std::sync::atomic::AtomicUsize,
    /// How often the armed sleep was polled: for the tests.
    #[cfg(test)]
    polls: std::sync::atomic::AtomicUsize,
}

/// The armed sleep, and whether it has been polled with [`Waiters`]' waker since it was last
/// armed: a sleep keeps the waker it was polled with until it fires, so a deadline later
/// than the armed one neither re-arms it nor polls it again.
struct Armed {
    sleep: Pin<Box<tokio::time::Sleep>>,
    registered: bool,
}

/// The tasks waiting on a connection's deadlines, woken all at once.
#[derive(Default)]
struct Waiters(Mutex<Vec<Waker>>);

impl Wake for Waiters {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let waiting = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        for w in waiting {
            w.wake();
        }
    }
}

impl std::fmt::Debug for ConnTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnTimer").finish_non_exhaustive()
    }
}

impl ConnTimer {
    /// A future that resolves at `at`.
    pub(crate) fn deadline(&self, at: Instant) -> Deadline {
        Deadline {
            shared: self.0.clone(),
            at,
        }
    }

    /// A future that resolves `after` from now.
    pub(crate) fn after(&self, after: Duration) -> Deadline {
        self.deadline(now() + after)
    }

    /// How often the connection's tokio sleep was armed or re-armed.
    #[cfg(test)]
    fn arms(&self) -> usize {
        self.0.arms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How often the connection's tokio sleep was polled.
    #[cfg(test)]
    fn polls(&self) -> usize {
        self.0.polls.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One deadline on a [`ConnTimer`].
pub(crate) struct Deadline {
    shared: Arc<Shared>,
    at: Instant,
}

impl Future for Deadline {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if now() >= self.at {
            return Poll::Ready(());
        }
        {
            let mut waiting = self
                .shared
                .waiters
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                waiting.push(cx.waker().clone());
            }
        }
        let at = tokio::time::Instant::from_std(self.at);
        let mut armed = self
            .shared
            .armed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let armed = match &mut *armed {
            Some(armed) => {
                // Earlier than the armed one, or the armed one fired for an earlier
                // deadline: re-armed at this one. A later deadline leaves it be.
                if armed.sleep.deadline() > at || armed.sleep.is_elapsed() {
                    armed.sleep.as_mut().reset(at);
                    armed.registered = false;
                    self.shared.count_arm();
                }
                armed
            }
            None => {
                self.shared.count_arm();
                armed.insert(Armed {
                    sleep: Box::pin(tokio::time::sleep_until(at)),
                    registered: false,
                })
            }
        };
        if !armed.registered {
            self.shared.count_poll();
            let waker = Waker::from(self.shared.waiters.clone());
            // Fired already (the clock moved since the check above): the next poll sees it.
            if armed
                .sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_ready()
            {
                cx.waker().wake_by_ref();
            } else {
                armed.registered = true;
            }
        }
        Poll::Pending
    }
}

impl Shared {
    #[cfg(test)]
    fn count_arm(&self) {
        self.arms.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    #[cfg(not(test))]
    fn count_arm(&self) {}

    #[cfg(test)]
    fn count_poll(&self) {
        self.polls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    #[cfg(not(test))]
    fn count_poll(&self) {}
}

impl hyper::rt::Sleep for Deadline {}

impl hyper::rt::Timer for ConnTimer {
    fn now(&self) -> Instant {
        now()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.after(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(self.deadline(deadline))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<Deadline>() {
            Some(mut d) => d.at = new_deadline,
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(d: &mut Deadline) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(d).poll(&mut cx).is_ready()
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_resolves_at_its_instant_and_later_ones_do_not_re_arm() {
        let timer = ConnTimer::default();
        let start = tokio::time::Instant::now();
        // A request per 10 ms, each with a 300 ms deadline, as on a busy keep-alive
        // connection: the one sleep is armed once.
        for _ in 0..20 {
            let mut d = timer.after(Duration::from_millis(300));
            assert!(!ready(&mut d));
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        assert_eq!(timer.arms(), 1, "re-armed for later deadlines");
        assert_eq!(
            timer.polls(),
            1,
            "the armed sleep polled again for later deadlines"
        );
        // The last one, left waiting, resolves at its instant: 500 ms after the start.
        let before = tokio::time::Instant::now();
        timer.after(Duration::from_millis(300)).await;
        assert_eq!(before.elapsed(), Duration::from_millis(300));
        assert_eq!(start.elapsed(), Duration::from_millis(500));
        // The armed sleep fired once, at 300 ms, for the first deadline, then once more.
        assert_eq!(timer.arms(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_re_arms_and_each_resolves_at_its_own() {
        let timer = ConnTimer::default();
        let start = tokio::time::Instant::now();
        let late = timer.after(Duration::from_millis(500));
        let early = timer.after(Duration::from_millis(200));
        let late = tokio::spawn(async move {
            late.await;
            start.elapsed()
        });
        let early = tokio::spawn(async move {
            early.await;
            start.elapsed()
        });
        assert_eq!(early.await.unwrap(), Duration::from_millis(200));
        assert_eq!(late.await.unwrap(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn hypers_reset_moves_a_deadline() {
        use hyper::rt::Timer as _;
        let timer = ConnTimer::default();
        let start = tokio::time::Instant::now();
        let mut sleep = timer.sleep(Duration::from_millis(100));
        timer.reset(&mut sleep, now() + Duration::from_millis(400));
        sleep.await;
        assert_eq!(start.elapsed(), Duration::from_millis(400));
    }
}
