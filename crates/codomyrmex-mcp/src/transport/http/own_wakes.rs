//! A connection future that wakes itself while it is being polled is polled again at once,
//! by the same poll, instead of being handed back to tokio.
//!
//! Serving one request, hyper's connection wakes its own task several times: the handler
//! asks for the body (hyper's "want" signal wakes the connection), the connection reads it
//! and hands it to the handler (which wakes it again). tokio treats a task woken while it
//! runs as one that yielded: it goes to the back of the run queue and another worker is
//! woken to steal it, so at one connection every call crossed threads (a `futex` or an
//! `eventfd` write to wake the other worker, and the call then ran there). [`OwnWakes`]
//! gives the inner future a waker of its own: a wake-up that arrives during the poll only
//! marks the poll to run again; one that arrives between polls (the socket, a timer, another
//! task) wakes the task as before. A future that keeps waking itself is polled again at
//! most [`REPOLLS`] times per poll, then yields to tokio, so it cannot starve other tasks.
//!
//! It changes when the future is polled, never what it does: every wake-up still leads to a
//! poll.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Polls again at most this many times per poll before yielding to tokio.
const REPOLLS: usize = 32;

/// Not being polled.
const IDLE: u8 = 0;
/// Being polled.
const POLLING: u8 = 1;
/// Being polled, and woken since the poll began.
const WOKEN: u8 = 2;

/// The waker handed to the inner future.
#[derive(Default)]
struct Signal {
    state: AtomicU8,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // During a poll: that poll runs again. Otherwise: the task is woken.
        if self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
            && self.state.load(Ordering::Acquire) == IDLE
        {
            self.task.wake();
        }
    }
}

pin_project_lite::pin_project! {
    /// `inner`, its own wake-ups absorbed (see the [module docs](self)).
    pub(crate) struct OwnWakes<F> {
        #[pin]
        inner: F,
        signal: Arc<Signal>,
        waker: Waker,
    }
}

impl<F: Future> OwnWakes<F> {
    pub(crate) fn new(inner: F) -> Self {
        let signal = Arc::new(Signal::default());
        let waker = Waker::from(signal.clone());
        Self {
            inner,
            signal,
            waker,
        }
    }
}

impl<F: Future> Future for OwnWakes<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.signal.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(this.waker);
        for _ in 0..REPOLLS {
            this.signal.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = this.inner.as_mut().poll(&mut inner_cx) {
                this.signal.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            if this
                .signal
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Pending;
            }
            // Woken during the poll: poll again.
        }
        this.signal.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Wakes itself on each of its first `n` polls, then is ready.
    struct SelfWaking {
        left: usize,
        polls: Arc<AtomicUsize>,
    }

    impl Future for SelfWaking {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            if self.left == 0 {
                return Poll::Ready(());
            }
            self.left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// Counts the wake-ups of the task that polls it.
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn own_wake_ups_are_polled_again_without_waking_the_task() {
        let polls = Arc::new(AtomicUsize::new(0));
        let task = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(OwnWakes::new(SelfWaking {
            left: 3,
            polls: polls.clone(),
        }));
        assert!(f.as_mut().poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::Relaxed), 4);
        assert_eq!(task.0.load(Ordering::Relaxed), 0, "the task was woken");
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_to_the_task() {
        let polls = Arc::new(AtomicUsize::new(0));
        let task = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(OwnWakes::new(SelfWaking {
            left: usize::MAX,
            polls: polls.clone(),
        }));
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::Relaxed), REPOLLS);
        assert_eq!(task.0.load(Ordering::Relaxed), 1, "yielded with a wake-up");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wake_up_between_polls_wakes_the_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let waiting = tokio::spawn(OwnWakes::new(rx));
        tokio::task::yield_now().await;
        tx.send(7).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), 7);
    }
}
