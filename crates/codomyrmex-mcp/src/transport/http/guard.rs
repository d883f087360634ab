//! DNS-rebinding protection: `Host` and `Origin` validation as a tower layer.
//!
//! A request whose `Host` is not an allowed host, or whose `Origin` (when present) is not an
//! allowed origin, gets `403 Forbidden` with a JSON-RPC error body that has no id. Lists are
//! exact (case-insensitive); there is no wildcard.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
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
        self.hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host.trim()))
    }

    fn origin_ok(&self, origin: &str) -> bool {
        self.origins
            .iter()
            .any(|o| o.eq_ignore_ascii_case(origin.trim()))
    }

    /// Checks a request's headers; `Err` carries the reason.
    pub fn check(&self, headers: &axum::http::HeaderMap) -> Result<(), &'static str> {
        match headers.get(header::HOST).map(|h| h.to_str()) {
            Some(Ok(h)) if self.host_ok(h) => {}
            Some(_) => return Err("Host header is not allowed"),
            None => return Err("Host header is missing"),
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            match origin.to_str() {
                Ok(o) if self.origin_ok(o) => {}
                _ => return Err("Origin header is not allowed"),
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
        if let Err(reason) = self.policy.check(req.headers()) {
            // Logged (rate-limited) and counted as a refusal by the metrics layer.
            let resp = rpc_error(
                StatusCode::FORBIDDEN,
                None,
                ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("Forbidden: {reason}")),
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
    use axum::http::{HeaderMap, HeaderValue};

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
        let p = OriginPolicy::loopback(8080);
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
}
