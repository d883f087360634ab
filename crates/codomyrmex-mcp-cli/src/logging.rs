//! The command's log output: where it goes (stderr), how it looks (text or JSON lines) and
//! whether it is coloured (only when stderr is a terminal).
//!
//! It is not the MCP `logging` capability (messages sent to clients); that lives in the
//! library's engine.

use std::io::IsTerminal as _;

/// The variable that picks the log format.
pub const FORMAT_VAR: &str = "CODOMYRMEX_MCP_LOG_FORMAT";
/// The variable that holds the log filter (`info`, `codomyrmex_mcp=debug`, ...).
pub const FILTER_VAR: &str = "CODOMYRMEX_MCP_LOG";

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// The format named by `value` (`text` or `json`, any case; empty means text).
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!(
                "{FORMAT_VAR}={other:?} is not a log format: use `text` (the default) or `json`"
            )),
        }
    }
}

/// Installs the global subscriber writing to stderr. Colour only when stderr is a terminal
/// (a log file or a pipe gets plain text, whatever `NO_COLOR` says).
pub fn init() -> Result<(), String> {
    let format = match std::env::var(FORMAT_VAR) {
        Ok(v) => LogFormat::parse(&v)?,
        Err(std::env::VarError::NotPresent) => LogFormat::Text,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(format!(
                "{FORMAT_VAR} is not valid UTF-8: use `text` or `json`"
            ));
        }
    };
    let filter = match std::env::var(FILTER_VAR) {
        Err(_) => tracing_subscriber::EnvFilter::new("warn"),
        Ok(v) => tracing_subscriber::EnvFilter::try_new(&v).map_err(|e| {
            format!("{FILTER_VAR}={v:?} is not a log filter ({e}): try `info` or `debug`")
        })?,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
    installed.map_err(|e| format!("cannot install the logger: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!(LogFormat::parse("json"), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse("JSON"), Ok(LogFormat::Json));
        assert_eq!(LogFormat::parse(""), Ok(LogFormat::Text));
        let e = LogFormat::parse("yaml").unwrap_err();
        assert!(e.contains(FORMAT_VAR), "{e}");
    }
}
