//! The guide's samples (`docs/*.md`, the mdBook) that are not Rust: each fenced block is
//! checked by what reads it for real (issue #29 item 2).
//!
//! - `toml`: a gateway configuration (`[[upstream]]`) goes through the gateway's loader, any
//!   other `serve` configuration through `serve`'s (`config::resolve`, as `--config FILE`
//!   does); a Cargo manifest fragment (`[dependencies]`) must name this workspace's crates.
//! - `json`: parses; a client's `mcpServers` entry that runs `codomyrmex-mcp` has arguments
//!   this binary's command line accepts.
//! - `sh`, and `$ `-prompted lines of `text`: every `codomyrmex-mcp ...` command parses with
//!   the binary's own parser, and every script, crate, example, test and binary a `cargo` or
//!   script command names exists in the repository.
//!
//! Rust samples must be `{{#include}}`s of compiled examples, with their anchors; Python
//! samples are run against the installed wheel by the package's
//! `tests/test_guide_samples.py`.

use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::Value;

use crate::cli::{Cli, Command};

/// The repository's root (this crate is `crates/codomyrmex-mcp-cli`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fenced block: the page, its first line, its language and its text.
struct Block {
    page: String,
    line: usize,
    lang: String,
    text: String,
}

fn blocks() -> Vec<Block> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    blocks_of(pages)
}

/// The fenced blocks of `pages`, in order.
fn blocks_of(pages: Vec<PathBuf>) -> Vec<Block> {
    let mut out = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a page is UTF-8");
        let name = page
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut open: Option<(usize, String, String, Vec<&str>)> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            match &mut open {
                None => {
                    if let Some(rest) = trimmed.strip_prefix("```") {
                        let fence = "`".repeat(3 + rest.chars().take_while(|c| *c == '`').count());
                        let lang = rest.trim_start_matches('`').trim().to_owned();
                        open = Some((i + 1, lang, fence, Vec::new()));
                    }
                }
                Some((start, lang, fence, body)) => {
                    if trimmed.starts_with(fence.as_str()) && trimmed.trim() == fence.as_str() {
                        out.push(Block {
                            page: name.clone(),
                            line: *start,
                            lang: std::mem::take(lang),
                            text: body.join("\n"),
                        });
                        open = None;
                    } else {
                        body.push(line);
                    }
                }
            }
        }
        assert!(open.is_none(), "{name}: a code block is never closed");
    }
    out
}

/// The block's shell commands: continuation lines joined, comments and `$ ` prompts taken off.
fn commands(text: &str, prompted_only: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let mut line = line.trim();
        if prompted_only && current.is_empty() {
            match line.strip_prefix("$ ") {
                Some(rest) => line = rest,
                None => continue,
            }
        }
        let line = match line.find(" #") {
            Some(at) if !line[..at].contains('"') || line[..at].matches('"').count() % 2 == 0 => {
                line[..at].trim_end()
            }
            _ => line,
        };
        if line.starts_with('#') {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                if !current.trim().is_empty() {
                    out.push(std::mem::take(&mut current).trim().to_owned());
                }
                current.clear();
            }
        }
    }
    out
}

fn parses_as_the_binarys_command_line(words: &[String], at: &str) {
    if let Err(e) = Cli::try_parse_from(words) {
        panic!(
            "{at}: `{}` is not a command line the binary accepts:\n{e}",
            words.join(" ")
        );
    }
}

/// The workspace's crates, by directory name (each directory is named for its crate).
fn crates() -> Vec<String> {
    std::fs::read_dir(repo().join("crates"))
        .expect("crates/ is readable")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect()
}

fn exists_in_some_crate(kind: &str, name: &str) -> bool {
    crates().iter().any(|c| {
        let base = repo().join("crates").join(c);
        match kind {
            "example" => base.join(format!("examples/{name}.rs")).exists(),
            "test" => base.join(format!("tests/{name}.rs")).exists(),
            _ => {
                base.join(format!("src/bin/{name}.rs")).exists()
                    || base.join(format!("src/bin/{name}/main.rs")).exists()
                    || (name == "codomyrmex-mcp" && c == "codomyrmex-mcp-cli")
            }
        }
    })
}

/// What a `cargo`, `scripts/...` or `pip` command names must exist.
fn names_what_exists(words: &[String], at: &str) {
    let mut words = words.iter().peekable();
    while let Some(word) = words.next() {
        let word = word.as_str();
        if let Some(script) = word.strip_prefix("scripts/") {
            assert!(
                repo().join("scripts").join(script).exists(),
                "{at}: scripts/{script} does not exist"
            );
        }
        let kind = match word {
            "-p" | "--package" => "crate",
            "--example" => "example",
            "--test" => "test",
            "--bin" => "bin",
            "--path" | "-m" => "path",
            _ => continue,
        };
        let Some(value) = words.next() else { continue };
        match kind {
            "crate" => assert!(crates().contains(value), "{at}: no crate {value}"),
            "path" => {
                let relative = value.trim_start_matches("./");
                assert!(repo().join(relative).exists(), "{at}: no {relative}");
            }
            _ => assert!(exists_in_some_crate(kind, value), "{at}: no {kind} {value}"),
        }
    }
}

