//! The gateway's configuration file: one `[[upstream]]` table per server to mount.
//!
//! ```toml
//! [[upstream]]
//! name = "everything"          # the namespace: its tools appear as everything.<tool>
//! command = "node"             # a stdio child (args, env, cwd optional)
//! args = ["server.js", "stdio"]
//!
//! [[upstream]]
//! name = "echo"
//! url = "http://127.0.0.1:9000/mcp"   # a remote Streamable HTTP server (token optional)
//! timeout_secs = 30                   # the limits of the calls to it, all optional
//! max_concurrent = 4
//! max_queued = 64
//! rate_limit = { per_second = 10, burst = 20 }
//! ```
//!
//! The limits become the upstream's `UpstreamLimits`, which the core's execution policy
//! enforces (`UpstreamPolicy`); the gateway keeps no limit of its own.
//!
//! This module only reads and checks the file: every rule an upstream must follow (a
//! namespace usable in tool names and URI schemes, exactly one transport, keys that belong to
//! that transport, valid filters and renames) is checked here, so the rest of the gateway
//! never sees an inconsistent upstream. It starts nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use codomyrmex_mcp::RateLimit;
use codomyrmex_mcp::client::EraPreference;
use codomyrmex_mcp::policy::UpstreamLimits;
use serde::Deserialize;

use super::catalog::{Filter, valid_local_name};
use super::uri::{MAX_NAMESPACE, valid_namespace};
use crate::config::{Secret, compile_policies, parse_toml};
use crate::portable::{NameStyle, Naming};
use codomyrmex_mcp::authz::{Authorization, PolicyEntry};

/// Default per-call timeout of an upstream.
const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Default interval of an upstream's health check.
const DEFAULT_HEALTH_CHECK_SECS: u64 = 10;
/// Default number of calls in flight to one upstream.
const DEFAULT_MAX_CONCURRENT: usize = 16;

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    upstream: Vec<UpstreamFile>,
    /// `[[policy]]`: the schema and parser of `serve`'s file ([`compile_policies`]).
    #[serde(default)]
    policy: Vec<toml::Spanned<PolicyEntry>>,
    /// `name_style = "dotted" | "portable"` ([`crate::portable`]).
    name_style: Option<NameStyle>,
    /// The portable style's separator (`__` unless given).
    name_separator: Option<String>,
}

/// One `[[upstream]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamFile {
    name: String,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    token: Option<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    timeout_secs: Option<u64>,
    max_concurrent: Option<usize>,
    max_queued: Option<usize>,
    rate_limit: Option<RateLimitFile>,
    health_check_secs: Option<u64>,
    era: Option<String>,
    /// An OpenAPI document (a file or an `http(s)` URL): a REST API mounted as tools.
    openapi: Option<String>,
    /// The REST API's base URL (`openapi` upstreams).
    base_url: Option<String>,
    /// The REST API's credentials (`openapi` upstreams).
    auth: Option<super::openapi::AuthFile>,
    /// The largest REST answer relayed (`openapi` upstreams).
    max_response_bytes: Option<usize>,
}

/// An upstream's `rate_limit = { per_second = .., burst = .. }` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitFile {
    per_second: f64,
    burst: u32,
}

/// A checked gateway configuration.
#[derive(Debug)]
pub struct GatewayConfig {
    /// The upstreams, in the file's order (which decides who wins a name clash).
    pub upstreams: Vec<Upstream>,
    /// Who may list and use which of the gateway's names (`[[policy]]`); `None`: everyone
    /// may use everything.
    pub authorization: Option<std::sync::Arc<Authorization>>,
    /// How tool and prompt names are spelled (`name_style`, `name_separator`).
    pub naming: Naming,
}

