//! The command line.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};

/// `codomyrmex-mcp`: an MCP server with sandboxed built-in tools, and a client for any MCP
/// server.
#[derive(Debug, Parser)]
#[command(
    name = "codomyrmex-mcp",
    version,
    about = "An MCP server with built-in tools, and a client for any MCP server",
    after_help = "Configuration precedence: flags > CODOMYRMEX_MCP_* environment variables > --config FILE > defaults."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (newline-delimited JSON-RPC on stdin and stdout), or over
    /// Streamable HTTP with --http.
    Serve {
        /// Server settings.
        #[command(flatten)]
        server: ServerOptions,
        /// Serve stdio even if the configuration names an HTTP address.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
    },
    /// List the built-in tools of the effective profile with their schemas, as JSON.
    Tools {
        /// Server settings (the profile decides which tools exist).
        #[command(flatten)]
        server: ServerOptions,
        /// Print a human-readable summary instead of JSON.
        #[arg(long)]
        table: bool,
    },
    /// Print the effective configuration (TOML; secrets redacted).
    Config {
        /// Server settings.
        #[command(flatten)]
        server: ServerOptions,
        /// Print the effective configuration (what `config` alone does).
        #[arg(long)]
        print: bool,
        /// JSON instead of TOML.
        #[arg(long)]
        json: bool,
        /// Print an annotated example configuration file.
        #[arg(long, conflicts_with_all = ["print", "json"])]
        example: bool,
    },
    /// Connect to any MCP server and list or call what it offers.
    Client(Box<ClientArgs>),
    /// Mount many MCP servers under namespaces and serve them as one, over stdio (`--check`
    /// prints the merged catalogue instead).
    Gateway(GatewayArgs),
}

/// What `gateway` does besides serving and checking.
#[derive(Debug, Subcommand)]
pub enum GatewayAction {
    /// Print a running gateway's `/status` (served with `--http`): each upstream's state,
    /// era, tool count, restarts and last error, and the configuration generation.
    Status(GatewayStatusArgs),
}

/// `gateway status`.
#[derive(Debug, Args)]
pub struct GatewayStatusArgs {
    /// The gateway's address: `http://HOST:PORT` (its `/status` is asked; plain HTTP only).
    #[arg(long, value_name = "URL")]
    pub url: String,
    /// The bearer token `/status` needs when the gateway requires one (as `/metrics` does).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CODOMYRMEX_MCP_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// Print the document as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `gateway`: the configuration and what to do with it.
#[derive(Debug, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct GatewayArgs {
    /// What else to do: `status` asks a running gateway.
    #[command(subcommand)]
    pub action: Option<GatewayAction>,
    /// The gateway's TOML file: one `[[upstream]]` table per server.
    #[arg(
        long,
        short = 'c',
        value_name = "FILE",
        env = "CODOMYRMEX_MCP_GATEWAY_CONFIG",
        required = true
    )]
    pub config: Option<PathBuf>,
    /// Check the configuration, connect to every upstream and print the merged catalogue.
    /// Exits 0 when every upstream answered and nothing was left out, 1 otherwise, 2 on an
    /// invalid configuration.
    #[arg(long)]
    pub check: bool,
    /// Print the catalogue as JSON.
    #[arg(long, requires = "check")]
    pub json: bool,
    /// Serve Streamable HTTP at ADDR (endpoint /mcp) instead of stdio, with `serve`'s
    /// policies: IP:PORT or localhost:PORT; a non-loopback ADDR needs --auth-token or --jwks.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen, conflicts_with = "check")]
    pub http: Option<SocketAddr>,
    /// Disable every rate limit of the gateway, as `serve --no-rate-limit` does: the tool-call
    /// one and, over HTTP, the per-client ones.
    #[arg(long, env = "CODOMYRMEX_MCP_NO_RATE_LIMIT", value_parser = BoolishValueParser::new())]
    pub no_rate_limit: bool,
    /// HTTP options.
    #[command(flatten)]
    pub http_options: HttpOptions,
}

