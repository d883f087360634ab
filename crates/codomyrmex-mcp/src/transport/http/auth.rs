//! Authentication: static bearer tokens and the OAuth 2.1 resource-server role.
//!
//! [`AuthLayer`] reads `Authorization: Bearer <token>` and either inserts a [`Principal`] into
//! the request's extensions (the handler passes it on to tools through
//! [`ToolContext::principal`](crate::ToolContext::principal)) or answers:
//!
//! - `401` with `WWW-Authenticate: Bearer resource_metadata="..."` when the token is missing,
//!   and with `error="invalid_token"` when it is unknown, malformed, badly signed, expired, not
//!   yet valid, from another issuer or for another audience (RFC 6750 §3, RFC 9728 §5.1);
//! - `403` with `error="insufficient_scope", scope="..."` when a valid JWT lacks a required
//!   scope.
//!
//! Every refusal carries a JSON-RPC error body with no id.
//!
//! Static tokens ([`StaticToken`]) are compared in constant time (as SHA-256 digests, so not
//! even their length leaks) and grant full access (no scope check). JWT
//! access tokens ([`JwtConfig`]) are verified against a configured JWKS ([`Jwks`], from JSON or
//! a file: keys are never fetched from the network), and their `iss`, `aud` (the server's
//! canonical URL, RFC 8707), `exp`, `nbf` and scopes are checked.
//!
//! [`protected_resource_router`] serves the RFC 9728 metadata at
//! `/.well-known/oauth-protected-resource` and at its path-suffixed form (for `/mcp`:
//! `/.well-known/oauth-protected-resource/mcp`). Those paths never need a token.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, Uri, header};
use axum::routing::get;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tower::{Layer, Service};

use crate::Principal;
use crate::RateLimit;
use crate::wire::{ErrorCode, ErrorObject};

use super::limits::{Buckets, client_key, too_many_requests};
use super::rpc_error;

/// The RFC 9728 well-known path prefix.
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why an authentication configuration is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthConfigError {
    /// The JWKS could not be read or parsed, or holds no usable key.
    #[error("invalid JWKS: {0}")]
    Jwks(String),
    /// The resource URL is not an absolute `http`/`https` URL without a fragment.
    #[error("invalid resource URL {0:?}: expected an absolute http(s) URL without a fragment")]
    Resource(String),
    /// JWT validation is configured without what it needs.
    #[error("invalid JWT configuration: {0}")]
    Jwt(String),
    /// A static token is empty.
    #[error("a static bearer token must not be empty")]
    EmptyToken,
    /// Neither static tokens nor JWT validation is configured.
    #[error("authentication is configured with neither static tokens nor JWT validation")]
    Nothing,
}

/// A static bearer token and who it stands for.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticToken {
    /// The principal's subject (for logs and tools), such as `"operator"`.
    pub subject: String,
    /// The secret token.
    pub token: String,
    /// The scopes the principal holds.
    pub scopes: Vec<String>,
}

