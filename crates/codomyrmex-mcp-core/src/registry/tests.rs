//! Tests of the tool registry: registration, listing, validation and invocation.

use super::*;
use crate::test_runtime::run;

fn schema() -> Value {
    json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]})
}

fn add(args: JsonObject) -> Result<Value, McpErrorDetail> {
    let a = args.get("a").and_then(Value::as_i64).unwrap_or(0);
    let b = args.get("b").and_then(Value::as_i64).unwrap_or(0);
    Ok(json!(a + b))
}

fn call(name: &str, args: Value) -> McpToolCall {
    let Value::Object(m) = args else { panic!() };
    McpToolCall::new(name, m)
}

#[test]
fn names_follow_the_mcp_rule() {
    for ok in [
        "a",
        "file_utility.read_file_content",
        "A-b_c.9",
        &"x".repeat(128),
    ] {
        assert!(validate_tool_name(ok).is_ok(), "{ok}");
    }
    for bad in ["", "has space", "slash/x", "ü", &"x".repeat(129), "a,b"] {
        assert!(validate_tool_name(bad).is_err(), "{bad}");
    }
    let r = McpToolRegistry::new();
    assert!(matches!(
        r.register("bad name", schema(), add),
        Err(McpRegistrationError::InvalidName { .. })
    ));
    assert!(r.is_empty());
}

#[test]
fn schemas_must_be_valid_object_schemas() {
    let r = McpToolRegistry::new();
    for bad in [
        json!([]),
        json!({"type":"string"}),
        json!({"properties":{}}),
        json!({"type":"object","properties":{"a":{"type":"nope"}}}),
        json!({"type":"object","minProperties":-1}),
    ] {
        let e = r.register("t", bad.clone(), add).unwrap_err();
        assert!(
            matches!(
                e,
                McpRegistrationError::InvalidSchema { which: "input", .. }
            ),
            "{bad}: {e}"
        );
    }
    assert!(r.is_empty());
    let e = r
        .register(
            "t",
            json!({"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}),
            add,
        )
        .unwrap_err();
    assert!(
        matches!(e, McpRegistrationError::InvalidSchema { .. }),
        "{e}"
    );
}

#[test]
fn listing_is_sorted_and_idempotent_registration_changes_nothing() {
    let r = McpToolRegistry::new();
    let rx = r.subscribe();
    for n in ["zeta", "alpha", "mid.tool"] {
        r.register(n, schema(), add).unwrap();
    }
    assert_eq!(r.list_tools(), ["alpha", "mid.tool", "zeta"]);
    let gen_before = rx.borrow();
    // Same schema with keys in another order.
    let reordered = json!({"required":["a","b"],"properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"type":"object"});
    r.register("alpha", reordered, add).unwrap();
    assert_eq!(rx.borrow(), gen_before);
    assert_eq!(r.len(), 3);
}

#[test]
fn conflicting_registration_fails_closed() {
    let r = McpToolRegistry::new();
    r.register("t", schema(), add).unwrap();
    let other = json!({"type":"object","properties":{"a":{"type":"string"}}});
    let e = r.register("t", other, add).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("\"t\""), "{text}");
    assert!(text.contains("/inputSchema"), "{text}");
    assert_eq!(r.get("t").unwrap().input_schema, schema());
    let _: &dyn std::error::Error = &e;
}

#[test]
fn definitions_serialise_as_mcp_tools() {
    let r = McpToolRegistry::new();
    r.register_tool(ToolRegistration::new(
        ToolDefinition::new("t", schema())
            .with_description("adds")
            .with_annotations(ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            })
            .with_meta("category", json!("math")),
        add,
    ))
    .unwrap();
    let v = serde_json::to_value(r.get("t").unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"name":"t","description":"adds","inputSchema":schema(),"annotations":{"readOnlyHint":true},"_meta":{"category":"math"}})
    );
}

