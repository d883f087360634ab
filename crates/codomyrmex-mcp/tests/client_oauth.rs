//! `McpClient`'s OAuth against a local fake resource and authorization server
//! (`oauth_fake`): refresh on a `401`, refresh before expiry, `offline_access`, and the
//! loopback redirect listener with a browser stand-in, and an `https://` resource whose
//! authorization server is reached over `https://` or loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod oauth_fake;
mod tls_fake;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::oauth::OAuthConfig;
use codomyrmex_mcp::client::oauth_loopback::LoopbackRedirect;
use codomyrmex_mcp::client::{ClientOptions, EraPreference};
use oauth_fake::{Fake, serve, start};
use tokio::net::TcpListener;

const HANG: Duration = Duration::from_secs(30);

async fn connect(url: &str) -> McpClient {
    let oauth = OAuthConfig::new("http://127.0.0.1:1/callback");
    let c = McpClient::connect_http_oauth(HttpTarget::new(url), oauth, ClientOptions::default())
        .unwrap();
    tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
        .await
        .unwrap()
        .unwrap();
    c
}

#[tokio::test]
async fn a_refused_token_is_refreshed_not_authorized_again() {
    let (url, fake) = start(3600, true).await;
    let c = connect(&url).await;
    // The resource stops accepting the first access token (revoked, or expired early).
    fake.lock().unwrap().valid.remove("access-1");
    tokio::time::timeout(HANG, c.ping()).await.unwrap().unwrap();
    {
        let f = fake.lock().unwrap();
        assert_eq!(
            f.authorizations.len(),
            1,
            "one authorization, then a refresh"
        );
        assert_eq!(f.grants, ["authorization_code", "refresh_token"]);
        assert_eq!(f.bearers.last().unwrap().as_deref(), Some("access-2"));
    }
    c.close(HANG).await;
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    // Tokens from the code grant expire in 30 s, within the refresh margin.
    let (url, fake) = start(30, true).await;
    let c = connect(&url).await;
    tokio::time::timeout(HANG, c.ping()).await.unwrap().unwrap();
    {
        let f = fake.lock().unwrap();
        assert_eq!(f.grants, ["authorization_code", "refresh_token"]);
        assert!(
            !f.bearers.iter().any(|b| b.as_deref() == Some("access-1")),
            "the expiring token was never sent: {:?}",
            f.bearers
        );
        // Only the first request, with no token at all, was refused.
        assert_eq!(f.bearers.iter().filter(|b| b.is_none()).count(), 1);
    }
    c.close(HANG).await;
}

#[tokio::test]
async fn offline_access_is_asked_for_when_the_server_offers_it() {
    for (offers, want) in [(true, "mcp offline_access"), (false, "mcp")] {
        let (url, fake) = start(3600, offers).await;
        let c = connect(&url).await;
        assert_eq!(
            fake.lock().unwrap().authorizations,
            [Some(want.to_owned())],
            "offers offline_access: {offers}"
        );
        c.close(HANG).await;
    }
}

/// A browser stand-in: follows the authorization URL's redirect to the loopback listener,
/// after a stray request to the callback with another state (which must not end the wait).
async fn browse(url: String, redirect_uri: String) {
    let get = |url: String| async move {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
        let req = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        tokio::io::AsyncWriteExt::write_all(&mut s, req.as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut s, &mut out)
            .await
            .unwrap();
        out
    };
    let stray = get(format!("{redirect_uri}?code=evil&state=not-yours")).await;
    assert!(stray.starts_with("HTTP/1.1 400"), "{stray}");
    let answer = get(url).await;
    let location = answer
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap()
        .to_owned();
    let page = get(location).await;
    assert!(page.contains("you can close this window"), "{page}");
}

#[tokio::test]
async fn the_loopback_listener_receives_the_code_from_the_browser() {
    let (url, fake) = start(3600, false).await;
    let loopback = LoopbackRedirect::bind().unwrap();
    let redirect_uri = loopback.redirect_uri().to_owned();
    assert!(
        redirect_uri.starts_with("http://127.0.0.1:"),
        "{redirect_uri}"
    );
    let (shown_tx, mut shown_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut oauth = OAuthConfig::new(redirect_uri.clone());
    oauth.user_agent = Some(loopback.user_agent(
        move |url| {
            let _ = shown_tx.send(url.to_owned());
        },
        HANG,
    ));
    let c = McpClient::connect_http_oauth(HttpTarget::new(&url), oauth, ClientOptions::default())
        .unwrap();
    let browser = tokio::spawn(async move {
        let shown = shown_rx.recv().await.unwrap();
        browse(shown, redirect_uri).await;
    });
    tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
        .await
        .unwrap()
        .unwrap();
    browser.await.unwrap();
    let tools = c.list_tools().await.unwrap();
    assert_eq!(tools[0]["name"], "fake-tool");
    assert_eq!(fake.lock().unwrap().grants, ["authorization_code"]);
    c.close(HANG).await;
}

/// A loopback listener, and its base URL with `host` for its name.
async fn listener(scheme: &str, host: &str) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, format!("{scheme}://{host}:{port}"))
}

