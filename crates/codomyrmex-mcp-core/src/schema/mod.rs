//! The seed's data model: [`McpErrorDetail`], [`McpToolCall`], [`McpToolResult`] and
//! [`McpMessage`], mirroring the Python Pydantic models `MCPErrorDetail`, `MCPToolCall`,
//! `MCPToolResult` and `MCPMessage`.
//!
//! # Wire format
//!
//! Every type serialises the way Pydantic v2's `model_dump_json` does: declared fields first,
//! in declaration order, absent optionals written as explicit `null`, and (for the models with
//! `extra = 'allow'`) extra fields afterwards. Reading accepts both that form and the shorter
//! form where optional fields are omitted.
//!
//! # Validation
//!
//! Deserialisation goes through the same checks as the Pydantic models, and every rejection
//! names the offending field as a path and the rule it broke, for example
//! `McpMessage.tool_results[0].error: required when status indicates failure (status "failure")`.
//! [`McpToolResult`] keeps its fields private so that a value breaking its validators
//! (a failure without an error, or a failure carrying data) cannot be constructed at all.
//!
//! Use `serde_json::from_str` / `from_value` (the error message carries the [`SchemaError`]
//! text), or the `TryFrom<Value>` impls to get the [`SchemaError`] itself.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{self, SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object (Python's `Dict[str, Any]`).
pub type JsonObject = Map<String, Value>;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why a value was rejected by one of the schema types.
///
/// Every variant carries `path`, the field that broke a rule (for example
/// `McpToolCall.arguments` or `McpMessage.tool_results[2].error`), and its `Display` text
/// states the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A required field is absent.
    #[error("{path}: required field is missing")]
    MissingField {
        /// The path of the missing field.
        path: String,
    },
    /// A field holds a JSON value of the wrong type.
    #[error("{path}: must be {expected}, got {found}")]
    WrongType {
        /// The path of the offending field.
        path: String,
        /// What the field accepts, e.g. `"a JSON object"`.
        expected: &'static str,
        /// The JSON type that was found, e.g. `"array"`.
        found: &'static str,
    },
    /// A tool result whose status indicates failure has no (or a null) `error`.
    #[error("{path}: required when status indicates failure (status {status:?})")]
    ErrorRequiredOnFailure {
        /// The path of the `error` field.
        path: String,
        /// The status that indicates failure.
        status: String,
    },
    /// A tool result whose status indicates failure carries `data`.
    #[error("{path}: must be null or absent when status indicates failure (status {status:?})")]
    DataOnFailure {
        /// The path of the `data` field.
        path: String,
        /// The status that indicates failure.
        status: String,
    },
    /// An extra field uses the name of one of the type's declared fields.
    #[error("{path}: {key:?} is a declared field name and cannot be used as an extra field")]
    ReservedExtraKey {
        /// The path of the extra-field map.
        path: String,
        /// The offending key.
        key: String,
    },
}

impl SchemaError {
    /// The path of the field that broke a rule, e.g. `McpMessage.tool_results[0].error`.
    pub fn path(&self) -> &str {
        match self {
            Self::MissingField { path }
            | Self::WrongType { path, .. }
            | Self::ErrorRequiredOnFailure { path, .. }
            | Self::DataOnFailure { path, .. }
            | Self::ReservedExtraKey { path, .. } => path,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Private helpers for validating `serde_json::Value`s
// ---------------------------------------------------------------------------------------------

/// The JSON type name of `value`, as used in error messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn field_path(ctx: &str, field: &str) -> String {
    format!("{ctx}.{field}")
}

fn wrong_type(path: String, expected: &'static str, found: &Value) -> SchemaError {
    SchemaError::WrongType {
        path,
        expected,
        found: json_type(found),
    }
}

fn expect_object(value: Value, path: &str) -> Result<JsonObject, SchemaError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(wrong_type(path.to_owned(), "a JSON object", &other)),
    }
}

fn required_string(value: Option<Value>, ctx: &str, field: &str) -> Result<String, SchemaError> {
    let path = field_path(ctx, field);
    match value {
        None => Err(SchemaError::MissingField { path }),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(path, "a string", &other)),
    }
}

