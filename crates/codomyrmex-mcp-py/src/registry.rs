//! [`ToolRegistry`]: the Rust tool registry with Python callables as handlers.
//!
//! Registration, listing, conflicts and argument validation are
//! [`McpToolRegistry`]'s; a call reaches Python only after its arguments passed the schema.
//! The Python side supplies one *invoker* (`codomyrmex_mcp._invoke.invoke`), which calls a
//! handler with the arguments and returns the outcome as `MCPToolResult` JSON (marked when
//! the value was a string, to be sent as text); this module never interprets Python values.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codomyrmex_mcp::JsonObject;
use codomyrmex_mcp::ToolHandler;
use codomyrmex_mcp::platform::BoxFuture;
use codomyrmex_mcp::{
    ClientRequestError, ContentBlock, InputRequest, LoggingLevel, McpErrorDetail, McpToolCall,
    McpToolRegistry, McpToolResult, ToolContext, ToolDefinition, ToolOutput, ToolRegistration,
    ToolSettings,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};

use crate::errors::{ClientRequestFailed, InputRequired, MCPRegistrationError};
use crate::runtime::{CLOSING_MESSAGE, call, detached, runtime, with_python};

/// What a running Python handler can ask of its call: whether it was cancelled (the client
/// cancelled it, it timed out, or the server is stopping), and the request's progress and
/// log notifications. Passed to the invoker; the Python `Context` wraps it.
///
/// The context lives only as long as the call: once the call is answered (it returned, timed
/// out or was cancelled), a Python thread still running it reaches nothing: no notification
/// after the response, no request to the client, and nothing of the connection held.
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct CallState {
    cancelled: Arc<AtomicBool>,
    context: Slot,
}

/// The call's context, emptied when the call ends.
type Slot = Arc<Mutex<Option<ToolContext>>>;

impl CallState {
    fn context(&self) -> Option<ToolContext> {
        self.context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn context_or_err(&self) -> PyResult<ToolContext> {
        self.context().ok_or_else(|| {
            ClientRequestFailed::new_err("the call has ended (it timed out or was cancelled)")
        })
    }
}

#[pymethods]
impl CallState {
    /// Whether the call was cancelled or timed out; its answer has then already been sent.
    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire) || self.context().is_none_or(|c| c.is_cancelled())
    }

    /// Sends a progress notification if the client asked for progress; returns whether one
    /// was sent.
    #[pyo3(signature = (progress, total=None, message=None))]
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.context()
            .is_some_and(|c| c.progress(progress, total, message))
    }

    /// Sends a log notification (`level` is an MCP level such as `"info"`; `data_json` any
    /// JSON) if the client's level lets it through; returns whether one was sent.
    fn log(&self, level: &str, data_json: &str) -> PyResult<bool> {
        let level: LoggingLevel = serde_json::from_value(Value::String(level.to_owned()))
            .map_err(|_| PyValueError::new_err(format!("{level:?} is not an MCP log level (debug, info, notice, warning, error, critical, alert, emergency)")))?;
        let data: Value =
            serde_json::from_str(data_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(self.context().is_some_and(|c| c.log(level, data)))
    }

    /// Asks the client for input and returns its answer as JSON: `kind` is `"elicitation"`
    /// (`params_json` the `elicitation/create` params), `"sampling"` (the
    /// `sampling/createMessage` params) or `"roots"` (`roots/list`; params ignored). `key`
    /// names the request among the call's inputs (2026-07-28: the answer comes back under it
    /// in the retry). Blocks the calling thread (never a runtime worker) with the GIL
    /// released. In the 2026-07-28 era, a request not yet answered raises `InputRequired`:
    /// the tool ends, the client answers, and the tool runs again with the answer.
    fn input(&self, py: Python<'_>, kind: &str, key: &str, params_json: &str) -> PyResult<String> {
        let request = input_request(kind, params_json)?;
        let context = self.context_or_err()?;
        let outcome = detached(
            py,
            async { Some(context.input(key, request).await) },
            || None,
        )?
        .ok_or_else(|| ClientRequestFailed::new_err(CLOSING_MESSAGE))?;
        match settle(outcome) {
            (Settled::Answered, text) => Ok(text),
            (Settled::InputRequired, text) => Err(InputRequired::new_err(text)),
            (Settled::Failed, text) => Err(ClientRequestFailed::new_err(text)),
        }
    }

    /// [`input`](Self::input) without blocking: returns at once, and once the client
    /// answered (or the request failed) calls `done(status, text)` from another thread, where
    /// `status` is `"answered"` (`text` the answer's JSON), `"input_required"` or `"failed"`
    /// (`text` why). For async tools: no thread waits for the client.
    fn input_async(
        &self,
        kind: &str,
        key: &str,
        params_json: &str,
        done: Py<PyAny>,
    ) -> PyResult<()> {
        let request = input_request(kind, params_json)?;
        let context = self.context_or_err()?;
        let key = key.to_owned();
        runtime()?.spawn(async move {
            let (status, text) = settle(context.input(&key, request).await);
            // A loop that closed meanwhile cannot take the answer: nothing is waiting for it.
            let _ = with_python(move |py| {
                call(py, &done, (status.name(), text).into_pyobject(py)?)?;
                Ok(String::new())
            })
            .await;
        });
        Ok(())
    }

    /// Whether the call answers a client's `tools/call` (over a transport or in process),
    /// rather than an in-process `execute`: only such a call's answer is MCP content.
    fn served(&self) -> bool {
        self.context().is_some_and(|c| c.request_id().is_some())
    }

    /// The tool being called.
    fn tool_name(&self) -> String {
        self.context()
            .map(|c| c.tool_name().to_owned())
            .unwrap_or_default()
    }
}

