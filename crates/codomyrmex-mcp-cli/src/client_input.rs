//! What the `client` command is told on its command line, turned into what the library
//! client takes: the server (`--stdio`, `--http` or `--server NAME` from an `mcp.json` in the
//! Claude Desktop format), `--env`/`--header` pairs, and tool or prompt arguments from
//! `KEY=VALUE` pairs (converted by the tool's input schema), `--args JSON`, `@FILE` or `@-`.
//!
//! Only parsing: no connection is made here.

use std::path::{Path, PathBuf};

use codomyrmex_mcp::client::StdioCommand;
use codomyrmex_mcp::client::http::HttpTarget;
use serde_json::{Map, Value};

/// Where the server is.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// A child process.
    Stdio(StdioCommand),
    /// A Streamable HTTP endpoint.
    Http(HttpTarget),
}

/// Splits `K=V` (for `--env`).
pub fn env_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("--env {text:?}: expected KEY=VALUE")),
    }
}

/// Splits `K:V` (for `--header`).
pub fn header_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("--header {text:?}: expected NAME:VALUE")),
    }
}

/// A stdio command from a `--stdio` string.
pub fn stdio_command(command: &str) -> Result<StdioCommand, String> {
    let words = shlex::split(command)
        .ok_or_else(|| format!("cannot split {command:?} into words (unbalanced quotes?)"))?;
    let Some((program, args)) = words.split_first() else {
        return Err("--stdio needs a command".into());
    };
    Ok(StdioCommand::new(program.clone()).args(args.iter().cloned()))
}

/// The server named `name` in the `mcp.json` at `path`.
pub fn from_mcp_json(path: &Path, name: &str) -> Result<ServerSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let servers = doc
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{} has no \"mcpServers\" object", path.display()))?;
    let Some(entry) = servers.get(name) else {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(format!(
            "{} has no server {name:?} (it has: {})",
            path.display(),
            known.join(", ")
        ));
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{name}.{key}: every item must be a string"))
                })
                .collect(),
            Some(_) => Err(format!("{name}.{key} must be an array of strings")),
        }
    };
    let pairs = |key: &str| -> Result<Vec<(String, String)>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|v| (k.clone(), v.to_owned()))
                        .ok_or_else(|| format!("{name}.{key}.{k} must be a string"))
                })
                .collect(),
            Some(_) => Err(format!("{name}.{key} must be an object of strings")),
        }
    };
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        return Ok(ServerSpec::Http(HttpTarget {
            url: url.to_owned(),
            headers: pairs("headers")?,
            token: None,
            ca_file: None,
        }));
    }
    let Some(program) = entry.get("command").and_then(Value::as_str) else {
        return Err(format!("{name} has neither \"command\" nor \"url\""));
    };
    Ok(ServerSpec::Stdio(StdioCommand {
        program: program.to_owned(),
        args: strings("args")?,
        env: pairs("env")?,
        cwd: entry.get("cwd").and_then(Value::as_str).map(PathBuf::from),
    }))
}

/// `--args`: a JSON object, `@FILE`, or `@-` for stdin.
pub fn parse_arguments(raw: &str) -> Result<Map<String, Value>, String> {
    let text = match raw.strip_prefix('@') {
        Some("-") => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| format!("cannot read the arguments from stdin: {e}"))?;
            text
        }
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the arguments file {path}: {e}"))?,
        None => raw.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("--args must be a JSON object, e.g. '{\"path\": \"README.md\"}'".into()),
        Err(e) => Err(format!("--args is not valid JSON: {e}")),
    }
}

/// The JSON types a schema allows (empty: any).
fn types_of(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(Value::as_array))
            .flatten()
            .flat_map(types_of)
            .collect(),
    }
}

