//! `serve`, `tools` and `config`: the server side of the command.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::ServeDirectory as _;
use codomyrmex_mcp::transport::http::{
    AuthConfig, HttpConfig, HttpError, HttpServer, Jwks, JwtConfig, ProxyNet, StaticToken,
};
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServer,
    McpServerConfig, McpToolRegistry, ToolDefinition,
};
use codomyrmex_mcp::{PromptArgument, PromptDefinition, PromptMessage, PromptResult};
use serde_json::Value;

use crate::config::{Effective, HttpSettings, Profile, StoreUrl};
use crate::root_resources::{MAX_WALKED_ENTRIES, RootFiles};
use crate::signals::Signals;
use crate::tools::{self, Sandbox, Workspace};
use codomyrmex_mcp::store::{EventStore, MessageBus, SessionStore};

/// The URI prefix under which the root's files are served as resources.
pub const RESOURCE_PREFIX: &str = "codomyrmex://root/";

/// Builds the workspace and the registry of built-in tools for `config`.
pub fn registry(
    config: &Effective,
    helper: Option<PathBuf>,
) -> Result<(Arc<McpToolRegistry>, Workspace), String> {
    let sandbox = Sandbox::new(&config.root)
        .map_err(|e| format!("the root {} is unusable: {e}", config.root.display()))?;
    let mut workspace = Workspace::new(sandbox, config.limits.clone(), config.shell.clone());
    if let Some(program) = helper {
        workspace = workspace.with_helper(program);
    }
    let registry = Arc::new(McpToolRegistry::new());
    tools::register_builtins(&registry, &workspace, config.profile).map_err(|e| e.to_string())?;
    if config.demo_tools {
        tools::register_demo(&registry).map_err(|e| e.to_string())?;
    }
    rename_portable(&registry, &config.naming());
    Ok((registry, workspace))
}

/// Renames every tool of `registry` by `naming` ([`crate::portable`]); a tool whose new
/// name another tool already has is left out (never merged), with a warning.
fn rename_portable(registry: &McpToolRegistry, naming: &crate::portable::Naming) {
    if !naming.is_portable() {
        return;
    }
    for name in registry.list_tools() {
        let local = naming.local(&name);
        if let Err(e) = registry.rename(&name, local) {
            registry.unregister(&name);
            tracing::warn!(tool = %name, error = %e, "left out: its portable name is taken");
        }
    }
}

/// Builds the server for `config`: the tools, the root's files as resources and a prompt.
#[cfg(test)]
pub fn server(config: &Effective) -> Result<McpServer, String> {
    server_with_key(config, None)
}

