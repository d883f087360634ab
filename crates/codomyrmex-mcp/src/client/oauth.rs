//! OAuth 2.1 for the client's HTTP transport (MCP authorization): on a `401` the client
//! discovers the protected resource metadata (RFC 9728: the `WWW-Authenticate`
//! `resource_metadata`, then the well-known paths), the authorization server metadata (RFC
//! 8414 and OpenID discovery, path-inserted then path-appended), registers (pre-registered
//! credentials, a client ID metadata document URL, or dynamic registration), runs the
//! authorization code flow with PKCE (S256) without a browser when the authorization
//! endpoint redirects at once, checks `iss` (RFC 9207, plain string comparison), and
//! exchanges the code (token endpoint auth `client_secret_basic`, `client_secret_post` or
//! `none`). A `403 insufficient_scope` re-authorizes with the union of scopes, a bounded
//! number of times. Tokens live in a pluggable [`TokenStore`]; with a refresh token the
//! client refreshes them shortly before they expire and on a `401`, before it runs the
//! whole flow again, and it asks for `offline_access` when the authorization server lists
//! it in `scopes_supported`.
//!
//! The pure pieces (parsing challenges, the metadata URL candidates, scope choice, PKCE
//! values, the redirect's parameters) do no I/O; [`authorize`] drives them over an HTTP
//! fetch the transport provides. Not an authorization server, and not a browser: an
//! authorization endpoint that shows a login page needs a [`UserAgent`] (the loopback
//! redirect listener of [`oauth_loopback`](super::oauth_loopback)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::dpop;
pub use super::dpop::Dpop;
pub use super::jws::Es256Key;
use super::lock;
use super::oauth_fetch::Headers;
pub use super::oauth_fetch::{Fetch, Fetched, form, form_encode, split_url, unix_now};
pub use super::oauth_grants::{EnterpriseIdp, JwtBearer, JwtSource};
use super::oauth_grants::{client_assertion, jwt_bearer_pairs};
use super::oauth_https::{METADATA_ENDPOINTS, require_https};
use crate::platform::BoxFuture;

/// Tokens for one resource. Its `Debug` shows neither token.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<String>,
    /// The scopes granted (space-separated), if known.
    pub scope: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), from `expires_in`.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// The client and token endpoint the tokens came from: what a refresh needs.
    #[serde(default)]
    pub client: Option<ClientRegistration>,
    /// The token's type as issued (`Bearer`, `DPoP`); `None` is `Bearer`.
    #[serde(default)]
    pub token_type: Option<String>,
    /// The thumbprint of the DPoP key a `DPoP` token is bound to.
    #[serde(default)]
    pub dpop_jkt: Option<String>,
}

/// What stands for a secret in a `Debug` rendering.
const HIDDEN: &str = "<redacted>";

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &HIDDEN)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| HIDDEN),
            )
            .field("scope", &self.scope)
            .field("expires_at", &self.expires_at)
            .field("client", &self.client)
            .field("token_type", &self.token_type)
            .field("dpop_jkt", &self.dpop_jkt)
            .finish()
    }
}

/// How long before its expiry an access token is refreshed.
pub const REFRESH_MARGIN_SECS: u64 = 60;

impl Tokens {
    /// Whether the access token expires within [`REFRESH_MARGIN_SECS`] of `now` (seconds
    /// since the Unix epoch) and can be refreshed.
    pub fn due_for_refresh(&self, now: u64) -> bool {
        self.refresh_token.is_some()
            && self.client.is_some()
            && self
                .expires_at
                .is_some_and(|at| at <= now.saturating_add(REFRESH_MARGIN_SECS))
    }
}

/// The registered client a refresh authenticates as, and where. Its `Debug` hides the
/// client secret.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientRegistration {
    /// The token endpoint.
    pub token_endpoint: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, if the client has one.
    pub client_secret: Option<String>,
    /// The token endpoint auth method (`client_secret_basic`, `client_secret_post`, `none`).
    pub auth_method: String,
    /// The resource indicator (RFC 8707) the tokens are for.
    pub resource: String,
    /// The authorization server's issuer: a `private_key_jwt` assertion's audience.
    #[serde(default)]
    pub issuer: Option<String>,
}