/// One `KEY=VALUE` converted by the property's schema: a string stays a string; numbers,
/// booleans, `null`, objects and arrays are read as JSON when the schema allows them.
fn convert(key: &str, raw: &str, schema: Option<&Value>) -> Result<Value, String> {
    let types = schema.map(types_of).unwrap_or_default();
    let allows = |t: &str| {
        types.is_empty()
            || types
                .iter()
                .any(|x| x == t || (t == "number" && x == "integer"))
    };
    if types.iter().any(|t| t == "string") && !types.iter().any(|t| t != "string" && t != "null") {
        return Ok(Value::String(raw.to_owned()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Number(_)) if allows("number") || allows("integer") => Ok(v),
        Ok(v @ Value::Bool(_)) if allows("boolean") => Ok(v),
        Ok(v @ Value::Object(_)) if allows("object") => Ok(v),
        Ok(v @ Value::Array(_)) if allows("array") => Ok(v),
        Ok(Value::Null) if allows("null") => Ok(Value::Null),
        _ if allows("string") => Ok(Value::String(raw.to_owned())),
        _ => Err(format!(
            "{key}={raw}: the tool expects {}",
            types.join(" or ")
        )),
    }
}

/// Arguments from `KEY=VALUE` pairs and `--args`, the pairs winning. `schema` is the tool's
/// input schema (`None` for prompts, whose arguments are strings).
pub fn arguments(
    pairs: &[String],
    args: Option<&str>,
    schema: Option<&Value>,
) -> Result<Map<String, Value>, String> {
    let mut out = match args {
        Some(raw) => parse_arguments(raw)?,
        None => Map::new(),
    };
    let properties = schema.and_then(|s| s.get("properties"));
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(format!("{pair:?}: expected KEY=VALUE"));
        };
        let value = match schema {
            Some(_) => convert(key, raw, properties.and_then(|p| p.get(key)))?,
            None => Value::String(raw.to_owned()),
        };
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pairs_are_converted_by_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": ["number", "null"]},
            "flag": {"type": "boolean"},
            "obj": {"type": "object"},
            "list": {"anyOf": [{"type": "array"}, {"type": "null"}]},
        }});
        let args = arguments(
            &[
                "path=42".into(),
                "n=7".into(),
                "x=1.5".into(),
                "flag=true".into(),
                "obj={\"a\":1}".into(),
                "list=[1]".into(),
                "free=[x".into(),
            ],
            None,
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"path": "42", "n": 7, "x": 1.5, "flag": true, "obj": {"a": 1}, "list": [1], "free": "[x"})
        );
        assert!(
            arguments(&["n=seven".into()], None, Some(&schema))
                .unwrap_err()
                .contains("integer")
        );
        assert!(arguments(&["novalue".into()], None, Some(&schema)).is_err());
        // Pairs win over --args; prompt arguments stay strings.
        let args = arguments(&["a=2".into()], Some("{\"a\": 1, \"b\": 3}"), None).unwrap();
        assert_eq!(Value::Object(args), json!({"a": "2", "b": 3}));
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(
            Value::Object(parse_arguments("{\"a\": 1}").unwrap()),
            json!({"a": 1})
        );
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{nope").is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("args.json");
        std::fs::write(&f, "{\"path\": \"x\"}").unwrap();
        assert_eq!(
            Value::Object(parse_arguments(&format!("@{}", f.display())).unwrap()),
            json!({"path": "x"})
        );
        assert!(parse_arguments("@/nonexistent/args.json").is_err());
    }

    #[test]
    fn mcp_json_names_servers() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mcp.json");
        std::fs::write(
            &f,
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}, "cwd": "/tmp"},
                "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}},
                "bad": {"args": []}
            }}"#,
        )
        .unwrap();
        assert_eq!(
            from_mcp_json(&f, "fs").unwrap(),
            ServerSpec::Stdio(StdioCommand {
                program: "npx".into(),
                args: vec!["-y".into(), "server".into()],
                env: vec![("A".into(), "1".into())],
                cwd: Some("/tmp".into()),
            })
        );
        let ServerSpec::Http(t) = from_mcp_json(&f, "web").unwrap() else {
            panic!()
        };
        assert_eq!(t.headers, vec![("X".to_owned(), "y".to_owned())]);
        assert!(from_mcp_json(&f, "bad").unwrap_err().contains("neither"));
        assert!(from_mcp_json(&f, "nope").unwrap_err().contains("fs"));
        assert!(from_mcp_json(&dir.path().join("missing.json"), "fs").is_err());
    }

    #[test]
    fn env_and_header_pairs_split() {
        assert_eq!(env_pair("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert!(env_pair("=x").is_err() && env_pair("x").is_err());
        assert_eq!(
            header_pair("X-A: v:w").unwrap(),
            ("X-A".into(), "v:w".into())
        );
        assert!(header_pair("novalue").is_err());
    }
}
