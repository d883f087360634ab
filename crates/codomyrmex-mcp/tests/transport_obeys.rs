//! Transports only obey: no transport decides a protocol rule by matching on a JSON-RPC
//! method name (ARCHITECTURE.md, "Transports only obey").
//!
//! Reads the non-test source under `src/transport/` (the server's transports) and the client's
//! transports under `src/client/` ([`CLIENT_TRANSPORTS`]: what `McpClient` hands its bytes to;
//! they read what they decide from the core's `client::sending`) and fails, naming file and line, on any
//! string literal that is a method of the core's method table ([`METHODS`]) or one of this
//! server's own invented methods (`"codomyrmex-mcp/…"`, which cross-instance messages once
//! were). Test code is left out (files named `*tests.rs`, and a file's `#[cfg(test)] mod`
//! at its end): tests build requests, which is not deciding on them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use codomyrmex_mcp::wire::METHODS;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `text` before its test module, as (line number, line) with comments and doc
/// lines left out.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let next = lines.get(i + 1).map_or("", |l| l.trim_start());
        if trimmed.starts_with("#[cfg(test)]")
            && (next.starts_with("mod ") || next.starts_with("#[path"))
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push((i + 1, *line));
    }
    out
}

/// The client's transports and their helpers, under `src/client/`: the HTTP transport and
/// what it reads and writes with, and the stdio transport.
const CLIENT_TRANSPORTS: &[&str] = &[
    "http.rs",
    "http_io.rs",
    "sse.rs",
    "endpoint.rs",
    "inbound.rs",
    "tls.rs",
    "stdio.rs",
];

/// Every `"literal"` in the non-test transport source that names a method: (file, line, text).
fn method_literals(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    files_under(root, &mut files);
    files.sort();
    literals_in(root, files, true)
}

/// [`method_literals`] of `files`, named relative to `root`; `invented`: this server's own
/// `"codomyrmex-mcp/…"` methods count too (a client's `User-Agent` is one such string).
fn literals_in(root: &Path, files: Vec<PathBuf>, invented: bool) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with("tests.rs") {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (n, line) in code_lines(&text) {
            let named = METHODS.iter().any(|m| line.contains(&format!("\"{m}\"")))
                || (invented
                    && (line.contains("\"codomyrmex-mcp/")
                        || line.contains("\"method\":\"codomyrmex-mcp/")));
            if named {
                let rel = file.strip_prefix(root).unwrap_or(&file);
                found.push(format!("{}:{n}: {}", rel.display(), line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_transport_matches_on_a_method_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport");
    let found = method_literals(&root);
    assert!(
        found.is_empty(),
        "transports must ask the core, not match on method names:\n{}",
        found.join("\n")
    );
}

/// Issue #27 item 4: the client's transports obey too. Which field `Mcp-Name` mirrors,
/// whether a message opens a session or cancels a request, is the core's
/// `client::sending::Sending` (sharing the server's `mirrored_name_field`), never a match on
/// a method name here.
#[test]
fn no_client_transport_matches_on_a_method_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/client");
    let files: Vec<PathBuf> = CLIENT_TRANSPORTS.iter().map(|f| root.join(f)).collect();
    for f in &files {
        assert!(
            f.is_file(),
            "{} is gone: update CLIENT_TRANSPORTS",
            f.display()
        );
    }
    let found = literals_in(&root, files, false);
    assert!(
        found.is_empty(),
        "client transports must ask the core, not match on method names:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_a_method_name() {
    // The check can fail: a literal method name in code is found, one in a comment is not.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("x.rs"),
        "// \"tools/call\" in a comment\nfn f(m: &str) -> bool { m == \"tools/call\" }\n\
         #[cfg(test)]\nmod tests { const M: &str = \"ping\"; }\n",
    )
    .expect("write");
    let found = method_literals(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("x.rs:2:"), "{found:?}");
}
