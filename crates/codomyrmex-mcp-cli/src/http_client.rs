//! A minimal Streamable HTTP client transport: plain HTTP/1.1 over a TCP stream, with JSON and
//! SSE responses, for `client --http URL`.
//!
//! [`connect`] bridges an [`McpClient`] (which speaks newline-delimited JSON-RPC) to the
//! endpoint: each message the client writes becomes a POST, and each message in the answer (a
//! JSON body or SSE events) is handed back. It adds the headers the transport requires: the
//! session id from `initialize` and the negotiated `MCP-Protocol-Version` (legacy era), or
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` (modern era). TLS is not supported.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use codomyrmex_mcp::{Era, McpClient};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The largest JSON body or SSE event accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The largest response head.
const MAX_HEAD: usize = 64 * 1024;
/// The JSON-RPC error code of failures of the transport itself (no answer from the server).
pub const TRANSPORT_ERROR: i64 = -32099;
/// `_meta` key of the modern era's protocol version.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Where the endpoint is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or IP (without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// The `Host` header value.
    pub authority: String,
}

/// Parses an `http://` URL.
pub fn parse_url(url: &str) -> Result<Endpoint, String> {
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if url.starts_with("https://") {
        return Err(
            "https is not supported by this client; use http on a trusted network or a local \
             TLS-terminating proxy"
                .into(),
        );
    } else {
        return Err(format!("{url:?} is not an http:// URL"));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_owned()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_owned()),
    };
    let path = path.split('#').next().unwrap_or("/").to_owned();
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{url:?}: expected http://HOST[:PORT]/PATH"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{url:?}: unclosed IPv6 bracket"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| format!("{url:?}: bad port"))?,
            None if after.is_empty() => 80,
            None => return Err(format!("{url:?}: bad authority")),
        };
        (h.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (
                h.to_owned(),
                p.parse().map_err(|_| format!("{url:?}: bad port"))?,
            ),
            None => (authority.to_owned(), 80),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{url:?}: bad host"));
    }
    Ok(Endpoint {
        host,
        port,
        path,
        authority: authority.to_owned(),
    })
}

/// A response: status, headers and a body reader.
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    body: Body,
}

impl Response {
    /// The first header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next piece of the body, `None` at its end.
    pub async fn chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        self.body.chunk().await
    }

    /// The whole body, up to `max` bytes.
    pub async fn bytes(&mut self, max: usize) -> io::Result<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(c) = self.chunk().await? {
            all.extend_from_slice(&c);
            if all.len() > max {
                return Err(io::Error::other("the response body is too large"));
            }
        }
        Ok(all)
    }
}

enum Framing {
    Length(u64),
    Chunked { left: u64, done: bool },
    UntilClose,
}

struct Body {
    reader: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    framing: Framing,
}

impl Body {
    async fn chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; 16 * 1024];
        match &mut self.framing {
            Framing::Length(0) => Ok(None),
            Framing::Length(left) => {
                let want = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                let n = self.reader.read(&mut buf[..want]).await?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                buf.truncate(n);
                Ok(Some(buf))
            }
            Framing::UntilClose => {
                let n = self.reader.read(&mut buf).await?;
                buf.truncate(n);
                Ok((n > 0).then_some(buf))
            }
            Framing::Chunked { done: true, .. } => Ok(None),
            Framing::Chunked { left, done } => {
                if *left == 0 {
                    let line = read_line(&mut self.reader).await?;
                    let size = line.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(size, 16)
                        .map_err(|_| io::Error::other(format!("bad chunk size {size:?}")))?;
                    if size == 0 {
                        // Trailers, then the blank line.
                        while !read_line(&mut self.reader).await?.is_empty() {}
                        *done = true;
                        return Ok(None);
                    }
                    *left = size;
                }
                let want = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                let n = self.reader.read(&mut buf[..want]).await?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                *left -= n as u64;
                if *left == 0 {
                    read_line(&mut self.reader).await?;
                }
                buf.truncate(n);
                Ok(Some(buf))
            }
        }
    }
}

/// Reads one CRLF- or LF-terminated line, without the terminator.
async fn read_line<R: AsyncBufReadExt + Unpin>(reader: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    let n = reader
        .take(MAX_HEAD as u64)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    if line.last() != Some(&b'\n') {
        return Err(io::Error::other("line too long"));
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| io::Error::other("a header is not UTF-8"))
}

