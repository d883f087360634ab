//! Layering checks over the crate's own source: no import cycles between top-level modules.
//!
//! Reads `src/`, builds the graph of `crate::<module>` references between top-level modules
//! (a module is `src/<name>.rs` or `src/<name>/`), and fails on any cycle, naming it. Test
//! files (`*tests.rs`) are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::<name>` in `text`, code only (comments and doc lines skipped).
fn referenced(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

/// The module graph: module → the modules its non-test code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    files_under(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let file_name = rel.file_name().unwrap().to_string_lossy().into_owned();
        if file_name.ends_with("tests.rs") || file_name == "lib.rs" {
            continue;
        }
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        // The in-file `#[cfg(test)] mod tests` is the tail of a file, by house style.
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        let edges = graph.entry(top.clone()).or_default();
        edges.extend(referenced(code).into_iter().filter(|m| *m != top));
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|m| modules.contains(m));
    }
    graph
}

/// A cycle through `start`, if any (depth-first search).
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(node).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    let mut seen = BTreeSet::new();
    walk(graph, start, start, &mut path, &mut seen).then(|| {
        path.push(start.to_owned());
        path
    })
}

#[test]
fn the_top_level_modules_import_each_other_without_cycles() {
    let graph = graph();
    assert!(graph.contains_key("engine") && graph.contains_key("context"));
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_from(&graph, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycle_from(&g, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.get_mut("c").unwrap().clear();
    assert_eq!(cycle_from(&g, "a"), None);
}

/// The policy part of a workspace source line, if it is one: an unwind guard
/// (`catch_unwind(`) or a permit (`try_permit(`, `.permit()`) anywhere but the core's driver;
/// an admission gate made (`Gate::new(`) or a slot taken in one (`try_admit(`) anywhere but the
/// core's policy module; the driver's permit wait (`driver::permit(`) anywhere but the policy
/// module (the gateway's upstream calls take theirs through `UpstreamPolicy::admit`). `rel` is
/// the file's path under `crates/`. `util.rs` defines the guard, `invocation.rs` the gate and
/// its permits. In the gateway (`codomyrmex-mcp-cli/src/gateway/`), whose calls to upstreams
/// run under each upstream's `UpstreamPolicy` (issue #27 item 3): no semaphore of its own, no
/// deadline of its own anywhere (`time::timeout(`, `timeout_at(`: its upkeep, the health
/// check, the listings and subscriptions, takes the driver's `within` too), and in its call
/// path (`bridge.rs`, `serve.rs`) neither the driver's deadline with a duration of its own
/// (`driver::within(`) nor a timer of its own (`time::sleep(`, as a parked call's expiry
/// was): the upstream's deadline is `UpstreamPolicy::within`. One use that is not handler code is
/// named: the stdio transport's `std::panic::catch_unwind(||` guards tokio's pipe
/// registration.
fn policy_offence(rel: &str, line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or_default();
    let driver = "codomyrmex-mcp-core/src/driver.rs";
    let policy = "codomyrmex-mcp-core/src/policy/mod.rs";
    let defining = [
        "codomyrmex-mcp-core/src/util.rs",
        "codomyrmex-mcp-core/src/invocation.rs",
    ];
    if defining.contains(&rel) {
        return None;
    }
    let guard = code.contains("catch_unwind(")
        && !(rel == "codomyrmex-mcp/src/transport/stdio.rs"
            && code.contains("std::panic::catch_unwind(||"));
    if rel != driver && guard {
        return Some("a second unwind guard");
    }
    if rel != driver && (code.contains("try_permit(") || code.contains(".permit()")) {
        return Some("a permit taken outside the driver");
    }
    if rel != policy && code.contains("Gate::new(") {
        return Some("a second admission gate");
    }
    if rel != policy && code.contains("try_admit(") {
        return Some("an admission outside the policy");
    }
    if !rel.starts_with("codomyrmex-mcp-core/src/policy/") && code.contains("driver::permit(") {
        return Some("a permit wait outside the policy");
    }
    if rel.starts_with("codomyrmex-mcp-cli/src/gateway/") {
        if code.contains("Semaphore") {
            return Some("a semaphore of the gateway's own");
        }
        let call_path = ["bridge.rs", "serve.rs"]
            .iter()
            .any(|f| rel == format!("codomyrmex-mcp-cli/src/gateway/{f}"));
        if call_path
            && ["time::sleep(", "driver::within("]
                .iter()
                .any(|t| code.contains(t))
        {
            return Some("a deadline of the gateway's own on an upstream call");
        }
        if ["time::timeout(", "timeout_at("]
            .iter()
            .any(|t| code.contains(t))
        {
            return Some("a deadline of the gateway's own, not the driver's `within`");
        }
    }
    None
}

/// The lines of `text` before its test module: the first `#[cfg(test)]` whose next line that
/// is not an attribute opens a `mod` (`#[cfg(test)]`, `#[allow(…)]`, `mod tests {`).
fn non_test_code(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .map(|l| l.trim())
                    .find(|l| !l.starts_with("#["))
                    .is_some_and(|l| l.starts_with("mod "))
        })
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

#[test]
fn the_test_module_is_left_out_after_its_attributes() {
    let text =
        "fn a() {}\n#[cfg(test)]\n#[allow(clippy::unwrap_used)]\nmod tests {\n    fn b() {}\n}\n";
    assert_eq!(non_test_code(text), vec!["fn a() {}"]);
    let text = "#[cfg(test)]\nfn helper() {}\nfn c() {}\n";
    assert_eq!(
        non_test_code(text).len(),
        3,
        "a test-only item is not the test module"
    );
}

/// One driver, one policy: across the workspace's non-test sources, handler calls are
/// admitted (a [`Gate`](crate::invocation::Gate) made, a slot taken) only by the policy module
/// (`policy/mod.rs`), and put under an unwind guard and given a permit only by the driver
/// (`driver.rs`); see [`policy_offence`]. A second copy of either fails here, naming the line:
/// `McpToolRegistry::execute` with a `Gate::new` of its own did.
#[test]
fn only_the_policy_admits_and_only_the_driver_catches_panics() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            files_under(&src, &mut files);
        }
    }
    let mut offenders = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for line in non_test_code(&text) {
            if let Some(what) = policy_offence(&rel, line) {
                offenders.push(format!("{rel}: {what}: {}", line.trim()));
            }
        }
    }
    assert!(files.len() > 50, "the workspace's sources were found");
    assert!(offenders.is_empty(), "outside the policy: {offenders:#?}");
}

