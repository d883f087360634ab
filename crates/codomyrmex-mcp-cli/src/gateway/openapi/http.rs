//! The HTTP client of an OpenAPI upstream: HTTP/1.1 over the library's hyper and rustls
//! (no second HTTP stack), keeping idle connections to reuse (a REST call pays no
//! handshake), bodies read up to a bound; and the OAuth client-credentials token it sends,
//! fetched and renewed before it expires. While its one call waits for an answer, a
//! connection polls its socket for a bounded while before the thread may sleep (the
//! library's answer spin, [`codomyrmex_mcp::client::answer_spin`]): a quick local API's
//! answer then finds the gateway awake instead of a halted vCPU to wake.
//!
//! A connection has no task of its own: the call that holds it drives hyper's connection
//! future beside its own request ([`Client::send_request`]), so the socket's readiness wakes
//! the call directly, with no hand-off to a connection task and back for the request, the
//! answer's head and each piece of its body. An idle connection is not polled; when it is
//! taken again it is polled once first, and dropped if the server closed it meanwhile.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use codomyrmex_mcp::client::answer_spin::{AnswerSpin, DEFAULT_ANSWER_SPIN, SpinningTcp};
use codomyrmex_mcp::client::http::{Endpoint, parse_url};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// The most idle connections kept (all origins together).
const MAX_IDLE: usize = 32;

/// The `User-Agent` sent.
pub const USER_AGENT: &str = concat!("codomyrmex-mcp/", env!("CARGO_PKG_VERSION"));

/// An answer: status, `Content-Type`, and the body up to the caller's bound.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body (at most the bound given).
    pub body: Vec<u8>,
    /// The body was longer than the bound and was cut there.
    pub truncated: bool,
}

/// A request's body.
type Body = Full<Bytes>;
/// A plain connection's reading and writing.
type PlainConnection = Connection<TokioIo<SpinningTcp>, Body>;
/// A TLS connection's reading and writing.
type TlsConnection = Connection<TokioIo<tokio_rustls::client::TlsStream<SpinningTcp>>, Body>;

/// hyper's connection future: reads and writes the socket, driven by the call using it.
/// Boxed (one allocation per connection): a call's future holds a `Driver`, and moves it.
enum Driver {
    /// Plain TCP.
    Plain(Box<PlainConnection>),
    /// TLS.
    Tls(Box<TlsConnection>),
}

impl Driver {
    /// Polls the connection: `Ready` once it has ended (closed, or failed).
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), hyper::Error>> {
        match self {
            Self::Plain(c) => Pin::new(&mut **c).poll(cx),
            Self::Tls(c) => Pin::new(&mut **c).poll(cx),
        }
    }
}

/// The waker a call's exchange and driver are polled with: while the call polls them, a
/// wake only marks that another turn is needed; otherwise (the socket became ready, woken
/// by the runtime's I/O driver) it wakes the call's task.
#[derive(Default)]
struct Relay {
    task: Mutex<Option<std::task::Waker>>,
    polling: AtomicBool,
    woken: AtomicBool,
}

impl Relay {
    /// The call's poll begins: wakes are noted, not passed on.
    fn enter(&self, task: &std::task::Waker) {
        let mut kept = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if !kept.as_ref().is_some_and(|k| k.will_wake(task)) {
            *kept = Some(task.clone());
        }
        drop(kept);
        self.woken.store(false, Ordering::SeqCst);
        self.polling.store(true, Ordering::SeqCst);
    }

    /// The call's poll ends; whether a wake came while it polled (then it must poll again).
    fn leave(&self) -> bool {
        self.polling.store(false, Ordering::SeqCst);
        self.woken.swap(false, Ordering::SeqCst)
    }
}

impl std::task::Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst)
            && let Some(task) = &*self.task.lock().unwrap_or_else(PoisonError::into_inner)
        {
            task.wake_by_ref();
        }
    }
}

/// A connection: its sending half and its driver, kept together.
struct Conn {
    sender: SendRequest<Body>,
    driver: Driver,
}

impl Conn {
    /// Whether a kept connection may carry another request: not closed by either side. Polls
    /// the driver once (without a waker to call: the caller polls it again), so a close the
    /// server sent while the connection was idle is seen here.
    fn usable(&mut self) -> bool {
        if self.sender.is_closed() {
            return false;
        }
        let mut cx = Context::from_waker(std::task::Waker::noop());
        self.driver.poll(&mut cx).is_pending() && !self.sender.is_closed()
    }
}

/// An idle connection and its origin.
struct Idle {
    https: bool,
    authority: String,
    conn: Conn,
}