/// Builds the server for `config` (as the tests' `server` does), sealing `requestState` with `request_state_key` (shared by every instance of
/// a service) instead of a key of its own.
pub fn server_with_key(
    config: &Effective,
    request_state_key: Option<[u8; 32]>,
) -> Result<McpServer, String> {
    let worker = std::env::current_exe().ok();
    let (registry, workspace) = registry(config, worker)?;
    let mut server_config = McpServerConfig::new("codomyrmex-mcp", codomyrmex_mcp::VERSION)
        .with_instructions(format!(
            "Codomyrmex MCP server ({} profile). Tools are named {}; paths are relative \
             to the server's root and cannot leave it. Call {} to \
             see what is available. Files are also readable as resources {RESOURCE_PREFIX}PATH.",
            config.profile.as_str(),
            config.naming().local("module.tool"),
            config.naming().local("codomyrmex.list_registered_tools"),
        ))
        .with_tool_timeout(Duration::from_secs(config.timeout_secs));
    server_config.request_state_key = request_state_key;
    server_config.authorization = config.authorization.clone();
    if !config.rate_limit {
        server_config = server_config.with_rate_limit(None);
    }
    let resources = Arc::new(McpResourceRegistry::new());
    resources
        .serve_confined(
            workspace.sandbox().confined().clone(),
            RESOURCE_PREFIX,
            "root",
        )
        .map_err(|e| e.to_string())?;
    resources.add_lister(RootFiles::new(
        workspace.sandbox().confined().clone(),
        RESOURCE_PREFIX,
        MAX_WALKED_ENTRIES,
    ));
    if tools::test_tools::enabled() {
        tracing::warn!(
            "{}=1: the test tools are registered",
            tools::test_tools::ENV
        );
        tools::test_tools::register(&registry, &resources).map_err(|e| e.to_string())?;
    }
    let prompts = Arc::new(McpPromptRegistry::new());
    let naming = config.naming();
    // The prompt names the tools as clients see them.
    let guide = format!(
        "Start with {} (recursive, a small max_depth), read the README with {}, use {} to \
         find symbols and {} / {} for recent work. Paths are relative to the root.",
        naming.local("file_system.list_directory"),
        naming.local("file_system.read"),
        naming.local("file_system.search"),
        naming.local("git.log"),
        naming.local("git.status"),
    );
    prompts.add(
        PromptDefinition::new(
            naming.local("codomyrmex.explore"),
            "Explore the project under the server's root with the built-in tools.",
        )
        .with_argument(PromptArgument::optional(
            "goal",
            "What you want to find out or change",
        )),
        move |request: codomyrmex_mcp::PromptRequest| {
            let guide = guide.clone();
            async move {
                let goal = request
                    .arguments
                    .get("goal")
                    .map_or("get an overview of the project", String::as_str);
                Ok::<_, McpErrorDetail>(PromptResult {
                    description: Some("Explore the project".into()),
                    messages: vec![PromptMessage::user(ContentBlock::text(format!(
                        "Goal: {goal}.\n{guide}"
                    )))],
                })
            }
        },
    );
    let server = McpServer::new(server_config, registry)
        .with_resources(resources)
        .with_prompts(prompts);
    Ok(match &config.skills {
        Some(dir) => server.with_skills(crate::skills::registry(dir)?),
        None => server,
    })
}

/// The HTTP transport's configuration.
#[cfg(test)]
pub fn http_config(bind: std::net::SocketAddr, config: &Effective) -> Result<HttpConfig, String> {
    http_config_from(bind, &config.http, config.rate_limit)
}

