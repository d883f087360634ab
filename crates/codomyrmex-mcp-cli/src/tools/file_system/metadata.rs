//! `file_system.checksum` (SHA-256 of a regular file, streamed) and `file_system.stat` (the
//! metadata of a file or directory). Neither reads more than it hashes, and neither decides
//! which paths are allowed: the sandbox does.

use std::io::{self, Read};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::{Cancel, ToolError, Workspace, kinds};
use super::{EntryKind, open_regular};

/// Checksum algorithms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum ChecksumAlgorithm {
    /// SHA-256.
    #[default]
    Sha256,
}

/// Result of `file_system.checksum`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChecksumOutput {
    /// The file, relative to the root.
    pub path: String,
    /// The algorithm used.
    pub algorithm: ChecksumAlgorithm,
    /// The digest, lowercase hex.
    pub digest: String,
    /// The bytes hashed.
    pub size: u64,
}

/// The work of `file_system.checksum`.
pub(super) fn checksum_sync(
    ws: &Workspace,
    path: &str,
    algorithm: Option<ChecksumAlgorithm>,
    cancel: &Cancel,
) -> Result<ChecksumOutput, ToolError> {
    let (path, mut file, _) = open_regular(ws, path)?;
    let shown = ws.sandbox().relative(&path);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ToolError::io(&e, &shown)),
        };
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    let digest = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(ChecksumOutput {
        path: shown,
        algorithm: algorithm.unwrap_or_default(),
        digest,
        size,
    })
}

/// Result of `file_system.stat`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatOutput {
    /// The resolved path, relative to the root (symlinks followed).
    pub path: String,
    /// What the resolved path is.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_unix: Option<i64>,
    /// Creation time, seconds since the Unix epoch, where the file system records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_unix: Option<i64>,
    /// Whether the file is read-only.
    pub readonly: bool,
    /// Unix permission bits, octal (e.g. `644`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Whether the given path is a symlink.
    pub is_symlink: bool,
}

/// The work of `file_system.stat`.
pub(super) fn stat_sync(ws: &Workspace, raw: &str) -> Result<StatOutput, ToolError> {
    let (path, meta) = ws.sandbox().metadata(raw)?;
    let shown = ws.sandbox().relative(&path);
    let unix = |t: io::Result<std::time::SystemTime>| {
        t.ok()
            .map(|t| match t.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
            })
    };
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        Some(format!("{:o}", meta.permissions().mode() & 0o7777))
    };
    #[cfg(not(unix))]
    let mode = None;
    Ok(StatOutput {
        path: shown,
        kind: EntryKind::of(meta.file_type()),
        size: meta.len(),
        modified_unix: unix(meta.modified()),
        created_unix: unix(meta.created()),
        readonly: meta.permissions().readonly(),
        mode,
        is_symlink: ws.sandbox().is_symlink(raw),
    })
}
