//! A TLS test server, shared by the library's `tests/client_tls.rs` and the CLI's
//! `tests/client_tls_cli.rs`: tokio-rustls with a certificate for `localhost` and
//! `127.0.0.1` signed by the test CA in `tests/fixtures/tls/` (generated once with openssl,
//! valid for 100 years), answering a legacy MCP handshake and `tools/list` (one tool,
//! `over-tls`).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A file of the test PKI (`ca.pem`, `server.pem`, `server.key`).
pub fn fixture(name: &str) -> PathBuf {
    // Both crates that include this module sit in crates/.
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../codomyrmex-mcp/tests/fixtures/tls")
        .join(name)
}

/// Reads one request's JSON body.
async fn read_body<S: AsyncRead + Unpin>(s: &mut S) -> Option<Value> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).ok()?;
    let len: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some(serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut s: S) {
    let Some(msg) = read_body(&mut s).await else {
        return;
    };
    let result = match msg["method"].as_str() {
        Some("initialize") => {
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "tls-fake", "version": "1"}})
        }
        Some("tools/list") => {
            json!({"tools": [{"name": "over-tls", "inputSchema": {"type": "object"}}]})
        }
        _ => json!({}),
    };
    let out = if msg.get("id").is_some() {
        let body = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    };
    let _ = s.write_all(out.as_bytes()).await;
    let _ = s.shutdown().await;
}

/// A TLS acceptor with the test certificate (`localhost`, `127.0.0.1`).
pub fn acceptor() -> tokio_rustls::TlsAcceptor {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(fixture("server.pem"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(fixture("server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A TLS server answering a legacy MCP handshake and `tools/list`; its port.
pub async fn tls_server() -> u16 {
    let acceptor = acceptor();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    answer(tls).await;
                }
            });
        }
    });
    port
}
