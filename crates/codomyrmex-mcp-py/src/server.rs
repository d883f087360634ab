//! [`Server`]: a [`McpServer`] over a [`ToolRegistry`], with resources and prompts whose
//! contents come from Python, served by the library's transports.
//!
//! Serving blocks the calling thread with the GIL released; the Python side runs it in an
//! executor thread and stops it through a [`Stop`], so that Ctrl-C (which Python sees on the
//! main thread) ends serving the way end of input does: in-flight calls get the grace period.

use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use codomyrmex_mcp::skills::{self as mcp_skills, McpSkillRegistry};
use codomyrmex_mcp::transport::http::{
    AuthConfig, HttpConfig, HttpServer, Jwks, JwtConfig, StaticToken,
};
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServer,
    McpServerConfig, PromptArgument, PromptDefinition, PromptMessage, PromptResult, RateLimit,
    ResourceDefinition,
};
use codomyrmex_mcp::{ResourceError, ResourceRequest};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::loopback::{ClientHandler, Loopback, NotificationHandler};
use crate::registry::ToolRegistry;
use crate::runtime::{CLOSING_MESSAGE, call, closing, detached, with_python};

/// Asks a running `serve_*` to stop (`codomyrmex_mcp._core.Stop`).
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
#[derive(Default)]
pub struct Stop {
    token: CancellationToken,
}

#[pymethods]
impl Stop {
    /// A stop that has not been requested.
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Requests the stop; serving ends as at end of input.
    fn set(&self) {
        self.token.cancel();
    }

    /// Whether the stop was requested.
    fn is_set(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// An MCP server (`codomyrmex_mcp._core.Server`).
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct Server {
    /// Replaced once, by the first `add_skills` (the engine then serves the skill registry).
    server: RwLock<McpServer>,
    skills: OnceLock<Arc<McpSkillRegistry>>,
    resources: Arc<McpResourceRegistry>,
    prompts: Arc<McpPromptRegistry>,
    loopback: OnceLock<Loopback>,
}

/// Seconds as a timeout; 0 (the Python module's "no limit") is a year.
fn timeout(seconds: f64, what: &str) -> PyResult<Duration> {
    if seconds == 0.0 {
        return Ok(Duration::from_secs(365 * 24 * 3600));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be a non-negative number of seconds, got {seconds}"
        ))
    })
}

/// `McpServerConfig` from the JSON of the Python `MCPServerConfig`.
fn config(config_json: &str) -> PyResult<McpServerConfig> {
    let c: Value =
        serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let text = |key: &str, default: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    let mut config = McpServerConfig::new(
        text("name", "codomyrmex-mcp"),
        text("version", codomyrmex_mcp::VERSION),
    );
    if let Some(t) = c.get("default_tool_timeout").and_then(Value::as_f64) {
        config.tool_timeout = timeout(t, "default_tool_timeout")?;
    }
    if let Some(Value::Object(per_tool)) = c.get("per_tool_timeouts") {
        let mut map = HashMap::new();
        for (tool, t) in per_tool {
            let t = t.as_f64().ok_or_else(|| {
                PyValueError::new_err(format!("per_tool_timeouts[{tool:?}] must be a number"))
            })?;
            map.insert(tool.clone(), timeout(t, "a per-tool timeout")?);
        }
        config.tool_timeouts = map;
    }
    let rate = c.get("rate_limit_rate").and_then(Value::as_f64);
    let burst = c.get("rate_limit_burst").and_then(Value::as_u64);
    config.rate_limit = match (rate, burst) {
        (Some(r), _) if r <= 0.0 => None,
        (Some(per_second), Some(burst)) => Some(RateLimit {
            per_second,
            burst: u32::try_from(burst).unwrap_or(u32::MAX).max(1),
        }),
        _ => config.rate_limit,
    };
    Ok(config)
}

fn socket_addr(host: &str, port: u16) -> PyResult<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| PyOSError::new_err(format!("cannot resolve {host:?}: {e}")))?
        .next()
        .ok_or_else(|| PyOSError::new_err(format!("{host:?} has no address")))
}

