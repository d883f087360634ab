//! [`McpServerConfig`]: identity, limits and timeouts of a server.

use std::collections::HashMap;
use std::time::Duration;

/// A token-bucket rate limit: `per_second` tokens refill continuously, up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sustained calls per second.
    pub per_second: f64,
    /// The most calls allowed at once after an idle period.
    pub burst: u32,
}

impl RateLimit {
    /// The Python reference's default: 50 calls per second with a burst of 100.
    pub const PYTHON_REFERENCE: RateLimit = RateLimit {
        per_second: 50.0,
        burst: 100,
    };
}

/// Whether shared caches may keep list results (`cacheScope`, 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheScope {
    /// Any cache may keep and share the result.
    Public,
    /// Only caches within the same authorization context.
    Private,
}

impl CacheScope {
    /// The wire value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// Configuration of a server: the library's `codomyrmex_mcp::McpServer` takes one.
///
/// Not exhaustive: build it with [`McpServerConfig::new`] or [`Default`], then set fields or
/// use the `with_*` methods.
///
/// | field | default |
/// |---|---|
/// | `name`, `version` | `codomyrmex-mcp`, this crate's version |
/// | `instructions` | none |
/// | `tool_timeout` | 60 s (the Python reference's) |
/// | `tool_timeouts` | none; a tool's own `timeout` setting wins over `tool_timeout` |
/// | `rate_limit` | 50 calls/s, burst 100 (the Python reference's), over all tool calls |
/// | `tool_rate_limits` | none |
/// | `max_message_size` | 4 MiB per incoming message |
/// | `max_result_size` | 16 MiB per result (`tools/call`, `resources/read`, `prompts/get`), as encoded JSON; a larger one is replaced by an error |
/// | `max_concurrent_requests` | 256 handlers (tools, resource reads, prompts, completers, task work) running at once per session; stateless (2026-07-28) HTTP requests share one such bound |
/// | `max_queued_requests` | 256 more waiting for a turn; past that a request is refused at once |
/// | `page_size` | 100 items per list page |
/// | `list_ttl` | 60 s (`ttlMs` on 2026-07-28 list results) |
/// | `cache_scope` | `public` |
/// | `shutdown_grace` | 5 s for in-flight calls after the input closes |
/// | `stdio_spin` | 100 µs of polling stdin (a pipe) after the last answer before the thread may sleep; zero: never |
/// | `stdio_pipe_size` | 256 KiB: stdin and stdout, where they are smaller pipes, are raised to this capacity at start-up (Linux, capped at `pipe-max-size`); zero: never |
/// | `http_spin` | 100 µs of polling an HTTP connection's socket after a whole response, when it carried the server's last 8 calls and no other call is in flight or overlapped, one connection at a time, before the thread may sleep; zero: never |
/// | `request_state_key` | random per process |
/// | `request_state_ttl` | 10 minutes |
/// | `authorization` | none: everyone may use everything |
/// | `observers` | none: `/metrics` shows the transport's counters and the policy's denials |
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The server's name, reported as `serverInfo.name`.
    pub name: String,
    /// The server's version, reported as `serverInfo.version`.
    pub version: String,
    /// Guidance for the model, reported as `instructions`.
    pub instructions: Option<String>,
    /// The default time a tool call may take before it is cancelled with a `TIMEOUT` failure.
    pub tool_timeout: Duration,
    /// Per-tool timeouts, by invocation name.
    pub tool_timeouts: HashMap<String, Duration>,
    /// A limit over all tool calls; `None` disables it.
    pub rate_limit: Option<RateLimit>,
    /// Per-tool limits, by invocation name, applied in addition to `rate_limit`.
    pub tool_rate_limits: HashMap<String, RateLimit>,
    /// The largest incoming message, in bytes.
    pub max_message_size: usize,
    /// The largest result a tool call, resource read or prompt may produce, in bytes of
    /// encoded JSON. A larger tool result becomes a `RESULT_TOO_LARGE` failure
    /// (`isError: true`); a larger resource or prompt result an internal error (`-32603`).
    pub max_result_size: usize,
    /// The most handlers (tool calls, resource reads, prompts, completers, task work) that run
    /// at once per session (stateless requests, which have a session each, share one bound);
    /// up to `max_queued_requests` more wait their turn.
    pub max_concurrent_requests: usize,
    /// How many handler invocations may wait for one of the `max_concurrent_requests` slots.
    /// Past that a request is refused at once: a tool call with an `OVERLOADED` failure,
    /// anything else with a `-32603` error.
    pub max_queued_requests: usize,
    /// Items per page of `tools/list` (and the other lists).
    pub page_size: usize,
    /// `ttlMs` of cacheable results in the modern era.
    pub list_ttl: Duration,
    /// `cacheScope` of cacheable results in the modern era.
    pub cache_scope: CacheScope,
    /// How long in-flight calls may run on after the input closes.
    pub shutdown_grace: Duration,
    /// How long the stdio transport, on stdin and stdout as pipes (Linux), keeps polling its
    /// input after it has written everything and no call is in flight, before its thread may
    /// sleep. Sleeping lets an idle vCPU halt, and waking it costs tens of microseconds on a
    /// VM; a client that sends its next request within this window finds the server awake.
    /// Bounded: an idle server stops polling after this long (at most
    /// [`Self::MAX_STDIO_SPIN`]), and the polling reads nothing. Zero never polls. The
    /// `CODOMYRMEX_MCP_STDIO_SPIN_US` environment variable (whole microseconds) overrides it
    /// for `serve_stdio`.
    pub stdio_spin: Duration,
    /// The capacity, in bytes, that `serve_stdio` gives stdin and stdout at start-up where
    /// they are pipes holding less (Linux, `F_SETPIPE_SZ`; the kernel rounds it up to a power
    /// of two pages and it is capped at `/proc/sys/fs/pipe-max-size`). A message that does not
    /// fit in the pipe is written in rounds, each a sleep and a wake-up of both processes;
    /// with room for the whole message it takes one. It is kernel memory holding only unread
    /// bytes, charged to the user who made the pipe; a refusal (past that user's pipe pages)
    /// or a descriptor that is not a pipe leaves it as it was, never an error. Zero leaves the
    /// pipes alone. The `CODOMYRMEX_MCP_STDIO_PIPE_SIZE` environment variable (bytes)
    /// overrides it for `serve_stdio`.
    pub stdio_pipe_size: usize,
    /// The same for Streamable HTTP (Linux): how long a keep-alive connection, its response
    /// written and no request waiting, polls its socket before its thread may sleep. Only
    /// when it cannot hold up other connections: when the server's last 8 calls all came
    /// over this connection, not while any call of the server is in flight, not after calls
    /// overlapped (many busy connections keep the workers awake anyway), and on one
    /// connection at a time. Bounded (at most
    /// [`Self::MAX_INPUT_SPIN`]), reads nothing; zero never polls. The
    /// `CODOMYRMEX_MCP_HTTP_SPIN_US` environment variable (whole microseconds) overrides it
    /// for `HttpServer::serve`.
    pub http_spin: Duration,
    /// The key that seals `requestState` of multi round-trip requests. `None` draws a random
    /// key at start-up; set it when several server instances must accept each other's states.
    pub request_state_key: Option<[u8; 32]>,
    /// How long a sealed `requestState` stays valid.
    pub request_state_ttl: Duration,
    /// Who may list and use which names ([`crate::authz`]); `None`, the default: everyone
    /// may use everything.
    pub authorization: Option<std::sync::Arc<crate::authz::Authorization>>,
    /// What else the server's parts count for `/metrics` and `/status` ([`crate::observe`]);
    /// none by default.
    pub observers: crate::observe::Observers,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            name: "codomyrmex-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            tool_timeout: Duration::from_secs(60),
            tool_timeouts: HashMap::new(),
            rate_limit: Some(RateLimit::PYTHON_REFERENCE),
            tool_rate_limits: HashMap::new(),
            max_message_size: 4 * 1024 * 1024,
            max_result_size: 16 * 1024 * 1024,
            max_concurrent_requests: 256,
            max_queued_requests: 256,
            page_size: 100,
            list_ttl: Duration::from_secs(60),
            cache_scope: CacheScope::Public,
            shutdown_grace: Duration::from_secs(5),
            stdio_spin: Duration::from_micros(100),
            stdio_pipe_size: 256 * 1024,
            http_spin: Duration::from_micros(100),
            request_state_key: None,
            request_state_ttl: Duration::from_secs(600),
            authorization: None,
            observers: crate::observe::Observers::new(),
        }
    }
}

