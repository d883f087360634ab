//! The generated code's support (`__private`): what `#[mcp_tool]`, `#[mcp_tools]`,
//! `#[mcp_prompt]` and `#[mcp_resource]` expansions call. Not public API: it may change in any
//! release.

use std::marker::PhantomData;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::registry::{ToolDefinition, ToolHandler, ToolSettings};
use crate::schema::{McpErrorDetail, McpToolResult};
use crate::wire::ToolAnnotations;

pub use core::clone::Clone;
pub use core::convert::Into;
pub use core::option::Option::{self, None, Some};
pub use core::result::Result::{self, Err, Ok};
pub use std::any::TypeId;
pub use std::boxed::Box;
pub use std::vec::Vec;
pub use {inventory, schemars, serde_json};

pub use crate::context::ToolContext;
pub use crate::platform::BoxFuture;
pub use crate::registry::{ToolOutput, ToolRegistration};
pub use crate::schema::JsonObject;
pub use std::sync::Arc;

/// A type that can be a tool parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter",
    label = "not `Deserialize + JsonSchema`",
    note = "a tool parameter must implement `serde::Deserialize` and `schemars::JsonSchema` \
            (schemars 1.x): add `#[derive(Deserialize, JsonSchema)]` to the type"
)]
pub trait ToolParam: Sized {
    /// The parameter's schema (a `$ref` for named types, whose schema goes in `$defs`).
    fn schema(generator: &mut SchemaGenerator) -> Schema;
    /// Reads the argument.
    fn read(value: Value) -> Result<Self, serde_json::Error>;
}

impl<T: DeserializeOwned + JsonSchema> ToolParam for T {
    fn schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }

    fn read(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }
}

/// Tells `Option<T>` from other types where the type is concrete (autoref
/// specialisation): `(&&Probe::<T>::new()).__mcp_is_option()`.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

/// Chosen for `Option<T>`.
pub trait OptionProbe {
    /// `true`.
    fn __mcp_is_option(&self) -> bool {
        true
    }
}

impl<T> OptionProbe for &Probe<Option<T>> {}

/// Chosen for every other type.
pub trait NotOptionProbe {
    /// `false`.
    fn __mcp_is_option(&self) -> bool {
        false
    }
}

impl<T> NotOptionProbe for Probe<T> {}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().into_generator()
}

/// Output schemas describe what the tool *writes*: `skip_serializing_if` fields are
/// optional, and so on.
fn output_generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

fn with_keyword(schema: Value, key: &str, value: Value) -> Value {
    let mut map = match schema {
        Value::Object(map) => map,
        Value::Bool(false) => {
            let mut map = Map::new();
            map.insert("not".into(), json!({}));
            map
        }
        _ => Map::new(),
    };
    map.insert(key.into(), value);
    Value::Object(map)
}

