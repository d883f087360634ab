//! `McpToolRegistry::execute` under the one execution policy: admitted by the policy module's
//! gate as a session's calls are, and run by the core driver, so that a direct call and a
//! `tools/call` fail alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::context::MessageSink;
use crate::engine::{Engine, TestRuntime};
use crate::test_runtime::{advance, idle, run, spawn};
use crate::wire::OutgoingMessage;
use crate::wire::jsonrpc::decode;

fn call(name: &str) -> McpToolCall {
    McpToolCall::new(name, JsonObject::new())
}

/// Past the default bound (`max_concurrent_requests` running, `max_queued_requests` waiting)
/// a direct call is refused at once with `OVERLOADED`, as a session's call is; at most
/// `max_concurrent_requests` run at once, and the waiting ones run when a permit comes back.
/// No rate limit applies (the default one would refuse past 100 at once).
#[test]
fn execute_is_admitted_by_the_policy_up_to_the_configured_bound() {
    run(async {
        let defaults = crate::config::McpServerConfig::default();
        let (running, waiting) = (
            defaults.max_concurrent_requests,
            defaults.max_queued_requests,
        );
        let r = Arc::new(McpToolRegistry::new());
        let now = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (n, m) = (now.clone(), most.clone());
        r.register("slow", json!({"type":"object"}), move |_: JsonObject| {
            let (n, m) = (n.clone(), m.clone());
            async move {
                let at_once = n.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(at_once, Ordering::SeqCst);
                crate::test_runtime::sleep(Duration::from_secs(1)).await;
                n.fetch_sub(1, Ordering::SeqCst);
                McpToolResult::success(None)
            }
        })
        .unwrap();
        let calls: Vec<_> = (0..running + waiting)
            .map(|_| {
                let r = r.clone();
                spawn(async move { r.execute_on(&TestRuntime, &call("slow")).await })
            })
            .collect();
        // The test pool polls a bounded number of tasks per round: let every round run.
        for _ in 0..64 {
            idle().await;
        }
        assert_eq!(
            now.load(Ordering::SeqCst),
            running,
            "as many run as the gate allows"
        );
        assert_eq!(most.load(Ordering::SeqCst), running);
        let refused = r.execute_on(&TestRuntime, &call("slow")).await;
        let e = refused.error().expect("refused past the bound");
        assert_eq!(e.error_type, "OVERLOADED");
        assert_eq!(e.error_message, tool_overloaded("slow").error_message);
        advance(Duration::from_secs(3)).await;
        let mut ok = 0;
        for c in calls {
            assert!(c.is_finished());
            ok += usize::from(!c.await.is_failure());
        }
        assert_eq!(ok, running + waiting, "every admitted call ran");
        assert_eq!(most.load(Ordering::SeqCst), running, "never more at once");
        // The slots came back: a call is admitted again.
        let later = spawn({
            let r = r.clone();
            async move { r.execute_on(&TestRuntime, &call("slow")).await }
        });
        advance(Duration::from_secs(2)).await;
        assert!(later.is_finished());
    });
}

/// Drops what the engine sends on its own (these tests read only answers).
struct Nowhere;

impl MessageSink for Nowhere {
    fn send(&self, _: OutgoingMessage) -> bool {
        true
    }
}

/// What a `tools/call` of `name` answers, through an engine serving `registry` on the shipped
/// driver (the tests' runtime).
async fn tools_call(registry: Arc<McpToolRegistry>, name: &str) -> Value {
    let engine = Engine::new(crate::config::McpServerConfig::default(), registry);
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(Nowhere);
    let send = |msg: Value| {
        engine
            .handle_decoded(&session, decode(msg.to_string().as_bytes()), &sink)
            .into_message()
    };
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"policy-tests","version":"0"}}}),
    )
    .await
    .expect("initialised");
    assert!(
        send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await
            .is_none()
    );
    let answer = send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name": name, "arguments": {}}}))
    .await
    .expect("answered");
    let answer: Value = serde_json::from_slice(&answer.to_bytes()).unwrap();
    answer["result"].clone()
}

/// A handler that panics gives the same failure through `execute` as through `tools/call`:
/// one unwind guard (the driver's), one wording.
#[test]
fn a_panic_fails_alike_through_execute_and_tools_call() {
    run(async {
        let r = Arc::new(McpToolRegistry::new());
        r.register(
            "boom",
            json!({"type":"object"}),
            |_: JsonObject| -> Result<Value, McpErrorDetail> { panic!("secret") },
        )
        .unwrap();
        let direct = r.execute_on(&TestRuntime, &call("boom")).await;
        let direct = direct.error().expect("a failure");
        let served = tools_call(r.clone(), "boom").await;
        assert_eq!(served["isError"], true, "{served}");
        let served = &served["structuredContent"];
        assert_eq!(served["error_type"], json!(direct.error_type));
        assert_eq!(served["error_message"], json!(direct.error_message));
        assert_eq!(direct.error_type, "InternalError");
        assert!(!direct.error_message.contains("secret"));
    });
}
