//! The core tests' runtime: a single-threaded executor (futures-executor's `LocalPool`) with a
//! virtual clock, so that the tests drive the core the way a host does, with time as an input.
//!
//! - [`run`] runs a test's future to its end on the current thread. Time stands still unless
//!   the test moves it: [`advance`] runs everything that can run, then moves the clock to each
//!   due timer in turn (running what it wakes) and on to the target. A timer, and so a
//!   handler's deadline or a task's TTL, fires only when the test advances past it.
//! - [`sleep`]/[`sleep_until`] wait on the virtual clock (what a "sleeping" test handler does),
//!   [`spawn`] runs a future beside the test's, and [`idle`] waits until nothing else can run.
//! - When the test's future can make no progress (nothing can run, nothing waits for
//!   [`idle`]) the run panics, naming the virtual time and the pending timers, instead of
//!   hanging: a hang guard needs no timeout.
//!
//! It is not a general runtime: no I/O, no threads, no real time. Every clock read comes from
//! one origin, read once ([`origin`]); the core's own code never reads it (clippy.toml).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures_executor::{LocalPool, LocalSpawner};
use futures_util::task::LocalSpawnExt;

/// How many timer firings one [`advance`] may take before it calls the clock runaway (a timer
/// re-armed at the instant it fires).
const MAX_FIRINGS_PER_ADVANCE: usize = 100_000;

/// The origin of the tests' virtual clocks: the one real clock read of the core's tests, made
/// once; virtual time is this plus what the tests advanced.
#[allow(clippy::disallowed_methods)]
pub(crate) fn origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

struct Runtime {
    spawner: LocalSpawner,
    /// Virtual time since [`origin`].
    elapsed: Cell<Duration>,
    /// Pending timers, by key: when each is due and whom to wake.
    timers: RefCell<BTreeMap<u64, (Instant, Waker)>>,
    next_key: Cell<u64>,
    /// The tasks waiting in [`idle`].
    idle: RefCell<Vec<Waker>>,
    /// How many times the idle waiters were woken.
    idle_rounds: Cell<u64>,
}

impl Runtime {
    fn now(&self) -> Instant {
        origin() + self.elapsed.get()
    }

    /// Moves the clock to `at` (never back) and wakes every timer due then.
    fn move_to(&self, at: Instant) {
        let at = at.max(self.now());
        self.elapsed.set(at.saturating_duration_since(origin()));
        let due: Vec<Waker> = {
            let mut timers = self.timers.borrow_mut();
            let keys: Vec<u64> = timers
                .iter()
                .filter(|(_, (when, _))| *when <= at)
                .map(|(k, _)| *k)
                .collect();
            keys.iter()
                .filter_map(|k| timers.remove(k).map(|(_, w)| w))
                .collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.timers.borrow().values().map(|(at, _)| *at).min()
    }

    /// Wakes the idle waiters; false when there are none.
    fn wake_idle(&self) -> bool {
        let waiters = std::mem::take(&mut *self.idle.borrow_mut());
        if waiters.is_empty() {
            return false;
        }
        self.idle_rounds.set(self.idle_rounds.get() + 1);
        waiters.into_iter().for_each(Waker::wake);
        true
    }

    fn stalled(&self) -> String {
        let mut due: Vec<Duration> = self
            .timers
            .borrow()
            .values()
            .map(|(at, _)| at.saturating_duration_since(origin()))
            .collect();
        due.sort();
        format!(
            "the test is stuck at virtual +{:?}: nothing can run and no timer fires unless the \
             test advances the clock (test_runtime::advance); pending timers at {due:?}",
            self.elapsed.get()
        )
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Runtime>>> = const { RefCell::new(None) };
}

fn current() -> Rc<Runtime> {
    CURRENT
        .with(|c| c.borrow().clone())
        .unwrap_or_else(|| panic!("not inside test_runtime::run"))
}

fn try_current() -> Option<Rc<Runtime>> {
    CURRENT
        .try_with(|c| c.try_borrow().ok().and_then(|c| c.clone()))
        .ok()
        .flatten()
}

/// The runtime of one [`run`], installed on its thread until dropped; dropping it drops the
/// spawned tasks first, while their timers can still deregister.
struct Installed {
    pool: Option<LocalPool>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        drop(self.pool.take());
        CURRENT.with(|c| c.borrow_mut().take());
    }
}

/// A waker that sets a flag: whether the test's own future was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Runs `future` to its end on this thread, with spawned tasks beside it and the clock at
/// [`origin`]. Panics (naming the pending timers) when it can make no progress.
pub(crate) fn run<F: Future>(future: F) -> F::Output {
    let pool = LocalPool::new();
    let runtime = Rc::new(Runtime {
        spawner: pool.spawner(),
        elapsed: Cell::new(Duration::ZERO),
        timers: RefCell::default(),
        next_key: Cell::new(0),
        idle: RefCell::default(),
        idle_rounds: Cell::new(0),
    });
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        assert!(c.is_none(), "test_runtime::run does not nest");
        *c = Some(runtime.clone());
    });
    let mut installed = Installed { pool: Some(pool) };
    let woken = Arc::new(Flag(AtomicBool::new(true)));
    let waker = Waker::from(woken.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if woken.0.swap(false, Ordering::SeqCst)
            && let Poll::Ready(out) = future.as_mut().poll(&mut cx)
        {
            return out;
        }
        if let Some(pool) = installed.pool.as_mut() {
            pool.run_until_stalled();
        }
        if !woken.0.load(Ordering::SeqCst) && !runtime.wake_idle() {
            panic!("{}", runtime.stalled());
        }
    }
}

