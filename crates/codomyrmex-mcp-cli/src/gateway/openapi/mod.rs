//! OpenAPI upstreams: `[[upstream]] openapi = "spec.yaml"` mounts a REST API, each of its
//! operations a tool.
//!
//! ```toml
//! [[upstream]]
//! name = "pets"
//! openapi = "pets.yaml"                    # a file (relative to this file) or an http(s) URL
//! base_url = "https://api.example/v1"      # optional: else the document's servers[0].url
//! auth = { type = "bearer", token = "..." }
//! # or { type = "header", name = "X-Api-Key", value = "..." }
//! # or { type = "basic", username = "...", password = "..." }
//! # or { type = "oauth_client_credentials", token_url = "...", client_id = "...",
//! #      client_secret = "...", scope = "..." }
//! max_response_bytes = 1048576             # optional: the largest answer relayed
//! ```
//!
//! The document is read once when the upstream's supervisor starts (a URL's body bounded
//! by [`MAX_SPEC_BYTES`], fetched with the same client as the calls), converted by
//! [`spec`] into a listing of tools, and mounted through the gateway's one path: the
//! catalogue's namespacing, include/exclude lists and renames ([`super::catalog`]), and the
//! gateway's registry, so authorization policies apply unchanged. A call ([`call`]) is
//! admitted by the upstream's `UpstreamPolicy` (its `max_concurrent`, `max_queued` and rate
//! limit) and runs within its timeout, exactly as a call to an MCP upstream. A document that
//! cannot be read is tried again with the supervisor's backoff.

pub mod call;
pub mod http;
pub mod spec;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codomyrmex_mcp::client::http::Endpoint;
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::{McpErrorDetail, ToolContext};
use codomyrmex_mcp::{ToolOutput, ToolRegistration};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value};

use self::http::{Client, ClientCredentials};
use self::spec::Operation;
use super::bridge::{Bridged, Live};
use super::catalog::{Catalogue, Filter, Listing, Mount};
use super::serve::Registries;
use crate::config::Secret;
use crate::portable::Naming;

/// The largest OpenAPI document read (GitHub's REST API, JSON, is about 12 MB).
pub const MAX_SPEC_BYTES: usize = 64 * 1024 * 1024;
/// The default of `max_response_bytes`.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// An upstream's `auth` table as written.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthFile {
    /// `Authorization: Bearer TOKEN`.
    Bearer {
        /// The token.
        token: String,
    },
    /// A header of the API's own (`X-Api-Key: VALUE`).
    Header {
        /// The header's name.
        name: String,
        /// Its value.
        value: String,
    },
    /// HTTP Basic.
    Basic {
        /// The user.
        username: String,
        /// The password.
        password: String,
    },
    /// An OAuth 2 client-credentials grant at `token_url`.
    OauthClientCredentials {
        /// The token endpoint.
        token_url: String,
        /// The client's id.
        client_id: String,
        /// The client's secret.
        client_secret: String,
        /// The scope asked for.
        scope: Option<String>,
    },
}

/// Where the document is.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecSource {
    /// A file.
    File(PathBuf),
    /// An `http://` or `https://` URL.
    Url(String),
}

impl std::fmt::Display for SpecSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(p) => write!(f, "{}", p.display()),
            Self::Url(u) => f.write_str(&codomyrmex_mcp::util::redact_url(u)),
        }
    }
}

/// How the calls authenticate.
#[derive(Debug, PartialEq)]
pub enum Auth {
    /// A bearer token.
    Bearer(Secret),
    /// A header and its value.
    Header(String, Secret),
    /// HTTP Basic, the header's value ready.
    Basic(Secret),
    /// OAuth client credentials.
    ClientCredentials(ClientCredentials),
}

