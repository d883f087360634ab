//! `file_system.read`: a whole file, a line range or a byte range, capped by the server's
//! limit, with binary detection. Opening goes through the sandbox in the parent module; this
//! module does not decide which paths may be read.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Cancel, ToolError, Workspace, kinds};
use super::{io_err, open_regular};

/// How many bytes are examined to decide whether a file is binary.
const SNIFF_BYTES: usize = 8192;

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
pub(super) struct ReadArgs {
    pub(super) path: String,
    pub(super) start_line: Option<u64>,
    pub(super) end_line: Option<u64>,
    pub(super) offset: Option<u64>,
    pub(super) max_bytes: Option<u64>,
    pub(super) encoding: Option<ReadEncoding>,
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

pub(super) fn read_sync(
    ws: &Workspace,
    args: &ReadArgs,
    cancel: &Cancel,
) -> Result<ReadOutput, ToolError> {
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
