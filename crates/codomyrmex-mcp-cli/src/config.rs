//! The effective configuration, merged from four sources. For each setting, the first source
//! that sets it wins:
//!
//! 1. command-line flags;
//! 2. environment variables (`CODOMYRMEX_MCP_*`);
//! 3. the TOML file named by `--config` (or `CODOMYRMEX_MCP_CONFIG`);
//! 4. built-in defaults.
//!
//! Clap resolves 1 and 2 (each flag declares its variable); [`resolve`] layers the file and
//! the defaults under them. Limits and `shell.run` settings come only from the file. There is
//! no implicit configuration file: a file found in a working directory could otherwise widen
//! the profile of whoever runs the server there.

use crate::portable::{NameStyle, Naming};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codomyrmex_mcp::authz::{Authorization, PolicyEntry};

use codomyrmex_mcp::transport::http::ProxyNet;
use serde::{Deserialize, Serialize, Serializer};

pub use crate::cli::Profile;
use crate::cli::ServerOptions;

/// Size and count limits of the file tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The most bytes `file_system.read` returns in one call.
    pub max_read_bytes: u64,
    /// The most entries `file_system.list_directory` returns.
    pub max_list_entries: usize,
    /// The most matches `file_system.search` returns.
    pub max_search_matches: usize,
    /// Files larger than this are skipped by `file_system.search`.
    pub max_search_file_bytes: u64,
    /// The largest file `file_system.edit` and `json.query` load.
    pub max_edit_bytes: u64,
    /// The most bytes of git output returned.
    pub max_git_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read_bytes: 1024 * 1024,
            max_list_entries: 2000,
            max_search_matches: 500,
            max_search_file_bytes: 10 * 1024 * 1024,
            max_edit_bytes: 16 * 1024 * 1024,
            max_git_output_bytes: 1024 * 1024,
        }
    }
}

/// Settings of `shell.run` (full profile only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShellSettings {
    /// The timeout of a command that names none, in seconds.
    pub default_timeout_secs: u64,
    /// The longest timeout a call may ask for, in seconds.
    pub max_timeout_secs: u64,
    /// The most bytes kept of each of stdout and stderr.
    pub max_output_bytes: usize,
    /// Program names (argv\[0\]) that may run; empty allows any. Only argv\[0\] is checked:
    /// what the program's arguments make it do (`git -c alias.x='!cmd' x`, `sh -c ...`) is
    /// not.
    pub allowed_commands: Vec<String>,
}

impl Default for ShellSettings {
    fn default() -> Self {
        Self {
            default_timeout_secs: 30,
            max_timeout_secs: 600,
            max_output_bytes: 64 * 1024,
            allowed_commands: Vec::new(),
        }
    }
}

/// The `[http]` table of the file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFile {
    #[serde(default, deserialize_with = "listen_address")]
    listen: Option<SocketAddr>,
    auth_token: Option<String>,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    cors_origins: Option<Vec<String>>,
    jwks: Option<PathBuf>,
    issuer: Option<String>,
    audience: Option<String>,
    required_scopes: Option<Vec<String>>,
    session_idle_timeout_secs: Option<u64>,
    max_sessions: Option<usize>,
    max_live_sessions: Option<usize>,
    trusted_proxies: Option<Vec<String>>,
}

/// `[http] listen`: like `--http`, an IP address or a loopback name with a port.
fn listen_address<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(d)?;
    crate::cli::parse_listen(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The TOML file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    root: Option<PathBuf>,
    profile: Option<Profile>,
    timeout_secs: Option<u64>,
    rate_limit: Option<bool>,
    limits: Option<Limits>,
    shell: Option<ShellSettings>,
    http: Option<HttpFile>,
    store: Option<StoreFile>,
    /// `[[policy]]`: who may list and use which names (see [`compile_policies`]).
    #[serde(default)]
    policy: Vec<toml::Spanned<PolicyEntry>>,
    /// `name_style = "dotted" | "portable"` ([`crate::portable`]).
    name_style: Option<NameStyle>,
    /// The portable style's separator (`__` unless given).
    name_separator: Option<String>,
}

