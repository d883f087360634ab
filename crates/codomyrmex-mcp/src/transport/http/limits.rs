//! Request limits as tower layers. Each refusal is an HTTP status with a JSON-RPC error body
//! that has no id:
//!
//! | layer | refuses with |
//! |---|---|
//! | [`HeaderLimitLayer`] | `431 Request Header Fields Too Large` |
//! | [`ClientRateLimitLayer`] | `429 Too Many Requests` with `Retry-After` |
//! | [`InFlightLimitLayer`] | `503 Service Unavailable` with `Retry-After` (load shedding) |
//!
//! The body-size (`413`) and body-time (`408`) limits live in the endpoint, which reads the
//! body; the header-read and idle timeouts live in the connection loop.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use tower::{Layer, Service};

use crate::RateLimit;
use crate::wire::{ErrorCode, ErrorObject};

use super::forwarded::ClientAddr;
use super::refusals::{Reason, refused};
use super::rpc_error;

/// The JSON-RPC code of "try again later" refusals (`429`, `503`): implementation-defined
/// server error.
pub const SERVER_BUSY: ErrorCode = ErrorCode(-32000);

pin_project_lite::pin_project! {
    /// The response future of the policy layers ([`HeaderLimit`], [`ClientRateLimit`],
    /// [`InFlightLimit`], [`OriginService`](super::OriginService),
    /// [`AuthService`](super::AuthService)): a refusal that is ready at once, or the inner
    /// service's response. The inner future is not boxed; a refusal is, so that it does not
    /// make every layer's future as large as a response head.
    pub struct PolicyFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        // The layer refused the request; `None` once returned. Boxed: every layer's future
        // wraps the next one's, and a refusal held inline would make each of them as large
        // as a response head, copied on every call that is not refused.
        Refused { response: Option<Box<Response<Body>>> },
        // The layer passed the request on; its slot, if it holds one, is released when the
        // response is ready.
        Passed { #[pin] future: F, slot: Option<Slot> },
    }
}

impl<F> PolicyFuture<F> {
    pub(crate) fn refused(response: Response<Body>) -> Self {
        Self {
            kind: Kind::Refused {
                response: Some(Box::new(response)),
            },
        }
    }

    pub(crate) fn passed(future: F) -> Self {
        Self::holding(future, None)
    }

    fn holding(future: F, slot: Option<Slot>) -> Self {
        Self {
            kind: Kind::Passed { future, slot },
        }
    }
}

impl<F> std::fmt::Debug for PolicyFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyFuture").finish_non_exhaustive()
    }
}

impl<F, E> Future for PolicyFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Refused { response } => {
                Poll::Ready(Ok(response.take().map_or_else(
                    || {
                        // Polled again after it finished: a caller's bug, answered, not panicked on.
                        rpc_error(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            None,
                            ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Internal error"),
                        )
                    },
                    |r| *r,
                )))
            }
            KindProj::Passed { future, slot } => {
                let out = std::task::ready!(future.poll(cx));
                drop(slot.take());
                Poll::Ready(out)
            }
        }
    }
}

pub(crate) fn with_retry_after(mut resp: Response<Body>, after: Duration) -> Response<Body> {
    let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    resp
}

// ---------------------------------------------------------------------------------------------
// Header size

/// Refuses requests whose head (request line and headers) is larger than a limit with `431`.
///
/// The HTTP parser has a hard cap as well (the server sets it to twice this limit); a head
/// beyond that gets the parser's bare `431` and the connection is closed.
#[derive(Debug, Clone, Copy)]
pub struct HeaderLimitLayer {
    max: usize,
}

impl HeaderLimitLayer {
    /// A limit of `max` bytes.
    pub fn new(max: usize) -> Self {
        Self { max }
    }
}

impl<S> Layer<S> for HeaderLimitLayer {
    type Service = HeaderLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HeaderLimit {
            inner,
            max: self.max,
        }
    }
}

/// The service [`HeaderLimitLayer`] produces.
#[derive(Debug, Clone)]
pub struct HeaderLimit<S> {
    inner: S,
    max: usize,
}

