//! [`McpToolRegistry`]: tools by invocation name, with schema validation and safe execution.
//!
//! The registry is shared by a running server, so every method takes `&self`. Listing is
//! deterministic (sorted by name). Registering a name again with an identical schema is
//! idempotent; with a different schema it fails closed and changes nothing.
//!
//! The registry knows nothing about JSON-RPC or transports. The engine maps its results onto
//! the wire.

use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures_util::FutureExt as _;

use crate::sync::{Changes, Generation};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::context::ToolContext;
use crate::invocation::{Failure, Gate};
use crate::policy::{ExecutionPolicy, HandlerKind, Refusal};
use crate::schema::{JsonObject, McpErrorDetail, McpToolCall, McpToolResult};

mod header_params;
mod registered;
pub mod resolve;
use crate::validation::SchemaValidator;
use crate::wire::{ContentBlock, ToolAnnotations};
pub use header_params::HeaderParam;
use header_params::header_params;

// Its one public path is `platform::BoxFuture`.
pub(crate) use crate::platform::BoxFuture;

/// The longest tool name MCP allows.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Why a registration was refused. The registry is unchanged whenever this is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpRegistrationError {
    /// The name breaks MCP's rule: 1 to 128 characters from `A-Z a-z 0-9 _ - .`.
    #[error("tool name {name:?} is invalid: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The input or output schema is not acceptable.
    #[error("tool {name:?}: {which} schema is invalid: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// `"input"` or `"output"`.
        which: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The tool's `_meta.ui` (the MCP Apps extension) is not what the extension allows.
    #[error("tool {name:?}: {reason}")]
    InvalidUiMeta {
        /// The tool.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The name is taken by a tool with a different definition.
    #[error("tool {name:?} is already registered with a different definition: {difference}")]
    Conflict {
        /// The tool.
        name: String,
        /// Where the two definitions differ, as a JSON pointer and both values.
        difference: String,
    },
}

/// A tool's description as MCP's `Tool` object (`name`, `title`, `description`,
/// `inputSchema`, `outputSchema`, `annotations`, `icons`, `_meta`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The invocation name, e.g. `file_utility.read_file_content`.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema (2020-12) of the arguments object.
    pub input_schema: Value,
    /// The JSON Schema of `structuredContent`, if the tool declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// Icons, as MCP `Icon` objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Metadata MCP has no field for (category, tags, version, ...).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ToolDefinition {
    /// A definition with a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            icons: None,
            meta: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Adds a `_meta` entry.
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }
}

/// How the server runs a tool: settings that are not part of its MCP description.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSettings {
    /// Overrides the server's default timeout.
    pub timeout: Option<Duration>,
    /// The version in which the tool was deprecated; calling it logs a warning once.
    pub deprecated_in: Option<String>,
    /// Whether a call may run as a task (see [`TaskSupport`]).
    pub task_support: TaskSupport,
    /// The handler blocks its thread (synchronous file or network I/O, heavy computation).
    /// Each call the engine hands out then runs on the driver's blocking pool (tokio's, in
    /// `codomyrmex-mcp`), so it holds up no other request. [`McpToolRegistry::execute`] runs
    /// it on the caller's task.
    ///
    /// Handlers run on the server's runtime otherwise, and one that blocks there stalls the
    /// worker it runs on, and with it the I/O that worker drives: `ping` and other calls
    /// may wait for it. Over stdio a call's first poll runs in the connection's read loop,
    /// so such a call holds up the lines behind it (the connection then runs its next calls
    /// on tasks of their own for a while). A blocking call cannot be interrupted: on
    /// cancellation or timeout the client gets its answer at once, while the handler runs on
    /// to its end (it can watch [`ToolContext::is_cancelled`](crate::ToolContext::is_cancelled)
    /// to stop early).
    pub blocking: bool,
}

