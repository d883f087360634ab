//! A server that publishes skills (the Skills extension, SEP-2640) and nothing else: the
//! subject of the conformance suite's `sep-2640-*` server scenarios (`.ci/conformance.sh`).
//!
//! ```text
//! cargo run --example skills_server -- --http 127.0.0.1:3000            # skills built in code
//! cargo run --example skills_server -- --http 127.0.0.1:3000 --dir DIR  # every skill under DIR
//! ```
//!
//! Built in code: `pdf-processing` (a skill with supporting files in nested directories),
//! `acme/billing/refunds` (a skill under an organizational prefix) and `reports/daily` (a
//! skill whose entry publishes `"dynamic"` instead of a manifest).

use std::sync::Arc;

use codomyrmex_mcp::skills::{self, McpSkillRegistry, SkillDefinition, SkillError};
use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry};

// ANCHOR: built_in
fn built_in() -> Result<McpSkillRegistry, SkillError> {
    let registry = McpSkillRegistry::new();
    registry.add(
        SkillDefinition::new(
            "pdf-processing",
            "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n\
             license: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n---\n\n# PDF processing\n\n\
             Choose the matching template from `templates/`, then follow \
             `references/FORMS.md`.\n",
        )?
        .with_file(
            "references/FORMS.md",
            "# Forms\n\nFill fields top to bottom.\n",
        )?
        .with_file("templates/invoice.md", "# Invoice\n\nAmount: {amount}\n")?
        .with_file(
            "templates/regional/eu-invoice.md",
            "# EU invoice\n\nVAT: {vat}\n",
        )?
        .with_file(
            "scripts/extract.py",
            "import sys\nprint(open(sys.argv[1], 'rb').read()[:4])\n",
        )?,
    )?;
    registry.add(
        SkillDefinition::new(
            "acme/billing/refunds",
            "---\nname: refunds\ndescription: Process customer refund requests per company policy\n---\n\n\
             # Refunds\n\nSee `examples/email.md`.\n",
        )?
        .with_file("examples/email.md", "Dear customer,\n")?,
    )?;
    registry.add(
        SkillDefinition::new(
            "reports/daily",
            "---\nname: daily\ndescription: Assemble today's operational report from live data\n---\n\n\
             # Daily report\n",
        )?
        .dynamic(),
    )?;
    Ok(registry)
}
// ANCHOR_END: built_in

// ANCHOR: from_dir
fn from_dir(dir: &str) -> Result<McpSkillRegistry, String> {
    let loaded = skills::skills_from_dir(dir).map_err(|e| e.to_string())?;
    for (path, why) in &loaded.refused {
        eprintln!("skills_server: skill {path} not served: {why}");
    }
    let registry = McpSkillRegistry::new();
    for skill in loaded.skills {
        registry.add(skill).map_err(|e| e.to_string())?;
    }
    Ok(registry)
}
// ANCHOR_END: from_dir

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (addr, dir) = match args.as_slice() {
        [flag, addr] if flag == "--http" => (addr, None),
        [flag, addr, d, dir] if flag == "--http" && d == "--dir" => (addr, Some(dir)),
        _ => {
            eprintln!("usage: skills_server --http ADDR [--dir DIR]");
            return std::process::ExitCode::from(2);
        }
    };
    let bind: std::net::SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("skills_server: invalid address {addr:?}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let registry = match dir {
        Some(dir) => from_dir(dir),
        None => built_in().map_err(|e| e.to_string()),
    };
    let registry = match registry {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skills_server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // A conformance subject must not be throttled.
    let config =
        McpServerConfig::new("codomyrmex-skills", codomyrmex_mcp::VERSION).with_rate_limit(None);
    let server =
        McpServer::new(config, Arc::new(McpToolRegistry::new())).with_skills(Arc::new(registry));
    let config = codomyrmex_mcp::transport::http::HttpConfig {
        bind,
        rate_limit: None,
        health: codomyrmex_mcp::transport::http::HealthAccess::Public,
        ..Default::default()
    };
    match server.serve_http(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skills_server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
