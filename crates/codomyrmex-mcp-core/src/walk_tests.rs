//! ARCHITECTURE.md's walk of one `tools/call` cites source lines (`stdio.rs:243`): each
//! citation is listed here with the file it means and a text its first line holds, so that
//! a change that moves the code fails until the walk is brought up to date, and a citation
//! added to the walk without a line here fails too.

use std::path::Path;

const CS: &str = "codomyrmex-mcp/src/transport/stdio.rs";
const HANDLER: &str = "codomyrmex-mcp/src/transport/http/handler.rs";
const DRIVER: &str = "codomyrmex-mcp-core/src/driver.rs";

/// (citation as the walk writes it, file under `crates/`, text on the cited first line).
const CITED: &[(&str, &str, &str)] = &[
    (
        "codomyrmex-mcp/src/transport/stdio.rs:155",
        CS,
        "tokio::spawn(serve_connection(",
    ),
    ("stdio.rs:189", CS, "tokio::spawn(write_loop("),
    ("stdio.rs:243", CS, "read_line("),
    (
        "stdio.rs:531",
        CS,
        "fn open() -> Option<(pipe::Receiver, pipe::Sender)>",
    ),
    ("stdio.rs:453-454", CS, "mpsc::channel("),
    ("stdio.rs:427", CS, "tokio::io::stdout()"),
    ("stdio.rs:272", CS, "engine.handle_decoded("),
    (
        "engine/tools.rs:17",
        "codomyrmex-mcp-core/src/engine/tools.rs",
        "fn call_tool(",
    ),
    (
        "engine/tools.rs:139",
        "codomyrmex-mcp-core/src/engine/tools.rs",
        "Handled::Invoke(",
    ),
    ("stdio.rs:286", CS, "crate::runtime::drive("),
    ("stdio.rs:303", CS, "fut.as_mut().poll(&mut cx)"),
    (
        "codomyrmex-mcp/src/runtime/driver.rs:61",
        "codomyrmex-mcp/src/runtime/driver.rs",
        "pub fn drive(",
    ),
    (
        "codomyrmex-mcp-core/src/engine/drive.rs:19",
        "codomyrmex-mcp-core/src/engine/drive.rs",
        "Handled::Invoke(invocation) => Box::pin(driver::run(",
    ),
    ("stdio.rs:320", CS, "tasks.spawn("),
    (
        "codomyrmex-mcp-core/src/driver.rs:113",
        DRIVER,
        "pub fn run(",
    ),
    ("driver.rs:145-146", DRIVER, "Detach::Never =>"),
    ("driver.rs:317", DRIVER, "permit(&admission, &cancel)"),
    ("driver.rs:323", DRIVER, "catch_unwind(work)"),
    ("driver.rs:186-188", DRIVER, "fn complete("),
    (
        "engine/jobs.rs:107",
        "codomyrmex-mcp-core/src/engine/jobs.rs",
        "pub fn complete(",
    ),
    ("stdio.rs:386", CS, "tx.try_send(m)"),
    ("stdio.rs:553", CS, "rx.recv()"),
    ("stdio.rs:555", CS, "write_to("),
    ("stdio.rs:567", CS, "writer.write_all("),
    (
        "codomyrmex-mcp/src/transport/http/mod.rs:882",
        "codomyrmex-mcp/src/transport/http/mod.rs",
        "tokio::spawn(",
    ),
    ("transport/http/handler.rs:280", HANDLER, "read_body("),
    ("handler.rs:233", HANDLER, "async fn serve_post("),
    ("handler.rs:296", HANDLER, "fn route_message<"),
    ("handler.rs:315", HANDLER, ".classify("),
    ("handler.rs:354", HANDLER, "fn modern<"),
    ("handler.rs:370", HANDLER, "validate_with("),
    ("handler.rs:386", HANDLER, ".respond_as("),
    ("handler.rs:422", HANDLER, ".handle_classified("),
    ("handler.rs:428", HANDLER, "app.drain.answer("),
    (
        "codomyrmex-mcp/src/transport/http/drain.rs:59",
        "codomyrmex-mcp/src/transport/http/drain.rs",
        "crate::runtime::drive(",
    ),
    (
        "drain.rs:61",
        "codomyrmex-mcp/src/transport/http/drain.rs",
        "futures_util::poll!(work.as_mut())",
    ),
    ("handler.rs:529", HANDLER, "match work.await"),
    ("handler.rs:530", HANDLER, "answer("),
    ("handler.rs:43", HANDLER, "fn json_response("),
    ("handler.rs:394", HANDLER, "mpsc::channel("),
    ("handler.rs:409-410", HANDLER, "crate::runtime::drive("),
    ("handler.rs:685", HANDLER, "tokio::spawn("),
];

/// The text of the walk: from its heading to the next `## `.
fn walk(architecture: &str) -> &str {
    let start = architecture
        .find("## The walk of one `tools/call`")
        .expect("ARCHITECTURE.md has the walk");
    let rest = &architecture[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |e| e + 3);
    &architecture[start..start + end]
}

/// Every backticked `NAME.rs:LINE` or `NAME.rs:LINE-LINE` in `text`.
fn citations(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            t.split_once(".rs:").is_some_and(|(_, n)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '-')
            })
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_cited_line_of_the_walk_holds_what_it_names() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/");
    let architecture =
        std::fs::read_to_string(crates.join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let walk = walk(&architecture);
    let mut problems = Vec::new();
    for cited in citations(walk) {
        if !CITED.iter().any(|(c, _, _)| *c == cited) {
            problems.push(format!(
                "{cited}: cited by the walk, not listed in walk_tests.rs"
            ));
        }
    }
    for (cited, file, text) in CITED {
        if !citations(walk).iter().any(|c| c == cited) {
            problems.push(format!("{cited}: listed here, no longer cited by the walk"));
            continue;
        }
        let line: usize = cited
            .rsplit_once(':')
            .and_then(|(_, n)| n.split('-').next())
            .and_then(|n| n.parse().ok())
            .expect("a line number");
        let source = std::fs::read_to_string(crates.join(file)).expect("the cited file");
        let held = source.lines().nth(line - 1).unwrap_or_default();
        if !held.contains(text) {
            problems.push(format!(
                "{cited} ({file}): line {line} is {:?}, not a line with {text:?}",
                held.trim()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the walk in ARCHITECTURE.md is out of date:\n{}",
        problems.join("\n")
    );
}
