//! The era bridge: a mounted tool's call, prompt or resource read (`tools/call`,
//! `prompts/get`, `resources/read`, one mechanism for the three) carries the upstream's
//! requests for input (sampling, elicitation, roots) to the gateway's own client and the
//! answers back, whatever era each side speaks, and relays the request's progress and log
//! messages to the gateway's client.
//!
//! - **2025-11-25 upstream**: it sends server-to-client requests on its session. Over
//!   Streamable HTTP, one that arrives on a call's stream goes to that call (its own handlers,
//!   [`CallOptions::input`]), however many are in flight; one that names no call (over stdio,
//!   or on no call's stream) goes to the one gateway call in flight to that upstream
//!   ([`Inbox::handlers`]). A 2025-11-25 client of the gateway
//!   gets it as a server-to-client request ([`ToolContext::input`]); a 2026-07-28 client gets
//!   an input-required result: the upstream call is *parked* (kept running, with its pending
//!   request) under an id the sealed `requestState` carries, and the client's retry answers
//!   the pending request and waits for the final result or the next request.
//! - **2026-07-28 upstream**: it answers with input-required results. A 2026-07-28 client gets
//!   them passed through (the upstream's keys prefixed with the gateway's round, the
//!   upstream's own `requestState` carried untouched inside the gateway's sealed state); for
//!   a 2025-11-25 client the gateway asks each input as a server-to-client request and retries
//!   the upstream until it gives a final result. Either way the rounds are the upstream
//!   client's own input loop ([`McpClient::request_answering`]), answered by the gateway.
//!
//! An upstream's log message goes with the call it belongs to: over Streamable HTTP, the one
//! on whose stream it arrived ([`CallOptions::log`]); over stdio, which cannot tell, the one
//! call in flight to that upstream. A message that belongs to no call (over HTTP, one on the
//! upstream session's standalone stream; over stdio, one sent with no call or several in
//! flight) goes to the gateway's 2025-11-25 sessions that set a log level
//! ([`Listeners::log_to_sessions`](codomyrmex_mcp::engine::Listeners::log_to_sessions)); 2026-07-28 clients get logs only with their requests.
//!
//! Not done here: a server-to-client request of a 2025-11-25 upstream that names no call
//! (over stdio; over HTTP, one on the standalone stream, as our server sends those of a
//! `prompts/get` or `resources/read` it answers as JSON) is refused with several calls in
//! flight to that upstream (never guessed): calls, prompts and reads count alike.
//!
//! An upstream that withdraws its request (`notifications/cancelled`; the upstream's client
//! stops the handler) has the gateway drop its ask: a 2025-11-25 client of the gateway gets
//! `notifications/cancelled` for it in turn; a 2026-07-28 client, whose era cannot withdraw
//! an input request, gets an error for the retry that answers it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codomyrmex_mcp::client::{CallOptions, ClientHandlers, InputLoopError, proto};
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::engine::{Engine, META_LOG_LEVEL};
use codomyrmex_mcp::policy::{UpstreamLimits, UpstreamPolicy, UpstreamRefusal, UpstreamTurn};
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::wire::{ErrorCode, ErrorObject};
use codomyrmex_mcp::{
    ClientRequestError, Era, InputRequest, LoggingLevel, McpErrorDetail, ToolContext,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

/// The most calls parked at once per upstream, waiting for their clients' retries.
const MAX_PARKED: usize = 256;
/// The most rounds of input one call may go through (as the client library bounds its own).
const MAX_ROUNDS: usize = proto::MAX_INPUT_ROUNDS;
/// The requests one call may have waiting for the gateway's client.
const ASKS_PER_CALL: usize = 4;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request of an upstream for input, waiting for the gateway's client's answer.
struct Asked {
    method: String,
    params: Value,
    answer: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// The context a call's notifications go to: the current round's, for a parked call.
type CurrentContext = Arc<Mutex<ToolContext>>;

struct Slot {
    /// `None` for a call to a 2026-07-28 upstream, which takes only log messages.
    asks: Option<mpsc::Sender<Asked>>,
    context: CurrentContext,
}

/// The calls in flight to one 2025-11-25 upstream that can take its requests, and the calls
/// parked for a 2026-07-28 client's retry.
#[derive(Default)]
pub struct Inbox {
    calls: Mutex<HashMap<u64, Slot>>,
    parked: Mutex<HashMap<u64, Parked>>,
    next: AtomicU64,
    /// Where log messages of no call go once the gateway serves ([`session_logs`]).
    logs: std::sync::OnceLock<mpsc::Sender<Value>>,
    /// The upstream is reached over Streamable HTTP, whose streams say which call a message
    /// belongs to (set by [`handlers`](Self::handlers)).
    streams: std::sync::atomic::AtomicBool,
    /// The upstream's name, for errors.
    upstream: String,
}

/// A call's place in the inbox; it leaves when this is dropped.
struct Place {
    inbox: Arc<Inbox>,
    id: u64,
}

impl Drop for Place {
    fn drop(&mut self) {
        lock(&self.inbox.calls).remove(&self.id);
    }
}

/// A call in the inbox that takes the upstream's requests.
struct Registered {
    _place: Place,
    asks: mpsc::Receiver<Asked>,
    /// Where the upstream's requests for this call go ([`call_options`]).
    to_asks: mpsc::Sender<Asked>,
    context: CurrentContext,
}

impl Inbox {
    /// The inbox of the upstream named `upstream`.
    pub fn new(upstream: &str) -> Self {
        Self {
            upstream: upstream.to_owned(),
            ..Self::default()
        }
    }

    fn enter(
        self: &Arc<Self>,
        asks: Option<mpsc::Sender<Asked>>,
        context: CurrentContext,
    ) -> Place {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).insert(id, Slot { asks, context });
        Place {
            inbox: self.clone(),
            id,
        }
    }

    fn register(self: &Arc<Self>, context: ToolContext) -> Registered {
        let (tx, rx) = mpsc::channel(ASKS_PER_CALL);
        let context = Arc::new(Mutex::new(context));
        Registered {
            _place: self.enter(Some(tx.clone()), context.clone()),
            asks: rx,
            to_asks: tx,
            context,
        }
    }

    /// A place for a call that takes only log messages (to a 2026-07-28 upstream, which
    /// asks for input in its results): no channel for requests.
    fn register_for_logs(self: &Arc<Self>, context: CurrentContext) -> Place {
        self.enter(None, context)
    }

    /// The one call in flight, if exactly one is.
    fn only(&self) -> Option<(Option<mpsc::Sender<Asked>>, CurrentContext)> {
        let calls = lock(&self.calls);
        if calls.len() != 1 {
            return None;
        }
        calls
            .values()
            .next()
            .map(|s| (s.asks.clone(), s.context.clone()))
    }

    /// Where the log messages of no call go from now on ([`session_logs`]).
    pub fn serve_logs_with(&self, logs: mpsc::Sender<Value>) {
        let _ = self.logs.set(logs);
    }

    /// A log message of the upstream that came on no call's stream. Over Streamable HTTP
    /// (`streams`) that means it belongs to no request; over stdio nothing says, so with
    /// exactly one call in flight it goes with that call. Otherwise it goes to the gateway's
    /// 2025-11-25 sessions that set a log level (at their level), never dropped.
    fn unrelated_log(&self, params: &Value, streams: bool) {
        if !streams && let Some((_, context)) = self.only() {
            let context = lock(&context).clone();
            relay_log(&context, params);
            return;
        }
        if let Some(logs) = self.logs.get()
            && logs.try_send(params.clone()).is_err()
        {
            tracing::debug!("a log message of no call was dropped: too many wait for the sessions");
        }
    }

    /// The handlers of the upstream's client for what came on no call's stream (over stdio,
    /// everything): a request for input goes to the one call in flight
    /// ([`route`](Self::route)); log messages as [`unrelated_log`](Self::unrelated_log) says.
    /// What came on a call's stream (`streams`: the upstream is reached over Streamable HTTP)
    /// goes to that call's own handlers ([`call_options`]).
    pub fn handlers(self: &Arc<Self>, streams: bool) -> ClientHandlers {
        self.streams.store(streams, Ordering::Relaxed);
        let inbox = self.clone();
        let logs = self.clone();
        input_handlers(move |method, params| {
            let inbox = inbox.clone();
            async move { inbox.route(method, params).await }
        })
        .logging(move |params| logs.unrelated_log(&params, streams))
    }

    /// A request for input that names no call (over stdio, or over Streamable HTTP on no
    /// call's stream: a request our server answers as JSON, `prompts/get` or
    /// `resources/read`, sends its requests on the session's standalone stream): to the one
    /// call in flight; otherwise refused, never guessed, naming the upstream.
    async fn route(&self, method: &'static str, params: Value) -> Result<Value, ErrorObject> {
        let Some((Some(asks), _)) = self.only() else {
            return Err(ErrorObject::internal(format!(
                "the gateway refused upstream {}'s {method}: it names no call (over stdio, or \
                 on no call's stream over HTTP), and not exactly one call is in flight to it",
                self.upstream
            )));
        };
        relay_ask(&asks, method, params).await
    }

    /// Parks `call` under a new id, removed again if nobody takes it before `policy`'s
    /// deadline (the upstream's, through the driver's `within`); `None` when too many are
    /// parked.
    fn park(self: &Arc<Self>, call: Parked, policy: Arc<UpstreamPolicy>) -> Option<u64> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        {
            let mut parked = lock(&self.parked);
            if parked.len() >= MAX_PARKED {
                return None;
            }
            parked.insert(id, call);
        }
        let inbox = Arc::downgrade(self);
        tokio::spawn(async move {
            // Nothing ends this wait but the deadline.
            let _expired = policy.within(&TOKIO, std::future::pending::<()>()).await;
            if let Some(inbox) = inbox.upgrade() {
                // Dropping it cancels the upstream call.
                drop(lock(&inbox.parked).remove(&id));
            }
        });
        Some(id)
    }

    fn unpark(&self, id: u64) -> Option<Parked> {
        lock(&self.parked).remove(&id)
    }
}