/// The size of a request's head as it was sent over HTTP/1.1.
fn head_size<B>(req: &Request<B>) -> usize {
    let line = req.method().as_str().len()
        + 1
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n".len();
    let headers: usize = req
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + 2 + v.len() + 2)
        .sum();
    line + headers + 2
}

impl<S, B> Service<Request<B>> for HeaderLimit<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = PolicyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let size = head_size(&req);
        if size > self.max {
            let mut resp = rpc_error(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                None,
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Request headers exceed the {}-byte limit", self.max),
                ),
            );
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return PolicyFuture::refused(refused(resp, Reason::HeadersTooLarge, None));
        }
        PolicyFuture::passed(self.inner.call(req))
    }
}

// ---------------------------------------------------------------------------------------------
// Per-client rate limit

/// The most clients whose buckets are remembered; past it, full buckets are forgotten (a
/// forgotten bucket is a full one), and if none is full, all are.
const MAX_TRACKED_CLIENTS: usize = 65_536;

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Token buckets per client address: the per-client rate limit's, and the authentication
/// failures' own.
pub(crate) struct Buckets {
    limit: RateLimit,
    map: Mutex<HashMap<IpAddr, Bucket>>,
}

impl Buckets {
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            map: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes a token for `client`, or says how long until one is available.
    pub(crate) fn take(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let rate = self.limit.per_second.max(f64::MIN_POSITIVE);
        let burst = f64::from(self.limit.burst.max(1));
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_TRACKED_CLIENTS && !map.contains_key(&client) {
            map.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.last).as_secs_f64() * rate < burst
            });
            if map.len() >= MAX_TRACKED_CLIENTS {
                map.clear();
            }
        }
        let bucket = map.entry(client).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                ((1.0 - bucket.tokens) / rate).min(3600.0),
            ))
        }
    }
}

/// The client a request counts against: its [`ClientAddr`] (set by
/// [`ForwardedLayer`](super::ForwardedLayer) behind trusted proxies), else its peer address
/// (from the connection's [`ConnectInfo`]), with IPv6 addresses grouped by `/64` (one host
/// usually holds a whole `/64`). Requests with neither share one bucket.
pub(crate) fn client_key<B>(req: &Request<B>) -> IpAddr {
    let ext = req.extensions();
    let client = ext
        .get::<ClientAddr>()
        .map(|c| c.0)
        .or_else(|| ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()));
    match client {
        Some(ip) => match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let s = v6.segments();
                    IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
                }
            },
            ip => ip,
        },
        None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// A token-bucket rate limit per client (peer IP address): `per_second` requests refill
/// continuously up to `burst`. Over the limit, `429` with `Retry-After`.
#[derive(Clone)]
pub struct ClientRateLimitLayer {
    buckets: Arc<Buckets>,
}

impl std::fmt::Debug for ClientRateLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRateLimitLayer")
            .field("limit", &self.buckets.limit)
            .finish_non_exhaustive()
    }
}

impl ClientRateLimitLayer {
    /// A limit of `limit` per client.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            buckets: Arc::new(Buckets::new(limit)),
        }
    }
}

impl<S> Layer<S> for ClientRateLimitLayer {
    type Service = ClientRateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientRateLimit {
            inner,
            buckets: self.buckets.clone(),
        }
    }
}

/// The service [`ClientRateLimitLayer`] produces.
#[derive(Clone)]
pub struct ClientRateLimit<S> {
    inner: S,
    buckets: Arc<Buckets>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for ClientRateLimit<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRateLimit")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<B>> for ClientRateLimit<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = PolicyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let client = client_key(&req);
        if let Err(after) = self.buckets.take(client, Instant::now()) {
            tracing::debug!(%client, "rate limited");
            return PolicyFuture::refused(refused(
                too_many_requests(after),
                Reason::RateLimited,
                None,
            ));
        }
        PolicyFuture::passed(self.inner.call(req))
    }
}

/// `429 Too Many Requests` with `Retry-After`.
pub(crate) fn too_many_requests(after: Duration) -> Response<Body> {
    let resp = rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        None,
        ErrorObject::new(SERVER_BUSY, "Too many requests; slow down"),
    );
    with_retry_after(resp, after)
}

