//! Tests of the seed data model: validators, wire format, round trips.

use super::*;
use serde_json::json;

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The `SchemaError` text inside a `serde_json` error (which appends a position).
fn parse_err<T: for<'de> Deserialize<'de> + fmt::Debug>(text: &str) -> String {
    serde_json::from_str::<T>(text).unwrap_err().to_string()
}

// ----- status_indicates_failure -------------------------------------------------------

#[test]
fn failure_statuses_are_case_insensitive_substrings() {
    for status in ["failure", "FAILED", "partial_failure", "Fail", "xfAiLx"] {
        assert!(status_indicates_failure(status), "{status}");
    }
    for status in ["success", "no_change_needed", "fai", "f-a-i-l", ""] {
        assert!(!status_indicates_failure(status), "{status}");
    }
}

#[test]
fn failure_status_agrees_with_the_lowercased_search_for_every_character() {
    // The search without a lowercased copy gives `to_lowercase().contains("fail")`'s answer
    // with any character in any of the four places (K and \u{130} lowercase to ASCII).
    let reference = |s: &str| s.to_lowercase().contains("fail");
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        if !c.is_ascii() && c.to_lowercase().all(|l| !l.is_ascii()) {
            continue;
        }
        for at in 0..4 {
            let mut word: Vec<char> = "fAiL".chars().collect();
            word[at] = c;
            let status: String = word.into_iter().collect();
            assert_eq!(
                status_indicates_failure(&status),
                reference(&status),
                "{status:?}"
            );
        }
    }
    for status in [
        "FA\u{130}L",
        "FA\u{130}\u{307}L",
        "x\u{212A}fail",
        "\u{17F}ail",
        "é-FAIL",
    ] {
        assert_eq!(
            status_indicates_failure(status),
            reference(status),
            "{status}"
        );
    }
}

// ----- ErrorDetails / McpErrorDetail ----------------------------------------------------

#[test]
fn error_detail_constructors_and_display() {
    let detail = McpErrorDetail::new("FileNotFound", "gone").with_details("at /tmp/x");
    assert_eq!(detail.error_type, "FileNotFound");
    assert_eq!(detail.error_message, "gone");
    assert_eq!(
        detail.error_details,
        Some(ErrorDetails::Text("at /tmp/x".into()))
    );
    assert_eq!(detail.to_string(), "FileNotFound: gone");
    let boxed: Box<dyn std::error::Error> = Box::new(detail);
    assert_eq!(boxed.to_string(), "FileNotFound: gone");
    assert_eq!(
        ErrorDetails::from(String::from("s")),
        ErrorDetails::Text("s".into())
    );
    assert_eq!(
        ErrorDetails::from(obj(json!({"k": 1}))),
        ErrorDetails::Object(obj(json!({"k": 1})))
    );
}

#[test]
fn error_detail_writes_explicit_null_details_in_declaration_order() {
    let text = serde_json::to_string(&McpErrorDetail::new("T", "m")).unwrap();
    assert_eq!(
        text,
        r#"{"error_type":"T","error_message":"m","error_details":null}"#
    );
    let text = serde_json::to_string(&McpErrorDetail::new("T", "m").with_details("why")).unwrap();
    assert_eq!(
        text,
        r#"{"error_type":"T","error_message":"m","error_details":"why"}"#
    );
}

#[test]
fn error_detail_accepts_object_string_null_and_absent_details() {
    let cases = [
        (
            json!({"k": [1]}),
            Some(ErrorDetails::Object(obj(json!({"k": [1]})))),
        ),
        (json!("text"), Some(ErrorDetails::Text("text".into()))),
        (Value::Null, None),
    ];
    for (details, expected) in cases {
        let value = json!({"error_type": "T", "error_message": "m", "error_details": details});
        let parsed = McpErrorDetail::try_from(value).unwrap();
        assert_eq!(parsed.error_details, expected);
    }
    let parsed: McpErrorDetail =
        serde_json::from_str(r#"{"error_type":"T","error_message":"m"}"#).unwrap();
    assert_eq!(parsed, McpErrorDetail::new("T", "m"));
}

#[test]
fn error_detail_rejects_number_bool_and_array_details() {
    for (details, found) in [
        (json!(3), "number"),
        (json!(true), "boolean"),
        (json!([1]), "array"),
    ] {
        let value = json!({"error_type": "T", "error_message": "m", "error_details": details});
        let err = McpErrorDetail::try_from(value).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "McpErrorDetail.error_details: must be a JSON object, a string or null, got {found}"
            )
        );
        assert_eq!(err.path(), "McpErrorDetail.error_details");
    }
}