/// Client handlers for the three kinds of input request, each handed to `route` with its
/// method.
fn input_handlers<F, Fut>(route: F) -> ClientHandlers
where
    F: Fn(&'static str, Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value, ErrorObject>> + Send + 'static,
{
    let ask = |method: &'static str| {
        let route = route.clone();
        move |params: Value| route(method, params)
    };
    ClientHandlers::new()
        .sampling(ask("sampling/createMessage"))
        .elicitation(ask("elicitation/create"))
        .url_elicitation(ask("elicitation/create"))
        .roots_with(ask("roots/list"))
}

/// Hands an upstream's request to the call whose `asks` these are; its answer.
async fn relay_ask(
    asks: &mpsc::Sender<Asked>,
    method: &str,
    params: Value,
) -> Result<Value, ErrorObject> {
    let (tx, rx) = oneshot::channel();
    let gone = || ErrorObject::internal("the call that asked has ended");
    asks.send(Asked {
        method: method.to_owned(),
        params,
        answer: tx,
    })
    .await
    .map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?
}

/// A task aborted when dropped.
pub(super) struct AbortOnDrop<T>(pub(super) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A call to a 2025-11-25 upstream waiting for a 2026-07-28 client's retry.
struct Parked {
    call: AbortOnDrop<Result<Value, ClientError>>,
    slot: Registered,
    /// The upstream's request the client is asked to answer.
    pending: Option<Asked>,
    /// Its input key.
    key: String,
    rounds: usize,
    /// Its turn among the upstream's calls, held across the client's rounds.
    _turn: Option<UpstreamTurn>,
}

/// How a bridged call ended.
pub enum Bridged {
    /// The upstream's final answer.
    Final(Result<Value, ClientError>),
    /// The gateway's client was asked for input (2026-07-28: the engine answers
    /// input-required, and whatever the tool returns is not sent).
    AskedClient,
    /// The bridge itself failed.
    Failed(McpErrorDetail),
}

fn failed(upstream: &str, why: impl std::fmt::Display) -> Bridged {
    Bridged::Failed(McpErrorDetail::new(
        "UPSTREAM_INPUT_FAILED",
        format!("upstream {upstream}: {why}"),
    ))
}

/// The context's `InputRequest` for an upstream's `method`, if it is one of the three kinds.
fn input_request(method: &str, params: Value) -> Option<InputRequest> {
    match method {
        "sampling/createMessage" => Some(InputRequest::Sample(params)),
        "elicitation/create" => Some(InputRequest::Elicit(params)),
        "roots/list" => Some(InputRequest::ListRoots),
        _ => None,
    }
}

/// Asks the gateway's client through `context`; the answer as the upstream should get it.
async fn ask(
    context: &ToolContext,
    key: &str,
    method: &str,
    params: Value,
) -> Result<Value, ClientRequestError> {
    let Some(request) = input_request(method, params) else {
        return Err(ClientRequestError::Client {
            code: ErrorCode::METHOD_NOT_FOUND.0,
            message: format!("the gateway does not relay {method}"),
        });
    };
    context.input(key, request).await
}

/// An error the upstream gets for a request the gateway's client did not answer.
fn as_error(e: ClientRequestError) -> ErrorObject {
    match e {
        ClientRequestError::Client { code, message } => ErrorObject {
            code,
            message,
            data: None,
        },
        ClientRequestError::MissingCapability(c) => ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("the gateway's client did not declare the `{c}` capability"),
        ),
        other => ErrorObject::internal(other.to_string()),
    }
}