/// Whether a tool's calls may run as tasks: the `io.modelcontextprotocol/tasks` extension
/// (2026-07-28) and the experimental tasks of 2025-11-25 (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Calls always run synchronously (the default).
    #[default]
    Forbidden,
    /// A call becomes a task when the client supports tasks and the tool runs long.
    Optional,
    /// Calls must run as tasks: a client that cannot take a task is refused (`-32021` on
    /// 2026-07-28, `-32601` on 2025-11-25 without the `task` parameter).
    Required,
}

impl TaskSupport {
    /// The wire value of `execution.taskSupport` (2025-11-25).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// What a tool produced: the seed's result plus, optionally, explicit MCP content.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The outcome, in the seed's shape.
    pub result: McpToolResult,
    /// Content blocks to send instead of the default text rendering of `result`.
    pub content: Option<Vec<ContentBlock>>,
}

impl ToolOutput {
    /// Wraps a result with the default rendering.
    pub fn from_result(result: McpToolResult) -> Self {
        Self {
            result,
            content: None,
        }
    }

    /// A successful output made only of content blocks (no structured data).
    pub fn content(content: Vec<ContentBlock>) -> Self {
        Self {
            result: McpToolResult::success(None),
            content: Some(content),
        }
    }

    /// A failure.
    pub fn failure(error: McpErrorDetail) -> Self {
        Self::from_result(McpToolResult::failure(error))
    }
}

/// Values a handler may return.
pub trait IntoToolOutput {
    /// Converts into a [`ToolOutput`].
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for McpToolResult {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::from_result(self)
    }
}

impl IntoToolOutput for Vec<ContentBlock> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::content(self)
    }
}

impl IntoToolOutput for Result<Value, McpErrorDetail> {
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(v) => ToolOutput::from_result(McpToolResult::success_value(v)),
            Err(e) => ToolOutput::failure(e),
        }
    }
}

impl IntoToolOutput for Result<McpToolResult, McpErrorDetail> {
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(r) => ToolOutput::from_result(r),
            Err(e) => ToolOutput::failure(e),
        }
    }
}

impl IntoToolOutput for Result<ToolOutput, McpErrorDetail> {
    fn into_tool_output(self) -> ToolOutput {
        self.unwrap_or_else(ToolOutput::failure)
    }
}

/// A type-erased tool implementation. Most users never implement this: closures and
/// functions become handlers through [`IntoToolHandler`].
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the tool. Arguments have already been validated against the input schema.
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        context: ToolContext,
    ) -> BoxFuture<'static, ToolOutput>;
}

/// Conversion into a handler. Implemented for:
/// - `Fn(JsonObject) -> R` and `Fn(JsonObject, ToolContext) -> R`, where `R` is an
///   [`IntoToolOutput`] (such as `Result<Value, McpErrorDetail>` or `McpToolResult`);
/// - the same returning a future of such an `R`;
/// - an `Arc<dyn ToolHandler>` (marker [`Direct`]).
///
/// The `Marker` parameter only tells the impls apart; inference fills it in.
pub trait IntoToolHandler<Marker>: Send + Sync + 'static {
    /// Converts `self`.
    fn into_handler(self) -> Arc<dyn ToolHandler>;
}

/// Marker: a sync handler taking arguments.
pub struct SyncArgs<R>(PhantomData<fn() -> R>);
/// Marker: an async handler taking arguments.
pub struct AsyncArgs<R>(PhantomData<fn() -> R>);
/// Marker: a sync handler taking arguments and a context.
pub struct SyncArgsContext<R>(PhantomData<fn() -> R>);
/// Marker: an async handler taking arguments and a context.
pub struct AsyncArgsContext<R>(PhantomData<fn() -> R>);
/// Marker: an `Arc<dyn ToolHandler>` or a concrete `ToolHandler`.
pub struct Direct;

struct FnHandler<F, M> {
    f: F,
    _marker: PhantomData<fn() -> M>,
}

impl<F, R> ToolHandler for FnHandler<F, SyncArgs<R>>
where
    F: Fn(JsonObject) -> R + Send + Sync + 'static,
    R: IntoToolOutput + 'static,
{
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        _: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move { (self.f)(arguments).into_tool_output() })
    }
}

