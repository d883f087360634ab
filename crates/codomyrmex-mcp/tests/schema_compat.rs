//! Compatibility of `codomyrmex_mcp::schema` with the Python Pydantic v2 models.
//!
//! The fixtures in `tests/fixtures/pydantic/` were written by real Pydantic (2.13.4):
//! valid ones are exactly `model_dump_json()` output (explicit nulls, declaration order,
//! extra fields last); invalid ones are inputs that Pydantic's `model_validate_json` rejects.
//! Dict keys are inserted in sorted order so the bytes match whether or not serde_json's
//! `preserve_order` feature is enabled. They were generated (from the crate directory) with
//! this script, which is not part of the repository:
//!
//! ```python
//! # Pydantic v2 models written from API_SPECIFICATION.txt; writes tests/fixtures/pydantic/*.json.
//! import json, pathlib
//! from typing import Any, Dict, List, Optional, Union
//! from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
//!
//! class MCPErrorDetail(BaseModel):
//!     error_type: str
//!     error_message: str
//!     error_details: Optional[Union[Dict[str, Any], str]] = None
//!
//! class MCPToolCall(BaseModel):
//!     model_config = ConfigDict(extra="allow")
//!     tool_name: str
//!     arguments: Dict[str, Any]
//!
//! class MCPToolResult(BaseModel):
//!     model_config = ConfigDict(extra="allow")
//!     status: str
//!     data: Optional[Dict[str, Any]] = None
//!     error: Optional[MCPErrorDetail] = None
//!     explanation: Optional[str] = None
//!
//!     @model_validator(mode="after")
//!     def check_error_if_failed_and_data_if_success(self):
//!         if "fail" in self.status.lower():
//!             if self.error is None:
//!                 raise ValueError("error is required when status indicates failure")
//!             if self.data is not None:
//!                 raise ValueError("data must be None when status indicates failure")
//!         return self
//!
//! class MCPMessage(BaseModel):
//!     model_config = ConfigDict(extra="allow")
//!     role: str
//!     content: Optional[str] = None
//!     tool_calls: Optional[List[MCPToolCall]] = None
//!     tool_results: Optional[List[MCPToolResult]] = None
//!     metadata: Optional[Dict[str, Any]] = None
//!
//! out = pathlib.Path("tests/fixtures/pydantic")
//! out.mkdir(parents=True, exist_ok=True)
//!
//! def valid(name, model):
//!     text = model.model_dump_json()
//!     assert type(model).model_validate_json(text).model_dump_json() == text
//!     (out / f"{name}.json").write_text(text)
//!
//! def invalid(name, cls, obj):
//!     text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
//!     try:
//!         cls.model_validate_json(text)
//!     except ValidationError:
//!         (out / f"{name}.json").write_text(text)
//!         return
//!     raise AssertionError(f"pydantic accepted {name}")
//!
//! # The seed's example initialisations.
//! valid("error_detail_seed", MCPErrorDetail(
//!     error_type="ResourceNotFound",
//!     error_message="The requested resource could not be located.",
//!     error_details={"resource_id": "xyz-123"}))
//! valid("tool_call_seed", MCPToolCall(
//!     tool_name="file_utility.read_file_content",
//!     arguments={"file_path": "/path/to/file.txt", "max_chars": 1024}))
//! valid("result_success_seed", MCPToolResult(
//!     status="success", data={"file_content": "Hello World"},
//!     explanation="Read file successfully."))
//! valid("result_failure_seed", MCPToolResult(
//!     status="failure",
//!     error=MCPErrorDetail(error_type="FileNotFound",
//!                          error_message="The target file was not found.")))
//! # More shapes (dict keys in sorted order so the bytes match with or without
//! # serde_json's preserve_order feature).
//! valid("error_detail_text_details", MCPErrorDetail(
//!     error_type="ValidationError", error_message="max_chars must be positive",
//!     error_details="parameter: max_chars"))
//! valid("result_no_change_needed", MCPToolResult(
//!     status="no_change_needed", explanation="The file is already formatted."))
//! valid("result_partial_failure", MCPToolResult(
//!     status="partial_failure",
//!     error=MCPErrorDetail(error_type="Timeout", error_message="2 of 5 files timed out",
//!                          error_details={"failed": ["a.py", "b.py"], "timeout_s": 2.5}),
//!     explanation="3 of 5 files were processed."))
//! valid("tool_call_extras", MCPToolCall(
//!     tool_name="ai_code_editing.generate_code_snippet",
//!     arguments={"language": "python", "prompt": "fizzbuzz \u00e9\u4e2d"},
//!     call_id="call-0001", priority=2, trace={"parent": None, "span": "s-1"}))
//! valid("result_extras", MCPToolResult(
//!     status="success", data={"count": 3, "items": [1, 2.5, None, True, "x"]},
//!     duration_ms=12, tool_name="file_utility.list"))
//! valid("message_minimal", MCPMessage(role="user"))
//! valid("message_nested", MCPMessage(
//!     role="assistant",
//!     content="Reading two files.",
//!     tool_calls=[
//!         MCPToolCall(tool_name="file_utility.read_file_content",
//!                     arguments={"file_path": "/a.txt"}, call_id="c1"),
//!         MCPToolCall(tool_name="file_utility.read_file_content",
//!                     arguments={"file_path": "/b.txt", "max_chars": 10}),
//!     ],
//!     tool_results=[
//!         MCPToolResult(status="success", data={"file_content": "A"}, call_id="c1"),
//!         MCPToolResult(status="FAILED", error=MCPErrorDetail(
//!             error_type="FileNotFound", error_message="/b.txt", error_details="errno 2")),
//!         MCPToolResult(status="no_change_needed", explanation="cached"),
//!     ],
//!     metadata={"model": "m-1", "turn": 4},
//!     conversation_id="conv-9", timestamp=1700000000))
//!
//! # Inputs Pydantic rejects (the Rust test checks the field path and rule it reports).
//! invalid("invalid_result_failure_missing_error", MCPToolResult,
//!         {"status": "failure", "data": None})
//! invalid("invalid_result_failure_null_error", MCPToolResult,
//!         {"status": "FAILED", "data": None, "error": None, "explanation": None})
//! invalid("invalid_result_failure_with_data", MCPToolResult,
//!         {"status": "partial_failure", "data": {"done": 3},
//!          "error": {"error_type": "E", "error_message": "m", "error_details": None},
//!          "explanation": None})
//! invalid("invalid_result_status_missing", MCPToolResult,
//!         {"data": {"x": 1}, "error": None, "explanation": None})
//! invalid("invalid_tool_call_arguments_array", MCPToolCall,
//!         {"tool_name": "t", "arguments": ["/path/to/file.txt"]})
//! invalid("invalid_tool_call_arguments_missing", MCPToolCall, {"tool_name": "t"})
//! invalid("invalid_error_detail_details_number", MCPErrorDetail,
//!         {"error_type": "E", "error_message": "m", "error_details": 404})
//! invalid("invalid_message_nested_result", MCPMessage,
//!         {"role": "tool", "content": None, "tool_calls": None,
//!          "tool_results": [{"status": "success", "data": None, "error": None, "explanation": None},
//!                           {"status": "failure", "data": None, "error": None, "explanation": None}],
//!          "metadata": None})
//! invalid("invalid_message_nested_call", MCPMessage,
//!         {"role": "assistant", "tool_calls": [{"tool_name": "t", "arguments": "x=1"}]})
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use codomyrmex_mcp::{
    ErrorDetails, JsonObject, McpErrorDetail, McpMessage, McpToolCall, McpToolResult,
    McpToolResultParts, SchemaError, status_indicates_failure,
};
mod json_strategy;
use json_strategy::json_value;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Parses a Pydantic fixture, checks it equals `expected`, and checks that writing it back
/// reproduces Pydantic's bytes exactly.
fn check_fixture<T>(fixture: &str, expected: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let parsed: T = serde_json::from_str(fixture).unwrap();
    assert_eq!(&parsed, expected);
    assert_eq!(serde_json::to_string(&parsed).unwrap(), fixture.trim_end());
    assert_eq!(serde_json::to_string(expected).unwrap(), fixture.trim_end());
}

