//! An OpenAPI document (3.0 or 3.1, YAML or JSON) read as plain JSON values, and each of
//! its operations turned into a tool: a name, an input schema from its parameters and JSON
//! body, an output schema from its first 2xx JSON response, and what a call needs to build
//! the HTTP request ([`Operation`]).
//!
//! The document is parsed into `serde_json::Value` rather than a typed OpenAPI model: the
//! gateway reads a handful of fields, and one reader serves both 3.0 and 3.1. Every
//! `$ref` (local, `#/...`) is resolved inline, within [`MAX_DEPTH`] nested references and
//! [`MAX_SCHEMA_BYTES`] per resolved schema; a schema that refers to itself is refused with
//! the chain of references that loops, and the operation is left out (named in the
//! gateway's problems), never mounted half-built.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// The most `$ref`s followed inside one another.
pub const MAX_DEPTH: usize = 32;
/// The largest resolved schema (input or output) of one operation, in bytes of JSON.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// The most operations read from one document.
pub const MAX_OPERATIONS: usize = 10_000;

/// The HTTP methods an OpenAPI path item may hold operations for.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// `{name}` in the path.
    Path,
    /// `?name=` in the query.
    Query,
    /// A request header.
    Header,
}

/// One parameter of an operation, as a call sends it.
#[derive(Debug, Clone)]
pub struct Param {
    /// Its name in the request (and the input property's).
    pub name: String,
    /// Where it goes.
    pub location: Location,
    /// `explode` (OpenAPI's default: `true` for query parameters, else `false`).
    pub explode: bool,
}

/// One operation: what a call needs to build its request.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The tool's name at this upstream (before the gateway's namespacing).
    pub tool: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// The path template, `/pets/{petId}`.
    pub path: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// The input property that holds the JSON body, if the operation takes one.
    pub body: Option<String>,
    /// The output schema wraps the answer as `{"result": ...}` (an answer that is no object).
    pub wrapped: bool,
    /// The operation declares a JSON answer with a schema (so the answer is structured).
    pub structured: bool,
}

/// The operations of a document, as tools, and the ones left out with why.
#[derive(Debug, Default)]
pub struct Converted {
    /// Tool definitions (`tools/list` entries), in the document's order.
    pub tools: Vec<Value>,
    /// The operations, by tool name.
    pub operations: std::collections::HashMap<String, Operation>,
    /// `servers[0].url`, when the document names one.
    pub server: Option<String>,
    /// The operations left out, and why.
    pub problems: Vec<LeftOut>,
}

/// An operation (or path) left out, and why.
#[derive(Debug)]
pub struct LeftOut {
    /// The tool it would have been, when it has a name.
    pub tool: Option<String>,
    /// What and why.
    pub message: String,
}

/// Parses a document's text: JSON when it starts with `{`, else YAML.
pub fn parse(text: &str) -> Result<Value, String> {
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?
    } else {
        serde_norway::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?
    };
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .ok_or("no `openapi` version field: not an OpenAPI 3 document")?;
    if !version.starts_with("3.") {
        return Err(format!(
            "OpenAPI {version:?} is not supported: only 3.0 and 3.1 are"
        ));
    }
    if !doc.get("paths").is_some_and(Value::is_object) {
        return Err("no `paths` object".into());
    }
    Ok(doc)
}

