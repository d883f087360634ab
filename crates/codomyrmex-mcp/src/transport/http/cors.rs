//! CORS for browser clients: off unless origins are configured; explicit origins only.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// Why a CORS origin was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid CORS origin {0:?}: give explicit origins such as https://app.example.com (no wildcard, no path)"
)]
pub struct CorsOriginError(pub String);

/// Checks that `origin` is an explicit `scheme://host[:port]` origin with no wildcard.
pub fn check_origin(origin: &str) -> Result<(), CorsOriginError> {
    let bad = || CorsOriginError(origin.to_owned());
    if origin.contains('*') || origin.eq_ignore_ascii_case("null") {
        return Err(bad());
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err(bad());
    };
    if !matches!(scheme, "http" | "https")
        || rest.is_empty()
        || rest.contains(['/', '?', '#', '@', ' '])
        || HeaderValue::from_str(origin).is_err()
    {
        return Err(bad());
    }
    Ok(())
}

/// A CORS layer allowing `origins` (checked with [`check_origin`]) to call the MCP endpoint:
/// GET, POST and DELETE with any request header (the MCP headers include the open-ended
/// `Mcp-Param-*` family), exposing `Mcp-Session-Id`, `MCP-Protocol-Version`,
/// `WWW-Authenticate` and `Retry-After`. No credentials (cookies) are allowed: MCP clients
/// authenticate with the `Authorization` header.
pub fn cors_layer(origins: &[String]) -> Result<CorsLayer, CorsOriginError> {
    let mut values = Vec::with_capacity(origins.len());
    for o in origins {
        check_origin(o)?;
        let v = HeaderValue::from_str(&o.to_ascii_lowercase())
            .map_err(|_| CorsOriginError(o.clone()))?;
        values.push(v);
    }
    Ok(CorsLayer::new()
        .allow_origin(AllowOrigin::list(values))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("mcp-protocol-version"),
            header::WWW_AUTHENTICATE,
            header::RETRY_AFTER,
        ])
        .max_age(Duration::from_secs(600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_non_origins_are_refused() {
        for bad in [
            "*",
            "https://*.example.com",
            "null",
            "example.com",
            "https://example.com/path",
            "ftp://example.com",
            "https://",
        ] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
        for good in ["https://app.example.com", "http://localhost:5173"] {
            assert!(check_origin(good).is_ok(), "{good}");
        }
        assert!(cors_layer(&["*".to_owned()]).is_err());
    }
}