/// Builds a tool's input schema, one parameter at a time.
pub struct InputSchema {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl InputSchema {
    /// An empty object schema.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self {
            generator: generator(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    /// Adds a property.
    pub fn param(
        &mut self,
        name: &str,
        schema: fn(&mut SchemaGenerator) -> Schema,
        description: Option<&str>,
        default: Option<Value>,
        required: bool,
    ) {
        let mut value = schema(&mut self.generator).to_value();
        if let Some(description) = description {
            value = with_keyword(value, "description", json!(description));
        }
        if let Some(default) = default {
            value = with_keyword(value, "default", default);
        }
        self.properties.insert(name.to_owned(), value);
        if required {
            self.required.push(json!(name));
        }
    }

    /// The schema: `{"type": "object", "properties": ..., "required": ..., "$defs": ...}`,
    /// in the portable spelling (`Option<T>` as `anyOf` with a `null` branch; see
    /// `portable_schema`).
    pub fn finish(mut self) -> Value {
        let mut root = Map::new();
        root.insert("type".into(), json!("object"));
        root.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            root.insert("required".into(), Value::Array(self.required));
        }
        let definitions = self.generator.take_definitions(true);
        if !definitions.is_empty() {
            root.insert("$defs".into(), Value::Object(definitions));
        }
        let mut root = Value::Object(root);
        crate::portable_schema::make_portable(&mut root);
        root
    }
}

/// A parameter's default, as JSON for the schema.
pub fn default_json<T: Serialize>(default: impl FnOnce() -> T) -> Option<Value> {
    serde_json::to_value(default()).ok()
}

fn invalid_argument(name: &str, error: &serde_json::Error) -> McpErrorDetail {
    let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
    let mut details = Map::new();
    details.insert("parameter".into(), json!(name));
    details.insert(
        "violations".into(),
        json!([{"pointer": pointer, "rule": "deserialize", "message": error.to_string()}]),
    );
    McpErrorDetail::new(
        "ValidationError",
        format!("Argument {name:?} is invalid: {error}"),
    )
    .with_details(details)
}

/// Takes an argument out of the call's arguments. An absent argument reads as `null`
/// (which is `None` for an `Option`).
pub fn read_arg<T>(
    arguments: &mut JsonObject,
    name: &str,
    read: fn(Value) -> Result<T, serde_json::Error>,
) -> Result<T, McpErrorDetail> {
    let value = arguments.remove(name).unwrap_or(Value::Null);
    read(value).map_err(|e| invalid_argument(name, &e))
}

/// Takes an argument out of the call's arguments, or its default when it is absent.
pub fn read_arg_or<T>(
    arguments: &mut JsonObject,
    name: &str,
    read: fn(Value) -> Result<T, serde_json::Error>,
    default: impl FnOnce() -> T,
) -> Result<T, McpErrorDetail> {
    match arguments.remove(name) {
        None => Ok(default()),
        Some(value) => read(value).map_err(|e| invalid_argument(name, &e)),
    }
}

/// How a tool's value becomes `structuredContent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputShape {
    /// The tool returns a `ToolOutput` or an `McpToolResult`, passed through as is.
    Raw,
    /// The value is an object: it is `structuredContent`.
    Object,
    /// Any other value: `structuredContent` is `{"result": value}`.
    Wrapped,
}

/// A tool's output schema and shape.
#[derive(Debug, Clone)]
pub struct OutputSpec {
    schema: Option<Value>,
    shape: OutputShape,
}

impl OutputSpec {
    /// The shape.
    pub fn shape(&self) -> OutputShape {
        self.shape
    }

    /// The output schema, if the tool declares one.
    pub fn schema(&self) -> Option<&Value> {
        self.schema.as_ref()
    }
}

/// A type a tool can return (on success).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's result",
    label = "not `Serialize + JsonSchema`",
    note = "a tool returns `T` or `Result<T, E>` where `T` implements `serde::Serialize` and \
            `schemars::JsonSchema` (schemars 1.x), or is `ToolOutput` or `McpToolResult`"
)]
pub trait ToolReturn: Sized {
    /// The output schema and shape.
    fn output_spec() -> OutputSpec;
    /// The value as the tool's output.
    fn into_tool_output(self, shape: OutputShape) -> ToolOutput;
}

impl<T: Serialize + JsonSchema> ToolReturn for T {
    fn output_spec() -> OutputSpec {
        let mut root = output_generator().root_schema_for::<T>().to_value();
        if let Value::Object(map) = &mut root
            && map.get("type") == Some(&json!("object"))
        {
            map.remove("$schema");
            crate::portable_schema::make_portable(&mut root);
            return OutputSpec {
                schema: Some(root),
                shape: OutputShape::Object,
            };
        }
        let mut generator = output_generator();
        let result = generator.subschema_for::<T>().to_value();
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), json!({ "result": result }));
        schema.insert("required".into(), json!(["result"]));
        let definitions = generator.take_definitions(true);
        if !definitions.is_empty() {
            schema.insert("$defs".into(), Value::Object(definitions));
        }
        let mut schema = Value::Object(schema);
        crate::portable_schema::make_portable(&mut schema);
        OutputSpec {
            schema: Some(schema),
            shape: OutputShape::Wrapped,
        }
    }

    fn into_tool_output(self, shape: OutputShape) -> ToolOutput {
        let value = match serde_json::to_value(&self) {
            Ok(value) => value,
            Err(e) => {
                return ToolOutput::failure(McpErrorDetail::new(
                    "SerializationError",
                    format!("The tool's result could not be serialised: {e}"),
                ));
            }
        };
        let value = match shape {
            OutputShape::Wrapped => json!({ "result": value }),
            OutputShape::Object | OutputShape::Raw => value,
        };
        ToolOutput::from_result(McpToolResult::success_value(value))
    }
}