impl std::fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| HIDDEN),
            )
            .field("auth_method", &self.auth_method)
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// Where tokens are kept, by resource URL.
pub trait TokenStore: Send + Sync {
    /// The tokens for `resource`.
    fn get(&self, resource: &str) -> Option<Tokens>;
    /// Keeps `tokens` for `resource`.
    fn put(&self, resource: &str, tokens: Tokens);
}

/// Tokens in memory, for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore(Mutex<HashMap<String, Tokens>>);

impl TokenStore for MemoryTokenStore {
    fn get(&self, resource: &str) -> Option<Tokens> {
        lock(&self.0).get(resource).cloned()
    }
    fn put(&self, resource: &str, tokens: Tokens) {
        lock(&self.0).insert(resource.to_owned(), tokens);
    }
}

/// How the client authorizes.
#[derive(Clone)]
pub struct OAuthConfig {
    /// Where the authorization server sends the code (never fetched by this client).
    pub redirect_uri: String,
    /// The name registered for the client.
    pub client_name: String,
    /// A pre-registered client id (and secret): used instead of registering.
    pub client_id: Option<String>,
    /// The pre-registered client's secret.
    pub client_secret: Option<String>,
    /// The URL of this client's metadata document, used as its client id when the server
    /// supports client ID metadata documents.
    pub client_metadata_url: Option<String>,
    /// Where tokens are kept.
    pub store: Arc<dyn TokenStore>,
    /// How many times one request may re-authorize for more scope.
    pub max_step_ups: usize,
    /// Use the client credentials grant (a machine client with `client_id` and
    /// `client_secret`) instead of the authorization code flow.
    pub client_credentials: bool,
    /// Authenticate at the token endpoint with `private_key_jwt` (RFC 7523 section 2.2): a
    /// client assertion signed with this key (with `client_id`), instead of a secret.
    pub client_key: Option<Es256Key>,
    /// Get tokens with the JWT bearer grant (RFC 7523) instead of the authorization code
    /// flow: a workload's own JWT, or an identity assertion from an enterprise IdP.
    pub jwt_bearer: Option<JwtBearer>,
    /// The DPoP key (RFC 9449), used when the authorization server offers DPoP with ES256;
    /// `None` never asks for DPoP-bound tokens. [`OAuthConfig::new`] makes one.
    pub dpop: Option<Arc<Dpop>>,
    /// Shows the authorization URL to the user and returns the URL the browser was
    /// redirected to (see [`LoopbackRedirect`](super::oauth_loopback::LoopbackRedirect));
    /// `None`: the client fetches the authorization URL itself, which works only when the
    /// authorization endpoint redirects at once.
    pub user_agent: Option<UserAgent>,
}

/// Takes the user through the authorization URL; the URL the browser came back to.
pub type UserAgent =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_id", &self.client_id)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// A client that registers itself, with tokens in memory.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            client_name: "codomyrmex-mcp".into(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            store: Arc::new(MemoryTokenStore::default()),
            max_step_ups: 2,
            client_credentials: false,
            client_key: None,
            jwt_bearer: None,
            dpop: Dpop::generate().ok().map(Arc::new),
            user_agent: None,
        }
    }
}

/// A `WWW-Authenticate: Bearer ...` (or `DPoP ...`) challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`.
    pub resource_metadata: Option<String>,
    /// `scope`.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub error: Option<String>,
}

