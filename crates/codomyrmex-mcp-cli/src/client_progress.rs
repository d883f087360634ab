//! Progress of a `client call` on stderr: a bar (indicatif) when stderr is a terminal, one
//! line per notification otherwise (scripts and logs read those). Never used with `--json`,
//! whose stdout and stderr stay machine-readable.
//!
//! A bar with a known `total` shows the fraction done and the server's message; without
//! one, a spinner with the count. The bar is cleared when the call ends. Not a renderer of
//! anything but `notifications/progress` params.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::sync::Arc;

use codomyrmex_mcp::client::CallOptions;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// The bar's resolution: a fraction done is drawn in thousandths.
const SCALE: u64 = 1000;

/// One notification as a line: `progress: 1/4 message`.
pub fn line(p: &Value) -> String {
    let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let mut line = match p.get("total").and_then(Value::as_f64) {
        Some(total) => format!("progress: {done}/{total}"),
        None => format!("progress: {done}"),
    };
    if let Some(m) = p.get("message").and_then(Value::as_str) {
        let _ = write!(line, " {m}");
    }
    line
}

/// Where a call's progress goes; dropping it clears the bar.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The options to pass to the call.
    pub options: CallOptions,
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
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
            },
        };
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let handle = bar.clone();
    let update = move |p: Value| {
        let done = p.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
        let message = p
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match p.get("total").and_then(Value::as_f64).filter(|t| *t > 0.0) {
            Some(total) => {
                if handle.length() != Some(SCALE) {
                    handle.set_style(
                        ProgressStyle::with_template("{bar:30} {percent:>3}% {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    handle.set_length(SCALE);
                }
                let fraction = (done / total).clamp(0.0, 1.0);
                // In [0, SCALE]: the cast cannot truncate.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                handle.set_position((fraction * SCALE as f64).round() as u64);
            }
            None => {
                if handle.length().is_some() {
                    handle.unset_length();
                }
                handle.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                handle.tick();
                handle.set_message(format!("{done} {message}"));
                return;
            }
        }
        handle.set_message(message);
    };
    Progress {
        bar: Some(bar),
        options: CallOptions {
            progress: Some(Arc::new(update)),
            timeout: None,
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
}
