//! A server for process-level tests: tools that sleep, fail, panic, report progress, log, ask
//! the client and produce large results, served over stdio.
//!
//! ```text
//! cargo run --example testbed -- [--timeout-ms N] [--page-size N] [--grace-ms N]
//!     [--max-message-size BYTES] [--max-concurrent N] [--rate-limit PER_SECOND:BURST]
//! ```
//!
//! Tools: `echo(text)`, `add(a, b)`, `sleep(ms)` (honours cancellation), `block(ms)` (a
//! synchronous tool that blocks its thread, declared `blocking`), `progress(steps)`,
//! `log(level, msg)`, `fail()`, `panic()`, `big(n)`, `ask()` (elicitation) and
//! `register(name)` (adds a tool while serving). Without `--rate-limit` calls are not
//! throttled. Diagnostics go to stderr; stdout carries only MCP messages.

use std::process::ExitCode;
use std::sync::{Arc, Weak};
use std::time::Duration;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::{
    ContentBlock, LoggingLevel, McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry,
    RateLimit, ToolContext,
};
use serde_json::{Map, Value, json};

type Args = Map<String, Value>;

fn usage(problem: &str) -> ExitCode {
    eprintln!("testbed: {problem}");
    eprintln!(
        "usage: testbed [--timeout-ms N] [--page-size N] [--grace-ms N] [--max-message-size BYTES] [--max-concurrent N] [--rate-limit PER_SECOND:BURST]"
    );
    ExitCode::from(2)
}

fn parse_config(mut args: impl Iterator<Item = String>) -> Result<McpServerConfig, String> {
    let mut config = McpServerConfig::new("testbed", codomyrmex_mcp::VERSION)
        .with_instructions("A test server. Its tools misbehave on request.")
        .with_rate_limit(None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: {value:?} is not a whole number"))
        };
        match flag.as_str() {
            "--timeout-ms" => config.tool_timeout = Duration::from_millis(number()?),
            "--grace-ms" => config.shutdown_grace = Duration::from_millis(number()?),
            "--page-size" => {
                config =
                    config.with_page_size(usize::try_from(number()?).map_err(|e| e.to_string())?)
            }
            "--max-message-size" => {
                config.max_message_size = usize::try_from(number()?).map_err(|e| e.to_string())?;
            }
            "--max-concurrent" => {
                config.max_concurrent_requests =
                    usize::try_from(number()?).map_err(|e| e.to_string())?;
            }
            "--rate-limit" => {
                let (rate, burst) = value
                    .split_once(':')
                    .ok_or_else(|| format!("{flag}: expected PER_SECOND:BURST"))?;
                let per_second = rate
                    .parse::<f64>()
                    .map_err(|_| format!("{flag}: {rate:?} is not a number"))?;
                let burst = burst
                    .parse::<u32>()
                    .map_err(|_| format!("{flag}: {burst:?} is not a whole number"))?;
                config = config.with_rate_limit(Some(RateLimit { per_second, burst }));
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(config)
}

fn int(args: &Args, key: &str) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or_default()
}

/// Says on stderr when a `sleep` call stops before its time, however that happens
/// (cancellation, timeout, shutdown): its future is dropped or it sees the token.
struct SleepWitness {
    ms: u64,
    finished: bool,
}

impl Drop for SleepWitness {
    fn drop(&mut self) {
        if !self.finished {
            eprintln!("testbed: sleep({}) stopped early", self.ms);
        }
    }
}

async fn sleep(args: Args, cx: ToolContext) -> Result<Value, McpErrorDetail> {
    let ms = int(&args, "ms");
    let mut witness = SleepWitness {
        ms,
        finished: false,
    };
    // Tell a client that asked for progress that the call is running.
    cx.progress(0.0, Some(1.0), Some("sleeping"));
    tokio::select! {
        () = cx.cancelled() => {
            eprintln!("testbed: sleep({ms}) saw cancellation");
            Err(McpErrorDetail::new("Cancelled", "sleep was cancelled"))
        }
        () = tokio::time::sleep(Duration::from_millis(ms)) => {
            witness.finished = true;
            Ok(json!({"slept_ms": ms}))
        }
    }
}

async fn progress(args: Args, cx: ToolContext) -> Result<Value, McpErrorDetail> {
    let steps = int(&args, "steps");
    for i in 1..=steps {
        // u64 -> f64 is exact for any step count a test uses.
        #[allow(clippy::cast_precision_loss)]
        let (done, total) = (i as f64, steps as f64);
        cx.progress(done, Some(total), Some(&format!("step {i} of {steps}")));
        tokio::task::yield_now().await;
    }
    Ok(json!({"steps": steps}))
}

fn log(args: Args, cx: ToolContext) -> Result<Value, McpErrorDetail> {
    let level: LoggingLevel = args
        .get("level")
        .cloned()
        .and_then(|l| serde_json::from_value(l).ok())
        .ok_or_else(|| McpErrorDetail::new("BadLevel", "level is not a log level"))?;
    let msg = args.get("msg").cloned().unwrap_or(Value::Null);
    Ok(json!({"queued": cx.log(level, msg)}))
}

async fn ask(_: Args, cx: ToolContext) -> Result<Value, McpErrorDetail> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    cx.elicit("What is your name?", schema)
        .await
        .map(|answer| json!({"answer": answer}))
        .map_err(|e| McpErrorDetail::new("ElicitationFailed", e.to_string()))
}

