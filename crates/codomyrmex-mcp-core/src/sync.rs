//! Runtime-neutral synchronisation: a [`CancellationToken`], a change counter
//! ([`Generation`]/[`Changes`]) and a bounded [`Broadcast`] of resource updates.
//!
//! These are what the core needs of tokio's `sync` module, built on `event-listener`, so
//! they work under any executor (tokio, smol, a test's `block_on`). They are not general
//! channels: each does the one job the registries and the engine ask of it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use event_listener::Event;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A token that says "stop": cancelled once, seen by every clone, and by every child token.
///
/// The core's replacement of `tokio_util::sync::CancellationToken`, with the same method
/// names (`new`, `cancel`, `is_cancelled`, `cancelled`, `child_token`).
#[derive(Clone, Default)]
pub struct CancellationToken {
    node: Arc<Node>,
}

#[derive(Default)]
struct Node {
    cancelled: AtomicBool,
    event: Event,
    children: Mutex<Vec<Weak<Node>>>,
}

impl Node {
    fn cancel(&self) {
        if self.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        // `notify` allocates the event's state when no one ever listened, and most tokens
        // (one per request) are cancelled unheard. A listener registers, fences, then reads
        // the flag (`cancelled`); this side sets the flag, fences, then counts listeners: one
        // of the two sees the other, so no listener is missed.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.event.total_listeners() > 0 {
            self.event.notify(usize::MAX);
        }
        let children = std::mem::take(&mut *lock(&self.children));
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken")
            .field("is_cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels this token and its children. Idempotent.
    pub fn cancel(&self) {
        self.node.cancel();
    }

    /// Whether the token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.node.cancelled.load(Ordering::Acquire)
    }

    /// Resolves once the token is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            if self.is_cancelled() {
                return;
            }
            let listener = self.node.event.listen();
            // Paired with the fence in `Node::cancel`, which notifies only when it sees a
            // listener: either it sees this one, or this check sees the flag.
            std::sync::atomic::fence(Ordering::SeqCst);
            if self.is_cancelled() {
                return;
            }
            listener.await;
        }
    }

    /// A token cancelled with this one, that can also be cancelled alone.
    pub fn child_token(&self) -> Self {
        let child = Self::new();
        {
            let mut children = lock(&self.node.children);
            if !self.is_cancelled() {
                // Children that are gone make room, so the list tracks the live ones.
                if children.len() >= 16 && children.len().is_power_of_two() {
                    children.retain(|w| w.strong_count() > 0);
                }
                children.push(Arc::downgrade(&child.node));
                return child;
            }
        }
        child.cancel();
        child
    }
}

/// The sending half of a change counter: each [`bump`](Self::bump) is one change that every
/// [`Changes`] hears about (consecutive changes may merge into one wake-up).
#[derive(Debug, Default)]
pub struct Generation {
    shared: Arc<GenShared>,
}

#[derive(Debug, Default)]
struct GenShared {
    value: AtomicU64,
    closed: AtomicBool,
    event: Event,
}

impl Generation {
    /// A counter at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a change and wakes every listener.
    pub fn bump(&self) {
        self.shared.value.fetch_add(1, Ordering::AcqRel);
        self.shared.event.notify(usize::MAX);
    }

    /// The number of changes so far.
    pub fn get(&self) -> u64 {
        self.shared.value.load(Ordering::Acquire)
    }

    /// A listener that has seen every change so far.
    pub fn subscribe(&self) -> Changes {
        Changes {
            seen: self.get(),
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.event.notify(usize::MAX);
    }
}

/// The counter was dropped: no more changes will come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the change source was dropped")]
pub struct Closed;

/// Hears about the changes of one [`Generation`], from the registries' `subscribe`.
#[derive(Debug, Clone)]
pub struct Changes {
    shared: Arc<GenShared>,
    seen: u64,
}

impl Changes {
    /// Resolves at the next change not yet seen (at once if one happened since the last
    /// call), or with [`Closed`] once the source is dropped.
    pub async fn changed(&mut self) -> Result<(), Closed> {
        loop {
            let now = self.shared.value.load(Ordering::Acquire);
            if now != self.seen {
                self.seen = now;
                return Ok(());
            }
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(Closed);
            }
            let listener = self.shared.event.listen();
            let now = self.shared.value.load(Ordering::Acquire);
            if now != self.seen || self.shared.closed.load(Ordering::Acquire) {
                continue;
            }
            listener.await;
        }
    }

    /// Whether a change happened that [`changed`](Self::changed) has not reported.
    pub fn has_changed(&self) -> bool {
        self.shared.value.load(Ordering::Acquire) != self.seen
    }

    /// Treats every change so far as seen.
    pub fn mark_unchanged(&mut self) {
        self.seen = self.shared.value.load(Ordering::Acquire);
    }

    /// The number of changes so far.
    pub fn borrow(&self) -> u64 {
        self.shared.value.load(Ordering::Acquire)
    }
}

/// A bounded broadcast: each receiver sees every value sent after it subscribed, unless it
/// falls more than the capacity behind, when it skips to the oldest value kept
/// ([`Recv::Lagged`]). Sending never waits.
pub struct Broadcast<T> {
    shared: Arc<BcShared<T>>,
}

struct BcShared<T> {
    state: Mutex<BcState<T>>,
    event: Event,
    capacity: usize,
}

