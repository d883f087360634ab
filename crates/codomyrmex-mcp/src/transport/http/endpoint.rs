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
    app: AppState,
    path: String,
    router: Router,
}

/// See the [module docs](self).
#[derive(Clone)]
pub(crate) struct Endpoint(Arc<Shared>);

impl Endpoint {
    /// POSTs to `path` handled with `app`, the rest by `router`.
    pub(crate) fn new(app: AppState, path: String, router: Router) -> Self {
        Self(Arc::new(Shared { app, path, router }))
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

impl<B> Service<Request<B>> for Endpoint
where
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = EndpointFuture<<Router as Service<Request<B>>>::Future>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if req.method() == Method::POST && req.uri().path() == self.0.path {
            let shared = self.0.clone();
            let req = req.map(Body::new);
            return EndpointFuture::Posted(Box::pin(async move {
                super::handler::serve_post(&shared.app, req).await
            }));
        }
        let mut router = self.0.router.clone();
        EndpointFuture::Routed(Box::pin(router.call(req)))
    }
}