/// Sends one request on a new connection and reads the response head.
pub async fn request(
    endpoint: &Endpoint,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<Response> {
    let stream = TcpStream::connect((endpoint.host.as_str(), endpoint.port)).await?;
    stream.set_nodelay(true)?;
    exchange(Box::new(stream), endpoint, method, headers, body).await
}

async fn exchange<S: AsyncRead + AsyncWrite + Send + Unpin + 'static>(
    stream: Box<S>,
    endpoint: &Endpoint,
    method: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<Response> {
    let (reader, mut writer) = tokio::io::split(*stream);
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: codomyrmex-mcp/{}\r\n",
        endpoint.path,
        endpoint.authority,
        body.len(),
        env!("CARGO_PKG_VERSION"),
    );
    for (name, value) in headers {
        if value.contains(['\r', '\n']) || name.contains(['\r', '\n', ':']) {
            return Err(io::Error::other(format!("invalid header {name}")));
        }
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    writer.write_all(&message).await?;
    writer.flush().await?;
    let reader: Box<dyn AsyncRead + Send + Unpin> = Box::new(reader);
    let mut reader = BufReader::new(reader);
    let status_line = read_line(&mut reader).await?;
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(io::Error::other(format!("bad status line {status_line:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(io::Error::other(format!("bad status line {status_line:?}")));
    }
    let status: u16 = code
        .parse()
        .map_err(|_| io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    let mut head_bytes = status_line.len();
    loop {
        let line = read_line(&mut reader).await?;
        if line.is_empty() {
            break;
        }
        head_bytes += line.len();
        if head_bytes > MAX_HEAD {
            return Err(io::Error::other("the response head is too large"));
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let framing = if method == "HEAD" || status == 204 || status == 304 || status / 100 == 1 {
        Framing::Length(0)
    } else if find("transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        Framing::Chunked {
            left: 0,
            done: false,
        }
    } else if let Some(len) = find("content-length") {
        Framing::Length(
            len.parse()
                .map_err(|_| io::Error::other(format!("bad Content-Length {len:?}")))?,
        )
    } else {
        Framing::UntilClose
    };
    Ok(Response {
        status,
        headers,
        body: Body { reader, framing },
    })
}

/// Incremental `text/event-stream` parsing: feed bytes, get the data of complete events.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    /// Feeds bytes; returns the data of each event they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                if self.line.len() > MAX_BODY {
                    return Err("an SSE line is too long".into());
                }
                continue;
            }
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(std::mem::take(&mut self.data).join("\n"));
                }
            } else if let Some(d) = line.strip_prefix("data:") {
                self.data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            }
            // `event:`, `id:`, `retry:` and comments need no handling here.
        }
        Ok(events)
    }
}

/// Per-connection state shared by the POSTs.
#[derive(Debug, Default)]
struct State {
    session: Option<String>,
    protocol_version: Option<String>,
}

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// An [`McpClient`] speaking to `endpoint`.
pub fn connect(endpoint: Endpoint, token: Option<String>, era: Era) -> McpClient {
    let (client_io, bridge_io) = tokio::io::duplex(1 << 20);
    let (client_read, client_write) = tokio::io::split(client_io);
    let (bridge_read, bridge_write) = tokio::io::split(bridge_io);
    let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(bridge_write)));
    let state = Arc::new(Mutex::new(State::default()));
    let endpoint = Arc::new(endpoint);
    tokio::spawn(async move {
        let mut lines = BufReader::new(bridge_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
            let task = post(
                endpoint.clone(),
                token.clone(),
                state.clone(),
                writer.clone(),
                message,
            );
            if is_initialize {
                // Later messages need the session id it returns.
                task.await;
            } else {
                tokio::spawn(task);
            }
        }
    });
    McpClient::connect(client_read, client_write, era)
}

