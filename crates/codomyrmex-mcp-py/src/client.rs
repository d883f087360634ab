//! [`Client`]: the library's [`McpClient`] for Python (`codomyrmex_mcp._core.Client`), over a
//! stdio child process or Streamable HTTP (with OAuth), in either protocol era.
//!
//! Every operation is one of four ([`Op`]): a request, a notification, the handshake
//! ([`McpClient::negotiate`]) or a paginated list ([`McpClient::list_all`]). Each runs on the
//! process's runtime, either blocking the calling thread with the GIL released
//! ([`Client::call`], for synchronous use; Ctrl-C still interrupts it) or returning at once and
//! reporting to a callback from a blocking-pool thread ([`Client::call_async`], for asyncio,
//! with a [`Pending`] that cancels it). Closing the client ends every call still in flight and
//! waits (briefly) for their callbacks, so that none runs into Python after `close` returned.
//!
//! A failure crosses to Python as `(kind, message, data_json)`: `kind` is the
//! [`ClientError`] variant's name in lower case (`server`, `timeout`, `closed`, `transport`,
//! `protocol`, `era`, `limit`), `data_json` the server's error object for `server` and the HTTP
//! status (or `null`) for `transport`.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{CallOptions, ClientOptions, EraPreference, StdioCommand};
use codomyrmex_mcp::client::{ClientError, McpClient};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::client_oauth::oauth_config;
use crate::runtime::{CLOSING_MESSAGE, detached, runtime, with_python};

pyo3::create_exception!(
    _core,
    ClientFailure,
    PyRuntimeError,
    "A client operation failed: args are (kind, message, data_json), kind one of server, timeout, closed, transport, protocol, era, limit."
);

/// How long a closing client waits for its calls in flight to let go of it.
const RELEASE_WAIT: Duration = Duration::from_secs(2);
/// How often a blocking call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(100);
/// The longest the `server/discover` probe waits before the server counts as legacy (a
/// server that never answers it): shorter when the handshake's own timeout is.
const DEFAULT_PROBE: Duration = Duration::from_secs(10);

/// One client operation.
enum Op {
    Request { method: String, params: Value },
    Notify { method: String, params: Value },
    Handshake(EraPreference),
    List { method: String, key: String },
}

impl Op {
    /// `op` (`request`, `notify`, `handshake`, `list`) with its method and params. For a
    /// handshake, `method` is the era: `auto`, `modern` or `legacy`.
    fn parse(op: &str, method: &str, params_json: &str) -> PyResult<Self> {
        let params = || -> PyResult<Value> {
            match serde_json::from_str::<Value>(params_json) {
                Ok(v @ Value::Object(_)) => Ok(v),
                Ok(_) => Err(PyValueError::new_err("params must be a JSON object")),
                Err(e) => Err(PyValueError::new_err(format!("params: {e}"))),
            }
        };
        match op {
            "request" => Ok(Self::Request {
                method: method.to_owned(),
                params: params()?,
            }),
            "notify" => Ok(Self::Notify {
                method: method.to_owned(),
                params: params()?,
            }),
            "handshake" => Ok(Self::Handshake(era_preference(method)?)),
            "list" => Ok(Self::List {
                method: method.to_owned(),
                key: list_key(method)?,
            }),
            other => Err(PyValueError::new_err(format!(
                "unknown client operation {other:?}"
            ))),
        }
    }

    async fn run(
        self,
        client: &McpClient,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let probe = timeout.map_or(DEFAULT_PROBE, |t| t.min(DEFAULT_PROBE));
        // A handshake may wait out the probe, then has the whole timeout for `initialize`.
        let bound = match self {
            Self::Handshake(_) => timeout.map(|t| t + probe),
            _ => timeout,
        };
        let work = async {
            match self {
                Self::Request { method, params } => {
                    let options = CallOptions {
                        timeout,
                        ..CallOptions::default()
                    };
                    client.request_with(&method, params, &options).await
                }
                Self::Notify { method, params } => {
                    client.notify(&method, params).await.map(|()| Value::Null)
                }
                Self::Handshake(preference) => client.negotiate(preference, probe).await,
                Self::List { method, key } => {
                    let items = client.list_all(&method, &key).await?;
                    Ok(json!({ key: items }))
                }
            }
        };
        match bound {
            Some(t) => tokio::time::timeout(t, work)
                .await
                .map_err(|_| ClientError::Timeout(t))?,
            None => work.await,
        }
    }
}

