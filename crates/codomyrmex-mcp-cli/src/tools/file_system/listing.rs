//! `file_system.list_directory`, and the .gitignore-aware `walker` it shares with `search`
//! and the root's resource listing. The walker never follows symlinks and skips names that
//! are not UTF-8; it does not resolve or check paths (the sandbox does, before the walk).

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::Serialize;

use super::super::{Cancel, ToolError, Workspace, kinds};
use super::{EntryKind, io_err};

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

/// How [`walker`] walks (also used by the root's resource listing).
pub(crate) struct WalkOptions {
    pub(crate) include_hidden: bool,
    pub(crate) respect_gitignore: bool,
    pub(crate) max_depth: Option<usize>,
    pub(crate) max_filesize: Option<u64>,
}

/// A .gitignore-aware walker that never follows symlinks and skips non-UTF-8 names (counted in
/// the returned counter).
pub(crate) fn walker(
    dir: &Path,
    o: &WalkOptions,
    overrides: Option<ignore::overrides::Override>,
) -> (ignore::Walk, Arc<AtomicU64>) {
    let non_utf8 = Arc::new(AtomicU64::new(0));
    let counter = non_utf8.clone();
    let respect = o.respect_gitignore;
    let mut b = ignore::WalkBuilder::new(dir);
    b.hidden(!o.include_hidden)
        .git_ignore(respect)
        .git_exclude(respect)
        .ignore(respect)
        .parents(respect)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(o.max_depth)
        .max_filesize(o.max_filesize)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            let name = e.file_name();
            if name.to_str().is_none() {
                counter.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            !(respect && name == ".git")
        });
    if let Some(o) = overrides {
        b.overrides(o);
    }
    (b.build(), non_utf8)
}

pub(super) fn list_sync(
    ws: &Workspace,
    args: &ListArgs,
    cancel: &Cancel,
) -> Result<ListOutput, ToolError> {
    let raw = args.path.as_deref().unwrap_or(".");
    let dir = ws.sandbox().resolve(raw)?;
    let shown = ws.sandbox().relative(&dir);
    let meta = fs::metadata(&dir).map_err(io_err(&shown))?;
    if !meta.is_dir() {
        return Err(ToolError::new(
            kinds::NOT_A_DIRECTORY,
            format!("{shown} is not a directory"),
        ));
    }
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
    let (walk, non_utf8) = walker(
        &dir,
        &WalkOptions {
            include_hidden: args.include_hidden.unwrap_or(false),
            respect_gitignore: args.respect_gitignore.unwrap_or(true),
            max_depth: depth,
            max_filesize: None,
        },
        None,
    );
    let mut entries = Vec::new();
    let mut truncated = false;
    for item in walk {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
        }
        let Ok(entry) = item else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= max {
            truncated = true;
            break;
        }
        let kind = entry.file_type().map_or(EntryKind::Other, EntryKind::of);
        let size = (kind == EntryKind::File)
            .then(|| entry.metadata().ok().map(|m| m.len()))
            .flatten();
        entries.push(DirEntry {
            path: ws.sandbox().relative(entry.path()),
            kind,
            size,
        });
    }
    Ok(ListOutput {
        path: shown,
        entries,
        truncated,
        skipped_non_utf8: non_utf8.load(Ordering::Relaxed),
    })
}