#[test]
fn unregister_reports_presence() {
    let r = McpToolRegistry::new();
    r.register("t", schema(), add).unwrap();
    assert!(r.unregister("t"));
    assert!(!r.unregister("t"));
    assert!(r.get("t").is_none());
}

#[test]
fn execute_success_failure_and_wrapping() {
    run(async {
        let r = McpToolRegistry::new();
        r.register("add", schema(), add).unwrap();
        r.register(
            "obj",
            json!({"type":"object"}),
            |_: JsonObject| -> Result<Value, McpErrorDetail> { Ok(json!({"k": 1})) },
        )
        .unwrap();
        r.register(
            "err",
            json!({"type":"object"}),
            |_: JsonObject| -> Result<Value, McpErrorDetail> {
                Err(McpErrorDetail::new("Nope", "it failed"))
            },
        )
        .unwrap();
        r.register("direct", json!({"type":"object"}), |_: JsonObject| {
            McpToolResult::no_change_needed("already fine")
        })
        .unwrap();
        r.register("async", json!({"type":"object"}), |_: JsonObject| async {
            Ok::<_, McpErrorDetail>(json!("later"))
        })
        .unwrap();
        r.register(
            "ctx",
            json!({"type":"object"}),
            |_: JsonObject, cx: ToolContext| async move {
                Ok::<_, McpErrorDetail>(json!(cx.tool_name()))
            },
        )
        .unwrap();

        let ok = r.execute(&call("add", json!({"a": 2, "b": 3}))).await;
        assert_eq!(ok.status(), "success");
        assert_eq!(ok.data().unwrap().get("result"), Some(&json!(5)));

        let obj = r.execute(&call("obj", json!({}))).await;
        assert_eq!(obj.data().unwrap().get("k"), Some(&json!(1)));

        let err = r.execute(&call("err", json!({}))).await;
        assert!(err.is_failure());
        assert_eq!(err.error().unwrap().error_type, "Nope");

        let direct = r.execute(&call("direct", json!({}))).await;
        assert_eq!(direct.status(), "no_change_needed");

        let later = r.execute(&call("async", json!({}))).await;
        assert_eq!(later.data().unwrap().get("result"), Some(&json!("later")));

        let named = r.execute(&call("ctx", json!({}))).await;
        assert_eq!(named.data().unwrap().get("result"), Some(&json!("ctx")));

        let missing = r.execute(&call("nope", json!({}))).await;
        assert_eq!(missing.error().unwrap().error_type, "ToolNotFound");
    });
}

#[test]
fn invalid_arguments_list_every_violation() {
    run(async {
        let r = McpToolRegistry::new();
        r.register("add", schema(), add).unwrap();
        let res = r.execute(&call("add", json!({"a": "x"}))).await;
        let e = res.error().unwrap();
        assert_eq!(e.error_type, "ValidationError");
        let details = serde_json::to_value(e.error_details.as_ref().unwrap()).unwrap();
        let v = details["violations"].as_array().unwrap();
        assert_eq!(v.len(), 2, "{details}");
        let rules: Vec<&str> = v.iter().map(|x| x["rule"].as_str().unwrap()).collect();
        assert!(
            rules.contains(&"type") && rules.contains(&"required"),
            "{rules:?}"
        );
        assert!(v.iter().any(|x| x["pointer"] == "/a"));
    });
}

#[test]
fn panics_become_internal_errors_and_the_registry_survives() {
    run(async {
        let r = McpToolRegistry::new();
        r.register(
            "boom",
            json!({"type":"object"}),
            |_: JsonObject| -> Result<Value, McpErrorDetail> { panic!("secret path /etc/shadow") },
        )
        .unwrap();
        r.register("add", schema(), add).unwrap();
        let res = r.execute(&call("boom", json!({}))).await;
        let e = res.error().unwrap();
        assert_eq!(e.error_type, "InternalError");
        assert!(!e.error_message.contains("shadow"));
        let ok = r.execute(&call("add", json!({"a": 1, "b": 1}))).await;
        assert_eq!(ok.status(), "success");
    });
}

