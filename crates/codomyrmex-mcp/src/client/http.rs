//! The client's Streamable HTTP transport on hyper's HTTP/1.1 client: each message the client
//! sends becomes a POST; each message in the answer (a JSON body or SSE events) is handed
//! back. It keeps the legacy session (`Mcp-Session-Id` from `initialize`, the negotiated
//! `MCP-Protocol-Version`), opens the GET stream for server messages, resumes a broken SSE
//! stream with `Last-Event-ID` after the server's `retry` delay, re-initializes once after a
//! 404 for an expired session, mirrors the modern era's `Mcp-Method` / `Mcp-Name` headers,
//! and ends the session with DELETE on close.
//!
//! It never follows redirects, so a token is only ever sent to the endpoint's own origin; a
//! 3xx answer is a transport error. `https://` goes through rustls ([`tls`](super::tls)) on
//! the same hyper client. It decides no protocol
//! rule beyond the transport's own: ids, eras and retries of input are
//! [`proto`](super::proto)'s, and what it does per message (the `Mcp-Name` it mirrors, whether
//! the message opens a session or cancels a request) is [`sending`]'s, which
//! shares the server's rule.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use super::endpoint::{Endpoint, MAX_BODY, parse_url};
use super::http_io::{fetcher_for, next_chunk, read_body, read_messages, send_to};
use super::oauth;
use super::oauth_flow::{self, Authorizer};
use super::param_headers::header_value;
use super::sending::{self, Sending};
pub use super::sse::{SseEvent, SseParser};
use super::{ClientEnds, ClientError, Closer, Inbound, Outgoing, lock};
use crate::engine::META_PROTOCOL_VERSION;
use crate::wire::RequestId;

/// How many times a broken SSE stream is resumed before the request fails.
const MAX_RESUMES: usize = 5;
/// The delay before resuming when the server gave no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);

/// Where the endpoint is and what every request carries. Its `Debug` shows the URL
/// redacted, the headers' names only and no token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HttpTarget {
    /// `http://HOST[:PORT]/PATH` or `https://...`.
    pub url: String,
    /// Extra headers sent with every request (`Mcp-Param-*` custom headers, say).
    pub headers: Vec<(String, String)>,
    /// Sent as `Authorization: Bearer TOKEN`, to the endpoint's origin only.
    pub token: Option<String>,
    /// A PEM file of CA certificates trusted for `https://` beside the Mozilla roots.
    pub ca_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpTarget")
            .field("url", &crate::util::redact_url(&self.url))
            .field("headers", &names)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl HttpTarget {
    /// A target with no extra headers and no token.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }
}

/// Per-connection state shared by the requests.
#[derive(Debug, Default)]
struct State {
    session: Option<String>,
    protocol_version: Option<String>,
    /// The `initialize` request, replayed after a 404 for an expired session.
    initialize: Option<Vec<u8>>,
    get_stream: bool,
}

struct Conn {
    endpoint: Endpoint,
    tls: Arc<rustls::ClientConfig>,
    target: HttpTarget,
    state: Mutex<State>,
    inbound: super::inbound::InboundTx,
    stop: CancellationToken,
    /// The bearer token sent now (given, or obtained by OAuth).
    token: Mutex<Option<String>>,
    oauth: Option<Arc<dyn Authorizer>>,
    /// Held while authorizing, so that concurrent 401s authorize once.
    authorizing: tokio::sync::Mutex<()>,
    /// Held while a new session is opened, so that requests that all met the expired
    /// session open one new session between them, not one each.
    reinit: tokio::sync::Mutex<()>,
    /// The authorization context: bumped whenever the token sent changes, so that the
    /// client's list cache keeps `cacheScope: "private"` pages to the token they came with.
    auth_context: Arc<std::sync::atomic::AtomicU64>,
    /// The POSTs of requests in flight, by id: a `notifications/cancelled` for one stops
    /// it, which closes its stream (2026-07-28's cancellation).
    in_flight: Mutex<std::collections::HashMap<RequestId, CancellationToken>>,
}

type Response = hyper::Response<Incoming>;

fn transport(message: String) -> ClientError {
    ClientError::Transport {
        status: None,
        message,
    }
}

