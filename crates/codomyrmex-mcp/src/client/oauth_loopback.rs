//! [`LoopbackRedirect`]: the redirect listener of an interactive OAuth authorization (RFC
//! 8252, loopback interface redirection): a listener on `127.0.0.1` on a port the OS picks,
//! whose `redirect_uri` the client registers. The client shows the authorization URL (a
//! printed line, a browser it opens) and waits for the browser to come back to
//! `/callback` with the code; [`LoopbackRedirect::user_agent`] turns that into the
//! [`UserAgent`] of an [`OAuthConfig`](super::oauth::OAuthConfig).
//!
//! A callback whose `state` is not the pending request's is answered and ignored (another
//! page cannot end the wait); request heads are bounded (8 KiB) and each connection gets
//! 10 s. Not a web server: one path, one answer.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::oauth::{UserAgent, query_params};

/// The largest request head read from the browser.
const MAX_HEAD: usize = 8 << 10;
/// How long one browser connection may take to send its request.
const PER_CONNECTION: Duration = Duration::from_secs(10);

/// A loopback redirect listener.
#[derive(Debug)]
pub struct LoopbackRedirect {
    listener: Arc<TcpListener>,
    redirect_uri: String,
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1`, on a free port. Needs a tokio runtime.
    pub fn bind() -> std::io::Result<Self> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        Ok(Self {
            listener: Arc::new(TcpListener::from_std(std_listener)?),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// The `redirect_uri` to register: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The user agent: calls `show` with each authorization URL, then waits at most `wait`
    /// for the browser's callback carrying that request's `state`, and returns the URL it
    /// came back to.
    pub fn user_agent(
        self,
        show: impl Fn(&str) + Send + Sync + 'static,
        wait: Duration,
    ) -> UserAgent {
        let show = Arc::new(show);
        Arc::new(move |url: String| {
            let listener = self.listener.clone();
            let redirect_uri = self.redirect_uri.clone();
            let show = show.clone();
            Box::pin(async move {
                let state = query_params(&url).remove("state");
                show(&url);
                tokio::time::timeout(wait, wait_for_callback(&listener, state.as_deref()))
                    .await
                    .map_err(|_| {
                        format!("no answer from the browser within {wait:?} (the authorization was not completed)")
                    })?
                    .map(|query| format!("{redirect_uri}?{query}"))
            })
        })
    }
}

/// Accepts browser connections until one brings `/callback` with `state`; its query.
async fn wait_for_callback(listener: &TcpListener, state: Option<&str>) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let Ok(Some(target)) = tokio::time::timeout(PER_CONNECTION, read_target(&mut stream)).await
        else {
            continue;
        };
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        if path != "/callback" {
            answer(&mut stream, "404 Not Found", "Not the OAuth callback.").await;
            continue;
        }
        let params = query_params(&format!("http://x/?{query}"));
        if state.is_some() && params.get("state").map(String::as_str) != state {
            answer(
                &mut stream,
                "400 Bad Request",
                "This is not the pending authorization.",
            )
            .await;
            continue;
        }
        let text = if params.contains_key("error") {
            "The authorization was refused. You can close this window."
        } else {
            "Authorized: you can close this window and return to the terminal."
        };
        answer(&mut stream, "200 OK", text).await;
        return Ok(query.to_owned());
    }
}

/// The request target of a `GET`, or `None` for anything else or a head over the bound.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

async fn answer(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>codomyrmex-mcp</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
