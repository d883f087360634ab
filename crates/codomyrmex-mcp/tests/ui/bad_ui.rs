use codomyrmex_mcp::mcp_tool;

#[mcp_tool(ui = "https://example.com/app.html")]
fn not_ui_scheme() {}

#[mcp_tool(ui = "ui://")]
fn no_resource() {}

#[mcp_tool(ui = "ui://a view")]
fn spaced() {}

#[mcp_tool(ui = "ui://a/view", visibility = ["agent"])]
fn unknown_visibility() {}

#[mcp_tool(ui = "ui://a/view", visibility = [])]
fn empty_visibility() {}

#[mcp_tool(ui = "ui://a/view", visibility = ["app", "app"])]
fn twice() {}

fn main() {}
