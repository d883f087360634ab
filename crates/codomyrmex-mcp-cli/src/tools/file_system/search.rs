//! `file_system.search`: a regular-expression (or literal) content search over the root, like
//! ripgrep (the `grep` crates over the confined tree walk, [`walker`]). Files the walk finds
//! are opened from their directory's descriptor; a symlink is followed only to a regular file
//! inside the root (resolved by `ConfinedRoot`, like every read). It reports lines shortened
//! to a bounded length; it is not a file finder.

use std::fs::File;

use schemars::JsonSchema;
use serde::Serialize;

use super::super::{Cancel, ToolError, Workspace, kinds};
use codomyrmex_mcp::confine::{self, ConfinedRoot};
use rustix::fs::FileType;

use super::ignore_rules::{WalkOptions, walker};
use super::listing::under_root;
use crate::tools::sandbox::tool_error;

/// Longest line returned by `search`, in characters.
const MAX_MATCH_LINE_CHARS: usize = 500;

#[derive(Debug)]
pub(super) struct SearchArgs {
    pub(super) pattern: String,
    pub(super) path: Option<String>,
    pub(super) globs: Option<Vec<String>>,
    pub(super) case_insensitive: Option<bool>,
    pub(super) fixed_strings: Option<bool>,
    pub(super) max_matches: Option<u32>,
    pub(super) include_hidden: Option<bool>,
    pub(super) respect_gitignore: Option<bool>,
}

/// One matching line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct SearchMatch {
    /// The file, relative to the root.
    pub path: String,
    /// The line number (1-based).
    pub line_number: u64,
    /// The line, without its newline, shortened if very long.
    pub line: String,
}

/// Result of `file_system.search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// The matching lines, by file in name order.
    pub matches: Vec<SearchMatch>,
    /// How many files were searched.
    pub files_searched: u64,
    /// How many files had a match.
    pub files_matched: u64,
    /// Whether the search stopped at the match limit.
    pub truncated: bool,
    /// Entries left out because their names are not valid UTF-8.
    pub skipped_non_utf8: u64,
}

pub(super) fn search_sync(
    ws: &Workspace,
    args: &SearchArgs,
    cancel: &Cancel,
) -> Result<SearchOutput, ToolError> {
    use grep_searcher::{BinaryDetection, SearcherBuilder, sinks};
    if args.pattern.is_empty() {
        return Err(ToolError::invalid_argument("the pattern is empty"));
    }
    let matcher = grep_regex::RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .fixed_strings(args.fixed_strings.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .size_limit(8 * 1024 * 1024)
        .dfa_size_limit(8 * 1024 * 1024)
        .build(&args.pattern)
        .map_err(|e| ToolError::invalid_argument(format!("invalid pattern: {e}")))?;
    let raw = args.path.as_deref().unwrap_or(".");
    let (start, meta) = ws.sandbox().metadata(raw)?;
    let overrides = match &args.globs {
        Some(globs) if !globs.is_empty() => {
            // Matched against paths relative to the start (the walk passes them so).
            let mut ob = ignore::overrides::OverrideBuilder::new(".");
            for g in globs {
                ob.add(g)
                    .map_err(|e| ToolError::invalid_argument(format!("invalid glob {g:?}: {e}")))?;
            }
            Some(
                ob.build()
                    .map_err(|e| ToolError::invalid_argument(format!("invalid globs: {e}")))?,
            )
        }
        _ => None,
    };
    let limits = ws.limits();
    let max = args
        .max_matches
        .map_or(limits.max_search_matches, |m| {
            (m as usize).min(limits.max_search_matches)
        })
        .max(1);
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build();
    let mut out = SearchOutput {
        matches: Vec::new(),
        files_searched: 0,
        files_matched: 0,
        truncated: false,
        skipped_non_utf8: 0,
    };
    // `rel` is what the match reports (a link's own path), `file` what was opened.
    let mut search_file = |rel: String, file: File, out: &mut SearchOutput| -> bool {
        out.files_searched += 1;
        let before = out.matches.len();
        let mut full = false;
        let result = searcher.search_file(
            &matcher,
            &file,
            sinks::Lossy(|line_number, line| {
                if out.matches.len() >= max {
                    full = true;
                    return Ok(false);
                }
                out.matches.push(SearchMatch {
                    path: rel.clone(),
                    line_number,
                    line: shorten_line(line),
                });
                Ok(!cancel.is_cancelled())
            }),
        );
        if result.is_err() {
            // Unreadable files are skipped, as ripgrep does.
            tracing::debug!(file = %rel, "search skipped an unreadable file");
        }
        if out.matches.len() > before {
            out.files_matched += 1;
        }
        full
    };
    if meta.is_file() {
        let (_, file, _) = ws.sandbox().open_file(raw)?;
        out.truncated = search_file(ws.sandbox().relative(&start), file, &mut out);
        return Ok(out);
    }
    let root = ws.sandbox().confined();
    let mut walk = walker(
        root,
        under_root(ws, &start, raw)?,
        &WalkOptions {
            include_hidden: args.include_hidden.unwrap_or(false),
            respect_gitignore: args.respect_gitignore.unwrap_or(true),
            max_depth: None,
            max_filesize: Some(limits.max_search_file_bytes),
        },
        overrides,
    )
    .map_err(|e| tool_error(e, raw))?;
    for entry in walk.by_ref() {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
        }
        // A file is opened from its directory's descriptor; a link is resolved by the
        // confinement and followed only to a regular file inside the root (no FIFO swapped
        // in after the walk blocks the search).
        let opened = match entry.kind() {
            FileType::RegularFile => entry.open_file(),
            FileType::Symlink => root.open_file(entry.rel()).map(|(file, _)| file),
            _ => continue,
        };
        let rel = ConfinedRoot::display(entry.rel());
        let file = match opened.map(|f| (confine::fstat(&f).map(|m| m.len()), f)) {
            Ok((Ok(size), file)) if size <= limits.max_search_file_bytes => file,
            _ => {
                tracing::debug!(file = %rel, "search skipped a file it cannot open as a regular file inside the root");
                continue;
            }
        };
        if search_file(rel, file, &mut out) {
            out.truncated = true;
            break;
        }
    }
    out.skipped_non_utf8 = walk.tree_filter().skipped_non_utf8();
    Ok(out)
}

fn shorten_line(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.chars().count() <= MAX_MATCH_LINE_CHARS {
        return line.to_owned();
    }
    let mut s: String = line.chars().take(MAX_MATCH_LINE_CHARS).collect();
    s.push('…');
    s
}
