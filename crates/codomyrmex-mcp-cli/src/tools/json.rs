//! `json.query`: jq filters (jaq) over a JSON file under the root or a given value.
//!
//! jaq has no recursion, memory or time limit of its own, so a filter such as `def f: 1 + f; f`
//! would overflow the stack and abort the process, and `"x" * 1e9` would take gigabytes. The
//! server therefore evaluates filters in a child process (`codomyrmex-mcp
//! __json-query-worker`) that limits itself before reading its request: at most
//! [`WORKER_MEMORY`] bytes of data (`RLIMIT_DATA`) and [`WORKER_CPU_SECS`] seconds of CPU
//! time (`RLIMIT_CPU`). At most [`MAX_WORKERS`] workers run at once; further calls wait for
//! one, under their own timeout. A crash or a runaway filter costs that call only: dropping
//! the call (timeout, cancellation) kills the child, and it dies with the server (see
//! [`ChildGroup`]). Without a worker (unit tests) filters run in-process on a thread with a
//! large stack and none of these limits.
//!
//! Module imports are not available, and neither is `env` (the server's environment may hold
//! secrets).

use std::io::{Read, Write};
use std::process::Stdio;

use codomyrmex_mcp::{WithContent, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::model_text::ModelText;
use super::process::{ChildGroup, capture};
use super::{Cancel, ToolError, Workspace, blocking, kinds};

/// The hidden subcommand that runs one evaluation.
pub const WORKER_ARG: &str = "__json-query-worker";
/// The default number of results.
const DEFAULT_RESULTS: u32 = 100;
/// The most results a call may ask for.
const MAX_RESULTS: u32 = 10_000;
/// The most bytes of results a worker may send back.
const MAX_WORKER_OUTPUT: usize = 64 * 1024 * 1024;
/// The stack of the evaluating thread.
const EVAL_STACK: usize = 256 * 1024 * 1024;
/// The most bytes of data a worker may map (`RLIMIT_DATA`: its heap and every private writable
/// mapping, the evaluator's stack of 256 MiB included).
pub const WORKER_MEMORY: u64 = 1024 * 1024 * 1024;
/// The most seconds of CPU time a worker may use (`RLIMIT_CPU`), a backstop behind the call's
/// timeout.
pub const WORKER_CPU_SECS: u64 = 300;
/// The most workers that run at once, whatever the number of calls.
pub const MAX_WORKERS: usize = 4;
/// The most bytes of a worker's stderr kept, to tell why it stopped.
const MAX_WORKER_STDERR: usize = 4096;

/// The slots of the running workers.
static WORKERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_WORKERS);

/// `json.query`, over a workspace.
pub struct JsonTools {
    ws: Workspace,
}

impl JsonTools {
    /// The tool over `ws`.
    pub fn new(ws: Workspace) -> Self {
        Self { ws }
    }
}

#[mcp_tools]
impl JsonTools {
    #[mcp_tool(
        name = "json.query",
        title = "Query JSON with jq",
        description = "Runs a jq filter (jq syntax, e.g. `.items[] | select(.price > 10) | \
                       .name`) against a JSON file under the root (path) or a JSON value \
                       (input; null when neither is given) and returns every output value.",
        read_only,
        idempotent,
        open_world = false,
        category = "json",
        deny_unknown_arguments
    )]
    async fn query(
        &self,
        /// The jq filter.
        #[arg(min_length = 1)]
        filter: String,
        /// A JSON file to run it on, relative to the root.
        path: Option<String>,
        /// A JSON value to run it on (instead of path).
        input: Option<Value>,
        /// The most results to return (default 100, at most 10000).
        #[arg(minimum = 1, maximum = 10000)]
        max_results: Option<u32>,
    ) -> Result<WithContent<QueryOutput>, ToolError> {
        let ws = &self.ws;
        let max = max_results.unwrap_or(DEFAULT_RESULTS).clamp(1, MAX_RESULTS) as usize;
        let input = match (path, input) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid_argument(
                    "give either path or input, not both",
                ));
            }
            (Some(raw), None) => {
                let w = ws.clone();
                blocking(move |_| read_json_file(&w, &raw)).await?
            }
            (None, Some(value)) => serde_json::to_string(&value)
                .map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?,
            (None, None) => "null".to_owned(),
        };
        let request = WorkerRequest {
            filter,
            input,
            max_results: max,
        };
        match ws.helper() {
            Some(program) => run_worker(program, &request).await,
            None => blocking(move |cancel| evaluate_on_big_stack(request, cancel.clone())).await,
        }
        .map(ModelText::for_model)
    }
}