#[test]
fn standalone_error_details_rejects_non_object_non_string() {
    assert_eq!(
        ErrorDetails::try_from(json!(null)).unwrap_err().to_string(),
        "ErrorDetails: must be a JSON object or a string, got null"
    );
    assert!(
        parse_err::<ErrorDetails>("[1]")
            .starts_with("ErrorDetails: must be a JSON object or a string, got array")
    );
    assert_eq!(
        serde_json::from_str::<ErrorDetails>(r#""x""#).unwrap(),
        ErrorDetails::Text("x".into())
    );
    assert_eq!(
        serde_json::to_string(&ErrorDetails::from("x")).unwrap(),
        r#""x""#
    );
}

#[test]
fn error_detail_requires_type_and_message_strings() {
    assert!(
        parse_err::<McpErrorDetail>(r#"{"error_message":"m"}"#)
            .starts_with("McpErrorDetail.error_type: required field is missing")
    );
    assert!(
        parse_err::<McpErrorDetail>(r#"{"error_type":"T"}"#)
            .starts_with("McpErrorDetail.error_message: required field is missing")
    );
    assert!(
        parse_err::<McpErrorDetail>(r#"{"error_type":7,"error_message":"m"}"#)
            .starts_with("McpErrorDetail.error_type: must be a string, got number")
    );
    assert!(
        parse_err::<McpErrorDetail>(r#"{"error_type":"T","error_message":null}"#)
            .starts_with("McpErrorDetail.error_message: must be a string, got null")
    );
    assert!(
        parse_err::<McpErrorDetail>(r#""T""#)
            .starts_with("McpErrorDetail: must be a JSON object, got string")
    );
}

#[test]
fn error_detail_ignores_unknown_fields() {
    let parsed: McpErrorDetail = serde_json::from_str(
        r#"{"error_type":"T","error_message":"m","error_details":null,"code":42}"#,
    )
    .unwrap();
    assert_eq!(parsed, McpErrorDetail::new("T", "m"));
    assert!(!serde_json::to_string(&parsed).unwrap().contains("code"));
}

// ----- McpToolCall -------------------------------------------------------------------

#[test]
fn tool_call_reads_and_writes_declared_fields_then_extras() {
    let text = r#"{"tool_name":"t","arguments":{"a":1},"zeta":null,"call_id":"c1"}"#;
    let call: McpToolCall = serde_json::from_str(text).unwrap();
    assert_eq!(call.tool_name, "t");
    assert_eq!(call.arguments, obj(json!({"a": 1})));
    assert_eq!(call.extra, obj(json!({"zeta": null, "call_id": "c1"})));
    let written = serde_json::to_string(&call).unwrap();
    assert!(
        written.starts_with(r#"{"tool_name":"t","arguments":{"a":1},"#),
        "{written}"
    );
    assert_eq!(serde_json::from_str::<McpToolCall>(&written).unwrap(), call);
    assert_eq!(
        serde_json::to_string(&McpToolCall::new("t", JsonObject::new())).unwrap(),
        r#"{"tool_name":"t","arguments":{}}"#
    );
}

#[test]
fn tool_call_rejects_missing_or_non_object_arguments() {
    assert!(
        parse_err::<McpToolCall>(r#"{"tool_name":"t"}"#)
            .starts_with("McpToolCall.arguments: required field is missing")
    );
    for (arguments, found) in [("[1,2]", "array"), (r#""a=1""#, "string"), ("null", "null")] {
        let text = format!(r#"{{"tool_name":"t","arguments":{arguments}}}"#);
        assert!(
            parse_err::<McpToolCall>(&text).starts_with(&format!(
                "McpToolCall.arguments: must be a JSON object, got {found}"
            )),
            "{text}"
        );
    }
}

#[test]
fn tool_call_requires_string_tool_name() {
    assert!(
        parse_err::<McpToolCall>(r#"{"arguments":{}}"#)
            .starts_with("McpToolCall.tool_name: required field is missing")
    );
    assert!(
        parse_err::<McpToolCall>(r#"{"tool_name":["t"],"arguments":{}}"#)
            .starts_with("McpToolCall.tool_name: must be a string, got array")
    );
    assert!(
        parse_err::<McpToolCall>("[]").starts_with("McpToolCall: must be a JSON object, got array")
    );
}

#[test]
fn tool_call_serialisation_refuses_extras_shadowing_declared_fields() {
    let mut call = McpToolCall::new("t", JsonObject::new());
    call.extra.insert("arguments".into(), json!({"evil": true}));
    let err = serde_json::to_string(&call).unwrap_err().to_string();
    assert!(
        err.contains(r#"McpToolCall.extra: "arguments" is a declared field name"#),
        "{err}"
    );
}

// ----- McpToolResult -----------------------------------------------------------------

#[test]
fn result_constructors_set_exact_statuses() {
    let ok = McpToolResult::success(obj(json!({"x": 1})));
    assert_eq!(
        (ok.status(), ok.data()),
        ("success", Some(&obj(json!({"x": 1}))))
    );
    assert!(ok.error().is_none() && !ok.is_failure());
    assert_eq!(McpToolResult::success(None).data(), None);

    let fail = McpToolResult::failure(McpErrorDetail::new("E", "m"));
    assert_eq!(fail.status(), "failure");
    assert_eq!(fail.error(), Some(&McpErrorDetail::new("E", "m")));
    assert!(fail.data().is_none() && fail.is_failure());

    let same = McpToolResult::no_change_needed("already formatted");
    assert_eq!(same.status(), "no_change_needed");
    assert_eq!(same.explanation(), Some("already formatted"));
    assert!(same.data().is_none() && same.error().is_none() && !same.is_failure());
}

#[test]
fn success_value_wraps_non_objects_under_result() {
    assert_eq!(
        McpToolResult::success_value(json!({"a": 1})).data(),
        Some(&obj(json!({"a": 1})))
    );
    for value in [json!(null), json!(3), json!("s"), json!([1]), json!(false)] {
        let result = McpToolResult::success_value(value.clone());
        assert_eq!(result.data(), Some(&obj(json!({"result": value}))));
        assert_eq!(result.status(), "success");
    }
}

#[test]
fn result_writes_absent_optionals_as_null() {
    assert_eq!(
        serde_json::to_string(&McpToolResult::success(obj(json!({"x": 1})))).unwrap(),
        r#"{"status":"success","data":{"x":1},"error":null,"explanation":null}"#
    );
    assert_eq!(
        serde_json::to_string(&McpToolResult::success(None)).unwrap(),
        r#"{"status":"success","data":null,"error":null,"explanation":null}"#
    );
}

#[test]
fn result_keeps_status_exactly_and_never_defaults_data_to_empty_object() {
    let parsed: McpToolResult = serde_json::from_str(r#"{"status":"Success "}"#).unwrap();
    assert_eq!(parsed.status(), "Success ");
    assert_eq!(parsed.data(), None);
    let parsed: McpToolResult =
        serde_json::from_str(r#"{"status":"success","data":null}"#).unwrap();
    assert_eq!(parsed.data(), None);
    let parsed: McpToolResult = serde_json::from_str(r#"{"status":"success","data":{}}"#).unwrap();
    assert_eq!(parsed.data(), Some(&JsonObject::new()));
}

#[test]
fn failure_requires_error_absent_or_null() {
    for text in [
        r#"{"status":"FAILED"}"#,
        r#"{"status":"FAILED","data":null,"error":null,"explanation":null}"#,
    ] {
        let err = parse_err::<McpToolResult>(text);
        assert!(
            err.starts_with(
                r#"McpToolResult.error: required when status indicates failure (status "FAILED")"#
            ),
            "{err}"
        );
    }
    let err = McpToolResult::try_new("partial_failure", None, None).unwrap_err();
    assert_eq!(
        err,
        SchemaError::ErrorRequiredOnFailure {
            path: "McpToolResult.error".into(),
            status: "partial_failure".into()
        }
    );
}

#[test]
fn failure_rejects_data_but_accepts_null_data() {
    let text =
        r#"{"status":"failure","data":{"x":1},"error":{"error_type":"E","error_message":"m"}}"#;
    assert!(parse_err::<McpToolResult>(text).starts_with(
        r#"McpToolResult.data: must be null or absent when status indicates failure (status "failure")"#
    ));
    // An empty object is still data.
    let err = McpToolResult::try_new(
        "failure",
        Some(JsonObject::new()),
        Some(McpErrorDetail::new("E", "m")),
    )
    .unwrap_err();
    assert_eq!(err.path(), "McpToolResult.data");
    let ok: McpToolResult = serde_json::from_str(
        r#"{"status":"failure","data":null,"error":{"error_type":"E","error_message":"m"}}"#,
    )
    .unwrap();
    assert_eq!(ok, McpToolResult::failure(McpErrorDetail::new("E", "m")));
}

#[test]
fn non_failure_statuses_may_carry_anything() {
    let result = McpToolResult::try_new(
        "success",
        Some(obj(json!({"x": 1}))),
        Some(McpErrorDetail::new("Warning", "w")),
    )
    .unwrap();
    assert_eq!(
        result.error().map(|e| e.error_type.as_str()),
        Some("Warning")
    );
    assert!(McpToolResult::try_new("no_change_needed", None, None).is_ok());
}

#[test]
fn result_rejects_wrong_field_types() {
    let cases = [
        (
            r#"{"data":{}}"#,
            "McpToolResult.status: required field is missing",
        ),
        (
            r#"{"status":1}"#,
            "McpToolResult.status: must be a string, got number",
        ),
        (
            r#"{"status":"success","data":[1]}"#,
            "McpToolResult.data: must be a JSON object or null, got array",
        ),
        (
            r#"{"status":"failure","error":"boom"}"#,
            "McpToolResult.error: must be a JSON object (McpErrorDetail) or null, got string",
        ),
        (
            r#"{"status":"failure","error":{"error_type":"E"}}"#,
            "McpToolResult.error.error_message: required field is missing",
        ),
        (
            r#"{"status":"success","explanation":false}"#,
            "McpToolResult.explanation: must be a string or null, got boolean",
        ),
        ("null", "McpToolResult: must be a JSON object, got null"),
    ];
    for (text, expected) in cases {
        let err = parse_err::<McpToolResult>(text);
        assert!(err.starts_with(expected), "{text}: {err}");
    }
}

#[test]
fn result_extras_are_kept_and_reserved_names_rejected() {
    let text = r#"{"status":"success","data":null,"error":null,"explanation":null,"duration_ms":12,"tool":"t"}"#;
    let parsed: McpToolResult = serde_json::from_str(text).unwrap();
    assert_eq!(
        parsed.extra(),
        &obj(json!({"duration_ms": 12, "tool": "t"}))
    );
    assert_eq!(serde_json::to_string(&parsed).unwrap(), text);

    let built = McpToolResult::success(None)
        .with_extra("duration_ms", json!(12))
        .and_then(|r| r.with_extra("tool", json!("t")))
        .unwrap();
    assert_eq!(built, parsed);

    for key in ["status", "data", "error", "explanation"] {
        let err = McpToolResult::success(None)
            .with_extra(key, json!(1))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "McpToolResult.extra: {key:?} is a declared field name and cannot be used as an extra field"
            )
        );
    }
}

#[test]
fn parts_round_trip_and_are_validated() {
    let result = McpToolResult::failure(McpErrorDetail::new("E", "m"))
        .with_explanation("why")
        .with_extra("k", json!(1))
        .unwrap();
    let parts = result.clone().into_parts();
    assert_eq!(parts.status, "failure");
    assert_eq!(parts.explanation.as_deref(), Some("why"));
    assert_eq!(McpToolResult::try_from(parts.clone()).unwrap(), result);

    let mut bad = parts.clone();
    bad.error = None;
    assert_eq!(
        McpToolResult::try_from(bad).unwrap_err().path(),
        "McpToolResult.error"
    );
    let mut bad = parts.clone();
    bad.data = Some(JsonObject::new());
    assert_eq!(
        McpToolResult::try_from(bad).unwrap_err().path(),
        "McpToolResult.data"
    );
    let mut bad = parts;
    bad.extra.insert("status".into(), json!("success"));
    assert!(matches!(
        McpToolResult::try_from(bad).unwrap_err(),
        SchemaError::ReservedExtraKey { key, .. } if key == "status"
    ));
}

// ----- McpMessage ----------------------------------------------------------------------

#[test]
fn message_minimal_forms() {
    let parsed: McpMessage = serde_json::from_str(r#"{"role":"user"}"#).unwrap();
    assert_eq!(parsed, McpMessage::new("user"));
    assert_eq!(
        serde_json::to_string(&parsed).unwrap(),
        r#"{"role":"user","content":null,"tool_calls":null,"tool_results":null,"metadata":null}"#
    );
    assert!(
        parse_err::<McpMessage>(r#"{"content":"hi"}"#)
            .starts_with("McpMessage.role: required field is missing")
    );
}

#[test]
fn message_rejects_wrong_field_types() {
    let cases = [
        (
            r#"{"role":null}"#,
            "McpMessage.role: must be a string, got null",
        ),
        (
            r#"{"role":"u","content":{}}"#,
            "McpMessage.content: must be a string or null, got object",
        ),
        (
            r#"{"role":"u","tool_calls":{}}"#,
            "McpMessage.tool_calls: must be an array or null, got object",
        ),
        (
            r#"{"role":"u","tool_results":"ok"}"#,
            "McpMessage.tool_results: must be an array or null, got string",
        ),
        (
            r#"{"role":"u","metadata":[]}"#,
            "McpMessage.metadata: must be a JSON object or null, got array",
        ),
    ];
    for (text, expected) in cases {
        let err = parse_err::<McpMessage>(text);
        assert!(err.starts_with(expected), "{text}: {err}");
    }
}

#[test]
fn message_nested_rejections_name_the_path() {
    let cases = [
        (
            r#"{"role":"tool","tool_results":[{"status":"success"},{"status":"ok"},{"status":"failure","error":null}]}"#,
            r#"McpMessage.tool_results[2].error: required when status indicates failure (status "failure")"#,
        ),
        (
            r#"{"role":"tool","tool_results":[{"status":"failure","error":{"error_type":"E","error_message":"m","error_details":1}}]}"#,
            "McpMessage.tool_results[0].error.error_details: must be a JSON object, a string or null, got number",
        ),
        (
            r#"{"role":"assistant","tool_calls":[{"tool_name":"a","arguments":{}},{"tool_name":"b","arguments":[]}]}"#,
            "McpMessage.tool_calls[1].arguments: must be a JSON object, got array",
        ),
        (
            r#"{"role":"assistant","tool_calls":[3]}"#,
            "McpMessage.tool_calls[0]: must be a JSON object, got number",
        ),
    ];
    for (text, expected) in cases {
        let err = parse_err::<McpMessage>(text);
        assert!(err.starts_with(expected), "{text}: {err}");
    }
}

#[test]
fn message_round_trips_with_nested_values_and_extras() {
    let message = McpMessage {
        role: "assistant".into(),
        content: Some("calling".into()),
        tool_calls: Some(vec![McpToolCall::new("t", obj(json!({"a": [1, 2]})))]),
        tool_results: Some(vec![
            McpToolResult::success_value(json!(5)),
            McpToolResult::failure(McpErrorDetail::new("E", "m").with_details("d")),
        ]),
        metadata: Some(obj(json!({"turn": 3}))),
        extra: obj(json!({"id": "msg-1"})),
    };
    let text = serde_json::to_string(&message).unwrap();
    assert!(
        text.ends_with(r#""metadata":{"turn":3},"id":"msg-1"}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<McpMessage>(&text).unwrap(), message);
    let value = serde_json::to_value(&message).unwrap();
    assert_eq!(McpMessage::try_from(value).unwrap(), message);
}

#[test]
fn message_serialisation_refuses_extras_shadowing_declared_fields() {
    let mut message = McpMessage::new("user");
    message.extra.insert("content".into(), json!("hidden"));
    let err = serde_json::to_string(&message).unwrap_err().to_string();
    assert!(
        err.contains(r#"McpMessage.extra: "content" is a declared field name"#),
        "{err}"
    );
}
