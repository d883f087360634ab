//! Security rules over real sockets, each tried with an attacker's request: DNS rebinding
//! (Host/Origin), static bearer tokens, JWT access tokens (missing, expired, badly signed,
//! wrong audience or issuer, insufficient scope), protected-resource metadata, health access,
//! the non-loopback bind rule and CORS.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::net::SocketAddr;

use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{
    AuthConfig, HealthAccess, HttpConfig, HttpError, HttpServer, Jwks, JwtConfig,
};
use codomyrmex_mcp::{McpServerConfig, McpToolRegistry};
use http_support::*;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.test";
const SCOPE: &str = "mcp:tools";

/// An Ed25519 signing key made here, and its public JWK with `kid`.
fn ed25519_key(kid: &str) -> (EncodingKey, Jwk) {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    // PKCS#8 v1 wrapping of an Ed25519 seed (RFC 8410).
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let key = EncodingKey::from_ed_der(&der);
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::EdDSA).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    (key, jwk)
}

struct Keys {
    good: EncodingKey,
    /// Another key, claiming the trusted key's id.
    forged: EncodingKey,
    jwks: Jwks,
}

fn keys() -> Keys {
    let (good, jwk) = ed25519_key("k1");
    let (forged, _) = ed25519_key("k1");
    let set = JwkSet { keys: vec![jwk] };
    let jwks = Jwks::from_json(&serde_json::to_string(&set).unwrap()).unwrap();
    Keys { good, forged, jwks }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn token(key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("k1".into());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn claims(aud: &str) -> Value {
    json!({
        "iss": ISSUER,
        "aud": aud,
        "sub": "alice",
        "exp": now() + 600,
        "iat": now(),
        "scope": format!("{SCOPE} other"),
    })
}

/// A server that validates JWTs for its own canonical URL (and accepts a static token).
async fn jwt_server(keys: &Keys) -> (TestServer, String) {
    // The canonical URL is what a reverse proxy would publish; it need not be the bound port.
    let resource = "http://mcp.example.test/mcp".to_owned();
    let mut jwt = JwtConfig::new(keys.jwks.clone(), ISSUER);
    jwt.required_scopes = vec![SCOPE.to_owned()];
    let mut auth = AuthConfig::jwt(jwt, resource.clone());
    auth.static_tokens
        .push(codomyrmex_mcp::transport::http::StaticToken::new(
            "ops",
            "static-secret",
        ));
    let cfg = HttpConfig {
        auth: Some(auth),
        ..config()
    };
    (start(cfg).await, resource)
}

fn bearer(req: Req, token: &str) -> Req {
    req.header("authorization", format!("Bearer {token}"))
}

fn list() -> Req {
    modern("tools/list", 1, json!({}))
}

#[tokio::test]
async fn wrong_host_is_forbidden() {
    let s = start(config()).await;
    for host in ["evil.example", "localhost.evil.example", "127.0.0.1:1"] {
        let r = s.send(&list().header("host", host)).await;
        assert_eq!(r.status, 403, "{host}");
        assert_eq!(r.error_code(), -32600);
        assert!(r.json()["id"].is_null());
    }
    // Allowed hosts can be added.
    let cfg = HttpConfig {
        allowed_hosts: vec!["mcp.internal".into()],
        ..config()
    };
    let s2 = start(cfg).await;
    assert_eq!(
        s2.send(&list().header("host", "mcp.internal")).await.status,
        200
    );
    assert_eq!(s2.send(&list()).await.status, 200);
    s.stop().await;
    s2.stop().await;
}

/// RFC 9112 section 3.2: a request with more than one `Host` is answered `400`, whichever
/// comes first; an absolute-form target's authority is the request's host (section 3.2.2),
/// checked against the allowed hosts as `Host` is, whatever `Host` says.
#[tokio::test]
async fn two_hosts_or_a_foreign_absolute_target_are_refused() {
    let s = start(config()).await;
    let own = s.host();
    for second in [own.as_str(), "evil.example"] {
        let r = s
            .send(&list().header("host", own.clone()).header("host", second))
            .await;
        assert_eq!(r.status, 400, "{second}");
        assert_eq!(r.error_code(), -32600);
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("more than one Host"), "{message}");
    }
    let mut foreign = list().header("host", own.clone());
    foreign.path = "http://other.example/mcp".into();
    let r = s.send(&foreign).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.error_code(), -32600);
    // An absolute-form target naming this server is served.
    let mut own_target = list().header("host", own.clone());
    own_target.path = format!("http://{own}/mcp");
    assert_eq!(s.send(&own_target).await.status, 200);
    s.stop().await;
}