/// A checked OpenAPI upstream (equal to another with the same keys: a reload keeps it
/// running).
#[derive(Debug, PartialEq)]
pub struct OpenApiUpstream {
    /// The document.
    pub spec: SpecSource,
    /// The API's base URL (else the document's first server).
    pub base_url: Option<String>,
    /// The calls' credentials.
    pub auth: Option<Arc<Auth>>,
    /// The largest answer relayed.
    pub max_response_bytes: usize,
}

/// Checks an `openapi` upstream's keys (`base` is the configuration file's folder).
pub fn check(
    name: &str,
    spec: String,
    base_url: Option<String>,
    auth: Option<AuthFile>,
    max_response_bytes: Option<usize>,
    base: Option<&Path>,
) -> Result<OpenApiUpstream, String> {
    let spec = if spec.starts_with("http://") || spec.starts_with("https://") {
        codomyrmex_mcp::client::http::parse_url(&spec)
            .map_err(|e| format!("{name:?}: openapi {e}"))?;
        SpecSource::Url(spec)
    } else {
        let p = PathBuf::from(spec);
        SpecSource::File(match base {
            Some(b) if p.is_relative() => b.join(p),
            _ => p,
        })
    };
    // Credentials never travel in clear off the machine (the rule of `token`).
    let in_clear = |url: &str, what: &str| -> Result<(), String> {
        let e = codomyrmex_mcp::client::http::parse_url(url)
            .map_err(|e| format!("{name:?}: {what} {e}"))?;
        if auth.is_some() && !e.https && !e.is_loopback() {
            return Err(format!(
                "{name:?}: `auth` would be sent in clear to {}: credentials are only sent over \
                 https:// (plain http:// only to a loopback host)",
                codomyrmex_mcp::util::redact_url(url)
            ));
        }
        Ok(())
    };
    if let Some(u) = &base_url {
        in_clear(u, "base_url")?;
    }
    let auth = match auth {
        None => None,
        Some(AuthFile::Bearer { token }) => Some(Auth::Bearer(Secret::from(token))),
        Some(AuthFile::Header {
            name: header,
            value,
        }) => {
            let valid = !header.is_empty()
                && header
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid {
                return Err(format!(
                    "{name:?}: auth header name {header:?} is not a header name"
                ));
            }
            Some(Auth::Header(header, Secret::from(value)))
        }
        Some(AuthFile::Basic { username, password }) => {
            use base64::Engine as _;
            let pair = format!("{username}:{password}");
            Some(Auth::Basic(Secret::from(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ))))
        }
        Some(AuthFile::OauthClientCredentials {
            token_url,
            client_id,
            client_secret,
            scope,
        }) => {
            let e = codomyrmex_mcp::client::http::parse_url(&token_url)
                .map_err(|e| format!("{name:?}: token_url {e}"))?;
            if !e.https && !e.is_loopback() {
                return Err(format!(
                    "{name:?}: token_url must be https:// (plain http:// only to a loopback host)"
                ));
            }
            Some(Auth::ClientCredentials(ClientCredentials::new(
                token_url,
                client_id,
                Secret::from(client_secret),
                scope,
            )))
        }
    };
    if let Some(a) = &auth {
        credential_header(a).map_err(|e| format!("{name:?}: auth: {e}"))?;
    }
    let max_response_bytes = max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
    if max_response_bytes == 0 {
        return Err(format!("{name:?}: max_response_bytes must be at least 1"));
    }
    Ok(OpenApiUpstream {
        spec,
        base_url,
        auth: auth.map(Arc::new),
        max_response_bytes,
    })
}

/// A loaded API: where its calls go and how, built once when it is mounted.
pub struct Api {
    /// The upstream's namespace, for messages.
    pub namespace: String,
    /// The base URL the paths are appended to, parsed: the origin the calls go to, and its
    /// path before each operation's.
    pub base: Endpoint,
    /// The calls' credentials.
    auth: Option<Arc<Auth>>,
    /// The headers every call sends: `Host`, `User-Agent`, `Accept`, and the credentials
    /// unless they are an OAuth grant (whose token is added to each call).
    headers: HeaderMap,
    /// The HTTP client (its connections kept for reuse).
    pub client: Client,
    /// The largest answer relayed.
    pub max_response_bytes: usize,
    /// The operations, by tool name at the upstream.
    pub operations: HashMap<String, Operation>,
}