/// Settings of a server; shared by `serve`, `tools` and `config`.
#[derive(Debug, Clone, Args)]
pub struct ServerOptions {
    /// Read settings from this TOML file (see `config --example`).
    #[arg(long, short = 'c', value_name = "FILE", env = "CODOMYRMEX_MCP_CONFIG")]
    pub config: Option<PathBuf>,
    /// The sandbox root: every path the tools touch stays inside it [default: .].
    #[arg(long, value_name = "DIR", env = "CODOMYRMEX_MCP_ROOT")]
    pub root: Option<PathBuf>,
    /// `readonly` (default) or `full` (adds writing tools and shell.run; over HTTP only with
    /// authentication).
    #[arg(long, value_enum, env = "CODOMYRMEX_MCP_PROFILE")]
    pub profile: Option<Profile>,
    /// Default tool timeout, in seconds [default: 60].
    #[arg(long, value_name = "SECS", env = "CODOMYRMEX_MCP_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: Option<u64>,
    /// Disable every rate limit: the tool-call one (50 calls/s, burst 100 by default) and, over
    /// HTTP, the per-client ones (requests, refused authentications).
    #[arg(long, env = "CODOMYRMEX_MCP_NO_RATE_LIMIT", value_parser = BoolishValueParser::new())]
    pub no_rate_limit: bool,
    /// Also register the demo tools (`demo.elicit`, which asks the client's user a question),
    /// for testing clients and clusters. Off by default; in no profile.
    #[arg(long, env = "CODOMYRMEX_MCP_DEMO_TOOLS", value_parser = BoolishValueParser::new())]
    pub demo_tools: bool,
    /// Publish every skill under DIR (the Skills extension, SEP-2640): each directory holding
    /// a SKILL.md is a skill, served at skill://PATH/SKILL.md; read through the same
    /// confinement as the file tools. A skill that breaks the extension's rules is left out
    /// with a warning.
    #[arg(long, value_name = "DIR", env = "CODOMYRMEX_MCP_SKILLS")]
    pub skills: Option<PathBuf>,
    /// How tool and prompt names are spelled: `dotted` (`file_system.read`, the default) or
    /// `portable` (only `^[a-zA-Z0-9_-]{1,64}$`, as model APIs accept: `file_system__read`).
    #[arg(long, value_enum, env = "CODOMYRMEX_MCP_NAME_STYLE")]
    pub name_style: Option<crate::portable::NameStyle>,
    /// The separator that replaces `.` in portable names [default: __].
    #[arg(long, value_name = "SEP", env = "CODOMYRMEX_MCP_NAME_SEPARATOR")]
    pub name_separator: Option<String>,
    /// Serve Streamable HTTP at ADDR (endpoint /mcp) instead of stdio: IP:PORT or
    /// localhost:PORT; port 0 picks a free one.
    #[arg(long, value_name = "ADDR", env = "CODOMYRMEX_MCP_HTTP", value_parser = parse_listen)]
    pub http: Option<SocketAddr>,
    /// Keep shared state in this store so that several instances serve one service (HTTP):
    /// `redis://[:PASSWORD@]HOST:PORT[/DB]`. In memory when unset.
    #[arg(
        long,
        value_name = "URL",
        env = "CODOMYRMEX_MCP_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,
    /// With --store: seconds this instance's lease on its running tasks lasts (renewed every
    /// quarter lease, at most a second apart); if it dies, the other instances see its tasks
    /// fail at most this long after its last renewal [default: 10; 1 to 3600].
    #[arg(long, value_name = "SECS", env = "CODOMYRMEX_MCP_TASK_LEASE", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub task_lease: Option<u64>,
    /// HTTP options.
    #[command(flatten)]
    pub http_options: HttpOptions,
}

