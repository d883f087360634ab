//! How the `client` command fails: the exit statuses scripts can rely on, and a failure's
//! message. Shared by `client_cmd` (every subcommand) and `client_skills`, so neither imports
//! the other's items.

use codomyrmex_mcp::client::ClientError;

/// The exit statuses scripts can rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// 0.
    Ok = 0,
    /// 1: the tool ran and reported an error (`isError`).
    ToolError = 1,
    /// 2: bad flags or arguments.
    Usage = 2,
    /// 3: the server answered with a JSON-RPC error.
    ServerError = 3,
    /// 4: the server could not be started or reached, or the connection failed.
    Connection = 4,
    /// 5: no answer within `--timeout`.
    Timeout = 5,
    /// 6: a protocol era or answer this client does not speak, or more than its bounds
    /// allow (a list whose pages cycle, or with too many items or bytes).
    Protocol = 6,
}

/// A failure: what to print and the exit status.
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) message: String,
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        let (status, message) = match &e {
            ClientError::Server(err) => (
                Status::ServerError,
                format!(
                    "the server answered with error {}: {}",
                    err.code, err.message
                ),
            ),
            ClientError::Closed => (
                Status::Connection,
                "the connection closed (did the server start? see its messages above)".into(),
            ),
            ClientError::Transport { message, .. } => (Status::Connection, message.clone()),
            ClientError::Timeout(_) => (Status::Timeout, e.to_string()),
            ClientError::Protocol(p) => (Status::Protocol, format!("unexpected answer: {p}")),
            ClientError::Era(hint) => (Status::Protocol, hint.clone()),
            ClientError::Limit(why) => {
                (Status::Protocol, format!("the server sent too much: {why}"))
            }
            other => (Status::Protocol, other.to_string()),
        };
        Self { status, message }
    }
}