/// The tool name of an operation: its `operationId` with every character outside
/// `A-Za-z0-9_-.` made `_` (GitHub's `repos/get` becomes `repos_get`); without one,
/// `METHOD_path` the same way, braces dropped (`get /pets/{id}` becomes `get_pets_id`).
pub fn tool_name(operation_id: Option<&str>, method: &str, path: &str) -> String {
    let raw = match operation_id {
        Some(id) if !id.trim().is_empty() => id.to_owned(),
        _ => format!("{method}_{}", path.replace(['{', '}'], "")),
    };
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            c
        } else {
            '_'
        };
        // No runs of `_`, none at either end.
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// Every operation of `doc` as a tool.
pub fn convert(doc: &Value) -> Converted {
    let mut out = Converted {
        server: doc
            .pointer("/servers/0/url")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Converted::default()
    };
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return out;
    };
    let resolver = Resolver { doc };
    for (path, item) in paths {
        let item = match resolver.resolve(item, &mut Vec::new()) {
            Ok(i) => i,
            Err(e) => {
                out.problems.push(LeftOut {
                    tool: None,
                    message: format!("path {path}: {e}"),
                });
                continue;
            }
        };
        let shared = item.get("parameters").cloned().unwrap_or(Value::Null);
        for method in METHODS {
            let Some(op) = item.get(method) else {
                continue;
            };
            if out.operations.len() >= MAX_OPERATIONS {
                out.problems.push(LeftOut {
                    tool: None,
                    message: format!(
                        "more than {MAX_OPERATIONS} operations: the rest are left out"
                    ),
                });
                return out;
            }
            let name = tool_name(op.get("operationId").and_then(Value::as_str), method, path);
            let what = format!("{} {path} ({name})", method.to_uppercase());
            if name.is_empty() {
                out.problems.push(LeftOut {
                    tool: None,
                    message: format!("{what}: no usable tool name"),
                });
                continue;
            }
            if out.operations.contains_key(&name) {
                out.problems.push(LeftOut {
                    message: format!(
                        "{what}: the tool name {name:?} is taken by another operation; left out"
                    ),
                    tool: Some(name),
                });
                continue;
            }
            match operation(&resolver, &name, method, path, &shared, op) {
                Ok((definition, operation)) => {
                    out.tools.push(definition);
                    out.operations.insert(name, operation);
                }
                Err(e) => out.problems.push(LeftOut {
                    tool: Some(name),
                    message: format!("{what}: {e}; left out"),
                }),
            }
        }
    }
    out
}

/// One operation's tool definition and call plan.
fn operation(
    r: &Resolver<'_>,
    name: &str,
    method: &str,
    path: &str,
    shared: &Value,
    op: &Value,
) -> Result<(Value, Operation), String> {
    // Operation-level parameters override path-level ones of the same name and place.
    let mut declared: Vec<Value> = Vec::new();
    for p in [shared, op.get("parameters").unwrap_or(&Value::Null)]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
    {
        let p = r.resolve(p, &mut Vec::new())?;
        let key = |v: &Value| (v.get("name").cloned(), v.get("in").cloned());
        declared.retain(|d| key(d) != key(&p));
        declared.push(p);
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params = Vec::new();
    for p in &declared {
        let pname = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a parameter without a name")?;
        let location = match p.get("in").and_then(Value::as_str) {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            Some("header") => Location::Header,
            // Cookies are not sent by the gateway.
            Some("cookie") => {
                if p.get("required").and_then(Value::as_bool) == Some(true) {
                    return Err(format!("it requires the cookie parameter {pname:?}"));
                }
                continue;
            }
            other => return Err(format!("parameter {pname:?} is in {other:?}")),
        };
        if location == Location::Header
            && ["accept", "content-type", "authorization"].contains(&&*pname.to_ascii_lowercase())
        {
            // OpenAPI says these are ignored as parameters.
            continue;
        }
        if properties.contains_key(pname) {
            return Err(format!("two parameters are named {pname:?}"));
        }
        let mut schema = match p.get("schema") {
            Some(s) => r.schema(s)?,
            None => json!({}),
        };
        if let (Some(d), Value::Object(s)) = (p.get("description"), &mut schema) {
            s.entry("description").or_insert_with(|| d.clone());
        }
        if location == Location::Path || p.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(Value::String(pname.to_owned()));
        }
        properties.insert(pname.to_owned(), schema);
        let explode = p
            .get("explode")
            .and_then(Value::as_bool)
            .unwrap_or(location == Location::Query);
        params.push(Param {
            name: pname.to_owned(),
            location,
            explode,
        });
    }
    for placeholder in placeholders(path) {
        if !params
            .iter()
            .any(|p| p.location == Location::Path && p.name == placeholder)
        {
            return Err(format!(
                "the path parameter {{{placeholder}}} is not declared"
            ));
        }
    }
    let mut body = None;
    if let Some(rb) = op.get("requestBody") {
        let rb = r.resolve(rb, &mut Vec::new())?;
        let content = rb.get("content").and_then(Value::as_object);
        let json_schema = content.and_then(|c| {
            c.iter()
                .find(|(media, _)| is_json(media))
                .map(|(_, m)| m.get("schema").cloned().unwrap_or(json!({})))
        });
        match json_schema {
            Some(s) => {
                let key = ["body", "requestBody", "_body"]
                    .into_iter()
                    .find(|k| !properties.contains_key(*k))
                    .ok_or("no free property name for the body")?;
                properties.insert(key.to_owned(), r.schema(&s)?);
                if rb.get("required").and_then(Value::as_bool) == Some(true) {
                    required.push(Value::String(key.to_owned()));
                }
                body = Some(key.to_owned());
            }
            None if rb.get("required").and_then(Value::as_bool) == Some(true) => {
                return Err("its required body is not JSON".into());
            }
            None => {}
        }
    }
    let mut input = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        input["required"] = Value::Array(required);
    }
    check_size(&input, "input")?;
    let mut definition = json!({"name": name, "inputSchema": input});
    let summary = op.get("summary").and_then(Value::as_str);
    let description = op.get("description").and_then(Value::as_str);
    if let Some(s) = summary {
        definition["title"] = json!(s);
    }
    match (summary, description) {
        (_, Some(d)) => definition["description"] = json!(d),
        (Some(s), None) => definition["description"] = json!(s),
        _ => {}
    }
    let method_upper = method.to_ascii_uppercase();
    let mut annotations = Map::new();
    if matches!(method, "get" | "head" | "options") {
        annotations.insert("readOnlyHint".into(), json!(true));
    }
    if matches!(method, "put" | "delete") {
        annotations.insert("idempotentHint".into(), json!(true));
    }
    if method == "delete" {
        annotations.insert("destructiveHint".into(), json!(true));
    }
    if !annotations.is_empty() {
        definition["annotations"] = Value::Object(annotations);
    }
    let (mut wrapped, mut structured) = (false, false);
    if let Some(output) = success_schema(r, op)? {
        let is_object = output.get("type").and_then(Value::as_str) == Some("object")
            || (output.get("type").is_none() && output.get("properties").is_some());
        let output = if is_object {
            output
        } else {
            wrapped = true;
            json!({"type": "object", "properties": {"result": output}, "required": ["result"]})
        };
        check_size(&output, "output")?;
        definition["outputSchema"] = output;
        structured = true;
    }
    Ok((
        definition,
        Operation {
            tool: name.to_owned(),
            method: method_upper,
            path: path.to_owned(),
            params,
            body,
            wrapped,
            structured,
        },
    ))
}