/// Streamable HTTP options (with --http). A non-loopback ADDR needs --auth-token or --jwks.
#[derive(Debug, Clone, Args)]
pub struct HttpOptions {
    /// Require `Authorization: Bearer TOKEN` (compared in constant time). Prefer the
    /// environment variable: arguments are visible to other local users.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CODOMYRMEX_MCP_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// Also allow this Host header value (repeatable), e.g. mcp.example.com or mcp.example.com:8443.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Also allow this Origin header value (repeatable), e.g. https://app.example.com.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Enable CORS for this explicit origin (repeatable; no wildcard).
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Validate JWT access tokens against the JWKS in FILE (needs --issuer and --audience).
    #[arg(long, value_name = "FILE", requires_all = ["issuer", "audience"])]
    pub jwks: Option<PathBuf>,
    /// The trusted token issuer (`iss`), also advertised as the authorization server.
    #[arg(long, value_name = "URL", requires = "jwks")]
    pub issuer: Option<String>,
    /// This server's canonical URL, e.g. https://mcp.example.com/mcp: tokens must name it in
    /// `aud` (RFC 8707), and it is the `resource` of the protected-resource metadata.
    #[arg(long, value_name = "URL", requires = "jwks")]
    pub audience: Option<String>,
    /// A scope every JWT must carry (repeatable).
    #[arg(long = "required-scope", value_name = "SCOPE", requires = "jwks")]
    pub required_scopes: Vec<String>,
    /// A reverse proxy (IP or CIDR, repeatable; comma-separated in the variable) whose
    /// `X-Forwarded-For`/`Forwarded` names the client the per-client limits count. Those
    /// headers from any other peer are ignored.
    #[arg(
        long = "trusted-proxy",
        value_name = "CIDR",
        env = "CODOMYRMEX_MCP_TRUSTED_PROXIES",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,
}

/// The ids of the arguments only `serve` uses: hidden from the help of `tools` and `config`,
/// which still accept them (and their variables) so one environment serves every subcommand.
const SERVE_ONLY: &[&str] = &[
    "http",
    "store",
    "task_lease",
    "auth_token",
    "allowed_hosts",
    "allowed_origins",
    "cors_origins",
    "jwks",
    "issuer",
    "audience",
    "required_scopes",
    "trusted_proxies",
];

/// The command line's definition: the derived one, with each subcommand's help showing only
/// the flags it uses.
pub fn command() -> clap::Command {
    let hide = |mut sub: clap::Command| {
        for id in SERVE_ONLY {
            sub = sub.mut_arg(*id, |a| a.hide(true));
        }
        sub
    };
    Cli::command()
        .mut_subcommand("tools", hide)
        .mut_subcommand("config", hide)
}

/// Parses the process's arguments (and `CODOMYRMEX_MCP_*` variables). A bad value that came
/// from a variable is reported under the variable's name.
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    parse_from(&args, |var| std::env::var_os(var))
}

/// [`parse`] of `args`, with `env` to read variables.
pub fn parse_from(
    args: &[std::ffi::OsString],
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<Cli, clap::Error> {
    let mut cmd = command();
    let parsed = cmd
        .try_get_matches_from_mut(args)
        .and_then(|m| Cli::from_arg_matches(&m));
    parsed.map_err(|e| blame_variable(&mut cmd, args, e, env))
}

/// Rewrites a clap error about an invalid value of `--flag` into one naming the variable
/// `--flag` reads, when the flag is not on the command line (so the value came from it).
fn blame_variable(
    cmd: &mut clap::Command,
    args: &[std::ffi::OsString],
    e: clap::Error,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> clap::Error {
    if !matches!(
        e.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) {
        return e;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let Some(long) = arg
        .strip_prefix("--")
        .and_then(|a| a.split([' ', '=']).next())
    else {
        return e;
    };
    let on_command_line = args.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a == format!("--{long}") || a.starts_with(&format!("--{long}="))
    });
    if on_command_line {
        return e;
    }
    cmd.build();
    let var = std::iter::once(&*cmd)
        .chain(cmd.get_subcommands())
        .flat_map(|c| c.get_arguments())
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned());
    let Some(var) = var else { return e };
    let Some(value) = env(&var) else { return e };
    let reason = std::error::Error::source(&e)
        .map(|source| format!(": {source}"))
        .unwrap_or_default();
    let valid = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(v)) => format!(" (possible values: {})", v.join(", ")),
        _ => String::new(),
    };
    cmd.error(
        ErrorKind::ValueValidation,
        format!(
            "invalid value {:?} in the environment variable {var} (read for --{long}){reason}{valid}; \
             fix or unset {var}",
            value.to_string_lossy()
        ),
    )
}