/// Starts the transport: the client's ends and the closer that sends DELETE.
pub(crate) fn connect(
    target: HttpTarget,
    oauth: Option<Arc<dyn Authorizer>>,
    auth_context: Arc<std::sync::atomic::AtomicU64>,
) -> Result<(ClientEnds, Closer), ClientError> {
    let endpoint = parse_url(&target.url).map_err(transport)?;
    let tls = super::tls::client_config(target.ca_file.as_deref()).map_err(transport)?;
    for (name, value) in &target.headers {
        if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || hyper::header::HeaderValue::from_str(value).is_err()
        {
            return Err(transport(format!("invalid header {name:?}")));
        }
    }
    let (out_tx, mut out_rx) = mpsc::channel::<Outgoing>(256);
    let (in_tx, in_rx) = super::inbound::channel();
    let token = target.token.clone().or_else(|| {
        oauth
            .as_ref()
            .and_then(|o| o.stored(&target.url))
            .map(|t| t.access_token)
    });
    let conn = Arc::new(Conn {
        endpoint,
        tls,
        token: Mutex::new(token),
        oauth,
        authorizing: tokio::sync::Mutex::new(()),
        target,
        state: Mutex::new(State::default()),
        inbound: in_tx,
        stop: CancellationToken::new(),
        reinit: tokio::sync::Mutex::new(()),
        in_flight: Mutex::new(std::collections::HashMap::new()),
        auth_context,
    });
    let main = conn.clone();
    let posts = tokio::spawn(async move {
        while let Some(Outgoing { bytes, headers }) = out_rx.recv().await {
            let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            // What the transport does with it is the core's to say.
            let sending = Sending::of(&message);
            if let Some(id) = &sending.cancels
                && let Some(post) = lock(&main.in_flight).remove(id)
            {
                // Dropping the POST closes its connection: the server sees the disconnect.
                post.cancel();
            }
            if let Some(id) = sending.request.clone() {
                lock(&main.in_flight).entry(id).or_default();
            }
            if sending.opens_session {
                // Later messages need the session id it returns.
                main.clone().post(message, bytes, headers).await;
            } else {
                tokio::spawn(main.clone().post(message, bytes, headers));
            }
        }
        // The client is gone: the GET stream stops too.
        main.stop.cancel();
    });
    let closing = conn.clone();
    let closer: Closer = Box::new(move |grace: Duration| {
        Box::pin(async move {
            let _ = tokio::time::timeout(grace, async {
                let _ = posts.await;
                closing.delete().await;
            })
            .await;
        })
    });
    // The transport's own reference to `inbound` goes when every task holding `conn` ends.
    drop(conn);
    Ok(((out_tx, in_rx), closer))
}

/// The headers of one POST; `credentials` are the `Authorization` (and `DPoP`) headers.
fn headers_for(
    message: &Value,
    target: &HttpTarget,
    credentials: Vec<(String, String)>,
    session: Option<&str>,
    version: Option<&str>,
) -> Vec<(String, String)> {
    let mut h = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    h.extend(credentials);
    h.extend(target.headers.iter().cloned());
    let params = message.get("params");
    // W3C Trace Context: a request's `_meta.traceparent` (the MCP convention) also goes in
    // the header HTTP servers and proxies read, when it is a plausible value.
    if let Some(tp) = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
        .filter(|t| t.len() <= 128 && t.bytes().all(|b| b.is_ascii_graphic()))
    {
        h.push(("traceparent".into(), tp.to_owned()));
    }
    let modern_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    // The standard headers mirror the body; legacy servers ignore them.
    let sending = Sending::of(message);
    if let Some(method) = sending.method {
        h.push(("Mcp-Method".into(), method.to_owned()));
    }
    // Which field `Mcp-Name` mirrors is the core's, the server's own rule.
    if let Some(name) = sending.name {
        h.push(("Mcp-Name".into(), header_value(name)));
    }
    if let Some(version) = modern_version {
        h.push(("MCP-Protocol-Version".into(), version.to_owned()));
    } else {
        if let Some(session) = session {
            h.push(("Mcp-Session-Id".into(), session.to_owned()));
        }
        if let Some(version) = version {
            h.push(("MCP-Protocol-Version".into(), version.to_owned()));
        }
    }
    h
}