/// Result of `json.query`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryOutput {
    /// The filter's outputs, in order.
    pub results: Vec<Value>,
    /// Whether more outputs were left out.
    pub truncated: bool,
}

/// What the parent sends a worker.
#[derive(Debug, Serialize, Deserialize)]
struct WorkerRequest {
    filter: String,
    input: String,
    max_results: usize,
}

/// What a worker sends back.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WorkerReply {
    Ok(QueryOutput),
    Err { kind: String, message: String },
}

fn read_json_file(ws: &Workspace, raw: &str) -> Result<String, ToolError> {
    let (path, file, size) = ws.sandbox().open_file(raw)?;
    let shown = ws.sandbox().relative(&path);
    let limit = ws.limits().max_edit_bytes;
    let too_large = |size: String| {
        ToolError::new(
            kinds::TOO_LARGE,
            format!("{shown} is {size} bytes; json.query reads files up to {limit} bytes"),
        )
    };
    if size > limit {
        return Err(too_large(size.to_string()));
    }
    // The bytes read are capped, not the size the file reports (`/proc` files report 0).
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(&e, &shown))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(format!("more than {limit}")));
    }
    String::from_utf8(bytes)
        .map_err(|_| ToolError::new(kinds::INVALID_JSON, format!("{shown} is not UTF-8 text")))
}

async fn run_worker(
    program: &std::path::Path,
    request: &WorkerRequest,
) -> Result<QueryOutput, ToolError> {
    let body =
        serde_json::to_vec(request).map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?;
    // Waits for a slot under the call's own timeout: dropping the call leaves the queue.
    let _slot = WORKERS
        .acquire()
        .await
        .map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?;
    let cannot_start = |e: std::io::Error| {
        ToolError::new(kinds::INTERNAL, format!("cannot start the jq worker: {e}"))
    };
    let mut group = ChildGroup::start(Some(program)).map_err(cannot_start)?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg(WORKER_ARG)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    group.adopt(&mut cmd);
    let mut child = cmd.spawn().map_err(cannot_start)?;
    group.spawned(&child);
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ToolError::new(
            kinds::INTERNAL,
            "the jq worker's pipes are missing",
        ));
    };
    let write = async move {
        // The worker may die before reading everything; its exit status tells.
        let _ = stdin.write_all(&body).await;
        let _ = stdin.shutdown().await;
    };
    let (_, out, err, status) = tokio::join!(
        write,
        capture(stdout, MAX_WORKER_OUTPUT),
        capture(stderr, MAX_WORKER_STDERR),
        child.wait()
    );
    let out = out.map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?;
    let status = status.map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?;
    if out.truncated() {
        return Err(ToolError::new(
            kinds::TOO_LARGE,
            "the filter's results are larger than 64 MiB; lower max_results or select less",
        ));
    }
    match serde_json::from_slice::<WorkerReply>(&out.bytes) {
        Ok(WorkerReply::Ok(output)) if status.success() => Ok(output),
        Ok(WorkerReply::Err { kind, message }) => Err(ToolError::new(
            match kind.as_str() {
                "INVALID_JSON" => kinds::INVALID_JSON,
                "TOO_LARGE" => kinds::TOO_LARGE,
                _ => kinds::JQ_ERROR,
            },
            message,
        )),
        _ => Err(worker_stopped(
            &status,
            &err.map(|e| e.text()).unwrap_or_default(),
        )),
    }
}

/// Why a worker stopped without answering, from its exit status and stderr.
fn worker_stopped(status: &std::process::ExitStatus, stderr: &str) -> ToolError {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(status);
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    // Rust's allocation failure handler prints this line, then aborts.
    if stderr.contains("memory allocation of") {
        return ToolError::new(
            kinds::TOO_LARGE,
            format!(
                "the filter needs more than the jq worker's memory limit of {} MiB",
                WORKER_MEMORY / (1024 * 1024)
            ),
        );
    }
    #[cfg(unix)]
    if signal == Some(rustix::process::Signal::XCPU.as_raw()) {
        return ToolError::new(
            kinds::JQ_ERROR,
            format!("the filter used more than {WORKER_CPU_SECS} s of CPU time"),
        );
    }
    let _ = signal;
    ToolError::new(
        kinds::JQ_ERROR,
        format!(
            "the filter could not be evaluated: the evaluator stopped ({status}), for example because of unbounded recursion"
        ),
    )
}

