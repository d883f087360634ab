//! The full profile's writing tools: `file_system.write`, `edit`, `make_directory` and `move`.
//! Every target is resolved with the sandbox's writable checks (never into `.git`, never out
//! of the root, the root itself never replaced). Files are created, opened and directories
//! made and entries renamed from the library's walk (`ConfinedRoot::open_for_write`,
//! `make_dir`, `rename`: descriptors, `O_NOFOLLOW`, no FIFO waited on). This module does not
//! read files for the reading tools.

use std::io::{self, BufReader, Read, Write};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use codomyrmex_mcp::confine::ConfineError;
use codomyrmex_mcp::confine::WriteMode as Opening;

use super::super::{ToolError, Workspace, kinds};
use super::{ReadEncoding, io_err, open_regular};
use crate::tools::sandbox::tool_error;

/// How `file_system.write` treats an existing file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum WriteMode {
    /// Replace the file's content (default).
    #[default]
    Overwrite,
    /// Fail if the file exists.
    Create,
    /// Add to the end of the file (created if missing).
    Append,
}

/// Result of `file_system.write`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// The file, relative to the root.
    pub path: String,
    /// Bytes written.
    pub bytes_written: u64,
    /// Whether the file was created.
    pub created: bool,
}

/// Result of `file_system.edit`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EditOutput {
    /// The file, relative to the root.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: u64,
    /// The file's new size in bytes.
    pub size: u64,
}

/// Result of `file_system.make_directory`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MakeDirectoryOutput {
    /// The directory, relative to the root.
    pub path: String,
    /// Whether it was created (false: it already existed).
    pub created: bool,
}

/// Result of `file_system.move`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MoveOutput {
    /// The old path, relative to the root.
    pub source: String,
    /// The new path, relative to the root.
    pub destination: String,
}

/// The work of `file_system.write`.
pub(super) fn write_sync(
    ws: &Workspace,
    path: &str,
    content: String,
    encoding: Option<ReadEncoding>,
    mode: Option<WriteMode>,
    create_parents: Option<bool>,
) -> Result<WriteOutput, ToolError> {
    let bytes = match encoding.unwrap_or_default() {
        ReadEncoding::Text => content.into_bytes(),
        ReadEncoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content.as_bytes())
            .map_err(|e| ToolError::invalid_argument(format!("invalid base64: {e}")))?,
    };
    let resolved = ws.sandbox().resolve_writable(path)?;
    let shown = ws.sandbox().relative(&resolved);
    let opening = match mode.unwrap_or_default() {
        WriteMode::Overwrite => Opening::Overwrite,
        WriteMode::Create => Opening::CreateNew,
        WriteMode::Append => Opening::Append,
    };
    let (mut file, created) =
        ws.sandbox()
            .open_for_write(path, opening, create_parents.unwrap_or(false))?;
    file.write_all(&bytes).map_err(io_err(&shown))?;
    file.flush().map_err(io_err(&shown))?;
    Ok(WriteOutput {
        path: shown,
        bytes_written: bytes.len() as u64,
        created,
    })
}