/// The header fixed credentials are sent in (none for an OAuth grant, whose token changes):
/// checked with the configuration, built once when the API is mounted.
fn credential_header(auth: &Auth) -> Result<Option<(HeaderName, HeaderValue)>, String> {
    let secret = |text: &str| {
        let mut v = HeaderValue::from_str(text)
            .map_err(|_| "the credential is not a valid header value".to_owned())?;
        v.set_sensitive(true);
        Ok::<_, String>(v)
    };
    Ok(Some(match auth {
        Auth::ClientCredentials(_) => return Ok(None),
        Auth::Bearer(t) => (
            header::AUTHORIZATION,
            secret(&format!("Bearer {}", t.expose()))?,
        ),
        Auth::Header(name, v) => (
            HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("auth header name {name:?} is not a header name"))?,
            secret(v.expose())?,
        ),
        Auth::Basic(v) => (header::AUTHORIZATION, secret(v.expose())?),
    }))
}

/// The headers every call to `base` sends (see [`Api`]).
fn fixed_headers(base: &Endpoint, auth: Option<&Auth>) -> Result<HeaderMap, String> {
    let value = |text: &str, what: &str| {
        HeaderValue::from_str(text).map_err(|_| format!("{what} is not a valid header value"))
    };
    let mut headers = HeaderMap::with_capacity(4);
    headers.insert(header::HOST, value(&base.authority, "the base URL's host")?);
    headers.insert(
        header::USER_AGENT,
        HeaderValue::from_static(http::USER_AGENT),
    );
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    if let Some((name, value)) = auth.map(credential_header).transpose()?.flatten() {
        headers.append(name, value);
    }
    Ok(headers)
}

impl Api {
    /// The headers of a call: the fixed ones, and an OAuth grant's token (fetched when it
    /// has none valid).
    async fn headers(&self) -> Result<HeaderMap, String> {
        let mut headers = self.headers.clone();
        if let Some(Auth::ClientCredentials(grant)) = self.auth.as_deref() {
            // Boxed: the grant may fetch a token, a whole exchange of its own, which would
            // otherwise make every call's future larger.
            let token = Box::pin(grant.token(&self.client)).await?;
            let mut v = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| "the token endpoint's token is not a valid header value".to_owned())?;
            v.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, v);
        }
        Ok(headers)
    }

    /// Forgets an OAuth token the API refused; `false` when there is none to forget.
    async fn forget_token(&self) -> bool {
        match self.auth.as_deref() {
            Some(Auth::ClientCredentials(grant)) => {
                grant.forget().await;
                true
            }
            _ => false,
        }
    }
}

/// A loaded document: the API, its tools as a listing, the operations left out, and how
/// long reading and converting took.
pub struct Loaded {
    /// The API.
    pub api: Arc<Api>,
    /// Its tools.
    pub listing: Listing,
    /// The operations left out, and why.
    pub problems: Vec<String>,
    /// The time from the start of the read to the converted listing.
    pub took: Duration,
}

