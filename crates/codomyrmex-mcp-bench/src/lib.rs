//! Benchmarks for codomyrmex-mcp. Nothing here is published.
//!
//! - `benches/engine.rs`: criterion benchmarks of the in-memory engine path.
//! - `src/bin/stdio_load/`: whole-process stdio round trips against any server command.
//! - `src/bin/http_load/`: whole-process Streamable HTTP load (1 and 64 keep-alive
//!   connections, both protocol eras) and the idle-sessions memory case, against any server
//!   command.
//! - `src/bin/rmcp_echo.rs`: the comparison subject, the same echo tool on rmcp (stdio).
//! - `src/bin/rmcp_http_echo.rs`: the same echo tool on rmcp's Streamable HTTP server
//!   (stateless JSON mode or session mode).
//! - `src/bin/bare_echo.rs`: the stdio yardstick, a bare serde_json echo loop.
//! - `src/bin/bare_http_echo.rs`: the HTTP yardstick, a bare hyper handler that parses the
//!   JSON-RPC body and echoes.
//! - `src/bin/soak.rs`: a soak test of the HTTP transport (`scripts/soak.sh`).
//!
//! `scripts/bench.sh` (stdio) and `scripts/bench-http.sh` (HTTP) at the repository root run the
//! whole comparisons.

/// What `/proc` says about a server process: CPU time and memory.
pub mod procfs {
    use std::process::Command;

    type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

    /// Clock ticks per second (`getconf CLK_TCK`, 100 when unknown).
    pub fn clock_ticks_per_second() -> u64 {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    }

    /// The process's CPU time so far (user + system, all threads), in clock ticks.
    pub fn cpu_ticks(pid: u32) -> Result<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The command name is in parentheses and may hold spaces: count fields after it.
        let after = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or("bad /proc stat")?;
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 (utime) and 15 (stime); the first field after ')' is field 3.
        let utime: u64 = fields.get(11).ok_or("no utime")?.parse()?;
        let stime: u64 = fields.get(12).ok_or("no stime")?.parse()?;
        Ok(utime + stime)
    }

    fn status_field_kib(pid: u32, field: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
        Ok(line
            .split_whitespace()
            .next()
            .ok_or_else(|| format!("bad {field}"))?
            .parse()?)
    }

    /// Peak resident set size (`VmHWM`) in KiB.
    pub fn peak_rss_kib(pid: u32) -> Result<u64> {
        status_field_kib(pid, "VmHWM:")
    }

    /// Current resident set size (`VmRSS`) in KiB.
    pub fn rss_kib(pid: u32) -> Result<u64> {
        status_field_kib(pid, "VmRSS:")
    }
}

/// Small helpers the load tools share: argument parsing and summaries.
pub mod util {
    type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

    /// A payload size: a byte count, optionally with `B`, `K` or `KiB`.
    pub fn parse_size(s: &str) -> Result<usize> {
        let lower = s.to_ascii_lowercase();
        let (digits, unit) = if let Some(d) = lower.strip_suffix("kib").or(lower.strip_suffix('k'))
        {
            (d, 1024)
        } else if let Some(d) = lower.strip_suffix('b') {
            (d, 1)
        } else {
            (lower.as_str(), 1)
        };
        Ok(digits.trim().parse::<usize>()? * unit)
    }

