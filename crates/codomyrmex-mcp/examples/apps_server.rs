//! A server with an MCP App (the `io.modelcontextprotocol/ui` extension, SEP-1865): the tool
//! `dashboard.show` returns a small table as `structuredContent`, and hosts that render apps
//! show it in `ui://dashboard/view`, a page of plain HTML and JavaScript
//! (`apps_server/dashboard.html`) that speaks the extension's `postMessage` protocol itself.
//! Its Refresh button calls `dashboard.refresh` through the host, a tool only the app may
//! call (`visibility = ["app"]`: listed with that metadata, and hosts keep it from the model).
//!
//! ```text
//! cargo run --example apps_server                          # stdio
//! cargo run --example apps_server -- --http 127.0.0.1:3000  # Streamable HTTP at /mcp
//! cargo run --example apps_server -- --http 127.0.0.1:3000 --cors-origin http://127.0.0.1:8000
//! ```
//!
//! `--cors-origin ORIGIN` (repeatable) lets a host page served from ORIGIN call the server
//! from a browser, as the browser test (`tests/interop/apps_browser.sh`) does.
//!
//! The messages the app sends and answers are listed at the top of `dashboard.html` and in
//! `docs/skills-and-apps.md`.

use std::sync::Arc;

use codomyrmex_mcp::apps::{AppsError, UiResource};
use codomyrmex_mcp::{
    McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry, WithContent, mcp_tool,
};

/// The app's URI.
pub const VIEW_URI: &str = "ui://dashboard/view";
/// The app's HTML, built into the binary.
pub const DASHBOARD_HTML: &str = include_str!("apps_server/dashboard.html");

/// What the app shows: a title, the refresh generation and the rows.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Table {
    /// The table's title.
    title: String,
    /// How many times the app refreshed it.
    generation: u64,
    /// One row per label.
    rows: Vec<Row>,
}

/// One row.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Row {
    /// The label.
    label: String,
    /// The value the bar shows.
    value: u64,
}

const DAYS: [&str; 5] = ["Mon", "Tue", "Wed", "Thu", "Fri"];
const BASE: [u64; 5] = [120, 340, 210, 460, 290];

/// The table at `generation`: each refresh rotates the values by one day.
fn table(metric: &str, generation: u64) -> WithContent<Table> {
    let shift = usize::try_from(generation % 5).unwrap_or(0);
    let rows: Vec<Row> = DAYS
        .iter()
        .enumerate()
        .map(|(i, day)| Row {
            label: (*day).to_owned(),
            value: BASE[(i + shift) % 5],
        })
        .collect();
    let text = rows
        .iter()
        .map(|r| format!("{}: {}", r.label, r.value))
        .collect::<Vec<_>>()
        .join(", ");
    WithContent::text(
        format!("{metric} by day (generation {generation}): {text}"),
        Table {
            title: format!("{metric} by day"),
            generation,
            rows,
        },
    )
}

/// Shows a metric by weekday as a table and a bar chart (an interactive view where the host
/// renders MCP Apps; the same numbers as text otherwise).
#[mcp_tool(name = "dashboard.show", read_only, ui = "ui://dashboard/view")]
fn show(metric: Option<String>) -> Result<WithContent<Table>, McpErrorDetail> {
    Ok(table(metric.as_deref().unwrap_or("requests"), 0))
}

// ANCHOR: refresh
/// Refreshes the dashboard: the table after `generation`. Called by the app's button.
#[mcp_tool(
    name = "dashboard.refresh",
    read_only,
    ui = "ui://dashboard/view",
    visibility = ["app"]
)]
fn refresh(generation: Option<u64>) -> Result<WithContent<Table>, McpErrorDetail> {
    let next = generation.unwrap_or(0).saturating_add(1);
    Ok(table("requests", next))
}
// ANCHOR_END: refresh

// ANCHOR: server
/// The server: the two tools, the app, and the check that every tool's `ui://` link is
/// served.
pub fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
    let registry = McpToolRegistry::discovered()?;
    let config = McpServerConfig::new("codomyrmex-apps-demo", codomyrmex_mcp::VERSION);
    let server = McpServer::new(config, Arc::new(registry)).ui_resource(
        UiResource::html(VIEW_URI, "dashboard", DASHBOARD_HTML)
            .with_title("Dashboard")
            .with_description("A table and bar chart of dashboard.show's result")
            .with_prefers_border(true),
    )?;
    server.check_apps().map_err(|e: AppsError| e.to_string())?;
    Ok(server)
}
// ANCHOR_END: server

const USAGE: &str = "usage: apps_server [--http ADDR [--cors-origin ORIGIN]...]";

/// The origins of `--cors-origin ORIGIN ...` (the server checks each one); `None` when the
/// arguments are anything else.
fn cors_origins(args: &[String]) -> Option<Vec<String>> {
    args.chunks(2)
        .map(|pair| match pair {
            [flag, origin] if flag == "--cors-origin" => Some(origin.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let server = match server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("apps_server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [] => server.serve_stdio().await.map_err(|e| e.to_string()),
        [flag, addr, rest @ ..] if flag == "--http" => match (addr.parse(), cors_origins(rest)) {
            (Ok(bind), Some(cors_origins)) => {
                let config = codomyrmex_mcp::transport::http::HttpConfig {
                    bind,
                    cors_origins,
                    ..Default::default()
                };
                server.serve_http(config).await.map_err(|e| e.to_string())
            }
            (Err(e), _) => Err(format!("invalid address {addr:?}: {e}")),
            (_, None) => {
                eprintln!("{USAGE}");
                return std::process::ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("apps_server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
