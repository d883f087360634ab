//! [`Server`]: a [`McpServer`] over a [`ToolRegistry`], with resources and prompts whose
//! contents come from Python, served by the library's transports.
//!
//! Serving blocks the calling thread with the GIL released; the Python side runs it in an
//! executor thread and stops it through a [`Stop`], so that Ctrl-C (which Python sees on the
//! main thread) ends serving the way end of input does: in-flight calls get the grace period.

use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use codomyrmex_mcp::resources::{ResourceError, ResourceRequest};
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::wire::types::ResourceContents;
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServer,
    McpServerConfig, PromptArgument, PromptDefinition, PromptMessage, PromptResult, RateLimit,
    ResourceDefinition,
};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::loopback::Loopback;
use crate::registry::ToolRegistry;
use crate::runtime::{runtime, with_python};

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
    server: McpServer,
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

fn os_error(e: impl std::fmt::Display) -> PyErr {
    PyOSError::new_err(e.to_string())
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
            server,
            resources,
            prompts,
            loopback: OnceLock::new(),
        })
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
                    Some(p) => {
                        with_python(move |py| p.call0(py)?.bind(py).str().map(|s| s.to_string()))
                            .await
                            .map_err(ResourceError::Failed)?
                    }
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
        let handler = move |request: codomyrmex_mcp::prompts::PromptRequest| {
            let render = render.clone();
            async move {
                let arguments: BTreeMap<String, String> = request.arguments;
                let text = with_python(move |py| {
                    let args = pyo3::types::PyDict::new(py);
                    for (k, v) in arguments {
                        args.set_item(k, v)?;
                    }
                    render
                        .call1(py, (args,))?
                        .bind(py)
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
    /// returns the response's JSON, or `None` for a notification or a response.
    fn handle_json(&self, py: Python<'_>, message_json: &str) -> PyResult<Option<String>> {
        let message: Value =
            serde_json::from_str(message_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let rt = runtime()?;
        py.detach(|| {
            rt.block_on(async {
                let loopback = self.loopback.get_or_init(|| Loopback::open(&self.server));
                loopback.send(message).await
            })
        })
        .map(|reply| reply.map(|v| v.to_string()))
        .map_err(os_error)
    }

    /// Serves this process's stdin and stdout until stdin closes or `stop` is set.
    fn serve_stdio(&self, py: Python<'_>, stop: &Stop) -> PyResult<()> {
        let rt = runtime()?;
        let shutdown = stop.token.clone().cancelled_owned();
        py.detach(|| rt.block_on(self.server.serve_stdio_until(shutdown)))
            .map_err(os_error)
    }

    /// Serves Streamable HTTP at `http://host:port/mcp` until `stop` is set; calls
    /// `on_ready(port)` once listening (the port the OS picked when `port` is 0).
    #[pyo3(signature = (host, port, stop, on_ready=None))]
    fn serve_http(
        &self,
        py: Python<'_>,
        host: &str,
        port: u16,
        stop: &Stop,
        on_ready: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let rt = runtime()?;
        let http = HttpConfig {
            bind: socket_addr(host, port)?,
            ..HttpConfig::default()
        };
        let server = HttpServer::new(self.server.engine().clone(), http);
        let token = stop.token.clone();
        py.detach(|| {
            rt.block_on(async {
                let listener = server.bind().await.map_err(os_error)?;
                let port = listener.local_addr().map_err(os_error)?.port();
                if let Some(on_ready) = on_ready {
                    Python::attach(|py| on_ready.call1(py, (port,)).map(drop))?;
                }
                server
                    .serve(listener, token.cancelled_owned())
                    .await
                    .map_err(os_error)
            })
        })
    }
}