/// Checks that a fixture Pydantic rejects is rejected with `expected` (field path and rule).
fn check_rejected<T: DeserializeOwned + std::fmt::Debug>(fixture: &str, expected: &str) {
    let err = serde_json::from_str::<T>(fixture).unwrap_err().to_string();
    assert!(
        err.starts_with(expected),
        "expected {expected:?}, got {err:?}"
    );
    let value: Value = serde_json::from_str(fixture).unwrap();
    let err = serde_json::from_value::<T>(value).unwrap_err().to_string();
    assert_eq!(err, expected);
}

// ----- valid fixtures ---------------------------------------------------------------------

#[test]
fn seed_error_detail() {
    check_fixture(
        include_str!("fixtures/pydantic/error_detail_seed.json"),
        &McpErrorDetail::new(
            "ResourceNotFound",
            "The requested resource could not be located.",
        )
        .with_details(obj(json!({"resource_id": "xyz-123"}))),
    );
}

#[test]
fn error_detail_with_text_details() {
    check_fixture(
        include_str!("fixtures/pydantic/error_detail_text_details.json"),
        &McpErrorDetail::new("ValidationError", "max_chars must be positive")
            .with_details("parameter: max_chars"),
    );
}

#[test]
fn seed_tool_call() {
    check_fixture(
        include_str!("fixtures/pydantic/tool_call_seed.json"),
        &McpToolCall::new(
            "file_utility.read_file_content",
            obj(json!({"file_path": "/path/to/file.txt", "max_chars": 1024})),
        ),
    );
}