/// The most log messages of no call waiting for the gateway's sessions; more are dropped, so
/// an upstream that floods them cannot grow the gateway's memory.
const MAX_WAITING_LOGS: usize = 1024;

/// Starts relaying log messages of no call (`notifications/message` params) to `engine`'s
/// 2025-11-25 sessions that set a log level ([`Listeners::log_to_sessions`](codomyrmex_mcp::engine::Listeners::log_to_sessions)); returns the sender
/// each upstream's inbox takes ([`Inbox::serve_logs_with`]). Only the relaying task holds the
/// engine: an inbox holding it would make a cycle (the engine's registries hold the
/// upstreams, which hold their inboxes) and keep the upstreams' children alive at exit.
pub fn session_logs(engine: Engine) -> mpsc::Sender<Value> {
    let (tx, mut rx) = mpsc::channel::<Value>(MAX_WAITING_LOGS);
    tokio::spawn(async move {
        while let Some(params) = rx.recv().await {
            let logger = params.get("logger").and_then(Value::as_str);
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            engine
                .listeners()
                .log_to_sessions(log_level(&params), logger, data);
        }
    });
    tx
}

/// The level of an upstream's `notifications/message` params (`info` if it names none the
/// gateway knows).
fn log_level(params: &Value) -> LoggingLevel {
    params
        .get("level")
        .and_then(Value::as_str)
        .and_then(|l| serde_json::from_value::<LoggingLevel>(json!(l)).ok())
        .unwrap_or(LoggingLevel::Info)
}