/// A pooled HTTP/1.1 client.
pub struct Client {
    tls: Arc<rustls::ClientConfig>,
    idle: Mutex<Vec<Idle>>,
    /// The connections' answer spin (none off Linux).
    spin: Option<Arc<AnswerSpin>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// A client trusting the Mozilla roots.
    pub fn new() -> Result<Self, String> {
        Ok(Self {
            tls: codomyrmex_mcp::client::tls::client_config(None)?,
            idle: Mutex::new(Vec::new()),
            spin: AnswerSpin::new(DEFAULT_ANSWER_SPIN),
        })
    }

    /// Sends one request to `url` and reads at most `limit` bytes of the answer's body
    /// (`truncated` says when there was more; the rest is not read and the connection is
    /// not kept).
    pub async fn send(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        limit: usize,
    ) -> Result<Answer, String> {
        let e = parse_url(url)?;
        let method = hyper::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(e.path.as_str())
            .header(hyper::header::HOST, e.authority.as_str())
            .header(hyper::header::USER_AGENT, USER_AGENT);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|err| format!("cannot build the request: {err}"))?;
        self.send_request(&e, request, limit).await
    }

    /// Sends `request` (its URI the path and query, its headers complete: `Host` included)
    /// to `e`'s origin on a kept connection or a new one, and reads at most `limit` bytes of
    /// the answer's body, as [`Client::send`].
    pub async fn send_request(
        &self,
        e: &Endpoint,
        request: hyper::Request<Body>,
        limit: usize,
    ) -> Result<Answer, String> {
        let mut conn = match self.take_idle(e.https, &e.authority) {
            Some(c) => c,
            // Boxed: connecting (a TLS handshake above all) is rare and its future large,
            // and every call's future would otherwise be as large.
            None => Box::pin(self.connect(e)).await?,
        };
        let mut ended: Option<Result<(), hyper::Error>> = None;
        let answer = {
            let Conn { sender, driver } = &mut conn;
            let mut exchange = pin!(exchange(sender, request, limit, &e.authority));
            // The exchange and the driver wake each other (a request queued, an answer
            // read): while this loop polls them, such a wake only asks for another turn of
            // the loop, instead of waking this task (whose runtime would count it as a
            // yield and wake a sleeping worker to steal it).
            let relay = Arc::new(Relay::default());
            let waker = std::task::Waker::from(relay.clone());
            std::future::poll_fn(|cx| {
                relay.enter(cx.waker());
                let mut inner = Context::from_waker(&waker);
                loop {
                    if let Poll::Ready(out) = exchange.as_mut().poll(&mut inner) {
                        relay.leave();
                        return Poll::Ready(out);
                    }
                    if let Some(end) = &ended {
                        relay.leave();
                        // The connection ended and the exchange cannot go on.
                        return Poll::Ready(Err(match end {
                            Ok(()) => format!("{} closed the connection", e.authority),
                            Err(err) => format!("HTTP request to {} failed: {err}", e.authority),
                        }));
                    }
                    match driver.poll(&mut inner) {
                        Poll::Pending if relay.leave() => {
                            // Woken while polling: another turn.
                            relay.enter(cx.waker());
                        }
                        Poll::Pending => return Poll::Pending,
                        // The exchange is polled once more: what the connection read last
                        // is in.
                        Poll::Ready(end) => ended = Some(end),
                    }
                }
            })
            .await?
        };
        if !answer.truncated && ended.is_none() {
            self.put_idle(e, conn);
        }
        Ok(answer)
    }

    /// A kept connection to the origin that is still usable; closed ones met are dropped.
    fn take_idle(&self, https: bool, authority: &str) -> Option<Conn> {
        loop {
            let mut candidate = {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                let at = idle
                    .iter()
                    .rposition(|i| i.https == https && i.authority == authority)?;
                idle.swap_remove(at).conn
            };
            if candidate.usable() {
                return Some(candidate);
            }
        }
    }

    fn put_idle(&self, e: &Endpoint, conn: Conn) {
        if conn.sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                https: e.https,
                authority: e.authority.clone(),
                conn,
            });
        }
    }

    async fn connect(&self, e: &Endpoint) -> Result<Conn, String> {
        let tcp = tokio::net::TcpStream::connect((e.host.as_str(), e.port))
            .await
            .map_err(|err| format!("cannot connect to {}: {err}", e.authority))?;
        let _ = tcp.set_nodelay(true);
        let tcp = SpinningTcp::new(tcp, self.spin.clone());
        if e.https {
            let name = rustls::pki_types::ServerName::try_from(e.host.clone())
                .map_err(|err| format!("{:?} is not a name TLS can check: {err}", e.host))?;
            let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
                .connect(name, tcp)
                .await
                .map_err(|err| format!("TLS handshake with {} failed: {err}", e.host))?;
            let (sender, connection) = handshake(e, tls).await?;
            Ok(Conn {
                sender,
                driver: Driver::Tls(Box::new(connection)),
            })
        } else {
            let (sender, connection) = handshake(e, tcp).await?;
            Ok(Conn {
                sender,
                driver: Driver::Plain(Box::new(connection)),
            })
        }
    }
}

