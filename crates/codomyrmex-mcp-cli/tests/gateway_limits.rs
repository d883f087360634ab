//! An upstream's limits at the gateway (issue #27 item 3): its calls run under the core's
//! execution policy with the limits its `[[upstream]]` table sets. One server (ours, over
//! Streamable HTTP, in this process) is mounted as two upstreams, `a` and `b`; a client calls
//! through the gateway (a child over stdio). The excess over `max_concurrent` waits for a
//! turn (and past `max_queued` is refused), a slow call ends at `timeout_secs` with
//! `UPSTREAM_TIMEOUT`, a call past `rate_limit` is refused, and `b` answers while `a` is
//! saturated.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientHandlers, EraPreference};
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::{ContentBlock, McpServerConfig, McpToolRegistry, ToolContext, ToolOutput};
use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, mpsc};

const GUARD: Duration = Duration::from_secs(60);

/// The upstream's side of the test: each `hold` call says it started, then waits for a
/// release; `running` counts the `hold` calls in flight at the upstream, `most` the most at
/// once.
struct Upstream {
    url: String,
    started: mpsc::UnboundedReceiver<()>,
    release: Arc<Semaphore>,
    most: Arc<AtomicUsize>,
}

fn text(t: &str) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

async fn upstream() -> Upstream {
    let (tx, started) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tools = McpToolRegistry::new();
    let schema = json!({"type": "object", "properties": {}});
    let (r, n, m) = (release.clone(), running.clone(), most.clone());
    tools
        .register(
            "hold",
            schema.clone(),
            move |_: Map<String, Value>, _: ToolContext| {
                let (tx, release, running, most) = (tx.clone(), r.clone(), n.clone(), m.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let _ = tx.send(());
                    release.acquire().await.unwrap().forget();
                    running.fetch_sub(1, Ordering::SeqCst);
                    text("held")
                }
            },
        )
        .unwrap();
    tools
        .register(
            "quick",
            schema,
            |_: Map<String, Value>, _: ToolContext| async move { text("quick") },
        )
        .unwrap();
    let config = McpServerConfig::new("limits-upstream", "1").with_rate_limit(None);
    let engine = Engine::new(config, Arc::new(tools));
    let server = HttpServer::new(
        engine,
        HttpConfig {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            rate_limit: None,
            ..HttpConfig::default()
        },
    );
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
    Upstream {
        url: format!("http://{addr}/mcp"),
        started,
        release,
        most,
    }
}

/// The gateway with upstreams `a` (limited by `a_limits`, TOML lines) and `b` (no limits
/// written) on `url`, both spoken to in `upstream_era`; its handshake done in `era`.
async fn gateway(
    dir: &std::path::Path,
    url: &str,
    a_limits: &str,
    upstream_era: &str,
    era: EraPreference,
) -> Arc<McpClient> {
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"a\"\nurl = \"{url}\"\nera = \"{upstream_era}\"\n{a_limits}\n\n\
             [[upstream]]\nname = \"b\"\nurl = \"{url}\"\nera = \"{upstream_era}\"\n"
        ),
    )
    .unwrap();
    Arc::new(support::gateway_stdio(&config, era, ClientHandlers::new()).await)
}

async fn call(client: &McpClient, tool: &str) -> Value {
    tokio::time::timeout(GUARD, client.call_tool(tool, json!({})))
        .await
        .expect("no hang")
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Closes the gateway (ending the child) once the calls' clones are gone.
async fn close(client: Arc<McpClient>) {
    match Arc::try_unwrap(client) {
        Ok(client) => client.close(Duration::from_secs(5)).await,
        Err(_) => panic!("a call still holds the client"),
    }
}

/// The text of a result's first content block.
fn first_text(r: &Value) -> &str {
    r["content"][0]["text"].as_str().unwrap_or_default()
}

/// `max_concurrent = 1`: a second call waits at the gateway until the first is done (the
/// upstream never runs two), and both are answered; meanwhile upstream `b` answers at once.
async fn the_excess_waits_for_a_turn(upstream_era: &str, era: EraPreference) {
    let mut up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &up.url, "max_concurrent = 1", upstream_era, era).await;
    let first = tokio::spawn({
        let client = client.clone();
        async move { call(&client, "a.hold").await }
    });
    tokio::time::timeout(GUARD, up.started.recv())
        .await
        .expect("the first call reached the upstream");
    let second = tokio::spawn({
        let client = client.clone();
        async move { call(&client, "a.hold").await }
    });
    // The second waits for its turn at the gateway: it does not reach the upstream.
    assert!(
        tokio::time::timeout(Duration::from_millis(700), up.started.recv())
            .await
            .is_err(),
        "{upstream_era}: a second call reached the upstream while the first held its turn"
    );
    // Another upstream is unaffected by a's saturation.
    let b = call(&client, "b.quick").await;
    assert_eq!(first_text(&b), "quick", "{upstream_era}: {b}");
    // The first ends; the second gets its turn and reaches the upstream.
    up.release.add_permits(1);
    tokio::time::timeout(GUARD, up.started.recv())
        .await
        .expect("the second call reached the upstream once the first ended");
    up.release.add_permits(1);
    for done in [first, second] {
        let r = done.await.unwrap();
        assert_eq!(first_text(&r), "held", "{upstream_era}: {r}");
    }
    assert_eq!(up.most.load(Ordering::SeqCst), 1, "{upstream_era}");
    close(client).await;
}

