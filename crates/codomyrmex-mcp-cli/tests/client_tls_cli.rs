//! `codomyrmex-mcp client --http https://... --cacert FILE` against a local TLS server (the
//! library's `tests/tls_fake`): trusted with the test CA, refused (exit 4) without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../codomyrmex-mcp/tests/tls_fake/mod.rs"]
mod tls_fake;

use std::process::Output;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_codomyrmex-mcp");

async fn client(args: &[&str]) -> Output {
    let mut c = tokio::process::Command::new(BIN);
    c.arg("client").args(args).kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("CODOMYRMEX_MCP_") {
            c.env_remove(k);
        }
    }
    tokio::time::timeout(Duration::from_secs(60), c.output())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn https_with_cacert_and_without() {
    let port = tls_fake::tls_server().await;
    let url = format!("https://localhost:{port}/mcp");
    let ca = tls_fake::fixture("ca.pem");
    let ok = client(&[
        "--http",
        &url,
        "--cacert",
        ca.to_str().unwrap(),
        "--era",
        "legacy",
        "tools",
    ])
    .await;
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("over-tls"));
    let refused = client(&["--http", &url, "--era", "legacy", "tools"]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
}