/// Serves `fake` over TLS (the test certificate for `localhost`).
fn serve_tls(listener: TcpListener, fake: Arc<Mutex<Fake>>) {
    let acceptor = tls_fake::acceptor();
    serve(listener, fake, move |s| {
        let acceptor = acceptor.clone();
        async move { acceptor.accept(s).await.ok() }
    });
}

/// A client of `base/mcp` trusting the test CA, with a pre-registered id and secret
/// (`client_secret_basic`).
fn client_with_secret(base: &str) -> McpClient {
    let mut oauth = OAuthConfig::new("http://127.0.0.1:1/callback");
    oauth.client_id = Some("client-1".into());
    oauth.client_secret = Some("secret-1".into());
    let mut target = HttpTarget::new(format!("{base}/mcp"));
    target.ca_file = Some(tls_fake::fixture("ca.pem"));
    McpClient::connect_http_oauth(target, oauth, ClientOptions::default()).unwrap()
}

/// MCP authorization, "Communication Security": authorization server endpoints are served
/// over HTTPS. An `https://` resource naming a plain `http://` authorization server that is
/// not loopback is refused before anything (metadata, authorization, the token request with
/// the client secret) is sent to it. `0.0.0.0` is not a loopback address, yet on Linux it
/// reaches this machine's loopback listener, so the fake sees what a remote server would.
#[tokio::test]
async fn an_https_resource_never_sends_a_secret_to_a_plain_http_authorization_server() {
    let (as_listener, issuer) = listener("http", "0.0.0.0").await;
    let auth_server = Arc::new(Mutex::new(Fake {
        base: issuer.clone(),
        code_expires_in: 3600,
        auth_methods: Some(vec!["client_secret_basic"]),
        ..Fake::default()
    }));
    serve(as_listener, auth_server.clone(), |s| async move { Some(s) });
    let (resource_listener, base) = listener("https", "localhost").await;
    let resource = Arc::new(Mutex::new(Fake {
        base: base.clone(),
        issuer: Some(issuer.clone()),
        ..Fake::default()
    }));
    serve_tls(resource_listener, resource.clone());
    let c = client_with_secret(&base);
    let e = tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
        .await
        .unwrap()
        .unwrap_err()
        .to_string();
    let f = auth_server.lock().unwrap();
    assert!(
        f.grants.is_empty() && f.token_authorization.is_empty(),
        "the token request reached the plain http server: {:?}",
        f.token_authorization
    );
    assert!(f.requests.is_empty(), "{:?}", f.requests);
    assert!(e.contains(&issuer) && e.contains("https"), "{e}");
    // The resource was asked for its metadata.
    let seen = resource.lock().unwrap().requests.clone();
    assert!(
        seen.iter().any(|r| r.contains("oauth-protected-resource")),
        "{seen:?}"
    );
}

/// The same, with the authorization server on plain `http://` to a loopback address:
/// allowed (its traffic never leaves the machine), and the flow completes.
#[tokio::test]
async fn an_https_resource_may_use_a_loopback_authorization_server() {
    let (as_listener, issuer) = listener("http", "127.0.0.1").await;
    let (resource_listener, base) = listener("https", "localhost").await;
    // One fake behind both listeners: the tokens the server issues are the resource's.
    let fake = Arc::new(Mutex::new(Fake {
        base: base.clone(),
        issuer: Some(issuer),
        code_expires_in: 3600,
        auth_methods: Some(vec!["client_secret_basic"]),
        ..Fake::default()
    }));
    serve(as_listener, fake.clone(), |s| async move { Some(s) });
    serve_tls(resource_listener, fake.clone());
    let c = client_with_secret(&base);
    tokio::time::timeout(HANG, c.negotiate(EraPreference::Legacy, HANG))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.list_tools().await.unwrap()[0]["name"], "fake-tool");
    {
        let f = fake.lock().unwrap();
        assert_eq!(f.grants, ["authorization_code"]);
        assert!(
            f.token_authorization[0]
                .as_deref()
                .is_some_and(|a| a.starts_with("Basic ")),
            "{:?}",
            f.token_authorization
        );
    }
    c.close(HANG).await;
}