/// `auto`, `modern` or `legacy`.
fn era_preference(name: &str) -> PyResult<EraPreference> {
    match name {
        "auto" => Ok(EraPreference::Auto),
        "modern" => Ok(EraPreference::Modern),
        "legacy" => Ok(EraPreference::Legacy),
        other => Err(PyValueError::new_err(format!(
            "era must be \"auto\", \"modern\" or \"legacy\", not {other:?}"
        ))),
    }
}

/// The result's array field of a list method.
fn list_key(method: &str) -> PyResult<String> {
    match method {
        "tools/list" => Ok("tools".into()),
        "resources/list" => Ok("resources".into()),
        "resources/templates/list" => Ok("resourceTemplates".into()),
        "prompts/list" => Ok("prompts".into()),
        other => Err(PyValueError::new_err(format!(
            "{other:?} is not a paginated list method"
        ))),
    }
}

/// A failure as `(kind, message, data_json)`.
fn failure(error: &ClientError) -> (&'static str, String, String) {
    let message = error.to_string();
    match error {
        ClientError::Server(e) => (
            "server",
            message,
            serde_json::to_string(e).unwrap_or_else(|_| "null".into()),
        ),
        ClientError::Timeout(_) => ("timeout", message, "null".into()),
        ClientError::Closed => ("closed", message, "null".into()),
        ClientError::Transport { status, .. } => ("transport", message, json!(status).to_string()),
        ClientError::Protocol(_) => ("protocol", message, "null".into()),
        ClientError::Era(_) => ("era", message, "null".into()),
        ClientError::Limit(_) => ("limit", message, "null".into()),
        _ => ("protocol", message, "null".into()),
    }
}

fn failure_err(error: &ClientError) -> PyErr {
    ClientFailure::new_err(failure(error))
}

/// A timeout in seconds from Python: positive and finite, or none.
fn seconds(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_finite() && t > 0.0 => Duration::try_from_secs_f64(t)
            .map(Some)
            .map_err(|e| PyValueError::new_err(format!("timeout: {e}"))),
        Some(t) => Err(PyValueError::new_err(format!(
            "timeout must be a positive number of seconds, not {t}"
        ))),
    }
}

/// The options both transports take: `{"name", "version", "timeout"}` (`clientInfo` and the
/// default request timeout in seconds).
fn client_options(options: &Value) -> PyResult<ClientOptions> {
    let mut out = ClientOptions::default();
    let name = options.get("name").and_then(Value::as_str);
    let version = options.get("version").and_then(Value::as_str);
    if name.is_some() || version.is_some() {
        out.info = json!({
            "name": name.unwrap_or("codomyrmex-mcp-client"),
            "version": version.unwrap_or(codomyrmex_mcp::VERSION),
        });
    }
    out.request_timeout = seconds(options.get("timeout").and_then(Value::as_f64))?;
    Ok(out)
}

fn parse_options(options_json: &str) -> PyResult<Value> {
    match serde_json::from_str::<Value>(options_json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(PyValueError::new_err("options must be a JSON object")),
        Err(e) => Err(PyValueError::new_err(format!("options: {e}"))),
    }
}

fn pairs(value: Option<&Value>, what: &str) -> PyResult<Vec<(String, String)>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|v| (k.clone(), v.to_owned()))
                    .ok_or_else(|| PyValueError::new_err(format!("{what} values must be strings")))
            })
            .collect(),
        Some(_) => Err(PyValueError::new_err(format!("{what} must be a dict"))),
    }
}