struct BcState<T> {
    /// The values kept, the oldest first; `first` is the sequence number of the oldest.
    values: VecDeque<T>,
    first: u64,
    closed: bool,
}

impl<T> std::fmt::Debug for Broadcast<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broadcast")
            .field("capacity", &self.shared.capacity)
            .finish_non_exhaustive()
    }
}

/// What a [`Receiver`] got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recv<T> {
    /// The next value.
    Value(T),
    /// The receiver fell behind and this many values were skipped.
    Lagged(u64),
    /// The sender was dropped and every value was received.
    Closed,
}

impl<T: Clone> Broadcast<T> {
    /// A broadcast keeping at most `capacity` (at least 1) values for slow receivers.
    pub fn new(capacity: usize) -> Self {
        Self {
            shared: Arc::new(BcShared {
                state: Mutex::new(BcState {
                    values: VecDeque::new(),
                    first: 0,
                    closed: false,
                }),
                event: Event::new(),
                capacity: capacity.max(1),
            }),
        }
    }

    /// Sends `value` to every receiver.
    pub fn send(&self, value: T) {
        {
            let mut s = lock(&self.shared.state);
            s.values.push_back(value);
            while s.values.len() > self.shared.capacity {
                s.values.pop_front();
                s.first += 1;
            }
        }
        self.shared.event.notify(usize::MAX);
    }

    /// A receiver of the values sent from now on.
    pub fn subscribe(&self) -> Receiver<T> {
        let s = lock(&self.shared.state);
        Receiver {
            next: s.first + s.values.len() as u64,
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Broadcast<T> {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.shared.event.notify(usize::MAX);
    }
}

/// The receiving half of a [`Broadcast`].
pub struct Receiver<T> {
    shared: Arc<BcShared<T>>,
    next: u64,
}

impl<T> std::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("next", &self.next)
            .finish()
    }
}

impl<T: Clone> Receiver<T> {
    fn try_take(&mut self) -> Option<Recv<T>> {
        let s = lock(&self.shared.state);
        if self.next < s.first {
            let skipped = s.first - self.next;
            self.next = s.first;
            return Some(Recv::Lagged(skipped));
        }
        let index = usize::try_from(self.next - s.first).unwrap_or(usize::MAX);
        if let Some(v) = s.values.get(index) {
            self.next += 1;
            return Some(Recv::Value(v.clone()));
        }
        s.closed.then_some(Recv::Closed)
    }

    /// The next value, a lag report, or [`Recv::Closed`].
    pub async fn recv(&mut self) -> Recv<T> {
        loop {
            if let Some(r) = self.try_take() {
                return r;
            }
            let listener = self.shared.event.listen();
            if let Some(r) = self.try_take() {
                return r;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_executor::block_on;

    #[test]
    fn a_cancelled_parent_cancels_its_children_and_not_the_reverse() {
        let parent = CancellationToken::new();
        let child = parent.child_token();
        let other = parent.child_token();
        other.cancel();
        assert!(!parent.is_cancelled());
        assert!(!child.is_cancelled());
        parent.cancel();
        assert!(child.is_cancelled());
        block_on(child.cancelled());
        assert!(parent.child_token().is_cancelled(), "born cancelled");
    }

    /// A cancellation races a waiter that is registering: the canceller notifies only when
    /// it sees a listener, so every interleaving must still wake the waiter.
    #[test]
    // The race needs a second thread, which the core itself never spawns.
    #[allow(clippy::disallowed_methods)]
    fn a_waiter_registering_as_its_token_is_cancelled_always_wakes() {
        for round in 0..2_000u32 {
            let token = CancellationToken::new();
            let child = token.child_token();
            let (started, start) = std::sync::mpsc::channel();
            let (done, woke) = std::sync::mpsc::channel();
            let waiter = {
                let token = token.clone();
                std::thread::spawn(move || {
                    let _ = started.send(());
                    block_on(token.cancelled());
                    block_on(child.cancelled());
                    let _ = done.send(());
                })
            };
            let _ = start.recv();
            // From at once to well after the waiter is asleep: both orders, and the race.
            for _ in 0..(round % 64) * 64 {
                std::hint::spin_loop();
            }
            token.cancel();
            // A missed wake-up leaves the waiter asleep for good: a minute is a hang.
            let woke = woke.recv_timeout(std::time::Duration::from_secs(60));
            assert!(woke.is_ok(), "a waiter missed its cancellation");
            let _ = waiter.join();
        }
    }

    #[test]
    fn changes_are_heard_once_and_closing_ends_them() {
        let g = Generation::new();
        let mut c = g.subscribe();
        assert!(!c.has_changed());
        g.bump();
        g.bump();
        assert_eq!(block_on(c.changed()), Ok(()));
        assert!(!c.has_changed(), "two quick changes wake once");
        g.bump();
        c.mark_unchanged();
        drop(g);
        assert_eq!(block_on(c.changed()), Err(Closed));
    }

    #[test]
    fn a_slow_receiver_skips_to_the_oldest_kept_value() {
        let b = Broadcast::new(2);
        let mut r = b.subscribe();
        for i in 0..5 {
            b.send(i);
        }
        assert_eq!(block_on(r.recv()), Recv::Lagged(3));
        assert_eq!(block_on(r.recv()), Recv::Value(3));
        assert_eq!(block_on(r.recv()), Recv::Value(4));
        drop(b);
        assert_eq!(block_on(r.recv()), Recv::Closed);
    }
}