#[test]
fn tool_call_extras_are_kept() {
    let mut expected = McpToolCall::new(
        "ai_code_editing.generate_code_snippet",
        obj(json!({"language": "python", "prompt": "fizzbuzz \u{e9}\u{4e2d}"})),
    );
    expected.extra = obj(json!({
        "call_id": "call-0001",
        "priority": 2,
        "trace": {"parent": null, "span": "s-1"},
    }));
    check_fixture(
        include_str!("fixtures/pydantic/tool_call_extras.json"),
        &expected,
    );
}

#[test]
fn seed_success_result() {
    check_fixture(
        include_str!("fixtures/pydantic/result_success_seed.json"),
        &McpToolResult::success(obj(json!({"file_content": "Hello World"})))
            .with_explanation("Read file successfully."),
    );
}

#[test]
fn seed_failure_result() {
    let expected = McpToolResult::failure(McpErrorDetail::new(
        "FileNotFound",
        "The target file was not found.",
    ));
    check_fixture(
        include_str!("fixtures/pydantic/result_failure_seed.json"),
        &expected,
    );
    assert!(expected.is_failure());
}

#[test]
fn no_change_needed_result() {
    check_fixture(
        include_str!("fixtures/pydantic/result_no_change_needed.json"),
        &McpToolResult::no_change_needed("The file is already formatted."),
    );
}

#[test]
fn partial_failure_result() {
    let expected = McpToolResult::try_new(
        "partial_failure",
        None,
        Some(
            McpErrorDetail::new("Timeout", "2 of 5 files timed out")
                .with_details(obj(json!({"failed": ["a.py", "b.py"], "timeout_s": 2.5}))),
        ),
    )
    .unwrap()
    .with_explanation("3 of 5 files were processed.");
    check_fixture(
        include_str!("fixtures/pydantic/result_partial_failure.json"),
        &expected,
    );
}

#[test]
fn result_extras_are_kept() {
    let expected =
        McpToolResult::success(obj(json!({"count": 3, "items": [1, 2.5, null, true, "x"]})))
            .with_extra("duration_ms", json!(12))
            .and_then(|r| r.with_extra("tool_name", json!("file_utility.list")))
            .unwrap();
    check_fixture(
        include_str!("fixtures/pydantic/result_extras.json"),
        &expected,
    );
}

#[test]
fn minimal_message() {
    check_fixture(
        include_str!("fixtures/pydantic/message_minimal.json"),
        &McpMessage::new("user"),
    );
}

#[test]
fn message_with_nested_calls_and_results() {
    let mut first_call = McpToolCall::new(
        "file_utility.read_file_content",
        obj(json!({"file_path": "/a.txt"})),
    );
    first_call.extra = obj(json!({"call_id": "c1"}));
    let expected = McpMessage {
        role: "assistant".into(),
        content: Some("Reading two files.".into()),
        tool_calls: Some(vec![
            first_call,
            McpToolCall::new(
                "file_utility.read_file_content",
                obj(json!({"file_path": "/b.txt", "max_chars": 10})),
            ),
        ]),
        tool_results: Some(vec![
            McpToolResult::success(obj(json!({"file_content": "A"})))
                .with_extra("call_id", json!("c1"))
                .unwrap(),
            McpToolResult::try_new(
                "FAILED",
                None,
                Some(McpErrorDetail::new("FileNotFound", "/b.txt").with_details("errno 2")),
            )
            .unwrap(),
            McpToolResult::no_change_needed("cached"),
        ]),
        metadata: Some(obj(json!({"model": "m-1", "turn": 4}))),
        extra: obj(json!({"conversation_id": "conv-9", "timestamp": 1_700_000_000})),
    };
    check_fixture(
        include_str!("fixtures/pydantic/message_nested.json"),
        &expected,
    );
}

// ----- fixtures Pydantic rejects ----------------------------------------------------------