impl<F, Fut> ToolHandler for FnHandler<F, AsyncArgs<Fut>>
where
    F: Fn(JsonObject) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        _: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        // `map`, not `async move { fut.await... }`: an async block would hold `fut` twice
        // (its capture and the value it awaits), and the box would be that large.
        Box::pin((self.f)(arguments).map(IntoToolOutput::into_tool_output))
    }
}

impl<F, R> ToolHandler for FnHandler<F, SyncArgsContext<R>>
where
    F: Fn(JsonObject, ToolContext) -> R + Send + Sync + 'static,
    R: IntoToolOutput + 'static,
{
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        cx: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move { (self.f)(arguments, cx).into_tool_output() })
    }
}

impl<F, Fut> ToolHandler for FnHandler<F, AsyncArgsContext<Fut>>
where
    F: Fn(JsonObject, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoToolOutput,
{
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        cx: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        // `map`: see `AsyncArgs`.
        Box::pin((self.f)(arguments, cx).map(IntoToolOutput::into_tool_output))
    }
}

macro_rules! impl_into_handler {
    ($marker:ident, $out:ident, ($($arg:ty),*), $($bounds:tt)*) => {
        impl<F, $out> IntoToolHandler<$marker<$out>> for F
        where
            F: Fn($($arg),*) -> $out + Send + Sync + 'static,
            $($bounds)*
        {
            fn into_handler(self) -> Arc<dyn ToolHandler> {
                Arc::new(FnHandler::<F, $marker<$out>> { f: self, _marker: PhantomData })
            }
        }
    };
}