/// Parses the parameters of a Bearer or DPoP challenge (quoted or token values); a scheme
/// name before a parameter (`Bearer x=1, DPoP error=...`) is skipped.
pub fn parse_challenge(header: &str) -> Challenge {
    let mut c = Challenge::default();
    let rest = header.trim();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ',')).collect();
        if key.is_empty() {
            break;
        }
        if chars.next() != Some('=') {
            continue;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(ch) = chars.next() {
                match ch {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    ch => value.push(ch),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
        }
        // `DPoP error`: the parameter after a scheme name.
        match key.split_whitespace().next_back().unwrap_or("") {
            "resource_metadata" => c.resource_metadata = Some(value.trim().to_owned()),
            "scope" => c.scope = Some(value.trim().to_owned()),
            "error" => c.error = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    c
}

/// Where the protected resource metadata may be, in order (RFC 9728 §3.1).
pub fn prm_candidates(resource_url: &str, challenge: &Challenge) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(url) = &challenge.resource_metadata {
        out.push(url.clone());
    }
    if let Some((origin, path)) = split_url(resource_url) {
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            out.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    out
}

/// Where an issuer's metadata may be, in order: OAuth then OpenID, path-inserted, and the
/// OpenID path-appended form.
pub fn metadata_candidates(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = split_url(issuer) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// The scope to ask for: the challenge's, else the resource's `scopes_supported`, else none.
pub fn choose_scope(challenge: &Challenge, prm: &Value) -> Option<String> {
    if let Some(s) = challenge.scope.as_ref().filter(|s| !s.is_empty()) {
        return Some(s.clone());
    }
    let scopes: Vec<&str> = prm
        .get("scopes_supported")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The union of two space-separated scope lists, in order of first appearance.
pub fn union_scopes(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// A PKCE verifier and its S256 challenge, from 32 random bytes.
pub fn pkce(random: [u8; 32]) -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode(random);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn form_decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query parameters of a URL.
pub fn query_params(url: &str) -> HashMap<String, String> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (form_decode(k), form_decode(v)),
            None => (form_decode(p), String::new()),
        })
        .collect()
}

async fn get_json(fetch: &Fetch, url: &str) -> Result<Option<Value>, String> {
    let r = fetch(
        "GET",
        url.to_owned(),
        vec![("Accept".into(), "application/json".into())],
        Vec::new(),
    )
    .await?;
    if r.status != 200 {
        return Ok(None);
    }
    Ok(serde_json::from_slice(&r.body)
        .ok()
        .filter(Value::is_object))
}

/// Runs discovery, registration, the authorization code flow and the token exchange for
/// `resource_url`; `previous` are scopes already granted (kept on step-up).
pub async fn authorize(
    fetch: &Fetch,
    config: &OAuthConfig,
    resource_url: &str,
    challenge: &Challenge,
    previous: Option<&str>,
) -> Result<Tokens, String> {
    // Protected resource metadata: over https for an https resource.
    let https_resource = resource_url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    let mut prm = None;
    for url in prm_candidates(resource_url, challenge) {
        if https_resource {
            require_https(&url, "protected resource metadata")?;
        }
        if let Some(doc) = get_json(fetch, &url).await? {
            prm = Some(doc);
            break;
        }
    }
    let prm = prm.ok_or("no protected resource metadata was found")?;
    let resource = prm
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or(resource_url)
        .to_owned();
    if !resource_matches(&resource, resource_url) {
        return Err(format!(
            "the protected resource metadata names {resource:?}, not {resource_url:?}"
        ));
    }
    let issuer = prm
        .pointer("/authorization_servers/0")
        .and_then(Value::as_str)
        .ok_or("the protected resource metadata names no authorization server")?
        .to_owned();
    // Authorization server metadata, and every endpoint it names: over https (loopback
    // aside), checked before anything is sent there.
    require_https(&issuer, "authorization server")?;
    let mut meta = None;
    for url in metadata_candidates(&issuer) {
        require_https(&url, "authorization server metadata")?;
        if let Some(doc) = get_json(fetch, &url).await? {
            meta = Some(doc);
            break;
        }
    }
    let meta = meta.ok_or_else(|| format!("no metadata for the authorization server {issuer}"))?;
    let recorded_issuer = meta.get("issuer").and_then(Value::as_str).unwrap_or("");
    if recorded_issuer != issuer {
        return Err(format!(
            "the authorization server's metadata names issuer {recorded_issuer:?}, not {issuer:?}"
        ));
    }
    for key in METADATA_ENDPOINTS {
        if let Some(url) = meta.get(key).and_then(Value::as_str) {
            require_https(url, key)?;
        }
    }
    let endpoint = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_owned);
    let authorization_endpoint =
        endpoint("authorization_endpoint").ok_or("no authorization_endpoint")?;
    let token_endpoint = endpoint("token_endpoint").ok_or("no token_endpoint")?;
    let methods: Vec<&str> = meta
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_else(|| vec!["client_secret_basic"]);
    // Registration.
    let (client_id, client_secret, auth_method) = if let Some(id) = &config.client_id {
        let method = if config.client_key.is_some() {
            "private_key_jwt"
        } else if config.client_secret.is_none() {
            "none"
        } else if methods.contains(&"client_secret_basic") {
            "client_secret_basic"
        } else {
            "client_secret_post"
        };
        (id.clone(), config.client_secret.clone(), method.to_owned())
    } else if let (Some(url), Some(true)) = (
        &config.client_metadata_url,
        meta.get("client_id_metadata_document_supported")
            .and_then(Value::as_bool),
    ) {
        (url.clone(), None, "none".to_owned())
    } else {
        let register = endpoint("registration_endpoint")
            .ok_or("the authorization server offers no registration and no client id was given")?;
        let method = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| methods.contains(m))
            .unwrap_or("client_secret_basic");
        let body = json!({
            "client_name": config.client_name,
            "redirect_uris": [config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native",
        });
        let r = fetch(
            "POST",
            register,
            vec![("Content-Type".into(), "application/json".into())],
            body.to_string().into_bytes(),
        )
        .await?;
        let doc: Value = serde_json::from_slice(&r.body)
            .map_err(|_| format!("registration failed with HTTP {}", r.status))?;
        let id = doc
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("registration failed with HTTP {}", r.status))?
            .to_owned();
        let secret = doc
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let method = doc
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or(method)
            .to_owned();
        (id, secret, method)
    };
    let registration = ClientRegistration {
        token_endpoint,
        client_id: client_id.clone(),
        client_secret: client_secret.clone(),
        auth_method: auth_method.clone(),
        resource: resource.clone(),
        issuer: Some(issuer.clone()),
    };
    // DPoP-bound tokens when the server offers them.
    let dpop = config.dpop.as_deref().filter(|_| dpop::offered(&meta));
    let mut scope = union_scopes(previous, choose_scope(challenge, &prm).as_deref());
    // A grant with no user in it (a JWT bearer assertion, client credentials): one token
    // request, the scope added.
    let grant = if let Some(grant) = &config.jwt_bearer {
        Some(jwt_bearer_pairs(fetch, grant, &issuer, &resource).await?)
    } else if config.client_credentials {
        Some(vec![
            ("grant_type".to_owned(), "client_credentials".to_owned()),
            ("resource".to_owned(), resource.clone()),
        ])
    } else {
        None
    };
    if let Some(mut pairs) = grant {
        if let Some(s) = &scope {
            pairs.push(("scope".into(), s.clone()));
        }
        let (headers, pairs) = client_auth(config, &registration, pairs)?;
        return token_request(
            fetch,
            config,
            resource_url,
            headers,
            &pairs,
            scope,
            registration,
            dpop,
        )
        .await;
    }
    // A refresh token is only issued for offline_access on servers that list it.
    if let Some(s) = &scope
        && offers(&meta, "offline_access")
    {
        scope = union_scopes(Some(s), Some("offline_access"));
    }
    // Authorization request.
    let mut random = [0u8; 48];
    getrandom::fill(&mut random).map_err(|e| format!("no randomness for PKCE: {e}"))?;
    let mut verifier_bytes = [0u8; 32];
    verifier_bytes.copy_from_slice(&random[..32]);
    let (verifier, code_challenge) = pkce(verifier_bytes);
    let state = URL_SAFE_NO_PAD.encode(&random[32..]);
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", config.redirect_uri.as_str()),
        ("code_challenge", code_challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", resource.as_str()),
    ];
    if let Some(s) = &scope {
        query.push(("scope", s.as_str()));
    }
    let sep = if authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    let url = format!("{authorization_endpoint}{sep}{}", form(&query));
    let location = if let Some(user_agent) = &config.user_agent {
        user_agent(url).await?
    } else {
        let r = fetch("GET", url, Vec::new(), Vec::new()).await?;
        match (r.status, r.location) {
            (300..=399, Some(l)) => l,
            (status, _) => {
                return Err(format!(
                    "the authorization endpoint answered HTTP {status} instead of redirecting (an interactive login needs a user agent: OAuthConfig::user_agent)"
                ));
            }
        }
    };
    let params = query_params(&location);
    if let Some(e) = params.get("error") {
        return Err(format!("authorization refused: {e}"));
    }
    if params.get("state") != Some(&state) {
        return Err("the authorization response's state does not match".into());
    }
    let advertised = meta
        .get("authorization_response_iss_parameter_supported")
        .and_then(Value::as_bool)
        == Some(true);
    match params.get("iss") {
        Some(iss) if iss != recorded_issuer => {
            return Err(format!(
                "the authorization response's iss {iss:?} is not the issuer {recorded_issuer:?}"
            ));
        }
        None if advertised => {
            return Err(
                "the authorization response has no iss, though the server advertises it".into(),
            );
        }
        _ => {}
    }
    let code = params
        .get("code")
        .ok_or("the authorization response has no code")?;
    // Token request.
    let pairs = owned(&[
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", config.redirect_uri.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", resource.as_str()),
    ]);
    let (headers, pairs) = client_auth(config, &registration, pairs)?;
    token_request(
        fetch,
        config,
        resource_url,
        headers,
        &pairs,
        scope,
        registration,
        dpop,
    )
    .await
}