/// The request for input that `kind` names, with its params.
fn input_request(kind: &str, params_json: &str) -> PyResult<InputRequest> {
    let params = || -> PyResult<Value> {
        match serde_json::from_str::<Value>(params_json) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(PyValueError::new_err(
                "the request's params must be a JSON object",
            )),
            Err(e) => Err(PyValueError::new_err(e.to_string())),
        }
    };
    match kind {
        "elicitation" => Ok(InputRequest::Elicit(params()?)),
        "sampling" => Ok(InputRequest::Sample(params()?)),
        "roots" => Ok(InputRequest::ListRoots),
        other => Err(PyValueError::new_err(format!(
            "{other:?} is not a kind of client request (elicitation, sampling, roots)"
        ))),
    }
}

/// How a request for input ended.
#[derive(Clone, Copy)]
enum Settled {
    Answered,
    InputRequired,
    Failed,
}

impl Settled {
    fn name(self) -> &'static str {
        match self {
            Self::Answered => "answered",
            Self::InputRequired => "input_required",
            Self::Failed => "failed",
        }
    }
}

fn settle(outcome: Result<Value, ClientRequestError>) -> (Settled, String) {
    match outcome {
        Ok(answer) => (Settled::Answered, answer.to_string()),
        Err(ClientRequestError::InputRequired) => (
            Settled::InputRequired,
            "the client answers in a retry of this call (2026-07-28 multi round-trip)".to_owned(),
        ),
        Err(e) => (Settled::Failed, e.to_string()),
    }
}

/// When a call's future is dropped (it finished, timed out or was cancelled): marks the call
/// cancelled and takes its context away from the Python side.
struct EndOnDrop {
    cancelled: Arc<AtomicBool>,
    context: Slot,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Release);
        self.context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// A handler that is a Python callable, called through the invoker.
struct PyToolHandler {
    invoker: Arc<Py<PyAny>>,
    handler: Arc<Py<PyAny>>,
}

impl ToolHandler for PyToolHandler {
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        context: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let arguments = Value::Object(arguments).to_string();
            let cancelled = Arc::new(AtomicBool::new(false));
            let slot: Slot = Arc::new(Mutex::new(Some(context)));
            let _guard = EndOnDrop {
                cancelled: cancelled.clone(),
                context: slot.clone(),
            };
            let (invoker, handler) = (self.invoker.clone(), self.handler.clone());
            let outcome = with_python(move |py| {
                let state = Py::new(
                    py,
                    CallState {
                        cancelled,
                        context: slot,
                    },
                )?;
                call(
                    py,
                    &invoker,
                    (handler.clone_ref(py), arguments, state).into_pyobject(py)?,
                )?
                .extract::<String>()
            })
            .await;
            match outcome {
                Ok(text) => tool_output(&text),
                Err(message) => ToolOutput::failure(McpErrorDetail::new("InternalError", message)),
            }
        })
    }
}

