//! [`ClientHandlers`]: what the client answers when a server asks it for input — sampling,
//! elicitation (form and URL mode) and roots — and where notifications it cares about go
//! (logging). The client's declared capabilities are derived from which handlers are set,
//! and the same handlers answer the 2025-11-25 server-to-client requests and the
//! 2026-07-28 `inputRequests` of an `InputRequiredResult`.
//!
//! Not a UI: a handler decides (asks a model, a terminal, a policy); this only routes.

use std::future::Future;
use std::sync::Arc;

use serde_json::{Value, json};

use super::proto::{InputKinds, InputRequest};
use crate::platform::BoxFuture;
use crate::wire::ErrorObject;

/// A handler of one kind of server request: gets the request's params, returns its result.
pub type InputHandler =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync>;

/// A callback for notifications (`notifications/message` params, progress params).
pub type NotificationHandler = Arc<dyn Fn(Value) + Send + Sync>;

/// The client's handlers. Each one set adds its capability to what the client declares.
#[derive(Clone, Default)]
pub struct ClientHandlers {
    sampling: Option<InputHandler>,
    elicitation_form: Option<InputHandler>,
    elicitation_url: Option<InputHandler>,
    roots: Option<InputHandler>,
    logging: Option<NotificationHandler>,
}

impl std::fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("kinds", &self.kinds())
            .field("logging", &self.logging.is_some())
            .finish()
    }
}

fn boxed<F, Fut>(f: F) -> InputHandler
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
{
    Arc::new(move |params| Box::pin(f(params)))
}

impl ClientHandlers {
    /// No handlers: the client declares no capabilities and refuses every server request
    /// but `ping`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `sampling/createMessage` (params in, `CreateMessageResult` out).
    pub fn sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(boxed(f));
        self
    }

    /// Answers form-mode `elicitation/create` (`ElicitResult` out: `action`, `content`).
    pub fn elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.elicitation_form = Some(boxed(f));
        self
    }

    /// Answers URL-mode `elicitation/create` (the handler shows the URL; `ElicitResult` out).
    pub fn url_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.elicitation_url = Some(boxed(f));
        self
    }

    /// Answers `roots/list` with a fixed list of roots (`{"uri": "file:///...", "name": ...}`).
    pub fn roots(mut self, roots: Vec<Value>) -> Self {
        let result = json!({ "roots": roots });
        self.roots = Some(boxed(move |_| {
            let result = result.clone();
            async move { Ok(result) }
        }));
        self
    }

    /// Answers `roots/list` with a function.
    pub fn roots_with<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(boxed(f));
        self
    }

    /// Receives the params of every `notifications/message` (server logging).
    pub fn logging(mut self, f: impl Fn(Value) + Send + Sync + 'static) -> Self {
        self.logging = Some(Arc::new(f));
        self
    }

    /// Which kinds of input these handlers answer.
    pub fn kinds(&self) -> InputKinds {
        InputKinds {
            sampling: self.sampling.is_some(),
            elicitation_form: self.elicitation_form.is_some(),
            elicitation_url: self.elicitation_url.is_some(),
            roots: self.roots.is_some(),
        }
    }

    pub(crate) fn logging_handler(&self) -> Option<&NotificationHandler> {
        self.logging.as_ref()
    }

    /// The answer to one request from the server, in either era's form.
    pub async fn answer(&self, request: InputRequest) -> Result<Value, ErrorObject> {
        let (handler, params, what) = match request {
            InputRequest::Ping => return Ok(json!({})),
            InputRequest::Unknown(method) => return Err(ErrorObject::method_not_found(&method)),
            InputRequest::Sampling(p) => (&self.sampling, p, "sampling/createMessage"),
            InputRequest::ElicitationForm(p) => (&self.elicitation_form, p, "elicitation/create"),
            InputRequest::ElicitationUrl(p) => (&self.elicitation_url, p, "elicitation/create"),
            InputRequest::Roots(p) => (&self.roots, p, "roots/list"),
        };
        match handler {
            Some(h) => h(params).await,
            None => Err(ErrorObject::method_not_found(what)),
        }
    }
}
