//! `file_system.*`: read, list, search, checksum and stat files under the root; in the full
//! profile also write, edit, make directories and move.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use codomyrmex_mcp::{WithContent, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::model_text::ModelText;
use super::sandbox::{open_checked, shorten};
use super::{Cancel, ToolError, Workspace, blocking, kinds};

/// How many bytes are examined to decide whether a file is binary.
const SNIFF_BYTES: usize = 8192;
/// Longest line returned by `search`, in characters.
const MAX_MATCH_LINE_CHARS: usize = 500;

// ---------------------------------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------------------------------

/// The `file_system` tools of every profile: reading, listing, searching, checksums and
/// metadata.
pub struct FileSystemTools {
    ws: Workspace,
}

impl FileSystemTools {
    /// The tools over `ws`.
    pub fn new(ws: Workspace) -> Self {
        Self { ws }
    }
}

#[mcp_tools]
impl FileSystemTools {
    #[mcp_tool(
        name = "file_system.read",
        title = "Read a file",
        description = "Reads a file under the root: all of it, a line range (start_line/end_line, \
                       1-based, inclusive) or a byte range (offset). Output is capped (max_bytes, \
                       at most the server's limit); `truncated` and `next_line`/`next_offset` say \
                       how to continue. Binary files are detected and returned only with \
                       encoding \"base64\".",
        read_only,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn read(
        &self,
        /// The file, relative to the root.
        path: String,
        /// The first line to return (1-based). Selects a line range.
        #[arg(minimum = 1)]
        start_line: Option<u64>,
        /// The last line to return (1-based, inclusive). Selects a line range.
        #[arg(minimum = 1)]
        end_line: Option<u64>,
        /// The byte offset to start at (not with a line range).
        offset: Option<u64>,
        /// The most bytes to return; the server's limit applies too.
        #[arg(minimum = 1)]
        max_bytes: Option<u64>,
        /// `text` (default) or `base64`.
        encoding: Option<ReadEncoding>,
    ) -> Result<WithContent<ReadOutput>, ToolError> {
        let ws = self.ws.clone();
        let args = ReadArgs {
            path,
            start_line,
            end_line,
            offset,
            max_bytes,
            encoding,
        };
        blocking(move |cancel| read_sync(&ws, &args, cancel))
            .await
            .map(ModelText::for_model)
    }

    #[mcp_tool(
        name = "file_system.list_directory",
        title = "List a directory",
        description = "Lists a directory under the root, optionally recursively (max_depth), up \
                       to max_entries entries. Respects .gitignore and skips hidden files unless \
                       told otherwise. Paths are relative to the root.",
        read_only,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn list_directory(
        &self,
        /// The directory, relative to the root; default the root.
        path: Option<String>,
        /// List the whole tree below the directory.
        recursive: Option<bool>,
        /// With recursive: how many levels to descend (1 lists the directory itself).
        #[arg(minimum = 1)]
        max_depth: Option<u32>,
        /// The most entries to return; the server's limit applies too.
        #[arg(minimum = 1)]
        max_entries: Option<u32>,
        /// Include hidden files (names starting with a dot). Default false.
        include_hidden: Option<bool>,
        /// Skip what .gitignore, .ignore and .git/info/exclude exclude, and .git itself. Default
        /// true.
        respect_gitignore: Option<bool>,
    ) -> Result<WithContent<ListOutput>, ToolError> {
        let ws = self.ws.clone();
        let args = ListArgs {
            path,
            recursive,
            max_depth,
            max_entries,
            include_hidden,
            respect_gitignore,
        };
        blocking(move |cancel| list_sync(&ws, &args, cancel))
            .await
            .map(ModelText::for_model)
    }

    #[mcp_tool(
        name = "file_system.search",
        title = "Search file contents",
        description = "Searches file contents under the root for a regular expression (Rust \
                       regex syntax, or a fixed string), like ripgrep: respects .gitignore, skips \
                       hidden and binary files. Returns matching lines with their paths and line \
                       numbers.",
        read_only,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    #[allow(clippy::too_many_arguments)]
    async fn search(
        &self,
        /// The regular expression (Rust regex syntax), or a literal with fixed_strings.
        #[arg(min_length = 1)]
        pattern: String,
        /// A directory or file to search, relative to the root; default the root.
        path: Option<String>,
        /// Only search files matching these globs, e.g. ["*.rs", "!target/**"].
        globs: Option<Vec<String>>,
        /// Match case-insensitively. Default false.
        case_insensitive: Option<bool>,
        /// Treat the pattern as a literal string. Default false.
        fixed_strings: Option<bool>,
        /// The most matching lines to return; the server's limit applies too.
        #[arg(minimum = 1)]
        max_matches: Option<u32>,
        /// Search hidden files too. Default false.
        include_hidden: Option<bool>,
        /// Skip what .gitignore excludes. Default true.
        respect_gitignore: Option<bool>,
    ) -> Result<WithContent<SearchOutput>, ToolError> {
        let ws = self.ws.clone();
        let args = SearchArgs {
            pattern,
            path,
            globs,
            case_insensitive,
            fixed_strings,
            max_matches,
            include_hidden,
            respect_gitignore,
        };
        blocking(move |cancel| search_sync(&ws, &args, cancel))
            .await
            .map(ModelText::for_model)
    }

    #[mcp_tool(
        name = "file_system.checksum",
        title = "Checksum a file",
        description = "Computes the SHA-256 digest of a file under the root (lowercase hex).",
        read_only,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn checksum(
        &self,
        /// The file, relative to the root.
        path: String,
        /// The algorithm; only `sha256`.
        algorithm: Option<ChecksumAlgorithm>,
    ) -> Result<WithContent<ChecksumOutput>, ToolError> {
        let ws = self.ws.clone();
        blocking(move |cancel| {
            let (path, mut file, _) = open_regular(&ws, &path)?;
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
        })
        .await
        .map(ModelText::for_model)
    }

