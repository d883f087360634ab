//! Each tool result's rendering for the model: the [`ModelText`] impls.

use std::fmt::Write as _;

use super::ModelText;
use crate::tools::codomyrmex::ListOutput as ToolListOutput;
use crate::tools::file_system::{ChecksumOutput, EntryKind, ListOutput, ReadOutput, SearchOutput};
use crate::tools::git::{LogOutput, StatusOutput, TextOutput};
use crate::tools::json::QueryOutput;
use crate::tools::shell::RunOutput;

/// Blocks: `main`, then `notes` joined into one block if there are any.
fn with_notes(main: String, notes: Vec<String>) -> Vec<String> {
    let mut blocks = vec![main];
    if !notes.is_empty() {
        blocks.push(notes.join("\n"));
    }
    blocks
}

impl ModelText for ReadOutput {
    fn model_text(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let main = match &self.content {
            Some(content) => content.clone(),
            None => {
                return vec![match &self.note {
                    Some(note) => format!("[{}: {note}]", self.path),
                    None => format!("[{}: {} bytes, no content returned]", self.path, self.size),
                }];
            }
        };
        if self.truncated {
            let mut note = format!(
                "[truncated: {} of the file's {} bytes returned",
                self.bytes, self.size
            );
            if let Some(line) = self.next_line {
                let _ = write!(note, "; continue with start_line {line}");
            } else if let Some(offset) = self.next_offset {
                let _ = write!(note, "; continue with offset {offset}");
            }
            note.push(']');
            notes.push(note);
        }
        if let Some(note) = &self.note {
            notes.push(format!("[{note}]"));
        }
        with_notes(main, notes)
    }
}

impl ModelText for ListOutput {
    fn model_text(&self) -> Vec<String> {
        let mut main = String::new();
        for entry in &self.entries {
            main.push_str(&entry.path);
            match entry.kind {
                EntryKind::Directory => main.push('/'),
                EntryKind::Symlink => main.push_str(" (symlink)"),
                EntryKind::File | EntryKind::Other => {}
            }
            main.push('\n');
        }
        if self.entries.is_empty() {
            main.push_str("(no entries)\n");
        }
        let mut notes = Vec::new();
        if self.truncated {
            notes.push(format!(
                "[truncated at {} entries: raise max_entries or list a subdirectory]",
                self.entries.len()
            ));
        }
        if self.skipped_non_utf8 > 0 {
            notes.push(format!(
                "[{} entries with non-UTF-8 names skipped]",
                self.skipped_non_utf8
            ));
        }
        with_notes(main, notes)
    }
}

impl ModelText for SearchOutput {
    fn model_text(&self) -> Vec<String> {
        let mut main = String::new();
        for m in &self.matches {
            let _ = writeln!(main, "{}:{}:{}", m.path, m.line_number, m.line);
        }
        if self.matches.is_empty() {
            let _ = writeln!(main, "(no matches in {} files)", self.files_searched);
        }
        let mut notes = Vec::new();
        if self.truncated {
            notes.push(format!(
                "[stopped at {} matches: raise max_matches or narrow the search]",
                self.matches.len()
            ));
        }
        if self.skipped_non_utf8 > 0 {
            notes.push(format!(
                "[{} entries with non-UTF-8 names skipped]",
                self.skipped_non_utf8
            ));
        }
        with_notes(main, notes)
    }
}

impl ModelText for ChecksumOutput {
    fn model_text(&self) -> Vec<String> {
        // The `sha256sum` line.
        vec![format!("{}  {}\n", self.digest, self.path)]
    }
}

impl ModelText for StatusOutput {
    fn model_text(&self) -> Vec<String> {
        // `git status --short --branch`.
        let mut main = format!("## {}\n", self.branch_line);
        for e in &self.entries {
            let _ = match &e.original_path {
                Some(old) => writeln!(main, "{}{} {old} -> {}", e.index, e.worktree, e.path),
                None => writeln!(main, "{}{} {}", e.index, e.worktree, e.path),
            };
        }
        if self.clean {
            main.push_str("(clean: nothing changed)\n");
        }
        vec![main]
    }
}

impl ModelText for TextOutput {
    fn model_text(&self) -> Vec<String> {
        let notes = if self.truncated {
            vec!["[output truncated at the server's limit]".to_owned()]
        } else {
            Vec::new()
        };
        with_notes(self.output.clone(), notes)
    }
}

impl ModelText for LogOutput {
    fn model_text(&self) -> Vec<String> {
        let mut main = String::new();
        for c in &self.commits {
            let _ = writeln!(
                main,
                "{} {} {} <{}>\n    {}",
                c.hash, c.date, c.author, c.email, c.subject
            );
        }
        if self.commits.is_empty() {
            main.push_str("(no commits)\n");
        }
        vec![main]
    }
}

impl ModelText for QueryOutput {
    fn model_text(&self) -> Vec<String> {
        // One compact JSON value a line, like `jq -c`.
        let mut main = String::new();
        for r in &self.results {
            main.push_str(&r.to_string());
            main.push('\n');
        }
        if self.results.is_empty() {
            main.push_str("(no results)\n");
        }
        let notes = if self.truncated {
            vec!["[more results left out: raise max_results]".to_owned()]
        } else {
            Vec::new()
        };
        with_notes(main, notes)
    }
}

impl ModelText for RunOutput {
    fn model_text(&self) -> Vec<String> {
        let mut blocks = Vec::new();
        if !self.stdout.is_empty() {
            blocks.push(self.stdout.clone());
        }
        if !self.stderr.is_empty() {
            blocks.push(format!("[stderr]\n{}", self.stderr));
        }
        let mut status = match (self.exit_code, self.signal) {
            _ if self.timed_out => "[timed out and killed".to_owned(),
            (Some(code), _) => format!("[exit code {code}"),
            (None, Some(signal)) => format!("[killed by signal {signal}"),
            (None, None) => "[ended without an exit code".to_owned(),
        };
        if self.stdout_truncated {
            status.push_str("; stdout truncated");
        }
        if self.stderr_truncated {
            status.push_str("; stderr truncated");
        }
        status.push(']');
        blocks.push(status);
        blocks
    }
}

impl ModelText for ToolListOutput {
    fn model_text(&self) -> Vec<String> {
        let mut main = self.tools.join("\n");
        main.push('\n');
        vec![main]
    }
}