impl StaticToken {
    /// A token for `subject` with no scopes.
    pub fn new(subject: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            token: token.into(),
            scopes: Vec::new(),
        }
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticToken")
            .field("subject", &self.subject)
            .field("token", &"<redacted>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// One verification key from a JWKS.
struct VerifyingKey {
    kid: Option<String>,
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// A JSON Web Key Set: the keys JWT signatures are verified against. Built from JSON or a
/// file, once; never fetched at request time.
#[derive(Clone)]
pub struct Jwks {
    keys: Arc<Vec<VerifyingKey>>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field(
                "kids",
                &self
                    .keys
                    .iter()
                    .map(|k| k.kid.as_deref())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Jwks {
    /// Parses a JWKS document (`{"keys": [...]}`). Keys of unsupported types are skipped; a set
    /// with no usable key is an error.
    pub fn from_json(json: &str) -> Result<Self, AuthConfigError> {
        let set: JwkSet =
            serde_json::from_str(json).map_err(|e| AuthConfigError::Jwks(e.to_string()))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            // Only signature keys (or keys that do not say) verify tokens.
            if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
                continue;
            }
            let family_algs: &[Algorithm] = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => &[
                    Algorithm::RS256,
                    Algorithm::RS384,
                    Algorithm::RS512,
                    Algorithm::PS256,
                    Algorithm::PS384,
                    Algorithm::PS512,
                ],
                AlgorithmParameters::EllipticCurve(_) => &[Algorithm::ES256, Algorithm::ES384],
                AlgorithmParameters::OctetKeyPair(_) => &[Algorithm::EdDSA],
                AlgorithmParameters::OctetKey(_) => {
                    &[Algorithm::HS256, Algorithm::HS384, Algorithm::HS512]
                }
                _ => continue,
            };
            // A key that names its algorithm is used with that algorithm only.
            let algorithms: Vec<Algorithm> = match jwk.common.key_algorithm {
                Some(alg) => match alg.to_string().parse::<Algorithm>() {
                    Ok(a) if family_algs.contains(&a) => vec![a],
                    _ => continue,
                },
                None => family_algs.to_vec(),
            };
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            keys.push(VerifyingKey {
                kid: jwk.common.key_id.clone(),
                key,
                algorithms,
            });
        }
        if keys.is_empty() {
            return Err(AuthConfigError::Jwks(
                "the set holds no usable signing key".into(),
            ));
        }
        Ok(Self {
            keys: Arc::new(keys),
        })
    }

    /// Reads a JWKS document from a file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, AuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| AuthConfigError::Jwks(format!("{}: {e}", path.display())))?;
        Self::from_json(&text)
    }

    /// The number of usable keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set has no usable key (never true for a constructed set).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key for a token header's `kid`: the key with that id, or the only key when the
    /// token names none.
    fn select(&self, kid: Option<&str>) -> Option<&VerifyingKey> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
    }
}

/// JWT access-token validation (the OAuth 2.1 resource-server role).
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// The keys signatures are checked against.
    pub jwks: Jwks,
    /// Accepted `iss` values; at least one.
    pub issuers: Vec<String>,
    /// Accepted `aud` values. Empty means the [`AuthConfig::resource`] URL (RFC 8707: tokens
    /// must be issued for this server's canonical URL).
    pub audiences: Vec<String>,
    /// Scopes every token must carry (in `scope` or `scp`); a token without them gets `403`.
    /// Matched exactly: no scope implies another.
    pub required_scopes: Vec<String>,
    /// Clock-skew allowance for `exp` and `nbf`.
    pub leeway: Duration,
}

impl JwtConfig {
    /// Tokens signed by a key of `jwks` and issued by `issuer`, with no required scope and 60 s
    /// of leeway. The audience is the resource URL unless set.
    pub fn new(jwks: Jwks, issuer: impl Into<String>) -> Self {
        Self {
            jwks,
            issuers: vec![issuer.into()],
            audiences: Vec::new(),
            required_scopes: Vec::new(),
            leeway: Duration::from_secs(60),
        }
    }
}

/// What [`AuthLayer`] accepts and how the server describes itself as a protected resource.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Static bearer tokens.
    pub static_tokens: Vec<StaticToken>,
    /// JWT validation.
    pub jwt: Option<JwtConfig>,
    /// The server's canonical URL (RFC 8707 resource indicator), such as
    /// `https://mcp.example.com/mcp`. Required with JWT validation unless audiences are given
    /// (then the first audience is used). It is the `resource` of the protected-resource
    /// metadata and the base of the `resource_metadata` URL.
    pub resource: Option<String>,
    /// Authorization servers advertised in the metadata; empty means the JWT issuers.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported` in the metadata; empty means the required scopes.
    pub scopes_supported: Vec<String>,
}