#[test]
fn output_schema_is_enforced() {
    run(async {
        let r = McpToolRegistry::new();
        r.register_tool(ToolRegistration::new(
        ToolDefinition::new("out", json!({"type":"object"}))
            .with_output_schema(json!({"type":"object","properties":{"result":{"type":"string"}},"required":["result"]})),
        |_: JsonObject| -> Result<Value, McpErrorDetail> { Ok(json!(5)) },
    ))
    .unwrap();
        let res = r.execute(&call("out", json!({}))).await;
        assert_eq!(res.error().unwrap().error_type, "OutputValidationError");
    });
}

/// `execute` runs the call through the driver: the tool's deadline fires on the runtime's
/// (here, virtual) clock and the answer is `TIMEOUT`.
#[test]
fn execute_ends_a_call_at_its_deadline_on_the_drivers_clock() {
    run(async {
        let r = McpToolRegistry::new();
        let hang = |_: JsonObject| async { std::future::pending::<ToolOutput>().await };
        r.register_tool(
            ToolRegistration::new(ToolDefinition::new("hang", json!({"type":"object"})), hang)
                .with_settings(ToolSettings {
                    timeout: Some(Duration::from_secs(5)),
                    ..ToolSettings::default()
                }),
        )
        .unwrap();
        let rt = &crate::engine::TestRuntime;
        let result = crate::test_runtime::advancing(
            Duration::from_secs(60),
            r.execute_on(rt, &call("hang", json!({}))),
        )
        .await
        .expect("ended at the deadline");
        assert_eq!(result.error().unwrap().error_type, "TIMEOUT");
        assert_eq!(crate::test_runtime::elapsed(), Duration::from_secs(5));
    });
}

/// A panic in `execute`'s handler is caught by the driver (the one unwind guard) and worded
/// as every tool panic is.
#[test]
fn execute_catches_a_panic_in_the_driver() {
    run(async {
        let r = McpToolRegistry::new();
        r.register(
            "boom",
            json!({"type":"object"}),
            |_: JsonObject| -> Result<Value, McpErrorDetail> { panic!("boom") },
        )
        .unwrap();
        let rt = &crate::engine::TestRuntime;
        let res = r.execute_on(rt, &call("boom", json!({}))).await;
        let e = res.error().unwrap();
        assert_eq!(e.error_type, "InternalError");
        assert_eq!(e.error_message, "Tool boom failed with an internal error");
    });
}

/// `rename` moves a tool (handler and schema) to a new name, and refuses a taken or invalid
/// one without changing anything.
#[test]
fn rename_moves_a_tool_and_refuses_taken_names() {
    run(async {
        let r = McpToolRegistry::new();
        r.register("math.add", schema(), add).unwrap();
        r.register("other", schema(), add).unwrap();
        let rx = r.subscribe();
        assert!(r.rename("math.add", "math__add").unwrap());
        assert!(rx.has_changed());
        assert_eq!(r.list_tools(), vec!["math__add", "other"]);
        assert_eq!(r.get("math__add").unwrap().name, "math__add");
        let rt = &crate::engine::TestRuntime;
        let res = r
            .execute_on(rt, &call("math__add", json!({"a": 2, "b": 3})))
            .await;
        assert!(res.error().is_none(), "{res:?}");
        // The schema moved too: invalid arguments are still refused.
        let res = r.execute_on(rt, &call("math__add", json!({"a": 2}))).await;
        assert!(res.error().is_some());
        assert!(matches!(
            r.rename("math__add", "other"),
            Err(McpRegistrationError::Conflict { .. })
        ));
        assert!(matches!(
            r.rename("math__add", "bad name"),
            Err(McpRegistrationError::InvalidName { .. })
        ));
        assert!(!r.rename("missing", "fine").unwrap());
        assert_eq!(r.list_tools(), vec!["math__add", "other"]);
    });
}