/// An HTTP/1.1 connection over `io`, not yet driven.
async fn handshake<IO>(
    e: &Endpoint,
    io: IO,
) -> Result<(SendRequest<Body>, Connection<TokioIo<IO>, Body>), String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|err| format!("HTTP handshake with {} failed: {err}", e.authority))
}

/// One request and its answer on `sender`'s connection (which the caller drives), the body
/// read up to `limit` bytes.
async fn exchange(
    sender: &mut SendRequest<Body>,
    request: hyper::Request<Body>,
    limit: usize,
    authority: &str,
) -> Result<Answer, String> {
    std::future::poll_fn(|cx| sender.poll_ready(cx))
        .await
        .map_err(|err| format!("HTTP request to {authority} failed: {err}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| format!("HTTP request to {authority} failed: {err}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut stream = response.into_body();
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(frame) = stream.frame().await {
        let frame = frame.map_err(|err| format!("reading the answer failed: {err}"))?;
        if let Ok(data) = frame.into_data() {
            if body.len() + data.len() > limit {
                body.extend_from_slice(&data[..limit - body.len()]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&data);
        }
    }
    Ok(Answer {
        status,
        content_type,
        body,
        truncated,
    })
}

/// The largest token endpoint answer read.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;
/// A token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(30);

/// An OAuth client-credentials grant (RFC 6749 section 4.4) at a token endpoint the
/// configuration names, the client authenticating with HTTP Basic; the token kept until
/// shortly before `expires_in` ends.
///
/// The library's OAuth client (`client::oauth`) is not used: it starts from an MCP
/// server's `WWW-Authenticate` challenge and discovers the authorization server through
/// protected resource metadata, which a REST API does not publish; here the token
/// endpoint is configured, and one form POST is all the grant is. Its form encoding is
/// the library's.
#[derive(Debug)]
pub struct ClientCredentials {
    /// The token endpoint.
    pub token_url: String,
    /// The client's id.
    pub client_id: String,
    /// The client's secret.
    pub client_secret: crate::config::Secret,
    /// The scope asked for, if any.
    pub scope: Option<String>,
    token: tokio::sync::Mutex<Option<(String, Instant)>>,
}

/// Two grants are the same when configured the same (the token each holds aside).
impl PartialEq for ClientCredentials {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.token_url,
            &self.client_id,
            &self.client_secret,
            &self.scope,
        ) == (
            &other.token_url,
            &other.client_id,
            &other.client_secret,
            &other.scope,
        )
    }
}

impl ClientCredentials {
    /// A grant not yet run.
    pub fn new(
        token_url: String,
        client_id: String,
        client_secret: crate::config::Secret,
        scope: Option<String>,
    ) -> Self {
        Self {
            token_url,
            client_id,
            client_secret,
            scope,
            token: tokio::sync::Mutex::new(None),
        }
    }

    /// A valid access token: the kept one, or a new one from the token endpoint.
    pub async fn token(&self, client: &Client) -> Result<String, String> {
        let mut kept = self.token.lock().await;
        if let Some((token, until)) = &*kept
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        use base64::Engine as _;
        let form = codomyrmex_mcp::client::oauth::form_encode;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form(&self.client_id),
            form(self.client_secret.expose())
        ));
        let mut pairs = vec![("grant_type", "client_credentials")];
        if let Some(s) = &self.scope {
            pairs.push(("scope", s.as_str()));
        }
        let body = codomyrmex_mcp::client::oauth::form(&pairs);
        let headers = [
            ("authorization".to_owned(), format!("Basic {basic}")),
            (
                "content-type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            ),
            ("accept".to_owned(), "application/json".to_owned()),
        ];
        let answer = client
            .send(
                "POST",
                &self.token_url,
                &headers,
                body.into_bytes(),
                MAX_TOKEN_ANSWER,
            )
            .await
            .map_err(|e| format!("the token endpoint: {e}"))?;
        if answer.status != 200 {
            return Err(format!(
                "the token endpoint answered {} to the client credentials grant",
                answer.status
            ));
        }
        let doc: Value = serde_json::from_slice(&answer.body)
            .map_err(|_| "the token endpoint's answer is not JSON".to_owned())?;
        let token = doc
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or("the token endpoint's answer has no access_token")?
            .to_owned();
        let lifetime = doc
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(Duration::from_secs(3600), Duration::from_secs);
        let until = Instant::now() + lifetime.saturating_sub(RENEW_BEFORE);
        *kept = Some((token.clone(), until));
        Ok(token)
    }

    /// Forgets the kept token (the API refused it).
    pub async fn forget(&self) {
        *self.token.lock().await = None;
    }
}