/// One checked upstream (equal to another when a reload can keep it running as it is).
#[derive(Debug, PartialEq)]
pub struct Upstream {
    /// The namespace: tools `NAME.tool`, resources `NAME+scheme:...`.
    pub name: String,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// Which of its names are mounted, and under which local names.
    pub filter: Filter,
    /// The longest a call to it may take.
    pub timeout: Duration,
    /// How many calls to it may be in flight at once.
    pub max_concurrent: usize,
    /// How many more may wait for a turn (`None`: no bound of the upstream's own).
    pub max_queued: Option<usize>,
    /// Its calls' rate limit, if any.
    pub rate_limit: Option<RateLimit>,
    /// How often its supervisor checks that it answers.
    pub health_check: Duration,
    /// Which era the gateway speaks to it (`era = "auto" | "modern" | "legacy"`).
    pub era: EraPreference,
}

impl Upstream {
    /// The limits its calls run under (the core's execution policy enforces them).
    pub fn limits(&self) -> UpstreamLimits {
        UpstreamLimits {
            max_queued: self.max_queued,
            rate_limit: self.rate_limit,
            ..UpstreamLimits::new(self.max_concurrent, self.timeout)
        }
    }
}

/// How an upstream is reached.
#[derive(Debug, PartialEq)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, over the gateway's own environment.
        env: BTreeMap<String, String>,
        /// Its working directory (relative paths are relative to the configuration file).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// A bearer token sent to it (and only to it).
        token: Option<Secret>,
    },
    /// A REST API described by an OpenAPI document ([`super::openapi`]).
    OpenApi(std::sync::Arc<super::openapi::OpenApiUpstream>),
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum GatewayConfigError {
    /// The file could not be read.
    #[error("cannot read the gateway configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has unknown keys or wrong types.
    #[error(
        "invalid gateway configuration {}{}: {message}",
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
    /// An upstream breaks a rule.
    #[error("invalid gateway configuration {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the upstream.
        message: String,
    },
}