/// The HTTP transport's configuration: `bind` plus the options of the Python `run_http`
/// (`options_json`): `auth_token`, `jwks` (a file path or the JWKS JSON text), `issuer`,
/// `audience`, `required_scopes`, `allowed_hosts`, `allowed_origins`, and `rate_limits`
/// (false: none, not even per client). The same options, and
/// the same rules, as the CLI's `serve --http`: JWT validation needs `jwks`, `issuer` and
/// `audience` together.
fn http_config(bind: SocketAddr, options_json: &str) -> PyResult<HttpConfig> {
    let options: Value =
        serde_json::from_str(options_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let text = |key: &str| -> PyResult<Option<String>> {
        match options.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PyValueError::new_err(format!("{key} must be a string"))),
        }
    };
    let texts = |key: &str| -> PyResult<Vec<String>> {
        match options.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        PyValueError::new_err(format!("{key} must be a list of strings"))
                    })
                })
                .collect(),
            Some(_) => Err(PyValueError::new_err(format!(
                "{key} must be a list of strings"
            ))),
        }
    };
    let mut auth = AuthConfig::default();
    if let Some(token) = text("auth_token")? {
        if token.is_empty() {
            return Err(PyValueError::new_err("auth_token must not be empty"));
        }
        auth.static_tokens
            .push(StaticToken::new("static-token", token));
    }
    let required_scopes = texts("required_scopes")?;
    match (text("jwks")?, text("issuer")?, text("audience")?) {
        (Some(jwks), Some(issuer), Some(audience)) => {
            let jwks = if jwks.trim_start().starts_with('{') {
                Jwks::from_json(&jwks)
            } else {
                Jwks::from_file(&jwks)
            }
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
            let mut jwt = JwtConfig::new(jwks, issuer);
            jwt.required_scopes = required_scopes;
            auth.jwt = Some(jwt);
            auth.resource = Some(audience);
        }
        (None, None, None) if required_scopes.is_empty() => {}
        _ => {
            return Err(PyValueError::new_err(
                "JWT validation needs jwks, issuer and audience together (required_scopes needs them too)",
            ));
        }
    }
    let auth = (!auth.static_tokens.is_empty() || auth.jwt.is_some()).then_some(auth);
    if let Some(auth) = &auth {
        auth.validate()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    let http = HttpConfig {
        bind,
        auth,
        allowed_hosts: texts("allowed_hosts")?,
        allowed_origins: texts("allowed_origins")?,
        ..HttpConfig::default()
    };
    // `rate_limit_rate=0` turns off every rate limit, the per-client HTTP ones included (as
    // the CLI's `--no-rate-limit`).
    Ok(match options.get("rate_limits") {
        Some(Value::Bool(false)) => http.without_rate_limits(),
        _ => http,
    })
}

/// Calls `callback(message_json)` with the GIL on a blocking thread; resolves to the `str` it
/// returned (empty for `None`), or a description of what it raised.
fn python_callback(
    callback: Py<PyAny>,
) -> impl Fn(Value) -> codomyrmex_mcp::platform::BoxFuture<'static, Result<String, String>>
+ Send
+ Sync
+ 'static {
    let callback = Arc::new(callback);
    move |message: Value| {
        let callback = callback.clone();
        Box::pin(with_python(move |py| {
            let value = call(py, &callback, (message.to_string(),).into_pyobject(py)?)?;
            if value.is_none() {
                Ok(String::new())
            } else {
                value.extract::<String>()
            }
        }))
    }
}

fn os_error(e: impl std::fmt::Display) -> PyErr {
    PyOSError::new_err(e.to_string())
}

/// What `add_skills` returns: the `SKILL.md` URIs published, and each refused skill's path
/// and reason.
type AddedSkills = (Vec<String>, Vec<(String, String)>);

impl Server {
    /// The server as it is now (after any `add_skills`).
    fn current(&self) -> McpServer {
        self.server
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The skill registry, attached to the server on first use.
    fn skill_registry(&self) -> Arc<McpSkillRegistry> {
        self.skills
            .get_or_init(|| {
                let registry = Arc::new(McpSkillRegistry::new());
                let mut server = self
                    .server
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *server = server.clone().with_skills(registry.clone());
                registry
            })
            .clone()
    }
}

#[pymethods]
impl Server {
    /// A server for `registry`, configured by `config_json` (the Python `MCPServerConfig`).
    #[new]
    fn new(registry: &ToolRegistry, config_json: &str) -> PyResult<Self> {
        let resources = Arc::new(McpResourceRegistry::new());
        let prompts = Arc::new(McpPromptRegistry::new());
        let server = McpServer::new(config(config_json)?, registry.tools.clone())
            .with_resources(resources.clone())
            .with_prompts(prompts.clone());
        Ok(Self {
            server: RwLock::new(server),
            skills: OnceLock::new(),
            resources,
            prompts,
            loopback: OnceLock::new(),
        })
    }

