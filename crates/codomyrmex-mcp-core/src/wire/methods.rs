//! The MCP methods this server knows, by name: the one table a name is checked against
//! outside the engine's dispatch (metric labels; the check that no transport matches on a
//! method name, `crates/codomyrmex-mcp/tests/transport_obeys.rs`).

/// The JSON-RPC methods of MCP (both eras) this server knows: requests, then notifications.
pub const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/cancel",
    "tasks/list",
    "tasks/update",
    "skills/list",
    "skills/get",
    "resources/directory/read",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/roots/list_changed",
];