impl ToolReturn for ToolOutput {
    fn output_spec() -> OutputSpec {
        OutputSpec {
            schema: None,
            shape: OutputShape::Raw,
        }
    }

    fn into_tool_output(self, _: OutputShape) -> ToolOutput {
        self
    }
}

impl ToolReturn for McpToolResult {
    fn output_spec() -> OutputSpec {
        OutputSpec {
            schema: None,
            shape: OutputShape::Raw,
        }
    }

    fn into_tool_output(self, _: OutputShape) -> ToolOutput {
        ToolOutput::from_result(self)
    }
}

/// An error type a tool can return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error",
    label = "no conversion into `McpErrorDetail`",
    note = "a tool's error type must implement `Into<McpErrorDetail>`: implement \
            `From<{Self}> for codomyrmex_mcp::McpErrorDetail`, or map the error first"
)]
pub trait ToolError {
    /// The error as the failure's detail.
    fn into_detail(self) -> McpErrorDetail;
}

impl<E: Into<McpErrorDetail>> ToolError for E {
    fn into_detail(self) -> McpErrorDetail {
        self.into()
    }
}

/// A `Result` a tool can return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's result",
    label = "not `Result<T, E>` with `T: Serialize + JsonSchema` and `E: Into<McpErrorDetail>`",
    note = "a tool returns `T` or `Result<T, E>` where `T` implements `serde::Serialize` and \
            `schemars::JsonSchema` (schemars 1.x), and `E` implements `Into<McpErrorDetail>`"
)]
pub trait ToolResult: Sized {
    /// The output schema and shape of the success type.
    fn output_spec() -> OutputSpec;
    /// The value as the tool's output: a success, or a failure carrying the error.
    fn into_tool_output(self, shape: OutputShape) -> ToolOutput;
}

impl<T: ToolReturn, E: ToolError> ToolResult for Result<T, E> {
    fn output_spec() -> OutputSpec {
        T::output_spec()
    }

    fn into_tool_output(self, shape: OutputShape) -> ToolOutput {
        match self {
            Ok(value) => value.into_tool_output(shape),
            Err(error) => ToolOutput::failure(error.into_detail()),
        }
    }
}

struct MacroHandler<F>(F);

impl<F> ToolHandler for MacroHandler<F>
where
    F: Fn(JsonObject, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        arguments: JsonObject,
        context: ToolContext,
    ) -> BoxFuture<'static, ToolOutput> {
        (self.0)(arguments, context)
    }
}

/// The handler around a generated closure.
pub fn handler<F>(f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(JsonObject, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync + 'static,
{
    Arc::new(MacroHandler(f))
}

/// What the attribute said.
pub struct ToolSpec {
    /// The invocation name.
    pub name: &'static str,
    /// The display title.
    pub title: Option<&'static str>,
    /// The description (the attribute's, or the doc comment).
    pub description: Option<&'static str>,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
    /// `_meta.category`.
    pub category: Option<&'static str>,
    /// `_meta.tags`.
    pub tags: &'static [&'static str],
    /// `_meta.version`.
    pub version: Option<&'static str>,
    /// `_meta.deprecated_in` and the settings' `deprecated_in`.
    pub deprecated_in: Option<&'static str>,
    /// The settings' timeout.
    pub timeout_ms: Option<u64>,
    /// The settings' `blocking`.
    pub blocking: bool,
    /// `_meta.ui.resourceUri` (MCP Apps).
    pub ui: Option<&'static str>,
    /// `_meta.ui.visibility` (MCP Apps).
    pub visibility: &'static [&'static str],
}

