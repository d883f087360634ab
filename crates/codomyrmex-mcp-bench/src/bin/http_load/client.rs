//! The minimal HTTP/1.1 client the load runs on: one keep-alive connection (`TCP_NODELAY`),
//! requests out, responses in (JSON or SSE, `Content-Length` or chunked). It knows nothing of
//! MCP sessions or of what is measured.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

/// What an answer's head said.
#[derive(Debug, Default)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) session: Option<String>,
    sse: bool,
}

/// One keep-alive connection with its read buffer and the last answer's body.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) addr: SocketAddr,
    pub(crate) local: Option<Ipv4Addr>,
    host: String,
    buf: Vec<u8>,
    pub(crate) start: usize,
    end: usize,
    pub(crate) body: Vec<u8>,
    pub(crate) out: Vec<u8>,
}

fn io_error(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let last_start = haystack.len() - needle.len();
    let mut i = 0;
    while i <= last_start {
        let at = haystack[i..=last_start].iter().position(|&b| b == first)?;
        i += at;
        if &haystack[i..i + needle.len()] == needle {
            return Some(i);
        }
        i += 1;
    }
    None
}

impl Conn {
    pub(crate) async fn connect(
        addr: SocketAddr,
        local: Option<Ipv4Addr>,
    ) -> std::io::Result<Self> {
        let stream = match local {
            None => TcpStream::connect(addr).await?,
            Some(ip) => {
                let socket = TcpSocket::new_v4()?;
                socket.bind(SocketAddr::from((ip, 0)))?;
                socket.connect(addr).await?
            }
        };
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            addr,
            local,
            host: addr.to_string(),
            buf: vec![0; 16 * 1024],
            start: 0,
            end: 0,
            body: Vec::with_capacity(4096),
            out: Vec::with_capacity(1024),
        })
    }

    pub(crate) async fn reconnect(&mut self) -> std::io::Result<()> {
        *self = Self::connect(self.addr, self.local).await?;
        Ok(())
    }

    /// Writes a POST to `/mcp` with `body` (taken from `self.out` after `head_len` bytes of
    /// prepared extra headers, see [`Conn::post`]).
    pub(crate) async fn post(&mut self, extra_headers: &str, body: &[u8]) -> std::io::Result<Head> {
        self.out.clear();
        let _ = write!(
            self.out,
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n{extra_headers}\r\n",
            self.host,
            body.len()
        );
        self.out.extend_from_slice(body);
        self.stream.write_all(&self.out).await?;
        self.read_answer().await
    }

    pub(crate) async fn get(&mut self, path: &str) -> std::io::Result<Head> {
        self.out.clear();
        let _ = write!(
            self.out,
            "GET {path} HTTP/1.1\r\nhost: {}\r\naccept: application/json\r\n\r\n",
            self.host
        );
        self.stream.write_all(&self.out).await?;
        self.read_answer().await
    }

    /// Reads more bytes into the buffer.
    async fn fill(&mut self) -> std::io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < 4096 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Waits until `n` bytes are buffered.
    async fn need(&mut self, n: usize) -> std::io::Result<()> {
        while self.end - self.start < n {
            self.fill().await?;
        }
        Ok(())
    }

    /// The next CRLF-terminated line's length (without the CRLF), once buffered.
    pub(crate) async fn line(&mut self) -> std::io::Result<usize> {
        let mut searched = 0;
        loop {
            let window = &self.buf[self.start + searched..self.end];
            if let Some(at) = find(window, b"\r\n") {
                return Ok(searched + at);
            }
            searched = (self.end - self.start).saturating_sub(1);
            self.fill().await?;
        }
    }

    async fn read_answer(&mut self) -> std::io::Result<Head> {
        // The head.
        let mut searched = 0;
        let head_len = loop {
            let window = &self.buf[self.start + searched..self.end];
            if let Some(at) = find(window, b"\r\n\r\n") {
                break searched + at;
            }
            searched = (self.end - self.start).saturating_sub(3);
            if self.end - self.start > 64 * 1024 {
                return Err(io_error("an answer head over 64 KiB"));
            }
            self.fill().await?;
        };
        let head_bytes = &self.buf[self.start..self.start + head_len];
        let mut head = Head::default();
        let mut length = None;
        let mut chunked = false;
        let mut lines = head_bytes.split(|&b| b == b'\n');
        let status_line = lines.next().unwrap_or_default();
        head.status = std::str::from_utf8(status_line)
            .ok()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io_error("a bad status line"))?;
        for line in lines {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let name = &line[..colon];
            let value = std::str::from_utf8(&line[colon + 1..])
                .unwrap_or_default()
                .trim();
            if name.eq_ignore_ascii_case(b"content-length") {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| io_error("a bad content-length"))?,
                );
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case(b"content-type") {
                head.sse = value.starts_with("text/event-stream");
            } else if name.eq_ignore_ascii_case(b"mcp-session-id") {
                head.session = Some(value.to_owned());
            }
        }
        self.start += head_len + 4;
        // The body.
        self.body.clear();
        if chunked {
            loop {
                let n = self.line().await?;
                let size_text = std::str::from_utf8(&self.buf[self.start..self.start + n])
                    .unwrap_or_default()
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let size = usize::from_str_radix(&size_text, 16)
                    .map_err(|_| io_error(format!("a bad chunk size {size_text:?}")))?;
                self.start += n + 2;
                if size == 0 {
                    // Trailers, up to an empty line.
                    loop {
                        let n = self.line().await?;
                        self.start += n + 2;
                        if n == 0 {
                            break;
                        }
                    }
                    break;
                }
                self.need(size + 2).await?;
                self.body
                    .extend_from_slice(&self.buf[self.start..self.start + size]);
                self.start += size + 2;
            }
        } else if let Some(n) = length {
            self.need(n).await?;
            self.body
                .extend_from_slice(&self.buf[self.start..self.start + n]);
            self.start += n;
        } else if !matches!(head.status, 100..=199 | 202 | 204 | 304) {
            return Err(io_error(format!(
                "HTTP {} with a body of unknown length",
                head.status
            )));
        }
        Ok(head)
    }
}

/// The JSON-RPC response with `id` in an answer: the body, or a `data:` event of a stream.
pub(crate) fn response_of(head: &Head, body: &[u8], id: &Value) -> Option<Value> {
    if !head.sse {
        return serde_json::from_slice(body).ok();
    }
    codomyrmex_mcp_bench::util::sse_json(body)
        .into_iter()
        .find(|v| &v["id"] == id && (v.get("result").is_some() || v.get("error").is_some()))
}