impl GatewayConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Self, GatewayConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| GatewayConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        Self::parse(&text, base.as_deref()).map_err(|e| match e {
            ParseError::Syntax { at, message } => GatewayConfigError::Parse {
                path: path.to_path_buf(),
                at,
                message,
            },
            ParseError::Invalid(message) => GatewayConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            },
        })
    }

    /// Parses and checks a file's text; relative `cwd`s are taken relative to `base`.
    fn parse(text: &str, base: Option<&Path>) -> Result<Self, ParseError> {
        let file: File =
            parse_toml(text).map_err(|(at, message)| ParseError::Syntax { at, message })?;
        let authorization = compile_policies(text, &file.policy)
            .map_err(|(at, message)| ParseError::Syntax { at, message })?;
        if file.upstream.is_empty() {
            return Err(ParseError::Invalid(
                "no [[upstream]] table: the gateway needs at least one server to mount".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        let mut upstreams = Vec::with_capacity(file.upstream.len());
        for (i, u) in file.upstream.into_iter().enumerate() {
            let upstream = check_upstream(u, base)
                .map_err(|m| ParseError::Invalid(format!("upstream #{}: {m}", i + 1)))?;
            if !seen.insert(upstream.name.clone()) {
                return Err(ParseError::Invalid(format!(
                    "upstream #{}: the name {:?} is used twice; each upstream needs its own namespace",
                    i + 1,
                    upstream.name
                )));
            }
            upstreams.push(upstream);
        }
        let naming = Naming::new(
            file.name_style.unwrap_or_default(),
            file.name_separator.as_deref(),
        )
        .map_err(ParseError::Invalid)?;
        Ok(Self {
            upstreams,
            authorization,
            naming,
        })
    }
}

/// A refusal before the file's path is known.
#[derive(Debug)]
enum ParseError {
    Syntax { at: Option<String>, message: String },
    Invalid(String),
}

fn check_upstream(u: UpstreamFile, base: Option<&Path>) -> Result<Upstream, String> {
    if !valid_namespace(&u.name) {
        return Err(format!(
            "name {:?} is not a valid namespace: a lowercase letter, then lowercase letters, \
             digits or '-', at most {MAX_NAMESPACE} characters",
            u.name
        ));
    }
    let name = u.name;
    if u.openapi.is_none() {
        for (key, set) in [
            ("base_url", u.base_url.is_some()),
            ("auth", u.auth.is_some()),
            ("max_response_bytes", u.max_response_bytes.is_some()),
        ] {
            if set {
                return Err(format!("{name:?}: `{key}` is for `openapi` upstreams"));
            }
        }
    }
    let transport = match (u.openapi, u.command, u.url) {
        (Some(spec), None, None) => {
            for (key, set) in [
                ("token", u.token.is_some()),
                ("args", u.args.is_some()),
                ("env", u.env.is_some()),
                ("cwd", u.cwd.is_some()),
                ("era", u.era.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "{name:?}: `{key}` is not for `openapi` upstreams (credentials go in `auth`)"
                    ));
                }
            }
            let api =
                super::openapi::check(&name, spec, u.base_url, u.auth, u.max_response_bytes, base)?;
            UpstreamTransport::OpenApi(std::sync::Arc::new(api))
        }
        (Some(_), _, _) => {
            return Err(format!(
                "{name:?} has `openapi` and `command` or `url`: an upstream is one of the three"
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err(format!(
                "{name:?} has both `command` and `url`: an upstream is either a child process or a URL"
            ));
        }
        (None, None, None) => {
            return Err(format!(
                "{name:?} has neither `command` (a stdio child) nor `url` (Streamable HTTP) nor \
                 `openapi` (a REST API)"
            ));
        }
        (None, Some(command), None) => {
            if u.token.is_some() {
                return Err(format!(
                    "{name:?}: `token` is for `url` upstreams; a child gets its secrets through `env`"
                ));
            }
            if command.trim().is_empty() {
                return Err(format!("{name:?}: `command` is empty"));
            }
            let cwd = u.cwd.map(|c| match base {
                Some(b) if c.is_relative() => b.join(c),
                _ => c,
            });
            UpstreamTransport::Stdio {
                command,
                args: u.args.unwrap_or_default(),
                env: u.env.unwrap_or_default(),
                cwd,
            }
        }
        (None, None, Some(url)) => {
            for (key, set) in [
                ("args", u.args.is_some()),
                ("env", u.env.is_some()),
                ("cwd", u.cwd.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "{name:?}: `{key}` is for `command` upstreams, not for `url`"
                    ));
                }
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "{name:?}: url {:?} must start with http:// or https://",
                    codomyrmex_mcp::util::redact_url(&url)
                ));
            }
            // Refused here, before anything logs it: a URL with credentials
            // (`user:password@`), which would be logged at each retry. The message shows
            // the URL redacted.
            let endpoint = codomyrmex_mcp::client::http::parse_url(&url).map_err(|e| {
                format!("{name:?}: url {e}; for a bearer token, set `token` of the upstream")
            })?;
            // A bearer token never travels in clear off the machine: plain http only to a
            // loopback host (the rule OAuth's endpoints follow).
            if u.token.is_some() && !endpoint.https && !endpoint.is_loopback() {
                return Err(format!(
                    "{name:?}: `token` would be sent in clear to {}: a token is only sent over                      https:// (plain http:// only to a loopback host: 127.0.0.0/8, ::1, localhost)",
                    codomyrmex_mcp::util::redact_url(&url)
                ));
            }
            UpstreamTransport::Http {
                url,
                token: u.token.map(Secret::from),
            }
        }
    };
    for (from, to) in &u.rename {
        if !valid_local_name(to) {
            return Err(format!(
                "{name:?}: rename {from:?} -> {to:?}: the new name must be 1 to 64 characters \
                 of A-Z, a-z, 0-9, '_', '-' and '.'"
            ));
        }
    }
    let filter =
        Filter::new(&u.include, &u.exclude, u.rename).map_err(|e| format!("{name:?}: {e}"))?;
    let timeout_secs = u.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout_secs == 0 {
        return Err(format!("{name:?}: timeout_secs must be at least 1"));
    }
    let max_concurrent = u.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT);
    if max_concurrent == 0 {
        return Err(format!("{name:?}: max_concurrent must be at least 1"));
    }
    let rate_limit = match u.rate_limit {
        None => None,
        Some(r) if !(r.per_second.is_finite() && r.per_second > 0.0) => {
            return Err(format!(
                "{name:?}: rate_limit.per_second must be a number above 0"
            ));
        }
        Some(r) if r.burst == 0 => {
            return Err(format!("{name:?}: rate_limit.burst must be at least 1"));
        }
        Some(r) => Some(RateLimit {
            per_second: r.per_second,
            burst: r.burst,
        }),
    };
    let health_check_secs = u.health_check_secs.unwrap_or(DEFAULT_HEALTH_CHECK_SECS);
    if health_check_secs == 0 {
        return Err(format!("{name:?}: health_check_secs must be at least 1"));
    }
    let era = match u.era.as_deref() {
        None | Some("auto") => EraPreference::Auto,
        Some("modern" | "2026-07-28") => EraPreference::Modern,
        Some("legacy" | "2025-11-25") => EraPreference::Legacy,
        Some(other) => {
            return Err(format!(
                "{name:?}: era {other:?} is none of \"auto\", \"modern\" (2026-07-28) and \"legacy\" (2025-11-25)"
            ));
        }
    };
    Ok(Upstream {
        era,
        name,
        transport,
        filter,
        timeout: Duration::from_secs(timeout_secs),
        max_concurrent,
        max_queued: u.max_queued,
        rate_limit,
        health_check: Duration::from_secs(health_check_secs),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn invalid(text: &str) -> String {
        match GatewayConfig::parse(text, None) {
            Err(ParseError::Invalid(m)) => m,
            Err(ParseError::Syntax { at, message }) => format!("syntax {at:?}: {message}"),
            Ok(c) => panic!("accepted: {c:?}"),
        }
    }

    #[test]
    fn the_issues_example_is_accepted() {
        let c = GatewayConfig::parse(
            r#"
[[upstream]]
name = "everything"
command = "node"
args = ["server.js", "stdio"]
env = { NODE_ENV = "production" }

[[upstream]]
name = "echo"
url = "http://127.0.0.1:9000/mcp"
"#,
            Some(Path::new("/etc/gw")),
        )
        .unwrap();
        assert_eq!(c.upstreams.len(), 2);
        assert_eq!(c.upstreams[0].name, "everything");
        assert!(matches!(
            &c.upstreams[0].transport,
            UpstreamTransport::Stdio { command, args, .. } if command == "node" && args.len() == 2
        ));
        assert!(
            matches!(&c.upstreams[1].transport, UpstreamTransport::Http { url, token: None } if url.ends_with("/mcp"))
        );
        assert!(matches!(
            &c.upstreams[0].transport,
            UpstreamTransport::Stdio { env, .. } if env.get("NODE_ENV").map(String::as_str) == Some("production")
        ));
        assert_eq!(c.upstreams[1].timeout, Duration::from_secs(60));
        assert_eq!(c.upstreams[1].max_concurrent, 16);
        // Without limits written: the calls queue without a bound of their own, unthrottled.
        assert_eq!(
            c.upstreams[1].limits(),
            UpstreamLimits::new(16, Duration::from_secs(60))
        );
    }

    #[test]
    fn an_upstreams_limits_are_read_into_the_policys() {
        let c = GatewayConfig::parse(
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 3\nmax_concurrent = 2\n\
             max_queued = 5\nrate_limit = { per_second = 10, burst = 20 }\n",
            None,
        )
        .unwrap();
        assert_eq!(
            c.upstreams[0].limits(),
            UpstreamLimits {
                max_concurrent: 2,
                max_queued: Some(5),
                timeout: Duration::from_secs(3),
                rate_limit: Some(RateLimit {
                    per_second: 10.0,
                    burst: 20
                }),
            }
        );
        let limited =
            |r: &str| format!("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrate_limit = {r}\n");
        assert!(invalid(&limited("{ per_second = 0, burst = 1 }")).contains("per_second"));
        assert!(invalid(&limited("{ per_second = 1, burst = 0 }")).contains("burst"));
        assert!(invalid(&limited("{ per_second = 1 }")).starts_with("syntax"));
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nmax_concurrent = 0\n")
                .contains("max_concurrent")
        );
    }

    #[test]
    fn relative_cwds_are_relative_to_the_file() {
        let c = GatewayConfig::parse(
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"sub\"\n",
            Some(Path::new("/etc/gw")),
        )
        .unwrap();
        let UpstreamTransport::Stdio { cwd, .. } = &c.upstreams[0].transport else {
            panic!()
        };
        assert_eq!(cwd.as_deref(), Some(Path::new("/etc/gw/sub")));
    }

    #[test]
    fn each_rule_is_checked_with_a_message_naming_the_upstream() {
        assert!(invalid("").contains("no [[upstream]]"));
        assert!(invalid("[[upstream]]\nname = \"Git\"\ncommand = \"x\"\n").contains("namespace"));
        assert!(invalid("[[upstream]]\nname = \"a.b\"\ncommand = \"x\"\n").contains("namespace"));
        assert!(invalid("[[upstream]]\nname = \"a\"\n").contains("neither"));
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/\"\n")
                .contains("both")
        );
        assert!(
            invalid("[[upstream]]\nname = \"a\"\nurl = \"http://h/\"\nargs = []\n")
                .contains("`args` is for `command`")
        );
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntoken = \"t\"\n")
                .contains("`token` is for `url`")
        );
        assert!(invalid("[[upstream]]\nname = \"a\"\nurl = \"ftp://h/\"\n").contains("http://"));
        // Credentials in the URL are refused, and the refusal does not repeat them.
        let e = invalid(
            "[[upstream]]\nname = \"web\"\nurl = \"http://user:PASS@host/mcp?api_key=K\"\n",
        );
        assert!(e.contains("\"web\"") && e.contains("credentials"), "{e}");
        assert!(e.contains("`token`"), "{e}");
        assert!(!e.contains("PASS") && !e.contains("=K"), "{e}");
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[[upstream]]\nname = \"a\"\ncommand = \"y\"\n")
                .contains("used twice")
        );
        assert!(
            invalid(
                "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrename = { log = \"has space\" }\n"
            )
            .contains("rename")
        );
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ninclude = [\"\"]\n")
                .contains("empty")
        );
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 0\n")
                .contains("timeout_secs")
        );
        assert!(
            invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nera = \"2024\"\n")
                .contains("era")
        );
        let syntax = invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nbogus = 1\n");
        assert!(syntax.starts_with("syntax Some(\"4:1\")"), "{syntax}");
    }

    #[test]
    fn a_token_goes_over_https_or_to_a_loopback_host_only() {
        let with_token = |url: &str| {
            format!("[[upstream]]\nname = \"web\"\nurl = \"{url}\"\ntoken = \"s3cret\"\n")
        };
        for refused in [
            "http://mcp.example/mcp",
            "http://10.0.0.7:9000/mcp",
            "http://[2001:db8::1]/mcp",
            "http://localhost.example/mcp",
        ] {
            let e = invalid(&with_token(refused));
            assert!(
                e.contains("\"web\"") && e.contains("`token`") && e.contains("https://"),
                "{refused}: {e}"
            );
            assert!(!e.contains("s3cret"), "{e}");
        }
        for allowed in [
            "https://mcp.example/mcp",
            "http://127.0.0.1:9000/mcp",
            "http://127.8.9.10/mcp",
            "http://[::1]:9000/mcp",
            "http://localhost:9000/mcp",
        ] {
            GatewayConfig::parse(&with_token(allowed), None)
                .unwrap_or_else(|e| panic!("{allowed}: {e:?}"));
        }
        // Without a token, plain http anywhere stays allowed.
        GatewayConfig::parse(
            "[[upstream]]\nname = \"web\"\nurl = \"http://mcp.example/mcp\"\n",
            None,
        )
        .unwrap();
    }

    #[test]
    fn an_openapi_upstreams_keys_are_checked() {
        let c = GatewayConfig::parse(
            "[[upstream]]\nname = \"pets\"\nopenapi = \"specs/pets.yaml\"\n\
             base_url = \"https://api.example/v1\"\nauth = { type = \"bearer\", token = \"s3cret\" }\n",
            Some(Path::new("/etc/gw")),
        )
        .unwrap();
        let UpstreamTransport::OpenApi(api) = &c.upstreams[0].transport else {
            panic!("{:?}", c.upstreams[0].transport)
        };
        assert_eq!(api.spec.to_string(), "/etc/gw/specs/pets.yaml");
        assert!(!format!("{c:?}").contains("s3cret"));
        let openapi =
            |extra: &str| format!("[[upstream]]\nname = \"p\"\nopenapi = \"p.yaml\"\n{extra}\n");
        let e = invalid(&openapi(
            "base_url = \"http://api.example\"\nauth = { type = \"header\", name = \"X-Key\", value = \"v\" }",
        ));
        assert!(e.contains("in clear"), "{e}");
        assert!(invalid(&openapi("token = \"t\"")).contains("`token` is not for `openapi`"));
        assert!(invalid(&openapi("command = \"x\"")).contains("`openapi` and `command`"));
        assert!(invalid(&openapi("auth = { type = \"magic\" }")).starts_with("syntax"));
        let e = invalid(&openapi(
            "auth = { type = \"oauth_client_credentials\", token_url = \"http://auth.example/t\", client_id = \"c\", client_secret = \"s\" }",
        ));
        assert!(e.contains("token_url"), "{e}");
        // A credential that cannot be a header value (it would split the request's head).
        let e = invalid(&openapi(
            "base_url = \"https://api.example\"\nauth = { type = \"bearer\", token = \"a\\r\\nX-Evil: 1\" }",
        ));
        assert!(
            e.contains("auth: the credential is not a valid header value"),
            "{e}"
        );
        let e = invalid("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nbase_url = \"https://h\"\n");
        assert!(e.contains("`base_url` is for `openapi`"), "{e}");
    }

    #[test]
    fn the_token_is_never_printed() {
        let c = GatewayConfig::parse(
            "[[upstream]]\nname = \"a\"\nurl = \"https://h/mcp\"\ntoken = \"s3cret\"\n",
            None,
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn policies_share_serves_schema_and_a_bad_rule_names_its_line() {
        let ok = "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n\n[[policy]]\nname = \"ops\"\nsubjects = [\"alice\"]\ntools = [\"a.*\"]\n";
        let c = GatewayConfig::parse(ok, None).unwrap();
        let policy = c.authorization.expect("compiled");
        assert!(policy.principal_allows("ops", codomyrmex_mcp::authz::Kind::Tool, "a.echo"));
        assert!(
            GatewayConfig::parse("[[upstream]]\nname = \"a\"\ncommand = \"x\"\n", None)
                .unwrap()
                .authorization
                .is_none()
        );
        let bad = format!("{ok}\n[[policy]]\nname = \"x\"\ntools = [\"*\"]\n");
        let e = invalid(&bad);
        assert!(
            e.contains("Some(\"10:1\")") && e.contains("matches nobody"),
            "{e}"
        );
    }
}
