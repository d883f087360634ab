//! The HTTP the OAuth flow and its extensions share ([`Fetch`], [`Fetched`], form encoding,
//! splitting a URL, the clock in seconds): below `oauth.rs`, `oauth_grants.rs`,
//! `oauth_https.rs` and `dpop.rs`, which all use it, so none of them uses another's way back.
//! Public through [`oauth`](super::oauth).

use std::sync::Arc;

use crate::platform::BoxFuture;

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Splits `http://host:port/path?q` into origin and path (without the query).
pub fn split_url(url: &str) -> Option<(String, String)> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let path_start = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let origin = url[..scheme_end + path_start].to_owned();
    let path = rest[path_start..]
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .to_owned();
    Some((origin, path))
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn form_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A form body from pairs.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// An HTTP answer: status, `Location`, body.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The status code.
    pub status: u16,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The `DPoP-Nonce` header, if any.
    pub dpop_nonce: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// The HTTP the flow needs: method, URL, headers, body. Never follows redirects.
pub type Fetch = Arc<
    dyn Fn(
            &'static str,
            String,
            Vec<(String, String)>,
            Vec<u8>,
        ) -> BoxFuture<'static, Result<Fetched, String>>
        + Send
        + Sync,
>;

/// HTTP headers, as name and value.
pub(crate) type Headers = Vec<(String, String)>;