/// Relays an upstream's `notifications/message` params to the gateway's client.
fn relay_log(context: &ToolContext, params: &Value) {
    context.log(
        log_level(params),
        params.get("data").cloned().unwrap_or(Value::Null),
    );
}

/// Asks a 2026-07-28 upstream for the request's log messages (`_meta` log level): at the
/// gateway's 2026-07-28 client's own level, or every message for a 2025-11-25 client (whose
/// `logging/setLevel` the context applies when it relays them).
fn with_log_level(params: &mut Value, context: &ToolContext) {
    let level = match context.era() {
        Era::Modern => context.meta().get(META_LOG_LEVEL).cloned(),
        Era::Legacy => Some(json!("debug")),
    };
    if let (Some(level), Value::Object(params)) = (level, params)
        && let Value::Object(meta) = params.entry("_meta").or_insert_with(|| json!({}))
    {
        meta.insert(META_LOG_LEVEL.to_owned(), level);
    }
}

/// Progress of the upstream call (when the gateway's client asked for progress) and, when
/// the upstream's transport can tell (`up`'s inbox says), the log messages that came on its
/// stream, to whichever context is current, and the requests for input that came on it, to
/// `asks` (the call's, if it takes them).
fn call_options(
    up: &Live,
    context: &CurrentContext,
    asks: Option<&mpsc::Sender<Asked>>,
) -> CallOptions {
    let streams = up.inbox.streams.load(Ordering::Relaxed);
    let wants = lock(context).meta().get("progressToken").is_some();
    let progress = context.clone();
    let logs = context.clone();
    CallOptions {
        progress: wants.then(|| {
            Arc::new(move |p: Value| {
                let c = lock(&progress).clone();
                c.progress(
                    p.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
                    p.get("total").and_then(Value::as_f64),
                    p.get("message").and_then(Value::as_str),
                );
            }) as codomyrmex_mcp::client::ProgressHandler
        }),
        timeout: None,
        log: streams.then(|| {
            Arc::new(move |p: Value| {
                let c = lock(&logs).clone();
                relay_log(&c, &p);
            }) as codomyrmex_mcp::client::NotificationHandler
        }),
        input: asks.filter(|_| streams).map(|asks| {
            let asks = asks.clone();
            input_handlers(move |method, params| {
                let asks = asks.clone();
                async move { relay_ask(&asks, method, params).await }
            })
        }),
    }
}

