//! The MCP wire format: JSON-RPC 2.0 envelopes and the MCP types of both protocol eras.
//!
//! This module is data only. It decodes bytes into [`IncomingMessage`]s and encodes
//! [`OutgoingMessage`]s, and it names the protocol revisions ([`ProtocolVersion`], [`Era`]). It does not decide
//! what a message means; that is the engine's job.
//!
//! Types here follow the specification's `schema.ts` for revisions `2026-07-28` (modern) and
//! `2025-11-25` (legacy, with negotiation down to `2024-11-05`). Where the two revisions share a
//! shape, one Rust type serves both.

pub(crate) mod apps;
pub mod encode;
pub(crate) mod encoded;
pub(crate) mod jsonrpc;
mod methods;
pub mod skills;
pub(crate) mod types;
pub(crate) mod version;

pub use encoded::EncodedResult;
pub use jsonrpc::{
    DecodeError, Decoded, ErrorCode, ErrorObject, IncomingMessage, OutgoingMessage, RequestId,
    decode, decode_value,
};
pub use methods::METHODS;
pub use types::{CallToolResult, Implementation, ResourceContents, ToolAnnotations};
// At the crate's root, their one public path; here for the crate's own paths.
pub(crate) use types::{ContentBlock, LoggingLevel};
pub(crate) use version::{Era, ProtocolVersion};