fn optional_string(
    value: Option<Value>,
    ctx: &str,
    field: &str,
) -> Result<Option<String>, SchemaError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(
            field_path(ctx, field),
            "a string or null",
            &other,
        )),
    }
}

fn required_object(
    value: Option<Value>,
    ctx: &str,
    field: &str,
) -> Result<JsonObject, SchemaError> {
    let path = field_path(ctx, field);
    match value {
        None => Err(SchemaError::MissingField { path }),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(wrong_type(path, "a JSON object", &other)),
    }
}

fn optional_object(
    value: Option<Value>,
    ctx: &str,
    field: &str,
) -> Result<Option<JsonObject>, SchemaError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(wrong_type(
            field_path(ctx, field),
            "a JSON object or null",
            &other,
        )),
    }
}

/// Converts an optional JSON array field, each element through `convert` with its indexed path.
fn optional_list<T>(
    value: Option<Value>,
    ctx: &str,
    field: &str,
    convert: fn(Value, &str) -> Result<T, SchemaError>,
) -> Result<Option<Vec<T>>, SchemaError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| convert(item, &format!("{ctx}.{field}[{i}]")))
            .collect::<Result<Vec<T>, SchemaError>>()
            .map(Some),
        Some(other) => Err(wrong_type(
            field_path(ctx, field),
            "an array or null",
            &other,
        )),
    }
}

/// Rejects an extra-field map that uses one of the declared field names.
fn check_extra_keys(extra: &JsonObject, reserved: &[&str], ctx: &str) -> Result<(), SchemaError> {
    match extra.keys().find(|key| reserved.contains(&key.as_str())) {
        Some(key) => Err(SchemaError::ReservedExtraKey {
            path: field_path(ctx, "extra"),
            key: key.clone(),
        }),
        None => Ok(()),
    }
}

/// Deserialises any self-describing input into a `Value`, then validates it with `convert`
/// using `ctx` (the type name) as the root of every error path.
fn deserialize_via_value<'de, D, T>(
    deserializer: D,
    ctx: &str,
    convert: fn(Value, &str) -> Result<T, SchemaError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    convert(value, ctx).map_err(de::Error::custom)
}

// ---------------------------------------------------------------------------------------------
// ErrorDetails
// ---------------------------------------------------------------------------------------------

/// The `error_details` of an [`McpErrorDetail`]: structured (a JSON object) or free text
/// (Python's `Union[Dict[str, Any], str]`).
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorDetails {
    /// Structured details, e.g. `{"resource_id": "xyz-123"}`.
    Object(JsonObject),
    /// Unstructured details.
    Text(String),
}

impl From<JsonObject> for ErrorDetails {
    fn from(value: JsonObject) -> Self {
        Self::Object(value)
    }
}

impl From<String> for ErrorDetails {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}

impl From<&str> for ErrorDetails {
    fn from(value: &str) -> Self {
        Self::Text(value.to_owned())
    }
}

impl ErrorDetails {
    fn from_value_at(value: Value, path: &str) -> Result<Self, SchemaError> {
        match value {
            Value::Object(map) => Ok(Self::Object(map)),
            Value::String(text) => Ok(Self::Text(text)),
            other => Err(wrong_type(
                path.to_owned(),
                "a JSON object or a string",
                &other,
            )),
        }
    }

    fn optional_from(
        value: Option<Value>,
        ctx: &str,
        field: &str,
    ) -> Result<Option<Self>, SchemaError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Self::Object(map))),
            Some(Value::String(text)) => Ok(Some(Self::Text(text))),
            Some(other) => Err(wrong_type(
                field_path(ctx, field),
                "a JSON object, a string or null",
                &other,
            )),
        }
    }
}

impl TryFrom<Value> for ErrorDetails {
    type Error = SchemaError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value_at(value, "ErrorDetails")
    }
}

impl Serialize for ErrorDetails {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Object(map) => map.serialize(serializer),
            Self::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for ErrorDetails {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_via_value(deserializer, "ErrorDetails", Self::from_value_at)
    }
}

// ---------------------------------------------------------------------------------------------
// McpErrorDetail
// ---------------------------------------------------------------------------------------------