    /// The JSON payloads of a Server-Sent Events body's `data:` lines, event by event, in
    /// order; events whose data is not JSON are skipped.
    pub fn sse_json(body: &[u8]) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(body)
            .replace("\r\n", "\n")
            .split("\n\n")
            .filter_map(|event| {
                let data: String = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                serde_json::from_str(&data).ok()
            })
            .collect()
    }

    /// Whether a `tools/call` result echoes `text`, and is no error: a single text block
    /// that is `text` (what MCP servers return for a string), or, from a server on the seed's
    /// Python API (`codomyrmex_mcp`, whose tools' return values are sent as
    /// `{"result": value}`), a single text block with `structuredContent` `{"result": text}`.
    pub fn echoes(result: &serde_json::Value, text: &str) -> bool {
        let content = &result["content"];
        content.as_array().map(Vec::len) == Some(1)
            && content[0]["type"] == "text"
            && result["isError"] != serde_json::Value::Bool(true)
            && (content[0]["text"].as_str() == Some(text)
                || result["structuredContent"] == serde_json::json!({ "result": text }))
    }

    /// `bytes` as text for an error message: lossily UTF-8, cut at 300 bytes (on a character
    /// boundary) with the whole length said.
    pub fn snippet(bytes: &[u8]) -> String {
        let s = String::from_utf8_lossy(bytes);
        if s.len() > 300 {
            let cut = (0..=300)
                .rev()
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(0);
            format!("{}… ({} bytes)", &s[..cut], s.len())
        } else {
            s.into_owned()
        }
    }

    /// The median (NaN for no values).
    pub fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        match values.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => values[n / 2],
            n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        }
    }
}

/// The comparison subject's server: the benchmark's `echo(text: string)` tool on rmcp, shared
/// by `rmcp_echo` (stdio) and `rmcp_http_echo` (Streamable HTTP).
pub mod rmcp_subject {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    use serde::Deserialize;

    /// The tool's arguments.
    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    pub struct EchoArgs {
        /// The text to echo back.
        pub text: String,
    }

    /// A server with one tool.
    ///
    /// The tool router is built once and kept in the server, as rmcp's `#[tool_handler(router =
    /// ...)]` documentation shows, rather than rebuilt for every call by the macro's default.
    #[derive(Debug, Clone)]
    pub struct Echo {
        tool_router: rmcp::handler::server::tool::ToolRouter<Self>,
    }

    impl Default for Echo {
        fn default() -> Self {
            Self::new()
        }
    }

    #[tool_router]
    impl Echo {
        /// The server.
        pub fn new() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }

        /// Returns the text as a single text content block.
        #[tool(description = "Echo the text back")]
        fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
            text
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("rmcp-echo", env!("CARGO_PKG_VERSION")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::util::{echoes, snippet, sse_json};
    use serde_json::json;

    #[test]
    fn sse_json_reads_data_lines_event_by_event() {
        let body = b": primed\r\nid: 0-1\r\ndata:\r\n\r\nevent: message\ndata: {\"a\":\ndata: 1}\n\ndata: not json\n\ndata: {\"b\":2}\n\n";
        assert_eq!(sse_json(body), vec![json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn snippet_cuts_long_text_on_a_character_boundary() {
        assert_eq!(snippet(b"short"), "short");
        // 299 ASCII bytes then a 2-byte character across byte 300: cut before it.
        let long = format!("{}é{}", "a".repeat(299), "b".repeat(50));
        assert_eq!(
            snippet(long.as_bytes()),
            format!("{}… (351 bytes)", "a".repeat(299))
        );
    }

    #[test]
    fn echoes_takes_the_text_or_a_codomyrmex_result_and_nothing_else() {
        let text = |t: &str| json!([{"type": "text", "text": t}]);
        assert!(echoes(&json!({"content": text("abc")}), "abc"));
        let wrapped = json!({"content": text("{\"result\":\"abc\"}"), "structuredContent": {"result": "abc"}});
        assert!(echoes(&wrapped, "abc"));
        assert!(!echoes(&wrapped, "abd"));
        assert!(!echoes(&json!({"content": text("abd")}), "abc"));
        assert!(!echoes(
            &json!({"content": text("abc"), "isError": true}),
            "abc"
        ));
        assert!(!echoes(
            &json!({"content": [], "structuredContent": {"result": "abc"}}),
            "abc"
        ));
        let two = json!([{"type": "text", "text": "abc"}, {"type": "text", "text": "abc"}]);
        assert!(!echoes(&json!({"content": two}), "abc"));
    }
}
