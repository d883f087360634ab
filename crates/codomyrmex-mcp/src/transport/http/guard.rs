//! DNS-rebinding protection: `Host` and `Origin` validation as a tower layer.
//!
//! A request whose `Host` is not an allowed host, whose absolute-form target (`POST
//! http://HOST/mcp`) names a host that is not allowed, or whose `Origin` (when present) is
//! not an allowed origin, gets `403 Forbidden`; one with more than one `Host` header gets
//! `400 Bad Request` (RFC 9112 section 3.2), either with a JSON-RPC error body that has no
//! id. Lists are exact (case-insensitive); there is no wildcard.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode, Uri, header};
use tower::{Layer, Service};

use crate::wire::{ErrorCode, ErrorObject};

use super::rpc_error;

/// The allowed `Host` and `Origin` values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginPolicy {
    /// Allowed `Host` header values, such as `localhost:8080`. Compared case-insensitively.
    pub hosts: Vec<String>,
    /// Allowed `Origin` header values, such as `http://localhost:8080`.
    pub origins: Vec<String>,
}

impl OriginPolicy {
    /// The loopback names (`localhost`, `127.0.0.1`, `[::1]`), with and without `port`, as
    /// hosts, and their `http://` and `https://` origins.
    pub fn loopback(port: u16) -> Self {
        let names = ["localhost", "127.0.0.1", "[::1]"];
        let mut hosts = Vec::new();
        let mut origins = Vec::new();
        for n in names {
            hosts.push(n.to_owned());
            hosts.push(format!("{n}:{port}"));
            for scheme in ["http", "https"] {
                origins.push(format!("{scheme}://{n}"));
                origins.push(format!("{scheme}://{n}:{port}"));
            }
        }
        Self { hosts, origins }
    }

    fn host_ok(&self, host: &str) -> bool {
        // Trimmed once, not once per allowed value: this runs on every request. As ASCII: a
        // header value read as text and an authority are ASCII, so that is all `trim` would
        // remove.
        let host = host.trim_ascii();
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    fn origin_ok(&self, origin: &str) -> bool {
        let origin = origin.trim_ascii();
        self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }

    /// Checks a request's target and headers; `Err` carries the status to answer with and
    /// the reason.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            return Err((StatusCode::BAD_REQUEST, "more than one Host header"));
        }
        // An absolute-form target names the request's host (RFC 9112 section 3.2.2).
        if let Some(authority) = uri.authority()
            && !self.host_ok(authority.as_str())
        {
            return Err((
                StatusCode::FORBIDDEN,
                "the request target's host is not allowed",
            ));
        }
        match host.map(|h| h.to_str()) {
            Some(Ok(h)) if self.host_ok(h) => {}
            Some(_) => return Err((StatusCode::FORBIDDEN, "Host header is not allowed")),
            None => return Err((StatusCode::FORBIDDEN, "Host header is missing")),
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            match origin.to_str() {
                Ok(o) if self.origin_ok(o) => {}
                _ => return Err((StatusCode::FORBIDDEN, "Origin header is not allowed")),
            }
        }
        Ok(())
    }
}

/// A layer enforcing an [`OriginPolicy`].
#[derive(Debug, Clone)]
pub struct OriginLayer {
    policy: Arc<OriginPolicy>,
}

impl OriginLayer {
    /// A layer for `policy`.
    pub fn new(policy: OriginPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }
}

impl<S> Layer<S> for OriginLayer {
    type Service = OriginService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OriginService {
            inner,
            policy: self.policy.clone(),
        }
    }
}

/// The service [`OriginLayer`] produces.
#[derive(Debug, Clone)]
pub struct OriginService<S> {
    inner: S,
    policy: Arc<OriginPolicy>,
}

impl<S, B> Service<Request<B>> for OriginService<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = super::PolicyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if let Err((status, reason)) = self.policy.check(req.uri(), req.headers()) {
            // Logged (rate-limited) and counted as a refusal by the metrics layer.
            let what = if status == StatusCode::BAD_REQUEST {
                "Bad request"
            } else {
                "Forbidden"
            };
            let resp = rpc_error(
                status,
                None,
                ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("{what}: {reason}")),
            );
            return super::PolicyFuture::refused(super::refusals::refused(
                resp,
                super::refusals::Reason::HostOrigin,
                Some(reason.to_string()),
            ));
        }
        super::PolicyFuture::passed(self.inner.call(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert(header::HOST, HeaderValue::from_str(v).unwrap());
        }
        if let Some(v) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_policy() {
        let p = Checker(OriginPolicy::loopback(8080));
        assert!(p.check(&headers(Some("localhost:8080"), None)).is_ok());
        assert!(
            p.check(&headers(Some("127.0.0.1"), Some("http://127.0.0.1:8080")))
                .is_ok()
        );
        assert!(
            p.check(&headers(Some("[::1]:8080"), Some("HTTP://LOCALHOST:8080")))
                .is_ok()
        );
        assert!(p.check(&headers(Some("evil.com"), None)).is_err());
        assert!(p.check(&headers(Some("localhost:9999"), None)).is_err());
        assert!(
            p.check(&headers(Some("localhost:8080"), Some("http://evil.com")))
                .is_err()
        );
        assert!(p.check(&headers(None, None)).is_err());
        assert!(
            p.check(&headers(Some("localhost.evil.com:8080"), None))
                .is_err()
        );
    }

    /// The tests' view: a request in origin form (`/mcp`).
    struct Checker(OriginPolicy);

    impl Checker {
        fn check(&self, headers: &HeaderMap) -> Result<(), (StatusCode, &'static str)> {
            self.0.check(&Uri::from_static("/mcp"), headers)
        }
    }

    #[test]
    fn one_host_and_an_allowed_absolute_target() {
        let p = OriginPolicy::loopback(8080);
        let mut two = headers(Some("localhost:8080"), None);
        two.append(header::HOST, HeaderValue::from_static("localhost:8080"));
        let e = p.check(&Uri::from_static("/mcp"), &two).unwrap_err();
        assert_eq!(e.0, StatusCode::BAD_REQUEST);
        let one = headers(Some("localhost:8080"), None);
        let e = p
            .check(&Uri::from_static("http://evil.example/mcp"), &one)
            .unwrap_err();
        assert_eq!(e.0, StatusCode::FORBIDDEN);
        let e = p
            .check(&Uri::from_static("http://u@localhost:8080/mcp"), &one)
            .unwrap_err();
        assert_eq!(e.0, StatusCode::FORBIDDEN);
        assert!(
            p.check(&Uri::from_static("http://localhost:8080/mcp"), &one)
                .is_ok()
        );
    }
}