/// Detailed error information carried by a failed [`McpToolResult`] (Python `MCPErrorDetail`).
///
/// Unknown fields are ignored when reading, as with Pydantic's default `extra = 'ignore'`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpErrorDetail {
    /// Machine-readable category of the error, e.g. `"FileNotFoundError"`.
    pub error_type: String,
    /// Human-readable explanation of what went wrong.
    pub error_message: String,
    /// Optional structured or free-text context.
    pub error_details: Option<ErrorDetails>,
}

impl McpErrorDetail {
    /// An error detail without `error_details`.
    pub fn new(error_type: impl Into<String>, error_message: impl Into<String>) -> Self {
        Self {
            error_type: error_type.into(),
            error_message: error_message.into(),
            error_details: None,
        }
    }

    /// Sets `error_details`.
    #[must_use]
    pub fn with_details(mut self, details: impl Into<ErrorDetails>) -> Self {
        self.error_details = Some(details.into());
        self
    }

    fn from_value_at(value: Value, ctx: &str) -> Result<Self, SchemaError> {
        let map = expect_object(value, ctx)?;
        let (mut error_type, mut error_message, mut error_details) = (None, None, None);
        for (key, value) in map {
            match key.as_str() {
                "error_type" => error_type = Some(value),
                "error_message" => error_message = Some(value),
                "error_details" => error_details = Some(value),
                _ => {} // Pydantic's default: unknown fields are ignored.
            }
        }
        Ok(Self {
            error_type: required_string(error_type, ctx, "error_type")?,
            error_message: required_string(error_message, ctx, "error_message")?,
            error_details: ErrorDetails::optional_from(error_details, ctx, "error_details")?,
        })
    }
}

impl fmt::Display for McpErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.error_type, self.error_message)
    }
}

impl std::error::Error for McpErrorDetail {}

impl TryFrom<Value> for McpErrorDetail {
    type Error = SchemaError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value_at(value, "McpErrorDetail")
    }
}

impl Serialize for McpErrorDetail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("error_type", &self.error_type)?;
        map.serialize_entry("error_message", &self.error_message)?;
        map.serialize_entry("error_details", &self.error_details)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for McpErrorDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_via_value(deserializer, "McpErrorDetail", Self::from_value_at)
    }
}

// ---------------------------------------------------------------------------------------------
// McpToolCall
// ---------------------------------------------------------------------------------------------

const TOOL_CALL_FIELDS: &[&str] = &["tool_name", "arguments"];

/// A request from an agent to invoke a tool (Python `MCPToolCall`, `extra = 'allow'`).
///
/// Serialising fails if `extra` contains `"tool_name"` or `"arguments"`, since such a key would
/// be written twice.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolCall {
    /// The tool's unique invocation name, e.g. `"file_utility.read_file_content"`.
    pub tool_name: String,
    /// The tool's parameters; their shape is tool-specific.
    pub arguments: JsonObject,
    /// Extra top-level fields, kept when read and written back after the declared fields.
    pub extra: JsonObject,
}

impl McpToolCall {
    /// A tool call without extra fields.
    pub fn new(tool_name: impl Into<String>, arguments: JsonObject) -> Self {
        Self {
            tool_name: tool_name.into(),
            arguments,
            extra: JsonObject::new(),
        }
    }

    fn from_value_at(value: Value, ctx: &str) -> Result<Self, SchemaError> {
        let map = expect_object(value, ctx)?;
        let (mut tool_name, mut arguments, mut extra) = (None, None, JsonObject::new());
        for (key, value) in map {
            match key.as_str() {
                "tool_name" => tool_name = Some(value),
                "arguments" => arguments = Some(value),
                _ => {
                    extra.insert(key, value);
                }
            }
        }
        Ok(Self {
            tool_name: required_string(tool_name, ctx, "tool_name")?,
            arguments: required_object(arguments, ctx, "arguments")?,
            extra,
        })
    }
}

impl TryFrom<Value> for McpToolCall {
    type Error = SchemaError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value_at(value, "McpToolCall")
    }
}

