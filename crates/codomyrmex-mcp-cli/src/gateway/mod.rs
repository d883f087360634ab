//! `codomyrmex-mcp gateway`: many MCP servers mounted under namespaces behind one endpoint.
//!
//! `gateway --check --config FILE` reads and checks the
//! configuration ([`config`]), connects to every upstream (a stdio child, or a Streamable
//! HTTP URL), lists what each offers, merges the listings under their namespaces
//! ([`catalog`]) and prints the merged catalogue with everything that was left out and why.
//! Without `--check`, the gateway serves the catalogue over stdio ([`serve`]): each mounted
//! tool and prompt forwards to its upstream; `--http ADDR` serves Streamable HTTP instead,
//! with `serve`'s policies; each upstream is watched by a supervisor ([`supervise`]:
//! health checks, restarts with backoff); calls carry the upstreams' requests for input
//! across the era bridge ([`bridge`]). An `openapi` upstream is a REST API whose operations
//! are mounted as tools ([`openapi`]). On SIGHUP or a change of the file, the configuration
//! is applied anew without dropping a client ([`reload`]).

mod apps;
mod bridge;
pub mod catalog;
pub mod config;
mod observe;
pub mod openapi;
pub mod reload;
mod serve;
mod skills;
mod status;
mod subscriptions;
mod supervise;
mod trace;
mod uri;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{ClientHandlers, ClientOptions, EraPreference, StdioCommand};
use codomyrmex_mcp::driver;
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::transport::http::HealthDetails;
use codomyrmex_mcp::{
    McpPromptRegistry, McpResourceRegistry, McpServer, McpServerConfig, McpToolRegistry,
};
use serde_json::{Value, json};

use self::catalog::{Catalogue, Listing, Mount};
use self::config::{GatewayConfig, Upstream, UpstreamTransport};
use crate::cli::GatewayArgs;
use crate::config::{HttpSettings, Secret};