/// An address to listen on: `IP:PORT`, or a host name that resolves to a loopback address
/// (`localhost:PORT`). Other names are refused: which interface they mean is unclear.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "{s:?} is not an address: use IP:PORT or localhost:PORT, e.g. 127.0.0.1:8080"
        ));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} is not a port number (0 to 65535)"))?;
    if host.is_empty() {
        return Err(format!(
            "{s:?} has no host: use 127.0.0.1:{port} (this machine only) or 0.0.0.0:{port}"
        ));
    }
    let resolved: Vec<SocketAddr> = if host.eq_ignore_ascii_case("localhost") {
        vec![SocketAddr::from(([127, 0, 0, 1], port))]
    } else {
        (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host:?}: {e}; use an IP address"))?
            .collect()
    };
    resolved
        .iter()
        .find(|a| a.is_ipv4() && a.ip().is_loopback())
        .or_else(|| resolved.iter().find(|a| a.ip().is_loopback()))
        .copied()
        .ok_or_else(|| {
            format!(
                "{host:?} is not a loopback name: give an IP address to listen on, e.g. \
                 127.0.0.1:{port}, or 0.0.0.0:{port} for every interface (with authentication)"
            )
        })
}

/// `client`: where the server is and what to ask it.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 success; 1 the tool reported an error (isError); 2 usage \
(bad flags or arguments); 3 the server answered with a JSON-RPC error; 4 the server could not be \
started or reached, or the connection failed (HTTP errors included); 5 no answer within --timeout; \
6 the server's protocol era or answer was not one this client speaks, or it sent more than the \
client's bounds allow (a list whose pages cycle, or with too many items or bytes)."
)]
pub struct ClientArgs {
    /// Launch CMD (split into words like a shell would, but run without a shell) and speak
    /// MCP over its stdin and stdout.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["http", "server"])]
    pub stdio: Option<String>,
    /// Connect to a Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp or
    /// https://mcp.example.com/mcp (TLS through rustls, the Mozilla roots trusted).
    #[arg(long, value_name = "URL", conflicts_with = "server")]
    pub http: Option<String>,
    /// A server by name from an mcp.json file (the Claude Desktop format: `mcpServers`).
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// The mcp.json file --server reads.
    #[arg(long, value_name = "FILE", default_value = "mcp.json")]
    pub mcp_config: PathBuf,
    /// With --http: send `Authorization: Bearer TOKEN`.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CODOMYRMEX_MCP_CLIENT_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// With --http: authorize with OAuth when the server asks (prints the authorization URL
    /// and opens it with $BROWSER or xdg-open; a listener on 127.0.0.1 receives the code).
    /// Tokens are cached in --token-file and refreshed.
    #[arg(long, conflicts_with = "token")]
    pub oauth: bool,
    /// With --oauth: the token cache, a 0600 JSON file (default:
    /// $XDG_CONFIG_HOME/codomyrmex-mcp/oauth-tokens.json, or under ~/.config).
    #[arg(long, value_name = "FILE", requires = "oauth")]
    pub token_file: Option<PathBuf>,
    /// With --oauth: a client id registered at the authorization server beforehand, used
    /// instead of dynamic registration.
    #[arg(long, value_name = "ID", requires = "oauth")]
    pub oauth_client_id: Option<String>,
    /// With --oauth-client-id: the client's secret, read from FILE (readable by its owner
    /// only; one line). Also read from $CODOMYRMEX_MCP_OAUTH_CLIENT_SECRET when FILE is not
    /// given; never a flag's value, which other local users see in `ps`. Sent as the
    /// authorization server's metadata allows: `client_secret_basic`, else `client_secret_post`.
    #[arg(long, value_name = "FILE", requires = "oauth_client_id")]
    pub oauth_client_secret_file: Option<PathBuf>,
    /// With --oauth: the grant. `client-credentials` is machine to machine, with no browser
    /// and no user: --oauth-client-id and a client secret or --oauth-private-key.
    #[arg(
        long,
        value_enum,
        value_name = "GRANT",
        requires_all = ["oauth", "oauth_client_id"],
        conflicts_with_all = ["oauth_jwt_assertion", "oauth_id_token"]
    )]
    pub oauth_grant: Option<OAuthGrant>,
    /// With --oauth-client-id: authenticate at the token endpoint with `private_key_jwt`
    /// (RFC 7523), signing with the key in FILE: PKCS#8 PEM, EC P-256 (ES256), readable by
    /// its owner only.
    #[arg(long, value_name = "FILE", requires = "oauth_client_id")]
    pub oauth_private_key: Option<PathBuf>,
    /// With --oauth: get tokens with the JWT bearer grant (RFC 7523) instead of the browser,
    /// the assertion being a JWT this workload holds, read from FILE at each token request
    /// (a rotated file is followed).
    #[arg(
        long,
        value_name = "@FILE",
        requires = "oauth",
        conflicts_with = "oauth_id_token"
    )]
    pub oauth_jwt_assertion: Option<String>,
    /// With --oauth: enterprise-managed authorization: the user's ID token from FILE is
    /// exchanged at the IdP (RFC 8693) for an identity assertion grant (ID-JAG), which the
    /// JWT bearer grant redeems.
    #[arg(long, value_name = "@FILE", requires_all = ["oauth", "oauth_idp_token_endpoint", "oauth_idp_client_id"])]
    pub oauth_id_token: Option<String>,
    /// With --oauth-id-token: the IdP's token endpoint.
    #[arg(long, value_name = "URL", requires = "oauth_id_token")]
    pub oauth_idp_token_endpoint: Option<String>,
    /// With --oauth-id-token: this client's id at the IdP.
    #[arg(long, value_name = "ID", requires = "oauth_id_token")]
    pub oauth_idp_client_id: Option<String>,
    /// With --oauth-id-token: this client's secret at the IdP, read from FILE (readable by
    /// its owner only), or from $CODOMYRMEX_MCP_OAUTH_IDP_CLIENT_SECRET when FILE is not given.
    #[arg(long, value_name = "FILE", requires = "oauth_id_token")]
    pub oauth_idp_client_secret_file: Option<PathBuf>,
    /// With --oauth: the DPoP key (RFC 9449; PKCS#8 PEM, EC P-256, readable by its owner
    /// only), so that later runs can use the cached DPoP-bound tokens. Without it each run
    /// makes a key, and a token bound to an earlier run's key is not used.
    #[arg(long, value_name = "FILE", requires = "oauth")]
    pub dpop_key: Option<PathBuf>,
    /// With --oauth: never ask for DPoP-bound tokens (by default they are asked for when
    /// the authorization server offers DPoP with ES256).
    #[arg(long, requires = "oauth", conflicts_with = "dpop_key")]
    pub no_dpop: bool,
    /// With an https:// URL: also trust the CA certificates in FILE (PEM).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// With --http: an extra header `K:V` on every request (repeatable).
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,
    /// For a stdio server: an environment variable `K=V` (repeatable).
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// For a stdio server: its working directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The protocol era: `auto` (probe with 2026-07-28 `server/discover`, fall back to the
    /// `initialize` handshake), `legacy` (2025-11-25) or `modern` (2026-07-28 only).
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub era: EraArg,
    /// Print raw JSON results (for scripts) instead of a human-readable rendering.
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds the whole exchange may take, server shutdown included (with `load`: each
    /// call).
    #[arg(long, global = true, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,
    /// What to ask.
    #[command(subcommand)]
    pub action: ClientAction,
}