/// The `[store]` table of the file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreFile {
    /// `redis://[:PASSWORD@]HOST:PORT[/DB]`.
    url: Option<String>,
    /// Seconds an instance's lease on its running tasks lasts.
    task_lease: Option<u64>,
}

/// Where shared state lives: a store URL, printed with its userinfo, query values and
/// fragment redacted ([`codomyrmex_mcp::util::redact_url`]).
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// The URL, password included.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with its userinfo, query values and fragment replaced.
    pub fn redacted(&self) -> String {
        codomyrmex_mcp::util::redact_url(&self.0)
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for StoreUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

impl FileConfig {
    /// Parses a file's text.
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_located(text).map_err(|(_, message)| message)
    }

    /// Parses a file's text; an error comes with the `line:column` (1-based) it is at.
    fn parse_located(text: &str) -> Result<Self, (Option<String>, String)> {
        parse_toml(text)
    }
}

/// Parses a TOML file's text into `T`; an error comes with the `line:column` (1-based) it is
/// at. Shared by every configuration file the binary reads (`serve`'s and the gateway's).
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, (Option<String>, String)> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let at = e.span().map(|span| line_column(text, span.start));
        (at, e.message().trim().to_owned())
    })
}

/// Compiles the `[[policy]]` tables of a configuration file (`serve`'s and the gateway's
/// share the schema, [`PolicyEntry`], and this parser) once, at load: `None` without any.
/// A rule that breaks the schema's rules is refused with the `line:column` of its table.
pub(crate) fn compile_policies(
    text: &str,
    entries: &[toml::Spanned<PolicyEntry>],
) -> Result<Option<Arc<Authorization>>, (Option<String>, String)> {
    let plain: Vec<PolicyEntry> = entries.iter().map(|e| e.get_ref().clone()).collect();
    match Authorization::compile(&plain) {
        Ok(compiled) => Ok(compiled.map(Arc::new)),
        Err(e) => {
            let at = entries
                .get(e.index)
                .map(|s| line_column(text, s.span().start));
            Err((at, e.to_string()))
        }
    }
}

/// The 1-based `line:column` of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    format!("{line}:{column}")
}

/// A secret: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    #[cfg(test)]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret's value.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// The effective HTTP settings.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HttpSettings {
    /// Serve Streamable HTTP at this address instead of stdio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// A static bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<Secret>,
    /// Extra allowed `Host` values.
    pub allowed_hosts: Vec<String>,
    /// Extra allowed `Origin` values.
    pub allowed_origins: Vec<String>,
    /// CORS origins.
    pub cors_origins: Vec<String>,
    /// JWKS file for JWT validation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks: Option<PathBuf>,
    /// Trusted JWT issuer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// This server's canonical URL (JWT audience).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Scopes every JWT must carry.
    pub required_scopes: Vec<String>,
    /// How long an unused legacy session lives, in seconds (default 600).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_idle_timeout_secs: Option<u64>,
    /// The most legacy sessions kept (in the store, when there is one; default 10,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<usize>,
    /// With a store, the most legacy sessions live in this process (default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_live_sessions: Option<usize>,
    /// Reverse proxies whose forwarded headers name the client (CIDR networks, normalized).
    pub trusted_proxies: Vec<String>,
    /// Fields the server adds to `/health` (the gateway's configuration generation); not
    /// part of the file.
    #[serde(skip)]
    pub health_details: Option<codomyrmex_mcp::transport::http::HealthDetails>,
}

impl HttpSettings {
    /// Whether any authentication is configured.
    pub fn has_auth(&self) -> bool {
        self.auth_token.is_some() || self.jwks.is_some()
    }
}