/// Reads the document and converts it.
/// The operations left out are those `filter` would have mounted.
pub async fn load(namespace: &str, u: &OpenApiUpstream, filter: &Filter) -> Result<Loaded, String> {
    let started = Instant::now();
    let client = Client::new()?;
    let text = match &u.spec {
        SpecSource::File(path) => {
            let size = tokio::fs::metadata(path)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                .len();
            if size > MAX_SPEC_BYTES as u64 {
                return Err(format!(
                    "{} is {size} bytes, more than the {MAX_SPEC_BYTES} an OpenAPI document may be",
                    path.display()
                ));
            }
            tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        }
        SpecSource::Url(url) => {
            let answer = client
                .send(
                    "GET",
                    url,
                    &[(
                        "accept".to_owned(),
                        "application/json, application/yaml;q=0.9, */*;q=0.5".to_owned(),
                    )],
                    Vec::new(),
                    MAX_SPEC_BYTES,
                )
                .await?;
            if answer.truncated {
                return Err(format!(
                    "{} is larger than the {MAX_SPEC_BYTES} bytes an OpenAPI document may be",
                    u.spec
                ));
            }
            if answer.status != 200 {
                return Err(format!("{} answered HTTP {}", u.spec, answer.status));
            }
            String::from_utf8(answer.body).map_err(|_| format!("{} is not UTF-8", u.spec))?
        }
    };
    // Parsing and converting a large document is CPU work: off the runtime's threads.
    let converted =
        tokio::task::spawn_blocking(move || spec::parse(&text).map(|d| spec::convert(&d)))
            .await
            .map_err(|_| "converting the document failed".to_owned())?
            .map_err(|e| format!("{}: {e}", u.spec))?;
    let base_url = match (&u.base_url, &converted.server) {
        (Some(b), _) => b.clone(),
        (None, Some(s)) if s.starts_with("http://") || s.starts_with("https://") => {
            if u.auth.is_some() {
                let e = codomyrmex_mcp::client::http::parse_url(s)?;
                if !e.https && !e.is_loopback() {
                    return Err(format!(
                        "the document's server {} is plain http://: set base_url to an https:// URL \
                         for the credentials",
                        codomyrmex_mcp::util::redact_url(s)
                    ));
                }
            }
            s.clone()
        }
        (None, _) => {
            return Err(
                "the document names no absolute server URL: set `base_url` of the upstream".into(),
            );
        }
    };
    let base = codomyrmex_mcp::client::http::parse_url(&base_url)?;
    let headers = fixed_headers(&base, u.auth.as_deref())?;
    let api = Api {
        namespace: namespace.to_owned(),
        base,
        headers,
        auth: u.auth.clone(),
        client,
        max_response_bytes: u.max_response_bytes,
        operations: converted.operations,
    };
    Ok(Loaded {
        api: Arc::new(api),
        listing: Listing {
            tools: converted.tools,
            ..Listing::default()
        },
        problems: converted
            .problems
            .into_iter()
            .filter(|p| p.tool.as_deref().is_none_or(|t| filter.admits(t)))
            .map(|p| p.message)
            .collect(),
        took: started.elapsed(),
    })
}

