//! Unit tests of `client/oauth.rs`.

use super::*;

#[test]
fn tokens_debug_shows_no_secret() {
    let tokens = Tokens {
        access_token: "ACCESS".into(),
        refresh_token: Some("REFRESH".into()),
        scope: None,
        expires_at: None,
        client: Some(ClientRegistration {
            token_endpoint: "https://as/token".into(),
            client_id: "id".into(),
            client_secret: Some("CLIENTSECRET".into()),
            auth_method: "client_secret_basic".into(),
            resource: "https://rs/mcp".into(),
            issuer: None,
        }),
        token_type: None,
        dpop_jkt: None,
    };
    let shown = format!("{tokens:?}");
    for secret in ["ACCESS", "REFRESH", "CLIENTSECRET"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(shown.contains("https://as/token"), "{shown}");
}

#[test]
fn challenges_parse() {
    let c = parse_challenge(
        r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/.well-known/oauth-protected-resource""#,
    );
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("a b"));
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://h/.well-known/oauth-protected-resource")
    );
    assert_eq!(parse_challenge("Bearer"), Challenge::default());
    assert_eq!(
        parse_challenge("Bearer realm=x,error=invalid_token")
            .error
            .as_deref(),
        Some("invalid_token")
    );
    let _ = parse_challenge("Bearer =\"\\");
    // DPoP's scheme (RFC 9449 section 7.1), alone or after a Bearer challenge.
    let c = parse_challenge(r#"DPoP resource_metadata="http://h/prm", algs="ES256""#);
    assert_eq!(c.resource_metadata.as_deref(), Some("http://h/prm"));
    let c = parse_challenge(r#"Bearer realm="x", DPoP error="use_dpop_nonce""#);
    assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
}

#[test]
fn discovery_urls_follow_the_rfcs() {
    assert_eq!(
        prm_candidates("http://h:1/mcp", &Challenge::default()),
        [
            "http://h:1/.well-known/oauth-protected-resource/mcp",
            "http://h:1/.well-known/oauth-protected-resource"
        ]
    );
    assert_eq!(
        metadata_candidates("http://a/tenant1"),
        [
            "http://a/.well-known/oauth-authorization-server/tenant1",
            "http://a/.well-known/openid-configuration/tenant1",
            "http://a/tenant1/.well-known/openid-configuration"
        ]
    );
    assert_eq!(metadata_candidates("http://a").len(), 2);
}

#[test]
fn scopes_pkce_and_forms() {
    let prm = json!({"scopes_supported": ["x", "y"]});
    assert_eq!(
        choose_scope(&Challenge::default(), &prm).as_deref(),
        Some("x y")
    );
    let c = Challenge {
        scope: Some("z".into()),
        ..Challenge::default()
    };
    assert_eq!(choose_scope(&c, &prm).as_deref(), Some("z"));
    assert_eq!(choose_scope(&Challenge::default(), &json!({})), None);
    assert_eq!(
        union_scopes(Some("a b"), Some("b c")).as_deref(),
        Some("a b c")
    );
    // RFC 7636 appendix B.
    let bytes = [
        116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37,
        77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
    ];
    let (v, c) = pkce(bytes);
    assert_eq!(v, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
    assert_eq!(c, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    let q = query_params("http://l/cb?code=a%20b&state=s+t&iss=http%3A%2F%2Fx&bad=%zz");
    assert_eq!(q["code"], "a b");
    assert_eq!(q["state"], "s t");
    assert_eq!(q["iss"], "http://x");
    assert_eq!(q["bad"], "%zz");
    assert_eq!(form(&[("a b", "c&d")]), "a%20b=c%26d");
    assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
    assert!(!resource_matches("http://evil/mcp", "http://h:1/mcp"));
}