/// The HTTP transport's configuration from HTTP settings, with every rate limit on or off.
pub fn http_config_from(
    bind: std::net::SocketAddr,
    h: &HttpSettings,
    rate_limit: bool,
) -> Result<HttpConfig, String> {
    let mut auth = AuthConfig::default();
    if let Some(token) = &h.auth_token {
        auth.static_tokens
            .push(StaticToken::new("static-token", token.expose()));
    }
    if let (Some(file), Some(issuer), Some(audience)) = (&h.jwks, &h.issuer, &h.audience) {
        let jwks = Jwks::from_file(file).map_err(|e| e.to_string())?;
        let mut jwt = JwtConfig::new(jwks, issuer.clone());
        jwt.required_scopes = h.required_scopes.clone();
        auth.jwt = Some(jwt);
        auth.resource = Some(audience.clone());
    }
    let auth = (!auth.static_tokens.is_empty() || auth.jwt.is_some()).then_some(auth);
    let mut http = HttpConfig {
        bind,
        auth,
        allowed_hosts: h.allowed_hosts.clone(),
        allowed_origins: h.allowed_origins.clone(),
        cors_origins: h.cors_origins.clone(),
        health_details: h.health_details.clone(),
        ..HttpConfig::default()
    };
    if let Some(secs) = h.session_idle_timeout_secs {
        http.session_idle_timeout = Duration::from_secs(secs);
    }
    if let Some(n) = h.max_sessions {
        http.max_sessions = n;
    }
    if let Some(n) = h.max_live_sessions {
        http.max_live_sessions = n;
    }
    if !rate_limit {
        // `--no-rate-limit` turns off every rate limit, the per-client HTTP ones included.
        http = http.without_rate_limits();
    }
    http.trusted_proxies = h
        .trusted_proxies
        .iter()
        .map(|p| p.parse::<ProxyNet>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok(http)
}

/// `serve`: stdio, or HTTP when an address is configured (unless `force_stdio`).
pub async fn serve(config: Effective, force_stdio: bool) -> Result<(), String> {
    let listen = config.http.listen.filter(|_| !force_stdio);
    if let Some(bind) = listen
        && config.profile == Profile::Full
        && !config.http.has_auth()
    {
        return Err(format!(
            "refusing to serve the full profile over HTTP ({bind}) without authentication: set \
             --auth-token (better: CODOMYRMEX_MCP_AUTH_TOKEN) or --jwks, or use the readonly \
             profile"
        ));
    }
    let mut shared = match (&config.store, listen) {
        (Some(url), Some(_)) => Some(connect_store(url, &config.http).await?),
        (Some(_), None) => {
            tracing::warn!(
                "the store is for instances serving HTTP; stdio keeps its state in memory"
            );
            None
        }
        (None, _) => None,
    };
    let server = server_with_key(&config, shared.as_ref().map(|s| s.request_state_key))?;
    // Task records through the store: the work stays here, leased for `task_lease` at a time.
    // Changes made here go out on the store's change bus, and those of others come in.
    // One name per process: the message bus's, also the owner of its task leases and the
    // origin of the changes it publishes.
    let (server, _task_sync) = match shared.as_mut() {
        Some(s) => {
            let lease = Duration::from_secs(config.task_lease_secs);
            match s.task_wakeups.take() {
                Some(w) => {
                    server.with_task_store_woken(s.tasks.clone(), s.instance.clone(), lease, w)
                }
                None => server.with_task_store(s.tasks.clone(), s.instance.clone(), lease),
            }
        }
        None => (server, None),
    };
    let _change_bridge = shared.as_ref().map(|s| {
        codomyrmex_mcp::runtime::spawn_change_bridge(
            server.engine(),
            s.changes.clone(),
            s.instance.clone(),
        )
    });
    tracing::info!(root = %config.root.display(), profile = config.profile.as_str(), "starting");
    // SIGINT and SIGTERM end the input like EOF does (stdio) or stop accepting (HTTP); the
    // in-flight calls get their grace period, a second signal exits at once.
    let shutdown = Signals::install()?.shutdown();
    match listen {
        None => server
            .serve_stdio_until(shutdown)
            .await
            .map_err(|e| e.to_string()),
        Some(bind) => {
            let stores = shared.map(|s| s.stores);
            serve_http(
                &server,
                bind,
                &config.http,
                config.rate_limit,
                stores,
                shutdown,
            )
            .await
        }
    }
}

/// What instances sharing a store share.
struct Shared {
    stores: SharedStores,
    /// The `requestState` sealing key, the same on every instance.
    request_state_key: [u8; 32],
    /// Task records, so that `tasks/*` work from any instance.
    tasks: Arc<dyn codomyrmex_mcp::task_store::TaskStore>,
    /// List changes and resource updates between instances.
    changes: Arc<dyn codomyrmex_mcp::change_bus::ChangeBus>,
    /// This instance's one name among those sharing the store (its message bus's).
    instance: String,
    /// Pushed when another instance cancels a task of this one or queues answers for it.
    task_wakeups: Option<codomyrmex_mcp::runtime::TaskWakeups>,
}

/// The stores the HTTP transport uses when instances share them.
pub struct SharedStores {
    /// The records of 2025-11-25 sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// Their SSE history, so a stream resumes on any instance.
    pub events: Arc<dyn EventStore>,
    /// Routing of client answers and cancellations to the instance whose call waits.
    pub bus: Arc<dyn MessageBus>,
}

/// Connects to the store at `url`.
#[cfg(feature = "redis")]
async fn connect_store(url: &StoreUrl, http: &HttpSettings) -> Result<Shared, String> {
    use codomyrmex_mcp_redis::{
        EventBounds, RedisBus, RedisChangeBus, RedisConnection, RedisEventStore, RedisSessionStore,
        RedisTaskStore,
    };
    let conn = RedisConnection::connect(url.expose())
        .await
        .map_err(|e| format!("cannot use the store {}: {e}", url.redacted()))?;
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(|e| format!("no OS randomness for a shared key: {e}"))?;
    let request_state_key = conn
        .shared_secret("request-state", fresh)
        .await
        .map_err(|e| format!("the store {}: {e}", url.redacted()))?;
    let bus = RedisBus::join(conn.clone())
        .await
        .map_err(|e| format!("the store {}: {e}", url.redacted()))?;
    // The transport's replay bounds, and the history kept as long as an idle session.
    let d = HttpConfig::default();
    let idle = http
        .session_idle_timeout_secs
        .map_or(d.session_idle_timeout, Duration::from_secs);
    let bounds = EventBounds::new(
        d.replay_events,
        d.replay_event_bytes,
        d.replay_stream_bytes,
        d.replay_session_bytes,
        d.replay_total_bytes,
    )
    .with_ttl(idle);
    tracing::info!(
        store = %url.redacted(),
        instance = bus.instance(),
        "sessions, SSE history, tasks, changes, the message bus and the requestState key are shared through the store"
    );
    let tasks = RedisTaskStore::new(conn.clone());
    let task_wakeups = tasks
        .wakeups(bus.instance())
        .await
        .map_err(|e| format!("the store {}: {e}", url.redacted()))?;
    Ok(Shared {
        instance: bus.instance().to_owned(),
        task_wakeups: Some(task_wakeups),
        tasks: Arc::new(tasks),
        changes: Arc::new(RedisChangeBus::new(conn.clone())),
        stores: SharedStores {
            sessions: Arc::new(RedisSessionStore::new(conn.clone())),
            events: Arc::new(RedisEventStore::new(conn, bounds)),
            bus: Arc::new(bus),
        },
        request_state_key,
    })
}

/// Without the `redis` feature there is no store to connect to.
#[cfg(not(feature = "redis"))]
async fn connect_store(url: &StoreUrl, _http: &HttpSettings) -> Result<Shared, String> {
    Err(format!(
        "this build has no Redis store (cargo feature \"redis\"): cannot use {}",
        url.redacted()
    ))
}

/// Serves `server` over Streamable HTTP at `bind` with the transport's policies from
/// `settings`, until `shutdown`. Shared by `serve` and `gateway`.
pub async fn serve_http(
    server: &McpServer,
    bind: std::net::SocketAddr,
    settings: &HttpSettings,
    rate_limit: bool,
    stores: Option<SharedStores>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let mut config = http_config_from(bind, settings, rate_limit)?;
    if let Some(s) = stores {
        config = config
            .with_session_store(s.sessions)
            .with_event_store(s.events)
            .with_message_bus(s.bus);
    }
    let http = HttpServer::new(server.engine().clone(), config);
    let listener = http.bind().await.map_err(|e| bind_error(bind, e))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // One line on stderr, whatever the log level: with `--http 127.0.0.1:0` it is the
    // only way to learn the port, and it tells a newcomer where to point a client.
    eprintln!("codomyrmex-mcp: serving MCP over Streamable HTTP at http://{addr}/mcp");
    http.serve(listener, shutdown)
        .await
        .map_err(|e| e.to_string())
}

/// What failed when binding `bind`, and what to do about it.
fn bind_error(bind: std::net::SocketAddr, e: HttpError) -> String {
    match e {
        HttpError::Io(io) if io.kind() == std::io::ErrorKind::AddrInUse => format!(
            "{bind} is already in use; pick another port with --http ADDR, or {} for a free one",
            std::net::SocketAddr::new(bind.ip(), 0)
        ),
        HttpError::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => format!(
            "not allowed to listen on {bind} ({io}); ports below 1024 need privileges: pick \
             another port with --http ADDR"
        ),
        HttpError::Io(io) => format!("cannot listen on {bind}: {io}"),
        other => other.to_string(),
    }
}

/// `tools`: the built-ins of the effective profile, as JSON or a table.
pub fn tools(config: &Effective, table: bool) -> Result<String, String> {
    let (registry, _) = registry(config, None)?;
    let defs = registry.definitions();
    if table {
        return Ok(render_tool_table(&defs));
    }
    serde_json::to_string_pretty(&defs).map_err(|e| e.to_string())
}

fn render_tool_table(defs: &[ToolDefinition]) -> String {
    let values: Vec<Value> = defs
        .iter()
        .filter_map(|d| serde_json::to_value(d).ok())
        .collect();
    crate::client_cmd::render_tools(&values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HttpSettings, Limits, Secret, ShellSettings};

    fn effective(profile: Profile, listen: Option<&str>, token: Option<&str>) -> Effective {
        let dir = std::env::temp_dir();
        let mut http = HttpSettings {
            listen: listen.map(|l| l.parse().unwrap()),
            ..HttpSettings::default()
        };
        http.auth_token = token.map(Secret::new);
        Effective {
            config_file: None,
            root: dir,
            profile,
            timeout_secs: 60,
            rate_limit: true,
            limits: Limits::default(),
            shell: ShellSettings::default(),
            http,
            store: None,
            task_lease_secs: crate::config::DEFAULT_TASK_LEASE_SECS,
            demo_tools: false,
            skills: None,
            policies: Vec::new(),
            authorization: None,
            name_style: crate::portable::NameStyle::Dotted,
            name_separator: crate::portable::DEFAULT_SEPARATOR.to_owned(),
        }
    }

    #[test]
    fn portable_names_rename_every_tool_and_the_prompt() {
        let portable = Effective {
            name_style: crate::portable::NameStyle::Portable,
            ..effective(Profile::Full, None, None)
        };
        let (r, _) = registry(&portable, None).unwrap();
        let names = r.list_tools();
        assert!(names.contains(&"file_system__read".to_owned()), "{names:?}");
        assert!(
            names.iter().all(|n| crate::portable::is_portable(n)),
            "{names:?}"
        );
        let server = server(&portable).unwrap();
        let prompts = server.engine().prompts().unwrap().names();
        assert_eq!(prompts, ["codomyrmex__explore"]);
    }

    #[test]
    fn the_demo_tools_exist_only_when_asked_for() {
        let plain = effective(Profile::Full, None, None);
        let (r, _) = registry(&plain, None).unwrap();
        assert!(
            r.get("demo.elicit").is_none(),
            "off by default, in every profile"
        );
        let demo = Effective {
            demo_tools: true,
            ..effective(Profile::Readonly, None, None)
        };
        let (r, _) = registry(&demo, None).unwrap();
        assert!(r.get("demo.elicit").is_some());
    }

    #[tokio::test]
    async fn the_full_profile_over_http_needs_authentication() {
        let e = serve(effective(Profile::Full, Some("127.0.0.1:0"), None), false)
            .await
            .unwrap_err();
        assert!(e.contains("without authentication"), "{e}");
    }

    #[test]
    fn http_config_carries_the_token() {
        let c = effective(Profile::Full, Some("127.0.0.1:0"), Some("tok"));
        let h = http_config("127.0.0.1:0".parse().unwrap(), &c).unwrap();
        let auth = h.auth.unwrap();
        assert_eq!(auth.static_tokens.len(), 1);
        let none = http_config(
            "127.0.0.1:0".parse().unwrap(),
            &effective(Profile::Readonly, None, None),
        )
        .unwrap();
        assert!(none.auth.is_none());
    }

    #[test]
    fn no_rate_limit_turns_off_the_http_limits_too() {
        let mut c = effective(Profile::Readonly, Some("127.0.0.1:0"), Some("tok"));
        let on = http_config("127.0.0.1:0".parse().unwrap(), &c).unwrap();
        assert!(on.rate_limit.is_some() && on.auth_failure_rate_limit.is_some());
        c.rate_limit = false;
        let off = http_config("127.0.0.1:0".parse().unwrap(), &c).unwrap();
        assert!(off.rate_limit.is_none(), "the per-client request limit");
        assert!(
            off.auth_failure_rate_limit.is_none(),
            "the refused-auth budget"
        );
    }

    #[test]
    fn tools_lists_the_profile() {
        let ro = tools(&effective(Profile::Readonly, None, None), false).unwrap();
        let v: Value = serde_json::from_str(&ro).unwrap();
        let names: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"file_system.read"));
        assert!(!names.contains(&"shell.run"));
        let table = tools(&effective(Profile::Full, None, None), true).unwrap();
        assert!(table.contains("shell.run"), "{table}");
        assert!(table.contains("argv (array, required)"), "{table}");
        assert!(server(&effective(Profile::Readonly, None, None)).is_ok());
    }
}