/// Runs `gateway`.
pub async fn run(args: GatewayArgs) -> ExitCode {
    if let Some(crate::cli::GatewayAction::Status(status)) = &args.action {
        return status::run(status).await;
    }
    let Some(path) = args.config.as_deref() else {
        eprintln!("codomyrmex-mcp: gateway needs --config FILE");
        return ExitCode::from(2);
    };
    let config = match GatewayConfig::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("codomyrmex-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.check {
        let o = &args.http_options;
        let http = args.http.map(|listen| HttpSettings {
            listen: Some(listen),
            auth_token: o
                .auth_token
                .clone()
                .filter(|t| !t.is_empty())
                .map(Secret::from),
            allowed_hosts: o.allowed_hosts.clone(),
            allowed_origins: o.allowed_origins.clone(),
            cors_origins: o.cors_origins.clone(),
            jwks: o.jwks.clone(),
            issuer: o.issuer.clone(),
            audience: o.audience.clone(),
            required_scopes: o.required_scopes.clone(),
            ..HttpSettings::default()
        });
        return match serve_catalogue(path.to_path_buf(), config, http, !args.no_rate_limit).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("codomyrmex-mcp: gateway: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let connected = connect_upstreams(&config.upstreams, &[]).await;
    let mut down = Vec::new();
    let mut problems_before = Vec::new();
    let mut listings = Vec::with_capacity(connected.len());
    for (r, u) in connected.into_iter().zip(&config.upstreams) {
        match r {
            Ok((client, listing, left_out)) => {
                // Ends the session (DELETE) or the child.
                if let Some(client) = client {
                    client.close(Duration::from_secs(2)).await;
                }
                listings.push(listing);
                problems_before.extend(left_out.into_iter().map(|message| catalog::Problem {
                    upstream: u.name.clone(),
                    message,
                }));
            }
            Err(e) => {
                down.push(json!({"upstream": u.name, "error": e}));
                listings.push(Listing::default());
            }
        }
    }
    let mounts: Vec<Mount<'_>> = config
        .upstreams
        .iter()
        .zip(&listings)
        .map(|(u, listing)| Mount {
            namespace: &u.name,
            filter: &u.filter,
            listing,
        })
        .collect();
    let mut catalogue = Catalogue::build_named(&mounts, &config.naming);
    problems_before.append(&mut catalogue.problems);
    catalogue.problems = problems_before;
    // What clients would see: the definitions, under their local names.
    let names = |m: &std::collections::BTreeMap<String, catalog::Entry>| {
        m.values().map(|e| e.definition.clone()).collect::<Vec<_>>()
    };
    let problems: Vec<Value> = catalogue
        .problems
        .iter()
        .map(|p| json!({"upstream": p.upstream, "problem": p.message}))
        .collect();
    if args.json {
        // The mapping of names, for each tool and prompt: local name, upstream, its name there.
        let mapping = |m: &std::collections::BTreeMap<String, catalog::Entry>| {
            m.iter()
                .map(|(local, e)| {
                    json!({
                        "name": local,
                        "upstream": config.upstreams[e.upstream].name,
                        "upstreamName": e.upstream_name,
                    })
                })
                .collect::<Vec<_>>()
        };
        let out = json!({
            "nameStyle": config.naming.style(),
            "names": {"tools": mapping(&catalogue.tools), "prompts": mapping(&catalogue.prompts)},
            "tools": names(&catalogue.tools),
            "prompts": names(&catalogue.prompts),
            "resources": names(&catalogue.resources),
            "resourceTemplates": names(&catalogue.templates),
            "skills": names(&catalogue.skills),
            "unreachable": down,
            "problems": problems,
        });
        crate::emit(&format!("{out:#}\n"));
    } else {
        // Upstreams' URIs and errors are their text: inert on the terminal.
        let text = render(&config, &catalogue, &down);
        crate::emit(&codomyrmex_mcp::util::inert_text(&text));
    }
    if down.is_empty() && catalogue.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The longest the gateway waits for its upstreams' first connections before it serves: a
/// client that lists at once sees every upstream that answered by then, and a client's
/// `server/discover` probe (the Python SDK gives it 10 s) is answered well within its time.
const START_WAIT: Duration = Duration::from_secs(5);
/// The longest the first page of one of an upstream's lists may take, read for its `ttlMs`.
const LIST_TTL_WAIT: Duration = Duration::from_secs(5);

/// Serves the merged catalogue over stdio (until EOF or a signal), or over Streamable HTTP
/// with `http`'s settings (until a signal). Each upstream is watched by its own supervisor.
async fn serve_catalogue(
    path: std::path::PathBuf,
    config: GatewayConfig,
    http: Option<HttpSettings>,
    rate_limit: bool,
) -> Result<(), String> {
    let shutdown = crate::signals::Signals::install()?.shutdown();
    let hangup = reload::Hangup::install()?;
    let registries = serve::Registries {
        tools: Arc::new(McpToolRegistry::new()),
        prompts: Arc::new(McpPromptRegistry::new()),
        resources: Arc::new(McpResourceRegistry::new()),
        skills: Arc::new(codomyrmex_mcp::skills::McpSkillRegistry::new()),
        bare_names: Arc::new(apps::BareNames::default()),
    };
    registries.tools.set_resolver(registries.bare_names.clone());
    // Each supervisor connects its upstream; the gateway serves once every first attempt
    // ended, or after START_WAIT: a late upstream joins the catalogue later (clients hear
    // `list_changed`), and a hanging one never holds up the others or the handshake.
    let mut running = std::collections::BTreeMap::new();
    let mut first_attempts = Vec::with_capacity(config.upstreams.len());
    for u in &config.upstreams {
        let (r, first) = reload::start(u, &config.naming, &registries, None);
        running.insert(u.name.clone(), r);
        first_attempts.push(first);
    }
    let all_tried = async {
        for rx in first_attempts {
            let _ = rx.await;
        }
    };
    if driver::within(&TOKIO, START_WAIT, all_tried).await.is_err() {
        tracing::info!("serving before every upstream answered; the others join when they do");
    }
    let lives: Vec<Arc<bridge::Live>> = running.values().map(|r| r.live().clone()).collect();
    let mut list_ttl: Option<Duration> = None;
    for live in &lives {
        if let Some(client) = live.client()
            && let Some(ttl) = upstream_list_ttl(&client).await
        {
            list_ttl = Some(list_ttl.map_or(ttl, |t| t.min(ttl)));
        }
    }
    let registries_kept = registries.clone();
    let serve::Registries {
        tools,
        prompts,
        resources,
        skills,
        ..
    } = registries;
    tracing::info!(
        tools = tools.len(),
        upstreams = config.upstreams.len(),
        over = if http.is_some() {
            "Streamable HTTP"
        } else {
            "stdio"
        },
        "gateway serving"
    );
    // The upstreams' own timeouts apply inside each call; the gateway's tool timeout only
    // bounds a call whose upstream ignores them.
    let longest = config
        .upstreams
        .iter()
        .map(|u| u.timeout)
        .max()
        .unwrap_or(Duration::from_secs(60));
    let mut server_config = McpServerConfig::new("codomyrmex-mcp-gateway", codomyrmex_mcp::VERSION)
        .with_tool_timeout(longest + Duration::from_secs(5));
    if !rate_limit {
        server_config = server_config.with_rate_limit(None);
    }
    server_config.authorization = config.authorization.clone();
    // 2026-07-28 clients may cache the gateway's lists no longer than the upstreams' own.
    if let Some(ttl) = list_ttl {
        server_config.list_ttl = server_config.list_ttl.min(ttl);
    }
    let server = McpServer::new(server_config, tools)
        .with_prompts(prompts)
        .with_resources(resources)
        .with_skills(skills);
    let logs = bridge::session_logs(server.engine().clone());
    for live in &lives {
        live.inbox.serve_logs_with(logs.clone());
    }
    drop(lives);
    let upstreams = config
        .upstreams
        .iter()
        .filter_map(|u| {
            running
                .get(&u.name)
                .map(|r| (u.name.clone(), r.live().stats.clone()))
        })
        .collect();
    let live_config = reload::LiveConfig::new(Arc::new(config), upstreams);
    // Each upstream's figures on `/metrics` and `/status`, with the configuration's
    // generation, read from the configuration in force (a reload replaces both).
    let observed = live_config.clone();
    server
        .engine()
        .config()
        .observers
        .add(Arc::new(observe::GatewayObserved::new(move || {
            observed.served()
        })));
    eprintln!("codomyrmex-mcp: gateway: configuration generation 1 is live");
    let reloader = reload::Reloader {
        path,
        registries: registries_kept,
        engine: server.engine().clone(),
        logs,
        config: live_config.clone(),
    };
    let _reloading = bridge::AbortOnDrop(tokio::spawn(reloader.run(running, hangup)));
    match http {
        None => server
            .serve_stdio_until(shutdown)
            .await
            .map_err(|e| e.to_string()),
        Some(mut settings) => {
            settings.health_details = Some(HealthDetails::new(move || live_config.health_fields()));
            let bind = settings.listen.ok_or("no address to listen on")?;
            crate::serve::serve_http(&server, bind, &settings, rate_limit, None, shutdown).await
        }
    }
}

/// The shortest `ttlMs` of the first page of the upstream's lists (2026-07-28 upstreams
/// send one; `None` for a 2025-11-25 upstream or one that names none).
async fn upstream_list_ttl(client: &McpClient) -> Option<Duration> {
    if client.era() != codomyrmex_mcp::Era::Modern {
        return None;
    }
    let mut shortest: Option<Duration> = None;
    for method in ["tools/list", "prompts/list", "resources/list"] {
        let page = driver::within(&TOKIO, LIST_TTL_WAIT, client.request(method, json!({})));
        if let Ok(Ok(page)) = page.await
            && let Some(ms) = page.get("ttlMs").and_then(Value::as_u64)
        {
            let ttl = Duration::from_millis(ms);
            shortest = Some(shortest.map_or(ttl, |s| s.min(ttl)));
        }
    }
    shortest
}

/// Connects to every upstream at once and lists what each offers, each within its own
/// timeout (an OpenAPI upstream: its document read, with the operations left out).
async fn connect_upstreams(
    upstreams: &[Upstream],
    handlers: &[ClientHandlers],
) -> Vec<Result<(Option<McpClient>, Listing, Vec<String>), String>> {
    let handles: Vec<_> = upstreams
        .iter()
        .zip(
            handlers
                .iter()
                .cloned()
                .chain(std::iter::repeat(ClientHandlers::new())),
        )
        .map(|(u, handlers)| {
            let transport = target_of(u);
            let timeout = u.timeout;
            let era = u.era;
            let handlers = handlers.clone();
            let name = u.name.clone();
            let filter = u.filter.clone();
            tokio::spawn(async move {
                if let Target::OpenApi(api) = transport {
                    let loaded = openapi::load(&name, &api, &filter).await?;
                    tracing::info!(upstream = %name, tools = loaded.listing.tools.len(), load_ms = loaded.took.as_millis() as u64, "OpenAPI document read");
                    return Ok((None, loaded.listing, loaded.problems));
                }
                let (client, listing) = connect_upstream(transport, timeout, era, handlers).await?;
                Ok((Some(client), listing, Vec::new()))
            })
        })
        .collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(
            h.await
                .unwrap_or_else(|_| Err("the listing task failed".to_owned())),
        );
    }
    out
}

/// The address of `u`, owned.
fn target_of(u: &Upstream) -> Target {
    match &u.transport {
        UpstreamTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Target::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.clone().into_iter().collect(),
            cwd: cwd.clone(),
        },
        UpstreamTransport::Http { url, token } => Target::Http {
            url: url.clone(),
            token: token.as_ref().map(|t| t.expose().to_owned()),
        },
        UpstreamTransport::OpenApi(api) => Target::OpenApi(api.clone()),
    }
}

/// An upstream's address, owned (for a spawned task).
#[derive(Clone)]
pub(super) enum Target {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<std::path::PathBuf>,
    },
    Http {
        url: String,
        token: Option<String>,
    },
    /// A REST API: no MCP connection; its supervisor mounts it with [`openapi::keep_mounted`].
    OpenApi(Arc<openapi::OpenApiUpstream>),
}

