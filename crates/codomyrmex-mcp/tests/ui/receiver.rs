use codomyrmex_mcp::{mcp_tool, mcp_tools};

struct Counter {
    hits: u64,
}

#[mcp_tools]
impl Counter {
    #[mcp_tool]
    fn bump(&mut self) -> u64 {
        self.hits += 1;
        self.hits
    }

    #[mcp_tool]
    fn boxed(self: Box<Self>) -> u64 {
        self.hits
    }

    #[mcp_tool]
    fn take(self) -> u64 {
        self.hits
    }
}

struct Plain;

impl Plain {
    #[mcp_tool]
    fn method(&self) -> u64 {
        1
    }
}

fn main() {}
