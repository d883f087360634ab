//! The `x-mcp-header` declarations of a tool's input schema, as plain data: which argument
//! paths a client mirrors in `Mcp-Param-{Name}` headers. Mapping a name onto an HTTP header
//! is the HTTP transport's (`transport/http/headers.rs`); nothing here names an HTTP type.

use serde_json::Value;

/// A tool parameter that a client must mirror in an `Mcp-Param-{Name}` header (its schema
/// property carries `x-mcp-header`), as plain data: the HTTP transport maps `name` to a
/// header name itself. Worked out once, when the tool is registered; read with
/// [`McpToolRegistry::with_header_params`](super::McpToolRegistry::with_header_params).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The property path from the arguments object to the parameter.
    pub path: Vec<String>,
    /// The `x-mcp-header` name, as declared.
    pub name: String,
}

/// The `x-mcp-header` parameters of an input schema, in schema order.
pub(super) fn header_params(schema: &Value) -> Vec<HeaderParam> {
    fn collect(schema: &Value, path: &mut Vec<String>, out: &mut Vec<HeaderParam>) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, prop) in props {
            path.push(key.clone());
            if let Some(name) = prop.get("x-mcp-header").and_then(Value::as_str) {
                out.push(HeaderParam {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            collect(prop, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    collect(schema, &mut Vec::new(), &mut out);
    out
}
