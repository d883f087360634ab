//! The engine path in memory, with no process or pipe: decode a `tools/call` line, hand it to
//! `Engine::handle_decoded`, await the result, and encode the response; and decoding and
//! encoding on their own. Payloads of 16 B and 64 KiB, as in the stdio load cases.
//!
//! ```text
//! cargo bench -p codomyrmex-mcp-bench --bench engine
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::engine::{Engine, Session};
use codomyrmex_mcp::runtime::Drive as _;
use codomyrmex_mcp::wire::Decoded;
use codomyrmex_mcp::wire::decode;
use codomyrmex_mcp::{ContentBlock, McpServer, McpServerConfig, McpToolRegistry};
use codomyrmex_mcp::{MessageSink, NullSink};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;

const SIZES: [(usize, &str); 2] = [(16, "16B"), (64 * 1024, "64KiB")];

/// The benchmark subject's tool, as in `examples/echo.rs`.
fn echo(args: Map<String, Value>) -> ToolOutput {
    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
    ToolOutput::content(vec![ContentBlock::text(text)])
}

struct Fixture {
    runtime: Runtime,
    engine: Engine,
    session: Arc<Session>,
    sink: Arc<dyn MessageSink>,
}

fn fixture() -> Fixture {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let registry = Arc::new(McpToolRegistry::new());
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo back"}},
        "required": ["text"],
    });
    registry
        .register("echo", schema, echo)
        .unwrap_or_else(|e| panic!("register: {e}"));
    let config = McpServerConfig::new("echo", codomyrmex_mcp::VERSION).with_rate_limit(None);
    let engine = McpServer::new(config, registry).engine().clone();
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
    let reply = runtime.block_on(
        engine
            .handle_decoded(&session, decode(init), &sink)
            .into_message(),
    );
    assert!(reply.is_some_and(|m| m.is_response()));
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let nothing = runtime.block_on(
        engine
            .handle_decoded(&session, decode(initialized), &sink)
            .into_message(),
    );
    assert!(nothing.is_none());
    Fixture {
        runtime,
        engine,
        session,
        sink,
    }
}

fn call_line(size: usize) -> Vec<u8> {
    let text = "x".repeat(size);
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
    )
    .into_bytes()
}

fn engine_path(c: &mut Criterion) {
    let f = fixture();
    let mut group = c.benchmark_group("engine_call");
    for (size, label) in SIZES {
        let line = call_line(size);
        let mut out = Vec::with_capacity(size + 256);
        // Sanity: the response echoes the payload.
        let reply = f.runtime.block_on(
            f.engine
                .handle_decoded(&f.session, decode(&line), &f.sink)
                .into_message(),
        );
        let reply = reply.unwrap_or_else(|| panic!("no reply"));
        reply.write_to(&mut out);
        let v: Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("reply: {e}"));
        assert_eq!(
            v["result"]["content"][0]["text"].as_str().map(str::len),
            Some(size)
        );

        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("decode_handle_encode", label), |b| {
            b.iter(|| {
                out.clear();
                let handled =
                    f.engine
                        .handle_decoded(&f.session, decode(black_box(&line)), &f.sink);
                if let Some(m) = f.runtime.block_on(handled.into_message()) {
                    m.write_to(&mut out);
                }
                black_box(out.len())
            });
        });
        group.bench_function(BenchmarkId::new("handle_only", label), |b| {
            b.iter_batched(
                || decode(&line),
                |decoded: Decoded| {
                    let handled = f.engine.handle_decoded(&f.session, decoded, &f.sink);
                    f.runtime.block_on(handled.into_message())
                },
                criterion::BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn codec(c: &mut Criterion) {
    let f = fixture();
    let mut group = c.benchmark_group("codec");
    for (size, label) in SIZES {
        let line = call_line(size);
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_function(BenchmarkId::new("decode", label), |b| {
            b.iter(|| decode(black_box(&line)));
        });
        let reply = f
            .runtime
            .block_on(
                f.engine
                    .handle_decoded(&f.session, decode(&line), &f.sink)
                    .into_message(),
            )
            .unwrap_or_else(|| panic!("no reply"));
        let mut out = Vec::with_capacity(size + 256);
        group.bench_function(BenchmarkId::new("encode", label), |b| {
            b.iter(|| {
                out.clear();
                black_box(&reply).write_to(&mut out);
                black_box(out.len())
            });
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = engine_path, codec
}
criterion_main!(benches);