#[tokio::test]
async fn foreign_origin_is_forbidden() {
    let s = start(config()).await;
    let r = s
        .send(&list().header("origin", "https://evil.example"))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.error_code(), -32600);
    let r = s.send(&list().header("origin", "null")).await;
    assert_eq!(r.status, 403);
    let own = format!("http://localhost:{}", s.addr.port());
    assert_eq!(s.send(&list().header("origin", own)).await.status, 200);
    s.stop().await;
}

#[tokio::test]
async fn the_host_and_origin_rules_cover_every_path() {
    // The policy layers wrap the whole router, so a path with no route is refused by them
    // before it is found missing.
    let s = start(config()).await;
    let r = s
        .send(&Req::new("GET", "/no-such-path").header("host", "evil.example"))
        .await;
    assert_eq!(r.status, 403);
    let r = s
        .send(&Req::new("GET", "/no-such-path").header("origin", "https://evil.example"))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(s.send(&Req::new("GET", "/no-such-path")).await.status, 404);
    s.stop().await;
}

#[tokio::test]
async fn static_token_is_required_and_reaches_tools() {
    let cfg = HttpConfig {
        auth: Some(AuthConfig::static_token("operator", "correct-horse")),
        ..config()
    };
    let s = start(cfg).await;
    let r = s.send(&list()).await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    assert_eq!(r.error_code(), -32600);
    for bad in ["correct-hors", "correct-horse2", "CORRECT-HORSE", ""] {
        let r = s.send(&bearer(list(), bad)).await;
        assert_eq!(r.status, 401, "{bad:?}");
    }
    let r = s
        .send(&list().header("authorization", "Basic Y29ycmVjdC1ob3JzZQ=="))
        .await;
    assert_eq!(r.status, 401);
    let r = s.send(&bearer(list(), "correct-horse")).await;
    assert_eq!(r.status, 200);
    let call = modern("tools/call", 2, json!({"name": "whoami", "arguments": {}}));
    let r = s.send(&bearer(call, "correct-horse")).await;
    assert_eq!(
        r.json()["result"]["structuredContent"]["subject"],
        "operator"
    );
    s.stop().await;
}

#[tokio::test]
async fn missing_token_gets_401_with_resource_metadata() {
    let k = keys();
    let (s, _) = jwt_server(&k).await;
    let r = s.send(&list()).await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"http://mcp.example.test/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
    assert!(
        !challenge.contains("error="),
        "no error code without credentials"
    );
    assert_eq!(r.error_code(), -32600);
    s.stop().await;
}

#[tokio::test]
async fn valid_jwt_is_accepted_and_its_principal_reaches_tools() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    let t = token(&k.good, &claims(&resource));
    let r = s.send(&bearer(list(), &t)).await;
    assert_eq!(r.status, 200);
    let call = modern("tools/call", 2, json!({"name": "whoami", "arguments": {}}));
    let r = s.send(&bearer(call, &t)).await;
    let who = &r.json()["result"]["structuredContent"];
    assert_eq!(who["subject"], "alice");
    assert_eq!(who["scopes"], json!([SCOPE, "other"]));
    // The static token works alongside.
    assert_eq!(s.send(&bearer(list(), "static-secret")).await.status, 200);
    s.stop().await;
}