impl AuthConfig {
    /// Accepts one static token, for `subject`.
    pub fn static_token(subject: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            static_tokens: vec![StaticToken::new(subject, token)],
            ..Self::default()
        }
    }

    /// Accepts JWTs as `jwt` describes, for the resource at `resource` (the server's canonical
    /// URL).
    pub fn jwt(jwt: JwtConfig, resource: impl Into<String>) -> Self {
        Self {
            jwt: Some(jwt),
            resource: Some(resource.into()),
            ..Self::default()
        }
    }

    /// The resource URL: the configured one or the first JWT audience.
    fn resource_url(&self) -> Option<&str> {
        self.resource.as_deref().or_else(|| {
            self.jwt
                .as_ref()
                .and_then(|j| j.audiences.first())
                .map(String::as_str)
        })
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), AuthConfigError> {
        if self.static_tokens.is_empty() && self.jwt.is_none() {
            return Err(AuthConfigError::Nothing);
        }
        if self.static_tokens.iter().any(|t| t.token.is_empty()) {
            return Err(AuthConfigError::EmptyToken);
        }
        if let Some(r) = self.resource_url() {
            parse_resource(r)?;
        }
        if let Some(jwt) = &self.jwt {
            if jwt.issuers.is_empty() || jwt.issuers.iter().any(String::is_empty) {
                return Err(AuthConfigError::Jwt("an issuer is required".into()));
            }
            if self.resource_url().is_none() {
                return Err(AuthConfigError::Jwt(
                    "an audience (the server's canonical URL) is required".into(),
                ));
            }
            if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
                return Err(AuthConfigError::Jwt(
                    "no JWT crypto provider is available in this build".into(),
                ));
            }
        }
        Ok(())
    }

    /// The protected-resource metadata document (RFC 9728), when a resource URL is known.
    pub fn metadata(&self) -> Option<Value> {
        let resource = self.resource_url()?;
        let servers: Vec<&String> = if self.authorization_servers.is_empty() {
            self.jwt.iter().flat_map(|j| j.issuers.iter()).collect()
        } else {
            self.authorization_servers.iter().collect()
        };
        let scopes: Vec<&String> = if self.scopes_supported.is_empty() {
            self.jwt
                .iter()
                .flat_map(|j| j.required_scopes.iter())
                .collect()
        } else {
            self.scopes_supported.iter().collect()
        };
        let mut doc = json!({
            "resource": resource,
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        Some(doc)
    }

    /// The URL of the metadata document, for `WWW-Authenticate`: the well-known path inserted
    /// between the resource URL's authority and its path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> Option<String> {
        let resource = self.resource_url()?;
        let uri = parse_resource(resource).ok()?;
        let scheme = uri.scheme_str()?;
        let authority = uri.authority()?.as_str();
        let path = uri.path().trim_end_matches('/');
        Some(format!(
            "{scheme}://{authority}{PROTECTED_RESOURCE_PATH}{path}"
        ))
    }
}

fn parse_resource(r: &str) -> Result<Uri, AuthConfigError> {
    let bad = || AuthConfigError::Resource(r.to_owned());
    if r.contains('#') {
        return Err(bad());
    }
    let uri: Uri = r.parse().map_err(|_| bad())?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http" | "https"), Some(_)) => Ok(uri),
        _ => Err(bad()),
    }
}