impl Serialize for McpToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        check_extra_keys(&self.extra, TOOL_CALL_FIELDS, "McpToolCall")
            .map_err(ser::Error::custom)?;
        let mut map = serializer.serialize_map(Some(2 + self.extra.len()))?;
        map.serialize_entry("tool_name", &self.tool_name)?;
        map.serialize_entry("arguments", &self.arguments)?;
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for McpToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_via_value(deserializer, "McpToolCall", Self::from_value_at)
    }
}

// ---------------------------------------------------------------------------------------------
// McpToolResult
// ---------------------------------------------------------------------------------------------

const TOOL_RESULT_FIELDS: &[&str] = &["status", "data", "error", "explanation"];

/// Whether `status` indicates failure: it contains `"fail"`, case-insensitively
/// (`"failure"`, `"FAILED"`, `"partial_failure"`, ...).
pub fn status_indicates_failure(status: &str) -> bool {
    // The same answer as `status.to_lowercase().contains("fail")`, without the lowercased
    // copy (one allocation on every tool call): the only characters whose lowercase holds an
    // ASCII letter are the ASCII letters themselves, `K` (KELVIN SIGN, to `k`) and `İ` (to
    // `i` followed by U+0307, which no `l` can follow directly).
    status
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"fail"))
}

/// Checks the `MCPToolResult` validators `check_error_if_failed` and `check_data_if_success`.
fn check_result_rules(
    status: &str,
    data: Option<&JsonObject>,
    error: Option<&McpErrorDetail>,
    ctx: &str,
) -> Result<(), SchemaError> {
    if !status_indicates_failure(status) {
        return Ok(());
    }
    if error.is_none() {
        return Err(SchemaError::ErrorRequiredOnFailure {
            path: field_path(ctx, "error"),
            status: status.to_owned(),
        });
    }
    if data.is_some() {
        return Err(SchemaError::DataOnFailure {
            path: field_path(ctx, "data"),
            status: status.to_owned(),
        });
    }
    Ok(())
}

/// The outcome of a tool execution (Python `MCPToolResult`, `extra = 'allow'`).
///
/// The fields are private so that the validators always hold: when the status indicates
/// failure (see [`status_indicates_failure`]) `error` is present and `data` is absent.
/// Use [`McpToolResult::into_parts`] to take a result apart, and
/// `McpToolResult::try_from(parts)` to rebuild one.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolResult {
    status: String,
    data: Option<JsonObject>,
    error: Option<McpErrorDetail>,
    explanation: Option<String>,
    extra: JsonObject,
}

/// The fields of an [`McpToolResult`], as returned by [`McpToolResult::into_parts`].
///
/// Any combination can be built; `McpToolResult::try_from(parts)` validates it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolResultParts {
    /// The outcome, e.g. `"success"`, `"failure"` or `"no_change_needed"`.
    pub status: String,
    /// The tool's output payload.
    pub data: Option<JsonObject>,
    /// What went wrong.
    pub error: Option<McpErrorDetail>,
    /// A human-readable explanation of the result.
    pub explanation: Option<String>,
    /// Extra top-level fields.
    pub extra: JsonObject,
}

impl McpToolResult {
    /// A result with status `"success"` and the given data (`None` writes `"data": null`).
    pub fn success(data: impl Into<Option<JsonObject>>) -> Self {
        Self {
            status: "success".to_owned(),
            data: data.into(),
            error: None,
            explanation: None,
            extra: JsonObject::new(),
        }
    }

    /// A `"success"` result for any JSON value: an object becomes `data` itself, any other
    /// value (`null` included) becomes `data` `{"result": value}`.
    pub fn success_value(value: Value) -> Self {
        match value {
            Value::Object(map) => Self::success(map),
            other => {
                let mut map = JsonObject::new();
                map.insert("result".to_owned(), other);
                Self::success(map)
            }
        }
    }

    /// A result with status `"failure"` carrying `error` and no data.
    pub fn failure(error: McpErrorDetail) -> Self {
        Self {
            status: "failure".to_owned(),
            data: None,
            error: Some(error),
            explanation: None,
            extra: JsonObject::new(),
        }
    }

    /// A result with status `"no_change_needed"`, the given explanation and no data.
    pub fn no_change_needed(explanation: impl Into<String>) -> Self {
        Self {
            status: "no_change_needed".to_owned(),
            data: None,
            error: None,
            explanation: Some(explanation.into()),
            extra: JsonObject::new(),
        }
    }