pub(super) async fn connect_upstream(
    target: Target,
    timeout: Duration,
    era: EraPreference,
    handlers: ClientHandlers,
) -> Result<(McpClient, Listing), String> {
    let options = ClientOptions {
        handlers,
        ..ClientOptions::default()
    };
    let client = match target {
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut c = StdioCommand::new(command.clone());
            c.args = args;
            c.env = env;
            c.cwd = cwd;
            McpClient::spawn(&c, options).map_err(|e| format!("cannot start {command:?}: {e}"))?
        }
        Target::Http { url, token } => {
            let mut t = HttpTarget::new(url.clone());
            t.token = token;
            McpClient::connect_http(t, options)
                .map_err(|e| format!("url {:?}: {e}", codomyrmex_mcp::util::redact_url(&url)))?
        }
        Target::OpenApi(_) => return Err("an OpenAPI upstream has no MCP connection".into()),
    };
    let listed = driver::within(&TOKIO, timeout, list_all(&client, era))
        .await
        .map_err(|_| format!("no complete listing within {} s", timeout.as_secs()))
        .and_then(|r| r);
    match listed {
        Ok(listing) => Ok((client, listing)),
        Err(e) => {
            client.close(Duration::from_secs(2)).await;
            Err(e)
        }
    }
}

