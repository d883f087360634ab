//! The innermost service of [`HttpServer`](super::HttpServer)'s stack: a POST to the MCP
//! endpoint's path goes straight to its handler; every other request goes to the router
//! ([`mcp_router`](super::mcp_router)'s routes, `/health` and the rest), which answers it as
//! before (`405` for another method on the endpoint, `404` for another path).
//!
//! Every call of a session is such a POST. Through the router it paid for a path match, two
//! boxed futures (the route's and the handler's), the request extensions the router adds
//! and a copy of the handler's state; here it pays one boxed future and one reference
//! count. The handler is the same function, with the same state, so nothing a client sees
//! changes.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, Response};
use tower::Service;

use super::AppState;

/// What the endpoint shares between its clones (one per request: hyper clones the stack).
struct Shared {
    app: Arc<AppState>,
    path: String,
    router: Router,
}

/// See the [module docs](self).
#[derive(Clone)]
pub(crate) struct Endpoint(Arc<Shared>);

impl Endpoint {
    /// POSTs to `path` handled with `app`, the rest by `router`.
    pub(crate) fn new(app: AppState, path: String, router: Router) -> Self {
        Self(Arc::new(Shared {
            app: Arc::new(app),
            path,
            router,
        }))
    }
}

type Posted = Pin<Box<dyn Future<Output = Response<Body>> + Send>>;

/// A POST's answer, or the router's. Both are boxed, so that this future is two words:
/// every layer above the endpoint wraps it by value, and each wrapping copies it (the
/// router's future inline made every call of a session copy its few hundred bytes at
/// each layer).
pub(crate) enum EndpointFuture<R> {
    Posted(Posted),
    Routed(Pin<Box<R>>),
}

impl<R> Future for EndpointFuture<R>
where
    R: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Both variants are boxes: the enum itself is `Unpin`.
        match self.get_mut() {
            Self::Posted(future) => future.as_mut().poll(cx).map(Ok),
            Self::Routed(future) => future.as_mut().poll(cx),
        }
    }
}

impl<B: super::handler::RequestBody> Service<Request<B>> for Endpoint {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = EndpointFuture<<Router as Service<Request<B>>>::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if req.method() == Method::POST && req.uri().path() == self.0.path {
            let (parts, body) = req.into_parts();
            return EndpointFuture::Posted(Box::pin(super::handler::serve_owned(
                self.0.app.clone(),
                parts.headers,
                parts.extensions,
                body,
            )));
        }
        let mut router = self.0.router.clone();
        EndpointFuture::Routed(Box::pin(router.call(req)))
    }
}

#[cfg(test)]
mod tests {
    /// The size of what `f` returns, without calling it.
    fn output_size<A, B, C, D, F>(_: impl FnOnce(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Every POST allocates its handler's future and copies its first state in. glibc serves
    /// requests of up to 1,032 bytes from its per-thread cache; a larger one goes to the
    /// arena (and its fast bins are consolidated first), and its copy touches more fresh
    /// memory. The future was 3,096 bytes before the handler kept its arguments once.
    #[test]
    fn a_posts_future_fits_the_allocators_per_thread_cache() {
        let size = output_size(|app, headers, extensions, body: hyper::body::Incoming| {
            super::super::handler::serve_owned(app, headers, extensions, body)
        });
        assert!(size <= 1024, "the POST handler's future is {size} bytes");
    }
}