#[test]
fn rejects_failure_without_error() {
    check_rejected::<McpToolResult>(
        include_str!("fixtures/pydantic/invalid_result_failure_missing_error.json"),
        r#"McpToolResult.error: required when status indicates failure (status "failure")"#,
    );
}

#[test]
fn rejects_failure_with_null_error() {
    check_rejected::<McpToolResult>(
        include_str!("fixtures/pydantic/invalid_result_failure_null_error.json"),
        r#"McpToolResult.error: required when status indicates failure (status "FAILED")"#,
    );
}

#[test]
fn rejects_failure_with_data() {
    check_rejected::<McpToolResult>(
        include_str!("fixtures/pydantic/invalid_result_failure_with_data.json"),
        r#"McpToolResult.data: must be null or absent when status indicates failure (status "partial_failure")"#,
    );
}

#[test]
fn rejects_result_without_status() {
    check_rejected::<McpToolResult>(
        include_str!("fixtures/pydantic/invalid_result_status_missing.json"),
        "McpToolResult.status: required field is missing",
    );
}

#[test]
fn rejects_array_arguments() {
    check_rejected::<McpToolCall>(
        include_str!("fixtures/pydantic/invalid_tool_call_arguments_array.json"),
        "McpToolCall.arguments: must be a JSON object, got array",
    );
}

#[test]
fn rejects_missing_arguments() {
    check_rejected::<McpToolCall>(
        include_str!("fixtures/pydantic/invalid_tool_call_arguments_missing.json"),
        "McpToolCall.arguments: required field is missing",
    );
}

#[test]
fn rejects_numeric_error_details() {
    check_rejected::<McpErrorDetail>(
        include_str!("fixtures/pydantic/invalid_error_detail_details_number.json"),
        "McpErrorDetail.error_details: must be a JSON object, a string or null, got number",
    );
}

#[test]
fn rejects_message_with_invalid_nested_result() {
    check_rejected::<McpMessage>(
        include_str!("fixtures/pydantic/invalid_message_nested_result.json"),
        r#"McpMessage.tool_results[1].error: required when status indicates failure (status "failure")"#,
    );
}

#[test]
fn rejects_message_with_invalid_nested_call() {
    check_rejected::<McpMessage>(
        include_str!("fixtures/pydantic/invalid_message_nested_call.json"),
        "McpMessage.tool_calls[0].arguments: must be a JSON object, got string",
    );
}

// ----- property tests ---------------------------------------------------------------------

fn json_object() -> impl Strategy<Value = JsonObject> {
    prop::collection::btree_map("\\PC{0,8}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

/// Extra fields whose names avoid every declared field name in `reserved`.
fn extras(reserved: &'static [&'static str]) -> impl Strategy<Value = JsonObject> {
    prop::collection::btree_map(
        "[a-z_]{1,12}".prop_filter("declared field name", move |k| {
            !reserved.contains(&k.as_str())
        }),
        json_value(),
        0..3,
    )
    .prop_map(|m| m.into_iter().collect())
}

fn error_details() -> impl Strategy<Value = ErrorDetails> {
    prop_oneof![
        json_object().prop_map(ErrorDetails::Object),
        "\\PC{0,16}".prop_map(ErrorDetails::Text),
    ]
}

fn error_detail() -> impl Strategy<Value = McpErrorDetail> {
    (
        "\\PC{0,12}",
        "\\PC{0,24}",
        prop::option::of(error_details()),
    )
        .prop_map(
            |(error_type, error_message, error_details)| McpErrorDetail {
                error_type,
                error_message,
                error_details,
            },
        )
}

fn tool_call() -> impl Strategy<Value = McpToolCall> {
    (
        "\\PC{0,16}",
        json_object(),
        extras(&["tool_name", "arguments"]),
    )
        .prop_map(|(tool_name, arguments, extra)| McpToolCall {
            tool_name,
            arguments,
            extra,
        })
}

fn status() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("success".to_owned()),
        Just("failure".to_owned()),
        Just("FAILED".to_owned()),
        Just("partial_failure".to_owned()),
        Just("no_change_needed".to_owned()),
        "\\PC{0,12}",
    ]
}

fn tool_result() -> impl Strategy<Value = McpToolResult> {
    (
        status(),
        prop::option::of(json_object()),
        prop::option::of(error_detail()),
        error_detail(),
        prop::option::of("\\PC{0,16}"),
        extras(&["status", "data", "error", "explanation"]),
    )
        .prop_map(
            |(status, data, error, fallback_error, explanation, extra)| {
                let failing = status_indicates_failure(&status);
                McpToolResult::try_from(McpToolResultParts {
                    data: if failing { None } else { data },
                    error: if failing {
                        Some(error.unwrap_or(fallback_error))
                    } else {
                        error
                    },
                    status,
                    explanation,
                    extra,
                })
                .unwrap()
            },
        )
}

