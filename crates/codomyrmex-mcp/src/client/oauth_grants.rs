//! The OAuth grants and client authentication built on signed or issued JWTs, beside the
//! authorization code flow of [`oauth`](super::oauth):
//!
//! - `private_key_jwt` client authentication (RFC 7523 section 2.2): a client assertion
//!   signed with the client's own key ([`client_assertion`]);
//! - the JWT bearer grant (RFC 7523 section 2.1) with a workload's own JWT (workload identity
//!   federation, the `io.modelcontextprotocol/auth/wif` extension);
//! - enterprise-managed authorization (the `io.modelcontextprotocol/enterprise-managed-
//!   authorization` extension): the user's ID token exchanged at the enterprise IdP (RFC
//!   8693 token exchange) for an identity assertion grant (ID-JAG) for the MCP server's
//!   authorization server, which the JWT bearer grant then redeems.
//!
//! A failed grant is an error the caller sees; nothing here retries or falls back to another
//! grant. Not an IdP and not a verifier: the JWTs are opaque here except for signing.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::jws::{Es256Key, random_id};
use super::oauth_fetch::{Fetch, form, form_encode, unix_now};

/// The JWT bearer grant type (RFC 7523).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token exchange grant type (RFC 8693).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion JWT authorization grant.
pub const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// A source of a JWT, asked each time one is needed (a workload's token file is rotated).
pub type JwtSource = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// Where the JWT bearer grant's assertion comes from.
#[derive(Clone)]
pub enum JwtBearer {
    /// A JWT the workload holds (workload identity federation), sent as it is.
    Assertion(JwtSource),
    /// An identity assertion from the enterprise IdP, by token exchange.
    Enterprise(EnterpriseIdp),
}

impl std::fmt::Debug for JwtBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Assertion(_) => f.write_str("JwtBearer::Assertion(..)"),
            Self::Enterprise(idp) => f.debug_tuple("JwtBearer::Enterprise").field(idp).finish(),
        }
    }
}

/// The enterprise IdP the user signed in to, and how this client is known there.
#[derive(Clone)]
pub struct EnterpriseIdp {
    /// The IdP's token endpoint.
    pub token_endpoint: String,
    /// This client's id at the IdP.
    pub client_id: String,
    /// This client's secret at the IdP (sent with `client_secret_basic`), if it has one.
    pub client_secret: Option<String>,
    /// The user's ID token from the IdP (the token exchange's subject token).
    pub id_token: JwtSource,
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A `private_key_jwt` client assertion: `iss` and `sub` the client id, `aud` the
/// authorization server's issuer, valid for five minutes, with a fresh `jti`.
pub fn client_assertion(key: &Es256Key, client_id: &str, audience: &str) -> Result<String, String> {
    let now = unix_now();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": random_id()?,
    });
    let mut header = serde_json::Map::new();
    header.insert("typ".into(), json!("JWT"));
    Ok(key.sign(header, &claims))
}

/// The form fields of a JWT bearer token request for `resource` at `issuer` (the client
/// authentication is added by the caller).
pub(crate) async fn jwt_bearer_pairs(
    fetch: &Fetch,
    grant: &JwtBearer,
    issuer: &str,
    resource: &str,
) -> Result<Vec<(String, String)>, String> {
    let assertion = match grant {
        JwtBearer::Assertion(source) => source()?,
        JwtBearer::Enterprise(idp) => exchange_for_id_jag(fetch, idp, issuer, resource).await?,
    };
    Ok(vec![
        ("grant_type".into(), JWT_BEARER_GRANT.into()),
        ("assertion".into(), assertion),
        ("resource".into(), resource.into()),
    ])
}

/// RFC 8693 at the IdP: the ID token for an ID-JAG whose audience is the MCP server's
/// authorization server and whose resource is the MCP server.
async fn exchange_for_id_jag(
    fetch: &Fetch,
    idp: &EnterpriseIdp,
    issuer: &str,
    resource: &str,
) -> Result<String, String> {
    super::oauth_https::require_https(&idp.token_endpoint, "IdP token endpoint")?;
    let id_token = (idp.id_token)()?;
    let mut pairs = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("subject_token", id_token.as_str()),
        ("subject_token_type", ID_TOKEN_TYPE),
        ("requested_token_type", ID_JAG_TYPE),
        ("audience", issuer),
        ("resource", resource),
    ];
    let mut headers = vec![(
        "Content-Type".to_owned(),
        "application/x-www-form-urlencoded".to_owned(),
    )];
    match &idp.client_secret {
        Some(secret) => {
            let basic = STANDARD.encode(format!(
                "{}:{}",
                form_encode(&idp.client_id),
                form_encode(secret)
            ));
            headers.push(("Authorization".into(), format!("Basic {basic}")));
        }
        None => pairs.push(("client_id", idp.client_id.as_str())),
    }
    let r = fetch(
        "POST",
        idp.token_endpoint.clone(),
        headers,
        form(&pairs).into_bytes(),
    )
    .await?;
    let doc: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    let field = |k: &str| doc.get(k).and_then(Value::as_str);
    if !(200..300).contains(&r.status) {
        return Err(format!(
            "the token exchange at the IdP failed with HTTP {}: {}",
            r.status,
            field("error").unwrap_or("no error code")
        ));
    }
    if let Some(t) = field("issued_token_type")
        && t != ID_JAG_TYPE
    {
        return Err(format!(
            "the IdP issued a {t}, not an identity assertion grant"
        ));
    }
    field("access_token")
        .map(str::to_owned)
        .ok_or_else(|| "the IdP's token exchange answer has no access_token".into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[test]
    fn a_client_assertion_names_the_client_and_the_issuer() {
        let key = Es256Key::generate().unwrap();
        let jwt = client_assertion(&key, "c1", "http://as").unwrap();
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(jwt.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["iss"], "c1");
        assert_eq!(claims["sub"], "c1");
        assert_eq!(claims["aud"], "http://as");
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
        assert!(claims["jti"].is_string());
    }
}
