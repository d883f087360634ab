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

/// What must live as long as the process logs: with the `otel` feature and an OTLP endpoint,
/// the span exporter, flushed when this is dropped (at the end of `main`).
#[must_use = "dropping the guard stops the span exporter"]
pub struct LogGuard {
    #[cfg(feature = "otel")]
    _otel: Option<crate::otel::Exporter>,
}

/// Installs the global subscriber writing to stderr. Colour only when stderr is a terminal
/// (a log file or a pipe gets plain text, whatever `NO_COLOR` says). With the `otel` feature
/// and `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, request
/// spans are also exported over OTLP/HTTP (see `otel.rs`), whatever the log filter says.
pub fn init() -> Result<LogGuard, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

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
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.with_ansi(std::io::stderr().is_terminal()).boxed(),
        LogFormat::Json => fmt.json().with_ansi(false).boxed(),
    };
    let registry = tracing_subscriber::registry().with(fmt.with_filter(filter));
    #[cfg(feature = "otel")]
    {
        let (layer, exporter) = match crate::otel::layer()? {
            Some((layer, exporter)) => (Some(layer), Some(exporter)),
            None => (None, None),
        };
        registry
            .with(layer)
            .try_init()
            .map_err(|e| format!("cannot install the logger: {e}"))?;
        Ok(LogGuard { _otel: exporter })
    }
    #[cfg(not(feature = "otel"))]
    {
        registry
            .try_init()
            .map_err(|e| format!("cannot install the logger: {e}"))?;
        Ok(LogGuard {})
    }
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