/// Protocol eras.
/// `client --oauth-grant`: how tokens are got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// The authorization code flow, through the user's browser (the default).
    AuthorizationCode,
    /// The client credentials grant: the client's own tokens, no user and no browser.
    ClientCredentials,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EraArg {
    /// Probe with `server/discover`; fall back to `initialize`.
    Auto,
    /// `initialize` handshake (2025-11-25 and earlier).
    Legacy,
    /// Stateless requests (2026-07-28).
    Modern,
}

/// Client subcommands.
#[derive(Debug, Subcommand)]
pub enum ClientAction {
    /// List the server's tools.
    Tools,
    /// Call a tool.
    Call {
        /// The tool's name.
        name: String,
        /// Arguments as KEY=VALUE, converted by the tool's input schema (numbers, booleans,
        /// JSON for objects and arrays).
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
        /// The arguments: a JSON object, @FILE to read it from a file, @- from stdin.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Run the call as a task and print the task (its id, for `tasks ID --result`); a
        /// 2026-07-28 server that answers at once prints the result.
        #[arg(long)]
        task: bool,
        /// With --task: how long a 2025-11-25 server keeps the task, in seconds.
        #[arg(long, value_name = "SECONDS", requires = "task")]
        ttl: Option<u64>,
    },
    /// List the server's resources and resource templates.
    Resources,
    /// List the server's resource templates.
    Templates,
    /// List the server's skills (the Skills extension): name, URI, description, file count.
    /// Reads no file.
    Skills,
    /// Print one skill: its file list and its SKILL.md, verified against the skill's entry
    /// (size, SHA-256, frontmatter); content that does not match is refused (exit 6).
    Skill {
        /// The skill's name, or the URI of its SKILL.md (`skill://.../SKILL.md`).
        name: String,
    },
    /// Read a resource.
    Read {
        /// The resource's URI.
        uri: String,
    },
    /// Subscribe to a resource and print its updates until --timeout.
    Subscribe {
        /// The resource's URI.
        uri: String,
    },
    /// List the server's prompts.
    Prompts,
    /// Get a prompt.
    Prompt {
        /// The prompt's name.
        name: String,
        /// Arguments as KEY=VALUE (prompt arguments are strings).
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
        /// The arguments: a JSON object, @FILE or @-.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
    },
    /// Ask for completions of a prompt argument or a resource-template variable.
    Complete {
        /// The prompt (`ref/prompt`).
        #[arg(
            long,
            value_name = "NAME",
            conflicts_with = "resource",
            required_unless_present = "resource"
        )]
        prompt: Option<String>,
        /// The resource template URI (`ref/resource`).
        #[arg(long, value_name = "URI")]
        resource: Option<String>,
        /// The argument or variable name.
        argument: String,
        /// What has been typed so far.
        #[arg(default_value = "")]
        value: String,
    },
    /// Check that the server answers.
    Ping,
    /// List the server's tasks (2025-11-25 experimental tasks; the 2026-07-28 tasks
    /// extension has no list), or one task by id: print it, wait for its result, or cancel it.
    Tasks {
        /// A task id: print that task.
        id: Option<String>,
        /// Wait for the task to end and print its result, as `call` would.
        #[arg(long, requires = "id")]
        result: bool,
        /// Cancel the task.
        #[arg(long, requires = "id", conflicts_with = "result")]
        cancel: bool,
    },
    /// Print the server's notifications (list changes, updates, logs) as they come, until
    /// --timeout.
    Listen,
    /// Load-test a tool: call it again and again, at most --concurrency calls in flight,
    /// until --calls calls or --duration (10 s when neither is given), then print calls/s,
    /// latency percentiles and errors by kind. --timeout bounds each call here. Exit status
    /// 1 when any call failed.
    Load {
        /// The tool's name.
        name: String,
        /// Arguments as KEY=VALUE, converted by the tool's input schema.
        #[arg(value_name = "KEY=VALUE")]
        pairs: Vec<String>,
        /// The arguments: a JSON object, @FILE or @-.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Stop after starting this many calls.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        calls: Option<u64>,
        /// Stop starting calls after this many seconds; calls in flight still finish.
        #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
        duration: Option<u64>,
        /// The most calls in flight at once.
        #[arg(long, value_name = "C", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        concurrency: u32,
        /// Start at most this many calls per second, evenly spread (default: no limit).
        #[arg(long, value_name = "PER_SEC", value_parser = positive_rate)]
        rate: Option<f64>,
    },
}