async fn assert_invalid_token(s: &TestServer, token: &str, what: &str) {
    let r = s.send(&bearer(list(), token)).await;
    assert_eq!(r.status, 401, "{what}");
    let challenge = r.header("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    assert_eq!(r.error_code(), -32600);
}

#[tokio::test]
async fn expired_token_is_refused() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    let mut c = claims(&resource);
    c["exp"] = json!(now() - 3600);
    assert_invalid_token(&s, &token(&k.good, &c), "expired").await;
    s.stop().await;
}

#[tokio::test]
async fn wrong_signature_is_refused() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    assert_invalid_token(&s, &token(&k.forged, &claims(&resource)), "forged").await;
    // A token whose payload was altered after signing.
    let t = token(&k.good, &claims(&resource));
    let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
    let mut c = claims(&resource);
    c["sub"] = json!("mallory");
    parts[1] = base64_url(&serde_json::to_vec(&c).unwrap());
    assert_invalid_token(&s, &parts.join("."), "tampered").await;
    // An unsigned token.
    let none_header = base64_url(br#"{"alg":"none","typ":"JWT"}"#);
    let unsigned = format!("{none_header}.{}.", parts[1]);
    assert_invalid_token(&s, &unsigned, "alg none").await;
    s.stop().await;
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn wrong_audience_or_issuer_is_refused() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    let c = claims("https://other-server.example/mcp");
    assert_invalid_token(&s, &token(&k.good, &c), "wrong audience").await;
    let mut c = claims(&resource);
    c.as_object_mut().unwrap().remove("aud");
    assert_invalid_token(&s, &token(&k.good, &c), "no audience").await;
    let mut c = claims(&resource);
    c["iss"] = json!("https://evil-issuer.example");
    assert_invalid_token(&s, &token(&k.good, &c), "wrong issuer").await;
    s.stop().await;
}

#[tokio::test]
async fn insufficient_scope_gets_403() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    let mut c = claims(&resource);
    c["scope"] = json!("other");
    let r = s.send(&bearer(list(), &token(&k.good, &c))).await;
    assert_eq!(r.status, 403);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains(&format!("scope=\"{SCOPE}\"")),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    assert_eq!(r.error_code(), -32600);
    s.stop().await;
}

#[tokio::test]
async fn protected_resource_metadata_is_public() {
    let k = keys();
    let (s, resource) = jwt_server(&k).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = s.send(&Req::new("GET", path)).await;
        assert_eq!(r.status, 200, "{path}");
        let v = r.json();
        assert_eq!(v["resource"], resource.as_str());
        assert_eq!(v["authorization_servers"], json!([ISSUER]));
        assert_eq!(v["scopes_supported"], json!([SCOPE]));
        assert_eq!(v["bearer_methods_supported"], json!(["header"]));
    }
    // Other well-known paths are not a way around authentication.
    let r = s.send(&Req::new("GET", "/.well-known/other")).await;
    assert_eq!(r.status, 401);
    s.stop().await;
}

#[tokio::test]
async fn health_needs_authentication_unless_public() {
    let cfg = HttpConfig {
        auth: Some(AuthConfig::static_token("op", "tkn")),
        ..config()
    };
    let s = start(cfg.clone()).await;
    assert_eq!(s.send(&Req::new("GET", "/health")).await.status, 401);
    assert_eq!(
        s.send(&bearer(Req::new("GET", "/health"), "tkn"))
            .await
            .status,
        200
    );
    let public = start(HttpConfig {
        health: HealthAccess::Public,
        ..cfg
    })
    .await;
    assert_eq!(public.send(&Req::new("GET", "/health")).await.status, 200);
    assert_eq!(
        public.send(&list()).await.status,
        401,
        "only health is public"
    );
    s.stop().await;
    public.stop().await;
}

fn server(config: HttpConfig) -> HttpServer {
    let engine = Engine::new(
        McpServerConfig::new("t", "0"),
        std::sync::Arc::new(McpToolRegistry::new()),
    );
    HttpServer::new(engine, config)
}

