//! `gateway status --url URL`: a running gateway's `GET /status` (served with `--http`,
//! behind the same authentication as `/metrics`), printed as a table or as its JSON.
//!
//! Plain HTTP only (the gateway serves no TLS of its own; put `status` next to it, or ask
//! the proxy in front); the answer is read up to [`MAX_STATUS_BYTES`].

use std::process::ExitCode;
use std::time::Duration;

use codomyrmex_mcp::driver;
use codomyrmex_mcp::runtime::TOKIO;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::cli::GatewayStatusArgs;

/// The largest answer read.
const MAX_STATUS_BYTES: u64 = 1024 * 1024;
/// The longest the whole exchange may take.
const STATUS_WAIT: Duration = Duration::from_secs(10);

/// Runs `gateway status`.
pub async fn run(args: &GatewayStatusArgs) -> ExitCode {
    let answer = driver::within(&TOKIO, STATUS_WAIT, fetch(args)).await;
    let doc = match answer {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            eprintln!("codomyrmex-mcp: gateway status: {e}");
            return ExitCode::FAILURE;
        }
        Err(_) => {
            eprintln!(
                "codomyrmex-mcp: gateway status: no answer within {} s",
                STATUS_WAIT.as_secs()
            );
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        crate::emit(&format!("{doc:#}\n"));
    } else {
        crate::emit(&codomyrmex_mcp::util::inert_text(&render(&doc)));
    }
    ExitCode::SUCCESS
}

/// `GET /status` of the gateway at `args.url`, parsed.
async fn fetch(args: &GatewayStatusArgs) -> Result<Value, String> {
    let shown = codomyrmex_mcp::util::redact_url(&args.url);
    let rest = args
        .url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{shown}: only http:// URLs are supported"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("{shown}: give http://HOST:PORT"));
    }
    let address = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let mut stream = tokio::net::TcpStream::connect(&address)
        .await
        .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
    let mut request = format!(
        "GET /status HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(token) = args.auth_token.as_deref().filter(|t| !t.is_empty()) {
        if token.bytes().any(|b| b.is_ascii_control()) {
            return Err("the token holds control characters".into());
        }
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    request.push_str("\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("{shown}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .take(MAX_STATUS_BYTES)
        .read_to_end(&mut raw)
        .await
        .map_err(|e| format!("{shown}: {e}"))?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{shown}: not an HTTP answer"))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status_line = head.lines().next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    match code {
        "200" => {}
        "401" | "403" => {
            return Err(format!(
                "{shown} refused the request ({code}): give the gateway's token \
                 (--auth-token or CODOMYRMEX_MCP_AUTH_TOKEN)"
            ));
        }
        "404" => {
            return Err(format!(
                "{shown} has no /status (is it a gateway served with --http, and /health on?)"
            ));
        }
        other => return Err(format!("{shown} answered {other:?}")),
    }
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().replace(' ', "") == "transfer-encoding:chunked");
    let body = &raw[split + 4..];
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    serde_json::from_slice(&body).map_err(|e| format!("{shown}: the status is not JSON: {e}"))
}

/// The body of a chunked answer.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || "a malformed chunked answer".to_owned();
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
        let size_text = std::str::from_utf8(&body[..line_end]).map_err(|_| bad())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad())?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = body.get(..size).ok_or_else(bad)?;
        out.extend_from_slice(chunk);
        body = body.get(size + 2..).ok_or_else(bad)?;
    }
}

/// The status as a table: one line per upstream, then the generation.
fn render(doc: &Value) -> String {
    let mut out = String::new();
    let text = |v: &Value| match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    out.push_str(&format!(
        "{:<20} {:<11} {:<11} {:>6} {:>9}  last error\n",
        "upstream", "state", "era", "tools", "restarts"
    ));
    for u in doc["upstreams"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        out.push_str(&format!(
            "{:<20} {:<11} {:<11} {:>6} {:>9}  {}\n",
            text(&u["name"]),
            text(&u["state"]),
            text(&u["era"]),
            text(&u["tools"]),
            text(&u["restarts"]),
            text(&u["last_error"]),
        ));
    }
    out.push_str(&format!(
        "config generation {}; {} calls in flight; {} sessions\n",
        text(&doc["config_generation"]),
        text(&doc["callsInFlight"]),
        text(&doc["sessions"]),
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"5\r\nab").is_err());
    }
}