fn check_command(command: &str, at: &str) {
    let Some(words) = shlex::split(command) else {
        panic!("{at}: `{command}` does not split into words");
    };
    // An environment prefix (`NAME=value cmd ...`) is not part of the command.
    let words: Vec<String> = words
        .into_iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    match words.first().map(String::as_str) {
        Some("codomyrmex-mcp") => parses_as_the_binarys_command_line(&words, at),
        Some(w) if w == "cargo" || w == "pip" || w == "maturin" || w.starts_with("scripts/") => {
            names_what_exists(&words, at);
        }
        _ => {}
    }
}

fn check_toml(block: &Block, at: &str) {
    let dir = std::env::temp_dir().join(format!(
        "codomyrmex-guide-sample-{}-{}",
        std::process::id(),
        block.line
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join(format!("{}.toml", block.page.trim_end_matches(".md")));
    std::fs::write(&path, &block.text).expect("the sample is written");
    if block.text.contains("[[upstream]]") {
        if let Err(e) = crate::gateway::config::GatewayConfig::load(&path) {
            panic!("{at}: the gateway refuses the sample: {e}");
        }
    } else if block.text.contains("[dependencies]") {
        let manifest: toml::Table =
            toml::from_str(&block.text).unwrap_or_else(|e| panic!("{at}: not TOML: {e}"));
        let deps = manifest
            .get("dependencies")
            .and_then(toml::Value::as_table)
            .cloned()
            .unwrap_or_default();
        for (name, spec) in deps {
            if !name.starts_with("codomyrmex") {
                continue;
            }
            assert!(
                crates().contains(&name),
                "{at}: no crate {name} in the workspace"
            );
            if let Some(path) = spec.get("path").and_then(toml::Value::as_str) {
                assert!(
                    path.ends_with(&format!("crates/{name}")),
                    "{at}: {name}'s path {path} does not end with crates/{name}"
                );
            }
            assert!(
                spec.get("git").is_none(),
                "{at}: the project has no public repository to take {name} from with `git`"
            );
        }
    } else {
        let path_arg = path.to_string_lossy().into_owned();
        let cli = Cli::try_parse_from(["codomyrmex-mcp", "config", "--config", &path_arg])
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let Command::Config { server, .. } = cli.command else {
            panic!("{at}: `config` parsed as another command");
        };
        if let Err(e) = crate::config::resolve(&server) {
            panic!("{at}: serve's configuration loader refuses the sample: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn check_json(block: &Block, at: &str) {
    let value: Value =
        serde_json::from_str(&block.text).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
    let Some(servers) = value.get("mcpServers").and_then(Value::as_object) else {
        return;
    };
    for (name, entry) in servers {
        if entry["command"] != "codomyrmex-mcp" {
            continue;
        }
        let mut words = vec!["codomyrmex-mcp".to_owned()];
        for arg in entry["args"].as_array().into_iter().flatten() {
            let Some(arg) = arg.as_str() else {
                panic!("{at}: {name}'s args are not all strings");
            };
            words.push(arg.to_owned());
        }
        parses_as_the_binarys_command_line(&words, &format!("{at} ({name})"));
    }
}

/// A Rust sample is an `{{#include FILE:ANCHOR}}` of a compiled example (CI's `cargo test`
/// and `cargo clippy --all-targets` build every example), whose anchor is there.
fn check_rust(block: &Block, at: &str) {
    let Some(spec) = block
        .text
        .trim()
        .strip_prefix("{{#include ")
        .and_then(|rest| rest.strip_suffix("}}"))
    else {
        panic!("{at}: a Rust sample that is not included from a compiled example");
    };
    let (file, anchor) = spec.split_once(':').unwrap_or((spec, ""));
    let path = repo().join("docs").join(file);
    assert!(
        file.starts_with("../crates/") && file.contains("/examples/"),
        "{at}: {file} is not an example"
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{at}: {file}: {e}"));
    if !anchor.is_empty() {
        for mark in ["ANCHOR", "ANCHOR_END"] {
            assert!(
                text.contains(&format!("// {mark}: {anchor}\n")),
                "{at}: {file} has no `// {mark}: {anchor}`"
            );
        }
    }
}

/// The languages a block may have, and what checks each.
#[test]
fn every_sample_of_the_guide_is_read_by_what_it_claims_to_be() {
    let blocks = blocks();
    assert!(
        blocks.len() > 40,
        "only {} blocks found in docs/",
        blocks.len()
    );
    let (mut toml, mut json, mut commands_seen) = (0, 0, 0);
    for block in &blocks {
        let at = format!("docs/{}:{}", block.page, block.line);
        match block.lang.as_str() {
            "toml" => {
                check_toml(block, &at);
                toml += 1;
            }
            "json" => {
                check_json(block, &at);
                json += 1;
            }
            "sh" | "text" => {
                for command in commands(&block.text, block.lang == "text") {
                    check_command(&command, &at);
                    commands_seen += 1;
                }
            }
            lang if lang.starts_with("rust") => check_rust(block, &at),
            // Run by the Python package's tests/test_guide_samples.py.
            "python" => {}
            // Configurations of other programs (nginx, Prometheus, Kubernetes): `nginx -t`
            // and a YAML parser read them in the Python package's tests/test_guide_samples.py,
            // as does the skill loader the SKILL.md.
            "nginx" | "yaml" | "markdown" => {}
            other => panic!("{at}: a block in `{other}`, which no test checks"),
        }
    }
    assert!(
        toml >= 4 && json >= 3 && commands_seen >= 15,
        "{toml} {json} {commands_seen}"
    );
}

#[test]
fn a_wrong_sample_is_caught() {
    let bad_gateway = Block {
        page: "bad.md".into(),
        line: 1,
        lang: "toml".into(),
        text: "[[upstream]]\nname = \"Files\"\ncommand = \"x\"\n".into(),
    };
    let caught = std::panic::catch_unwind(|| check_toml(&bad_gateway, "bad"));
    assert!(
        caught.is_err(),
        "an upstream named with a capital letter passed"
    );
    let bad_serve = Block {
        page: "bad.md".into(),
        line: 2,
        lang: "toml".into(),
        text: "[http]\ntrusted_proxie = [\"10.0.0.0/8\"]\n".into(),
    };
    assert!(std::panic::catch_unwind(|| check_toml(&bad_serve, "bad")).is_err());
    assert!(
        std::panic::catch_unwind(|| check_command("codomyrmex-mcp serve --no-such-flag", "bad"))
            .is_err()
    );
    assert!(
        std::panic::catch_unwind(|| check_command("cargo run --example no_such_example", "bad"))
            .is_err()
    );
}

/// The text between `// ANCHOR: NAME` and `// ANCHOR_END: NAME` of a file of the repository.
fn anchored(file: &str, name: &str) -> String {
    let text = std::fs::read_to_string(repo().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let start = format!("// ANCHOR: {name}\n");
    let end = format!("// ANCHOR_END: {name}\n");
    let from = text
        .find(&start)
        .map(|at| at + start.len())
        .unwrap_or_else(|| panic!("{file} has no `{start}`"));
    let to = text[from..]
        .find(&end)
        .map(|at| from + at)
        .unwrap_or_else(|| panic!("{file} has no `{end}`"));
    text[from..to].trim_end().to_owned()
}

/// The README's samples, read as the guide's are (issue #29 item 1: every claim left in it
/// is still tested): its commands parse with the binary's parser and name what exists, its
/// `mcpServers` entry is a command line the binary accepts, its Rust block is the compiled
/// `examples/readme.rs` (`cargo test` and `cargo clippy --all-targets` build it), and its
/// Python block is run by the Python package's `tests/test_readme.py`.
#[test]
fn every_sample_of_the_readme_is_checked() {
    let blocks = blocks_of(vec![repo().join("README.md")]);
    let (mut rust, mut json, mut python, mut commands_seen) = (0, 0, 0, 0);
    for block in &blocks {
        let at = format!("README.md:{}", block.line);
        match block.lang.as_str() {
            "rust" => {
                assert_eq!(
                    block.text.trim_end(),
                    anchored("crates/codomyrmex-mcp/examples/readme.rs", "all"),
                    "{at}: the README's Rust sample is not examples/readme.rs"
                );
                rust += 1;
            }
            "json" => {
                check_json(block, &at);
                json += 1;
            }
            "sh" | "text" => {
                for command in commands(&block.text, block.lang == "text") {
                    check_command(&command, &at);
                    commands_seen += 1;
                }
            }
            "python" => python += 1,
            other => panic!("{at}: a block in `{other}`, which no test checks"),
        }
    }
    // The two commands, the binary's five and the wheel's install.
    assert_eq!(
        (rust, json, python, commands_seen),
        (1, 1, 1, 8),
        "the README's samples changed: check each is still tested"
    );
}

/// The README's links into the repository (the guide's chapters above all) name files that
/// exist; `scripts/check_book_links.py` checks the guide's own links in the built book.
#[test]
fn every_link_of_the_readme_names_a_file() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut seen = 0;
    for (at, _) in readme.match_indices("](") {
        let rest = &readme[at + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if target.contains("://") {
            continue;
        }
        let path = target.split('#').next().unwrap_or_default();
        assert!(
            repo().join(path).exists(),
            "README.md links to {target}, which does not exist"
        );
        seen += 1;
    }
    assert!(seen >= 15, "only {seen} links into the repository");
}