/// The era's handshake (2026-07-28 first), then every list method the server's capabilities declare.
async fn list_all(client: &McpClient, era: EraPreference) -> Result<Listing, String> {
    let init = client
        .negotiate(era, Duration::from_secs(5))
        .await
        .map_err(|e| format!("no connection: {e}"))?;
    let caps = init.get("capabilities").cloned().unwrap_or(Value::Null);
    let has = |c: &str| caps.get(c).is_some_and(|v| !v.is_null());
    let mut listing = Listing::default();
    if has("tools") {
        listing.tools = paged(client, "tools/list", "tools").await?;
    }
    if has("prompts") {
        listing.prompts = paged(client, "prompts/list", "prompts").await?;
    }
    if has("resources") {
        listing.resources = paged(client, "resources/list", "resources").await?;
        listing.templates = paged(client, "resources/templates/list", "resourceTemplates").await?;
        listing.subscribe = caps["resources"]["subscribe"] == Value::Bool(true);
    }
    let skills_extension = codomyrmex_mcp::wire::skills::SKILLS_EXTENSION;
    if caps["extensions"].get(skills_extension).is_some() {
        listing.skills = paged(client, "skills/list", "skills").await?;
    }
    if has("logging") && client.era() == codomyrmex_mcp::Era::Legacy {
        // Every message it has; each is relayed only as far as the gateway's client's
        // own level (`logging/setLevel`, or a request's log level `_meta`) lets it.
        if let Err(e) = client
            .set_log_level(codomyrmex_mcp::LoggingLevel::Debug)
            .await
        {
            tracing::debug!(error = %e, "the upstream refused logging/setLevel");
        }
    }
    Ok(listing)
}

