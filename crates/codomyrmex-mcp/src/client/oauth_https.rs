//! The one transport rule of the OAuth flow (MCP authorization, "Communication Security";
//! OAuth 2.1 section 1.5): every authorization server URL the client uses (its metadata,
//! `authorization_endpoint`, `token_endpoint`, `registration_endpoint`, `jwks_uri`,
//! `revocation_endpoint` and the other endpoints its metadata lists, an enterprise IdP's
//! token endpoint), and the protected resource metadata of an `https://` resource, must be
//! `https://`; plain `http://` only to a loopback host (`127.0.0.0/8`, `::1`, `localhost`),
//! whose traffic never leaves the machine. Checked before the URL is fetched or handed to a
//! user agent, so a client secret, code or refresh token never travels in clear.

use super::endpoint::parse_url;
use super::oauth_fetch::split_url;

/// The endpoints of authorization server metadata (RFC 8414 section 2, OpenID Connect
/// Discovery) checked when the metadata is read, whether or not the flow uses them.
pub(crate) const METADATA_ENDPOINTS: [&str; 10] = [
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "jwks_uri",
    "revocation_endpoint",
    "introspection_endpoint",
    "userinfo_endpoint",
    "device_authorization_endpoint",
    "pushed_authorization_request_endpoint",
    "end_session_endpoint",
];

/// `url` without its query, fragment or user information, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match split_url(url) {
        Some((origin, path)) => {
            let origin = match origin.split_once("://") {
                Some((scheme, rest)) => {
                    format!("{scheme}://{}", rest.rsplit('@').next().unwrap_or(rest))
                }
                None => origin,
            };
            format!("{origin}{path}")
        }
        None => url.split(['?', '#']).next().unwrap_or("").to_owned(),
    }
}

/// `Ok` when `url` is `https://`, or `http://` to a loopback host; otherwise an error naming
/// `what`, the URL (without its query) and the rule.
pub(crate) fn require_https(url: &str, what: &str) -> Result<(), String> {
    match parse_url(url) {
        Ok(e) if e.https || e.is_loopback() => Ok(()),
        Ok(_) => Err(format!(
            "refused the {what} {}: OAuth authorization servers must be reached over https \
             (plain http only to a loopback host: 127.0.0.0/8, ::1, localhost)",
            redacted(url)
        )),
        Err(_) => Err(format!(
            "refused the {what} {}: not an https:// URL",
            redacted(url)
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn https_everywhere_and_plain_http_only_on_loopback() {
        for ok in [
            "https://as.example/token",
            "https://as.example:8443/t?x=1",
            "http://127.0.0.1:9/token",
            "http://127.3.4.5/token",
            "http://[::1]:8080/token",
            "http://localhost/token",
            "http://LOCALHOST:1/token",
        ] {
            assert!(require_https(ok, "token endpoint").is_ok(), "{ok}");
        }
        for bad in [
            "http://as.example/token",
            "http://10.0.0.1/token",
            "http://0.0.0.0:9/token",
            "http://[::ffff:127.0.0.1]/token",
            "http://localhost.as.example/token",
            "http://127.0.0.1.as.example/token",
            "ftp://as.example/token",
            "HTTP://as.example/token",
            "as.example/token",
        ] {
            assert!(require_https(bad, "token endpoint").is_err(), "{bad}");
        }
    }

    #[test]
    fn the_error_names_the_url_without_its_query_and_the_rule() {
        let e = require_https("http://as.example/token?secret=1#f", "token endpoint").unwrap_err();
        assert!(e.contains("token endpoint http://as.example/token:"), "{e}");
        assert!(e.contains("https"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let e = require_https("ftp://u:pw@as.example/x?secret", "issuer").unwrap_err();
        assert!(!e.contains("pw") && !e.contains("secret"), "{e}");
    }
}