/// What the invoker puts before a result whose `data.result` is a string the model should
/// read as it is: the text block is that string, and `{"result": ...}` stays
/// `structuredContent` (as the Python SDK sends a tool's `str`). Without it the text block
/// is the result's JSON, as for every other value.
const TEXT_RESULT: &str = "text:";

/// What the invoker puts before an answer that names its content blocks itself:
/// `{"content": [blocks], "result": MCPToolResult}`. The blocks are sent as they are, for a
/// success or a failure (compatibility mode's answers, shaped in Python).
const CONTENT_RESULT: &str = "content:";

/// An answer after [`CONTENT_RESULT`]: its content blocks and its result.
fn content_answer(json: &str) -> serde_json::Result<ToolOutput> {
    let mut answer: serde_json::Map<String, Value> = serde_json::from_str(json)?;
    let content = answer.remove("content").unwrap_or(Value::Null);
    let result = answer.remove("result").unwrap_or(Value::Null);
    Ok(ToolOutput {
        content: Some(serde_json::from_value::<Vec<ContentBlock>>(content)?),
        result: serde_json::from_value::<McpToolResult>(result)?,
    })
}

/// The output of the invoker's answer: `MCPToolResult` JSON, optionally after
/// [`TEXT_RESULT`], or content and a result after [`CONTENT_RESULT`].
fn tool_output(answer: &str) -> ToolOutput {
    if let Some(json) = answer.strip_prefix(CONTENT_RESULT) {
        return match content_answer(json) {
            Ok(output) => output,
            Err(e) => ToolOutput::failure(McpErrorDetail::new(
                "InternalError",
                format!("the tool's answer is not valid content and MCPToolResult: {e}"),
            )),
        };
    }
    let (json, as_text) = match answer.strip_prefix(TEXT_RESULT) {
        Some(rest) => (rest, true),
        None => (answer, false),
    };
    let result = match serde_json::from_str::<McpToolResult>(json) {
        Ok(result) => result,
        Err(e) => {
            return ToolOutput::failure(McpErrorDetail::new(
                "InternalError",
                format!("the tool's result is not a valid MCPToolResult: {e}"),
            ));
        }
    };
    let text = as_text
        .then(|| result.data()?.get("result")?.as_str().map(str::to_owned))
        .flatten();
    ToolOutput {
        content: text.map(|t| vec![ContentBlock::text(t)]),
        result,
    }
}

/// A handler that accepts every call: the validation-only twin of each tool.
struct AcceptAll;

impl ToolHandler for AcceptAll {
    fn call(self: Arc<Self>, _: JsonObject, _: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async { ToolOutput::from_result(McpToolResult::success(None)) })
    }
}

/// Tools by invocation name, with Python handlers (`codomyrmex_mcp._core.ToolRegistry`).
#[pyclass(module = "codomyrmex_mcp._core", frozen)]
pub struct ToolRegistry {
    pub(crate) tools: Arc<McpToolRegistry>,
    /// The same names and input schemas with handlers that accept every call:
    /// `validate_call` runs the library's validation without running a tool.
    validators: McpToolRegistry,
    invoker: Arc<Py<PyAny>>,
}

/// Reads the definition JSON the Python side writes: `inputSchema` and optionally
/// `description`, `title`, `outputSchema`, `_meta`.
fn definition(name: &str, definition_json: &str) -> PyResult<(ToolDefinition, Value)> {
    let mut object = match serde_json::from_str::<Value>(definition_json) {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            return Err(MCPRegistrationError::new_err(
                "a tool definition must be a JSON object",
            ));
        }
        Err(e) => {
            return Err(MCPRegistrationError::new_err(format!(
                "tool {name:?}: the definition is not JSON: {e}"
            )));
        }
    };
    let schema = object
        .remove("inputSchema")
        .unwrap_or_else(|| json!({"type": "object"}));
    let mut def = ToolDefinition::new(name, schema.clone());
    let text = |v: Option<Value>| v.and_then(|v| v.as_str().map(str::to_owned));
    def.description = text(object.remove("description"));
    def.title = text(object.remove("title"));
    def.output_schema = object.remove("outputSchema").filter(|v| !v.is_null());
    if let Some(Value::Object(meta)) = object.remove("_meta")
        && !meta.is_empty()
    {
        def.meta = Some(meta);
    }
    Ok((def, schema))
}

