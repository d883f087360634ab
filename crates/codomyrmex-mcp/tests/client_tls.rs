//! `McpClient` over `https://` against a local TLS server (`tls_fake`) whose test CA is
//! trusted through `HttpTarget::ca_file`; without it the certificate is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tls_fake;

use std::path::PathBuf;
use std::time::Duration;

use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::client::{ClientOptions, EraPreference};
use tls_fake::{fixture, tls_server};

const HANG: Duration = Duration::from_secs(30);

fn target(url: String, ca: Option<PathBuf>) -> HttpTarget {
    let mut t = HttpTarget::new(url);
    t.ca_file = ca;
    t
}

#[tokio::test]
async fn https_with_the_test_ca_works_by_ip_and_by_name() {
    let port = tls_server().await;
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("https://{host}:{port}/mcp");
        let c = McpClient::connect_http(
            target(url, Some(fixture("ca.pem"))),
            ClientOptions::default(),
        )
        .unwrap();
        tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
            .await
            .unwrap()
            .unwrap();
        let tools = c.list_tools().await.unwrap();
        assert_eq!(tools[0]["name"], "over-tls", "{host}");
        c.close(HANG).await;
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused() {
    let port = tls_server().await;
    let c = McpClient::connect_http(
        target(format!("https://127.0.0.1:{port}/mcp"), None),
        ClientOptions::default(),
    )
    .unwrap();
    let e = tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Transport { status: None, message } if message.contains("TLS handshake") && message.contains("certificate")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_bad_ca_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, b"not a certificate").unwrap();
    for (ca, needle) in [
        (not_pem, "no PEM certificate"),
        (dir.path().join("missing.pem"), "cannot read the CA file"),
    ] {
        let e = McpClient::connect_http(
            target("https://127.0.0.1:1/mcp".into(), Some(ca)),
            ClientOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
    }
}