    #[mcp_tool(
        name = "file_system.stat",
        title = "File metadata",
        description = "Returns the metadata of a file or directory under the root: kind, size, \
                       modification time, permissions and whether the path is a symlink.",
        read_only,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn stat(
        &self,
        /// The file or directory, relative to the root.
        path: String,
    ) -> Result<StatOutput, ToolError> {
        let ws = self.ws.clone();
        blocking(move |_| {
            let raw = path;
            let path = ws.sandbox().resolve(&raw)?;
            let shown = ws.sandbox().relative(&path);
            let meta = fs::metadata(&path).map_err(io_err(&shown))?;
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
                is_symlink: ws.sandbox().is_symlink(&raw),
            })
        })
        .await
    }
}

/// The `file_system` tools of the full profile: writing, editing, making directories and
/// moving.
pub struct FileSystemWriteTools {
    ws: Workspace,
}

impl FileSystemWriteTools {
    /// The tools over `ws`.
    pub fn new(ws: Workspace) -> Self {
        Self { ws }
    }
}

#[mcp_tools]
impl FileSystemWriteTools {
    #[mcp_tool(
        name = "file_system.write",
        title = "Write a file",
        description = "Writes a file under the root: overwrite (default), create (fails if it \
                       exists) or append. Parent directories are created with create_parents.",
        read_only = false,
        destructive,
        idempotent = false,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn write(
        &self,
        /// The file, relative to the root.
        path: String,
        /// The content.
        content: String,
        /// `text` (default) or `base64` (content is base64-encoded bytes).
        encoding: Option<ReadEncoding>,
        /// `overwrite` (default), `create` or `append`.
        mode: Option<WriteMode>,
        /// Create missing parent directories. Default false.
        create_parents: Option<bool>,
    ) -> Result<WriteOutput, ToolError> {
        let ws = self.ws.clone();
        blocking(move |_| {
            let bytes = match encoding.unwrap_or_default() {
                ReadEncoding::Text => content.into_bytes(),
                ReadEncoding::Base64 => base64::engine::general_purpose::STANDARD
                    .decode(content.as_bytes())
                    .map_err(|e| ToolError::invalid_argument(format!("invalid base64: {e}")))?,
            };
            let path = ws.sandbox().resolve_writable(&path)?;
            let shown = ws.sandbox().relative(&path);
            let existing = fs::metadata(&path).ok();
            if let Some(m) = &existing {
                if m.is_dir() {
                    return Err(ToolError::new(
                        kinds::IS_A_DIRECTORY,
                        format!("{shown} is a directory"),
                    ));
                }
                if !m.is_file() {
                    return Err(ToolError::invalid_argument(format!(
                        "{shown} is not a regular file"
                    )));
                }
            }
            if create_parents.unwrap_or(false)
                && let Some(parent) = path.parent()
            {
                fs::create_dir_all(parent).map_err(io_err(&shown))?;
            }
            let mut options = fs::OpenOptions::new();
            match mode.unwrap_or_default() {
                WriteMode::Overwrite => options.write(true).create(true).truncate(true),
                WriteMode::Create => options.write(true).create_new(true),
                WriteMode::Append => options.append(true).create(true),
            };
            let mut file = open_checked(&mut options, &path, &shown)?;
            file.write_all(&bytes).map_err(io_err(&shown))?;
            file.flush().map_err(io_err(&shown))?;
            Ok(WriteOutput {
                path: shown,
                bytes_written: bytes.len() as u64,
                created: existing.is_none(),
            })
        })
        .await
    }