/// The RFC 9728 metadata routes: the root well-known path, and its form suffixed with the
/// resource URL's path and with `endpoint_path` (the MCP endpoint). Empty when `auth` has no
/// resource URL.
pub fn protected_resource_router(auth: &AuthConfig, endpoint_path: &str) -> Router {
    let Some(doc) = auth.metadata() else {
        return Router::new();
    };
    let body = Arc::new(doc.to_string());
    let mut paths: Vec<String> = vec![PROTECTED_RESOURCE_PATH.to_owned()];
    let resource_path = auth
        .resource_url()
        .and_then(|r| parse_resource(r).ok())
        .map(|u| u.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();
    for suffix in [resource_path.as_str(), endpoint_path.trim_end_matches('/')] {
        if !suffix.is_empty() && suffix.starts_with('/') {
            let p = format!("{PROTECTED_RESOURCE_PATH}{suffix}");
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    let mut router = Router::new();
    for p in paths {
        let body = body.clone();
        router = router.route(
            &p,
            get(move || {
                let body = body.clone();
                async move {
                    let mut resp = Response::new(Body::from(body.as_str().to_owned()));
                    resp.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                    resp
                }
            }),
        );
    }
    router
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    /// No credentials (RFC 6750: no `error` attribute).
    Missing,
    /// Bad credentials.
    Invalid(&'static str),
    /// A valid token without the scopes.
    InsufficientScope,
}

struct Authenticator {
    config: AuthConfig,
    /// SHA-256 of each static token, in order.
    static_digests: Vec<[u8; 32]>,
    metadata_url: Option<String>,
    /// Paths served without authentication.
    public_paths: HashSet<String>,
    audiences: Vec<String>,
    /// The budget refused requests draw from, per client address.
    failures: Option<Arc<Buckets>>,
}

impl Authenticator {
    fn authenticate(&self, authorization: Option<&HeaderValue>) -> Result<Principal, Refusal> {
        let Some(value) = authorization else {
            return Err(Refusal::Missing);
        };
        let value = value
            .to_str()
            .map_err(|_| Refusal::Invalid("malformed Authorization header"))?;
        let (scheme, token) = value
            .trim()
            .split_once(' ')
            .ok_or(Refusal::Invalid("malformed Authorization header"))?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(Refusal::Invalid("the Bearer scheme is required"));
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(Refusal::Invalid("empty bearer token"));
        }
        // Every static token is compared, matching or not, in constant time; comparing
        // SHA-256 digests keeps the tokens' lengths secret too.
        let presented = Sha256::digest(token.as_bytes());
        let mut found: Option<&StaticToken> = None;
        for (t, digest) in self.config.static_tokens.iter().zip(&self.static_digests) {
            if bool::from(digest.as_slice().ct_eq(presented.as_slice())) {
                found = Some(t);
            }
        }
        if let Some(t) = found {
            return Ok(Principal::new(t.subject.clone(), t.scopes.clone()));
        }
        match &self.config.jwt {
            Some(jwt) if token.matches('.').count() == 2 => self.verify_jwt(jwt, token),
            _ => Err(Refusal::Invalid("unknown bearer token")),
        }
    }

    fn verify_jwt(&self, jwt: &JwtConfig, token: &str) -> Result<Principal, Refusal> {
        let head = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Invalid("malformed access token"))?;
        let key = jwt
            .jwks
            .select(head.kid.as_deref())
            .ok_or(Refusal::Invalid(
                "the access token's signing key is unknown",
            ))?;
        let mut v = Validation::new(head.alg);
        v.algorithms = key.algorithms.clone();
        v.leeway = jwt.leeway.as_secs();
        v.validate_exp = true;
        v.validate_nbf = true;
        v.validate_aud = true;
        v.set_audience(&self.audiences);
        v.set_issuer(&jwt.issuers);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &v).map_err(|e| {
                Refusal::Invalid(match e.kind() {
                    ErrorKind::ExpiredSignature => "the access token has expired",
                    ErrorKind::ImmatureSignature => "the access token is not yet valid",
                    ErrorKind::InvalidAudience => "the access token is not for this resource",
                    ErrorKind::InvalidIssuer => "the access token's issuer is not trusted",
                    ErrorKind::InvalidSignature => "the access token's signature is invalid",
                    ErrorKind::InvalidAlgorithm => "the access token's algorithm is not allowed",
                    ErrorKind::MissingRequiredClaim(_) => "the access token lacks a required claim",
                    _ => "the access token is invalid",
                })
            })?;
        let claims = data.claims;
        let scopes = token_scopes(&claims);
        if !jwt.required_scopes.iter().all(|s| scopes.contains(s)) {
            return Err(Refusal::InsufficientScope);
        }
        let subject = claims
            .get("sub")
            .or_else(|| claims.get("client_id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(Principal::new(subject, scopes).with_claims(claims))
    }

    fn refuse(&self, refusal: &Refusal) -> Response<Body> {
        let mut params: Vec<String> = Vec::new();
        let (status, message) = match refusal {
            Refusal::Missing => (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: a bearer token is required".to_owned(),
            ),
            Refusal::Invalid(why) => {
                params.push("error=\"invalid_token\"".into());
                params.push(format!("error_description=\"{why}\""));
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
            }
            Refusal::InsufficientScope => {
                let scopes = self
                    .config
                    .jwt
                    .as_ref()
                    .map(|j| j.required_scopes.join(" "))
                    .unwrap_or_default();
                params.push("error=\"insufficient_scope\"".into());
                params.push(format!("scope=\"{}\"", quote_safe(&scopes)));
                (
                    StatusCode::FORBIDDEN,
                    format!("Forbidden: the access token lacks a required scope ({scopes})"),
                )
            }
        };
        if let Some(url) = &self.metadata_url {
            params.push(format!("resource_metadata=\"{}\"", quote_safe(url)));
        }
        let challenge = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        let mut resp = rpc_error(
            status,
            None,
            ErrorObject::new(ErrorCode::INVALID_REQUEST, message),
        );
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        resp
    }
}

/// Strips characters that cannot appear in a quoted-string parameter.
fn quote_safe(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
        .collect()
}

/// Scopes from `scope` (a space-separated string) and `scp` (a string or an array).
fn token_scopes(claims: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(s)) => out.extend(s.split_whitespace().map(str::to_owned)),
            Some(Value::Array(a)) => {
                out.extend(a.iter().filter_map(Value::as_str).map(str::to_owned))
            }
            _ => {}
        }
    }
    out.dedup();
    out
}