/// Reads the document (again with backoff while it cannot be read) and mounts the API's
/// tools, keeping what is mounted in `mounted` (the supervisor unmounts it when a reload
/// retires the upstream); `first_attempt` hears when the first reading ended. A REST API has
/// no connection to watch: once mounted, it stays until the supervisor is stopped.
pub async fn keep_mounted(
    u: Arc<OpenApiUpstream>,
    (filter, naming): (&Filter, &Naming),
    live: &Arc<Live>,
    r: &Registries,
    first_attempt: tokio::sync::oneshot::Sender<()>,
    mounted: &mut Option<Catalogue>,
) {
    let mut first_attempt = Some(first_attempt);
    let mut backoff = Duration::from_secs(1);
    let loaded = loop {
        match load(&live.name, &u, filter).await {
            Ok(l) => break l,
            Err(e) => {
                tracing::warn!(upstream = %live.name, error = %codomyrmex_mcp::util::inert_text(&e), retry_in_secs = backoff.as_secs(), "OpenAPI document unreadable");
                live.stats.failed(&e);
                if let Some(tx) = first_attempt.take() {
                    let _ = tx.send(());
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    };
    for p in &loaded.problems {
        tracing::warn!(upstream = %live.name, problem = %codomyrmex_mcp::util::inert_text(p), "left out");
    }
    let catalogue = mount(&loaded, (filter, naming), live, r);
    tracing::info!(
        upstream = %live.name,
        tools = catalogue.tools.len(),
        load_ms = loaded.took.as_millis() as u64,
        "OpenAPI upstream mounted"
    );
    live.stats.ready();
    live.stats.mounted(catalogue.tools.len());
    *mounted = Some(catalogue);
    if let Some(tx) = first_attempt.take() {
        let _ = tx.send(());
    }
    std::future::pending::<()>().await;
}

/// Mounts the loaded API's tools under the upstream's namespace and filter.
fn mount(
    loaded: &Loaded,
    (filter, naming): (&Filter, &Naming),
    live: &Arc<Live>,
    r: &Registries,
) -> Catalogue {
    let catalogue = Catalogue::build_named(
        &[Mount {
            namespace: &live.name,
            filter,
            listing: &loaded.listing,
        }],
        naming,
    );
    for p in &catalogue.problems {
        tracing::warn!(upstream = %p.upstream, problem = %p.message, "left out");
    }
    for (local, entry) in &catalogue.tools {
        let definition = match super::serve::tool_definition(local, &entry.definition) {
            Ok(d) => match entry.definition.get("outputSchema") {
                Some(s) => d.with_output_schema(s.clone()),
                None => d,
            },
            Err(e) => {
                tracing::warn!(upstream = %live.name, tool = %local, error = %e, "not mounted");
                continue;
            }
        };
        let Some(op) = loaded.api.operations.get(&entry.upstream_name) else {
            continue;
        };
        let (api, op, upstream) = (loaded.api.clone(), Arc::new(op.clone()), live.clone());
        let handler = move |arguments: Map<String, Value>, context: ToolContext| {
            let (api, op, live) = (api.clone(), op.clone(), upstream.clone());
            async move { call_within_policy(&live, &api, &op, arguments, context).await }
        };
        let settings = super::serve::tool_settings(live);
        if let Err(e) = r
            .tools
            .register_tool(ToolRegistration::new(definition, handler).with_settings(settings))
        {
            tracing::warn!(upstream = %live.name, tool = %local, error = %e, "not mounted");
        }
    }
    catalogue
}

/// A call admitted by the upstream's policy and run within its timeout.
async fn call_within_policy(
    live: &Live,
    api: &Api,
    op: &Operation,
    arguments: Map<String, Value>,
    context: ToolContext,
) -> ToolOutput {
    let timer = live.stats.call("tools/call");
    let out = call_counted(live, api, op, arguments, context).await;
    let error = out
        .result
        .error()
        .map(|detail| super::observe::error_kind(&detail.error_type));
    timer.done(error);
    out
}

/// [`call_within_policy`]'s work, which it counts.
async fn call_counted(
    live: &Live,
    api: &Api,
    op: &Operation,
    arguments: Map<String, Value>,
    context: ToolContext,
) -> ToolOutput {
    let _turn = match live.admit(&context).await {
        Ok(turn) => turn,
        Err(Bridged::Failed(detail)) => return ToolOutput::failure(detail),
        Err(_) => {
            return ToolOutput::failure(McpErrorDetail::new(
                "CANCELLED",
                "the call was cancelled while it waited for its turn",
            ));
        }
    };
    // Pinned here and lent: the call's future is large (its request, the answer, the
    // connection it drives), and the deadline's layers would each hold a copy.
    // The gateway's span is the parent of the API's, as for any upstream ([`super::trace`]).
    let traceparent = super::trace::upstream_traceparent(context.meta());
    let work = std::pin::pin!(call::run(api, op, &arguments, traceparent.as_deref()));
    match live.policy.within(&TOKIO, work).await {
        Ok(out) => out,
        Err(_) => ToolOutput::failure(McpErrorDetail::new(
            "UPSTREAM_TIMEOUT",
            format!(
                "upstream {} did not answer within {} s",
                live.name,
                live.timeout().as_secs()
            ),
        )),
    }
}
