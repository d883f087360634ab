//! Per-connection idle tracking: a connection on which no byte moved for the idle timeout
//! while no request was being handled is closed. This catches clients that open connections
//! and send nothing, and clients that stop reading a response (slow read).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::Request;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower::Service;

use super::conn_timer::ConnTimer;

/// What a connection has been doing.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Bumped on every read or write that moved bytes.
    progress: AtomicU64,
    /// Requests whose handlers are running.
    busy: AtomicUsize,
}

impl Activity {
    fn bump(&self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }

    /// Resolves once the connection has been idle for `timeout` (between one and two
    /// timeouts after the last activity).
    pub(crate) async fn idle(&self, timeout: Duration) {
        let mut seen = self.progress.load(Ordering::Relaxed);
        loop {
            tokio::time::sleep(timeout).await;
            let now = self.progress.load(Ordering::Relaxed);
            if now == seen && self.busy.load(Ordering::Relaxed) == 0 {
                return;
            }
            seen = now;
        }
    }
}

/// An I/O stream that records its activity.
pub(crate) struct TrackedIo<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> TrackedIo<T> {
    pub(crate) fn new(inner: T, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let out = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(out, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bump();
        }
        out
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(out, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.bump();
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
            self.activity.bump();
        }
        out
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Counts a request as busy while its handler runs, and gives it the peer's address as
/// [`ConnectInfo`] and the connection's [`ConnTimer`].
#[derive(Clone)]
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
    peer: SocketAddr,
    timer: ConnTimer,
}

impl<S> Tracked<S> {
    pub(crate) fn new(
        inner: S,
        activity: Arc<Activity>,
        peer: SocketAddr,
        timer: ConnTimer,
    ) -> Self {
        Self {
            inner,
            activity,
            peer,
            timer,
        }
    }
}

struct BusyGuard(Arc<Activity>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.bump();
    }
}

impl<S, B> Service<Request<B>> for Tracked<S>
where
    S: Service<Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = TrackedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        req.extensions_mut().insert(ConnectInfo(self.peer));
        req.extensions_mut().insert(self.timer.clone());
        self.activity.busy.fetch_add(1, Ordering::Relaxed);
        let guard = BusyGuard(self.activity.clone());
        TrackedFuture {
            inner: self.inner.call(req),
            guard: Some(guard),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's response future, counted as busy until it is ready.
    pub(crate) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<BusyGuard>,
    }
}

impl<F: Future> Future for TrackedFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        drop(this.guard.take());
        Poll::Ready(out)
    }
}