// ---------------------------------------------------------------------------------------------
// Concurrent requests

/// At most `max` requests are handled at once; more are shed at once with `503` and
/// `Retry-After: 1` rather than queued. A request counts until its response head is ready, so
/// long-lived SSE streams do not hold a slot.
#[derive(Debug, Clone)]
pub struct InFlightLimitLayer {
    slots: Arc<Slots>,
}

impl InFlightLimitLayer {
    /// A limit of `max` requests (at least one).
    pub fn new(max: usize) -> Self {
        Self {
            slots: Arc::new(Slots {
                max: max.max(1),
                taken: AtomicUsize::new(0),
            }),
        }
    }
}

/// The places for requests in flight: a count against a maximum, taken at once or refused.
/// Nothing waits for a place, so there is no list of waiters (tokio's `Semaphore` locks
/// its own on every release, a lock every worker takes on every request).
#[derive(Debug)]
struct Slots {
    max: usize,
    taken: AtomicUsize,
}

impl Slots {
    /// A place, or `None` when all `max` are taken.
    fn try_take(self: &Arc<Self>) -> Option<Slot> {
        self.taken
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |taken| {
                (taken < self.max).then_some(taken + 1)
            })
            .ok()?;
        Some(Slot(self.clone()))
    }
}

/// A request's place in [`Slots`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::Release);
    }
}

impl<S> Layer<S> for InFlightLimitLayer {
    type Service = InFlightLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        InFlightLimit {
            inner,
            slots: self.slots.clone(),
        }
    }
}

/// The service [`InFlightLimitLayer`] produces.
#[derive(Debug, Clone)]
pub struct InFlightLimit<S> {
    inner: S,
    slots: Arc<Slots>,
}

impl<S, B> Service<Request<B>> for InFlightLimit<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = PolicyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let Some(slot) = self.slots.try_take() else {
            tracing::debug!("shed a request: too many in flight");
            let resp = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                ErrorObject::new(SERVER_BUSY, "Server busy: too many requests in flight"),
            );
            let resp = with_retry_after(resp, Duration::from_secs(1));
            return PolicyFuture::refused(refused(resp, Reason::InFlight, None));
        };
        PolicyFuture::holding(self.inner.call(req), Some(slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_slots_are_refused_past_the_limit_and_given_back() {
        let layer = InFlightLimitLayer::new(2);
        let (a, b) = (layer.slots.try_take(), layer.slots.try_take());
        assert!(a.is_some() && b.is_some());
        assert!(layer.slots.try_take().is_none());
        drop(a);
        let c = layer.slots.try_take();
        assert!(c.is_some());
        assert!(layer.slots.try_take().is_none());
        drop((b, c));
        assert_eq!(layer.slots.taken.load(Ordering::Relaxed), 0);
        // At least one.
        assert!(InFlightLimitLayer::new(0).slots.try_take().is_some());
    }

    #[test]
    fn buckets_refill_and_refuse() {
        let b = Buckets {
            limit: RateLimit {
                per_second: 2.0,
                burst: 3,
            },
            map: Mutex::new(HashMap::new()),
        };
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(b.take(ip, t0).is_ok());
        }
        let wait = b.take(ip, t0).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(500));
        assert!(b.take(other, t0).is_ok(), "clients are independent");
        assert!(b.take(ip, t0 + Duration::from_millis(500)).is_ok());
        assert!(b.take(ip, t0 + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn ipv6_clients_are_grouped_by_prefix() {
        let mut req = Request::new(());
        req.extensions_mut().insert(ConnectInfo(SocketAddr::from((
            "2001:db8:1:2:aaaa::1".parse::<Ipv6Addr>().unwrap(),
            1,
        ))));
        assert_eq!(
            client_key(&req),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn head_size_counts_line_and_headers() {
        let req = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "a")
            .body(())
            .unwrap();
        assert_eq!(
            head_size(&req),
            "POST /mcp HTTP/1.1\r\nhost: a\r\n\r\n".len()
        );
    }
}