fn registration_error(e: impl std::fmt::Display) -> PyErr {
    MCPRegistrationError::new_err(e.to_string())
}

fn parse_call(call_json: &str) -> PyResult<McpToolCall> {
    serde_json::from_str(call_json).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl ToolRegistry {
    /// An empty registry calling handlers through `invoker(handler, arguments_json, state)`.
    #[new]
    fn new(invoker: Py<PyAny>) -> Self {
        Self {
            tools: Arc::new(McpToolRegistry::new()),
            validators: McpToolRegistry::new(),
            invoker: Arc::new(invoker),
        }
    }

    /// Registers `handler` (a callable or `None`) under `name`. Identical re-registration is
    /// a no-op; a different definition under a taken name raises `MCPRegistrationError` and
    /// changes nothing.
    #[pyo3(signature = (name, definition_json, handler, timeout=None, deprecated_in=None))]
    fn register(
        &self,
        name: &str,
        definition_json: &str,
        handler: Py<PyAny>,
        timeout: Option<f64>,
        deprecated_in: Option<String>,
    ) -> PyResult<()> {
        let (def, schema) = definition(name, definition_json)?;
        let timeout = match timeout {
            None => None,
            Some(t) => Some(
                Duration::try_from_secs_f64(t)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "timeout must be a positive number of seconds, got {t}"
                        ))
                    })?,
            ),
        };
        let handler = PyToolHandler {
            invoker: self.invoker.clone(),
            handler: Arc::new(handler),
        };
        let registration = ToolRegistration::new(def, Arc::new(handler) as Arc<dyn ToolHandler>)
            .with_settings(ToolSettings {
                timeout,
                deprecated_in,
                ..ToolSettings::default()
            });
        // The served registry decides (and refuses without changing anything); its twin
        // follows. The twin holds only names and input schemas, so it accepts whatever the
        // served registry accepted.
        let existed = self.tools.get(name).is_some();
        self.tools
            .register_tool(registration)
            .map_err(registration_error)?;
        if let Err(e) =
            self.validators
                .register(name, schema, Arc::new(AcceptAll) as Arc<dyn ToolHandler>)
        {
            if !existed {
                self.tools.unregister(name);
            }
            return Err(registration_error(e));
        }
        Ok(())
    }

    /// Removes a tool; returns whether it was registered.
    fn unregister(&self, name: &str) -> bool {
        self.validators.unregister(name);
        self.tools.unregister(name)
    }

    /// The registered names, sorted.
    fn list_tools(&self) -> Vec<String> {
        self.tools.list_tools()
    }

    /// A tool's MCP `Tool` object as JSON, or `None`.
    fn definition_json(&self, name: &str) -> PyResult<Option<String>> {
        self.tools
            .get(name)
            .map(|d| serde_json::to_string(&d).map_err(|e| PyValueError::new_err(e.to_string())))
            .transpose()
    }

    /// Checks a call (`MCPToolCall` JSON) without running the tool: `None` when it would
    /// run, else the `MCPErrorDetail` JSON of why not.
    fn validate_json(&self, py: Python<'_>, call_json: &str) -> PyResult<Option<String>> {
        let call = parse_call(call_json)?;
        let result = detached(
            py,
            async { Some(self.validators.execute(&call).await) },
            || None,
        )?
        .ok_or_else(|| PyRuntimeError::new_err(CLOSING_MESSAGE))?;
        Ok(result
            .error()
            .map(|e| serde_json::to_string(e).unwrap_or_default()))
    }

    /// Executes a call (`MCPToolCall` JSON) and returns the `MCPToolResult` JSON. The GIL is
    /// released while the call runs; the handler takes it back for its body only.
    fn execute_json(&self, py: Python<'_>, call_json: &str) -> PyResult<String> {
        let call = parse_call(call_json)?;
        let tools = self.tools.clone();
        let result = detached(py, async move { Some(tools.execute(&call).await) }, || None)?
            .ok_or_else(|| PyRuntimeError::new_err(CLOSING_MESSAGE))?;
        serde_json::to_string(&result).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
