//! What the real binary says when something is wrong, and what its help shows: each message
//! names the thing that failed (an address, a variable, a file and line) and the fix.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;

use support::{Ran, await_line, command, output, stderr_lines};

#[test]
fn a_port_in_use_is_named_with_the_fix() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let Ran { code, stderr, .. } = output(&mut command(&["serve", "--http", &addr]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{addr} is already in use")),
        "{stderr}"
    );
    assert!(stderr.contains("--http ADDR"), "{stderr}");
    assert!(stderr.contains("127.0.0.1:0"), "{stderr}");
}

#[test]
fn localhost_is_accepted_as_an_address() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = command(&[
        "serve",
        "--root",
        dir.path().to_str().unwrap(),
        "--http",
        "localhost:0",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let lines = stderr_lines(&mut child);
    let line = await_line(&lines, "serving MCP over Streamable HTTP at ");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.contains("serving MCP over Streamable HTTP at http://127.0.0.1:"),
        "{line}"
    );
}

#[test]
fn a_non_loopback_name_and_a_public_bind_without_auth_are_refused() {
    let Ran { code, stderr, .. } = output(&mut command(&["serve", "--http", "example.invalid:80"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("example.invalid"), "{stderr}");
    let Ran { code, stderr, .. } = output(&mut command(&["serve", "--http", "0.0.0.0:0"]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("without authentication"), "{stderr}");
}

#[test]
fn a_bad_variable_is_reported_under_its_own_name() {
    for (var, value, args) in [
        ("CODOMYRMEX_MCP_TIMEOUT", "soon", &["serve"][..]),
        ("CODOMYRMEX_MCP_TIMEOUT", "0", &["config"][..]),
        ("CODOMYRMEX_MCP_PROFILE", "admin", &["tools"][..]),
        ("CODOMYRMEX_MCP_HTTP", "nowhere", &["serve"][..]),
        ("CODOMYRMEX_MCP_NO_RATE_LIMIT", "maybe", &["serve"][..]),
    ] {
        let Ran { code, stderr, .. } = output(command(args).env(var, value));
        assert_eq!(code, Some(2), "{var}: {stderr}");
        assert!(stderr.contains(var), "{var}: {stderr}");
        assert!(stderr.contains(value), "{var}: {stderr}");
    }
    // The same value given as a flag is reported under the flag.
    let Ran { code, stderr, .. } = output(&mut command(&["serve", "--timeout", "soon"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--timeout"), "{stderr}");
    assert!(!stderr.contains("CODOMYRMEX_MCP_TIMEOUT"), "{stderr}");
}

#[test]
fn a_config_file_error_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "profile = \"readonly\"\n\ntimeout_secs = \"ten\"\n").unwrap();
    let Ran { code, stderr, .. } = output(&mut command(&[
        "config",
        "--print",
        "--config",
        path.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3", path.display())),
        "{stderr}"
    );
}

#[test]
fn config_alone_prints_the_configuration() {
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&["config"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("profile = \"readonly\""), "{stdout}");
    let Ran { code, stdout, .. } = output(&mut command(&["config", "--print"]));
    assert_eq!(code, Some(0));
    assert!(stdout.contains("profile = \"readonly\""), "{stdout}");
    let Ran { code, stdout, .. } = output(&mut command(&["config", "--json"]));
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["profile"], "readonly");
}

const SERVE_ONLY_FLAGS: &[&str] = &[
    "--http",
    "--auth-token",
    "--allowed-host",
    "--allowed-origin",
    "--cors-origin",
    "--jwks",
    "--issuer",
    "--audience",
    "--required-scope",
    "--trusted-proxy",
];

#[test]
fn each_subcommand_help_shows_only_its_own_flags() {
    for sub in ["tools", "config"] {
        let Ran {
            code, stdout: help, ..
        } = output(&mut command(&[sub, "--help"]));
        assert_eq!(code, Some(0));
        assert!(help.contains("--root"), "{sub}: {help}");
        for flag in SERVE_ONLY_FLAGS {
            assert!(!help.contains(flag), "{sub} --help lists {flag}: {help}");
        }
    }
    let Ran { stdout: help, .. } = output(&mut command(&["serve", "--help"]));
    for flag in SERVE_ONLY_FLAGS {
        assert!(help.contains(flag), "serve --help lacks {flag}: {help}");
    }
    // The variables still reach `config`.
    let Ran {
        code,
        stdout,
        stderr,
    } = output(command(&["config"]).env("CODOMYRMEX_MCP_HTTP", "127.0.0.1:9999"));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("listen = \"127.0.0.1:9999\""), "{stdout}");
}

#[test]
fn trusted_proxies_come_from_the_variable_as_a_list() {
    let Ran {
        code,
        stdout,
        stderr,
    } = output(
        command(&["config", "--json"]).env("CODOMYRMEX_MCP_TRUSTED_PROXIES", "10.0.0.0/8,::1"),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["http"]["trusted_proxies"],
        serde_json::json!(["10.0.0.0/8", "::1/128"])
    );
    let Ran { code, stderr, .. } =
        output(command(&["config"]).env("CODOMYRMEX_MCP_TRUSTED_PROXIES", "10.0.0.0/99"));
    assert_ne!(code, Some(0));
    assert!(stderr.contains("trusted_proxies"), "{stderr}");
}