/// Whether the authorization server metadata lists `scope` in `scopes_supported`.
fn offers(meta: &Value, scope: &str) -> bool {
    meta.get("scopes_supported")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|v| v.as_str() == Some(scope)))
}

/// Refreshes `tokens` (RFC 6749 section 6) at the token endpoint they came from, keeping the
/// old refresh token when the server issues no new one; the result goes to the store.
pub async fn refresh(
    fetch: &Fetch,
    config: &OAuthConfig,
    resource_url: &str,
    tokens: &Tokens,
) -> Result<Tokens, String> {
    let refresh_token = tokens.refresh_token.as_deref().ok_or("no refresh token")?;
    let client = tokens
        .client
        .clone()
        .ok_or("the tokens do not say which client they belong to")?;
    let pairs = owned(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", client.resource.as_str()),
    ]);
    let (headers, pairs) = client_auth(config, &client, pairs)?;
    // A DPoP-bound token is refreshed with a proof of the same key.
    let dpop = config
        .dpop
        .as_deref()
        .filter(|d| tokens.dpop_jkt.as_deref() == Some(d.thumbprint().as_str()));
    let mut fresh = token_request(
        fetch,
        config,
        resource_url,
        headers,
        &pairs,
        tokens.scope.clone(),
        client.clone(),
        dpop,
    )
    .await?;
    if fresh.refresh_token.is_none() {
        fresh.refresh_token = Some(refresh_token.to_owned());
        config.store.put(resource_url, fresh.clone());
    }
    Ok(fresh)
}