/// The configuration in force.
#[derive(Debug, Clone, Serialize)]
pub struct Effective {
    /// The file that was read, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_file: Option<PathBuf>,
    /// The sandbox root (absolute).
    pub root: PathBuf,
    /// The profile.
    pub profile: Profile,
    /// Default tool timeout, in seconds.
    pub timeout_secs: u64,
    /// Whether the tool-call rate limit is on.
    pub rate_limit: bool,
    /// File tool limits.
    pub limits: Limits,
    /// `shell.run` settings.
    pub shell: ShellSettings,
    /// HTTP settings.
    pub http: HttpSettings,
    /// Where shared state lives (`None`: in memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreUrl>,
    /// Seconds an instance's lease on its running tasks lasts, with a store: if it dies,
    /// other instances see its tasks fail at most this long after its last renewal.
    pub task_lease_secs: u64,
    /// Whether the demo tools are registered (`--demo-tools`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub demo_tools: bool,
    /// The skills directory published (`--skills`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<PathBuf>,
    /// The `[[policy]]` rules as written.
    #[serde(rename = "policy", skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicyEntry>,
    /// The rules compiled (`None`: no policy, everyone may use everything).
    #[serde(skip)]
    pub authorization: Option<Arc<Authorization>>,
    /// How tool and prompt names are spelled (`dotted` unless `portable`).
    #[serde(skip_serializing_if = "NameStyle::is_dotted")]
    pub name_style: NameStyle,
    /// The portable style's separator.
    #[serde(skip_serializing_if = "crate::portable::is_default_separator")]
    pub name_separator: String,
}

/// The task lease unless configured, in seconds.
pub const DEFAULT_TASK_LEASE_SECS: u64 = 10;
/// The task leases accepted, in seconds: at least 1 (renewed every quarter lease, at most a
/// second apart), at most an hour (how long a dead instance's tasks may read as `working`).
pub const TASK_LEASE_SECS: std::ops::RangeInclusive<u64> = 1..=3600;

/// Why the configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid.
    #[error(
        "invalid configuration file {}{}: {message} (see `codomyrmex-mcp config --example`)",
        path.display(),
        at.as_ref().map(|a| format!(":{a}")).unwrap_or_default()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// `line:column` of the error, when known.
        at: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Resolves the effective configuration from the command line (flags and environment, already
/// merged by clap), the file and the defaults.
pub fn resolve(opts: &ServerOptions) -> Result<Effective, ConfigError> {
    let (file, file_dir) = match &opts.config {
        None => (FileConfig::default(), None),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            let file =
                FileConfig::parse_located(&text).map_err(|(at, message)| ConfigError::Parse {
                    path: path.clone(),
                    at,
                    message,
                })?;
            // Checked here, where the text is, so that a bad rule is named by its line.
            compile_policies(&text, &file.policy).map_err(|(at, message)| ConfigError::Parse {
                path: path.clone(),
                at,
                message,
            })?;
            let dir = std::path::absolute(path)
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf));
            (file, dir)
        }
    };
    merge(opts, file, file_dir)
}

