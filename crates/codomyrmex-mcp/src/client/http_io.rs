//! One HTTP/1.1 exchange on a new connection (plain or rustls), and reading what comes back
//! (bounded bodies, chunks, the first message of a JSON or SSE body): the bytes-moving half
//! of the client's Streamable HTTP transport ([`http`](super::http)), and the fetch its OAuth
//! flow runs on. No MCP logic.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::endpoint::{Endpoint, MAX_BODY, parse_url};
use super::oauth_fetch as oauth;
use super::sse::SseParser;

pub(crate) type Response = hyper::Response<Incoming>;

/// Opens an HTTP/1.1 connection over `io`; the connection task runs in the background.
async fn handshake<IO>(
    e: &Endpoint,
    io: IO,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(io))
            .await
            .map_err(|err| format!("HTTP handshake with {} failed: {err}", e.authority))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

pub(crate) async fn send_to(
    e: &Endpoint,
    tls: &Arc<rustls::ClientConfig>,
    method: hyper::Method,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Result<Response, String> {
    let stream = tokio::net::TcpStream::connect((e.host.as_str(), e.port))
        .await
        .map_err(|err| format!("cannot connect to {}: {err}", e.authority))?;
    let _ = stream.set_nodelay(true);
    let mut sender = if e.https {
        handshake(e, super::tls::connect(tls, &e.host, stream).await?).await?
    } else {
        handshake(e, stream).await?
    };
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(e.path.as_str())
        .header(hyper::header::HOST, e.authority.as_str())
        .header(
            hyper::header::USER_AGENT,
            concat!("codomyrmex-mcp/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|err| format!("cannot build the request: {err}"))?;
    sender
        .send_request(request)
        .await
        .map_err(|err| format!("HTTP request to {} failed: {err}", e.authority))
}

/// An HTTP fetch for the OAuth flow: any `http://` or `https://` URL (trusting the Mozilla
/// roots and `ca_file`), redirects not followed, bodies bounded.
pub(crate) fn fetcher_for(ca_file: Option<&std::path::Path>) -> Result<oauth::Fetch, String> {
    let tls = super::tls::client_config(ca_file)?;
    Ok(Arc::new(
        move |method: &'static str, url: String, headers: Vec<(String, String)>, body: Vec<u8>| {
            let tls = tls.clone();
            Box::pin(async move {
                let endpoint = parse_url(&url)?;
                let method =
                    hyper::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
                let response = send_to(&endpoint, &tls, method, &headers, body).await?;
                let status = response.status().as_u16();
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                let location = header("location");
                let dpop_nonce = header(super::dpop::NONCE_HEADER);
                let body = read_body(response.into_body()).await?;
                Ok(oauth::Fetched {
                    status,
                    location,
                    dpop_nonce,
                    body,
                })
            })
        },
    ))
}

pub(crate) async fn next_chunk(body: &mut Incoming) -> Result<Option<Bytes>, String> {
    loop {
        match body.frame().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(format!("reading the response failed: {e}")),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

pub(crate) async fn read_body(mut body: Incoming) -> Result<Vec<u8>, String> {
    let mut all = Vec::new();
    while let Some(chunk) = next_chunk(&mut body).await? {
        all.extend_from_slice(&chunk);
        if all.len() > MAX_BODY {
            return Err(format!("the response body is larger than {MAX_BODY} bytes"));
        }
    }
    Ok(all)
}

/// Reads every message of a JSON or SSE body (for answers the client does not see).
pub(crate) async fn read_messages(
    response: Response,
    sink: &mut (dyn FnMut(&Value) + Send),
    parser: &mut SseParser,
) -> Result<(), String> {
    let mut body = response.into_body();
    while let Some(chunk) = next_chunk(&mut body).await? {
        for event in parser.feed(&chunk)? {
            if let Ok(m) = serde_json::from_str::<Value>(&event.data) {
                sink(&m);
                return Ok(());
            }
        }
        // A JSON body arrives whole or in a few chunks; try it as JSON as it grows.
        if let Ok(m) = serde_json::from_slice::<Value>(&chunk) {
            sink(&m);
            return Ok(());
        }
    }
    Ok(())
}