/// Applies the worker's limits to this process, lowering (never raising) the current ones.
#[cfg(unix)]
fn limit_worker() -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lower = |resource: Resource, soft: u64, hard: u64| {
        let old = getrlimit(resource);
        let cap = |ours: u64, theirs: Option<u64>| Some(theirs.map_or(ours, |t| t.min(ours)));
        let maximum = cap(hard, old.maximum);
        let current = cap(soft, old.current).min(maximum);
        setrlimit(resource, Rlimit { current, maximum })
    };
    lower(Resource::Data, WORKER_MEMORY, WORKER_MEMORY)?;
    // The soft limit sends SIGXCPU, the hard one SIGKILL a second later.
    lower(Resource::Cpu, WORKER_CPU_SECS, WORKER_CPU_SECS + 1)?;
    Ok(())
}

#[cfg(not(unix))]
fn limit_worker() -> std::io::Result<()> {
    Ok(())
}

/// The worker's main: reads one request on stdin, writes one reply on stdout.
pub fn worker_main() -> std::process::ExitCode {
    let mut body = Vec::new();
    let reply = match limit_worker().and_then(|()| std::io::stdin().read_to_end(&mut body)) {
        Err(e) => WorkerReply::Err {
            kind: kinds::INTERNAL.into(),
            message: e.to_string(),
        },
        Ok(_) => match serde_json::from_slice::<WorkerRequest>(&body) {
            Err(e) => WorkerReply::Err {
                kind: kinds::INTERNAL.into(),
                message: e.to_string(),
            },
            Ok(request) => match evaluate_on_big_stack(request, Cancel::default()) {
                Ok(output) => WorkerReply::Ok(output),
                Err(e) => WorkerReply::Err {
                    kind: e.kind.into(),
                    message: e.message,
                },
            },
        },
    };
    let mut stdout = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut stdout, &reply).map_err(std::io::Error::from);
    match written.and_then(|()| stdout.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

fn evaluate_on_big_stack(request: WorkerRequest, cancel: Cancel) -> Result<QueryOutput, ToolError> {
    std::thread::Builder::new()
        .name("jq".into())
        .stack_size(EVAL_STACK)
        .spawn(move || {
            evaluate(
                &request.filter,
                &request.input,
                request.max_results,
                &cancel,
            )
        })
        .map_err(|e| ToolError::new(kinds::INTERNAL, e.to_string()))?
        .join()
        .map_err(|_| ToolError::new(kinds::JQ_ERROR, "the evaluator failed"))?
}

/// Filters left out of jaq's standard library.
const WITHHELD: &[&str] = &["env", "input", "inputs"];

/// Runs `filter` on the JSON text `input`, returning at most `max` outputs.
pub fn evaluate(
    filter: &str,
    input: &str,
    max: usize,
    cancel: &Cancel,
) -> Result<QueryOutput, ToolError> {
    use jaq_core::load::{Arena, File, Loader};
    use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
    use jaq_json::Val;

    // serde_json refuses nesting deeper than 128 levels, which jaq's recursive parser would
    // otherwise have to survive.
    serde_json::from_str::<serde::de::IgnoredAny>(input)
        .map_err(|e| ToolError::new(kinds::INVALID_JSON, format!("the input is not JSON: {e}")))?;
    let value = jaq_json::read::parse_single(input.as_bytes())
        .map_err(|e| ToolError::new(kinds::INVALID_JSON, format!("the input is not JSON: {e}")))?;

    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs().filter(|(name, _, _)| !WITHHELD.contains(name)))
        .chain(jaq_json::funs());
    let arena = Arena::default();
    let program = File {
        code: filter,
        path: (),
    };
    let modules = Loader::new(defs)
        .load(&arena, program)
        .map_err(|errors| load_error(filter, errors))?;
    let compiled = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(compile_error)?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&compiled.lut, Vars::new([]));
    let mut results = Vec::new();
    let mut truncated = false;
    for item in compiled.id.run((ctx, value)).map(unwrap_valr) {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::JQ_ERROR, "cancelled"));
        }
        if results.len() >= max {
            truncated = true;
            break;
        }
        let v =
            item.map_err(|e| ToolError::new(kinds::JQ_ERROR, format!("the filter failed: {e}")))?;
        let text = v.to_string();
        // Non-finite numbers have no JSON form; jq prints them as null.
        results.push(serde_json::from_str(&text).unwrap_or(Value::Null));
    }
    Ok(QueryOutput { results, truncated })
}

/// The byte offset of `part` (a slice of `whole`) in `whole`.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize)
        .saturating_sub(whole.as_ptr() as usize)
        .min(whole.len())
}