fn big(args: Args) -> ToolOutput {
    let n = usize::try_from(int(&args, "n")).unwrap_or(0).min(64 << 20);
    ToolOutput::content(vec![ContentBlock::text("x".repeat(n))])
}

fn echo_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

fn echo(args: Args) -> Result<Value, McpErrorDetail> {
    Ok(json!({"text": args.get("text").cloned().unwrap_or(Value::Null)}))
}

fn register_all(
    registry: &Arc<McpToolRegistry>,
) -> Result<(), codomyrmex_mcp::McpRegistrationError> {
    let object = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    registry.register("echo", echo_schema(), echo)?;
    registry.register(
        "add",
        object(
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            json!(["a", "b"]),
        ),
        |args: Args| -> Result<Value, McpErrorDetail> {
            let a = args.get("a").and_then(Value::as_f64).unwrap_or_default();
            let b = args.get("b").and_then(Value::as_f64).unwrap_or_default();
            Ok(json!(a + b))
        },
    )?;
    registry.register(
        "sleep",
        object(
            json!({"ms": {"type": "integer", "minimum": 0}}),
            json!(["ms"]),
        ),
        sleep,
    )?;
    // Blocks its thread for `ms`, or until the file `until` exists if that comes first.
    let block = |args: Args| -> Result<Value, McpErrorDetail> {
        let ms = int(&args, "ms");
        let until = args
            .get("until")
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from);
        let deadline = std::time::Instant::now() + Duration::from_millis(ms);
        let released = loop {
            if until.as_ref().is_some_and(|f| f.exists()) {
                break true;
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                break false;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
        };
        Ok(json!({"blocked_ms": ms, "released": released}))
    };
    registry.register_tool(
        codomyrmex_mcp::ToolRegistration::new(
            codomyrmex_mcp::ToolDefinition::new(
                "block",
                object(
                    json!({
                        "ms": {"type": "integer", "minimum": 0, "maximum": 60000},
                        "until": {"type": "string"},
                    }),
                    json!(["ms"]),
                ),
            ),
            block,
        )
        .with_settings(codomyrmex_mcp::ToolSettings {
            blocking: true,
            ..Default::default()
        }),
    )?;
    registry.register(
        "progress",
        object(
            json!({"steps": {"type": "integer", "minimum": 0, "maximum": 10000}}),
            json!(["steps"]),
        ),
        progress,
    )?;
    registry.register(
        "log",
        object(
            json!({"level": {"type": "string"}, "msg": {}}),
            json!(["level", "msg"]),
        ),
        log,
    )?;
    registry.register(
        "fail",
        json!({"type": "object"}),
        |_: Args| -> Result<Value, McpErrorDetail> {
            Err(McpErrorDetail::new("TestbedFailure", "failed on purpose")
                .with_details(Map::from_iter([("hint".to_owned(), json!("by design"))])))
        },
    )?;
    registry.register(
        "panic",
        json!({"type": "object"}),
        |_: Args| -> Result<Value, McpErrorDetail> {
            panic!("testbed panic: /secret/path/for/the/test")
        },
    )?;
    registry.register(
        "big",
        object(
            json!({"n": {"type": "integer", "minimum": 0}}),
            json!(["n"]),
        ),
        big,
    )?;
    registry.register("ask", json!({"type": "object"}), ask)?;
    let weak: Weak<McpToolRegistry> = Arc::downgrade(registry);
    registry.register(
        "register",
        object(json!({"name": {"type": "string"}}), json!(["name"])),
        move |args: Args| -> Result<Value, McpErrorDetail> {
            let registry = weak
                .upgrade()
                .ok_or_else(|| McpErrorDetail::new("Unavailable", "the registry is gone"))?;
            let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
            registry
                .register(name, echo_schema(), echo)
                .map_err(|e| McpErrorDetail::new("RegistrationError", e.to_string()))?;
            Ok(json!({"registered": name}))
        },
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let config = match parse_config(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(problem) => return usage(&problem),
    };
    let registry = Arc::new(McpToolRegistry::new());
    if let Err(e) = register_all(&registry) {
        eprintln!("testbed: {e}");
        return ExitCode::FAILURE;
    }
    match McpServer::new(config, registry).serve_stdio().await {
        Ok(()) => {
            eprintln!("testbed: serving ended; exiting");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("testbed: {e}");
            ExitCode::FAILURE
        }
    }
}