/// The check sees each shape the policy's copies took: the registry's own gate and slot
/// (before issue #27's item 3), a guard or permit outside the driver.
#[test]
fn the_policy_check_sees_a_second_gate_guard_or_admission() {
    let registry = "codomyrmex-mcp-core/src/registry/mod.rs";
    assert!(policy_offence(registry, "gate: Gate::new(").is_some());
    assert!(policy_offence(registry, "let Some(a) = self.gate.try_admit() else {").is_some());
    assert!(policy_offence(registry, "let r = catch_unwind(work).await;").is_some());
    assert!(policy_offence(registry, "let p = admission.try_permit();").is_some());
    assert!(policy_offence(registry, "// Gate::new( in a comment").is_none());
    let policy = "codomyrmex-mcp-core/src/policy/mod.rs";
    assert!(policy_offence(policy, "Gate::new(running, waiting)").is_none());
    assert!(policy_offence(policy, "catch_unwind(work)").is_some());
    // The gateway's own gate, permit wait, semaphore and deadline per upstream (before issue
    // #27's item 3 put its upstream calls under `UpstreamPolicy`).
    let bridge = "codomyrmex-mcp-cli/src/gateway/bridge.rs";
    for line in [
        "gate: codomyrmex_mcp::invocation::Gate::new(max_concurrent, usize::MAX),",
        "let admission = self.gate.try_admit()?;",
        "let permit = codomyrmex_mcp::driver::permit(&admission, cancel).await?;",
        "let limit = Arc::new(tokio::sync::Semaphore::new(max_concurrent));",
        "codomyrmex_mcp::driver::within(&codomyrmex_mcp::runtime::TOKIO, timeout, call)",
        "tokio::time::timeout(up.timeout, call).await",
    ] {
        assert!(policy_offence(bridge, line).is_some(), "{line}");
    }
    let serve = "codomyrmex-mcp-cli/src/gateway/serve.rs";
    assert!(
        policy_offence(
            serve,
            "match driver::within(&TOKIO, upstream.timeout, call).await {"
        )
        .is_some()
    );
    assert!(policy_offence(serve, "match upstream.policy.within(&TOKIO, call).await {").is_none());
    // The gateway's upkeep: its own deadlines on a health check, a listing, a subscription,
    // and a parked call's expiry timer (before issue #27 item 3 reached them).
    for (file, line) in [
        (
            "supervise.rs",
            "tokio::time::timeout(s.timeout.min(Duration::from_secs(10)), client.ping()).await;",
        ),
        (
            "supervise.rs",
            "let listing = tokio::time::timeout(s.timeout, all).await.ok().flatten();",
        ),
        (
            "subscriptions.rs",
            "match tokio::time::timeout(self.timeout, self.client.subscribe(&uri)).await {",
        ),
        (
            "mod.rs",
            "if tokio::time::timeout(START_WAIT, all_tried).await.is_err() {",
        ),
        ("bridge.rs", "tokio::time::sleep(ttl).await;"),
    ] {
        let rel = format!("codomyrmex-mcp-cli/src/gateway/{file}");
        assert!(policy_offence(&rel, line).is_some(), "{file}: {line}");
    }
    let supervise = "codomyrmex-mcp-cli/src/gateway/supervise.rs";
    assert!(
        policy_offence(
            supervise,
            "driver::within(&TOKIO, HEALTH_WAIT, client.ping())"
        )
        .is_none()
    );
    assert!(policy_offence(supervise, "tokio::time::sleep(backoff).await;").is_none());
    let upstream = "codomyrmex-mcp-core/src/policy/upstream.rs";
    assert!(policy_offence(upstream, "let permit = driver::permit(&admission, cancel)").is_none());
}