fn load_error(filter: &str, errors: jaq_core::load::Errors<&str, ()>) -> ToolError {
    use jaq_core::load::Error;
    let mut messages = Vec::new();
    for (_, error) in errors {
        match error {
            Error::Io(list) => messages.extend(
                list.into_iter()
                    .map(|(path, e)| format!("cannot load module {path:?}: {e}")),
            ),
            Error::Lex(list) => messages.extend(list.into_iter().map(|(expected, at)| {
                format!(
                    "expected {} at byte {}",
                    expected.as_str(),
                    offset_in(filter, at)
                )
            })),
            Error::Parse(list) => messages.extend(list.into_iter().map(|(expected, found)| {
                if found.is_empty() {
                    format!("expected {} at the end of the filter", expected.as_str())
                } else {
                    format!(
                        "expected {} but found {found:?} at byte {}",
                        expected.as_str(),
                        offset_in(filter, found)
                    )
                }
            })),
        }
    }
    ToolError::new(
        kinds::JQ_ERROR,
        format!("the filter does not parse: {}", messages.join("; ")),
    )
}

fn compile_error(errors: jaq_core::compile::Errors<&str, ()>) -> ToolError {
    use jaq_core::compile::Undefined;
    let messages: Vec<String> = errors
        .into_iter()
        .flat_map(|(_, list)| list)
        .map(|(name, undefined)| match undefined {
            Undefined::Filter(arity) => format!("undefined filter {name}/{arity}"),
            other => format!("undefined {} {name}", other.as_str()),
        })
        .collect();
    ToolError::new(
        kinds::JQ_ERROR,
        format!("the filter does not compile: {}", messages.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::Profile;
    use crate::tools::test_support::*;

    fn eval(filter: &str, input: Value) -> Result<Vec<Value>, ToolError> {
        evaluate(filter, &input.to_string(), 100, &Cancel::default()).map(|o| o.results)
    }

    #[test]
    fn jq_syntax_works() {
        let input = json!({"items": [{"name": "a", "price": 5}, {"name": "b", "price": 20}, {"name": "c", "price": 30}]});
        assert_eq!(
            eval(".items[] | select(.price > 10) | .name", input.clone()).unwrap(),
            [json!("b"), json!("c")]
        );
        assert_eq!(
            eval("[.items[].price] | add", input.clone()).unwrap(),
            [json!(55)]
        );
        assert_eq!(
            eval(".items | map(.name) | join(\",\")", input.clone()).unwrap(),
            [json!("a,b,c")]
        );
        assert_eq!(eval(".items | length", input.clone()).unwrap(), [json!(3)]);
        assert_eq!(eval("keys", input.clone()).unwrap(), [json!(["items"])]);
        assert_eq!(
            eval(".items[0] | to_entries | from_entries", input.clone()).unwrap(),
            [json!({"name": "a", "price": 5})]
        );
        assert_eq!(eval(".missing", input).unwrap(), [Value::Null]);
        assert_eq!(
            eval("\"x\" | test(\"^x$\")", Value::Null).unwrap(),
            [json!(true)]
        );
        assert_eq!(eval("1.5 * 2", Value::Null).unwrap(), [json!(3.0)]);
        assert_eq!(eval("empty", Value::Null).unwrap(), Vec::<Value>::new());
        assert_eq!(eval("nan", Value::Null).unwrap(), [Value::Null]);
    }

    #[test]
    fn errors_are_clear() {
        let e = eval(".a |", Value::Null).unwrap_err();
        assert_eq!(e.kind, kinds::JQ_ERROR);
        assert!(e.message.contains("does not parse"), "{e}");
        let e = eval("nosuchfilter(1)", Value::Null).unwrap_err();
        assert!(e.message.contains("undefined filter nosuchfilter/1"), "{e}");
        let e = eval("error(\"boom\")", Value::Null).unwrap_err();
        assert!(e.message.contains("boom"), "{e}");
        let e = eval(".a", json!([1])).unwrap_err();
        assert_eq!(e.kind, kinds::JQ_ERROR);
        let e = evaluate(".", "{not json", 10, &Cancel::default()).unwrap_err();
        assert_eq!(e.kind, kinds::INVALID_JSON);
        let deep = "[".repeat(100_000);
        let e = evaluate(".", &deep, 10, &Cancel::default()).unwrap_err();
        assert_eq!(e.kind, kinds::INVALID_JSON);
    }

    #[test]
    fn the_environment_and_modules_are_withheld() {
        let e = eval("env", Value::Null).unwrap_err();
        assert!(e.message.contains("undefined"), "{e}");
        let e = eval("$ENV", Value::Null).unwrap_err();
        assert!(e.message.contains("undefined"), "{e}");
        let e = eval("import \"x\" as x; .", Value::Null).unwrap_err();
        assert!(e.message.contains("cannot load module"), "{e}");
        // Nor is reading further inputs.
        for filter in ["input", "[inputs]"] {
            let e = eval(filter, Value::Null).unwrap_err();
            assert!(e.message.contains("undefined"), "{filter}: {e}");
        }
    }

    #[test]
    fn outputs_are_capped() {
        let out = evaluate("range(1000000000)", "null", 5, &Cancel::default()).unwrap();
        assert_eq!(
            out.results,
            [json!(0), json!(1), json!(2), json!(3), json!(4)]
        );
        assert!(out.truncated);
        let out = evaluate("range(5)", "null", 5, &Cancel::default()).unwrap();
        assert!(!out.truncated);
    }

    #[tokio::test]
    async fn the_tool_reads_files_and_values() {
        let fx = Fixture::new();
        fx.write(
            "data.json",
            r#"{"users": [{"name": "ada"}, {"name": "alan"}]}"#,
        );
        fx.write("bad.json", "{nope");
        let r = registry(&fx, Profile::Readonly);
        let v = call(
            &r,
            "json.query",
            json!({"filter": ".users[].name", "path": "data.json"}),
        )
        .await;
        assert_eq!(v.data().unwrap()["results"], json!(["ada", "alan"]));
        let v = call(
            &r,
            "json.query",
            json!({"filter": ".a + 1", "input": {"a": 41}}),
        )
        .await;
        assert_eq!(v.data().unwrap()["results"], json!([42]));
        let v = call(
            &r,
            "json.query",
            json!({"filter": "range(10)", "max_results": 3}),
        )
        .await;
        assert_eq!(v.data().unwrap()["results"], json!([0, 1, 2]));
        assert_eq!(v.data().unwrap()["truncated"], json!(true));
        let e = call(
            &r,
            "json.query",
            json!({"filter": ".", "path": "data.json", "input": 1}),
        )
        .await;
        assert_eq!(error_kind(&e), kinds::INVALID_ARGUMENT);
        let e = call(&r, "json.query", json!({"filter": ".", "path": "bad.json"})).await;
        assert_eq!(error_kind(&e), kinds::INVALID_JSON);
        let e = call(
            &r,
            "json.query",
            json!({"filter": ".", "path": "../etc/passwd"}),
        )
        .await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED);
        let e = call(
            &r,
            "json.query",
            json!({"filter": ".", "path": "/etc/passwd"}),
        )
        .await;
        assert_eq!(error_kind(&e), kinds::ACCESS_DENIED);
    }

    #[tokio::test]
    async fn a_dead_worker_is_a_clear_error() {
        // `false` exits at once without answering, like a worker killed by a stack overflow.
        let request = WorkerRequest {
            filter: ".".into(),
            input: "null".into(),
            max_results: 1,
        };
        let Ok(program) = which("false") else { return };
        let e = run_worker(&program, &request).await.unwrap_err();
        assert_eq!(e.kind, kinds::JQ_ERROR);
        assert!(e.message.contains("recursion"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_stopped_worker_is_explained() {
        use std::os::unix::process::ExitStatusExt;
        // A wait status of n (n < 128) is "killed by signal n".
        let abort = std::process::ExitStatus::from_raw(6);
        let e = worker_stopped(&abort, "memory allocation of 2000000000 bytes failed\n");
        assert_eq!(e.kind, kinds::TOO_LARGE);
        assert!(e.message.contains("1024 MiB"), "{e}");
        let xcpu = std::process::ExitStatus::from_raw(rustix::process::Signal::XCPU.as_raw());
        let e = worker_stopped(&xcpu, "");
        assert_eq!(e.kind, kinds::JQ_ERROR);
        assert!(e.message.contains("300 s of CPU time"), "{e}");
        let e = worker_stopped(&abort, "thread 'jq' has overflowed its stack\n");
        assert_eq!(e.kind, kinds::JQ_ERROR);
        assert!(e.message.contains("recursion"), "{e}");
    }

    fn which(name: &str) -> Result<std::path::PathBuf, ()> {
        for dir in ["/bin", "/usr/bin"] {
            let p = std::path::Path::new(dir).join(name);
            if p.exists() {
                return Ok(p);
            }
        }
        Err(())
    }
}