/// The virtual time now: [`origin`] plus what the test advanced ([`origin`] outside [`run`]).
pub(crate) fn now() -> Instant {
    try_current().map_or_else(origin, |rt| rt.now())
}

/// Virtual time since [`origin`].
pub(crate) fn elapsed() -> Duration {
    now().saturating_duration_since(origin())
}

/// Runs `future` beside the test's; its panic ends the test.
pub(crate) fn spawn<T: 'static>(future: impl Future<Output = T> + 'static) -> JoinHandle<T> {
    let slot = Rc::new(RefCell::new(Joined {
        work: Some(Box::pin(future)),
        output: None,
        done: false,
        waker: None,
    }));
    let task = slot.clone();
    current()
        .spawner
        .spawn_local(std::future::poll_fn(move |cx| {
            // Out of the slot while it runs, so that it may look at its own handle.
            let Some(mut work) = task.borrow_mut().work.take() else {
                return Poll::Ready(());
            };
            let polled = work.as_mut().poll(cx);
            let mut joined = task.borrow_mut();
            match polled {
                Poll::Pending => {
                    joined.work = Some(work);
                    Poll::Pending
                }
                Poll::Ready(out) => {
                    joined.output = Some(out);
                    joined.done = true;
                    if let Some(w) = joined.waker.take() {
                        w.wake();
                    }
                    Poll::Ready(())
                }
            }
        }))
        .unwrap_or_else(|e| panic!("the test runtime is shut down: {e}"));
    JoinHandle(slot)
}

/// A spawned future and what it left for its [`JoinHandle`].
struct Joined<T> {
    work: Option<Pin<Box<dyn Future<Output = T>>>>,
    output: Option<T>,
    done: bool,
    waker: Option<Waker>,
}

/// The output of a [`spawn`]ed future, once it ends. Dropping it does not stop the task;
/// [`abort`](Self::abort) does.
pub(crate) struct JoinHandle<T>(Rc<RefCell<Joined<T>>>);

impl<T> JoinHandle<T> {
    /// Whether the task has ended.
    pub(crate) fn is_finished(&self) -> bool {
        self.0.borrow().done
    }