/// The work of `file_system.edit`.
pub(super) fn edit_sync(
    ws: &Workspace,
    path: &str,
    old_string: &str,
    new_string: &str,
    replace_all: Option<bool>,
) -> Result<EditOutput, ToolError> {
    if old_string.is_empty() {
        return Err(ToolError::invalid_argument("old_string is empty"));
    }
    if old_string == new_string {
        return Err(ToolError::invalid_argument(
            "old_string and new_string are the same",
        ));
    }
    ws.sandbox().resolve_writable(path)?;
    let raw = path;
    let (path, file, size) = open_regular(ws, raw)?;
    let shown = ws.sandbox().relative(&path);
    if size > ws.limits().max_edit_bytes {
        return Err(ToolError::new(
            kinds::TOO_LARGE,
            format!(
                "{shown} is {size} bytes; edit handles files up to {} bytes",
                ws.limits().max_edit_bytes
            ),
        ));
    }
    let mut text = String::new();
    // The bytes read are capped too, whatever size the file reported.
    BufReader::new(file)
        .take(ws.limits().max_edit_bytes.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => {
                ToolError::invalid_argument(format!("{shown} is not UTF-8 text"))
            }
            _ => ToolError::io(&e, &shown),
        })?;
    if text.len() as u64 > ws.limits().max_edit_bytes {
        return Err(ToolError::new(
            kinds::TOO_LARGE,
            format!(
                "{shown} has more than {} bytes; edit handles files up to that",
                ws.limits().max_edit_bytes
            ),
        ));
    }
    let count = text.matches(old_string).count();
    if count == 0 {
        return Err(ToolError::new(
            kinds::NO_MATCH,
            format!(
                "old_string was not found in {shown}; it must match exactly, whitespace included"
            ),
        ));
    }
    let replace_all = replace_all.unwrap_or(false);
    if count > 1 && !replace_all {
        return Err(ToolError::new(
            kinds::AMBIGUOUS_MATCH,
            format!(
                "old_string occurs {count} times in {shown}; add context to make it unique or set replace_all"
            ),
        ));
    }
    let new_text = text.replace(old_string, new_string);
    let (mut out, _) = ws
        .sandbox()
        .open_for_write(raw, Opening::Overwrite, false)?;
    out.write_all(new_text.as_bytes()).map_err(io_err(&shown))?;
    Ok(EditOutput {
        path: shown,
        replacements: count as u64,
        size: new_text.len() as u64,
    })
}

/// The work of `file_system.make_directory`.
pub(super) fn make_directory_sync(
    ws: &Workspace,
    path: &str,
    parents: Option<bool>,
) -> Result<MakeDirectoryOutput, ToolError> {
    let resolved = ws.sandbox().resolve_writable(path)?;
    let shown = ws.sandbox().relative(&resolved);
    let created = ws
        .sandbox()
        .make_dir(path, parents.unwrap_or(true))
        .map_err(|e| match e.kind {
            kinds::ALREADY_EXISTS => ToolError::new(
                kinds::ALREADY_EXISTS,
                format!("{shown} exists and is not a directory"),
            ),
            _ => e,
        })?;
    Ok(MakeDirectoryOutput {
        path: shown,
        created,
    })
}

/// The work of `file_system.move`.
pub(super) fn move_sync(
    ws: &Workspace,
    raw_source: &str,
    destination: &str,
    overwrite: Option<bool>,
) -> Result<MoveOutput, ToolError> {
    let sb = ws.sandbox();
    let raw_destination = destination;
    let source = sb.resolve_entry_writable(raw_source, true)?;
    let destination = sb.resolve_entry_writable(raw_destination, false)?;
    if source == sb.root() || destination == sb.root() {
        return Err(ToolError::access_denied(
            "the root itself cannot be moved or replaced",
        ));
    }
    let (src_shown, dst_shown) = (sb.relative(&source), sb.relative(&destination));
    if destination.starts_with(&source) {
        return Err(ToolError::invalid_argument(format!(
            "cannot move {src_shown} into itself"
        )));
    }
    // The destination is looked at by the rename itself, in its directory's descriptor.
    sb.rename(raw_source, raw_destination, overwrite.unwrap_or(false))
        .map_err(|e| match e {
            ConfineError::Exists => ToolError::new(
                kinds::ALREADY_EXISTS,
                format!("{dst_shown} exists; set overwrite to replace it"),
            ),
            ConfineError::ReplacesADirectory => ToolError::new(
                kinds::ALREADY_EXISTS,
                format!("{dst_shown} is a directory; it is never replaced"),
            ),
            e => tool_error(e, raw_source),
        })?;
    Ok(MoveOutput {
        source: src_shown,
        destination: dst_shown,
    })
}