/// Form fields.
type Pairs = Vec<(String, String)>;

fn owned(pairs: &[(&str, &str)]) -> Pairs {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The token endpoint authentication: `client_secret_basic` (an `Authorization` header),
/// `client_secret_post` (in the body), `private_key_jwt` (a signed client assertion, RFC
/// 7523 section 2.2) or `none` (the client id in the body).
fn client_auth(
    config: &OAuthConfig,
    client: &ClientRegistration,
    mut pairs: Pairs,
) -> Result<(Headers, Pairs), String> {
    let mut headers = vec![(
        "Content-Type".to_owned(),
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let id = client.client_id.clone();
    match (client.auth_method.as_str(), &client.client_secret) {
        ("private_key_jwt", _) => {
            let key = config
                .client_key
                .as_ref()
                .ok_or("private_key_jwt needs OAuthConfig::client_key")?;
            let audience = client.issuer.as_deref().unwrap_or(&client.token_endpoint);
            pairs.push((
                "client_assertion_type".into(),
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
            ));
            pairs.push((
                "client_assertion".into(),
                client_assertion(key, &id, audience)?,
            ));
        }
        ("client_secret_basic", Some(secret)) => {
            let basic = STANDARD.encode(format!("{}:{}", form_encode(&id), form_encode(secret)));
            headers.push(("Authorization".into(), format!("Basic {basic}")));
        }
        ("client_secret_post", Some(secret)) => {
            pairs.push(("client_id".into(), id));
            pairs.push(("client_secret".into(), secret.clone()));
        }
        _ => pairs.push(("client_id".into(), id)),
    }
    Ok((headers, pairs))
}

/// The error a token endpoint answered with, for the user.
fn token_error(status: u16, doc: &Value) -> String {
    let field = |k: &str| doc.get(k).and_then(Value::as_str);
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!("the token request failed with HTTP {status}: {e}: {d}"),
        (Some(e), None) => format!("the token request failed with HTTP {status}: {e}"),
        _ => format!("the token request failed with HTTP {status}"),
    }
}

/// POSTs a token request (with a DPoP proof when `dpop` is given, sent again once with the
/// server's nonce if it asks for one) and keeps the tokens it returns.
#[allow(clippy::too_many_arguments)]
async fn token_request(
    fetch: &Fetch,
    config: &OAuthConfig,
    resource_url: &str,
    headers: Headers,
    pairs: &[(String, String)],
    scope: Option<String>,
    client: ClientRegistration,
    dpop: Option<&Dpop>,
) -> Result<Tokens, String> {
    let body = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    require_https(&client.token_endpoint, "token_endpoint")?;
    let mut nonce_retried = false;
    let (status, doc) = loop {
        let mut headers = headers.clone();
        if let Some(d) = dpop {
            headers.push((
                "DPoP".into(),
                d.proof("POST", &client.token_endpoint, None)?,
            ));
        }
        let r = fetch(
            "POST",
            client.token_endpoint.clone(),
            headers,
            body.clone().into_bytes(),
        )
        .await?;
        let doc: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        if let (Some(d), Some(nonce)) = (dpop, &r.dpop_nonce) {
            let fresh = d.note_nonce(&client.token_endpoint, nonce);
            let asked = dpop::asks_for_nonce(doc.get("error").and_then(Value::as_str));
            if asked && fresh && !nonce_retried {
                nonce_retried = true;
                continue;
            }
        }
        break (r.status, doc);
    };
    let access_token = doc
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|_| (200..300).contains(&status))
        .ok_or_else(|| token_error(status, &doc))?
        .to_owned();
    let token_type = doc
        .get("token_type")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let bound = token_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
    let tokens = Tokens {
        access_token,
        refresh_token: doc
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(str::to_owned),
        scope: doc
            .get("scope")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(scope),
        expires_at: doc
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|secs| unix_now().saturating_add(secs)),
        client: Some(client),
        token_type,
        dpop_jkt: dpop.filter(|_| bound).map(Dpop::thumbprint),
    };
    config.store.put(resource_url, tokens.clone());
    Ok(tokens)
}

/// Whether the metadata's `resource` identifies `url` (same origin, a path prefix).
fn resource_matches(resource: &str, url: &str) -> bool {
    match (split_url(resource), split_url(url)) {
        (Some((ro, rp)), Some((uo, up))) => {
            ro.eq_ignore_ascii_case(&uo) && up.starts_with(rp.trim_end_matches('/'))
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