fn header_value(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_graphic() || c == ' ') && !text.starts_with(' ') {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// The headers of one POST.
fn headers_for(message: &Value, token: Option<&str>, state: &State) -> Vec<(String, String)> {
    let mut h = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    if let Some(t) = token {
        h.push(("Authorization".into(), format!("Bearer {t}")));
    }
    let params = message.get("params");
    let modern_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    if let Some(version) = modern_version {
        h.push(("MCP-Protocol-Version".into(), version.to_owned()));
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            h.push(("Mcp-Method".into(), method.to_owned()));
            let field = match method {
                "tools/call" | "prompts/get" => Some("name"),
                "resources/read" => Some("uri"),
                _ => None,
            };
            if let Some(name) = field
                .and_then(|f| params.and_then(|p| p.get(f)))
                .and_then(Value::as_str)
            {
                h.push(("Mcp-Name".into(), header_value(name)));
            }
        }
    } else {
        if let Some(session) = &state.session {
            h.push(("Mcp-Session-Id".into(), session.clone()));
        }
        if let Some(version) = &state.protocol_version {
            h.push(("MCP-Protocol-Version".into(), version.clone()));
        }
    }
    h
}

async fn post(
    endpoint: Arc<Endpoint>,
    token: Option<String>,
    state: Arc<Mutex<State>>,
    writer: Writer,
    message: Value,
) {
    let id = message
        .get("id")
        .cloned()
        .filter(|_| message.get("method").is_some());
    let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    let headers = {
        let s = state.lock().unwrap_or_else(PoisonError::into_inner);
        headers_for(&message, token.as_deref(), &s)
    };
    let body = message.to_string().into_bytes();
    let fail = |text: String| {
        id.as_ref().map(
            |id| json!({"jsonrpc": "2.0", "id": id, "error": {"code": TRANSPORT_ERROR, "message": text}}),
        )
    };
    let mut response = match request(&endpoint, "POST", &headers, &body).await {
        Ok(r) => r,
        Err(e) => {
            deliver(
                &writer,
                fail(format!(
                    "HTTP request to {} failed: {e}",
                    endpoint.authority
                )),
                None,
            )
            .await;
            return;
        }
    };
    if is_initialize && let Some(session) = response.header("mcp-session-id") {
        state.lock().unwrap_or_else(PoisonError::into_inner).session = Some(session.to_owned());
    }
    let content_type = response
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    let status = response.status;
    let on_message = |m: &Value| {
        if is_initialize
            && let Some(v) = m.pointer("/result/protocolVersion").and_then(Value::as_str)
        {
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .protocol_version = Some(v.to_owned());
        }
    };
    if content_type.starts_with("text/event-stream") {
        let mut parser = SseParser::default();
        loop {
            match response.chunk().await {
                Ok(Some(bytes)) => match parser.feed(&bytes) {
                    Ok(events) => {
                        for data in events {
                            if let Ok(m) = serde_json::from_str::<Value>(&data) {
                                on_message(&m);
                                deliver(&writer, Some(m), id.as_ref()).await;
                            }
                        }
                    }
                    Err(e) => {
                        deliver(&writer, fail(e), None).await;
                        return;
                    }
                },
                Ok(None) => return,
                Err(e) => {
                    deliver(&writer, fail(format!("the event stream broke: {e}")), None).await;
                    return;
                }
            }
        }
    }
    let bytes = match response.bytes(MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            deliver(
                &writer,
                fail(format!("reading the response failed: {e}")),
                None,
            )
            .await;
            return;
        }
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Array(items)) => {
            for m in items {
                on_message(&m);
                deliver(&writer, Some(m), id.as_ref()).await;
            }
        }
        Ok(m) if m.is_object() => {
            on_message(&m);
            deliver(&writer, Some(m), id.as_ref()).await;
        }
        _ if (200..300).contains(&status) && bytes.is_empty() => {
            if id.is_some() {
                deliver(
                    &writer,
                    fail(format!("HTTP {status} without a response")),
                    None,
                )
                .await;
            }
        }
        _ => {
            let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
            deliver(
                &writer,
                fail(format!("HTTP {status}: {}", text.trim())),
                None,
            )
            .await;
        }
    }
}