    /// Publishes every skill under the directory `path` (the Skills extension, SEP-2640),
    /// read once through the library's one confinement (`codomyrmex_mcp::skills`): no symlink
    /// is followed, hidden names are left out, and the extension's limits hold. Returns the
    /// `SKILL.md` URIs published and the skills refused, as `(path, reason)`. A directory
    /// that cannot be read at all is an `OSError`; a skill already published at the same URI
    /// a `ValueError`. Call it before serving: the first call attaches the skills to the
    /// server.
    fn add_skills(&self, py: Python<'_>, path: PathBuf) -> PyResult<AddedSkills> {
        let loaded = py
            .detach(|| mcp_skills::skills_from_dir(&path))
            .map_err(|e| {
                os_error(format!(
                    "the skills directory {} is unusable: {e}",
                    path.display()
                ))
            })?;
        let registry = self.skill_registry();
        let mut published = Vec::with_capacity(loaded.skills.len());
        for skill in loaded.skills {
            let uri = skill.uri();
            registry
                .add(skill)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            published.push(uri);
        }
        let refused = loaded
            .refused
            .into_iter()
            .map(|(path, why)| (path, why.to_string()))
            .collect();
        Ok((published, refused))
    }

    /// Adds a resource whose text comes from `provider()` (or is empty without one).
    #[pyo3(signature = (uri, name, description=None, mime_type=None, provider=None))]
    fn add_resource(
        &self,
        uri: String,
        name: String,
        description: Option<String>,
        mime_type: Option<String>,
        provider: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let mut def = ResourceDefinition::new(uri.clone(), name);
        def.description = description;
        def.mime_type = mime_type.clone();
        let provider = provider.map(Arc::new);
        let reader = move |_: ResourceRequest| {
            let (uri, mime_type, provider) = (uri.clone(), mime_type.clone(), provider.clone());
            async move {
                let text = match provider {
                    None => String::new(),
                    Some(p) => with_python(move |py| {
                        call(py, &p, PyTuple::empty(py))?
                            .str()
                            .map(|s| s.to_string())
                    })
                    .await
                    .map_err(ResourceError::Failed)?,
                };
                Ok(vec![ResourceContents::Text {
                    uri,
                    mime_type,
                    text,
                    meta: None,
                }])
            }
        };
        self.resources
            .add(def, reader)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Adds an MCP App's HTML as a `ui://` resource (`text/html;profile=mcp-app`) with
    /// `_meta.ui` from `ui_json` (the extension's keys: `csp`, `permissions`, `domain`,
    /// `prefersBorder`), checked as the library checks it.
    #[pyo3(signature = (uri, name, html, title=None, description=None, ui_json="{}"))]
    fn add_ui_resource(
        &self,
        uri: String,
        name: String,
        html: String,
        title: Option<String>,
        description: Option<String>,
        ui_json: &str,
    ) -> PyResult<()> {
        use codomyrmex_mcp::apps::{UiResource, UiResourceMeta};
        let ui: Value = serde_json::from_str(ui_json)
            .map_err(|e| PyValueError::new_err(format!("_meta.ui is not JSON: {e}")))?;
        let mut wrapped = serde_json::Map::new();
        wrapped.insert("ui".into(), ui);
        let meta = UiResourceMeta::from_meta(&wrapped)
            .map_err(|e| PyValueError::new_err(format!("UI resource {uri:?}: {e}")))?
            .unwrap_or_default();
        let mut resource = UiResource::html(uri, name, html).with_meta(meta);
        if let Some(t) = title {
            resource = resource.with_title(t);
        }
        if let Some(d) = description {
            resource = resource.with_description(d);
        }
        resource
            .register(&self.resources)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Whether a resource of this server serves `uri` (a static resource or a template).
    fn serves(&self, uri: &str) -> bool {
        self.resources.serves(uri)
    }

    /// Adds a prompt: `render(arguments)` (a dict of strings) returns its text, sent as one
    /// user message. `arguments` is a list of `{"name", "description", "required"}`.
    fn add_prompt(
        &self,
        name: String,
        description: String,
        arguments_json: &str,
        render: Py<PyAny>,
    ) -> PyResult<()> {
        let arguments: Vec<Value> = serde_json::from_str(arguments_json)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut def = PromptDefinition::new(name.clone(), description);
        for a in arguments {
            let arg_name = a
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| PyValueError::new_err("every prompt argument needs a \"name\""))?;
            let arg_description = a
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            def = def.with_argument(
                if a.get("required").and_then(Value::as_bool).unwrap_or(false) {
                    PromptArgument::required(arg_name, arg_description)
                } else {
                    PromptArgument::optional(arg_name, arg_description)
                },
            );
        }
        let render = Arc::new(render);
        let handler = move |request: codomyrmex_mcp::PromptRequest| {
            let render = render.clone();
            async move {
                let arguments: BTreeMap<String, String> = request.arguments;
                let text = with_python(move |py| {
                    let args = pyo3::types::PyDict::new(py);
                    for (k, v) in arguments {
                        args.set_item(k, v)?;
                    }
                    call(py, &render, (args,).into_pyobject(py)?)?
                        .str()
                        .map(|s| s.to_string())
                })
                .await
                .map_err(|e| McpErrorDetail::new("PromptError", e))?;
                Ok(PromptResult {
                    description: None,
                    messages: vec![PromptMessage::user(ContentBlock::text(text))],
                })
            }
        };
        if self.prompts.add(def, handler) {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "a prompt named {name:?} is already registered"
            )))
        }
    }

    /// Handles one JSON-RPC message (JSON text) on this server's in-memory connection and
    /// returns the response's JSON, or `None` for a notification or a response. While it
    /// waits, `on_client_request(request_json)` answers the server's requests (a 2025-11-25
    /// tool's elicitation, sampling, roots) with the result's JSON; without it they are
    /// answered with an error. `on_notification(notification_json)` takes the server's
    /// notifications meanwhile (progress, log messages), each before the response; its
    /// return value is ignored.
    #[pyo3(signature = (message_json, on_client_request=None, on_notification=None, stop=None))]
    fn handle_json(
        &self,
        py: Python<'_>,
        message_json: &str,
        on_client_request: Option<Py<PyAny>>,
        on_notification: Option<Py<PyAny>>,
        stop: Option<&Stop>,
    ) -> PyResult<Option<String>> {
        let message: Value =
            serde_json::from_str(message_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let handler = on_client_request.map(|callback| {
            let call = python_callback(callback);
            Arc::new(move |request: Value| {
                let reply = call(request);
                Box::pin(async move {
                    let text = reply.await?;
                    serde_json::from_str::<Value>(&text)
                        .map_err(|e| format!("on_client_request did not return JSON: {e}"))
                })
                    as codomyrmex_mcp::platform::BoxFuture<'static, Result<Value, String>>
            }) as ClientHandler
        });
        let on_notification = on_notification.map(|callback| {
            let call = python_callback(callback);
            Arc::new(move |notification: Value| {
                let done = call(notification);
                Box::pin(async move {
                    // The Python side catches and logs what the callback raises.
                    if let Err(e) = done.await {
                        eprintln!("codomyrmex_mcp: on_notification failed: {e}");
                    }
                }) as codomyrmex_mcp::platform::BoxFuture<'static, ()>
            }) as NotificationHandler
        });
        let stop = stop.map(|s| s.token.clone()).unwrap_or_default();
        detached(
            py,
            async {
                let loopback = self
                    .loopback
                    .get_or_init(|| Loopback::open(&self.current()));
                tokio::select! {
                    reply = loopback.send(message, handler, on_notification) => reply,
                    () = stop.cancelled() => Err("the call was abandoned".to_owned()),
                }
            },
            || Err(CLOSING_MESSAGE.to_owned()),
        )?
        .map(|reply| reply.map(|v| v.to_string()))
        .map_err(os_error)
    }

    /// Serves this process's stdin and stdout until stdin closes or `stop` is set.
    fn serve_stdio(&self, py: Python<'_>, stop: &Stop) -> PyResult<()> {
        let token = stop.token.clone();
        // Closing the process stops serving too (`detached` gives it the grace).
        let shutdown = async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = closing().cancelled() => {}
            }
        };
        let server = self.current();
        detached(py, server.serve_stdio_until(shutdown), || Ok(()))?.map_err(os_error)
    }

    /// Serves Streamable HTTP at `http://host:port/mcp` until `stop` is set; calls
    /// `on_ready(port)` once listening (the port the OS picked when `port` is 0).
    /// `options_json` holds authentication and the extra allowed hosts and origins (see
    /// [`http_config`]).
    #[pyo3(signature = (host, port, stop, on_ready=None, options_json="{}"))]
    fn serve_http(
        &self,
        py: Python<'_>,
        host: &str,
        port: u16,
        stop: &Stop,
        on_ready: Option<Py<PyAny>>,
        options_json: &str,
    ) -> PyResult<()> {
        let http = http_config(socket_addr(host, port)?, options_json)?;
        let server = HttpServer::new(self.current().engine().clone(), http);
        let token = stop.token.clone();
        detached(
            py,
            async {
                let listener = server.bind().await.map_err(os_error)?;
                let port = listener.local_addr().map_err(os_error)?.port();
                if let Some(on_ready) = on_ready {
                    Python::attach(|py| on_ready.call1(py, (port,)).map(drop))?;
                }
                // Closing the process stops serving too (`detached` gives it the grace).
                let shutdown = async move {
                    tokio::select! {
                        () = token.cancelled() => {}
                        () = closing().cancelled() => {}
                    }
                };
                server.serve(listener, shutdown).await.map_err(os_error)
            },
            || Ok(()),
        )?
    }
}
