//! `codomyrmex-mcp serve --skills DIR`: the real binary over stdio publishes every skill under
//! DIR (the Skills extension), in both protocol eras, read through the confinement.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const HANG_GUARD: Duration = Duration::from_secs(30);
const MD: &str =
    "---\nname: pdf-processing\ndescription: Extract PDF documents\n---\n# PDF\nSee templates/.\n";

fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn legacy(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Runs `serve --skills DIR` over stdio, sends `requests` in order (each answered before the
/// next is sent) and returns the answers and the server's stderr.
fn exchange(dir: &std::path::Path, requests: &[Value]) -> (Vec<Value>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codomyrmex-mcp"))
        .arg("serve")
        .arg("--root")
        .arg(dir)
        .arg("--skills")
        .arg(dir.join("skills"))
        .env("CODOMYRMEX_MCP_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start codomyrmex-mcp serve");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = Vec::new();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = rx
                .recv_timeout(HANG_GUARD)
                .expect("no answer from the server");
            let v: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC only");
            if v["id"] == request["id"] {
                answers.push(v);
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    (answers, err.join().unwrap())
}

fn skills_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(skills.join("pdf-processing/templates")).unwrap();
    std::fs::write(skills.join("pdf-processing/SKILL.md"), MD).unwrap();
    std::fs::write(
        skills.join("pdf-processing/templates/invoice.md"),
        "invoice\n",
    )
    .unwrap();
    // A link out of the directory is not a skill file.
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        skills.join("pdf-processing/secret.txt"),
    )
    .unwrap();
    // A skill that breaks the naming rules is left out with a warning.
    std::fs::create_dir_all(skills.join("Bad")).unwrap();
    std::fs::write(
        skills.join("Bad/SKILL.md"),
        "---\nname: Bad\ndescription: d\n---\n",
    )
    .unwrap();
    dir
}

#[test]
fn serve_publishes_the_skills_of_a_directory_in_the_2026_era() {
    let dir = skills_dir();
    let (answers, stderr) = exchange(
        dir.path(),
        &[
            modern(1, "server/discover", json!({})),
            modern(2, "skills/list", json!({})),
            modern(
                3,
                "resources/read",
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            ),
            modern(
                4,
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing"}),
            ),
            modern(
                5,
                "resources/read",
                json!({"uri": "skill://pdf-processing/secret.txt"}),
            ),
        ],
    );
    let caps = &answers[0]["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{}",
        answers[0]
    );
    let skills = answers[1]["result"]["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1, "{}", answers[1]);
    assert_eq!(skills[0]["uri"], "skill://pdf-processing/SKILL.md");
    let files = skills[0]["resources"].as_array().unwrap();
    let uris: Vec<&str> = files.iter().map(|f| f["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/templates/invoice.md"
        ]
    );
    assert_eq!(files[0]["size"], MD.len());
    assert_eq!(
        answers[2]["result"]["contents"][0]["text"], MD,
        "{}",
        answers[2]
    );
    let children = answers[3]["result"]["resources"].as_array().unwrap();
    assert_eq!(children.len(), 2, "{}", answers[3]);
    assert_eq!(children[1]["mimeType"], "inode/directory");
    assert!(
        answers[4]["error"].is_object(),
        "a symlink out is not served: {}",
        answers[4]
    );
    assert!(
        stderr.contains("Bad") && stderr.contains("skill not served"),
        "{stderr}"
    );
}

#[test]
fn serve_publishes_the_skills_of_a_directory_in_the_2025_era() {
    let dir = skills_dir();
    let (answers, _) = exchange(
        dir.path(),
        &[
            legacy(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}),
            ),
            legacy(
                2,
                "skills/get",
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            ),
            legacy(3, "skills/get", json!({"uri": "skill://nope/SKILL.md"})),
            legacy(
                4,
                "resources/read",
                json!({"uri": "skill://pdf-processing/templates/invoice.md"}),
            ),
        ],
    );
    assert_eq!(
        answers[0]["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true}),
        "{}",
        answers[0]
    );
    assert!(answers[0]["result"]["capabilities"]["resources"].is_object());
    assert_eq!(
        answers[1]["result"]["skill"]["frontmatter"]["description"],
        "Extract PDF documents"
    );
    assert_eq!(answers[2]["error"]["code"], -32602, "{}", answers[2]);
    assert_eq!(answers[3]["result"]["contents"][0]["text"], "invoice\n");
}

#[test]
fn serve_refuses_a_skills_directory_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codomyrmex-mcp"))
        .arg("serve")
        .arg("--root")
        .arg(dir.path())
        .arg("--skills")
        .arg(dir.path().join("missing"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skills directory"), "{stderr}");
}
