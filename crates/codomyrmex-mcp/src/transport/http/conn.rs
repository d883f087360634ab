//! Per-connection idle tracking: a connection on which no byte moved for the idle timeout
//! while no request was being handled is closed. This catches clients that open connections
//! and send nothing, and clients that stop reading a response (slow read).
//!
//! The same wrappers tell the connection's input spin ([`ConnSpin`]) what it needs: when a
//! handler starts and ends, whether its response's size is known, and when a read would
//! block after everything written was flushed.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower::Service;

use super::conn_spin::{ConnSpin, ServerSpin};
use super::conn_timer::ConnTimer;
use crate::transport::spin::Pollable;

/// What a connection has been doing.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Bumped on every read or write that moved bytes.
    progress: AtomicU64,
    /// Requests whose handlers are running.
    busy: AtomicUsize,
    /// The input spin, when the server spins.
    spin: Option<ConnSpin>,
}

impl Activity {
    /// A connection's activity, on the server's spin if it has one.
    pub(crate) fn new(spin: Option<&Arc<ServerSpin>>) -> Self {
        Self {
            spin: spin.map(|s| ConnSpin::new(s.clone())),
            ..Self::default()
        }
    }

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
    /// No write since the last flush: nothing waits to be written.
    flushed: bool,
}

impl<T> TrackedIo<T> {
    pub(crate) fn new(inner: T, activity: Arc<Activity>) -> Self {
        Self {
            inner,
            activity,
            flushed: true,
        }
    }
}

impl<T: AsyncRead + Pollable + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let out = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &out {
            Poll::Ready(Ok(())) if buf.filled().len() > before => self.activity.bump(),
            // Interest in the socket is registered: the spin leaves the next request to it.
            Poll::Pending => {
                if let Some(spin) = &self.activity.spin {
                    spin.read_pending(&self.inner, self.flushed);
                }
            }
            Poll::Ready(_) => {}
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
        self.flushed = false;
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
        self.flushed = false;
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
        let out = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(out, Poll::Ready(Ok(()))) {
            self.flushed = true;
        }
        out
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
        if let Some(spin) = &self.0.spin {
            spin.call_ended();
        }
    }
}

impl<S, B, RB> Service<Request<B>> for Tracked<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
    RB: http_body::Body,
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
        if let Some(spin) = &self.activity.spin {
            spin.call_started();
        }
        let guard = BusyGuard(self.activity.clone());
        TrackedFuture {
            inner: self.inner.call(req),
            guard: Some(guard),
        }
    }
}

/// A connection's service as hyper calls it: the connection's one copy of the stack, called
/// in place.
///
/// hyper calls its service through `&self`, and tower's services take `&mut self`, so hyper's
/// adapter (`TowerToHyperService`) clones the whole stack for every request: a reference
/// count up and down per layer, on counts every connection shares (the metrics, the policy,
/// the in-flight limit, the endpoint), so those cache lines move between the workers on
/// every call. A connection's requests are handled one after another, so its copy is
/// borrowed for each call instead. A stack that is not ready at once (none of this server's
/// layers waits, but a layer may) gets a clone driven to readiness, as the adapter does.
pub(crate) struct InPlace<S> {
    service: std::cell::RefCell<S>,
    /// What a clone is made from when `service` cannot be used at once.
    spare: S,
}

impl<S: Clone> InPlace<S> {
    pub(crate) fn new(service: S) -> Self {
        Self {
            service: std::cell::RefCell::new(service.clone()),
            spare: service,
        }
    }
}

impl<S, R> hyper::service::Service<R> for InPlace<S>
where
    S: Service<R> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    // The rare path boxed: hyper keeps this future in the connection's state and moves each
    // call's into it, so it is no larger than the stack's own future.
    type Future = futures_util::future::Either<S::Future, Pin<Box<tower::util::Oneshot<S, R>>>>;

    fn call(&self, req: R) -> Self::Future {
        use futures_util::future::Either;
        // Never borrowed past this call, which does not call itself: the borrow succeeds.
        let Ok(mut service) = self.service.try_borrow_mut() else {
            return Either::Right(Box::pin(tower::util::Oneshot::new(self.spare.clone(), req)));
        };
        match service.poll_ready(&mut Context::from_waker(std::task::Waker::noop())) {
            Poll::Ready(Ok(())) => Either::Left(service.call(req)),
            // Not ready (or failing): a clone waits for readiness with the task's waker, and
            // reports the failure, as hyper's adapter would.
            _ => Either::Right(Box::pin(tower::util::Oneshot::new(service.clone(), req))),
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

impl<F, B, E> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: http_body::Body,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        if let Some(guard) = this.guard.take() {
            if let Some(spin) = &guard.0.spin {
                // A body of known size ends the message; a stream goes on from the server.
                let whole = out
                    .as_ref()
                    .is_ok_and(|r| r.body().size_hint().exact().is_some());
                spin.response_ready(whole);
            }
            drop(guard);
        }
        Poll::Ready(out)
    }
}