    #[mcp_tool(
        name = "file_system.edit",
        title = "Edit a file",
        description = "Replaces an exact string in a text file under the root. old_string must \
                       occur exactly once unless replace_all is true; include enough context to \
                       make it unique.",
        read_only = false,
        destructive,
        idempotent = false,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn edit(
        &self,
        /// The file, relative to the root.
        path: String,
        /// The exact text to replace (whitespace and newlines included).
        #[arg(min_length = 1)]
        old_string: String,
        /// The replacement.
        new_string: String,
        /// Replace every occurrence instead of requiring exactly one. Default false.
        replace_all: Option<bool>,
    ) -> Result<EditOutput, ToolError> {
        let ws = self.ws.clone();
        blocking(move |_| {
            if old_string.is_empty() {
                return Err(ToolError::invalid_argument("old_string is empty"));
            }
            if old_string == new_string {
                return Err(ToolError::invalid_argument(
                    "old_string and new_string are the same",
                ));
            }
            ws.sandbox().resolve_writable(&path)?;
            let (path, file, size) = open_regular(&ws, &path)?;
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
            BufReader::new(file)
                .read_to_string(&mut text)
                .map_err(|e| match e.kind() {
                    io::ErrorKind::InvalidData => {
                        ToolError::invalid_argument(format!("{shown} is not UTF-8 text"))
                    }
                    _ => ToolError::io(&e, &shown),
                })?;
            let count = text.matches(&old_string).count();
            if count == 0 {
                return Err(ToolError::new(
                    kinds::NO_MATCH,
                    format!("old_string was not found in {shown}; it must match exactly, whitespace included"),
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
            let new_text = text.replace(&old_string, &new_string);
            let mut options = fs::OpenOptions::new();
            options.write(true).truncate(true);
            let mut out = open_checked(&mut options, &path, &shown)?;
            out.write_all(new_text.as_bytes()).map_err(io_err(&shown))?;
            Ok(EditOutput {
                path: shown,
                replacements: count as u64,
                size: new_text.len() as u64,
            })
        })
        .await
    }

    #[mcp_tool(
        name = "file_system.make_directory",
        title = "Make a directory",
        description = "Creates a directory under the root (with its parents unless parents is \
                       false). An existing directory is not an error.",
        read_only = false,
        destructive = false,
        idempotent,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn make_directory(
        &self,
        /// The directory, relative to the root.
        path: String,
        /// Create missing parents too. Default true.
        parents: Option<bool>,
    ) -> Result<MakeDirectoryOutput, ToolError> {
        let ws = self.ws.clone();
        blocking(move |_| {
            let path = ws.sandbox().resolve_writable(&path)?;
            let shown = ws.sandbox().relative(&path);
            match fs::metadata(&path) {
                Ok(m) if m.is_dir() => {
                    return Ok(MakeDirectoryOutput {
                        path: shown,
                        created: false,
                    });
                }
                Ok(_) => {
                    return Err(ToolError::new(
                        kinds::ALREADY_EXISTS,
                        format!("{shown} exists and is not a directory"),
                    ));
                }
                Err(_) => {}
            }
            if parents.unwrap_or(true) {
                fs::create_dir_all(&path)
            } else {
                fs::create_dir(&path)
            }
            .map_err(io_err(&shown))?;
            Ok(MakeDirectoryOutput {
                path: shown,
                created: true,
            })
        })
        .await
    }

    #[mcp_tool(
        name = "file_system.move",
        title = "Move or rename",
        description = "Moves or renames a file or directory within the root. The destination \
                       must not exist unless overwrite is true (files only).",
        read_only = false,
        destructive,
        idempotent = false,
        open_world = false,
        category = "file_system",
        deny_unknown_arguments
    )]
    async fn move_entry(
        &self,
        /// What to move, relative to the root. A symlink is moved itself, not its target.
        source: String,
        /// The new path, relative to the root (its parent must exist).
        destination: String,
        /// Replace an existing destination file. Default false.
        overwrite: Option<bool>,
    ) -> Result<MoveOutput, ToolError> {
        let ws = self.ws.clone();
        blocking(move |_| {
            let sb = ws.sandbox();
            let raw_source = source;
            let source = sb.resolve_entry_writable(&raw_source, true)?;
            let destination = sb.resolve_entry_writable(&destination, false)?;
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
            if let Ok(existing) = fs::symlink_metadata(&destination) {
                if !overwrite.unwrap_or(false) {
                    return Err(ToolError::new(
                        kinds::ALREADY_EXISTS,
                        format!("{dst_shown} exists; set overwrite to replace it"),
                    ));
                }
                if existing.is_dir() {
                    return Err(ToolError::new(
                        kinds::ALREADY_EXISTS,
                        format!("{dst_shown} is a directory; it is never replaced"),
                    ));
                }
            }
            fs::rename(&source, &destination).map_err(io_err(&shorten(&raw_source)))?;
            Ok(MoveOutput {
                source: src_shown,
                destination: dst_shown,
            })
        })
        .await
    }
}

fn io_err(shown: &str) -> impl Fn(io::Error) -> ToolError + '_ {
    move |e| ToolError::io(&e, shown)
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl EntryKind {
    fn of(t: fs::FileType) -> Self {
        if t.is_symlink() {
            Self::Symlink
        } else if t.is_dir() {
            Self::Directory
        } else if t.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

// ---------------------------------------------------------------------------------------------
// read
// ---------------------------------------------------------------------------------------------

/// How `file_system.read` returns content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum ReadEncoding {
    /// UTF-8 text; binary files are detected and their bytes not returned.
    #[default]
    Text,
    /// The raw bytes, base64-encoded.
    Base64,
}

/// The arguments of `file_system.read` (described on the tool's parameters).
#[derive(Debug)]
struct ReadArgs {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
    offset: Option<u64>,
    max_bytes: Option<u64>,
    encoding: Option<ReadEncoding>,
}

/// Result of `file_system.read`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadOutput {
    /// The file, relative to the root.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether the returned bytes look binary (a NUL byte or invalid UTF-8).
    pub binary: bool,
    /// `utf-8` or `base64`; absent when no content is returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// The content; absent for binary files read as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The byte offset of the first returned byte.
    pub offset: u64,
    /// How many bytes of the file were returned.
    pub bytes: u64,
    /// The first line returned (line ranges only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// The last line returned (line ranges only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Whether the requested part was cut short by the size limit.
    pub truncated: bool,
    /// Where to continue with `offset`, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Where to continue with `start_line`, when truncated in a line range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line: Option<u64>,
    /// A remark for the caller (binary content withheld, range past the end, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Opens a regular file inside the root for reading.
fn open_regular(ws: &Workspace, raw: &str) -> Result<(std::path::PathBuf, File, u64), ToolError> {
    let path = ws.sandbox().resolve(raw)?;
    let shown = ws.sandbox().relative(&path);
    let mut options = fs::OpenOptions::new();
    options.read(true);
    let file = open_checked(&mut options, &path, &shown)?;
    let size = file.metadata().map_err(io_err(&shown))?.len();
    Ok((path, file, size))
}

fn read_sync(ws: &Workspace, args: &ReadArgs, cancel: &Cancel) -> Result<ReadOutput, ToolError> {
    let lines = args.start_line.is_some() || args.end_line.is_some();
    if lines && args.offset.is_some() {
        return Err(ToolError::invalid_argument(
            "give either a line range (start_line/end_line) or offset, not both",
        ));
    }
    if let (Some(s), Some(e)) = (args.start_line, args.end_line)
        && e < s
    {
        return Err(ToolError::invalid_argument(format!(
            "end_line {e} is before start_line {s}"
        )));
    }
    let (path, mut file, size) = open_regular(ws, &args.path)?;
    let shown = ws.sandbox().relative(&path);
    let limit = ws.limits().max_read_bytes;
    let cap = args.max_bytes.unwrap_or(limit).clamp(1, limit);
    let cap_usize = usize::try_from(cap).unwrap_or(usize::MAX);
    let mut out = ReadOutput {
        path: shown.clone(),
        size,
        binary: false,
        encoding: None,
        content: None,
        offset: 0,
        bytes: 0,
        start_line: None,
        end_line: None,
        truncated: false,
        next_offset: None,
        next_line: None,
        note: None,
    };
    let mut buf = Vec::new();
    if lines {
        let start = args.start_line.unwrap_or(1).max(1);
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let (skipped, skipped_bytes) =
            skip_lines(&mut reader, start - 1, cancel).map_err(io_err(&shown))?;
        out.offset = skipped_bytes;
        let mut line = start;
        loop {
            if args.end_line.is_some_and(|e| line > e) {
                break;
            }
            if cancel.is_cancelled() {
                return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
            }
            let before = buf.len();
            let room = cap_usize - before;
            let (n, complete) =
                read_line_capped(&mut reader, &mut buf, room).map_err(io_err(&shown))?;
            if n == 0 && complete {
                break; // end of file
            }
            if !complete {
                out.truncated = true;
                if before > 0 {
                    // Leave the cut line for the next call.
                    buf.truncate(before);
                    out.next_line = Some(line);
                } else {
                    // One line longer than the limit: return its start; continue by offset.
                    out.start_line = Some(start);
                    out.end_line = Some(line);
                }
                break;
            }
            out.start_line = Some(start);
            out.end_line = Some(line);
            line += 1;
        }
        if out.start_line.is_none() && start > 1 {
            out.note = Some(format!(
                "start_line {start} is past the end of the file ({skipped} lines)"
            ));
        }
        if out.truncated {
            out.next_offset = Some(out.offset + buf.len() as u64);
        }
    } else {
        let offset = args.offset.unwrap_or(0);
        out.offset = offset.min(size);
        if offset > size {
            out.note = Some(format!(
                "offset {offset} is past the end of the file ({size} bytes)"
            ));
        } else {
            file.seek(SeekFrom::Start(offset)).map_err(io_err(&shown))?;
            file.take(cap)
                .read_to_end(&mut buf)
                .map_err(io_err(&shown))?;
            if offset + (buf.len() as u64) < size {
                out.truncated = true;
                out.next_offset = Some(offset + buf.len() as u64);
            }
        }
    }
    let encoding = args.encoding.unwrap_or_default();
    // A multi-byte character cut by the limit is not binary: return the complete part.
    if out.truncated
        && encoding == ReadEncoding::Text
        && let Err(e) = std::str::from_utf8(&buf)
        && e.error_len().is_none()
        && e.valid_up_to() > 0
    {
        buf.truncate(e.valid_up_to());
        out.next_offset = Some(out.offset + buf.len() as u64);
    }
    out.bytes = buf.len() as u64;
    out.binary = looks_binary(&buf);
    match encoding {
        ReadEncoding::Base64 => {
            out.encoding = Some("base64".into());
            out.content = Some(base64::engine::general_purpose::STANDARD.encode(&buf));
        }
        ReadEncoding::Text if out.binary => {
            out.note = Some("binary content withheld; read it with encoding \"base64\"".into());
        }
        ReadEncoding::Text => {
            out.encoding = Some("utf-8".into());
            out.content = Some(String::from_utf8_lossy(&buf).into_owned());
        }
    }
    Ok(out)
}

/// Whether `bytes` look binary: a NUL byte in the first [`SNIFF_BYTES`], or invalid UTF-8
/// (an incomplete character at the very end is tolerated).
pub fn looks_binary(bytes: &[u8]) -> bool {
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return true;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => false,
        Err(e) => e.error_len().is_some() || bytes.len() - e.valid_up_to() > 3,
    }
}

/// Skips `count` lines without buffering them. Returns the lines and bytes skipped.
fn skip_lines(reader: &mut impl BufRead, count: u64, cancel: &Cancel) -> io::Result<(u64, u64)> {
    let (mut lines, mut bytes) = (0u64, 0u64);
    while lines < count {
        if cancel.is_cancelled() {
            return Err(io::Error::other("cancelled"));
        }
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            // A last line without a newline still counts.
            return Ok((lines, bytes));
        }
        let mut used = chunk.len();
        for (i, b) in chunk.iter().enumerate() {
            if *b == b'\n' {
                lines += 1;
                if lines == count {
                    used = i + 1;
                    break;
                }
            }
        }
        bytes += used as u64;
        reader.consume(used);
    }
    Ok((lines, bytes))
}