#[test]
fn non_loopback_bind_needs_authentication() {
    let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
    let err = server(HttpConfig {
        bind: public,
        ..HttpConfig::default()
    })
    .validate()
    .unwrap_err();
    assert!(matches!(err, HttpError::UnauthenticatedPublicBind(_)));
    assert!(err.to_string().contains("without authentication"), "{err}");
    let ok = server(HttpConfig {
        bind: public,
        auth: Some(AuthConfig::static_token("op", "t")),
        ..HttpConfig::default()
    })
    .validate();
    assert!(ok.is_ok(), "{ok:?}");
    assert!(server(HttpConfig::default()).validate().is_ok());
    let v6: SocketAddr = "[::1]:8080".parse().unwrap();
    assert!(
        server(HttpConfig {
            bind: v6,
            ..HttpConfig::default()
        })
        .validate()
        .is_ok()
    );
}

#[test]
fn wildcards_are_refused() {
    for cfg in [
        HttpConfig {
            cors_origins: vec!["*".into()],
            ..HttpConfig::default()
        },
        HttpConfig {
            cors_origins: vec!["https://*.example.com".into()],
            ..HttpConfig::default()
        },
        HttpConfig {
            allowed_hosts: vec!["*".into()],
            ..HttpConfig::default()
        },
        HttpConfig {
            allowed_origins: vec!["https://*".into()],
            ..HttpConfig::default()
        },
    ] {
        assert!(server(cfg.clone()).validate().is_err(), "{cfg:?}");
    }
}

#[tokio::test]
async fn cors_is_off_by_default() {
    let s = start(config()).await;
    let origin = format!("http://localhost:{}", s.addr.port());
    let r = s
        .send(
            &Req::new("OPTIONS", "/mcp")
                .header("origin", &origin)
                .header("access-control-request-method", "POST"),
        )
        .await;
    assert!(r.header("access-control-allow-origin").is_none());
    let r = s.send(&list().header("origin", &origin)).await;
    assert_eq!(r.status, 200);
    assert!(r.header("access-control-allow-origin").is_none());
    s.stop().await;
}