/// Every page of a list method (the client bounds the pages and honours `ttlMs`).
async fn paged(client: &McpClient, method: &str, key: &str) -> Result<Vec<Value>, String> {
    client
        .list_all(method, key)
        .await
        .map_err(|e| format!("{method} failed: {e}"))
}

/// The human-readable catalogue: per upstream, what it mounts; then what was left out.
fn render(config: &GatewayConfig, catalogue: &Catalogue, down: &[Value]) -> String {
    let mut out = String::new();
    if config.naming.is_portable() {
        out.push_str(&format!(
            "names: portable (separator {:?}): each tool and prompt as NAME = upstream.name\n",
            config.naming.separator()
        ));
    }
    for (i, u) in config.upstreams.iter().enumerate() {
        let how = match &u.transport {
            UpstreamTransport::Stdio { command, .. } => format!("stdio: {command}"),
            UpstreamTransport::Http { url, .. } => {
                format!("http: {}", codomyrmex_mcp::util::redact_url(url))
            }
            UpstreamTransport::OpenApi(api) => format!("openapi: {}", api.spec),
        };
        out.push_str(&format!(
            "{} ({how}; timeout {} s, at most {} calls in flight)\n",
            u.name,
            u.timeout.as_secs(),
            u.max_concurrent
        ));
        for (label, table) in [
            ("tool", &catalogue.tools),
            ("prompt", &catalogue.prompts),
            ("resource", &catalogue.resources),
            ("template", &catalogue.templates),
            ("skill", &catalogue.skills),
        ] {
            for (local, entry) in table.iter().filter(|(_, e)| e.upstream == i) {
                if config.naming.is_portable() && (label == "tool" || label == "prompt") {
                    // The mapping: the portable name, then the dotted name it stands for; a
                    // name the rule cannot turn back (shortened, or holding the separator)
                    // is said to be so: only this table routes it.
                    let suffix = if label == "tool" {
                        u.filter.renamed(&entry.upstream_name)
                    } else {
                        &entry.upstream_name
                    };
                    let dotted = format!("{}.{suffix}", u.name);
                    let note = if config.naming.decode(local).as_deref() != Some(&dotted) {
                        "  (not decodable: routed by the table)"
                    } else {
                        ""
                    };
                    out.push_str(&format!(
                        "  {label:<8} {local}  = {dotted}{}{note}\n",
                        if suffix == entry.upstream_name {
                            String::new()
                        } else {
                            format!(" (upstream: {})", entry.upstream_name)
                        }
                    ));
                } else if *local == format!("{}.{}", u.name, entry.upstream_name)
                    || matches!(label, "resource" | "template" | "skill")
                {
                    out.push_str(&format!("  {label:<8} {local}\n"));
                } else {
                    out.push_str(&format!(
                        "  {label:<8} {local}  (upstream: {})\n",
                        entry.upstream_name
                    ));
                }
            }
        }
    }
    for d in down {
        out.push_str(&format!(
            "unreachable: {}: {}\n",
            d["upstream"].as_str().unwrap_or_default(),
            d["error"].as_str().unwrap_or_default()
        ));
    }
    for p in &catalogue.problems {
        out.push_str(&format!("left out: {}: {}\n", p.upstream, p.message));
    }
    if let Some(policy) = &config.authorization {
        out.push_str(&render_policy(policy, catalogue));
    }
    out
}

/// What each principal of the policy may use of the catalogue (`--check`).
fn render_policy(policy: &codomyrmex_mcp::authz::Authorization, catalogue: &Catalogue) -> String {
    use codomyrmex_mcp::authz::Kind;
    let mut out = String::new();
    for principal in policy.principals() {
        out.push_str(&format!("principal {principal} may use:\n"));
        let mut any = false;
        for (label, kind, table) in [
            ("tool", Kind::Tool, &catalogue.tools),
            ("prompt", Kind::Prompt, &catalogue.prompts),
            ("resource", Kind::Resource, &catalogue.resources),
            ("template", Kind::Resource, &catalogue.templates),
        ] {
            for local in table.keys() {
                let kind = if kind == Kind::Resource {
                    Kind::of_uri(local)
                } else {
                    kind
                };
                if policy.principal_allows(principal, kind, local) {
                    out.push_str(&format!("  {label:<8} {local}\n"));
                    any = true;
                }
            }
        }
        if !any {
            out.push_str("  nothing\n");
        }
    }
    out
}
