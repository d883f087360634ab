//! `file_system.*`: read, list, search, checksum and stat files under the root; in the full
//! profile also write, edit, make directories and move.
//!
//! This module declares the tools (names, annotations, parameters) and holds what their parts
//! share: `EntryKind`, opening a regular file and mapping I/O errors. Each tool's work runs
//! on a blocking thread, in the submodule that owns it: `read`, `listing` (`list_directory`),
//! `ignore_rules` (what the confined tree walk lists: ignore files, hidden names, globs), `search`, `metadata` (`checksum` and `stat`) and
//! `writing` (the full profile's `write`, `edit`, `make_directory` and `move`). It is not the
//! sandbox (every path is resolved by `Sandbox`, the adapter to the library's `ConfinedRoot`, first), nor the text the model sees (shaped
//! in `model_text`). The tests are in `reading_tests` and `writing_tests`.

use std::fs::{self, File};
use std::io;

use codomyrmex_mcp::{WithContent, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::Serialize;

use super::model_text::ModelText;
use super::{ToolError, Workspace, blocking};

mod ignore_rules;
mod listing;
mod metadata;
mod read;
mod search;
mod writing;

#[cfg(test)]
mod reading_tests;
#[cfg(test)]
mod walk_tests;
#[cfg(test)]
mod writing_tests;

pub(crate) use ignore_rules::{WalkOptions, walker};
pub use listing::ListOutput;
pub use metadata::{ChecksumAlgorithm, ChecksumOutput, StatOutput};
pub use read::{ReadEncoding, ReadOutput};
pub use search::SearchOutput;
pub use writing::{EditOutput, MakeDirectoryOutput, MoveOutput, WriteMode, WriteOutput};

use listing::{ListArgs, list_sync};
use metadata::{checksum_sync, stat_sync};
use read::{ReadArgs, read_sync};
use search::{SearchArgs, search_sync};
use writing::{edit_sync, make_directory_sync, move_sync, write_sync};

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
        blocking(move |cancel| checksum_sync(&ws, &path, algorithm, cancel))
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
        blocking(move |_| stat_sync(&ws, &path)).await
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
        blocking(move |_| write_sync(&ws, &path, content, encoding, mode, create_parents)).await
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
        blocking(move |_| edit_sync(&ws, &path, &old_string, &new_string, replace_all)).await
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
        blocking(move |_| make_directory_sync(&ws, &path, parents)).await
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
        blocking(move |_| move_sync(&ws, &source, &destination, overwrite)).await
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
    /// The kind of an entry as the confined walk saw it (`lstat`).
    fn of_kind(t: rustix::fs::FileType) -> Self {
        use rustix::fs::FileType;
        match t {
            FileType::Symlink => Self::Symlink,
            FileType::Directory => Self::Directory,
            FileType::RegularFile => Self::File,
            _ => Self::Other,
        }
    }

    fn of(kind: fs::FileType) -> Self {
        if kind.is_symlink() {
            Self::Symlink
        } else if kind.is_dir() {
            Self::Directory
        } else if kind.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

/// Opens a regular file inside the root for reading (through the sandbox's walk).
fn open_regular(ws: &Workspace, raw: &str) -> Result<(std::path::PathBuf, File, u64), ToolError> {
    ws.sandbox().open_file(raw)
}
