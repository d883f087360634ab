use codomyrmex_mcp::mcp_tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

#[mcp_tool]
fn norm(point: Point) -> f64 {
    (point.x * point.x + point.y * point.y).sqrt()
}

struct Opaque;

#[mcp_tool]
fn make() -> Opaque {
    Opaque
}

fn main() {}