impl McpServerConfig {
    /// The defaults with a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            ..Self::default()
        }
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the default tool timeout.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Sets (or with `None`, removes) the global rate limit.
    pub fn with_rate_limit(mut self, limit: Option<RateLimit>) -> Self {
        self.rate_limit = limit;
        self
    }

    /// Sets the largest result, in bytes of encoded JSON (at least 1).
    pub fn with_max_result_size(mut self, bytes: usize) -> Self {
        self.max_result_size = bytes.max(1);
        self
    }

    /// Sets how many handlers run at once per session (at least 1).
    pub fn with_max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent_requests = n.max(1);
        self
    }

    /// Sets how many handler invocations may wait for a turn before requests are refused.
    pub fn with_max_queued_requests(mut self, n: usize) -> Self {
        self.max_queued_requests = n;
        self
    }

    /// Sets how long the stdio transport polls its input before blocking (at most
    /// [`Self::MAX_INPUT_SPIN`]; zero blocks at once).
    pub fn with_stdio_spin(mut self, spin: Duration) -> Self {
        self.stdio_spin = spin.min(Self::MAX_INPUT_SPIN);
        self
    }

    /// Sets the capacity `serve_stdio` gives its pipes (zero leaves them alone).
    pub fn with_stdio_pipe_size(mut self, bytes: usize) -> Self {
        self.stdio_pipe_size = bytes;
        self
    }

    /// Sets how long an HTTP connection polls its socket after a response before blocking
    /// (at most [`Self::MAX_INPUT_SPIN`]; zero blocks at once).
    pub fn with_http_spin(mut self, spin: Duration) -> Self {
        self.http_spin = spin.min(Self::MAX_INPUT_SPIN);
        self
    }

    /// The longest `stdio_spin` or `http_spin` the transports honour: polling longer than
    /// this saves nothing a wake-up costs and burns a core.
    pub const MAX_INPUT_SPIN: Duration = Duration::from_millis(10);

    /// The longest `stdio_spin`: [`Self::MAX_INPUT_SPIN`], under its first name.
    pub const MAX_STDIO_SPIN: Duration = Self::MAX_INPUT_SPIN;

    /// Sets who may list and use which names ([`crate::authz`]; `None`: everyone may use
    /// everything).
    pub fn with_authorization(
        mut self,
        authorization: Option<std::sync::Arc<crate::authz::Authorization>>,
    ) -> Self {
        self.authorization = authorization;
        self
    }

    /// Sets the page size (at least 1).
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide's table of server defaults (docs/transports.md, "Server defaults").
    #[test]
    fn defaults_are_the_readmes() {
        let c = McpServerConfig::default();
        assert_eq!(c.tool_timeout, Duration::from_secs(60));
        let rate = c.rate_limit.unwrap();
        assert_eq!((rate.per_second, rate.burst), (50.0, 100));
        assert_eq!(c.max_message_size, 4 * 1024 * 1024);
        assert_eq!(c.max_concurrent_requests, 256);
        assert_eq!(c.max_queued_requests, 256);
        assert_eq!(c.page_size, 100);
        assert_eq!(c.list_ttl, Duration::from_millis(60_000));
        assert_eq!(c.cache_scope, CacheScope::Public);
        assert_eq!(c.request_state_ttl, Duration::from_secs(600));
        assert_eq!(c.shutdown_grace, Duration::from_secs(5));
    }

    #[test]
    fn the_stdio_spin_defaults_to_100_us_and_is_capped() {
        let c = McpServerConfig::default();
        assert_eq!(c.stdio_spin, Duration::from_micros(100));
        let long = c.clone().with_stdio_spin(Duration::from_secs(1));
        assert_eq!(long.stdio_spin, McpServerConfig::MAX_STDIO_SPIN);
        assert_eq!(c.with_stdio_spin(Duration::ZERO).stdio_spin, Duration::ZERO);
    }

    #[test]
    fn the_stdio_pipe_size_defaults_to_256_kib_and_zero_is_off() {
        let c = McpServerConfig::default();
        assert_eq!(c.stdio_pipe_size, 256 * 1024);
        assert_eq!(c.with_stdio_pipe_size(0).stdio_pipe_size, 0);
    }

    #[test]
    fn the_http_spin_defaults_to_100_us_and_is_capped() {
        let c = McpServerConfig::default();
        assert_eq!(c.http_spin, Duration::from_micros(100));
        let long = c.clone().with_http_spin(Duration::from_secs(1));
        assert_eq!(long.http_spin, McpServerConfig::MAX_INPUT_SPIN);
        assert_eq!(
            McpServerConfig::MAX_STDIO_SPIN,
            McpServerConfig::MAX_INPUT_SPIN
        );
        assert_eq!(c.with_http_spin(Duration::ZERO).http_spin, Duration::ZERO);
    }

    #[test]
    fn max_result_size_defaults_to_16_mib_and_is_at_least_one() {
        assert_eq!(McpServerConfig::default().max_result_size, 16 * 1024 * 1024);
        assert_eq!(
            McpServerConfig::default()
                .with_max_result_size(0)
                .max_result_size,
            1
        );
        assert_eq!(
            McpServerConfig::default()
                .with_max_result_size(4096)
                .max_result_size,
            4096
        );
    }

    #[test]
    fn concurrency_setters_keep_at_least_one_running() {
        let c = McpServerConfig::default()
            .with_max_concurrent_requests(0)
            .with_max_queued_requests(0);
        assert_eq!((c.max_concurrent_requests, c.max_queued_requests), (1, 0));
        let d = McpServerConfig::default();
        assert_eq!(
            (d.max_concurrent_requests, d.max_queued_requests),
            (256, 256)
        );
    }
}
