//! What a `#[mcp_tool]`'s `Err` becomes: the `Into<McpErrorDetail>` conversions.
//!
//! The `anyhow` tests run with `--features anyhow` (or `--all-features`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;

use codomyrmex_mcp::{McpErrorDetail, McpToolCall, McpToolRegistry, mcp_tool};
use serde_json::{Value, json};

fn detail(error: impl Into<McpErrorDetail>) -> McpErrorDetail {
    error.into()
}

fn details_json(detail: &McpErrorDetail) -> Value {
    serde_json::to_value(detail).unwrap()["error_details"].clone()
}

#[test]
fn io_errors_are_named_after_the_python_exceptions() {
    for (kind, name) in [
        (io::ErrorKind::NotFound, "FileNotFoundError"),
        (io::ErrorKind::PermissionDenied, "PermissionError"),
        (io::ErrorKind::AlreadyExists, "FileExistsError"),
        (io::ErrorKind::TimedOut, "TimeoutError"),
        (io::ErrorKind::Interrupted, "InterruptedError"),
        (io::ErrorKind::WouldBlock, "BlockingIOError"),
        (io::ErrorKind::BrokenPipe, "BrokenPipeError"),
        (io::ErrorKind::ConnectionRefused, "ConnectionRefusedError"),
        (io::ErrorKind::ConnectionReset, "ConnectionResetError"),
        (io::ErrorKind::ConnectionAborted, "ConnectionAbortedError"),
        (io::ErrorKind::IsADirectory, "IsADirectoryError"),
        (io::ErrorKind::NotADirectory, "NotADirectoryError"),
        (io::ErrorKind::InvalidData, "OSError"),
        (io::ErrorKind::Other, "OSError"),
    ] {
        let d = detail(io::Error::new(kind, "boom"));
        assert_eq!(d.error_type, name, "{kind:?}");
        assert_eq!(d.error_message, "boom");
        assert_eq!(d.error_details, None);
    }
}

#[test]
fn os_errors_keep_their_number() {
    let error = io::Error::from_raw_os_error(2);
    let message = error.to_string();
    let d = detail(error);
    assert_eq!(d.error_type, "FileNotFoundError");
    assert_eq!(d.error_message, message);
    assert_eq!(details_json(&d), json!({"errno": 2}));
}

#[test]
fn strings_become_tool_errors() {
    assert_eq!(
        detail("no such user"),
        McpErrorDetail::new("ToolError", "no such user")
    );
    assert_eq!(
        detail(String::from("no such group")),
        McpErrorDetail::new("ToolError", "no such group")
    );
}

#[test]
fn boxed_errors_keep_what_they_hold() {
    let boxed: Box<dyn std::error::Error + Send + Sync> =
        Box::new(McpErrorDetail::new("QuotaError", "over quota"));
    assert_eq!(
        detail(boxed),
        McpErrorDetail::new("QuotaError", "over quota")
    );
    let boxed: Box<dyn std::error::Error + Send + Sync> =
        Box::new(io::Error::new(io::ErrorKind::PermissionDenied, "denied"));
    assert_eq!(detail(boxed).error_type, "PermissionError");
    let boxed: Box<dyn std::error::Error> = "x".parse::<i32>().unwrap_err().into();
    assert_eq!(
        detail(boxed),
        McpErrorDetail::new("ToolError", "invalid digit found in string")
    );
    let boxed: Box<dyn std::error::Error> = Box::new(McpErrorDetail::new("A", "b"));
    assert_eq!(detail(boxed), McpErrorDetail::new("A", "b"));
}

#[mcp_tool]
fn parse_number(text: String) -> Result<i64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(text.trim().parse()?)
}

#[mcp_tool]
fn never_fails(n: i64) -> Result<i64, std::convert::Infallible> {
    Ok(n)
}

async fn run(name: &str, arguments: Value) -> codomyrmex_mcp::McpToolResult {
    let registry = McpToolRegistry::discovered().unwrap();
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    registry.execute(&McpToolCall::new(name, arguments)).await
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_error_becomes_a_failure_result() {
    let parsed = run("parse_number", json!({"text": " 42 "})).await;
    assert_eq!(parsed.data().unwrap()["result"], 42);
    let failed = run("parse_number", json!({"text": "forty-two"})).await;
    assert!(failed.is_failure());
    assert_eq!(
        failed.error(),
        Some(&McpErrorDetail::new(
            "ToolError",
            "invalid digit found in string"
        ))
    );
    let fine = run("never_fails", json!({"n": 7})).await;
    assert_eq!(fine.data().unwrap()["result"], 7);
}

#[cfg(feature = "anyhow")]
mod with_anyhow {
    use super::*;
    use anyhow::Context;

    #[test]
    fn anyhow_errors_keep_their_context_chain() {
        let error = anyhow::anyhow!("disk full").context("saving the report");
        assert_eq!(
            detail(error),
            McpErrorDetail::new("ToolError", "saving the report: disk full")
        );
    }

    #[test]
    fn anyhow_errors_over_io_errors_keep_the_io_name() {
        let error = Err::<(), _>(io::Error::new(io::ErrorKind::NotFound, "gone"))
            .context("reading settings.toml")
            .unwrap_err();
        assert_eq!(
            detail(error),
            McpErrorDetail::new("FileNotFoundError", "reading settings.toml: gone")
        );
        let error = anyhow::Error::new(McpErrorDetail::new("QuotaError", "over quota"));
        assert_eq!(
            detail(error),
            McpErrorDetail::new("QuotaError", "over quota")
        );
    }

    #[mcp_tool]
    fn checked_half(n: i64) -> anyhow::Result<i64> {
        anyhow::ensure!(n % 2 == 0, "{n} is odd");
        Ok(n / 2)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn tools_may_return_anyhow_results() {
        let half = run("checked_half", json!({"n": 8})).await;
        assert_eq!(half.data().unwrap()["result"], 4);
        let odd = run("checked_half", json!({"n": 7})).await;
        assert_eq!(
            odd.error(),
            Some(&McpErrorDetail::new("ToolError", "7 is odd"))
        );
    }
}