fn message() -> impl Strategy<Value = McpMessage> {
    (
        "\\PC{0,10}",
        prop::option::of("\\PC{0,24}"),
        prop::option::of(prop::collection::vec(tool_call(), 0..3)),
        prop::option::of(prop::collection::vec(tool_result(), 0..3)),
        prop::option::of(json_object()),
        extras(&["role", "content", "tool_calls", "tool_results", "metadata"]),
    )
        .prop_map(
            |(role, content, tool_calls, tool_results, metadata, extra)| McpMessage {
                role,
                content,
                tool_calls,
                tool_results,
                metadata,
                extra,
            },
        )
}

/// Serialises through text and through `Value`, parses back, and checks both are identical
/// and that re-serialising gives the same text.
fn assert_round_trip<T>(value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).unwrap();
    let parsed: T = serde_json::from_str(&text).unwrap();
    prop_assert_eq!(&parsed, value);
    prop_assert_eq!(serde_json::to_string(&parsed).unwrap(), text);
    let via_value: T = serde_json::from_value(serde_json::to_value(value).unwrap()).unwrap();
    prop_assert_eq!(&via_value, value);
    Ok(())
}

proptest! {
    #[test]
    fn error_details_round_trip(details in error_details()) {
        assert_round_trip(&details)?;
    }

    #[test]
    fn error_detail_round_trips(detail in error_detail()) {
        assert_round_trip(&detail)?;
        let text = serde_json::to_string(&detail).unwrap();
        prop_assert!(text.contains("\"error_details\":"), "{}", text);
    }

    #[test]
    fn tool_call_round_trips(call in tool_call()) {
        assert_round_trip(&call)?;
    }

    #[test]
    fn tool_result_round_trips(result in tool_result()) {
        assert_round_trip(&result)?;
        let value = serde_json::to_value(&result).unwrap();
        for field in ["status", "data", "error", "explanation"] {
            prop_assert!(value.get(field).is_some(), "{} not written", field);
        }
    }

    #[test]
    fn message_round_trips(message in message()) {
        assert_round_trip(&message)?;
    }

    /// `try_new` and deserialisation agree, and accept exactly the values that satisfy
    /// both validators.
    #[test]
    fn validators_hold_everywhere(
        status in status(),
        data in prop::option::of(json_object()),
        error in prop::option::of(error_detail()),
    ) {
        let failing = status_indicates_failure(&status);
        let valid = !failing || (error.is_some() && data.is_none());
        let built = McpToolResult::try_new(status.clone(), data.clone(), error.clone());
        let parsed = serde_json::from_value::<McpToolResult>(
            json!({"status": status, "data": data, "error": error}),
        );
        prop_assert_eq!(built.is_ok(), valid);
        prop_assert_eq!(parsed.is_ok(), valid);
        match (built, parsed) {
            (Ok(built), Ok(parsed)) => {
                prop_assert_eq!(&built, &parsed);
                prop_assert_eq!(built.status(), status.as_str());
                prop_assert_eq!(built.is_failure(), failing);
            }
            (Err(built), Err(parsed)) => {
                let expected_path = if error.is_none() { "McpToolResult.error" } else { "McpToolResult.data" };
                prop_assert_eq!(built.path(), expected_path);
                prop_assert_eq!(parsed.to_string(), built.to_string());
                let is_rule_error = matches!(
                    built,
                    SchemaError::ErrorRequiredOnFailure { .. } | SchemaError::DataOnFailure { .. }
                );
                prop_assert!(is_rule_error, "unexpected error kind");
            }
            _ => prop_assert!(false, "try_new and deserialisation disagree"),
        }
    }

    /// Status failure detection is a case-insensitive substring test for "fail".
    #[test]
    fn failure_detection_is_case_insensitive(prefix in "[a-z_ ]{0,6}", suffix in "[a-z_ ]{0,6}", mask in any::<u8>()) {
        let fail: String = "fail"
            .chars()
            .enumerate()
            .map(|(i, c)| if mask & (1 << i) != 0 { c.to_ascii_uppercase() } else { c })
            .collect();
        let status = format!("{prefix}{fail}{suffix}");
        prop_assert!(status_indicates_failure(&status), "{}", status);
        let other = format!("{prefix}{suffix}");
        prop_assert_eq!(status_indicates_failure(&other), other.contains("fail"));
    }
}