/// Sends `method` (`tools/call`, `prompts/get` or `resources/read`) with `params` to `up`
/// for the gateway's client behind `context`, admitted by the upstream's policy (its
/// concurrency, queue and rate limits: [`Live::admit`]).
pub async fn call(
    up: &Live,
    client: Arc<McpClient>,
    method: &'static str,
    params: Value,
    context: ToolContext,
) -> Bridged {
    match (client.era(), context.era()) {
        (Era::Modern, _) => {
            let _turn = match up.admit(&context).await {
                Ok(turn) => turn,
                Err(refused) => return refused,
            };
            modern_upstream(up, &client, method, params, &context).await
        }
        (Era::Legacy, Era::Legacy) => {
            let _turn = match up.admit(&context).await {
                Ok(turn) => turn,
                Err(refused) => return refused,
            };
            legacy_both(up, &client, method, params, context).await
        }
        (Era::Legacy, Era::Modern) => parked_call(up, client, method, params, context).await,
    }
}

/// A 2026-07-28 upstream: its input-required results go to the gateway's client in its era.
async fn modern_upstream(
    up: &Live,
    client: &McpClient,
    method: &'static str,
    mut params: Value,
    context: &ToolContext,
) -> Bridged {
    let mut round = 0u64;
    if context.era() == Era::Modern
        && let Some(prior) = context.request_state().and_then(|s| s.get("upstream"))
    {
        // The client's retry: its answers under our keys go back under the upstream's own.
        let prior_round = prior.get("round").and_then(Value::as_u64).unwrap_or(0);
        let state = prior.get("state").and_then(Value::as_str);
        let mut responses = Map::new();
        let asked = prior.get("asked").and_then(Value::as_object);
        for (key, request) in asked.into_iter().flatten() {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let p = request.get("params").cloned().unwrap_or(Value::Null);
            match ask(context, &format!("{prior_round}.{key}"), method, p).await {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(ClientRequestError::InputRequired) => {
                    // The retry did not carry this answer: asked again, same state.
                    context.set_request_state(json!({"upstream": prior}));
                    return Bridged::AskedClient;
                }
                Err(e) => return failed(&up.name, e),
            }
        }
        params = proto::retry_params(&params, responses, state);
        round = prior_round + 1;
    }
    with_log_level(&mut params, context);
    // In the inbox only so that the upstream's log messages reach this call's client.
    let current = Arc::new(Mutex::new(context.clone()));
    let _place = up.inbox.register_for_logs(current.clone());
    let options = call_options(up, &current, None);
    // The client's own input loop; each round's requests go to the gateway's client.
    let answered = client
        .request_answering(method, params, &options, |required| async move {
            if context.era() == Era::Modern {
                // A 2026-07-28 client answers by retrying: its requests are asked, the round's
                // state kept for the retry, and the loop stops here.
                let asked: Map<String, Value> = required
                    .requests
                    .iter()
                    .map(|(k, m, p)| (k.clone(), json!({"method": m, "params": p})))
                    .collect();
                context.set_request_state(json!({"upstream": {
                    "round": round,
                    "state": required.request_state,
                    "asked": asked,
                }}));
                for (key, method, p) in required.requests {
                    match ask(context, &format!("{round}.{key}"), &method, p).await {
                        Ok(_) | Err(ClientRequestError::InputRequired) => {}
                        Err(e) => return Err(failed(&up.name, e)),
                    }
                }
                return Err(Bridged::AskedClient);
            }
            let mut responses = Map::new();
            for (key, method, p) in required.requests {
                match ask(context, &key, &method, p).await {
                    Ok(answer) => {
                        responses.insert(key, answer);
                    }
                    Err(e) => {
                        return Err(failed(&up.name, format!("{method} was not answered: {e}")));
                    }
                }
            }
            Ok(responses)
        })
        .await;
    match answered {
        Ok(result) => Bridged::Final(Ok(result)),
        Err(InputLoopError::Client(e)) => Bridged::Final(Err(e)),
        Err(InputLoopError::Answer(stopped)) => stopped,
        Err(InputLoopError::TooManyRounds) => failed(
            &up.name,
            format!("still asked for input after {MAX_ROUNDS} rounds"),
        ),
    }
}

