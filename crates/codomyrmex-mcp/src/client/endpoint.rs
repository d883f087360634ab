//! Where an HTTP request goes ([`Endpoint`], [`parse_url`]) and the largest body read
//! ([`MAX_BODY`]): what the transport (`http.rs`), its connections (`http_io.rs`), its event
//! parser (`sse.rs`) and the OAuth URL rule (`oauth_https.rs`) share. Public through
//! [`http`](super::http).

/// The largest JSON body or SSE event accepted.
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// A parsed `http://` URL.
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
    /// `https://`: TLS on the connection.
    pub https: bool,
}

impl Endpoint {
    /// Whether the host is a loopback host (`127.0.0.0/8`, `::1`, `localhost`), whose traffic
    /// never leaves the machine: the one rule for where plain `http://` may carry a secret
    /// (OAuth's endpoints, a gateway upstream's bearer token).
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// Parses an `http://` or `https://` URL. A URL with userinfo (`user:password@host`) is
/// refused: credentials travel in a header (a bearer token, an `Authorization` header), never
/// in a URL that ends up in logs. An error never shows the URL's userinfo, query values or
/// fragment ([`redact_url`](crate::util::redact_url)).
pub fn parse_url(url: &str) -> Result<Endpoint, String> {
    let shown = || format!("{:?}", crate::util::redact_url(url));
    let (rest, https) = if let Some(r) = url.strip_prefix("http://") {
        (r, false)
    } else if let Some(r) = url.strip_prefix("https://") {
        (r, true)
    } else {
        return Err(format!("{} is not an http:// or https:// URL", shown()));
    };
    let default_port = if https { 443 } else { 80 };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_owned()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_owned()),
    };
    let path = path.split('#').next().unwrap_or("/").to_owned();
    if authority.contains('@') {
        return Err(format!(
            "{}: credentials in the URL (`user:password@`) are refused: give them as a \
             header (a bearer token, or an Authorization header) instead",
            shown()
        ));
    }
    if authority.is_empty() {
        return Err(format!("{}: expected http://HOST[:PORT]/PATH", shown()));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{}: unclosed IPv6 bracket", shown()))?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| format!("{}: bad port", shown()))?,
            None if after.is_empty() => default_port,
            None => return Err(format!("{}: bad authority", shown())),
        };
        (h.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (
                h.to_owned(),
                p.parse().map_err(|_| format!("{}: bad port", shown()))?,
            ),
            None => (authority.to_owned(), default_port),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{}: bad host", shown()));
    }
    Ok(Endpoint {
        host,
        port,
        path,
        authority: authority.to_owned(),
        https,
    })
}
