//! Property tests of the seed's schema types against arbitrary JSON shaped like them
//! (`schema_compat.rs` covers round trips of generated values): the `TryFrom<Value>` path and
//! serde agree on what they accept and on the error, whatever is accepted re-encodes to an
//! equal value with every declared field written, and nothing panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use codomyrmex_mcp::{
    ErrorDetails, McpErrorDetail, McpMessage, McpToolCall, McpToolResult, SchemaError,
};
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const FIELDS: &[&str] = &[
    "tool_name",
    "arguments",
    "status",
    "data",
    "error",
    "explanation",
    "error_type",
    "error_message",
    "error_details",
    "role",
    "content",
    "tool_calls",
    "tool_results",
    "metadata",
    "extra_field",
];

const STRINGS: &[&str] = &[
    "success",
    "failure",
    "FAILED",
    "partial_failure",
    "user",
    "x",
    "",
];

/// JSON biased towards the schema's field names and status values.
fn shaped() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(STRINGS).prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(FIELDS), inner, 0..6).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// Both decoding paths agree; what they accept is stable under re-encoding and writes `fields`.
fn agree<T>(v: &Value, fields: &[&str]) -> Result<bool, TestCaseError>
where
    T: TryFrom<Value, Error = SchemaError>
        + Serialize
        + DeserializeOwned
        + PartialEq
        + std::fmt::Debug,
{
    let via_try = T::try_from(v.clone());
    let via_serde = serde_json::from_value::<T>(v.clone());
    match (via_try, via_serde) {
        (Ok(a), Ok(b)) => {
            prop_assert_eq!(&a, &b);
            let encoded = serde_json::to_value(&a).expect("encodes");
            for f in fields {
                prop_assert!(encoded.get(*f).is_some(), "{} not written: {}", f, encoded);
            }
            let again = T::try_from(encoded.clone()).expect("re-decodes");
            prop_assert_eq!(&again, &a);
            prop_assert_eq!(serde_json::to_value(&again).expect("encodes"), encoded);
            Ok(true)
        }
        (Err(a), Err(b)) => {
            // serde's message is the SchemaError's text.
            prop_assert!(b.to_string().contains(&a.to_string()), "{} vs {}", a, b);
            prop_assert!(!a.path().is_empty());
            Ok(false)
        }
        (a, b) => Err(TestCaseError::fail(format!(
            "the decoding paths disagree on {v}: {a:?} vs {b:?}"
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn decoding_paths_agree_on_arbitrary_input(v in shaped()) {
        agree::<ErrorDetails>(&v, &[])?;
        agree::<McpErrorDetail>(&v, &["error_type", "error_message", "error_details"])?;
        agree::<McpToolCall>(&v, &["tool_name", "arguments"])?;
        if agree::<McpToolResult>(&v, &["status", "data", "error", "explanation"])? {
            let r = McpToolResult::try_from(v.clone()).expect("accepted");
            // The validators hold for every value that exists.
            if r.is_failure() {
                prop_assert!(r.error().is_some());
                prop_assert!(r.data().is_none());
            }
        }
        agree::<McpMessage>(&v, &["role", "content", "tool_calls", "tool_results", "metadata"])?;
    }

    #[test]
    fn decoding_text_never_panics(text in "\\PC{0,64}") {
        let _ = serde_json::from_str::<McpMessage>(&text);
        let _ = serde_json::from_str::<McpToolResult>(&text);
        let _ = serde_json::from_str::<McpToolCall>(&text);
        let _ = serde_json::from_str::<McpErrorDetail>(&text);
    }
}