    /// Drops the task's future now, wherever it waits.
    pub(crate) fn abort(self) {
        let work = self.0.borrow_mut().work.take();
        drop(work);
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut joined = self.0.borrow_mut();
        if joined.done {
            return Poll::Ready(
                joined
                    .output
                    .take()
                    .unwrap_or_else(|| panic!("a JoinHandle polled after it was ready")),
            );
        }
        joined.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Waits until the virtual clock reaches `at`: until a test advances it that far.
pub(crate) fn sleep_until(at: Instant) -> Sleep {
    Sleep {
        at: Some(at),
        key: None,
    }
}

/// Waits `by` on the virtual clock (forever, if that is past the clock's range).
pub(crate) fn sleep(by: Duration) -> Sleep {
    Sleep {
        at: now().checked_add(by),
        key: None,
    }
}

/// A wait on the virtual clock ([`sleep`], [`sleep_until`]).
pub(crate) struct Sleep {
    at: Option<Instant>,
    key: Option<u64>,
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let rt = current();
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        if rt.now() >= at {
            if let Some(key) = self.key.take() {
                rt.timers.borrow_mut().remove(&key);
            }
            return Poll::Ready(());
        }
        let key = *self.key.get_or_insert_with(|| {
            let k = rt.next_key.get();
            rt.next_key.set(k + 1);
            k
        });
        rt.timers.borrow_mut().insert(key, (at, cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(key), Some(rt)) = (self.key, try_current())
            && let Ok(mut timers) = rt.timers.try_borrow_mut()
        {
            timers.remove(&key);
        }
    }
}

/// Resolves once nothing else can run: every spawned task is waiting (on the clock, a lock, a
/// channel) or done.
pub(crate) fn idle() -> Idle {
    Idle { round: None }
}

/// See [`idle`].
pub(crate) struct Idle {
    round: Option<u64>,
}

impl Future for Idle {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let rt = current();
        let now = rt.idle_rounds.get();
        match self.round {
            Some(round) if now > round => return Poll::Ready(()),
            Some(_) => {}
            None => self.round = Some(now),
        }
        rt.idle.borrow_mut().push(cx.waker().clone());
        Poll::Pending
    }
}

/// Moves the virtual clock forward by `by`: runs what can run, then fires each timer due by
/// then, in order (running what each wakes), and stops at `now() + by` with everything run.
pub(crate) async fn advance(by: Duration) {
    let target = now()
        .checked_add(by)
        .unwrap_or_else(|| panic!("advance({by:?}) leaves the clock's range"));
    let mut firings = 0;
    loop {
        idle().await;
        let rt = current();
        match rt.next_timer() {
            Some(at) if at <= target => {
                firings += 1;
                assert!(
                    firings < MAX_FIRINGS_PER_ADVANCE,
                    "timers keep firing at virtual +{:?}",
                    rt.elapsed.get()
                );
                rt.move_to(at);
            }
            _ => break,
        }
    }
    current().move_to(target);
    idle().await;
}

/// `future`'s output, the clock moving as [`advance`] moves it, up to `by`, while the future
/// waits; `None` if it is still pending once `by` has passed. The clock stops where the
/// future finished.
pub(crate) async fn advancing<F: Future>(by: Duration, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut clock = std::pin::pin!(advance(by));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        clock.as_mut().poll(cx).map(|()| None)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[test]
    fn timers_fire_only_when_the_clock_is_advanced_past_them() {
        run(async {
            let fired = Rc::new(Cell::new(Vec::new()));
            for ms in [30, 10, 20] {
                let fired = fired.clone();
                spawn(async move {
                    sleep(Duration::from_millis(ms)).await;
                    let mut v = fired.take();
                    v.push((ms, elapsed()));
                    fired.set(v);
                });
            }
            idle().await;
            assert!(fired.take().is_empty(), "nothing fires while time stands");
            advance(Duration::from_millis(15)).await;
            assert_eq!(fired.take(), [(10, Duration::from_millis(10))]);
            assert_eq!(elapsed(), Duration::from_millis(15));
            advance(Duration::from_millis(100)).await;
            assert_eq!(
                fired.take(),
                [
                    (20, Duration::from_millis(20)),
                    (30, Duration::from_millis(30))
                ],
                "in order, each at its own instant"
            );
        });
    }

    #[test]
    fn a_stuck_test_panics_naming_its_timers_instead_of_hanging() {
        let stuck = std::panic::catch_unwind(|| {
            run(async {
                spawn(sleep(Duration::from_secs(30)));
                std::future::pending::<()>().await;
            })
        })
        .expect_err("a future that can never finish");
        let message = stuck.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("stuck at virtual +0ns"), "{message}");
        assert!(message.contains("[30s]"), "{message}");
        // The thread's runtime is gone with the run: the next one starts afresh.
        assert_eq!(run(async { elapsed() }), Duration::ZERO);
    }

    #[test]
    fn spawned_tasks_run_and_dropped_timers_do_not_fire() {
        let count = Arc::new(AtomicUsize::new(0));
        let total = run({
            let count = count.clone();
            async move {
                let c = count.clone();
                let task = spawn(async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    7
                });
                let dropped = sleep(Duration::from_secs(1));
                drop(dropped);
                advance(Duration::from_secs(2)).await;
                task.await + count.load(Ordering::SeqCst)
            }
        });
        assert_eq!(total, 8);
    }
}