/// Merges `opts` over `file`; relative paths in the file are relative to `file_dir`.
pub fn merge(
    opts: &ServerOptions,
    file: FileConfig,
    file_dir: Option<PathBuf>,
) -> Result<Effective, ConfigError> {
    let from_file = |p: PathBuf| match &file_dir {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p,
    };
    let root = match (&opts.root, file.root) {
        (Some(r), _) => r.clone(),
        (None, Some(r)) => from_file(r),
        (None, None) => PathBuf::from("."),
    };
    let root = std::path::absolute(&root)
        .map_err(|e| ConfigError::Invalid(format!("root {}: {e}", root.display())))?;
    let timeout_secs = opts.timeout.or(file.timeout_secs).unwrap_or(60);
    if !(1..=86_400).contains(&timeout_secs) {
        return Err(ConfigError::Invalid(format!(
            "timeout_secs must be between 1 and 86400, not {timeout_secs}"
        )));
    }
    let shell = file.shell.unwrap_or_default();
    if shell.default_timeout_secs == 0 || shell.default_timeout_secs > shell.max_timeout_secs {
        return Err(ConfigError::Invalid(
            "shell.default_timeout_secs must be at least 1 and at most shell.max_timeout_secs"
                .into(),
        ));
    }
    let limits = file.limits.unwrap_or_default();
    if limits.max_read_bytes == 0 || limits.max_list_entries == 0 || limits.max_search_matches == 0
    {
        return Err(ConfigError::Invalid("limits must be positive".into()));
    }
    let h = file.http.unwrap_or_default();
    let o = &opts.http_options;
    let or_file = |cli: &Vec<String>, file: Option<Vec<String>>| {
        if cli.is_empty() {
            file.unwrap_or_default()
        } else {
            cli.clone()
        }
    };
    let http = HttpSettings {
        listen: opts.http.or(h.listen),
        auth_token: o
            .auth_token
            .clone()
            .or(h.auth_token)
            .filter(|t| !t.is_empty())
            .map(Secret),
        allowed_hosts: or_file(&o.allowed_hosts, h.allowed_hosts),
        allowed_origins: or_file(&o.allowed_origins, h.allowed_origins),
        cors_origins: or_file(&o.cors_origins, h.cors_origins),
        jwks: o.jwks.clone().or(h.jwks.map(from_file)),
        issuer: o.issuer.clone().or(h.issuer),
        audience: o.audience.clone().or(h.audience),
        required_scopes: or_file(&o.required_scopes, h.required_scopes),
        session_idle_timeout_secs: h.session_idle_timeout_secs,
        max_sessions: h.max_sessions,
        max_live_sessions: h.max_live_sessions,
        trusted_proxies: or_file(&o.trusted_proxies, h.trusted_proxies)
            .iter()
            .map(|p| {
                p.parse::<ProxyNet>()
                    .map(|n| n.to_string())
                    .map_err(|e| ConfigError::Invalid(format!("http.trusted_proxies: {e}")))
            })
            .collect::<Result<_, _>>()?,
        health_details: None,
    };
    if http
        .session_idle_timeout_secs
        .is_some_and(|s| !(1..=86_400).contains(&s))
    {
        return Err(ConfigError::Invalid(
            "http.session_idle_timeout_secs must be between 1 and 86400".into(),
        ));
    }
    if http
        .max_sessions
        .is_some_and(|n| !(1..=10_000_000).contains(&n))
    {
        return Err(ConfigError::Invalid(
            "http.max_sessions must be between 1 and 10000000".into(),
        ));
    }
    if http
        .max_live_sessions
        .is_some_and(|n| !(1..=1_000_000).contains(&n))
    {
        return Err(ConfigError::Invalid(
            "http.max_live_sessions must be between 1 and 1000000".into(),
        ));
    }
    if http.jwks.is_some() && (http.issuer.is_none() || http.audience.is_none()) {
        return Err(ConfigError::Invalid(
            "JWT validation (jwks) needs both issuer and audience".into(),
        ));
    }
    let file_store = file.store.unwrap_or_default();
    let task_lease_secs = opts
        .task_lease
        .or(file_store.task_lease)
        .unwrap_or(DEFAULT_TASK_LEASE_SECS);
    if !TASK_LEASE_SECS.contains(&task_lease_secs) {
        return Err(ConfigError::Invalid(format!(
            "store.task_lease must be between {} and {} seconds",
            TASK_LEASE_SECS.start(),
            TASK_LEASE_SECS.end()
        )));
    }
    let store = opts
        .store
        .clone()
        .or(file_store.url)
        .filter(|u| !u.is_empty())
        .map(StoreUrl);
    if let Some(url) = &store
        && !url.expose().starts_with("redis://")
    {
        return Err(ConfigError::Invalid(format!(
            "store {}: only redis://HOST:PORT[/DB] stores are supported",
            url.redacted()
        )));
    }
    let naming = Naming::new(
        opts.name_style.or(file.name_style).unwrap_or_default(),
        opts.name_separator
            .as_deref()
            .or(file.name_separator.as_deref()),
    )
    .map_err(ConfigError::Invalid)?;
    Ok(Effective {
        name_style: naming.style(),
        name_separator: naming.separator().to_owned(),
        config_file: opts.config.clone(),
        root,
        profile: opts.profile.or(file.profile).unwrap_or_default(),
        timeout_secs,
        rate_limit: !opts.no_rate_limit && file.rate_limit.unwrap_or(true),
        limits,
        shell,
        http,
        store,
        task_lease_secs,
        demo_tools: opts.demo_tools,
        skills: opts.skills.clone(),
        authorization: compile_policies("", &file.policy)
            .map_err(|(_, message)| ConfigError::Invalid(message))?,
        policies: file
            .policy
            .into_iter()
            .map(toml::Spanned::into_inner)
            .collect(),
    })
}