/// Appends one line (newline included) to `buf`, reading at most `room` bytes. Returns the
/// bytes read and whether the line was complete (ended with a newline or the file).
fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    room: usize,
) -> io::Result<(usize, bool)> {
    let mut n = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok((n, true));
        }
        let avail = room - n;
        if avail == 0 {
            return Ok((n, false));
        }
        let window = &chunk[..chunk.len().min(avail)];
        if let Some(i) = window.iter().position(|b| *b == b'\n') {
            buf.extend_from_slice(&window[..=i]);
            reader.consume(i + 1);
            return Ok((n + i + 1, true));
        }
        let len = window.len();
        buf.extend_from_slice(window);
        reader.consume(len);
        n += len;
    }
}

// ---------------------------------------------------------------------------------------------
// list_directory
// ---------------------------------------------------------------------------------------------

/// The arguments of `file_system.list_directory` (described on the tool's parameters).
#[derive(Debug)]
struct ListArgs {
    path: Option<String>,
    recursive: Option<bool>,
    max_depth: Option<u32>,
    max_entries: Option<u32>,
    include_hidden: Option<bool>,
    respect_gitignore: Option<bool>,
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

fn list_sync(ws: &Workspace, args: &ListArgs, cancel: &Cancel) -> Result<ListOutput, ToolError> {
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

// ---------------------------------------------------------------------------------------------
// search
// ---------------------------------------------------------------------------------------------

/// The arguments of `file_system.search` (described on the tool's parameters).
#[derive(Debug)]
struct SearchArgs {
    pattern: String,
    path: Option<String>,
    globs: Option<Vec<String>>,
    case_insensitive: Option<bool>,
    fixed_strings: Option<bool>,
    max_matches: Option<u32>,
    include_hidden: Option<bool>,
    respect_gitignore: Option<bool>,
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

fn search_sync(
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
    let start = ws.sandbox().resolve(raw)?;
    let shown = ws.sandbox().relative(&start);
    let meta = fs::metadata(&start).map_err(io_err(&shown))?;
    let overrides = match &args.globs {
        Some(globs) if !globs.is_empty() => {
            let mut ob = ignore::overrides::OverrideBuilder::new(&start);
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
    // `path` is what the match reports (a link's own path), `target` what is opened.
    let mut search_file = |path: &Path, target: &Path, out: &mut SearchOutput| -> bool {
        let rel = ws.sandbox().relative(path);
        out.files_searched += 1;
        let before = out.matches.len();
        let mut full = false;
        // Opened like every read (no FIFO swapped in after the walk blocks the search).
        let mut options = fs::OpenOptions::new();
        options.read(true);
        let Ok(file) = open_checked(&mut options, target, &rel) else {
            tracing::debug!(file = %rel, "search skipped a file it cannot open as a regular file");
            return false;
        };
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
        out.truncated = search_file(&start, &start, &mut out);
        return Ok(out);
    }
    let (walk, non_utf8) = walker(
        &start,
        &WalkOptions {
            include_hidden: args.include_hidden.unwrap_or(false),
            respect_gitignore: args.respect_gitignore.unwrap_or(true),
            max_depth: None,
            max_filesize: Some(limits.max_search_file_bytes),
        },
        overrides,
    );
    for item in walk {
        if cancel.is_cancelled() {
            return Err(ToolError::new(kinds::IO_ERROR, "cancelled"));
        }
        let Ok(entry) = item else { continue };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        let target = if ft.is_file() {
            entry.path().to_path_buf()
        } else if ft.is_symlink() {
            // Follow links only to regular files inside the root.
            match entry.path().canonicalize() {
                Ok(target)
                    if ws.sandbox().contains(&target)
                        && fs::metadata(&target).is_ok_and(|m| {
                            m.is_file() && m.len() <= limits.max_search_file_bytes
                        }) =>
                {
                    target
                }
                _ => continue,
            }
        } else {
            continue;
        };
        if search_file(entry.path(), &target, &mut out) {
            out.truncated = true;
            break;
        }
    }
    out.skipped_non_utf8 = non_utf8.load(Ordering::Relaxed);
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

// ---------------------------------------------------------------------------------------------
// checksum
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// stat
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// write (full profile)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// edit (full profile)
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// make_directory (full profile)
// ---------------------------------------------------------------------------------------------

/// Result of `file_system.make_directory`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MakeDirectoryOutput {
    /// The directory, relative to the root.
    pub path: String,
    /// Whether it was created (false: it already existed).
    pub created: bool,
}

// ---------------------------------------------------------------------------------------------
// move (full profile)
// ---------------------------------------------------------------------------------------------

/// Result of `file_system.move`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MoveOutput {
    /// The old path, relative to the root.
    pub source: String,
    /// The new path, relative to the root.
    pub destination: String,
}

#[cfg(test)]
mod tests {
    use codomyrmex_mcp::McpToolRegistry;
    use serde_json::{Value, json};

    use super::*;
    use crate::config::{Limits, Profile};
    use crate::tools::test_support::*;

    async fn ok(registry: &McpToolRegistry, name: &str, args: Value) -> Value {
        let r = call(registry, name, args.clone()).await;
        assert_eq!(r.status(), "success", "{name} {args}: {:?}", r.error());
        Value::Object(r.data().cloned().unwrap_or_default())
    }

    async fn fail(registry: &McpToolRegistry, name: &str, args: Value) -> String {
        error_kind(&call(registry, name, args).await)
    }

    #[tokio::test]
    async fn read_whole_files_and_line_ranges() {
        let fx = Fixture::new();
        fx.write("a.txt", "one\ntwo\nthree\nfour\n");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.read", json!({"path": "a.txt"})).await;
        assert_eq!(v["content"], "one\ntwo\nthree\nfour\n");
        assert_eq!(v["binary"], false);
        assert_eq!(v["truncated"], false);
        assert_eq!(v["size"], 19);

        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "start_line": 2, "end_line": 3}),
        )
        .await;
        assert_eq!(v["content"], "two\nthree\n");
        assert_eq!(v["start_line"], 2);
        assert_eq!(v["end_line"], 3);
        assert_eq!(v["offset"], 4);

        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "start_line": 4}),
        )
        .await;
        assert_eq!(v["content"], "four\n");

        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "start_line": 9}),
        )
        .await;
        assert_eq!(v["content"], "");
        assert!(v["note"].as_str().unwrap().contains("past the end"), "{v}");

        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "a.txt", "offset": 8, "max_bytes": 5}),
        )
        .await;
        assert_eq!(v["content"], "three");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["next_offset"], 13);

        assert_eq!(
            fail(
                &r,
                "file_system.read",
                json!({"path": "a.txt", "start_line": 3, "end_line": 2})
            )
            .await,
            kinds::INVALID_ARGUMENT
        );
        assert_eq!(
            fail(
                &r,
                "file_system.read",
                json!({"path": "a.txt", "start_line": 1, "offset": 2})
            )
            .await,
            kinds::INVALID_ARGUMENT
        );
        assert_eq!(
            fail(&r, "file_system.read", json!({"path": "missing"})).await,
            kinds::NOT_FOUND
        );
        assert_eq!(
            fail(&r, "file_system.read", json!({"path": "."})).await,
            kinds::IS_A_DIRECTORY
        );
    }

    #[tokio::test]
    async fn read_is_capped_by_the_server_limit() {
        let fx = Fixture::with_limits(Limits {
            max_read_bytes: 10,
            ..Limits::default()
        });
        fx.write("big.txt", "0123456789abcdef\nline2\nline3\n");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "big.txt", "max_bytes": 1000}),
        )
        .await;
        assert_eq!(v["content"], "0123456789");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["next_offset"], 10);
        // Lines stop before the limit; the caller continues at next_line.
        fx.write("lines.txt", "aaaa\nbbbb\ncccc\n");
        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "lines.txt", "start_line": 1}),
        )
        .await;
        assert_eq!(v["content"], "aaaa\nbbbb\n");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["next_line"], 3);
        assert_eq!(v["end_line"], 2);
        // A multi-byte character cut by the limit is left for the next call.
        fx.write("utf8.txt", "123456789é");
        let v = ok(&r, "file_system.read", json!({"path": "utf8.txt"})).await;
        assert_eq!(v["content"], "123456789");
        assert_eq!(v["binary"], false);
        assert_eq!(v["next_offset"], 9);
    }

    #[tokio::test]
    async fn read_detects_binary_files() {
        let fx = Fixture::new();
        fx.write("bin.dat", [0u8, 1, 2, 3, 255]);
        fx.write("latin1.txt", [b'c', b'a', b'f', 0xe9, b'!']);
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.read", json!({"path": "bin.dat"})).await;
        assert_eq!(v["binary"], true);
        assert!(v.get("content").is_none(), "{v}");
        assert!(v["note"].as_str().unwrap().contains("base64"));
        let v = ok(
            &r,
            "file_system.read",
            json!({"path": "bin.dat", "encoding": "base64"}),
        )
        .await;
        assert_eq!(v["content"], "AAECA/8=");
        assert_eq!(v["encoding"], "base64");
        let v = ok(&r, "file_system.read", json!({"path": "latin1.txt"})).await;
        assert_eq!(v["binary"], true);
    }

    #[tokio::test]
    async fn list_directory_flat_recursive_and_gitignored() {
        let fx = Fixture::new();
        fx.write("b.txt", "b");
        fx.write("a/x.rs", "x");
        fx.write("a/deep/y.rs", "y");
        fx.write(".hidden", "h");
        fx.write(".gitignore", "ignored/\n*.log\n");
        fx.write("ignored/z.txt", "z");
        fx.write("debug.log", "l");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.list_directory", json!({})).await;
        let paths: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["a", "b.txt"]);
        assert_eq!(v["entries"][0]["kind"], "directory");
        assert_eq!(v["entries"][1]["kind"], "file");
        assert_eq!(v["entries"][1]["size"], 1);

        let v = ok(&r, "file_system.list_directory", json!({"recursive": true})).await;
        let paths: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["a", "a/deep", "a/deep/y.rs", "a/x.rs", "b.txt"]);

        let v = ok(
            &r,
            "file_system.list_directory",
            json!({"recursive": true, "max_depth": 2, "path": "."}),
        )
        .await;
        assert_eq!(v["entries"].as_array().unwrap().len(), 4);

        let v = ok(
            &r,
            "file_system.list_directory",
            json!({"include_hidden": true, "respect_gitignore": false}),
        )
        .await;
        let paths: Vec<&str> = v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                ".gitignore",
                ".hidden",
                "a",
                "b.txt",
                "debug.log",
                "ignored"
            ]
        );

        let v = ok(
            &r,
            "file_system.list_directory",
            json!({"recursive": true, "max_entries": 2}),
        )
        .await;
        assert_eq!(v["entries"].as_array().unwrap().len(), 2);
        assert_eq!(v["truncated"], true);

        let v = ok(&r, "file_system.list_directory", json!({"path": "a"})).await;
        assert_eq!(v["path"], "a");
        assert_eq!(v["entries"][0]["path"], "a/deep");

        assert_eq!(
            fail(&r, "file_system.list_directory", json!({"path": "b.txt"})).await,
            kinds::NOT_A_DIRECTORY
        );
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn non_utf8_names_are_skipped_and_counted() {
        use std::os::unix::ffi::OsStrExt;
        let fx = Fixture::new();
        fx.write("ok.txt", "needle");
        let bad = std::ffi::OsStr::from_bytes(b"bad-\xff.txt");
        std::fs::write(fx.dir.path().join(bad), "needle").unwrap();
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.list_directory", json!({})).await;
        assert_eq!(v["entries"].as_array().unwrap().len(), 1);
        assert_eq!(v["skipped_non_utf8"], 1);
        let v = ok(&r, "file_system.search", json!({"pattern": "needle"})).await;
        assert_eq!(v["matches"].as_array().unwrap().len(), 1);
        assert_eq!(v["skipped_non_utf8"], 1);
        // Asking for the lossy name does not reach it.
        let lossy = bad.to_string_lossy().into_owned();
        assert_eq!(
            fail(&r, "file_system.read", json!({"path": lossy})).await,
            kinds::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn search_finds_lines_with_regexes_and_literals() {
        let fx = Fixture::new();
        fx.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
        fx.write("src/lib.rs", "pub fn hello() {}\n// HELLO again\n");
        fx.write("notes.md", "hello (world)\n");
        fx.write("bin.dat", b"hello\0binary");
        fx.write(".gitignore", "target/\n");
        fx.write("target/out.rs", "hello\n");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.search", json!({"pattern": "hel+o"})).await;
        let m = v["matches"].as_array().unwrap();
        let got: Vec<(String, u64)> = m
            .iter()
            .map(|x| {
                (
                    x["path"].as_str().unwrap().to_owned(),
                    x["line_number"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [("notes.md".to_owned(), 1), ("src/lib.rs".to_owned(), 1)]
        );
        assert_eq!(m[1]["line"], "pub fn hello() {}");

        let v = ok(
            &r,
            "file_system.search",
            json!({"pattern": "hello", "case_insensitive": true, "globs": ["*.rs"]}),
        )
        .await;
        assert_eq!(v["matches"].as_array().unwrap().len(), 3);
        assert_eq!(v["files_matched"], 2);

        let v = ok(
            &r,
            "file_system.search",
            json!({"pattern": "(world)", "fixed_strings": true}),
        )
        .await;
        assert_eq!(v["matches"].as_array().unwrap().len(), 1);

        let v = ok(
            &r,
            "file_system.search",
            json!({"pattern": "hello", "respect_gitignore": false, "path": "target"}),
        )
        .await;
        assert_eq!(v["matches"][0]["path"], "target/out.rs");

        let v = ok(
            &r,
            "file_system.search",
            json!({"pattern": "o", "max_matches": 2}),
        )
        .await;
        assert_eq!(v["matches"].as_array().unwrap().len(), 2);
        assert_eq!(v["truncated"], true);

        let v = ok(
            &r,
            "file_system.search",
            json!({"pattern": "Hello", "path": "src/main.rs"}),
        )
        .await;
        assert_eq!(v["matches"][0]["line_number"], 2);

        assert_eq!(
            fail(&r, "file_system.search", json!({"pattern": "("})).await,
            kinds::INVALID_ARGUMENT
        );
        assert_eq!(
            fail(
                &r,
                "file_system.search",
                json!({"pattern": "a", "globs": ["["]})
            )
            .await,
            kinds::INVALID_ARGUMENT
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn search_does_not_follow_symlinks_out_of_the_root() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), fx.path("secret-link"))
            .unwrap();
        fx.write("inside.txt", "needle inside\n");
        std::os::unix::fs::symlink(fx.path("inside.txt"), fx.path("inner-link")).unwrap();
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.search", json!({"pattern": "needle"})).await;
        let paths: Vec<&str> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["inner-link", "inside.txt"]);
        assert_eq!(
            fail(
                &r,
                "file_system.search",
                json!({"pattern": "needle", "path": "out"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
    }

    #[tokio::test]
    async fn checksum_is_sha256() {
        let fx = Fixture::new();
        fx.write("abc.txt", "abc");
        fx.write("empty", "");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.checksum", json!({"path": "abc.txt"})).await;
        assert_eq!(
            v["digest"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(v["algorithm"], "sha256");
        assert_eq!(v["size"], 3);
        let v = ok(
            &r,
            "file_system.checksum",
            json!({"path": "empty", "algorithm": "sha256"}),
        )
        .await;
        assert_eq!(
            v["digest"],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            fail(
                &r,
                "file_system.checksum",
                json!({"path": "abc.txt", "algorithm": "md5"})
            )
            .await,
            "ValidationError"
        );
        assert_eq!(
            fail(&r, "file_system.checksum", json!({"path": "."})).await,
            kinds::IS_A_DIRECTORY
        );
    }

    #[tokio::test]
    async fn stat_reports_metadata() {
        let fx = Fixture::new();
        fx.write("f.txt", "12345");
        let r = registry(&fx, Profile::Readonly);
        let v = ok(&r, "file_system.stat", json!({"path": "f.txt"})).await;
        assert_eq!(v["kind"], "file");
        assert_eq!(v["size"], 5);
        assert_eq!(v["is_symlink"], false);
        assert!(v["modified_unix"].as_i64().unwrap() > 1_600_000_000);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(fx.path("f.txt"), fx.path("link")).unwrap();
            let v = ok(&r, "file_system.stat", json!({"path": "link"})).await;
            assert_eq!(v["is_symlink"], true);
            assert_eq!(v["path"], "f.txt");
            assert!(v["mode"].as_str().is_some());
        }
        let v = ok(&r, "file_system.stat", json!({"path": "."})).await;
        assert_eq!(v["kind"], "directory");
        assert_eq!(v["path"], ".");
    }

    #[tokio::test]
    async fn write_modes() {
        let fx = Fixture::new();
        let r = registry(&fx, Profile::Full);
        let v = ok(
            &r,
            "file_system.write",
            json!({"path": "new.txt", "content": "hello"}),
        )
        .await;
        assert_eq!(v["created"], true);
        assert_eq!(v["bytes_written"], 5);
        assert_eq!(fx.read("new.txt"), "hello");
        let v = ok(
            &r,
            "file_system.write",
            json!({"path": "new.txt", "content": "bye"}),
        )
        .await;
        assert_eq!(v["created"], false);
        assert_eq!(fx.read("new.txt"), "bye");
        ok(
            &r,
            "file_system.write",
            json!({"path": "new.txt", "content": "!", "mode": "append"}),
        )
        .await;
        assert_eq!(fx.read("new.txt"), "bye!");
        assert_eq!(
            fail(
                &r,
                "file_system.write",
                json!({"path": "new.txt", "content": "x", "mode": "create"})
            )
            .await,
            kinds::ALREADY_EXISTS
        );
        assert_eq!(
            fail(
                &r,
                "file_system.write",
                json!({"path": "d/e/f.txt", "content": "x"})
            )
            .await,
            kinds::NOT_FOUND
        );
        ok(
            &r,
            "file_system.write",
            json!({"path": "d/e/f.txt", "content": "x", "create_parents": true}),
        )
        .await;
        assert_eq!(fx.read("d/e/f.txt"), "x");
        ok(
            &r,
            "file_system.write",
            json!({"path": "b.bin", "content": "AAEC", "encoding": "base64"}),
        )
        .await;
        assert_eq!(std::fs::read(fx.path("b.bin")).unwrap(), [0, 1, 2]);
        assert_eq!(
            fail(
                &r,
                "file_system.write",
                json!({"path": "d", "content": "x"})
            )
            .await,
            kinds::IS_A_DIRECTORY
        );
        assert_eq!(
            fail(
                &r,
                "file_system.write",
                json!({"path": "../escape.txt", "content": "x"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
    }

    #[tokio::test]
    async fn edit_replaces_exact_strings() {
        let fx = Fixture::new();
        fx.write("c.rs", "let a = 1;\nlet b = 1;\n");
        let r = registry(&fx, Profile::Full);
        let v = ok(
            &r,
            "file_system.edit",
            json!({"path": "c.rs", "old_string": "let a = 1;", "new_string": "let a = 2;"}),
        )
        .await;
        assert_eq!(v["replacements"], 1);
        assert_eq!(fx.read("c.rs"), "let a = 2;\nlet b = 1;\n");
        assert_eq!(
            fail(
                &r,
                "file_system.edit",
                json!({"path": "c.rs", "old_string": "= ", "new_string": "="})
            )
            .await,
            kinds::AMBIGUOUS_MATCH
        );
        assert_eq!(fx.read("c.rs"), "let a = 2;\nlet b = 1;\n");
        let v = ok(
            &r,
            "file_system.edit",
            json!({"path": "c.rs", "old_string": "= ", "new_string": "=", "replace_all": true}),
        )
        .await;
        assert_eq!(v["replacements"], 2);
        assert_eq!(fx.read("c.rs"), "let a =2;\nlet b =1;\n");
        assert_eq!(
            fail(
                &r,
                "file_system.edit",
                json!({"path": "c.rs", "old_string": "absent", "new_string": "x"})
            )
            .await,
            kinds::NO_MATCH
        );
        assert_eq!(
            fail(
                &r,
                "file_system.edit",
                json!({"path": "c.rs", "old_string": "", "new_string": "x"})
            )
            .await,
            "ValidationError"
        );
        fx.write("bin", [0xffu8, 0xfe]);
        assert_eq!(
            fail(
                &r,
                "file_system.edit",
                json!({"path": "bin", "old_string": "a", "new_string": "b"})
            )
            .await,
            kinds::INVALID_ARGUMENT
        );
    }

    #[tokio::test]
    async fn make_directory_is_idempotent() {
        let fx = Fixture::new();
        let r = registry(&fx, Profile::Full);
        let v = ok(&r, "file_system.make_directory", json!({"path": "x/y/z"})).await;
        assert_eq!(v["created"], true);
        assert!(fx.path("x/y/z").is_dir());
        let v = ok(&r, "file_system.make_directory", json!({"path": "x/y/z"})).await;
        assert_eq!(v["created"], false);
        assert_eq!(
            fail(
                &r,
                "file_system.make_directory",
                json!({"path": "p/q", "parents": false})
            )
            .await,
            kinds::NOT_FOUND
        );
        fx.write("file", "f");
        assert_eq!(
            fail(&r, "file_system.make_directory", json!({"path": "file"})).await,
            kinds::ALREADY_EXISTS
        );
        assert_eq!(
            fail(
                &r,
                "file_system.make_directory",
                json!({"path": "/tmp/cmx-escape"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
    }

    #[tokio::test]
    async fn move_renames_within_the_root() {
        let fx = Fixture::new();
        fx.write("a.txt", "a");
        fx.write("b.txt", "b");
        fx.write("dir/c.txt", "c");
        let r = registry(&fx, Profile::Full);
        let v = ok(
            &r,
            "file_system.move",
            json!({"source": "a.txt", "destination": "dir/a.txt"}),
        )
        .await;
        assert_eq!(v["destination"], "dir/a.txt");
        assert_eq!(fx.read("dir/a.txt"), "a");
        assert!(!fx.path("a.txt").exists());
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "b.txt", "destination": "dir/a.txt"})
            )
            .await,
            kinds::ALREADY_EXISTS
        );
        ok(
            &r,
            "file_system.move",
            json!({"source": "b.txt", "destination": "dir/a.txt", "overwrite": true}),
        )
        .await;
        assert_eq!(fx.read("dir/a.txt"), "b");
        ok(
            &r,
            "file_system.move",
            json!({"source": "dir", "destination": "renamed"}),
        )
        .await;
        assert!(fx.path("renamed/c.txt").exists());
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "renamed", "destination": "renamed/inner"})
            )
            .await,
            kinds::INVALID_ARGUMENT
        );
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": ".", "destination": "x"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "missing", "destination": "x"})
            )
            .await,
            kinds::NOT_FOUND
        );
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "renamed", "destination": "../out"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
        let outside = tempfile::tempdir().unwrap();
        let dst = outside.path().join("stolen");
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "renamed", "destination": dst.to_str().unwrap()})
            )
            .await,
            kinds::ACCESS_DENIED
        );
        assert!(!dst.exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_tools_refuse_every_escape() {
        let fx = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim.txt"), "original").unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.path("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim.txt"), fx.path("victim-link"))
            .unwrap();
        let abs = outside.path().join("victim.txt");
        let abs = abs.to_str().unwrap();
        let long = "x".repeat(300);
        let r = registry(&fx, Profile::Full);
        for path in [
            "../victim.txt",
            abs,
            "out/victim.txt",
            "victim-link",
            "out/new.txt",
            &long,
        ] {
            let expected = if path == long {
                kinds::INVALID_PATH
            } else {
                kinds::ACCESS_DENIED
            };
            assert_eq!(
                fail(
                    &r,
                    "file_system.write",
                    json!({"path": path, "content": "pwned"})
                )
                .await,
                expected,
                "write {path}"
            );
            assert_eq!(
                fail(
                    &r,
                    "file_system.edit",
                    json!({"path": path, "old_string": "original", "new_string": "pwned"})
                )
                .await,
                expected,
                "edit {path}"
            );
            assert_eq!(
                fail(&r, "file_system.make_directory", json!({"path": path})).await,
                expected,
                "mkdir {path}"
            );
            assert_eq!(
                fail(&r, "file_system.read", json!({"path": path})).await,
                expected,
                "read {path}"
            );
            assert_eq!(
                fail(&r, "file_system.checksum", json!({"path": path})).await,
                expected,
                "checksum {path}"
            );
            assert_eq!(
                fail(&r, "file_system.stat", json!({"path": path})).await,
                expected,
                "stat {path}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
            "original"
        );
        assert!(!outside.path().join("new.txt").exists());
        // Moving the symlink itself is fine and leaves its target alone.
        ok(
            &r,
            "file_system.move",
            json!({"source": "victim-link", "destination": "moved-link"}),
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
            "original"
        );
        // But nothing moves into a directory outside through a link.
        fx.write("mine.txt", "m");
        assert_eq!(
            fail(
                &r,
                "file_system.move",
                json!({"source": "mine.txt", "destination": "out/mine.txt"})
            )
            .await,
            kinds::ACCESS_DENIED
        );
        assert!(!outside.path().join("mine.txt").exists());
    }
}