/// The registration of a generated tool.
pub fn build(
    spec: ToolSpec,
    input_schema: Value,
    output: OutputSpec,
    handler: Arc<dyn ToolHandler>,
) -> ToolRegistration {
    let mut definition = ToolDefinition::new(spec.name, input_schema);
    definition.title = spec.title.map(str::to_owned);
    definition.description = spec.description.map(str::to_owned);
    definition.output_schema = output.schema;
    definition.annotations = ToolAnnotations {
        title: None,
        read_only_hint: spec.read_only,
        destructive_hint: spec.destructive,
        idempotent_hint: spec.idempotent,
        open_world_hint: spec.open_world,
    };
    if let Some(category) = spec.category {
        definition = definition.with_meta("category", json!(category));
    }
    if !spec.tags.is_empty() {
        definition = definition.with_meta("tags", json!(spec.tags));
    }
    if let Some(version) = spec.version {
        definition = definition.with_meta("version", json!(version));
    }
    if let Some(version) = spec.deprecated_in {
        definition = definition.with_meta("deprecated_in", json!(version));
    }
    if spec.ui.is_some() || !spec.visibility.is_empty() {
        // Checked again, as every `_meta.ui`, when the tool is registered.
        let mut ui = serde_json::Map::new();
        if let Some(uri) = spec.ui {
            ui.insert("resourceUri".into(), json!(uri));
        }
        if !spec.visibility.is_empty() {
            ui.insert("visibility".into(), json!(spec.visibility));
        }
        definition = definition.with_meta("ui", Value::Object(ui));
    }
    ToolRegistration {
        definition,
        settings: ToolSettings {
            timeout: spec.timeout_ms.map(Duration::from_millis),
            deprecated_in: spec.deprecated_in.map(str::to_owned),
            blocking: spec.blocking,
            ..ToolSettings::default()
        },
        handler,
    }
}

/// An `#[mcp_tool]` function, as submitted to the program-wide list.
pub struct ToolEntry {
    pub(crate) build: fn() -> ToolRegistration,
    pub(crate) type_id: fn() -> TypeId,
}

impl ToolEntry {
    /// An entry.
    pub const fn new(build: fn() -> ToolRegistration, type_id: fn() -> TypeId) -> Self {
        Self { build, type_id }
    }
}

inventory::collect!(ToolEntry);

/// The `TypeId` of a function item's type, which identifies the function.
pub fn type_id_of<F: 'static>(_: &F) -> TypeId {
    TypeId::of::<F>()
}

// --- #[mcp_prompt] ---------------------------------------------------------------------

pub use crate::prompts::{PromptMessage, PromptRequest, PromptResult};
pub use crate::resources::{ResourceError, ResourceRequest};
pub use crate::wire::ResourceContents;
pub use std::collections::BTreeMap;
pub use std::string::String;

use crate::prompts::{PromptArgument, PromptDefinition, PromptHandler};
use crate::resources::{ResourceDefinition, ResourceReader, ResourceTemplateDefinition};

/// A type that can be a prompt parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a prompt parameter",
    label = "not `String` or `Option<String>`",
    note = "prompt arguments are strings: take `String` (required) or `Option<String>` (optional)"
)]
pub trait PromptParam: Sized {
    /// Whether the argument must be given.
    const REQUIRED: bool;
    /// Takes the argument out of the request's arguments.
    fn read(args: &mut BTreeMap<String, String>, name: &str) -> Result<Self, McpErrorDetail>;
}

impl PromptParam for String {
    const REQUIRED: bool = true;
    fn read(args: &mut BTreeMap<String, String>, name: &str) -> Result<Self, McpErrorDetail> {
        args.remove(name).ok_or_else(|| {
            McpErrorDetail::new(
                "ValidationError",
                format!("Missing required prompt argument(s): {name}"),
            )
        })
    }
}

impl PromptParam for Option<String> {
    const REQUIRED: bool = false;
    fn read(args: &mut BTreeMap<String, String>, name: &str) -> Result<Self, McpErrorDetail> {
        Ok(args.remove(name))
    }
}

/// What a prompt's `Ok` may be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a prompt's result",
    note = "a prompt returns `PromptResult` or `Vec<PromptMessage>`"
)]
pub trait PromptOutput {
    /// The rendered prompt.
    fn into_prompt_result(self) -> PromptResult;
}

impl PromptOutput for PromptResult {
    fn into_prompt_result(self) -> PromptResult {
        self
    }
}