    /// A result with any status, validated: if `status` indicates failure, `error` must be
    /// `Some` and `data` must be `None`.
    pub fn try_new(
        status: impl Into<String>,
        data: Option<JsonObject>,
        error: Option<McpErrorDetail>,
    ) -> Result<Self, SchemaError> {
        let status = status.into();
        check_result_rules(&status, data.as_ref(), error.as_ref(), "McpToolResult")?;
        Ok(Self {
            status,
            data,
            error,
            explanation: None,
            extra: JsonObject::new(),
        })
    }

    /// Sets `explanation`.
    #[must_use]
    pub fn with_explanation(mut self, explanation: impl Into<String>) -> Self {
        self.explanation = Some(explanation.into());
        self
    }

    /// Adds (or replaces) an extra top-level field. Rejects the declared field names
    /// `status`, `data`, `error` and `explanation`.
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Result<Self, SchemaError> {
        let key = key.into();
        if TOOL_RESULT_FIELDS.contains(&key.as_str()) {
            return Err(SchemaError::ReservedExtraKey {
                path: field_path("McpToolResult", "extra"),
                key,
            });
        }
        self.extra.insert(key, value);
        Ok(self)
    }

    /// The status, exactly as given.
    pub fn status(&self) -> &str {
        &self.status
    }

    /// The output payload, if any.
    pub fn data(&self) -> Option<&JsonObject> {
        self.data.as_ref()
    }

    /// The error, if any (always present when [`is_failure`](Self::is_failure)).
    pub fn error(&self) -> Option<&McpErrorDetail> {
        self.error.as_ref()
    }

    /// The explanation, if any.
    pub fn explanation(&self) -> Option<&str> {
        self.explanation.as_deref()
    }

    /// The payload, to lend out and put back (the output check validates it in place).
    pub(crate) fn data_mut(&mut self) -> Option<&mut JsonObject> {
        self.data.as_mut()
    }

    /// Extra top-level fields.
    pub fn extra(&self) -> &JsonObject {
        &self.extra
    }

    /// Whether the status indicates failure (see [`status_indicates_failure`]).
    pub fn is_failure(&self) -> bool {
        status_indicates_failure(&self.status)
    }

    /// Takes the result apart.
    pub fn into_parts(self) -> McpToolResultParts {
        McpToolResultParts {
            status: self.status,
            data: self.data,
            error: self.error,
            explanation: self.explanation,
            extra: self.extra,
        }
    }

    fn from_value_at(value: Value, ctx: &str) -> Result<Self, SchemaError> {
        let map = expect_object(value, ctx)?;
        let (mut status, mut data, mut error, mut explanation) = (None, None, None, None);
        let mut extra = JsonObject::new();
        for (key, value) in map {
            match key.as_str() {
                "status" => status = Some(value),
                "data" => data = Some(value),
                "error" => error = Some(value),
                "explanation" => explanation = Some(value),
                _ => {
                    extra.insert(key, value);
                }
            }
        }
        let status = required_string(status, ctx, "status")?;
        let data = optional_object(data, ctx, "data")?;
        let error = match error {
            None | Some(Value::Null) => None,
            Some(value @ Value::Object(_)) => Some(McpErrorDetail::from_value_at(
                value,
                &field_path(ctx, "error"),
            )?),
            Some(other) => {
                return Err(wrong_type(
                    field_path(ctx, "error"),
                    "a JSON object (McpErrorDetail) or null",
                    &other,
                ));
            }
        };
        let explanation = optional_string(explanation, ctx, "explanation")?;
        check_result_rules(&status, data.as_ref(), error.as_ref(), ctx)?;
        Ok(Self {
            status,
            data,
            error,
            explanation,
            extra,
        })
    }
}

impl TryFrom<McpToolResultParts> for McpToolResult {
    type Error = SchemaError;

