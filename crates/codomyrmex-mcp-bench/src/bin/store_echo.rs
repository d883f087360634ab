//! The store benchmark's subject: the `echo` example's tool over Streamable HTTP, with its
//! 2025-11-25 sessions in memory or in Redis (`codomyrmex-mcp-redis`: session records, SSE
//! history and the message bus), as the binary's `serve --store` keeps them.
//!
//! ```text
//! store_echo --http ADDR [--store redis://HOST:PORT/DB] [--allowed-host HOST:PORT]
//! ```
//!
//! `scripts/bench-store.sh` runs it: in memory against Redis, and three instances behind
//! nginx against one. No rate limits (every load generator shares one client address). Runs
//! until it is killed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::{ContentBlock, McpServer, McpServerConfig, McpToolRegistry};
use codomyrmex_mcp_redis::{
    EventBounds, RedisBus, RedisConnection, RedisEventStore, RedisSessionStore,
};
use serde_json::{Map, Value, json};

const USAGE: &str =
    "usage: store_echo --http ADDR [--store redis://HOST:PORT/DB] [--allowed-host HOST:PORT]";

fn echo(mut args: Map<String, Value>) -> ToolOutput {
    let text = match args.remove("text") {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    ToolOutput::content(vec![ContentBlock::text(text)])
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut bind: Option<SocketAddr> = None;
    let mut store: Option<String> = None;
    let mut hosts = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        match (flag.as_str(), value) {
            ("--http", Some(v)) => match v.parse() {
                Ok(a) => bind = Some(a),
                Err(e) => {
                    eprintln!("store_echo: invalid address {v:?}: {e}");
                    return ExitCode::from(2);
                }
            },
            ("--store", Some(v)) => store = Some(v),
            ("--allowed-host", Some(v)) => hosts.push(v),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(bind) = bind else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let registry = Arc::new(McpToolRegistry::new());
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    });
    if let Err(e) = registry.register("echo", schema, echo) {
        eprintln!("store_echo: {e}");
        return ExitCode::FAILURE;
    }
    let config = McpServerConfig::new("echo", codomyrmex_mcp::VERSION).with_rate_limit(None);
    let server = McpServer::new(config, registry);
    let mut http = HttpConfig {
        bind,
        rate_limit: None,
        allowed_hosts: hosts,
        ..Default::default()
    };
    if let Some(url) = store {
        // What `serve --store` shares: session records, SSE history and the message bus.
        let conn = match RedisConnection::connect(&url).await {
            Ok(conn) => conn,
            Err(e) => {
                eprintln!("store_echo: {e}");
                return ExitCode::FAILURE;
            }
        };
        let bus = match RedisBus::join(conn.clone()).await {
            Ok(bus) => bus,
            Err(e) => {
                eprintln!("store_echo: {e}");
                return ExitCode::FAILURE;
            }
        };
        http = http
            .with_session_store(Arc::new(RedisSessionStore::new(conn.clone())))
            .with_event_store(Arc::new(RedisEventStore::new(conn, EventBounds::default())))
            .with_message_bus(Arc::new(bus));
    }
    let http = HttpServer::new(server.engine().clone(), http);
    let listener = match http.bind().await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("store_echo: {e}");
            return ExitCode::FAILURE;
        }
    };
    match http.serve(listener, std::future::pending()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