/// Issue #27, item 1: what the engine hands out is inert. An invocation or a wait carries
/// its future (the handler's, or a store read) and data (its `Job`); the outcome comes back
/// through `Engine::complete(now, job, outcome)`. No boxed closure (`Box<dyn FnOnce`)
/// anywhere in the core's non-test code, and no engine or session cloned into something that
/// outlives the call that made it (`let engine = self.clone()`, `let session =
/// session.clone()`, the idiom of a closure or future capturing them; `let session =
/// self.0.clone()`, a requester's future over its session). A new one fails here, naming the
/// line.
#[test]
fn the_core_hands_out_no_closures_over_the_engine() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    files_under(&src, &mut files);
    let patterns = [
        "Box<dyn FnOnce",
        "let engine = self.clone()",
        "let engine = engine.clone()",
        "let session = session.clone()",
        // A requester's future that owns its session (a server-to-client request sent and
        // awaited by one future): the request leaves as a value, the answer comes back
        // through `Engine::handle_response`.
        "let session = self.0.clone()",
        "let session = self.session.clone()",
        // A server-to-client request written to a sink by the code that asks: it is queued
        // on the request's `Outbound` as a value (`AskClient::ask`), which the driver
        // drains in order with what the handler emitted before it.
        "send(OutgoingMessage::Request",
    ];
    let mut offenders = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") || name == "test_runtime.rs" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for pattern in patterns {
            let found: Vec<&str> = code
                .lines()
                .filter(|l| l.split("//").next().unwrap_or_default().contains(pattern))
                .collect();
            offenders.extend(found.iter().map(|l| format!("{rel}: {}", l.trim())));
        }
    }
    assert!(files.len() > 40, "the core's sources were found");
    assert!(
        offenders.is_empty(),
        "closures over the engine: {offenders:#?}"
    );
}

/// The lines of the core's non-test source that write to a transport's stream (a
/// `MessageSink`'s `send` on something named a sink or a stream), as `file: line`.
fn sink_writes() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    files_under(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") || name == "test_runtime.rs" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for line in code.lines() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains("sink.send(") || code.contains("stream.send(") {
                found.push(format!("{rel}: {}", line.trim()));
            }
        }
    }
    found
}

