//! `file_system.list_directory`, over the confined tree walk it shares with `search` and the
//! root's resource listing ([`walker`]): directories are read from descriptors and a symlink
//! is listed as one, never followed.

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;

use super::super::{Cancel, ToolError, Workspace, kinds};
use codomyrmex_mcp::confine::{ConfineError, ConfinedRoot};

use super::EntryKind;
use super::ignore_rules::{WalkOptions, walker};
use crate::tools::sandbox::tool_error;

#[derive(Debug)]
pub(super) struct ListArgs {
    pub(super) path: Option<String>,
    pub(super) recursive: Option<bool>,
    pub(super) max_depth: Option<u32>,
    pub(super) max_entries: Option<u32>,
    pub(super) include_hidden: Option<bool>,
    pub(super) respect_gitignore: Option<bool>,
}

/// One entry of a listing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct DirEntry {
    /// The entry, relative to the root.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Result of `file_system.list_directory`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListOutput {
    /// The listed directory, relative to the root.
    pub path: String,
    /// The entries, depth first, sorted by name within each directory.
    pub entries: Vec<DirEntry>,
    /// Whether entries were left out because of the limit.
    pub truncated: bool,
    /// Entries left out because their names are not valid UTF-8.
    pub skipped_non_utf8: u64,
}

pub(super) fn list_sync(
    ws: &Workspace,
    args: &ListArgs,
    cancel: &Cancel,
) -> Result<ListOutput, ToolError> {
    let raw = args.path.as_deref().unwrap_or(".");
    let (dir, meta) = ws.sandbox().metadata(raw)?;
    let shown = ws.sandbox().relative(&dir);
    if !meta.is_dir() {
        return Err(ToolError::new(
            kinds::NOT_A_DIRECTORY,
            format!("{shown} is not a directory"),
        ));
    }
    let rel = under_root(ws, &dir, raw)?;
    let limit = ws.limits().max_list_entries;
    let max = args
        .max_entries
        .map_or(limit, |m| (m as usize).min(limit))
        .max(1);
    let depth = if args.recursive.unwrap_or(false) {
        args.max_depth.map(|d| d as usize)
    } else {
        Some(1)
    };
    let mut walk = walker(
        ws.sandbox().confined(),
        rel,
        &WalkOptions {
            include_hidden: args.include_hidden.unwrap_or(false),
            respect_gitignore: args.respect_gitignore.unwrap_or(true),
            max_depth: depth,
            max_filesize: None,
        },
        None,
    )
    .map_err(|e| tool_error(e, raw))?;
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walk.by_ref() {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
        }
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= max {
            truncated = true;
            break;
        }
        let kind = EntryKind::of_kind(entry.kind());
        entries.push(DirEntry {
            path: ConfinedRoot::display(entry.rel()),
            kind,
            size: (kind == EntryKind::File).then(|| entry.size()),
        });
    }
    Ok(ListOutput {
        path: shown,
        entries,
        truncated,
        skipped_non_utf8: walk.tree_filter().skipped_non_utf8(),
    })
}

/// `resolved` (a path the sandbox resolved) relative to the root; refused if it is not under
/// it (it always is: the sandbox returns nothing else).
pub(super) fn under_root<'p>(
    ws: &Workspace,
    resolved: &'p Path,
    raw: &str,
) -> Result<&'p Path, ToolError> {
    resolved
        .strip_prefix(ws.sandbox().root())
        .map_err(|_| tool_error(ConfineError::Escapes, raw))
}