/// 2025-11-25 on both sides: each request of the upstream is asked of the gateway's client.
async fn legacy_both(
    up: &Live,
    client: &McpClient,
    method: &'static str,
    params: Value,
    context: ToolContext,
) -> Bridged {
    let mut slot = up.inbox.register(context.clone());
    let options = call_options(up, &slot.context, Some(&slot.to_asks));
    let call = client.request_with(method, params, &options);
    tokio::pin!(call);
    let mut n = 0usize;
    loop {
        tokio::select! {
            r = &mut call => return Bridged::Final(r),
            Some(mut asked) = slot.asks.recv() => {
                n += 1;
                let key = format!("in{n}");
                let asking = ask(&context, &key, &asked.method, asked.params.clone());
                tokio::select! {
                    answer = asking => {
                        let _ = asked.answer.send(answer.map_err(as_error));
                    }
                    // The upstream withdrew it (`notifications/cancelled`): dropping the ask
                    // cancels it at the gateway's client in turn.
                    () = asked.answer.closed() => {}
                }
            }
        }
    }
}

/// A 2025-11-25 upstream and a 2026-07-28 client: the call runs on while the client is asked
/// (parked between rounds), and each retry answers the upstream's pending request.
async fn parked_call(
    up: &Live,
    client: Arc<McpClient>,
    method: &'static str,
    params: Value,
    context: ToolContext,
) -> Bridged {
    let parked_id = context
        .request_state()
        .and_then(|s| s.get("parked"))
        .and_then(Value::as_u64);
    let parked = match parked_id {
        Some(id) => {
            let Some(mut parked) = up.inbox.unpark(id) else {
                return failed(
                    &up.name,
                    "the call this retry continues is no longer waiting (it ended, expired or \
                     was answered already)",
                );
            };
            *lock(&parked.slot.context) = context.clone();
            let Some(pending) = parked.pending.take() else {
                return failed(&up.name, "the parked call had nothing pending");
            };
            if pending.answer.is_closed() {
                // 2026-07-28 has no way to withdraw an input request: the round ends here.
                return failed(
                    &up.name,
                    format!(
                        "it withdrew its {} (notifications/cancelled) before this answer came",
                        pending.method
                    ),
                );
            }
            match ask(
                &context,
                &parked.key,
                &pending.method,
                pending.params.clone(),
            )
            .await
            {
                Ok(answer) => {
                    let _ = pending.answer.send(Ok(answer));
                }
                Err(ClientRequestError::InputRequired) => {
                    // No answer in the retry: asked again.
                    parked.pending = Some(pending);
                    return park(up, parked, &context);
                }
                Err(e) => {
                    let _ = pending.answer.send(Err(as_error(e)));
                }
            }
            parked
        }
        None => {
            let turn = match up.admit(&context).await {
                Ok(turn) => turn,
                Err(refused) => return refused,
            };
            let slot = up.inbox.register(context.clone());
            let options = call_options(up, &slot.context, Some(&slot.to_asks));
            // The call outlives this round: it runs under the upstream's deadline on its own.
            let policy = up.policy.clone();
            let task = tokio::spawn(async move {
                let call = std::pin::pin!(client.request_with(method, params, &options));
                policy
                    .within(&TOKIO, call)
                    .await
                    .unwrap_or(Err(ClientError::Timeout(policy.limits().timeout)))
            });
            Parked {
                call: AbortOnDrop(task),
                slot,
                pending: None,
                key: String::new(),
                rounds: 0,
                _turn: Some(turn),
            }
        }
    };
    wait(up, parked, &context).await
}