/// The schema of the first 2xx response with a JSON body (`2XX` counts), resolved.
fn success_schema(r: &Resolver<'_>, op: &Value) -> Result<Option<Value>, String> {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return Ok(None);
    };
    let mut codes: Vec<&String> = responses
        .keys()
        .filter(|k| k.starts_with('2') && k.len() == 3)
        .collect();
    codes.sort();
    for code in codes {
        let response = r.resolve(&responses[code.as_str()], &mut Vec::new())?;
        let Some(content) = response.get("content").and_then(Value::as_object) else {
            continue;
        };
        if let Some((_, media)) = content.iter().find(|(m, _)| is_json(m))
            && let Some(schema) = media.get("schema")
        {
            return r.schema(schema).map(Some);
        }
    }
    Ok(None)
}

/// `application/json`, `application/vnd.github+json`, `application/problem+json`...
fn is_json(media: &str) -> bool {
    let m = media.split(';').next().unwrap_or("").trim();
    m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
}

/// The `{name}`s of a path template.
pub fn placeholders(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

fn check_size(schema: &Value, what: &str) -> Result<(), String> {
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its {what} schema is {size} bytes once its references are resolved, more than \
             the {MAX_SCHEMA_BYTES} allowed"
        ));
    }
    Ok(())
}

/// Resolves local `$ref`s of one document.
struct Resolver<'a> {
    doc: &'a Value,
}

