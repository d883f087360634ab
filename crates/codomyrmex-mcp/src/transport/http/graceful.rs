//! Graceful close of a server's connections: when the server stops, each open connection
//! finishes the request it is on and closes, and the server waits until all have.
//!
//! hyper-util's `GracefulShutdown` does this with a `tokio::sync::watch` channel that every
//! connection future polls on each of its own polls. A `watch` waiter that is already
//! registered locks the channel's waiter list to be polled again, and that list is one for
//! all connections: two polls a call, each a lock on a cache line every worker writes. Here
//! a connection's poll reads one flag that is written once, at shutdown; its waker is
//! registered in a slot of its own, and again only when the task's waker changes.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_util::task::AtomicWaker;
use hyper_util::server::graceful::GracefulConnection;

/// The server's side: watches connections, and closes them all.
#[derive(Default)]
pub(crate) struct Graceful {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Set once, when the server stops.
    closing: AtomicBool,
    /// The open connections' wakers, by connection.
    open: Mutex<Open>,
    /// Woken when the last connection closes after `closing` was set.
    all_closed: tokio::sync::Notify,
}

#[derive(Default)]
struct Open {
    next: u64,
    wakers: HashMap<u64, Arc<AtomicWaker>>,
    /// Wakers registered so far: for the tests.
    #[cfg(test)]
    registered: usize,
}

impl Inner {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Graceful {
    /// `conn`, asked to close gracefully (its request finished, then closed) once
    /// [`shutdown`](Self::shutdown) is called.
    pub(crate) fn watch<C: GracefulConnection>(&self, conn: C) -> Watched<C> {
        let waker = Arc::new(AtomicWaker::new());
        let id = {
            let mut open = self.inner.open();
            let id = open.next;
            open.next += 1;
            open.wakers.insert(id, waker.clone());
            id
        };
        Watched {
            conn,
            slot: Slot {
                inner: self.inner.clone(),
                id,
                waker,
                last: None,
            },
            asked: false,
        }
    }

    /// Asks every watched connection to close, and resolves once all have (those watched
    /// later are asked at their first poll).
    pub(crate) async fn shutdown(&self) {
        self.inner.closing.store(true, Ordering::SeqCst);
        let wakers: Vec<Arc<AtomicWaker>> = self.inner.open().wakers.values().cloned().collect();
        for w in wakers {
            w.wake();
        }
        loop {
            let closed = self.inner.all_closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            if self.inner.open().wakers.is_empty() {
                return;
            }
            closed.await;
        }
    }

    /// Connections watched and not yet ended.
    #[cfg(test)]
    fn open_count(&self) -> usize {
        self.inner.open().wakers.len()
    }