    fn try_from(parts: McpToolResultParts) -> Result<Self, Self::Error> {
        check_extra_keys(&parts.extra, TOOL_RESULT_FIELDS, "McpToolResult")?;
        check_result_rules(
            &parts.status,
            parts.data.as_ref(),
            parts.error.as_ref(),
            "McpToolResult",
        )?;
        Ok(Self {
            status: parts.status,
            data: parts.data,
            error: parts.error,
            explanation: parts.explanation,
            extra: parts.extra,
        })
    }
}

impl TryFrom<Value> for McpToolResult {
    type Error = SchemaError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value_at(value, "McpToolResult")
    }
}

impl Serialize for McpToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `extra` never holds a declared field name: every way of building a result checks it.
        let mut map = serializer.serialize_map(Some(4 + self.extra.len()))?;
        map.serialize_entry("status", &self.status)?;
        map.serialize_entry("data", &self.data)?;
        map.serialize_entry("error", &self.error)?;
        map.serialize_entry("explanation", &self.explanation)?;
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for McpToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_via_value(deserializer, "McpToolResult", Self::from_value_at)
    }
}

// ---------------------------------------------------------------------------------------------
// McpMessage
// ---------------------------------------------------------------------------------------------

const MESSAGE_FIELDS: &[&str] = &["role", "content", "tool_calls", "tool_results", "metadata"];

/// A conversation message that may carry tool calls and tool results (Python `MCPMessage`,
/// `extra = 'allow'`).
///
/// Nested calls and results are validated by their own rules; a rejection names the nested
/// path, e.g. `McpMessage.tool_results[0].error`. Serialising fails if `extra` contains one of
/// the declared field names, since such a key would be written twice.
#[derive(Debug, Clone, PartialEq)]
pub struct McpMessage {
    /// Who sent the message, e.g. `"user"`, `"assistant"` or `"tool"`.
    pub role: String,
    /// Text content.
    pub content: Option<String>,
    /// Tool calls requested by the message.
    pub tool_calls: Option<Vec<McpToolCall>>,
    /// Tool results carried by the message.
    pub tool_results: Option<Vec<McpToolResult>>,
    /// Free-form metadata.
    pub metadata: Option<JsonObject>,
    /// Extra top-level fields, kept when read and written back after the declared fields.
    pub extra: JsonObject,
}

impl McpMessage {
    /// A message with the given role and every optional field absent.
    pub fn new(role: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: None,
            tool_calls: None,
            tool_results: None,
            metadata: None,
            extra: JsonObject::new(),
        }
    }

    fn from_value_at(value: Value, ctx: &str) -> Result<Self, SchemaError> {
        let map = expect_object(value, ctx)?;
        let (mut role, mut content, mut tool_calls, mut tool_results, mut metadata) =
            (None, None, None, None, None);
        let mut extra = JsonObject::new();
        for (key, value) in map {
            match key.as_str() {
                "role" => role = Some(value),
                "content" => content = Some(value),
                "tool_calls" => tool_calls = Some(value),
                "tool_results" => tool_results = Some(value),
                "metadata" => metadata = Some(value),
                _ => {
                    extra.insert(key, value);
                }
            }
        }
        Ok(Self {
            role: required_string(role, ctx, "role")?,
            content: optional_string(content, ctx, "content")?,
            tool_calls: optional_list(tool_calls, ctx, "tool_calls", McpToolCall::from_value_at)?,
            tool_results: optional_list(
                tool_results,
                ctx,
                "tool_results",
                McpToolResult::from_value_at,
            )?,
            metadata: optional_object(metadata, ctx, "metadata")?,
            extra,
        })
    }
}

impl TryFrom<Value> for McpMessage {
    type Error = SchemaError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value_at(value, "McpMessage")
    }
}

impl Serialize for McpMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        check_extra_keys(&self.extra, MESSAGE_FIELDS, "McpMessage").map_err(ser::Error::custom)?;
        let mut map = serializer.serialize_map(Some(5 + self.extra.len()))?;
        map.serialize_entry("role", &self.role)?;
        map.serialize_entry("content", &self.content)?;
        map.serialize_entry("tool_calls", &self.tool_calls)?;
        map.serialize_entry("tool_results", &self.tool_results)?;
        map.serialize_entry("metadata", &self.metadata)?;
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for McpMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_via_value(deserializer, "McpMessage", Self::from_value_at)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
