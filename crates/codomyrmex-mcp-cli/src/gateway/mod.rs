//! `codomyrmex-mcp gateway`: many MCP servers mounted under namespaces behind one endpoint.
//!
//! What exists so far is `gateway --check --config FILE`: it reads and checks the
//! configuration ([`config`]), connects to every upstream (a stdio child, or a Streamable
//! HTTP URL), lists what each offers, merges the listings under their namespaces
//! ([`catalog`]) and prints the merged catalogue with everything that was left out and why.
//! Serving the catalogue (the proxying, the era bridge, restarts and health checks) is not
//! built yet: `gateway` without `--check` says so and exits with status 2.

pub mod catalog;
pub mod config;

use std::process::ExitCode;
use std::time::Duration;

use codomyrmex_mcp::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{ClientOptions, EraPreference, StdioCommand};
use serde_json::{Value, json};

use self::catalog::{Catalogue, Listing, Mount};
use self::config::{GatewayConfig, Upstream, UpstreamTransport};
use crate::cli::GatewayArgs;

/// The most pages read from one list method of one upstream.
const MAX_PAGES: usize = 100;

/// Runs `gateway`.
pub async fn run(args: GatewayArgs) -> ExitCode {
    let config = match GatewayConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("codomyrmex-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.check {
        eprintln!(
            "codomyrmex-mcp: gateway: serving is not built yet; `gateway --check --config FILE` \
             checks a configuration and prints the merged catalogue"
        );
        return ExitCode::from(2);
    }
    let listed = list_upstreams(&config.upstreams).await;
    let mut down = Vec::new();
    let listings: Vec<Listing> = listed
        .into_iter()
        .zip(&config.upstreams)
        .map(|(r, u)| {
            r.unwrap_or_else(|e| {
                down.push(json!({"upstream": u.name, "error": e}));
                Listing::default()
            })
        })
        .collect();
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
    let catalogue = Catalogue::build(&mounts);
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
        let out = json!({
            "tools": names(&catalogue.tools),
            "prompts": names(&catalogue.prompts),
            "resources": names(&catalogue.resources),
            "resourceTemplates": names(&catalogue.templates),
            "unreachable": down,
            "problems": problems,
        });
        crate::emit(&format!("{out:#}\n"));
    } else {
        crate::emit(&render(&config, &catalogue, &down));
    }
    if down.is_empty() && catalogue.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Lists every upstream at once, each within its own timeout.
async fn list_upstreams(upstreams: &[Upstream]) -> Vec<Result<Listing, String>> {
    let handles: Vec<_> = upstreams
        .iter()
        .map(|u| {
            let transport = match &u.transport {
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
            };
            let timeout = u.timeout;
            tokio::spawn(async move { list_upstream(transport, timeout).await })
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

/// An upstream's address, owned (for a spawned task).
enum Target {
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
}

async fn list_upstream(target: Target, timeout: Duration) -> Result<Listing, String> {
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
            McpClient::spawn(&c, ClientOptions::default())
                .map_err(|e| format!("cannot start {command:?}: {e}"))?
        }
        Target::Http { url, token } => {
            let mut t = HttpTarget::new(url.clone());
            t.token = token;
            McpClient::connect_http(t, ClientOptions::default())
                .map_err(|e| format!("url {url:?}: {e}"))?
        }
    };
    let listed = tokio::time::timeout(timeout, list_all(&client))
        .await
        .map_err(|_| format!("no complete listing within {} s", timeout.as_secs()));
    // Ends the session (DELETE) or the child.
    client.close(Duration::from_secs(2)).await;
    listed?
}

/// The era's handshake (2026-07-28 first), then every list method the server's capabilities declare.
async fn list_all(client: &McpClient) -> Result<Listing, String> {
    let init = client
        .negotiate(EraPreference::Auto, Duration::from_secs(5))
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
    }
    Ok(listing)
}

/// Every page of a list method, up to [`MAX_PAGES`].
async fn paged(client: &McpClient, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = client
            .request(method, params)
            .await
            .map_err(|e| format!("{method} failed: {e}"))?;
        let Some(list) = page.get(key).and_then(Value::as_array) else {
            return Err(format!("{method}: the result has no `{key}` array"));
        };
        items.extend(list.iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => return Ok(items),
        }
    }
    Err(format!("{method}: more than {MAX_PAGES} pages"))
}

/// The human-readable catalogue: per upstream, what it mounts; then what was left out.
fn render(config: &GatewayConfig, catalogue: &Catalogue, down: &[Value]) -> String {
    let mut out = String::new();
    for (i, u) in config.upstreams.iter().enumerate() {
        let how = match &u.transport {
            UpstreamTransport::Stdio { command, .. } => format!("stdio: {command}"),
            UpstreamTransport::Http { url, .. } => format!("http: {url}"),
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
        ] {
            for (local, entry) in table.iter().filter(|(_, e)| e.upstream == i) {
                if *local == format!("{}.{}", u.name, entry.upstream_name)
                    || label == "resource"
                    || label == "template"
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
    out
}