/// Issue #27 items 1 and 2: what the engine emits leaves as values in a queue (`Outbound`):
/// the one place in the core that writes to a transport's stream is the queue's drain
/// (`outbound.rs`), which the driver calls; a 2025-11-25 task's relay is such a queue too,
/// drained to the `tasks/result` stream that attaches. A new writer (a request, a cancel or
/// a notification sent past the queue) fails here, naming the line.
#[test]
fn only_the_queue_writes_to_a_stream() {
    let writers = sink_writes();
    assert!(
        writers.iter().any(|w| w.starts_with("outbound.rs: ")),
        "the drain was found: {writers:#?}"
    );
    let others: Vec<&String> = writers
        .iter()
        .filter(|w| !w.starts_with("outbound.rs: "))
        .collect();
    assert!(others.is_empty(), "writes past the queue: {others:#?}");
}

/// Issue #27 item 1: a running job holds ids and data, not its session: no job type (the
/// `Continuation` an invocation carries, a task's `TaskJob`, a store read's `StoreRead`, the
/// `InFlight` entry they hold), and nothing a handler's context holds to ask its client
/// (`InputMode`, a task's `TaskLink`, the session's `StateLock` they hold as an `AskClient`,
/// the `SessionState` behind it, the `ClientCall` it awaits), has a field that holds a
/// `Session` (an `Arc` or `Weak` of one, a requester over one) or the in-flight guard that
/// held it. `Session` is matched as a whole word: `SessionState` is the state, not the
/// session.
#[test]
fn jobs_hold_no_session_and_no_in_flight_guard() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let types = [
        ("engine/jobs.rs", "pub(super) enum Continuation {"),
        ("engine/jobs.rs", "pub(super) struct Round {"),
        (
            "engine/tasks/runner.rs",
            "pub(in crate::engine) struct TaskJob {",
        ),
        (
            "engine/tasks/shared.rs",
            "pub(in crate::engine) enum StoreRead {",
        ),
        ("engine/session.rs", "pub(crate) struct InFlight {"),
        // What a handler's context holds to ask its client, and the call it awaits: the
        // session's table of waiting requests and the queue, never the session.
        ("context.rs", "pub(crate) enum InputMode {"),
        ("engine/tasks/runner.rs", "pub(crate) struct TaskLink {"),
        ("engine/session.rs", "pub(crate) struct StateLock {"),
        (
            "engine/session_state.rs",
            "pub(crate) struct SessionState {",
        ),
        ("outbound.rs", "pub(crate) struct ClientCall {"),
    ];
    let banned = ["Session", "InFlightGuard", "Requester", "Engine"];
    let mut offenders = Vec::new();
    for (file, opening) in types {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let start = text
            .find(opening)
            .unwrap_or_else(|| panic!("{file}: `{opening}` not found"));
        // The body ends at the first line that is only `}` (the type's closing brace).
        let body = &text[start..];
        let end = body.find("\n}\n").unwrap_or(body.len());
        for line in body[..end].lines() {
            let code = line.split("//").next().unwrap_or_default();
            if banned.iter().any(|b| names(code, b)) {
                offenders.push(format!("{file}: {}", line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "jobs that hold their session: {offenders:#?}"
    );
}

/// The field a line of code declares, if it declares one whose type holds a lock
/// (`Mutex<` or `RwLock<`): ARCHITECTURE.md's count, `^\s*(pub(\([a-z]+\))? )?[a-z_]+:
/// .*(Mutex|RwLock)<`, as code.
fn lock_field(line: &str) -> Option<&str> {
    let code = line.split("//").next().unwrap_or_default().trim_start();
    let code = match code.strip_prefix("pub") {
        Some(rest) if rest.starts_with(' ') => rest.trim_start(),
        Some(rest) if rest.starts_with('(') => {
            let (vis, rest) = rest.split_once(") ")?;
            if !vis[1..].chars().all(|c| c.is_ascii_lowercase()) {
                return None;
            }
            rest
        }
        _ => code,
    };
    let (name, ty) = code.split_once(": ")?;
    let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    (is_name && (ty.contains("Mutex<") || ty.contains("RwLock<"))).then_some(name)
}

/// Issue #27 item 1, "mutable protocol state has one owner": what a session changes after
/// its handshake is one `SessionState` (`engine/session_state.rs`) behind one lock. That
/// file's non-test code holds no lock, atomic or cell of any kind (its methods take
/// `&mut self`), and the session's file declares exactly one lock field, the `StateLock`'s
/// `Mutex<SessionState>`; what else a `Session` holds is written once (`OnceLock`) or an
/// atomic. A second lock beside the state (a table of its own, as `in_flight`,
/// `subscriptions` and `ClientCalls`'s `pending` were) fails here.
#[test]
fn a_sessions_mutable_state_sits_behind_one_lock() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |file: &str| std::fs::read_to_string(src.join(file)).unwrap();
    let state = read("engine/session_state.rs");
    let inside: Vec<&str> = non_test_code(&state)
        .into_iter()
        .filter(|l| {
            let code = l.split("//").next().unwrap_or_default();
            ["Mutex", "RwLock", "Atomic", "OnceLock", "Cell", "LazyLock"]
                .iter()
                .any(|w| code.contains(w))
        })
        .collect();
    assert!(inside.is_empty(), "locks inside the state: {inside:#?}");
    let session = read("engine/session.rs");
    let fields: Vec<&str> = non_test_code(&session)
        .into_iter()
        .filter_map(lock_field)
        .collect();
    assert_eq!(fields, ["state"], "the session's locks");
    assert!(session.contains("    state: Mutex<SessionState>,"));
}

#[test]
fn the_lock_count_sees_the_fields_it_counts() {
    assert_eq!(lock_field("    state: Mutex<SessionState>,"), Some("state"));
    assert_eq!(
        lock_field("    pub(super) ids: Mutex<HashSet<String>>,"),
        Some("ids")
    );
    assert_eq!(lock_field("    pub live: RwLock<Arc<P>>,"), Some("live"));
    assert_eq!(lock_field("    state: Arc<StateLock>,"), None);
    assert_eq!(
        lock_field("        let x: Mutex<u8> = m;"),
        None,
        "not a field"
    );
    assert_eq!(lock_field("    // in_flight: Mutex<HashMap<..>>,"), None);
}

/// Whether `code` names `word` as a whole identifier (not as a part of a longer one).
fn names(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The copy of the client a line of the CLI's or the Python package's non-test source makes,
/// if it makes one (issue #27 item 3): reading an input-required result (`input_required(`)
/// is a round of the client's multi round-trip loop, which is `McpClient::request_answering`
/// (the gateway's 2026-07-28 upstreams) or one round, `McpClient::request_round` (Python's
/// `handle_request`, which hands the round back to its caller); a connection of its own to
/// a server in the process (`io::duplex(`, `serve_stream(`) is `McpClient::in_memory`'s.
fn client_copy(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or_default();
    if code.contains("input_required(") {
        return Some("a copy of the client's input loop (McpClient::request_answering)");
    }
    if code.contains("io::duplex(") || code.contains("serve_stream(") {
        return Some("a copy of the in-memory client (McpClient::in_memory)");
    }
    None
}

/// The gateway and the Python package use the library's client: its multi round-trip loop
/// and its in-memory connection, not copies (see [`client_copy`]).
#[test]
fn the_gateway_and_python_use_the_clients_loop_and_in_memory_client() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["codomyrmex-mcp-cli", "codomyrmex-mcp-py"] {
        files_under(&crates.join(krate).join("src"), &mut files);
    }
    let mut offenders = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for line in code.lines() {
            if let Some(what) = client_copy(line) {
                let rel = file.strip_prefix(&crates).unwrap().display().to_string();
                offenders.push(format!("{rel}: {what}: {}", line.trim()));
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("gateway/bridge.rs"))
            && files.iter().any(|f| f.ends_with("src/loopback.rs")),
        "the gateway's and the Python package's sources were found"
    );
    assert!(offenders.is_empty(), "copies of the client: {offenders:#?}");
}

/// The check sees the copies the review named, as they were: the gateway's own loop over
/// `request_round` (before `e4cb710`) and Python's own connection (before `da90018`).
#[test]
fn the_client_copy_check_sees_the_old_copies() {
    for old in [
        "let required = match proto::input_required(&result) {",
        "let (client, server_end) = tokio::io::duplex(BUFFER);",
        "if let Err(e) = server.serve_stream(server_read, server_write).await {",
    ] {
        assert!(client_copy(old).is_some(), "{old}");
    }
    for today in [
        ".request_answering(method, params, &options, |required| async move {",
        "let outcome = self.client.request_round(method, &params, &options).await;",
        "let client = Arc::new(McpClient::in_memory_with(server, Era::Legacy, options));",
        "// proto::input_required( in a comment",
    ] {
        assert!(client_copy(today).is_none(), "{today}");
    }
}