/// A layer that authenticates every request except those for the protected-resource metadata
/// (paths under [`PROTECTED_RESOURCE_PATH`]) and the paths [`AuthLayer::allow_path`] adds.
#[derive(Clone)]
pub struct AuthLayer {
    auth: Arc<Authenticator>,
}

impl std::fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthLayer")
            .field("public_paths", &self.auth.public_paths)
            .field(
                "failure_limit",
                &self.auth.failures.as_ref().map(|b| b.limit()),
            )
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// A layer for `config`, which must be valid.
    pub fn new(config: AuthConfig) -> Result<Self, AuthConfigError> {
        config.validate()?;
        let audiences = match &config.jwt {
            Some(j) if !j.audiences.is_empty() => j.audiences.clone(),
            _ => config
                .resource_url()
                .map(str::to_owned)
                .into_iter()
                .collect(),
        };
        let metadata_url = config.metadata_url();
        let static_digests = config
            .static_tokens
            .iter()
            .map(|t| Sha256::digest(t.token.as_bytes()).into())
            .collect();
        Ok(Self {
            auth: Arc::new(Authenticator {
                config,
                static_digests,
                metadata_url,
                public_paths: HashSet::new(),
                audiences,
                failures: None,
            }),
        })
    }

    /// Serves `path` without authentication (used for a public `/health`).
    pub fn allow_path(mut self, path: impl Into<String>) -> Self {
        let mut auth = self.copy();
        auth.public_paths.insert(path.into());
        self.auth = Arc::new(auth);
        self
    }

    /// Limits refused requests (missing or bad credentials) per client address: past
    /// `limit`, they get `429` with `Retry-After` instead of `401`/`403`. Only refused
    /// requests draw from this budget, so a flood of bad tokens never slows down a client
    /// that authenticates, even from the same address. Place this layer before
    /// [`ClientRateLimitLayer`](super::ClientRateLimitLayer) so that refused requests do not
    /// spend that limit either.
    pub fn with_failure_limit(mut self, limit: RateLimit) -> Self {
        let mut auth = self.copy();
        auth.failures = Some(Arc::new(Buckets::new(limit)));
        self.auth = Arc::new(auth);
        self
    }

    fn copy(&self) -> Authenticator {
        Authenticator {
            config: self.auth.config.clone(),
            static_digests: self.auth.static_digests.clone(),
            metadata_url: self.auth.metadata_url.clone(),
            public_paths: self.auth.public_paths.clone(),
            audiences: self.auth.audiences.clone(),
            failures: self.auth.failures.clone(),
        }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AuthService {
            inner,
            auth: self.auth.clone(),
        }
    }
}