#[tokio::test]
async fn a_modern_upstreams_excess_calls_wait_for_a_turn() {
    the_excess_waits_for_a_turn("modern", EraPreference::Modern).await;
}

#[tokio::test]
async fn a_legacy_upstreams_excess_calls_wait_for_a_turn() {
    the_excess_waits_for_a_turn("legacy", EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_legacy_upstreams_excess_calls_of_a_modern_client_wait_for_a_turn() {
    // The era bridge's parked path: the call's turn is held across the client's rounds.
    the_excess_waits_for_a_turn("legacy", EraPreference::Modern).await;
}

/// `max_queued = 0`: with the one turn taken, a second call is refused at once, naming the
/// upstream; `b` still answers.
#[tokio::test]
async fn past_max_queued_a_call_is_refused_at_once() {
    let mut up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(
        dir.path(),
        &up.url,
        "max_concurrent = 1\nmax_queued = 0",
        "modern",
        EraPreference::Modern,
    )
    .await;
    let first = tokio::spawn({
        let client = client.clone();
        async move { call(&client, "a.hold").await }
    });
    tokio::time::timeout(GUARD, up.started.recv())
        .await
        .expect("the first call reached the upstream");
    let refused = call(&client, "a.quick").await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        first_text(&refused).starts_with("UPSTREAM_OVERLOADED: upstream a:"),
        "{refused}"
    );
    assert_eq!(first_text(&call(&client, "b.quick").await), "quick");
    up.release.add_permits(1);
    assert_eq!(first_text(&first.await.unwrap()), "held");
    // The turn is back.
    assert_eq!(first_text(&call(&client, "a.quick").await), "quick");
    close(client).await;
}

/// `timeout_secs = 1`: a call the upstream never answers ends with `UPSTREAM_TIMEOUT`,
/// worded as before the policy took it over, and gives its turn back.
async fn a_slow_call_ends_at_its_deadline(upstream_era: &str, era: EraPreference) {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(
        dir.path(),
        &up.url,
        "timeout_secs = 1\nmax_concurrent = 1",
        upstream_era,
        era,
    )
    .await;
    // Never released: the upstream does not answer it.
    let hung = call(&client, "a.hold").await;
    assert_eq!(hung["isError"], true, "{upstream_era}: {hung}");
    assert_eq!(
        first_text(&hung),
        "UPSTREAM_TIMEOUT: upstream a did not answer within 1 s",
        "{upstream_era}: {hung}"
    );
    // The deadline freed the turn, and `b` was never held up.
    assert_eq!(first_text(&call(&client, "a.quick").await), "quick");
    assert_eq!(first_text(&call(&client, "b.quick").await), "quick");
    close(client).await;
}

#[tokio::test]
async fn a_modern_upstreams_slow_call_ends_at_its_deadline() {
    a_slow_call_ends_at_its_deadline("modern", EraPreference::Modern).await;
}

#[tokio::test]
async fn a_legacy_upstreams_slow_call_of_a_modern_client_ends_at_its_deadline() {
    a_slow_call_ends_at_its_deadline("legacy", EraPreference::Modern).await;
}

/// `rate_limit`: past its burst a call is refused with the time to wait, naming the
/// upstream; `b`, which has no limit, is not throttled.
#[tokio::test]
async fn past_its_rate_limit_a_call_is_refused() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(
        dir.path(),
        &up.url,
        "rate_limit = { per_second = 0.01, burst = 2 }",
        "modern",
        EraPreference::Modern,
    )
    .await;
    for _ in 0..2 {
        assert_eq!(first_text(&call(&client, "a.quick").await), "quick");
    }
    let refused = call(&client, "a.quick").await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        first_text(&refused).starts_with("UPSTREAM_RATE_LIMITED: upstream a:")
            && first_text(&refused).contains("retry in"),
        "{refused}"
    );
    for _ in 0..5 {
        assert_eq!(first_text(&call(&client, "b.quick").await), "quick");
    }
    close(client).await;
}