/// Waits for the parked call's final result, or its next request (which parks it again).
async fn wait(up: &Live, mut parked: Parked, context: &ToolContext) -> Bridged {
    loop {
        tokio::select! {
            r = &mut parked.call.0 => {
                return Bridged::Final(r.unwrap_or(Err(ClientError::Closed)));
            }
            Some(asked) = parked.slot.asks.recv() => {
                parked.rounds += 1;
                if parked.rounds > MAX_ROUNDS {
                    return failed(&up.name, format!("asked for input more than {MAX_ROUNDS} times"));
                }
                let key = format!("in{}", parked.rounds);
                match ask(context, &key, &asked.method, asked.params.clone()).await {
                    Err(ClientRequestError::InputRequired) => {
                        parked.key = key;
                        parked.pending = Some(asked);
                        return park(up, parked, context);
                    }
                    Ok(answer) => {
                        let _ = asked.answer.send(Ok(answer));
                    }
                    Err(e) => {
                        let _ = asked.answer.send(Err(as_error(e)));
                    }
                }
            }
        }
    }
}

fn park(up: &Live, parked: Parked, context: &ToolContext) -> Bridged {
    match up.inbox.park(parked, up.policy.clone()) {
        Some(id) => {
            context.set_request_state(json!({"parked": id}));
            Bridged::AskedClient
        }
        None => failed(&up.name, "too many calls wait for their clients' answers"),
    }
}

/// One upstream, as the handlers use it: its connection while it is up.
pub struct Live {
    /// Its namespace.
    pub name: String,
    /// The connection; `None` while it is down (its supervisor reconnects).
    client: std::sync::Mutex<Option<Arc<McpClient>>>,
    /// The execution policy of its calls: their admission (at most `max_concurrent` in
    /// flight, `max_queued` waiting, its rate limit, the driver's permit) and their deadline.
    pub policy: Arc<UpstreamPolicy>,
    /// Where its requests for input go (the era bridge).
    pub inbox: Arc<Inbox>,
    /// What the gateway counts of it (`/metrics`, `/status`).
    pub stats: Arc<super::observe::UpstreamStats>,
}

impl Live {
    /// An upstream named `name`, not connected yet, whose calls run under `limits`.
    pub fn new(name: String, limits: UpstreamLimits) -> Self {
        Self {
            inbox: Arc::new(Inbox::new(&name)),
            name,
            client: std::sync::Mutex::new(None),
            policy: Arc::new(UpstreamPolicy::new(limits)),
            stats: Arc::default(),
        }
    }

    /// The longest a call to it may take.
    pub fn timeout(&self) -> Duration {
        self.policy.limits().timeout
    }

