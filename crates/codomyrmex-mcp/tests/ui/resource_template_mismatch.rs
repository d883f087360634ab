use codomyrmex_mcp::mcp_resource;

#[mcp_resource(uri_template = "users://{id}/profile")]
fn profile(user: String) -> String {
    user
}

fn main() {}
