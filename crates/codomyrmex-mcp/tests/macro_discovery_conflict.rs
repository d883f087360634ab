//! Two `#[mcp_tool]` functions that claim one name: discovery fails closed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use codomyrmex_mcp::{McpRegistrationError, McpToolRegistry, mcp_tool};

#[mcp_tool(name = "dup")]
fn first(x: i32) -> i32 {
    x
}

#[mcp_tool(name = "dup")]
fn second(x: String) -> String {
    x
}

#[test]
fn discovery_refuses_two_tools_with_one_name() {
    let error = McpToolRegistry::discovered().unwrap_err();
    assert!(
        matches!(&error, McpRegistrationError::Conflict { name, .. } if name == "dup"),
        "{error:?}"
    );
}

#[test]
fn explicit_registration_keeps_the_first() {
    let registry = McpToolRegistry::new();
    registry.register_fn(first).unwrap();
    let error = registry.register_fn(second).unwrap_err();
    assert!(
        matches!(error, McpRegistrationError::Conflict { .. }),
        "{error:?}"
    );
    assert_eq!(
        registry.get("dup").unwrap().input_schema["properties"]["x"]["type"],
        "integer"
    );
    assert_eq!((first(1), second("a".into())), (1, "a".to_owned()));
}