impl PromptOutput for Vec<PromptMessage> {
    fn into_prompt_result(self) -> PromptResult {
        PromptResult {
            description: None,
            messages: self,
        }
    }
}

/// What a prompt function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a prompt's return type",
    note = "a prompt returns `PromptResult`, `Vec<PromptMessage>`, or `Result<_, E>` with `E: Into<McpErrorDetail>`"
)]
pub trait PromptReturn {
    /// The result of `prompts/get`.
    fn into_prompt(self) -> Result<PromptResult, McpErrorDetail>;
}

impl PromptReturn for PromptResult {
    fn into_prompt(self) -> Result<PromptResult, McpErrorDetail> {
        Ok(self)
    }
}

impl PromptReturn for Vec<PromptMessage> {
    fn into_prompt(self) -> Result<PromptResult, McpErrorDetail> {
        Ok(self.into_prompt_result())
    }
}

impl<T: PromptOutput, E: Into<McpErrorDetail>> PromptReturn for Result<T, E> {
    fn into_prompt(self) -> Result<PromptResult, McpErrorDetail> {
        self.map(PromptOutput::into_prompt_result)
            .map_err(Into::into)
    }
}

/// A prompt argument, as the macro read it.
pub struct PromptArgSpec {
    /// The name.
    pub name: &'static str,
    /// The description.
    pub description: Option<&'static str>,
    /// Whether it must be given.
    pub required: bool,
}

/// A prompt's definition, as the macro read it.
pub struct PromptSpec {
    /// The name.
    pub name: &'static str,
    /// The title.
    pub title: Option<&'static str>,
    /// The description.
    pub description: Option<&'static str>,
    /// The arguments.
    pub arguments: Vec<PromptArgSpec>,
}

/// A prompt's definition and handler.
pub struct PromptRegistration {
    pub(crate) definition: PromptDefinition,
    pub(crate) handler: Arc<dyn PromptHandler>,
}

/// Builds a prompt's registration.
pub fn prompt<F>(spec: PromptSpec, handler: F) -> PromptRegistration
where
    F: Fn(PromptRequest) -> BoxFuture<'static, Result<PromptResult, McpErrorDetail>>
        + Send
        + Sync
        + 'static,
{
    PromptRegistration {
        definition: PromptDefinition {
            name: spec.name.to_owned(),
            title: spec.title.map(str::to_owned),
            description: spec.description.map(str::to_owned),
            arguments: spec
                .arguments
                .into_iter()
                .map(|a| PromptArgument {
                    name: a.name.to_owned(),
                    title: None,
                    description: a.description.map(str::to_owned),
                    required: a.required,
                })
                .collect(),
            meta: None,
        },
        handler: Arc::new(handler),
    }
}

/// An `#[mcp_prompt]` function, as submitted to the program-wide list.
pub struct PromptEntry {
    pub(crate) build: fn() -> PromptRegistration,
    pub(crate) type_id: fn() -> TypeId,
}

impl PromptEntry {
    /// An entry.
    pub const fn new(build: fn() -> PromptRegistration, type_id: fn() -> TypeId) -> Self {
        Self { build, type_id }
    }
}

inventory::collect!(PromptEntry);

// --- #[mcp_resource] -------------------------------------------------------------------

/// A type that can be a resource template parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a resource template parameter",
    label = "not `String` or `Option<String>`",
    note = "template variables are strings: take `String` (or `Option<String>` for a query variable)"
)]
pub trait ResourceParam: Sized {
    /// Takes the variable out of the request's variables.
    fn read(vars: &mut BTreeMap<String, String>, name: &str) -> Result<Self, ResourceError>;
}

impl ResourceParam for String {
    fn read(vars: &mut BTreeMap<String, String>, name: &str) -> Result<Self, ResourceError> {
        vars.remove(name)
            .ok_or_else(|| ResourceError::Failed(format!("the URI gives no `{name}`")))
    }
}

impl ResourceParam for Option<String> {
    fn read(vars: &mut BTreeMap<String, String>, name: &str) -> Result<Self, ResourceError> {
        Ok(vars.remove(name))
    }
}

