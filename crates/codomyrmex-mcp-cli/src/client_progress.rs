//! Progress of a `client call` on stderr: a bar when stderr is a terminal, one
//! line per notification otherwise (scripts and logs read those). Never used with `--json`,
//! whose stdout and stderr stay machine-readable.
//!
//! A bar with a known `total` shows the fraction done and the server's message; without
//! one, the count. It is one line redrawn in place and cleared when the call ends: drawn
//! here rather than with indicatif, which would take the binary over its 20 MB budget. Not
//! a renderer of anything but `notifications/progress` params.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, PoisonError};

use codomyrmex_mcp::client::CallOptions;
use codomyrmex_mcp::util::inert_text;
use serde_json::Value;

/// One notification as a line: `progress: 1/4 message`.
pub fn line(p: &Value) -> String {
    let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let mut line = match p.get("total").and_then(Value::as_f64) {
        Some(total) => format!("progress: {done}/{total}"),
        None => format!("progress: {done}"),
    };
    if let Some(m) = p.get("message").and_then(Value::as_str) {
        let _ = write!(line, " {}", inert_text(m));
    }
    line
}

/// The bar drawn on a terminal: one line, redrawn in place (`\r`, then erase the line).
#[derive(Debug, Default)]
struct Bar {
    drawn: bool,
}

/// The bar's width in cells.
const WIDTH: usize = 30;

/// The bar's text for `p`: `[#####     ]  50% message`, or `[ 3 ] message` with no total.
pub fn bar_text(p: &Value) -> String {
    let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let message = p.get("message").and_then(Value::as_str).unwrap_or("");
    // Control characters from the server never reach the terminal, nor a line break the
    // bar's one line.
    let message: String = inert_text(message)
        .chars()
        .filter(|c| !matches!(c, '\n' | '\t'))
        .take(200)
        .collect();
    match p.get("total").and_then(Value::as_f64).filter(|t| *t > 0.0) {
        Some(total) => {
            let fraction = (done / total).clamp(0.0, 1.0);
            // In [0, WIDTH] and [0, 100]: the casts cannot truncate.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let (cells, percent) = (
                (fraction * WIDTH as f64).round() as usize,
                (fraction * 100.0).round() as u32,
            );
            format!(
                "[{}{}] {percent:>3}% {message}",
                "#".repeat(cells),
                " ".repeat(WIDTH - cells)
            )
        }
        None => format!("[ {done} ] {message}"),
    }
}

impl Bar {
    fn draw(&mut self, p: &Value) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", bar_text(p));
        let _ = err.flush();
        self.drawn = true;
    }

    fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

/// Where a call's progress goes; dropping it clears the bar.
pub struct Progress {
    bar: Option<Arc<Mutex<Bar>>>,
    /// The options to pass to the call.
    pub options: CallOptions,
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.lock().unwrap_or_else(PoisonError::into_inner).clear();
        }
    }
}

/// Progress for one call: a bar when stderr is a terminal, else lines.
pub fn for_call() -> Progress {
    if !std::io::stderr().is_terminal() {
        return Progress {
            bar: None,
            options: CallOptions {
                progress: Some(Arc::new(|p: Value| eprintln!("{}", line(&p)))),
                timeout: None,
                log: None,
                input: None,
            },
        };
    }
    let bar = Arc::new(Mutex::new(Bar::default()));
    let handle = bar.clone();
    Progress {
        bar: Some(bar),
        options: CallOptions {
            progress: Some(Arc::new(move |p: Value| {
                handle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .draw(&p);
            })),
            timeout: None,
            log: None,
            input: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_name_the_progress_and_the_message() {
        assert_eq!(
            line(&json!({"progress": 1, "total": 4, "message": "one"})),
            "progress: 1/4 one"
        );
        assert_eq!(line(&json!({"progress": 2.5})), "progress: 2.5");
    }

    #[test]
    fn the_bar_shows_the_fraction_and_no_control_characters() {
        let text = bar_text(
            &json!({"progress": 1, "total": 2, "message": "a\x1b[31mb\u{202e}\u{9b}c\nd"}),
        );
        assert_eq!(
            text,
            format!("[{}{}]  50% a[31mbcd", "#".repeat(15), " ".repeat(15))
        );
        assert_eq!(
            line(&json!({"progress": 1, "message": "a\x1b]0;pwned\x07b"})),
            "progress: 1 a]0;pwnedb"
        );
        assert_eq!(bar_text(&json!({"progress": 3})), "[ 3 ] ");
        assert!(bar_text(&json!({"progress": 9, "total": 2})).contains("100%"));
    }
}
