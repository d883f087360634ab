//! [`McpServer`]: a registry, a configuration and the engine, ready to serve a transport.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::McpServerConfig;
use crate::McpToolRegistry;
use crate::engine::Engine;
use crate::transport::stdio::{self, StdioError};

/// An MCP server: a tool registry (and, optionally, resources, prompts, skills and UI
/// resources) with a configuration, served over stdio, a byte stream or Streamable HTTP.
/// Cheap to clone: clones share the engine.
///
/// Served in memory to a [`McpClient`](crate::client::McpClient), as a test would:
///
/// ```
/// use std::sync::Arc;
/// use codomyrmex_mcp::client::McpClient;
/// use codomyrmex_mcp::{Era, McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry};
/// use serde_json::{Map, Value, json};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(McpToolRegistry::new());
/// registry.register(
///     "text.shout",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
///         Ok(json!(args["text"].as_str().unwrap_or_default().to_uppercase()))
///     },
/// )?;
/// let server = McpServer::new(McpServerConfig::new("demo", "1.0.0"), registry);
///
/// for era in [Era::Modern, Era::Legacy] {
///     let client = McpClient::in_memory(&server, era);
///     client.initialize().await?; // `server/discover`, or the legacy handshake
///     let result = client.call_tool("text.shout", json!({"text": "hi"})).await?;
///     assert_eq!(result["structuredContent"]["result"], "HI");
/// }
/// # Ok(()) }
/// ```
///
/// A program that serves it over stdio (`serve_http` takes an address instead):
///
/// ```no_run
/// use std::sync::Arc;
/// use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(McpToolRegistry::new());
/// let server = McpServer::new(McpServerConfig::new("demo", "1.0.0"), registry);
/// server.serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    engine: Engine,
}

impl McpServer {
    /// A server for `registry`.
    pub fn new(config: McpServerConfig, registry: Arc<McpToolRegistry>) -> Self {
        Self {
            // The tokio/OS platform, named rather than left to the registered default.
            engine: Engine::builder(config, registry)
                .platform(crate::runtime::platform())
                .build(),
        }
    }

    /// This server, also serving `resources`.
    pub fn with_resources(mut self, resources: Arc<crate::McpResourceRegistry>) -> Self {
        self.engine = self.engine.with_resources(resources);
        self
    }

    /// This server, also serving `prompts`.
    pub fn with_prompts(mut self, prompts: Arc<crate::McpPromptRegistry>) -> Self {
        self.engine = self.engine.with_prompts(prompts);
        self
    }

    /// This server, also serving `skills` (the Skills extension, SEP-2640; see
    /// [`crate::skills`]): declares the extension and the `resources` capability.
    pub fn with_skills(
        mut self,
        skills: Arc<codomyrmex_mcp_core::skills::McpSkillRegistry>,
    ) -> Self {
        self.engine = self.engine.with_skills(skills);
        self
    }

    /// This server, with task limits `config` (tools run as tasks per their `task_support`).
    pub fn with_task_config(mut self, config: crate::engine::TaskConfig) -> Self {
        self.engine = self.engine.with_task_config(config);
        self
    }

    /// This server, sharing its task records with other instances through `store` (see
    /// [`crate::task_store`]), as `instance`, with leases of `lease`; starts the driver's task
    /// sync ([`crate::runtime::spawn_task_sync`]), which runs while the returned handle is
    /// held. Call it while setting up, inside a tokio runtime, before serving.
    pub fn with_task_store(
        mut self,
        store: Arc<dyn crate::task_store::TaskStore>,
        instance: impl Into<String>,
        lease: std::time::Duration,
    ) -> (Self, Option<crate::runtime::TaskSyncHandle>) {
        self.engine = self.engine.with_task_store(store, instance, lease);
        let sync = crate::runtime::spawn_task_sync(&self.engine);
        (self, sync)
    }

    /// [`with_task_store`](Self::with_task_store), with the store's `wakeups` (pushed when
    /// another instance cancels a task of this one or queues answers for it): the sync
    /// renews at once on each instead of polling every second
    /// ([`crate::runtime::spawn_task_sync_woken`]).
    pub fn with_task_store_woken(
        mut self,
        store: Arc<dyn crate::task_store::TaskStore>,
        instance: impl Into<String>,
        lease: std::time::Duration,
        wakeups: crate::runtime::TaskWakeups,
    ) -> (Self, Option<crate::runtime::TaskSyncHandle>) {
        self.engine = self.engine.with_task_store(store, instance, lease);
        let sync = crate::runtime::spawn_task_sync_woken(&self.engine, wakeups);
        (self, sync)
    }

    /// The protocol engine, for transports and tests.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The registry being served. Changes to it are announced to connected clients.
    pub fn registry(&self) -> &Arc<McpToolRegistry> {
        self.engine.registry()
    }

    /// Serves this process's stdin and stdout until stdin closes.
    pub async fn serve_stdio(&self) -> Result<(), StdioError> {
        stdio::serve_stdio(self.engine.clone()).await
    }

    /// Serves this process's stdin and stdout until stdin closes or `shutdown` resolves;
    /// either way in-flight calls get the grace period. See [`stdio::serve_until`].
    pub async fn serve_stdio_until(
        &self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StdioError> {
        stdio::serve_stdio_until(self.engine.clone(), shutdown).await
    }

    /// Serves newline-delimited JSON-RPC over any byte stream pair.
    pub async fn serve_stream<R, W>(&self, reader: R, writer: W) -> Result<(), StdioError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        stdio::serve(self.engine.clone(), reader, writer).await
    }

    /// Serves Streamable HTTP at `config.bind` and `config.path` until Ctrl-C or SIGTERM,
    /// then lets in-flight requests finish within the grace period.
    #[cfg(feature = "http")]
    pub async fn serve_http(
        &self,
        config: crate::transport::http::HttpConfig,
    ) -> Result<(), crate::transport::http::HttpError> {
        let http = crate::transport::http::HttpServer::new(self.engine.clone(), config);
        let listener = http.bind().await?;
        tracing::info!(addr = %listener.local_addr()?, "serving MCP over Streamable HTTP");
        http.serve(listener, crate::transport::http::shutdown_signal())
            .await
    }
}