/// Hands `message` to the client. An error without an id (as HTTP refusals carry) is given
/// the id of the request it answers.
async fn deliver(writer: &Writer, message: Option<Value>, request_id: Option<&Value>) {
    let Some(mut message) = message else { return };
    if let (Some(id), Some(obj)) = (request_id, message.as_object_mut())
        && obj.contains_key("error")
        && obj.get("id").is_none_or(Value::is_null)
    {
        obj.insert("id".into(), id.clone());
    }
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    let mut w = writer.lock().await;
    let _ = w.write_all(&line).await;
    let _ = w.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let e = parse_url("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (
                e.host.as_str(),
                e.port,
                e.path.as_str(),
                e.authority.as_str()
            ),
            ("127.0.0.1", 8080, "/mcp", "127.0.0.1:8080")
        );
        let e = parse_url("http://example.com").unwrap();
        assert_eq!((e.port, e.path.as_str()), (80, "/"));
        let e = parse_url("http://[::1]:9000/a/b?x=1#frag").unwrap();
        assert_eq!(
            (
                e.host.as_str(),
                e.port,
                e.path.as_str(),
                e.authority.as_str()
            ),
            ("::1", 9000, "/a/b?x=1", "[::1]:9000")
        );
        let e = parse_url("http://h?q").unwrap();
        assert_eq!(e.path, "/?q");
        assert!(
            parse_url("https://example.com/mcp")
                .unwrap_err()
                .contains("https")
        );
        for bad in [
            "ftp://x",
            "http://",
            "http://user@h/",
            "http://h:notaport/",
            "http://[::1/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sse_events_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(
            p.feed(b": comment\nevent: message\nid: 1\ndata: {\"a\":")
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            p.feed(b"1}\r\n\r\ndata: x\ndata: y\n\n").unwrap(),
            ["{\"a\":1}", "x\ny"]
        );
        assert!(p.feed(b"\n\n").unwrap().is_empty());
    }

    #[test]
    fn modern_headers_mirror_the_body() {
        let m = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "file_system.read", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let h = headers_for(&m, Some("tok"), &State::default());
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("MCP-Protocol-Version"), Some("2026-07-28"));
        assert_eq!(get("Mcp-Method"), Some("tools/call"));
        assert_eq!(get("Mcp-Name"), Some("file_system.read"));
        assert_eq!(get("Authorization"), Some("Bearer tok"));
        assert_eq!(get("Mcp-Session-Id"), None);
        let m = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "x://é", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let h = headers_for(&m, None, &State::default());
        assert!(
            h.iter()
                .any(|(k, v)| k == "Mcp-Name" && v.starts_with("=?base64?"))
        );
        let legacy = State {
            session: Some("s1".into()),
            protocol_version: Some("2025-11-25".into()),
        };
        let m = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
        let h = headers_for(&m, None, &legacy);
        assert!(h.contains(&("Mcp-Session-Id".into(), "s1".into())));
        assert!(h.contains(&("MCP-Protocol-Version".into(), "2025-11-25".into())));
    }

    async fn serve_once(reply: &'static [u8]) -> (Endpoint, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = vec![0u8; 4096];
            let n = s.read(&mut got).await.unwrap();
            got.truncate(n);
            s.write_all(reply).await.unwrap();
            s.shutdown().await.unwrap();
            got
        });
        (
            parse_url(&format!("http://127.0.0.1:{port}/mcp")).unwrap(),
            task,
        )
    }

    #[tokio::test]
    async fn chunked_and_length_bodies_are_read() {
        let (e, task) = serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\nTrailer: x\r\n\r\n").await;
        let mut r = request(&e, "POST", &[("X-Test".into(), "1".into())], b"{}")
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.bytes(1000).await.unwrap(), b"{\"a\":1}");
        let sent = String::from_utf8(task.await.unwrap()).unwrap();
        assert!(sent.starts_with("POST /mcp HTTP/1.1\r\n"), "{sent}");
        assert!(
            sent.contains("\r\nX-Test: 1\r\n") && sent.ends_with("\r\n\r\n{}"),
            "{sent}"
        );

        let (e, _) =
            serve_once(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\nnope!extra").await;
        let mut r = request(&e, "POST", &[], b"").await.unwrap();
        assert_eq!(r.status, 401);
        assert_eq!(r.bytes(1000).await.unwrap(), b"nope!");

        let (e, _) = serve_once(b"HTTP/1.1 200 OK\r\n\r\nuntil close").await;
        let mut r = request(&e, "POST", &[], b"").await.unwrap();
        assert_eq!(r.bytes(1000).await.unwrap(), b"until close");

        let (e, _) = serve_once(b"garbage\r\n\r\n").await;
        assert!(request(&e, "POST", &[], b"").await.is_err());
        assert!(
            request(&e, "POST", &[("Bad\r\nHeader".into(), "v".into())], b"")
                .await
                .is_err()
        );
    }
}