/// An MCP client connection (`codomyrmex_mcp._core.Client`).
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct Client {
    /// The connection, until it closes.
    live: Mutex<Option<Arc<McpClient>>>,
    /// Cancelled when the client closes: every call still in flight ends as `closed`.
    closing: CancellationToken,
    /// One clone per [`call_async`](Self::call_async) task, dropped once its callback has
    /// returned: closing waits for them, so none calls into Python after `close`.
    tasks: Arc<()>,
}

/// A call started by [`Client::call_async`] (`codomyrmex_mcp._core.Pending`).
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct Pending {
    abort: AbortHandle,
}

#[pymethods]
impl Pending {
    /// Cancels the call (the request is cancelled on the server); its callback is not
    /// called.
    fn cancel(&self) {
        self.abort.abort();
    }
}

impl Client {
    fn new(client: McpClient) -> Self {
        Self {
            live: Mutex::new(Some(Arc::new(client))),
            closing: CancellationToken::new(),
            tasks: Arc::new(()),
        }
    }

    fn connection(&self) -> Result<Arc<McpClient>, ClientError> {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(ClientError::Closed)
    }

    /// `op` on this client, ended as `closed` when the client closes first.
    fn operation(
        &self,
        op: Op,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Value, ClientError>> + Send + 'static {
        let connection = self.connection();
        let closing = self.closing.clone();
        async move {
            let client = connection?;
            tokio::select! {
                outcome = op.run(&client, timeout) => outcome,
                () = closing.cancelled() => Err(ClientError::Closed),
            }
        }
    }
}

#[pymethods]
impl Client {
    /// Starts `program` with `args` (`env` added to the inherited environment, in `cwd`)
    /// and speaks MCP over its stdin and stdout. `options_json`: `{"name", "version",
    /// "timeout"}`. No request is sent until the handshake.
    #[staticmethod]
    #[pyo3(signature = (program, args, env_json="{}", cwd=None, options_json="{}"))]
    fn stdio(
        program: &str,
        args: Vec<String>,
        env_json: &str,
        cwd: Option<PathBuf>,
        options_json: &str,
    ) -> PyResult<Self> {
        let options = client_options(&parse_options(options_json)?)?;
        let env = pairs(Some(&parse_options(env_json)?), "env")?;
        let command = StdioCommand {
            program: program.to_owned(),
            args,
            env,
            cwd,
        };
        let _entered = runtime()?.enter();
        McpClient::spawn(&command, options)
            .map(Self::new)
            .map_err(|e| failure_err(&e))
    }

    /// Connects to the Streamable HTTP endpoint `url`. `options_json`: `{"name",
    /// "version", "timeout", "headers": {..}, "token", "ca_file", "oauth": {..}}` (see
    /// [`oauth_config`]); `authorize(url) -> redirected_url` takes the user through an
    /// authorization code flow. No request is sent until the handshake.
    #[staticmethod]
    #[pyo3(signature = (url, options_json="{}", authorize=None))]
    fn http(url: &str, options_json: &str, authorize: Option<Py<PyAny>>) -> PyResult<Self> {
        let options = parse_options(options_json)?;
        let client_options = client_options(&options)?;
        let target = HttpTarget {
            url: url.to_owned(),
            headers: pairs(options.get("headers"), "headers")?,
            token: options
                .get("token")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ca_file: options
                .get("ca_file")
                .and_then(Value::as_str)
                .map(PathBuf::from),
        };
        let _entered = runtime()?.enter();
        let client = match options.get("oauth") {
            None | Some(Value::Null) => McpClient::connect_http(target, client_options),
            Some(oauth) => {
                let config = oauth_config(oauth, authorize)?;
                McpClient::connect_http_oauth(target, config, client_options)
            }
        };
        client.map(Self::new).map_err(|e| failure_err(&e))
    }