#[tokio::test]
async fn cors_allows_explicit_origins_only() {
    let app = "https://app.example.test";
    let cfg = HttpConfig {
        cors_origins: vec![app.into()],
        auth: Some(AuthConfig::static_token("op", "tkn")),
        ..config()
    };
    let s = start(cfg).await;
    // A preflight needs no token.
    let r = s
        .send(
            &Req::new("OPTIONS", "/mcp")
                .header("origin", app)
                .header("access-control-request-method", "POST")
                .header(
                    "access-control-request-headers",
                    "authorization, content-type, mcp-session-id, mcp-method, mcp-param-region",
                ),
        )
        .await;
    assert!(r.status == 200 || r.status == 204, "{}", r.status);
    assert_eq!(r.header("access-control-allow-origin"), Some(app));
    let allowed = r
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in [
        "authorization",
        "mcp-session-id",
        "mcp-method",
        "mcp-param-region",
    ] {
        assert!(allowed.contains(h), "{allowed}");
    }
    assert!(r.header("access-control-allow-credentials").is_none());
    // The actual request carries the CORS headers, including on refusals.
    let r = s.send(&list().header("origin", app)).await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("access-control-allow-origin"), Some(app));
    let r = s
        .send(
            &bearer(
                legacy("initialize", Some(1), initialize_body(), None),
                "tkn",
            )
            .header("origin", app),
        )
        .await;
    assert_eq!(r.status, 200);
    let exposed = r
        .header("access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    // Another origin is refused outright.
    let r = s
        .send(
            &Req::new("OPTIONS", "/mcp")
                .header("origin", "https://evil.example")
                .header("access-control-request-method", "POST"),
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(r.header("access-control-allow-origin").is_none());
    s.stop().await;
}

/// Two static tokens for two principals.
fn two_principals() -> AuthConfig {
    let mut auth = AuthConfig::static_token("alice", "alice-token");
    auth.static_tokens
        .push(codomyrmex_mcp::transport::http::StaticToken::new(
            "bob",
            "bob-token",
        ));
    auth
}

#[tokio::test]
async fn a_session_belongs_to_the_principal_that_created_it() {
    let s = start(HttpConfig {
        auth: Some(two_principals()),
        ..config()
    })
    .await;
    let r = s
        .send(&bearer(
            legacy("initialize", Some(1), initialize_body(), None),
            "alice-token",
        ))
        .await;
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let as_bob = |req: Req| bearer(req, "bob-token");
    let ping = || legacy("ping", Some(2), json!({}), Some(&sid));
    let stream = || {
        Req::new("GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid.clone())
            .header("mcp-protocol-version", LEGACY)
    };
    let delete = || {
        Req::new("DELETE", "/mcp")
            .header("mcp-session-id", sid.clone())
            .header("mcp-protocol-version", LEGACY)
    };
    // Bob holds Alice's session id: everything answers as if it did not exist.
    let r = s.send(&as_bob(ping())).await;
    assert_eq!(
        r.status,
        404,
        "POST: {:?}",
        String::from_utf8_lossy(&r.body)
    );
    let r = s.send(&as_bob(stream())).await;
    assert_eq!(r.status, 404, "GET");
    let r = s
        .send(&as_bob(stream().header("last-event-id", "0-0")))
        .await;
    assert_eq!(r.status, 404, "GET with Last-Event-ID");
    let r = s.send(&as_bob(delete())).await;
    assert_eq!(r.status, 404, "DELETE");
    // Alice's session is untouched.
    let r = s.send(&bearer(ping(), "alice-token")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], 2);
    let r = s.send(&bearer(delete(), "alice-token")).await;
    assert_eq!(r.status, 204);
    s.stop().await;
}

#[tokio::test]
async fn a_wrong_token_flood_does_not_rate_limit_the_token_holder() {
    let s = start(HttpConfig {
        auth: Some(two_principals()),
        rate_limit: Some(codomyrmex_mcp::RateLimit {
            per_second: 0.01,
            burst: 5,
        }),
        auth_failure_rate_limit: Some(codomyrmex_mcp::RateLimit {
            per_second: 0.01,
            burst: 5,
        }),
        ..config()
    })
    .await;
    // The flood, from the same address as the token holder.
    let mut limited = false;
    for _ in 0..50 {
        let r = s.send(&bearer(list(), "wrong-token")).await;
        match r.status {
            401 => {}
            429 => {
                limited = true;
                break;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(
        s.send(&bearer(list(), "alice-token")).await.status,
        200,
        "the token holder is not starved by the flood"
    );
    assert!(limited, "the flood gets 429 from its own budget");
    s.stop().await;
}

#[test]
fn the_documented_bounds_are_the_defaults_and_bad_ones_are_refused() {
    const MIB: usize = 1024 * 1024;
    let d = HttpConfig::default();
    assert_eq!(
        (
            d.replay_events,
            d.replay_event_bytes,
            d.replay_stream_bytes,
            d.replay_session_bytes,
            d.replay_total_bytes
        ),
        (256, 17 * MIB, 17 * MIB, 34 * MIB, 256 * MIB)
    );
    assert_eq!(
        d.auth_failure_rate_limit,
        Some(codomyrmex_mcp::RateLimit {
            per_second: 10.0,
            burst: 20,
        })
    );
    for bad in [
        HttpConfig {
            replay_event_bytes: 0,
            ..HttpConfig::default()
        },
        HttpConfig {
            replay_event_bytes: 18 * MIB,
            ..HttpConfig::default()
        },
        HttpConfig {
            replay_session_bytes: 300 * MIB,
            ..HttpConfig::default()
        },
        HttpConfig {
            replay_events: 0,
            ..HttpConfig::default()
        },
        HttpConfig {
            auth_failure_rate_limit: Some(codomyrmex_mcp::RateLimit {
                per_second: 0.0,
                burst: 1,
            }),
            ..HttpConfig::default()
        },
    ] {
        assert!(
            matches!(server(bad.clone()).validate(), Err(HttpError::Config(_))),
            "{bad:?}"
        );
    }
}
