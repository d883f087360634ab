//! A fake OAuth-protected MCP endpoint for tests, shared by the library's
//! `tests/client_oauth.rs` and the CLI's `tests/client_oauth_cli.rs`: one loopback listener
//! that is the protected resource (a 2025-11-25 MCP endpoint at `/mcp` taking bearer tokens,
//! with one tool, `fake-tool`) and its authorization server (metadata, dynamic registration,
//! an authorization endpoint that redirects to the `redirect_uri` at once, a token endpoint
//! with the code, refresh, JWT bearer and client credentials grants, DPoP when `dpop` is set, and an enterprise
//! IdP's token exchange at `/idp/token`). It records what it saw.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use codomyrmex_mcp::client::oauth::query_params;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake saw and decides.
#[derive(Default)]
pub struct Fake {
    pub base: String,
    /// Access tokens the resource accepts.
    pub valid: HashSet<String>,
    /// `expires_in` of tokens from the code grant.
    pub code_expires_in: u64,
    /// Whether the authorization server lists `offline_access`.
    pub offers_offline: bool,
    /// The `scope` of each authorization request.
    pub authorizations: Vec<Option<String>>,
    /// The `grant_type` of each token request.
    pub grants: Vec<String>,
    /// The bearer token of each request to `/mcp`.
    pub bearers: Vec<Option<String>>,
    pub issued: usize,
    /// The form of each token request (at `/token` and `/idp/token`).
    pub forms: Vec<std::collections::HashMap<String, String>>,
    /// Whether each request to `/token` carried a DPoP proof.
    pub token_dpop: Vec<bool>,
    /// Dynamic registrations.
    pub registrations: usize,
    /// Offer DPoP (ES256) in the authorization server metadata, and bind tokens asked for
    /// with a proof.
    pub dpop: bool,
    /// The authorization scheme of each request to `/mcp` (`Bearer`, `DPoP`).
    pub schemes: Vec<Option<String>>,
    /// `token_endpoint_auth_methods_supported` in the metadata; `None`: `none` and
    /// `private_key_jwt`.
    pub auth_methods: Option<Vec<&'static str>>,
    /// The `Authorization` header of each request to `/token`.
    pub token_authorization: Vec<Option<String>>,
    /// The `Authorization` header of each request to `/idp/token`.
    pub idp_authorization: Vec<Option<String>>,
    /// The authorization server the protected resource metadata names; `None`: this fake.
    pub issuer: Option<String>,
    /// The method and target of every request, in order.
    pub requests: Vec<String>,
}

/// The pre-registered machine client the client credentials grant takes, and its secret
/// (`client_secret_basic` or `client_secret_post`; `private_key_jwt` is taken as given).
pub const M2M_CLIENT_ID: &str = "m2m-1";
/// [`M2M_CLIENT_ID`]'s secret.
pub const M2M_SECRET: &str = "m2m-secret-1";

/// Whether a token request authenticates [`M2M_CLIENT_ID`]: a Basic header or the form's
/// secret, or a client assertion.
fn m2m_authenticated(r: &Request, form: &std::collections::HashMap<String, String>) -> bool {
    use base64::Engine as _;
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{M2M_CLIENT_ID}:{M2M_SECRET}"));
    r.header("authorization") == Some(format!("Basic {basic}").as_str())
        || (form.get("client_id").map(String::as_str) == Some(M2M_CLIENT_ID)
            && form.get("client_secret").map(String::as_str) == Some(M2M_SECRET))
        || form.contains_key("client_assertion")
}

/// The JWT bearer assertions `/token` takes: a workload's JWT, and the ID-JAG `/idp/token`
/// issues for [`ID_TOKEN`].
pub const WORKLOAD_JWT: &str = "workload.jwt.1";
/// The ID token `/idp/token` exchanges.
pub const ID_TOKEN: &str = "user.id-token.1";
/// The ID-JAG `/idp/token` issues.
pub const ID_JAG: &str = "id.jag.1";

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