impl Conn {
    /// Sends `token` from now on; a new token is a new authorization context.
    fn set_token(&self, token: String) {
        let mut current = lock(&self.token);
        if current.as_deref() != Some(token.as_str()) {
            *current = Some(token);
            self.auth_context
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
    }

    /// The headers presenting the token in use on a `method` request: `Bearer`, or DPoP's
    /// scheme and a fresh proof for a DPoP-bound token.
    fn credentials(&self, method: &str) -> Vec<(String, String)> {
        let Some(token) = lock(&self.token).clone() else {
            return Vec::new();
        };
        match &self.oauth {
            Some(a) => a.credentials(method, &self.target.url, &token),
            None => oauth_flow::bearer(&token),
        }
    }

    /// Keeps the `DPoP-Nonce` a response carries; whether it is new.
    fn note_nonce(&self, response: &Response) -> bool {
        let nonce = response
            .headers()
            .get(super::dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok());
        match (&self.oauth, nonce) {
            (Some(a), Some(n)) => a.note_nonce(&self.target.url, n),
            _ => false,
        }
    }

    fn legacy_headers(&self, message: &Value, method: &str) -> Vec<(String, String)> {
        let credentials = self.credentials(method);
        let s = lock(&self.state);
        headers_for(
            message,
            &self.target,
            credentials,
            s.session.as_deref(),
            s.protocol_version.as_deref(),
        )
    }

    async fn deliver(&self, item: Inbound) {
        let _ = self.inbound.send(item).await;
    }

    async fn fail(&self, id: Option<&RequestId>, status: Option<u16>, message: String) {
        self.deliver(Inbound::Failed {
            id: id.cloned(),
            status,
            message,
        })
        .await;
    }

    async fn send(
        &self,
        method: hyper::Method,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Response, String> {
        send_to(&self.endpoint, &self.tls, method, headers, body).await
    }

    /// Refreshes the OAuth tokens in use when they expire within the margin (and can be
    /// refreshed); a failed refresh leaves them, for the `401` path to handle.
    async fn refresh_if_due(&self) {
        let Some(authorizer) = &self.oauth else {
            return;
        };
        let due = |a: &Arc<dyn Authorizer>| {
            a.stored(&self.target.url).filter(|t| {
                t.due_for_refresh(oauth::unix_now())
                    && lock(&self.token).as_deref() == Some(t.access_token.as_str())
            })
        };
        if due(authorizer).is_none() {
            return;
        }
        let _one_at_a_time = self.authorizing.lock().await;
        if due(authorizer).is_none() {
            return; // another request refreshed meanwhile
        }
        if let Ok(tokens) = authorizer.refresh(self.target.url.clone()).await {
            self.set_token(tokens.access_token);
        }
    }

    /// Authorizes after `response` refused the token; `Ok(true)`: send again.
    async fn authorize(
        &self,
        response: &Response,
        sent_token: Option<&str>,
        attempts: &mut usize,
    ) -> Result<bool, String> {
        let Some(authorizer) = &self.oauth else {
            return Ok(false);
        };
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get(hyper::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(oauth::parse_challenge)
            .unwrap_or_default();
        if status == 403 && challenge.error.as_deref() != Some("insufficient_scope") {
            return Ok(false);
        }
        // DPoP (RFC 9449 section 9): the server wants its nonce in the proof; send again
        // with it (once per new nonce).
        if super::dpop::asks_for_nonce(challenge.error.as_deref()) && self.note_nonce(response) {
            return Ok(true);
        }
        *attempts += 1;
        if *attempts > authorizer.max_step_ups() + 1 {
            return Err(format!(
                "HTTP {status}: still refused after {} authorizations",
                *attempts - 1
            ));
        }
        let _one_at_a_time = self.authorizing.lock().await;
        if lock(&self.token).as_deref() != sent_token {
            // Another request authorized meanwhile.
            return Ok(true);
        }
        let tokens = authorizer
            .authorize(self.target.url.clone(), challenge)
            .await
            .map_err(|e| format!("authorization failed: {e}"))?;
        self.set_token(tokens.access_token);
        Ok(true)
    }

    /// Sends one message and hands back what answers it, until the request is cancelled.
    async fn post(self: Arc<Self>, message: Value, bytes: Vec<u8>, extra: Vec<(String, String)>) {
        let id: Option<RequestId> = message
            .get("method")
            .and(message.get("id"))
            .and_then(|i| serde_json::from_value(i.clone()).ok());
        let Some(id) = id else {
            return self.post_one(message, None, bytes, extra).await;
        };
        // Registered before the task runs (by the caller's loop, in message order), so that a
        // cancellation sent right after the request finds it.
        let cancelled = lock(&self.in_flight).entry(id.clone()).or_default().clone();
        tokio::select! {
            () = self.clone().post_one(message, Some(id.clone()), bytes, extra) => {}
            () = cancelled.cancelled() => {}
        }
        lock(&self.in_flight).remove(&id);
    }

    async fn post_one(
        self: Arc<Self>,
        message: Value,
        id: Option<RequestId>,
        bytes: Vec<u8>,
        extra: Vec<(String, String)>,
    ) {
        let is_initialize = Sending::of(&message).opens_session;
        if is_initialize {
            let mut s = lock(&self.state);
            s.initialize = Some(bytes.clone());
            s.session = None;
            s.protocol_version = None;
        }
        let mut reinitialized = false;
        let mut authorizations = 0;
        loop {
            self.refresh_if_due().await;
            let mut headers = self.legacy_headers(&message, "POST");
            headers.extend(extra.iter().cloned());
            let had_session = lock(&self.state).session.clone();
            let response = match self
                .send(hyper::Method::POST, &headers, bytes.clone())
                .await
            {
                Ok(r) => r,
                Err(e) => return self.fail(id.as_ref(), None, e).await,
            };
            let status = response.status().as_u16();
            if status != 401 {
                // A server may hand out its next DPoP nonce on any answer.
                self.note_nonce(&response);
            }
            if status == 401 || status == 403 {
                let sent = lock(&self.token).clone();
                match self
                    .authorize(&response, sent.as_deref(), &mut authorizations)
                    .await
                {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(e) => return self.fail(id.as_ref(), Some(status), e).await,
                }
            }
            if status == 404 && had_session.is_some() && !is_initialize && !reinitialized {
                // The session expired: open a new one (unless another request already did),
                // then send this message again.
                reinitialized = true;
                let _one_at_a_time = self.reinit.lock().await;
                if lock(&self.state).session == had_session
                    && let Err(e) = self.reinitialize().await
                {
                    return self.fail(id.as_ref(), Some(404), e).await;
                }
                continue;
            }
            if is_initialize
                && let Some(session) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
            {
                lock(&self.state).session = Some(session.to_owned());
            }
            self.clone()
                .answer(id.as_ref(), is_initialize, response)
                .await;
            return;
        }
    }

    /// Replays `initialize` and `notifications/initialized` for a new session.
    async fn reinitialize(&self) -> Result<(), String> {
        let Some(init) = lock(&self.state).initialize.clone() else {
            return Err("the session expired and there is no initialize to replay".into());
        };
        let message: Value = serde_json::from_slice(&init).map_err(|e| e.to_string())?;
        let headers = headers_for(&message, &self.target, self.credentials("POST"), None, None);
        let response = self.send(hyper::Method::POST, &headers, init).await?;
        if !response.status().is_success() {
            return Err(format!(
                "the session expired and initializing again failed with HTTP {}",
                response.status().as_u16()
            ));
        }
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Read the initialize result for the negotiated version; it is not delivered (the
        // client's own initialize was answered already).
        let mut version = None;
        let mut sink = |m: &Value| {
            if let Some(v) = m.pointer("/result/protocolVersion").and_then(Value::as_str) {
                version = Some(v.to_owned());
            }
        };
        read_messages(response, &mut sink, &mut SseParser::default()).await?;
        {
            let mut s = lock(&self.state);
            s.session = session;
            if version.is_some() {
                s.protocol_version = version;
            }
        }
        let note = sending::initialized();
        let headers = self.legacy_headers(&note, "POST");
        self.send(hyper::Method::POST, &headers, note.to_string().into_bytes())
            .await?;
        Ok(())
    }

    /// Hands back the messages of a POST's answer.
    async fn answer(
        self: Arc<Self>,
        id: Option<&RequestId>,
        is_initialize: bool,
        response: Response,
    ) {
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get(hyper::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_owned();
            return self
                .fail(
                    id,
                    Some(status),
                    format!(
                        "HTTP {status}: a redirect to {location}, which this client does not follow"
                    ),
                )
                .await;
        }
        let success = (200..300).contains(&status);
        if status == 401 || status == 403 {
            // Authorization failed: the transport's, whatever the body says.
            let bytes = read_body(response.into_body()).await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let why = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map_or_else(
                    || String::from_utf8_lossy(&bytes).chars().take(300).collect(),
                    str::to_owned,
                );
            let name = if status == 401 {
                "Unauthorized"
            } else {
                "Forbidden"
            };
            return self
                .fail(
                    id,
                    Some(status),
                    format!("HTTP {status} {name}: {}", why.trim()),
                )
                .await;
        }
        if success && content_type.starts_with("text/event-stream") {
            self.clone().consume_sse(id, is_initialize, response).await;
        } else {
            let bytes = match read_body(response.into_body()).await {
                Ok(b) => b,
                Err(e) => return self.fail(id, Some(status), e).await,
            };
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Array(items)) => {
                    for m in items {
                        self.deliver_message(m, id, is_initialize).await;
                    }
                }
                Ok(m @ Value::Object(_)) => {
                    self.deliver_message(m, id, is_initialize).await;
                }
                _ if success && bytes.iter().all(u8::is_ascii_whitespace) => {
                    if id.is_some() {
                        self.fail(
                            id,
                            Some(status),
                            format!("HTTP {status} without a response"),
                        )
                        .await;
                    }
                }
                _ => {
                    let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
                    self.fail(id, Some(status), format!("HTTP {status}: {}", text.trim()))
                        .await;
                }
            }
        }
        if is_initialize && success {
            let start = {
                let mut s = lock(&self.state);
                let start = s.session.is_some() && !s.get_stream;
                s.get_stream |= start;
                start
            };
            if start {
                tokio::spawn(self.clone().get_stream());
            }
        }
    }

    /// Hands one message to the client; returns whether it answers `id`. An error without an
    /// id (as HTTP refusals carry) is given the id of the request it answers.
    async fn deliver_message(
        &self,
        mut m: Value,
        id: Option<&RequestId>,
        is_initialize: bool,
    ) -> bool {
        if is_initialize
            && let Some(v) = m.pointer("/result/protocolVersion").and_then(Value::as_str)
        {
            lock(&self.state).protocol_version = Some(v.to_owned());
        }
        let is_response = m.get("method").is_none();
        let mut answers = false;
        if let (Some(id), Some(obj)) = (id, m.as_object_mut())
            && is_response
        {
            let own = obj
                .get("id")
                .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
            if own.is_none() && obj.contains_key("error") {
                obj.insert("id".into(), serde_json::json!(id));
                answers = true;
            } else {
                answers = own.as_ref() == Some(id);
            }
        }
        let bytes = m.to_string().into_bytes();
        // What arrives on a request's stream belongs to it (a log message, say).
        self.deliver(match id {
            Some(id) => Inbound::OnStream {
                bytes,
                request: id.clone(),
            },
            None => Inbound::Message(bytes),
        })
        .await;
        answers
    }

    /// Delivers a POST's event stream; resumes it with `Last-Event-ID` when it breaks before
    /// the response.
    async fn consume_sse(
        self: Arc<Self>,
        id: Option<&RequestId>,
        is_initialize: bool,
        response: Response,
    ) {
        let mut parser = SseParser::default();
        let mut body = response.into_body();
        let mut resumes = 0;
        loop {
            let (answered, broken) = self.pump(&mut body, &mut parser, id, is_initialize).await;
            if answered || id.is_none() {
                return;
            }
            let Some(last) = parser.last_id.clone() else {
                let why = broken.unwrap_or_else(|| "the stream ended".into());
                return self
                    .fail(
                        id,
                        None,
                        format!("the event stream ended before the response ({why})"),
                    )
                    .await;
            };
            resumes += 1;
            if resumes > MAX_RESUMES {
                return self
                    .fail(
                        id,
                        None,
                        format!("the event stream broke {MAX_RESUMES} times"),
                    )
                    .await;
            }
            tokio::time::sleep(parser.retry.unwrap_or(DEFAULT_RETRY)).await;
            match self.open_get(Some(&last)).await {
                Ok(Some(next)) => body = next.into_body(),
                Ok(None) => {
                    return self
                        .fail(
                            id,
                            None,
                            "the server refused to resume the event stream".into(),
                        )
                        .await;
                }
                Err(e) => return self.fail(id, None, e).await,
            }
        }
    }

    /// Delivers events until the body ends; returns whether `id` was answered and why the
    /// stream broke, if it did.
    async fn pump(
        &self,
        body: &mut Incoming,
        parser: &mut SseParser,
        id: Option<&RequestId>,
        is_initialize: bool,
    ) -> (bool, Option<String>) {
        let mut answered = false;
        loop {
            let chunk = tokio::select! {
                c = next_chunk(body) => c,
                () = self.stop.cancelled() => return (answered, Some("the client closed".into())),
            };
            match chunk {
                Ok(Some(bytes)) => match parser.feed(&bytes) {
                    Ok(events) => {
                        for event in events {
                            if let Ok(m) = serde_json::from_str::<Value>(&event.data) {
                                answered |= self.deliver_message(m, id, is_initialize).await;
                            }
                        }
                        if answered {
                            return (true, None);
                        }
                    }
                    Err(e) => return (answered, Some(e)),
                },
                Ok(None) => return (answered, None),
                Err(e) => return (answered, Some(e)),
            }
        }
    }

    /// A GET of the endpoint's event stream; `Ok(None)` when the server offers none.
    async fn open_get(&self, last_event_id: Option<&str>) -> Result<Option<Response>, String> {
        let note = serde_json::json!({});
        let mut headers: Vec<(String, String)> = self
            .legacy_headers(&note, "GET")
            .into_iter()
            .filter(|(n, _)| n != "Content-Type")
            .map(|(n, v)| {
                if n == "Accept" {
                    (n, "text/event-stream".to_owned())
                } else {
                    (n, v)
                }
            })
            .collect();
        if let Some(last) = last_event_id {
            headers.push(("Last-Event-ID".into(), last.to_owned()));
        }
        let response = self.send(hyper::Method::GET, &headers, Vec::new()).await?;
        let sse = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        Ok((response.status().is_success() && sse).then_some(response))
    }

    /// The legacy session's GET stream: server requests and notifications outside any
    /// request, reopened (with `Last-Event-ID`) until the client closes.
    async fn get_stream(self: Arc<Self>) {
        let mut parser = SseParser::default();
        let mut failures = 0;
        while !self.stop.is_cancelled() && failures < 3 {
            let last = parser.last_id.clone();
            let opened = tokio::select! {
                r = self.open_get(last.as_deref()) => r,
                () = self.stop.cancelled() => return,
            };
            let Ok(Some(response)) = opened else {
                // No GET stream (405) or no server: nothing more to do.
                return;
            };
            let mut body = response.into_body();
            let (_, broken) = self.pump(&mut body, &mut parser, None, false).await;
            failures = if broken.is_some() { failures + 1 } else { 0 };
            tokio::select! {
                () = tokio::time::sleep(parser.retry.unwrap_or(DEFAULT_RETRY)) => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    /// Ends the legacy session.
    async fn delete(&self) {
        let Some(session) = lock(&self.state).session.clone() else {
            return;
        };
        let mut headers = vec![("Mcp-Session-Id".to_owned(), session)];
        if let Some(v) = lock(&self.state).protocol_version.clone() {
            headers.push(("MCP-Protocol-Version".into(), v));
        }
        headers.extend(self.credentials("DELETE"));
        headers.extend(self.target.headers.iter().cloned());
        let _ = self.send(hyper::Method::DELETE, &headers, Vec::new()).await;
    }
}

/// The OAuth flow's HTTP: any `http://` or `https://` URL (trusting what `target` trusts),
/// redirects not followed, bodies bounded.
pub(crate) fn fetcher(target: &HttpTarget) -> Result<oauth::Fetch, ClientError> {
    fetcher_for(target.ca_file.as_deref()).map_err(transport)
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