impl_into_handler!(SyncArgs, R, (JsonObject), R: IntoToolOutput + 'static);
impl_into_handler!(AsyncArgs, Fut, (JsonObject), Fut: Future + Send + 'static, Fut::Output: IntoToolOutput);
impl_into_handler!(SyncArgsContext, R, (JsonObject, ToolContext), R: IntoToolOutput + 'static);
impl_into_handler!(AsyncArgsContext, Fut, (JsonObject, ToolContext), Fut: Future + Send + 'static, Fut::Output: IntoToolOutput);

impl IntoToolHandler<Direct> for Arc<dyn ToolHandler> {
    fn into_handler(self) -> Arc<dyn ToolHandler> {
        self
    }
}

/// A complete registration: the MCP description, the run settings and the handler. This is
/// what `#[mcp_tool]` produces.
#[derive(Clone)]
pub struct ToolRegistration {
    /// The MCP description.
    pub definition: ToolDefinition,
    /// How the server runs it.
    pub settings: ToolSettings,
    /// The implementation.
    pub handler: Arc<dyn ToolHandler>,
}

impl std::fmt::Debug for ToolRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistration")
            .field("definition", &self.definition)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ToolRegistration {
    /// A registration from a definition and a handler, with default settings.
    pub fn new<M>(definition: ToolDefinition, handler: impl IntoToolHandler<M>) -> Self {
        Self {
            definition,
            settings: ToolSettings::default(),
            handler: handler.into_handler(),
        }
    }

    /// Sets the run settings.
    pub fn with_settings(mut self, settings: ToolSettings) -> Self {
        self.settings = settings;
        self
    }
}

/// A registered tool: its definition, compiled validators and handler.
pub(crate) struct RegisteredTool {
    pub(crate) definition: ToolDefinition,
    /// The definition in wire form, computed once.
    pub(crate) wire: Value,
    pub(crate) settings: ToolSettings,
    /// The parameters a modern HTTP client mirrors in `Mcp-Param-*` headers.
    pub(crate) header_params: Vec<HeaderParam>,
    input_validator: SchemaValidator,
    output_validator: Option<SchemaValidator>,
    handler: Arc<dyn ToolHandler>,
    deprecation_warned: std::sync::atomic::AtomicBool,
}

/// Tools by invocation name.
///
/// Register a handler under a name with its input schema, then execute calls: the arguments
/// are validated against the schema before the handler runs, and a failure is a result,
/// not a panic.
///
/// ```
/// use codomyrmex_mcp_core::{McpErrorDetail, McpToolCall, McpToolRegistry};
/// use serde_json::{Map, Value, json};
///
/// let registry = McpToolRegistry::new();
/// registry.register(
///     "text.len",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
///         Ok(json!(args["text"].as_str().map_or(0, str::len)))
///     },
/// )?;
/// assert_eq!(registry.list_tools(), ["text.len"]);
///
/// let call: McpToolCall =
///     serde_json::from_value(json!({"tool_name": "text.len", "arguments": {"text": "hello"}}))?;
/// let result = futures_executor::block_on(registry.execute(&call));
/// assert_eq!(result.status(), "success");
/// assert_eq!(result.data().map(|d| d["result"].clone()), Some(json!(5)));
///
/// // Arguments that break the schema never reach the handler.
/// let bad: McpToolCall =
///     serde_json::from_value(json!({"tool_name": "text.len", "arguments": {"text": 5}}))?;
/// assert_eq!(futures_executor::block_on(registry.execute(&bad)).status(), "failure");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct McpToolRegistry {
    tools: RwLock<BTreeMap<String, Arc<RegisteredTool>>>,
    generation: Generation,
    /// Whether any tool ever registered has `Mcp-Param-*` parameters; until one has, the
    /// modern HTTP header check need not look the called tool up.
    header_params_seen: std::sync::atomic::AtomicBool,
    /// The admission bound of [`execute`](Self::execute)'s direct calls, made and taken by
    /// the execution policy ([`crate::policy`]) as a session's is.
    gate: Gate,
    /// The policy that admits direct calls, with no rate limit (no server configuration
    /// governs them; a served engine's calls have its configured limits).
    policy: ExecutionPolicy,
    /// The deadline of a direct call to a tool without its own `timeout`.
    timeout: Duration,
    /// Asked about called names no tool is registered under ([`resolve`](Self::resolve)).
    resolver: RwLock<Option<Arc<dyn resolve::ToolResolver>>>,
}

impl Default for McpToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for McpToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolRegistry")
            .field("tools", &self.list_tools())
            .finish()
    }
}

/// Checks a tool name against MCP's rule.
pub fn validate_tool_name(name: &str) -> Result<(), McpRegistrationError> {
    let fail = |reason: &str| {
        Err(McpRegistrationError::InvalidName {
            name: name.chars().take(MAX_TOOL_NAME_LEN + 8).collect(),
            reason: reason.to_owned(),
        })
    };
    if name.is_empty() {
        return fail("it is empty");
    }
    if name.len() > MAX_TOOL_NAME_LEN {
        return fail("it is longer than 128 characters");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(McpRegistrationError::InvalidName {
            name: name.to_owned(),
            reason: format!("character {c:?} is not one of A-Z a-z 0-9 _ - ."),
        });
    }
    Ok(())
}

fn compile_schema(
    name: &str,
    which: &'static str,
    schema: &Value,
    must_be_object: bool,
) -> Result<SchemaValidator, McpRegistrationError> {
    let invalid = |reason: String| McpRegistrationError::InvalidSchema {
        name: name.to_owned(),
        which,
        reason,
    };
    let Value::Object(obj) = schema else {
        return Err(invalid("a schema must be a JSON object".into()));
    };
    if must_be_object && obj.get("type") != Some(&json!("object")) {
        return Err(invalid(r#"the root must declare "type": "object""#.into()));
    }
    // The common subset is checked here and validated by a built-in validator; any other
    // schema is built against its declared dialect (2020-12 by default), checked against its
    // meta-schema first. Network and file `$ref`s are never fetched: the crate is built
    // without resolvers, so they fail here instead.
    SchemaValidator::new(schema).map_err(invalid)
}

/// The first place where two JSON values differ, as `pointer: a != b`.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match y.get(k) {
                    None => return Some(format!("{p} is only in the registered definition")),
                    Some(vb) => {
                        if let Some(d) = first_difference(&p, va, vb) {
                            return Some(d);
                        }
                    }
                }
            }
            y.keys().find(|k| !x.contains_key(*k)).map(|k| {
                format!(
                    "{path}/{} is only in the new definition",
                    k.replace('~', "~0").replace('/', "~1")
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(&format!("{path}/{i}"), va, vb)),
        _ if a == b => None,
        _ => Some(format!(
            "{}: registered {a} but new {b}",
            if path.is_empty() { "/" } else { path }
        )),
    }
}

impl McpToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        let defaults = crate::config::McpServerConfig::default();
        Self {
            tools: RwLock::new(BTreeMap::new()),
            generation: Generation::new(),
            header_params_seen: std::sync::atomic::AtomicBool::new(false),
            gate: crate::policy::gate(&defaults),
            policy: ExecutionPolicy::unlimited(),
            timeout: defaults.tool_timeout,
            resolver: RwLock::new(None),
        }
    }

    /// Registers `handler` under `name` with `input_schema`.
    ///
    /// Registering the same name with a JSON-equal schema again is a no-op that returns `Ok`.
    /// A different schema under a taken name is refused, and nothing changes.
    pub fn register<M>(
        &self,
        name: impl Into<String>,
        input_schema: Value,
        handler: impl IntoToolHandler<M>,
    ) -> Result<(), McpRegistrationError> {
        self.register_tool(ToolRegistration::new(
            ToolDefinition::new(name, input_schema),
            handler,
        ))
    }

    /// Registers a complete [`ToolRegistration`]. The same idempotence and conflict rules
    /// apply, comparing whole definitions.
    pub fn register_tool(
        &self,
        registration: ToolRegistration,
    ) -> Result<(), McpRegistrationError> {
        let ToolRegistration {
            definition,
            settings,
            handler,
        } = registration;
        validate_tool_name(&definition.name)?;
        if let Some(meta) = &definition.meta {
            crate::wire::apps::UiToolMeta::from_tool_meta(meta).map_err(|e| {
                McpRegistrationError::InvalidUiMeta {
                    name: definition.name.clone(),
                    reason: e.0,
                }
            })?;
        }
        let wire =
            serde_json::to_value(&definition).map_err(|e| McpRegistrationError::InvalidSchema {
                name: definition.name.clone(),
                which: "input",
                reason: e.to_string(),
            })?;
        // Cheap check first: an identical re-registration needs no compilation.
        if let Some(existing) = self.read().get(&definition.name) {
            return match first_difference("", &existing.wire, &wire) {
                None => Ok(()),
                Some(difference) => Err(McpRegistrationError::Conflict {
                    name: definition.name,
                    difference,
                }),
            };
        }
        let input_validator =
            compile_schema(&definition.name, "input", &definition.input_schema, true)?;
        let output_validator = definition
            .output_schema
            .as_ref()
            .map(|s| compile_schema(&definition.name, "output", s, false))
            .transpose()?;
        let tool = Arc::new(RegisteredTool {
            header_params: header_params(&definition.input_schema),
            definition,
            wire,
            settings,
            input_validator,
            output_validator,
            handler,
            deprecation_warned: std::sync::atomic::AtomicBool::new(false),
        });
        {
            let mut tools = self.write();
            // Re-check under the write lock: another thread may have won the race.
            if let Some(existing) = tools.get(&tool.definition.name) {
                return match first_difference("", &existing.wire, &tool.wire) {
                    None => Ok(()),
                    Some(difference) => Err(McpRegistrationError::Conflict {
                        name: tool.definition.name.clone(),
                        difference,
                    }),
                };
            }
            if !tool.header_params.is_empty() {
                self.header_params_seen
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            tools.insert(tool.definition.name.clone(), tool);
        }
        self.generation.bump();
        Ok(())
    }

    /// Moves tool `from` to the name `to`, its handler, settings and schemas unchanged (a
    /// server that spells its names another way, as the CLI's portable names do). Returns
    /// whether a tool was named `from`. Refused, with nothing changed, when `to` is not a
    /// valid name or another tool has it.
    pub fn rename(&self, from: &str, to: impl Into<String>) -> Result<bool, McpRegistrationError> {
        let to = to.into();
        validate_tool_name(&to)?;
        let Some(old) = self.lookup(from) else {
            return Ok(false);
        };
        if from == to {
            return Ok(true);
        }
        let mut definition = old.definition.clone();
        definition.name.clone_from(&to);
        let wire =
            serde_json::to_value(&definition).map_err(|e| McpRegistrationError::InvalidSchema {
                name: to.clone(),
                which: "input",
                reason: e.to_string(),
            })?;
        let input_validator = compile_schema(&to, "input", &definition.input_schema, true)?;
        let output_validator = definition
            .output_schema
            .as_ref()
            .map(|s| compile_schema(&to, "output", s, false))
            .transpose()?;
        let tool = Arc::new(RegisteredTool {
            header_params: old.header_params.clone(),
            definition,
            wire,
            settings: old.settings.clone(),
            input_validator,
            output_validator,
            handler: old.handler.clone(),
            deprecation_warned: std::sync::atomic::AtomicBool::new(false),
        });
        {
            let mut tools = self.write();
            if tools.contains_key(&to) {
                return Err(McpRegistrationError::Conflict {
                    name: to,
                    difference: format!("another tool has this name; {from:?} keeps its own"),
                });
            }
            if tools.remove(from).is_none() {
                return Ok(false);
            }
            tools.insert(to, tool);
        }
        self.generation.bump();
        Ok(true)
    }

    /// Removes a tool. Returns whether it was registered.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = self.write().remove(name).is_some();
        if removed {
            self.generation.bump();
        }
        removed
    }

    /// The registered names, sorted.
    pub fn list_tools(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A tool's definition (a copy; no lock is held).
    pub fn get(&self, name: &str) -> Option<ToolDefinition> {
        self.read().get(name).map(|t| t.definition.clone())
    }

    /// Every definition, sorted by name.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.read().values().map(|t| t.definition.clone()).collect()
    }

    /// A receiver that changes whenever the set of tools changes.
    pub fn subscribe(&self) -> Changes {
        self.generation.subscribe()
    }

    /// The number of changes to the set of tools so far (what [`subscribe`](Self::subscribe)
    /// counts); a cache of anything derived from the tools is valid while it stays the same.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// Whether any tool registered so far has `Mcp-Param-*` parameters (see
    /// [`HeaderParam`]): when none has, a transport need not look at a call's headers.
    pub fn has_header_params(&self) -> bool {
        self.header_params_seen
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs `f` on the `x-mcp-header` parameters of tool `name`, if it exists (the HTTP
    /// transport maps them onto header names). `None` for an unknown tool.
    pub fn with_header_params<R>(
        &self,
        name: &str,
        f: impl FnOnce(&[HeaderParam]) -> R,
    ) -> Option<R> {
        self.lookup(name).map(|tool| f(&tool.header_params))
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.read().get(name).cloned()
    }

    /// Whether any registered tool may run as a task.
    pub(crate) fn supports_tasks(&self) -> bool {
        self.read()
            .values()
            .any(|t| t.settings.task_support != TaskSupport::Forbidden)
    }

    /// A page of tools in wire form, starting after `after`; also says whether more follow.
    pub(crate) fn page(&self, after: Option<&str>, size: usize) -> (Vec<Value>, Option<String>) {
        crate::util::page_after(&self.read(), after, size, |t| t.wire.clone())
    }

    /// Executes a call: looks the tool up, validates the arguments and runs the handler under
    /// the one execution policy, on the default runtime ([`crate::driver::default_runtime`]:
    /// tokio's, when the `codomyrmex-mcp` library is linked in).
    ///
    /// Never panics and never returns an invalid result: an unknown tool, invalid arguments, a
    /// handler error, a handler panic or an overrun all become failures. The call runs under
    /// the policy every `tools/call` runs under: admitted by the execution policy
    /// (`crate::policy`) into this registry's gate, made as a session's is (the default
    /// `max_concurrent_requests` running, `max_queued_requests` waiting; past that the call
    /// fails `OVERLOADED` at once; no rate limit applies), then run by the core driver: its permit, the tool's
    /// `timeout` setting or else the default `tool_timeout` (60 s; an overrun fails
    /// `TIMEOUT`), the one unwind guard, and the runtime's blocking pool for a blocking tool.
    pub async fn execute(&self, call: &McpToolCall) -> McpToolResult {
        self.execute_on(crate::driver::default_runtime(), call)
            .await
    }

    /// [`execute`](Self::execute) on `rt`.
    pub(crate) async fn execute_on(
        &self,
        rt: &'static dyn crate::driver::Runtime,
        call: &McpToolCall,
    ) -> McpToolResult {
        let Some(tool) = self.lookup(&call.tool_name) else {
            return McpToolResult::failure(tool_not_found(&call.tool_name));
        };
        let name = &tool.definition.name;
        let admission = match self
            .policy
            .admit(&self.gate, HandlerKind::Tool, name, rt.now())
        {
            Ok(admission) => admission,
            Err(refusal) => return McpToolResult::failure(tool_refusal(name, refusal)),
        };
        let timeout = tool.settings.timeout.unwrap_or(self.timeout);
        let blocking = tool.settings.blocking;
        let work = tool
            .clone()
            .invoke_owned(call.arguments.clone(), ToolContext::detached());
        let outcome = crate::driver::policied(
            rt,
            Some(timeout),
            crate::sync::CancellationToken::new(),
            blocking,
            admission,
            work,
        )
        .await;
        match outcome {
            Ok(output) => output.result,
            Err(Some(failure)) => McpToolResult::failure(tool_failure(name, failure)),
            // Nothing cancels a direct call but its caller, who dropped the future.
            Err(None) => McpToolResult::failure(McpErrorDetail::new(
                "CANCELLED",
                format!("Tool {name} was cancelled"),
            )),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<RegisteredTool>>> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<RegisteredTool>>> {
        self.tools.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The failure for an unknown tool.
pub(crate) fn tool_not_found(name: &str) -> McpErrorDetail {
    let shown: String = name.chars().take(MAX_TOOL_NAME_LEN).collect();
    McpErrorDetail::new("ToolNotFound", format!("Unknown tool: {shown}"))
}

/// The tool failure for a call the execution policy did not admit: `RATE_LIMITED` (with
/// `retry_after_ms`) or `OVERLOADED`, the same through `tools/call` and
/// [`McpToolRegistry::execute`].
pub(crate) fn tool_refusal(name: &str, refusal: Refusal) -> McpErrorDetail {
    match refusal {
        Refusal::RateLimited(retry_after) => {
            let ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
            McpErrorDetail::new(
                "RATE_LIMITED",
                format!("Rate limit exceeded for tool {name}; retry in {ms} ms"),
            )
            .with_details(Map::from_iter([("retry_after_ms".to_owned(), json!(ms))]))
        }
        Refusal::Overloaded => tool_overloaded(name),
    }
}

/// The failure for a call refused because every place in its gate is taken.
fn tool_overloaded(name: &str) -> McpErrorDetail {
    McpErrorDetail::new(
        "OVERLOADED",
        format!("Tool {name} was not started: too many requests are in progress; retry later"),
    )
}

/// The tool failure for a call that timed out or panicked (the driver caught the panic).
pub(crate) fn tool_failure(name: &str, failure: Failure) -> McpErrorDetail {
    match failure {
        Failure::TimedOut(limit) => timeout_error(name, limit),
        Failure::Panicked => {
            tracing::error!(tool = %name, "tool handler panicked");
            McpErrorDetail::new(
                "InternalError",
                format!("Tool {name} failed with an internal error"),
            )
        }
    }
}

/// The `TIMEOUT` failure of a tool that overran `timeout`.
pub(crate) fn timeout_error(name: &str, timeout: Duration) -> McpErrorDetail {
    McpErrorDetail::new(
        "TIMEOUT",
        format!(
            "Tool {name} did not finish within {} ms and was cancelled",
            timeout.as_millis()
        ),
    )
}

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;