    /// Wakers registered so far.
    #[cfg(test)]
    fn registered(&self) -> usize {
        self.inner.open().registered
    }
}

/// A watched connection's place in [`Graceful`]: removed when the connection ends.
struct Slot {
    inner: Arc<Inner>,
    id: u64,
    waker: Arc<AtomicWaker>,
    /// The waker last registered in `waker`.
    last: Option<Waker>,
}

impl Slot {
    /// Registers `waker` unless it wakes the same task as the one registered.
    fn register(&mut self, waker: &Waker) {
        if self.last.as_ref().is_some_and(|w| w.will_wake(waker)) {
            return;
        }
        self.waker.register(waker);
        self.last = Some(waker.clone());
        #[cfg(test)]
        {
            self.inner.open().registered += 1;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let empty = {
            let mut open = self.inner.open();
            open.wakers.remove(&self.id);
            open.wakers.is_empty()
        };
        if empty && self.inner.closing.load(Ordering::SeqCst) {
            self.inner.all_closed.notify_waiters();
        }
    }
}

pin_project_lite::pin_project! {
    /// A connection under [`Graceful`].
    pub(crate) struct Watched<C> {
        #[pin]
        conn: C,
        slot: Slot,
        // Whether the connection was asked to close.
        asked: bool,
    }
}

impl<C: GracefulConnection> Future for Watched<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let mut this = self.project();
        if !*this.asked {
            // Registered before the flag is read: a shutdown that sets it after this read
            // wakes the waker registered here.
            this.slot.register(cx.waker());
            if this.slot.inner.closing.load(Ordering::SeqCst) {
                *this.asked = true;
                this.conn.as_mut().graceful_shutdown();
            }
        }
        this.conn.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::time::Duration;

    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A hyper HTTP/1 connection on one end of a pipe, answering every request with `ok`;
    /// the other end, for the test's client.
    fn connection() -> (
        impl GracefulConnection<Error = hyper::Error> + Send + 'static,
        tokio::io::DuplexStream,
    ) {
        let (server, client) = tokio::io::duplex(4096);
        let svc = hyper::service::service_fn(|_req| async {
            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .keep_alive(true)
            .serve_connection(TokioIo::new(server), svc);
        (conn, client)
    }

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";

    async fn read_response(client: &mut tokio::io::DuplexStream) -> String {
        let mut buf = vec![0; 1024];
        let n = client.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[tokio::test]
    async fn shutdown_closes_idle_keep_alive_connections_and_waits_for_them() {
        let graceful = Graceful::default();
        let (conn, mut client) = connection();
        let served = tokio::spawn(graceful.watch(conn));
        client.write_all(REQUEST).await.unwrap();
        assert!(read_response(&mut client).await.ends_with("ok"));
        assert_eq!(graceful.open_count(), 1);
        // Idle between requests: asked to close, it closes, and shutdown resolves.
        tokio::time::timeout(Duration::from_secs(5), graceful.shutdown())
            .await
            .expect("shutdown waited for a connection that should have closed");
        assert!(served.await.unwrap().is_ok());
        assert_eq!(graceful.open_count(), 0);
        let mut rest = Vec::new();
        assert_eq!(client.read_to_end(&mut rest).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn shutdown_waits_for_a_connection_that_is_still_open() {
        let graceful = Graceful::default();
        // Watched, never polled: it cannot close, so shutdown cannot resolve.
        let (conn, _client) = connection();
        let watched = graceful.watch(conn);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), graceful.shutdown())
                .await
                .is_err()
        );
        drop(watched);
        tokio::time::timeout(Duration::from_secs(5), graceful.shutdown())
            .await
            .expect("shutdown did not resolve once the connection ended");
    }

    #[tokio::test]
    async fn a_connection_watched_after_shutdown_began_is_asked_at_its_first_poll() {
        let graceful = Graceful::default();
        let (first, _first_client) = connection();
        let first = graceful.watch(first);
        let stopping = async {
            graceful.shutdown().await;
        };
        tokio::pin!(stopping);
        assert!(futures_util::poll!(stopping.as_mut()).is_pending());
        let (late, mut client) = connection();
        let late = tokio::spawn(graceful.watch(late));
        drop(first);
        let closed = tokio::time::timeout(Duration::from_secs(5), late)
            .await
            .expect("the connection watched late was not asked to close");
        assert!(closed.unwrap().is_ok());
        let mut rest = Vec::new();
        assert_eq!(client.read_to_end(&mut rest).await.unwrap(), 0);
        tokio::time::timeout(Duration::from_secs(5), stopping)
            .await
            .expect("shutdown did not resolve");
    }

    #[tokio::test]
    async fn polls_of_the_same_task_register_its_waker_once() {
        let graceful = Graceful::default();
        let (conn, mut client) = connection();
        let served = tokio::spawn(graceful.watch(conn));
        for _ in 0..20 {
            client.write_all(REQUEST).await.unwrap();
            assert!(read_response(&mut client).await.ends_with("ok"));
        }
        // Forty-odd polls of one task: its waker went into the slot once.
        assert_eq!(graceful.registered(), 1);
        drop(client);
        assert!(served.await.unwrap().is_ok());
    }
}