impl Resolver<'_> {
    /// `value` with its own top-level `$ref` followed (a parameter, a body, a response).
    fn resolve(&self, value: &Value, chain: &mut Vec<String>) -> Result<Value, String> {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return Ok(value.clone());
        };
        let target = self.target(reference, chain)?;
        chain.push(reference.to_owned());
        let out = self.resolve(target, chain);
        chain.pop();
        out
    }

    fn target(&self, reference: &str, chain: &[String]) -> Result<&Value, String> {
        if chain.iter().any(|c| c == reference) {
            let mut cycle: Vec<&str> = chain.iter().map(String::as_str).collect();
            cycle.push(reference);
            return Err(format!(
                "its schema refers to itself ({}): recursive schemas are refused",
                cycle.join(" -> ")
            ));
        }
        if chain.len() >= MAX_DEPTH {
            return Err(format!(
                "more than {MAX_DEPTH} references inside one another (at {reference})"
            ));
        }
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            format!("the reference {reference:?} is not local to the document (`#/...`)")
        })?;
        let pointer = pointer.replace("%7B", "{").replace("%7D", "}");
        self.doc
            .pointer(&pointer)
            .ok_or_else(|| format!("the reference {reference:?} points at nothing"))
    }

    /// A schema with every `$ref` inside it resolved, as JSON Schema (OpenAPI 3.0's
    /// `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` rewritten).
    fn schema(&self, schema: &Value) -> Result<Value, String> {
        let mut budget = MAX_SCHEMA_BYTES;
        self.inline(schema, &mut Vec::new(), &mut budget)
    }

    fn inline(
        &self,
        value: &Value,
        chain: &mut Vec<String>,
        budget: &mut usize,
    ) -> Result<Value, String> {
        let too_large = || {
            format!(
                "a schema larger than {MAX_SCHEMA_BYTES} bytes once its references are resolved"
            )
        };
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    let target = self.target(reference, chain)?;
                    chain.push(reference.to_owned());
                    let out = self.inline(target, chain, budget);
                    chain.pop();
                    return out;
                }
                let mut out = Map::new();
                for (k, v) in map {
                    *budget = budget.checked_sub(k.len() + 4).ok_or_else(too_large)?;
                    // Keywords JSON Schema does not know that only document the API.
                    if matches!(
                        k.as_str(),
                        "example" | "xml" | "externalDocs" | "discriminator"
                    ) {
                        continue;
                    }
                    out.insert(k.clone(), self.inline(v, chain, budget)?);
                }
                rewrite_openapi_30(&mut out);
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|v| self.inline(v, chain, budget))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            Value::String(s) => {
                *budget = budget.checked_sub(s.len() + 2).ok_or_else(too_large)?;
                Ok(value.clone())
            }
            other => {
                *budget = budget.checked_sub(8).ok_or_else(too_large)?;
                Ok(other.clone())
            }
        }
    }
}

/// OpenAPI 3.0's schema dialect in JSON Schema's words: `nullable: true` adds `"null"` to
/// the type; a boolean `exclusiveMinimum`/`exclusiveMaximum` becomes the number.
fn rewrite_openapi_30(schema: &mut Map<String, Value>) {
    if let Some(Value::Bool(nullable)) = schema.remove("nullable")
        && nullable
    {
        match schema.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                schema.insert("type".into(), json!([t, "null"]));
            }
            Some(Value::Array(types)) if !types.contains(&json!("null")) => {
                types.push(json!("null"));
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = schema.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(exclusive)) = schema.get(flag).cloned() {
            schema.remove(flag);
            if exclusive && let Some(b) = schema.remove(bound) {
                schema.insert(flag.into(), b);
            }
        }
    }
    // Unique, so that a schema that lists a type twice still compiles.
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        let mut seen = BTreeSet::new();
        types.retain(|t| seen.insert(t.to_string()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_rule() {
        assert_eq!(tool_name(Some("repos/get"), "get", "/x"), "repos_get");
        assert_eq!(tool_name(Some("listPets"), "get", "/x"), "listPets");
        assert_eq!(tool_name(None, "get", "/pets/{id}"), "get_pets_id");
        assert_eq!(tool_name(Some("  "), "delete", "/a/{b}/c"), "delete_a_b_c");
    }

    #[test]
    fn a_recursive_schema_is_refused_naming_its_chain() {
        let doc = parse(
            r##"{"openapi": "3.0.3", "paths": {"/n": {"get": {"operationId": "node",
              "responses": {"200": {"description": "ok", "content": {"application/json":
              {"schema": {"$ref": "#/components/schemas/Node"}}}}}}}},
              "components": {"schemas": {"Node": {"type": "object", "properties":
              {"next": {"$ref": "#/components/schemas/Node"}}}}}}"##,
        )
        .unwrap();
        let c = convert(&doc);
        assert!(c.tools.is_empty());
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert!(
            c.problems[0]
                .message
                .contains("#/components/schemas/Node -> #/components/schemas/Node"),
            "{:?}",
            c.problems
        );
    }

    #[test]
    fn nullable_and_boolean_bounds_become_json_schema() {
        let doc = parse(
            "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      parameters:\n        - name: n\n          in: query\n          schema: {type: integer, nullable: true, minimum: 0, exclusiveMinimum: true}\n      responses:\n        '200': {description: ok}\n",
        )
        .unwrap();
        let c = convert(&doc);
        assert_eq!(
            c.tools[0]["inputSchema"]["properties"]["n"],
            json!({"type": ["integer", "null"], "exclusiveMinimum": 0})
        );
        assert_eq!(c.tools[0]["name"], "get_a");
    }
}