/// What a resource's `Ok` may be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a resource's contents",
    note = "a resource returns `String` (text), `Vec<u8>` (a blob) or `Vec<ResourceContents>`"
)]
pub trait ResourceOutput {
    /// The contents.
    fn into_contents(self, uri: String, mime_type: Option<&str>) -> Vec<ResourceContents>;
}

impl ResourceOutput for String {
    fn into_contents(self, uri: String, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::Text {
            uri,
            mime_type: mime_type.map(str::to_owned),
            text: self,
            meta: None,
        }]
    }
}

impl ResourceOutput for Vec<u8> {
    fn into_contents(self, uri: String, mime_type: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::Blob {
            uri,
            mime_type: mime_type.map(str::to_owned),
            blob: crate::util::base64_encode(&self),
            meta: None,
        }]
    }
}

impl ResourceOutput for Vec<ResourceContents> {
    fn into_contents(self, _: String, _: Option<&str>) -> Vec<ResourceContents> {
        self
    }
}

/// What a resource function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a resource's return type",
    note = "a resource returns `String`, `Vec<u8>`, `Vec<ResourceContents>`, or `Result<_, E>` with `E: Into<ResourceError>` (a `String` works)"
)]
pub trait ResourceReturn {
    /// The result of `resources/read`.
    fn into_read(
        self,
        uri: String,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError>;
}

macro_rules! plain_resource_return {
    ($($ty:ty),*) => {$(
        impl ResourceReturn for $ty {
            fn into_read(
                self,
                uri: String,
                mime_type: Option<&str>,
            ) -> Result<Vec<ResourceContents>, ResourceError> {
                Ok(self.into_contents(uri, mime_type))
            }
        }
    )*};
}
plain_resource_return!(String, Vec<u8>, Vec<ResourceContents>);

impl<T: ResourceOutput, E: Into<ResourceError>> ResourceReturn for Result<T, E> {
    fn into_read(
        self,
        uri: String,
        mime_type: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        self.map(|v| v.into_contents(uri, mime_type))
            .map_err(Into::into)
    }
}

/// A resource's definition, as the macro read it.
pub struct ResourceSpec {
    /// The URI, or the URI template.
    pub uri: &'static str,
    /// Whether `uri` is a template.
    pub template: bool,
    /// The name.
    pub name: &'static str,
    /// The title.
    pub title: Option<&'static str>,
    /// The description.
    pub description: Option<&'static str>,
    /// The MIME type.
    pub mime_type: Option<&'static str>,
}

pub(crate) enum ResourceKind {
    Static(ResourceDefinition),
    Template(ResourceTemplateDefinition),
}

/// A resource's definition and reader.
pub struct ResourceRegistration {
    pub(crate) kind: ResourceKind,
    pub(crate) reader: Arc<dyn ResourceReader>,
}

/// Builds a resource's registration.
pub fn resource<F>(spec: ResourceSpec, reader: F) -> ResourceRegistration
where
    F: Fn(ResourceRequest) -> BoxFuture<'static, Result<Vec<ResourceContents>, ResourceError>>
        + Send
        + Sync
        + 'static,
{
    let kind = if spec.template {
        ResourceKind::Template(ResourceTemplateDefinition {
            uri_template: spec.uri.to_owned(),
            name: spec.name.to_owned(),
            title: spec.title.map(str::to_owned),
            description: spec.description.map(str::to_owned),
            mime_type: spec.mime_type.map(str::to_owned),
            meta: None,
        })
    } else {
        let mut definition = ResourceDefinition::new(spec.uri, spec.name);
        definition.title = spec.title.map(str::to_owned);
        definition.description = spec.description.map(str::to_owned);
        definition.mime_type = spec.mime_type.map(str::to_owned);
        ResourceKind::Static(definition)
    };
    ResourceRegistration {
        kind,
        reader: Arc::new(reader),
    }
}

/// An `#[mcp_resource]` function, as submitted to the program-wide list.
pub struct ResourceEntry {
    pub(crate) build: fn() -> ResourceRegistration,
    pub(crate) type_id: fn() -> TypeId,
}

impl ResourceEntry {
    /// An entry.
    pub const fn new(build: fn() -> ResourceRegistration, type_id: fn() -> TypeId) -> Self {
        Self { build, type_id }
    }
}

inventory::collect!(ResourceEntry);
