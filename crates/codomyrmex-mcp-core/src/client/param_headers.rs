//! The `x-mcp-header` annotations of tool input schemas (2026-07-28, SEP-2243), client side:
//! checking a tool's annotations are valid (a tool with an invalid one is excluded from what
//! the library's `McpClient::list_tools` returns), and the `Mcp-Param-{Name}` headers a
//! `tools/call` must carry, values Base64-wrapped (`=?base64?...?=`) when they are not safe
//! as plain header text.
//!
//! No I/O and no HTTP types (plain strings): it lives beside [`proto`](super::proto).

use base64::Engine as _;
use serde_json::{Map, Value};

/// One annotated parameter: its property path and header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// Property names from the arguments object down to the parameter.
    pub path: Vec<String>,
    /// The declared `x-mcp-header` name.
    pub name: String,
}

/// Whether `name` is a valid `x-mcp-header` value: non-empty visible ASCII token characters
/// (no spaces, colons or controls).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The annotated parameters of `schema`, or why the tool must be excluded: an empty or
/// malformed name, an annotation on anything but a string, integer or boolean, or two
/// parameters with the same name (case-insensitively).
pub fn annotated_params(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut out = Vec::new();
    collect(schema, &mut Vec::new(), &mut out)?;
    for (i, a) in out.iter().enumerate() {
        if out[..i]
            .iter()
            .any(|b| b.name.eq_ignore_ascii_case(&a.name))
        {
            return Err(format!("x-mcp-header {:?} is declared twice", a.name));
        }
    }
    Ok(out)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, prop) in props {
        path.push(key.clone());
        if let Some(annotation) = prop.get("x-mcp-header") {
            let Some(name) = annotation.as_str().filter(|n| valid_name(n)) else {
                return Err(format!(
                    "{key}: x-mcp-header {annotation} is not a valid header name"
                ));
            };
            let primitive = match prop.get("type") {
                Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
                _ => false,
            };
            if !primitive {
                return Err(format!(
                    "{key}: x-mcp-header is allowed on string, integer and boolean parameters only"
                ));
            }
            out.push(ParamHeader {
                path: path.clone(),
                name: name.to_owned(),
            });
        }
        collect(prop, path, out)?;
        path.pop();
    }
    Ok(())
}

/// A header value: plain when it is visible ASCII with no leading or trailing whitespace,
/// else the Base64 sentinel form.
pub fn header_value(text: &str) -> String {
    let plain = text.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !text.starts_with(' ')
        && !text.ends_with(' ');
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// The `Mcp-Param-{Name}` headers for a call with `arguments`; absent and `null` arguments
/// send no header.
pub fn param_headers(
    params: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in params {
        let Some((last, parents)) = p.path.split_last() else {
            continue;
        };
        let value = parents
            .iter()
            .try_fold(arguments, |obj, key| obj.get(key)?.as_object())
            .and_then(|obj| obj.get(last));
        let text = match value {
            Some(Value::String(s)) => header_value(s),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        out.push((format!("Mcp-Param-{}", p.name), text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_annotations_exclude_the_tool() {
        let ok = json!({"properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "n": {"type": "integer", "x-mcp-header": "N"}}});
        assert_eq!(annotated_params(&ok).unwrap().len(), 2);
        for bad in [
            json!({"properties": {"v": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"v": {"type": "object", "x-mcp-header": "V"}}}),
            json!({"properties": {"v": {"type": "array", "x-mcp-header": "V"}}}),
            json!({"properties": {"v": {"type": "null", "x-mcp-header": "V"}}}),
            json!({"properties": {"v": {"type": "number", "x-mcp-header": "V"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "R"}, "b": {"type": "string", "x-mcp-header": "r"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "A:B"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "Région"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": "A\tB"}}}),
            json!({"properties": {"v": {"type": "string", "x-mcp-header": 5}}}),
        ] {
            assert!(annotated_params(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_mirrored_and_wrapped_when_unsafe() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "odd": {"type": "string", "x-mcp-header": "Odd"},
            "gone": {"type": "string", "x-mcp-header": "Gone"},
            "query": {"type": "string"}
        }});
        let params = annotated_params(&schema).unwrap();
        let args = json!({"region": "us west", "n": 3, "flag": false, "odd": " é\r\n", "gone": null, "query": "q"});
        let h = param_headers(&params, args.as_object().unwrap());
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("Mcp-Param-Region"), Some("us west"));
        assert_eq!(get("Mcp-Param-N"), Some("3"));
        assert_eq!(get("Mcp-Param-Flag"), Some("false"));
        assert!(get("Mcp-Param-Odd").unwrap().starts_with("=?base64?"));
        assert_eq!(get("Mcp-Param-Gone"), None);
        assert_eq!(h.len(), 4);
    }
}