    /// A call's turn among this upstream's calls, from its policy (waited for until the
    /// call is cancelled); a refusal as the call's answer: cancelled while waiting, as a
    /// closed call; past `max_queued` or the rate limit, a failure naming the upstream.
    pub async fn admit(&self, context: &ToolContext) -> Result<UpstreamTurn, Bridged> {
        let cancel = context.cancellation_token();
        self.policy.admit(&TOKIO, &cancel).await.map_err(|refusal| {
            let code = match refusal {
                UpstreamRefusal::Cancelled => return Bridged::Final(Err(ClientError::Closed)),
                UpstreamRefusal::RateLimited(_) => "UPSTREAM_RATE_LIMITED",
                _ => "UPSTREAM_OVERLOADED",
            };
            Bridged::Failed(McpErrorDetail::new(
                code,
                format!(
                    "upstream {}: the gateway did not send the call: {refusal}",
                    self.name
                ),
            ))
        })
    }

    /// The connection, if the upstream is up.
    pub fn client(&self) -> Option<Arc<McpClient>> {
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the connection (`None`: the upstream is down); returns the old one.
    pub fn set_client(&self, client: Option<Arc<McpClient>>) -> Option<Arc<McpClient>> {
        match &client {
            Some(c) => self.stats.connected(c.era()),
            None => self.stats.disconnected(),
        }
        std::mem::replace(
            &mut *self
                .client
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            client,
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// An upstream's request that names no call goes to the one call in flight; with two in
    /// flight it is refused, never guessed, naming the upstream; with none, too.
    #[tokio::test]
    async fn a_request_goes_to_the_only_call_in_flight_and_is_never_guessed() {
        let inbox = Arc::new(Inbox::new("up"));
        let refused = inbox.route("roots/list", json!({})).await.unwrap_err();
        assert!(
            refused.message.contains("upstream up's roots/list"),
            "{refused:?}"
        );

        let mut one = inbox.register(ToolContext::detached());
        let answering = tokio::spawn(async move {
            let asked = one.asks.recv().await.unwrap();
            assert_eq!(asked.method, "roots/list");
            asked.answer.send(Ok(json!({"roots": []}))).unwrap();
            one
        });
        let answer = inbox.route("roots/list", json!({})).await.unwrap();
        assert_eq!(answer, json!({"roots": []}));
        let one = answering.await.unwrap();

        let two = inbox.register(ToolContext::detached());
        let refused = inbox
            .route("sampling/createMessage", json!({}))
            .await
            .unwrap_err();
        assert!(
            refused
                .message
                .contains("upstream up's sampling/createMessage")
                && refused
                    .message
                    .contains("not exactly one call is in flight"),
            "{refused:?}"
        );
        drop((one, two));
        assert!(
            lock(&inbox.calls).is_empty(),
            "a finished call leaves the inbox"
        );
    }

    fn parked(inbox: &Arc<Inbox>, dropped: Arc<std::sync::atomic::AtomicBool>) -> Parked {
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let flag = Flag(dropped);
        let task = tokio::spawn(async move {
            let _flag = flag;
            std::future::pending::<Result<Value, ClientError>>().await
        });
        Parked {
            call: AbortOnDrop(task),
            slot: inbox.register(ToolContext::detached()),
            pending: None,
            key: String::new(),
            rounds: 0,
            _turn: None,
        }
    }

    /// A parked call nobody retries is dropped after its time, which cancels the upstream
    /// call; at most MAX_PARKED wait at once.
    #[tokio::test]
    async fn parked_calls_expire_and_are_bounded() {
        let inbox = Arc::new(Inbox::default());
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let within = |timeout| Arc::new(UpstreamPolicy::new(UpstreamLimits::new(1, timeout)));
        let id = inbox
            .park(
                parked(&inbox, dropped.clone()),
                within(Duration::from_millis(20)),
            )
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !dropped.load(Ordering::SeqCst) {
            assert!(std::time::Instant::now() < deadline, "never dropped");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(inbox.unpark(id).is_none());
        assert!(lock(&inbox.calls).is_empty());

        let unused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for _ in 0..MAX_PARKED {
            let p = parked(&inbox, unused.clone());
            assert!(inbox.park(p, within(Duration::from_secs(600))).is_some());
        }
        let p = parked(&inbox, unused);
        assert!(
            inbox.park(p, within(Duration::from_secs(600))).is_none(),
            "the cap holds"
        );
    }
}