async fn read_request<S: AsyncRead + Unpin>(s: &mut S) -> Option<Request> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn respond(status: u16, headers: &str, body: &Value) -> Vec<u8> {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn handle(fake: &mut Fake, r: &Request) -> Vec<u8> {
    let base = fake.base.clone();
    fake.requests.push(format!("{} {}", r.method, r.target));
    let (path, _) = r.target.split_once('?').unwrap_or((&r.target, ""));
    match (r.method.as_str(), path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => respond(
            200,
            "",
            &json!({"resource": format!("{base}/mcp"), "authorization_servers": [fake.issuer.clone().unwrap_or(base)], "scopes_supported": ["mcp"]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => {
            let base = fake.issuer.clone().unwrap_or(base);
            let mut scopes = vec!["mcp"];
            if fake.offers_offline {
                scopes.push("offline_access");
            }
            respond(
                200,
                "",
                &json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "scopes_supported": scopes,
                    "token_endpoint_auth_methods_supported": fake.auth_methods.clone().unwrap_or_else(|| vec!["none", "private_key_jwt"]),
                    "code_challenge_methods_supported": ["S256"],
                    "dpop_signing_alg_values_supported": if fake.dpop { json!(["ES256"]) } else { Value::Null },
                }),
            )
        }
        ("POST", "/register") => {
            fake.registrations += 1;
            respond(
                201,
                "",
                &json!({"client_id": "client-1", "token_endpoint_auth_method": "none"}),
            )
        }
        ("POST", "/idp/token") => {
            let form = query_params(&format!(
                "{base}/idp/token?{}",
                String::from_utf8_lossy(&r.body)
            ));
            fake.forms.push(form.clone());
            fake.idp_authorization
                .push(r.header("authorization").map(str::to_owned));
            if form.get("subject_token").map(String::as_str) != Some(ID_TOKEN) {
                return respond(400, "", &json!({"error": "invalid_grant"}));
            }
            respond(
                200,
                "",
                &json!({"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
            )
        }
        ("GET", "/authorize") => {
            let q = query_params(&format!("{base}{}", r.target));
            fake.authorizations.push(q.get("scope").cloned());
            let location = format!(
                "{}?code=code-1&state={}",
                q["redirect_uri"],
                q.get("state").cloned().unwrap_or_default()
            );
            respond(302, &format!("Location: {location}\r\n"), &Value::Null)
        }
        ("POST", "/token") => {
            let form = query_params(&format!(
                "{base}/token?{}",
                String::from_utf8_lossy(&r.body)
            ));
            let grant = form.get("grant_type").cloned().unwrap_or_default();
            fake.grants.push(grant.clone());
            fake.forms.push(form.clone());
            let proof = r.header("dpop").is_some();
            fake.token_dpop.push(proof);
            fake.token_authorization
                .push(r.header("authorization").map(str::to_owned));
            let expires_in = match grant.as_str() {
                "authorization_code" if form.get("code").map(String::as_str) == Some("code-1") => {
                    fake.code_expires_in
                }
                "refresh_token"
                    if form.get("refresh_token").map(String::as_str) == Some("refresh-1") =>
                {
                    3600
                }
                "urn:ietf:params:oauth:grant-type:jwt-bearer"
                    if matches!(
                        form.get("assertion").map(String::as_str),
                        Some(WORKLOAD_JWT | ID_JAG)
                    ) =>
                {
                    3600
                }
                "client_credentials" if m2m_authenticated(r, &form) => 3600,
                "client_credentials" => {
                    return respond(401, "", &json!({"error": "invalid_client"}));
                }
                _ => return respond(400, "", &json!({"error": "invalid_grant"})),
            };
            fake.issued += 1;
            let access = format!("access-{}", fake.issued);
            fake.valid.insert(access.clone());
            let token_type = if fake.dpop && proof { "DPoP" } else { "Bearer" };
            let mut doc =
                json!({"access_token": access, "token_type": token_type, "expires_in": expires_in});
            if grant == "authorization_code" {
                doc["refresh_token"] = json!("refresh-1");
            }
            respond(200, "", &doc)
        }
        ("POST", "/mcp") => {
            let authorization = r.header("authorization").and_then(|v| v.split_once(' '));
            fake.schemes
                .push(authorization.map(|(scheme, _)| scheme.to_owned()));
            let bearer = authorization.map(|(_, token)| token.to_owned());
            fake.bearers.push(bearer.clone());
            if !bearer.is_some_and(|b| fake.valid.contains(&b)) {
                return respond(
                    401,
                    &format!(
                        "WWW-Authenticate: Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"\r\n"
                    ),
                    &Value::Null,
                );
            }
            let msg: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            match msg["method"].as_str() {
                Some("initialize") => respond(
                    200,
                    "Mcp-Session-Id: s1\r\n",
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}}),
                ),
                Some("tools/list") => respond(
                    200,
                    "",
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [{"name": "fake-tool", "description": "A tool behind OAuth.", "inputSchema": {"type": "object"}}]}}),
                ),
                Some("server/discover") => respond(
                    200,
                    "",
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}),
                ),
                Some(_) if msg.get("id").is_some() => respond(
                    200,
                    "",
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}}),
                ),
                _ => respond(202, "", &Value::Null),
            }
        }
        ("GET", "/mcp") => respond(405, "", &Value::Null),
        ("DELETE", "/mcp") => respond(200, "", &Value::Null),
        _ => respond(404, "", &Value::Null),
    }
}

/// Starts the fake; returns the MCP endpoint's URL and the shared state.
pub async fn start(code_expires_in: u64, offers_offline: bool) -> (String, Arc<Mutex<Fake>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let fake = Arc::new(Mutex::new(Fake {
        base: base.clone(),
        code_expires_in,
        offers_offline,
        ..Fake::default()
    }));
    serve(listener, fake.clone(), |s| async move { Some(s) });
    (format!("{base}/mcp"), fake)
}

/// Serves `fake` on `listener`, each connection through `wrap` (a TLS handshake, or
/// nothing).
pub fn serve<S, W, F>(listener: TcpListener, fake: Arc<Mutex<Fake>>, wrap: W)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    W: Fn(TcpStream) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = Option<S>> + Send + 'static,
{
    let wrap = Arc::new(wrap);
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let f = fake.clone();
            let wrap = wrap.clone();
            tokio::spawn(async move {
                let Some(mut s) = wrap(s).await else {
                    return;
                };
                let Some(r) = read_request(&mut s).await else {
                    return;
                };
                let bytes = handle(&mut f.lock().unwrap(), &r);
                let _ = s.write_all(&bytes).await;
                let _ = s.shutdown().await;
            });
        }
    });
}