/// A positive, finite number of calls per second.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "{s:?} is not a positive number of calls per second"
        )),
    }
}

/// Which tools a server offers.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Reading tools only (the default).
    #[default]
    Readonly,
    /// Also `file_system.write`, `edit`, `make_directory`, `move` and `shell.run`. Over HTTP,
    /// authentication is required.
    Full,
}

impl Profile {
    /// The name used in flags and files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Readonly => "readonly",
            Self::Full => "full",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn http_auth_flags_parse() {
        let cli = Cli::try_parse_from([
            "codomyrmex-mcp",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token",
            "t",
            "--allowed-host",
            "h",
            "--cors-origin",
            "https://a.example",
        ])
        .unwrap();
        let Command::Serve { server, stdio } = cli.command else {
            panic!("not serve")
        };
        assert!(!stdio);
        assert_eq!(server.http_options.auth_token.as_deref(), Some("t"));
        assert_eq!(server.http_options.allowed_hosts, ["h"]);
        assert!(
            Cli::try_parse_from(["codomyrmex-mcp", "serve", "--jwks", "k.json"]).is_err(),
            "--jwks needs --issuer and --audience"
        );
    }

    #[test]
    fn listen_addresses_take_loopback_names() {
        assert_eq!(
            parse_listen("127.0.0.1:0").unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(parse_listen("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert_eq!(
            parse_listen("LOCALHOST:8080").unwrap().to_string(),
            "127.0.0.1:8080"
        );
        assert!(parse_listen("localhost").unwrap_err().contains("IP:PORT"));
        assert!(
            parse_listen("localhost:99999")
                .unwrap_err()
                .contains("port")
        );
        assert!(parse_listen(":80").unwrap_err().contains("no host"));
    }

    #[test]
    fn a_bad_variable_is_blamed_only_when_the_flag_is_absent() {
        let env = |var: &str| (var == "CODOMYRMEX_MCP_TIMEOUT").then(|| "x".into());
        let args = |a: &[&str]| {
            a.iter()
                .map(Into::into)
                .collect::<Vec<std::ffi::OsString>>()
        };
        // clap reads the real environment; give the value as a flag and check the wording.
        let e = parse_from(&args(&["codomyrmex-mcp", "serve", "--timeout", "x"]), env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--timeout"), "{e}");
        assert!(!e.contains("CODOMYRMEX_MCP_TIMEOUT"), "{e}");
    }

    #[test]
    fn client_needs_exactly_one_transport() {
        assert!(
            Cli::try_parse_from([
                "codomyrmex-mcp",
                "client",
                "--stdio",
                "x",
                "--http",
                "http://h/mcp",
                "tools"
            ])
            .is_err()
        );
        let cli = Cli::try_parse_from([
            "codomyrmex-mcp",
            "client",
            "--stdio",
            "codomyrmex-mcp serve",
            "call",
            "json.query",
            "--args",
            "{}",
            "--json",
        ])
        .unwrap();
        let Command::Client(c) = cli.command else {
            panic!("not client")
        };
        assert!(c.json);
        assert!(matches!(c.action, ClientAction::Call { ref name, .. } if name == "json.query"));
    }
}
