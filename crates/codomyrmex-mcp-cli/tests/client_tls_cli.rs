//! `codomyrmex-mcp client --http https://... --cacert FILE` against a local TLS server (the
//! library's `tests/tls_fake`): trusted with the test CA, refused (exit 4) without it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../codomyrmex-mcp/tests/tls_fake/mod.rs"]
mod tls_fake;

mod support;

use support::{Ran, command, output_async};

async fn client(args: &[&str]) -> Ran {
    let mut c = command(&["client"]);
    c.args(args);
    output_async(c).await
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
    assert_eq!(ok.code, Some(0), "{}", ok.stderr);
    assert!(ok.stdout.contains("over-tls"));
    let refused = client(&["--http", &url, "--era", "legacy", "tools"]).await;
    let stderr = &refused.stderr;
    assert_eq!(refused.code, Some(4), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
}