/// The service [`AuthLayer`] produces.
#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    auth: Arc<Authenticator>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for AuthService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<Request<B>> for AuthService<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = super::PolicyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let path = req.uri().path();
        let metadata = path
            .strip_prefix(PROTECTED_RESOURCE_PATH)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if metadata || self.auth.public_paths.contains(path) {
            return super::PolicyFuture::passed(self.inner.call(req));
        }
        let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
        let first = values.next();
        let result = if values.next().is_some() {
            Err(Refusal::Invalid("more than one Authorization header"))
        } else {
            self.auth.authenticate(first)
        };
        match result {
            Ok(principal) => {
                req.extensions_mut().insert(principal);
                super::PolicyFuture::passed(self.inner.call(req))
            }
            Err(refusal) => {
                if let Some(failures) = &self.auth.failures {
                    let client = client_key(&req);
                    if let Err(after) = failures.take(client, Instant::now()) {
                        tracing::debug!(%client, "rate limited refused authentications");
                        return super::PolicyFuture::refused(super::refusals::refused(
                            too_many_requests(after),
                            super::refusals::Reason::AuthRateLimited,
                            None,
                        ));
                    }
                }
                if refusal != Refusal::Missing {
                    tracing::info!(?refusal, "refused a request's credentials");
                }
                super::PolicyFuture::refused(self.auth.refuse(&refusal))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        let mut a = AuthConfig::static_token("x", "t");
        a.resource = Some("https://mcp.example.com/mcp".into());
        assert_eq!(
            a.metadata_url().as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        a.resource = Some("https://mcp.example.com".into());
        assert_eq!(
            a.metadata_url().as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
    }

    #[test]
    fn resource_urls_are_checked() {
        let mut a = AuthConfig::static_token("x", "t");
        for bad in [
            "mcp.example.com",
            "https://mcp.example.com#frag",
            "ftp://x/y",
        ] {
            a.resource = Some(bad.into());
            assert!(a.validate().is_err(), "{bad}");
        }
        a.resource = Some("http://127.0.0.1:8080/mcp".into());
        assert!(a.validate().is_ok());
        assert_eq!(
            AuthConfig::default().validate(),
            Err(AuthConfigError::Nothing)
        );
        assert_eq!(
            AuthConfig::static_token("x", "").validate(),
            Err(AuthConfigError::EmptyToken)
        );
    }

    #[test]
    fn static_tokens_are_matched_exactly() {
        let layer = AuthLayer::new(AuthConfig::static_token("op", "s3cret")).unwrap();
        let a = &layer.auth;
        let ok = HeaderValue::from_static("Bearer s3cret");
        assert_eq!(a.authenticate(Some(&ok)).unwrap().subject, "op");
        let lower = HeaderValue::from_static("bearer s3cret");
        assert!(a.authenticate(Some(&lower)).is_ok());
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "Bearer ",
            "s3cret",
        ] {
            let v = HeaderValue::from_static(bad);
            assert!(a.authenticate(Some(&v)).is_err(), "{bad}");
        }
        assert_eq!(a.authenticate(None), Err(Refusal::Missing));
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        let claims: Map<String, Value> =
            serde_json::from_value(json!({"scope": "a b", "scp": ["c"]})).unwrap();
        assert_eq!(token_scopes(&claims), ["a", "b", "c"]);
    }

    #[test]
    fn jwks_without_usable_keys_is_refused() {
        assert!(Jwks::from_json("{\"keys\": []}").is_err());
        assert!(Jwks::from_json("not json").is_err());
        let oct = json!({"kty": "oct", "k": "c2VjcmV0LWtleS1ieXRlcw", "kid": "a"});
        let mut enc = oct.clone();
        enc["use"] = json!("enc");
        let set = |k: &Value| json!({"keys": [k]}).to_string();
        assert_eq!(Jwks::from_json(&set(&oct)).unwrap().len(), 1);
        assert!(
            Jwks::from_json(&set(&enc)).is_err(),
            "encryption keys do not verify"
        );
        let mut named = oct.clone();
        named["alg"] = json!("HS384");
        let jwks = Jwks::from_json(&set(&named)).unwrap();
        assert_eq!(
            jwks.select(Some("a")).unwrap().algorithms,
            [Algorithm::HS384]
        );
        assert!(jwks.select(Some("b")).is_none());
        assert!(
            jwks.select(None).is_some(),
            "the only key serves tokens without kid"
        );
    }
}