impl Effective {
    /// The mapping of names in force ([`crate::portable`]).
    pub fn naming(&self) -> Naming {
        Naming::new(self.name_style, Some(&self.name_separator)).unwrap_or_default()
    }

    /// The configuration as TOML, secrets redacted.
    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string(self).map_err(|e| e.to_string())
    }

    /// The configuration as JSON, secrets redacted.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| e.to_string())
    }
}

/// An annotated example file, printed by `config --example`.
pub const EXAMPLE: &str = r#"# codomyrmex-mcp configuration (pass with --config FILE or CODOMYRMEX_MCP_CONFIG=FILE).
# Precedence: command-line flags > CODOMYRMEX_MCP_* environment variables > this file > defaults.
# Relative paths here are relative to this file's directory.

root = "."               # the sandbox root (--root, CODOMYRMEX_MCP_ROOT)
profile = "readonly"     # or "full" (--profile, CODOMYRMEX_MCP_PROFILE)
timeout_secs = 60        # default tool timeout (--timeout, CODOMYRMEX_MCP_TIMEOUT)
rate_limit = true        # 50 calls/s, burst 100; false (--no-rate-limit, CODOMYRMEX_MCP_NO_RATE_LIMIT)
                         # also turns off the per-client HTTP limits

[limits]
max_read_bytes = 1048576
max_list_entries = 2000
max_search_matches = 500
max_search_file_bytes = 10485760
max_edit_bytes = 16777216
max_git_output_bytes = 1048576

[shell]                  # shell.run, full profile only
default_timeout_secs = 30
max_timeout_secs = 600
max_output_bytes = 65536
allowed_commands = []    # e.g. ["cargo", "ls"]; empty allows any program. Only argv[0] is
                         # checked: an allowed program's arguments can run others (allowing
                         # git allows `git -c alias.x='!cmd' x`), so allow only programs
                         # whose every argument you accept.

[http]
# listen = "127.0.0.1:8080"   # serve Streamable HTTP (--http, CODOMYRMEX_MCP_HTTP)
# auth_token = "..."          # prefer CODOMYRMEX_MCP_AUTH_TOKEN
allowed_hosts = []
allowed_origins = []
cors_origins = []
# jwks = "jwks.json"
# issuer = "https://auth.example.com"
# audience = "https://mcp.example.com/mcp"
required_scopes = []
# session_idle_timeout_secs = 600   # legacy (2025-11-25) sessions expire after this long unused
# max_sessions = 10000       # legacy sessions kept (in the store, with [store]); when full, the
                             # least recently used idle one is evicted
# max_live_sessions = 1024   # with [store]: legacy sessions live in this process, a bounded
                             # cache over the store
trusted_proxies = []     # e.g. ["10.0.0.0/8"]: behind these, X-Forwarded-For/Forwarded names the
                         # client the per-client limits count (--trusted-proxy,
                         # CODOMYRMEX_MCP_TRUSTED_PROXIES); ignored from any other peer