    /// Runs `op` (`request`, `notify`, `handshake`, `list`; see the module docs) and returns
    /// its result's JSON, blocking with the GIL released; raises `ClientFailure`. `timeout`
    /// in seconds bounds the whole operation.
    #[pyo3(signature = (op, method, params_json="{}", timeout=None))]
    fn call(
        &self,
        py: Python<'_>,
        op: &str,
        method: &str,
        params_json: &str,
        timeout: Option<f64>,
    ) -> PyResult<String> {
        let op = Op::parse(op, method, params_json)?;
        let work = self.operation(op, seconds(timeout)?);
        // The package's one way to wait on Rust: the exit hook ends this wait too.
        let waited = async {
            tokio::pin!(work);
            loop {
                tokio::select! {
                    outcome = &mut work => return PyResult::Ok(outcome),
                    () = tokio::time::sleep(SIGNAL_POLL) => {
                        // Ctrl-C (or another signal handler's exception) ends the wait;
                        // dropping the work cancels the request on the server.
                        Python::attach(|py| py.check_signals())?;
                    }
                }
            }
        };
        let outcome = detached(py, waited, || Err(PyRuntimeError::new_err(CLOSING_MESSAGE)))??;
        outcome.map(|v| v.to_string()).map_err(|e| failure_err(&e))
    }

    /// [`call`](Self::call) without blocking: returns a [`Pending`] at once, and once the
    /// operation ends calls `done(kind, text, data_json)` from another thread: `kind` is
    /// `None` and `text` the result's JSON on success, else the failure's kind and message.
    #[pyo3(signature = (op, method, params_json, timeout, done))]
    fn call_async(
        &self,
        op: &str,
        method: &str,
        params_json: &str,
        timeout: Option<f64>,
        done: Py<PyAny>,
    ) -> PyResult<Pending> {
        let op = Op::parse(op, method, params_json)?;
        let work = self.operation(op, seconds(timeout)?);
        let running = self.tasks.clone();
        let task = runtime()?.spawn(async move {
            let _running = running;
            let (kind, text, data) = match work.await {
                Ok(v) => (None, v.to_string(), "null".to_owned()),
                Err(e) => {
                    let (kind, text, data) = failure(&e);
                    (Some(kind), text, data)
                }
            };
            // A loop that closed meanwhile cannot take the outcome: nothing waits for it.
            let _ = with_python(move |py| {
                done.call1(py, (kind, text, data))?;
                Ok(String::new())
            })
            .await;
        });
        Ok(Pending {
            abort: task.abort_handle(),
        })
    }

    /// Ends the connection: calls in flight end as `closed`, a stdio child gets `grace`
    /// seconds to exit after its stdin closes before it is killed, an HTTP session is ended
    /// with DELETE. Blocks with the GIL released; closing again does nothing.
    #[pyo3(signature = (grace=2.0))]
    fn close(&self, py: Python<'_>, grace: f64) -> PyResult<()> {
        let grace = if grace == 0.0 {
            Duration::ZERO
        } else {
            seconds(Some(grace))?.unwrap_or(Duration::ZERO)
        };
        self.closing.cancel();
        let Some(client) = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Ok(());
        };
        let rt = runtime()?;
        let tasks = &self.tasks;
        py.detach(|| {
            rt.block_on(async move {
                // Calls in flight end once they see `closing`, and their callbacks run
                // (with the GIL, which this thread does not hold).
                let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
                while Arc::strong_count(tasks) > 1 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                let mut client = client;
                loop {
                    match Arc::try_unwrap(client) {
                        Ok(owned) => {
                            owned.close(grace).await;
                            return;
                        }
                        Err(shared) if tokio::time::Instant::now() < deadline => {
                            client = shared;
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        // Still held: dropped here, its transport ends with the last handle.
                        Err(_) => return,
                    }
                }
            });
        });
        Ok(())
    }

    /// Whether [`close`](Self::close) has been called.
    fn is_closed(&self) -> bool {
        self.closing.is_cancelled()
    }

    /// The era spoken: `modern` or `legacy`; `None` once closed.
    fn era(&self) -> Option<&'static str> {
        self.connection().ok().map(|c| match c.era() {
            codomyrmex_mcp::Era::Modern => "modern",
            _ => "legacy",
        })
    }

    /// The negotiated protocol version, once the handshake succeeded.
    fn protocol_version(&self) -> Option<String> {
        self.connection()
            .ok()
            .and_then(|c| c.protocol_version())
            .map(|v| v.as_str().to_owned())
    }
}
