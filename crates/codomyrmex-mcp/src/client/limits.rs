//! [`ClientLimits`]: what a server can make an [`McpClient`](super::McpClient) hold. Each
//! bound past which the client stops, with a clear error (or, for a server's requests, a
//! JSON-RPC error answer), instead of growing.

/// The client's bounds on what a server feeds it. Set through
/// [`ClientOptions::limits`](super::ClientOptions::limits); the defaults suit a gateway
/// mounting a large server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// The most items one [`list_all`](super::McpClient::list_all) returns, for each kind
    /// (tools, prompts, resources, templates, tasks): past it the list fails with
    /// [`ClientError::Limit`](super::ClientError::Limit). Default 10,000.
    pub list_items: usize,
    /// The most bytes (the pages' compact JSON encoding) one `list_all` reads, for each kind.
    /// Default 16 MiB.
    pub list_bytes: usize,
    /// The most pages one `list_all` follows. Default 10,000.
    pub list_pages: usize,
    /// The most requests of the server (sampling, elicitation, roots, ping) the client
    /// answers at once; one more is refused at once with a `-32000` error answer. Default 64.
    pub server_requests: usize,
    /// The most notifications (and id-less errors) kept for
    /// [`next_notification`](super::McpClient::next_notification) until it is called; past
    /// it, or past `notification_bytes`, a new one is not kept (its handlers still see it).
    /// Default 4,096.
    pub notifications: usize,
    /// The most bytes of the notifications kept (as the server sent them). Default 16 MiB.
    pub notification_bytes: usize,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            list_items: 10_000,
            list_bytes: 16 * 1024 * 1024,
            list_pages: 10_000,
            server_requests: 64,
            notifications: 4096,
            notification_bytes: 16 * 1024 * 1024,
        }
    }
}