[store]
# url = "redis://127.0.0.1:6379/0"   # shared state for many instances (--store,
                                     # CODOMYRMEX_MCP_STORE); in memory when unset
# task_lease = 10   # seconds (1 to 3600) an instance vouches for its running tasks; if it
                    # dies they fail this long after its last renewal (--task-lease,
                    # CODOMYRMEX_MCP_TASK_LEASE)

# Authorization (docs: security.md, "Authorization"). With any [[policy]] table, a caller may
# list and use only what a rule matching it allows; without one, everything.
# [[policy]]
# name = "ops"                 # the principal's name (/metrics label)
# subjects = ["alice"]         # and/or scopes = [...], claims = { team = "ops" }; or local = true
# tools = ["file_system.*", "git.*"]
# prompts = ["*"]
# resources = ["codomyrmex://root/*"]
"#;

#[cfg(test)]
#[path = "config_policy_tests.rs"]
mod policy_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn opts(args: &[&str]) -> ServerOptions {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            o: ServerOptions,
        }
        let mut argv = vec!["t"];
        argv.extend_from_slice(args);
        T::try_parse_from(argv).unwrap().o
    }

    #[test]
    fn the_store_comes_from_the_flag_or_the_file_and_prints_redacted() {
        let file = FileConfig::parse("[store]\nurl = \"redis://:hunter2@cache:6379/1\"").unwrap();
        let e = merge(&opts(&[]), file.clone(), None).unwrap();
        let store = e.store.as_ref().unwrap();
        assert_eq!(store.expose(), "redis://:hunter2@cache:6379/1");
        let printed = e.to_toml().unwrap();
        assert!(
            printed.contains("redis://<redacted>@cache:6379/1"),
            "{printed}"
        );
        assert!(!printed.contains("hunter2"), "{printed}");
        let e = merge(&opts(&["--store", "redis://other:6379"]), file, None).unwrap();
        assert_eq!(e.store.unwrap().expose(), "redis://other:6379");
        let bad = merge(
            &opts(&["--store", "memcached://x"]),
            FileConfig::default(),
            None,
        )
        .unwrap_err();
        assert!(bad.to_string().contains("redis://"), "{bad}");
        assert!(
            merge(&opts(&[]), FileConfig::default(), None)
                .unwrap()
                .store
                .is_none()
        );
    }

    #[test]
    fn the_task_lease_comes_from_the_flag_or_the_file_within_bounds_and_prints() {
        let e = merge(&opts(&[]), FileConfig::default(), None).unwrap();
        assert_eq!(e.task_lease_secs, 10);
        assert!(e.to_toml().unwrap().contains("task_lease_secs = 10"));
        let file = FileConfig::parse("[store]\ntask_lease = 30").unwrap();
        let e = merge(&opts(&[]), file.clone(), None).unwrap();
        assert_eq!(e.task_lease_secs, 30);
        assert!(e.to_toml().unwrap().contains("task_lease_secs = 30"));
        let e = merge(&opts(&["--task-lease", "5"]), file, None).unwrap();
        assert_eq!(e.task_lease_secs, 5);
        for bad in ["0", "3601"] {
            let file = FileConfig::parse(&format!("[store]\ntask_lease = {bad}")).unwrap();
            let err = merge(&opts(&[]), file, None).unwrap_err();
            assert!(err.to_string().contains("task_lease"), "{err}");
            assert!(
                ServerOptsParse::try_parse_from(["t", "--task-lease", bad]).is_err(),
                "--task-lease {bad}"
            );
        }
    }

    #[derive(clap::Parser)]
    struct ServerOptsParse {
        #[command(flatten)]
        _o: ServerOptions,
    }

    #[test]
    fn defaults() {
        let e = merge(&opts(&[]), FileConfig::default(), None).unwrap();
        assert_eq!(e.profile, Profile::Readonly);
        assert_eq!(e.timeout_secs, 60);
        assert!(e.rate_limit);
        assert_eq!(e.root, std::path::absolute(".").unwrap());
        assert_eq!(e.limits, Limits::default());
        assert!(e.http.listen.is_none());
        assert!(!e.http.has_auth());
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let file = FileConfig::parse(
            r#"
root = "proj"
profile = "full"
timeout_secs = 5
rate_limit = false
[limits]
max_read_bytes = 10
[http]
listen = "127.0.0.1:9000"
auth_token = "from-file"
allowed_hosts = ["a.example"]
"#,
        )
        .unwrap();
        let dir = PathBuf::from("/etc/cmx");
        let e = merge(&opts(&[]), file.clone(), Some(dir.clone())).unwrap();
        assert_eq!(e.root, dir.join("proj"));
        assert_eq!(e.profile, Profile::Full);
        assert_eq!(e.timeout_secs, 5);
        assert!(!e.rate_limit);
        assert_eq!(e.limits.max_read_bytes, 10);
        assert_eq!(
            e.limits.max_list_entries,
            Limits::default().max_list_entries
        );
        assert_eq!(e.http.listen, Some("127.0.0.1:9000".parse().unwrap()));
        assert_eq!(e.http.auth_token.as_ref().unwrap().expose(), "from-file");
        assert_eq!(e.http.allowed_hosts, ["a.example"]);

        let e = merge(
            &opts(&[
                "--root",
                "/srv",
                "--profile",
                "readonly",
                "--timeout",
                "7",
                "--auth-token",
                "from-flag",
                "--allowed-host",
                "b.example",
                "--http",
                "127.0.0.1:9001",
            ]),
            file,
            Some(dir),
        )
        .unwrap();
        assert_eq!(e.root, PathBuf::from("/srv"));
        assert_eq!(e.profile, Profile::Readonly);
        assert_eq!(e.timeout_secs, 7);
        assert_eq!(e.http.auth_token.as_ref().unwrap().expose(), "from-flag");
        assert_eq!(e.http.allowed_hosts, ["b.example"]);
        assert_eq!(e.http.listen, Some("127.0.0.1:9001".parse().unwrap()));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        assert!(FileConfig::parse("rooot = \".\"").is_err());
        assert!(FileConfig::parse("profile = \"admin\"").is_err());
        assert!(FileConfig::parse("[limits]\nmax_reads = 1").is_err());
        let file = FileConfig::parse("timeout_secs = 0").unwrap();
        assert!(merge(&opts(&[]), file, None).is_err());
        let file = FileConfig::parse("[http]\njwks = \"k.json\"").unwrap();
        assert!(merge(&opts(&[]), file, None).is_err());
        let file = FileConfig::parse("[shell]\ndefault_timeout_secs = 1000").unwrap();
        assert!(merge(&opts(&[]), file, None).is_err());
        let file = FileConfig::parse("[http]\nsession_idle_timeout_secs = 0").unwrap();
        assert!(merge(&opts(&[]), file, None).is_err());
    }

    #[test]
    fn the_session_idle_timeout_reaches_the_http_config() {
        let file = FileConfig::parse("[http]\nsession_idle_timeout_secs = 20").unwrap();
        let e = merge(&opts(&[]), file, None).unwrap();
        assert_eq!(e.http.session_idle_timeout_secs, Some(20));
        let h = crate::serve::http_config("127.0.0.1:0".parse().unwrap(), &e).unwrap();
        assert_eq!(h.session_idle_timeout, std::time::Duration::from_secs(20));
        let default = merge(&opts(&[]), FileConfig::default(), None).unwrap();
        assert!(default.http.session_idle_timeout_secs.is_none());
    }

    #[test]
    fn the_session_caps_reach_the_http_config() {
        let file =
            FileConfig::parse("[http]\nmax_sessions = 200000\nmax_live_sessions = 64").unwrap();
        let e = merge(&opts(&[]), file, None).unwrap();
        let h = crate::serve::http_config("127.0.0.1:0".parse().unwrap(), &e).unwrap();
        assert_eq!((h.max_sessions, h.max_live_sessions), (200_000, 64));
        let d = merge(&opts(&[]), FileConfig::default(), None).unwrap();
        let h = crate::serve::http_config("127.0.0.1:0".parse().unwrap(), &d).unwrap();
        let defaults = codomyrmex_mcp::transport::http::HttpConfig::default();
        assert_eq!(
            (h.max_sessions, h.max_live_sessions),
            (defaults.max_sessions, defaults.max_live_sessions)
        );
        for bad in [
            "max_sessions = 0",
            "max_live_sessions = 0",
            "max_sessions = 99999999",
        ] {
            let file = FileConfig::parse(&format!("[http]\n{bad}")).unwrap();
            assert!(merge(&opts(&[]), file, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn trusted_proxies_come_from_flags_variables_and_the_file() {
        let file = FileConfig::parse("[http]\ntrusted_proxies = [\"10.1.0.0/16\"]").unwrap();
        let e = merge(&opts(&[]), file.clone(), None).unwrap();
        assert_eq!(e.http.trusted_proxies, ["10.1.0.0/16"]);
        let e = merge(
            &opts(&["--trusted-proxy", "127.0.0.1", "--trusted-proxy", "::1"]),
            file,
            None,
        )
        .unwrap();
        assert_eq!(e.http.trusted_proxies, ["127.0.0.1/32", "::1/128"]);
        let h = crate::serve::http_config("127.0.0.1:0".parse().unwrap(), &e).unwrap();
        assert_eq!(h.trusted_proxies.len(), 2);
        let bad = FileConfig::parse("[http]\ntrusted_proxies = [\"10.0.0.0/40\"]").unwrap();
        let err = merge(&opts(&[]), bad, None).unwrap_err();
        assert!(err.to_string().contains("trusted_proxies"), "{err}");
    }

    #[test]
    fn printing_redacts_secrets() {
        let file = FileConfig::parse("[http]\nauth_token = \"hunter2\"").unwrap();
        let e = merge(&opts(&[]), file, None).unwrap();
        let toml = e.to_toml().unwrap();
        assert!(!toml.contains("hunter2"), "{toml}");
        assert!(toml.contains("auth_token = \"<redacted>\""), "{toml}");
        let json = e.to_json().unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert!(!format!("{e:?}").contains("hunter2"));
        // The printed form parses back (as a file, minus the derived fields).
        let v: toml::Table = toml::from_str(&toml).unwrap();
        assert_eq!(v["profile"].as_str(), Some("readonly"));
    }

    #[test]
    fn the_example_file_is_valid() {
        let file = FileConfig::parse(EXAMPLE).unwrap();
        // git's arguments can run any program: the template does not suggest allowing it.
        assert!(!EXAMPLE.contains("\"git\""));
        let e = merge(&opts(&[]), file, Some(PathBuf::from("/x"))).unwrap();
        assert_eq!(e.root, PathBuf::from("/x/."));
        assert_eq!(e.shell, ShellSettings::default());
        assert_eq!(e.limits, Limits::default());
    }

    #[test]
    fn resolve_reads_the_named_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "profile = \"full\"\n").unwrap();
        let e = resolve(&opts(&["--config", path.to_str().unwrap()])).unwrap();
        assert_eq!(e.profile, Profile::Full);
        assert_eq!(e.config_file.as_deref(), Some(path.as_path()));
        let missing = dir.path().join("missing.toml");
        let err = resolve(&opts(&["--config", missing.to_str().unwrap()])).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err}");
        std::fs::write(&path, "profile = [").unwrap();
        let err = resolve(&opts(&["--config", path.to_str().unwrap()])).unwrap_err();
        assert!(matches!(err, ConfigError::Parse { .. }), "{err}");
    }
}
