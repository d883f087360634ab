//! JSON Schema validation of tool arguments and structured output.
//!
//! [`SchemaValidator`] pairs two validators:
//!
//! - a small built-in one for the subset of JSON Schema 2020-12 that nearly every tool schema
//!   uses (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum`, `const`,
//!   the length, size and range bounds, `allOf`, `anyOf`, `oneOf`, and annotations such as
//!   `description`, `default` and `format`);
//! - the general validator of the `jsonschema` crate, which is the authority.
//!
//! A schema that stays inside the subset is checked structurally at registration (well-formed
//! keyword values, as the 2020-12 meta-schema demands) and the general validator is compiled
//! only when it is first needed: when an instance fails the built-in check, to confirm the
//! failure and to describe the violations. Any other schema is compiled by the general
//! validator at registration, exactly as before, so an invalid schema is still refused when it
//! is registered.
//!
//! The built-in validator is *sound for acceptance*: when it accepts an instance, the general
//! validator accepts it too (a property test checks this against `jsonschema`). It may reject
//! an instance that is in fact valid (for instance `1.0` for `"type": "integer"`); such a
//! rejection is never final, because every rejection is re-checked by the general validator.
//!
//! This is not a general JSON Schema implementation: `$ref`, `pattern`, `not`,
//! conditionals, `prefixItems` and every other keyword send the schema to `jsonschema`.

use std::sync::OnceLock;

use serde_json::{Map, Number, Value, json};

/// The dialect this module understands; a schema may name it in `$schema` or leave it out.
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A compiled schema: the built-in fast path when the schema allows it, and the general
/// validator, compiled eagerly or on first need.
pub(crate) struct SchemaValidator {
    schema: Value,
    fast: Option<Node>,
    general: OnceLock<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("fast_path", &self.fast.is_some())
            .field("general_compiled", &self.general.get().is_some())
            .finish()
    }
}

impl SchemaValidator {
    /// Compiles `schema`. A schema outside the built-in subset is compiled (and checked
    /// against its meta-schema) by the general validator now; its error is returned.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        let fast = compile_root(schema);
        let general = OnceLock::new();
        if fast.is_none() {
            let compiled = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
            let _ = general.set(Ok(compiled));
        }
        Ok(Self {
            schema: schema.clone(),
            fast,
            general,
        })
    }

    /// Whether the built-in subset validator handles this schema.
    #[cfg(test)]
    pub(crate) fn is_fast(&self) -> bool {
        self.fast.is_some()
    }

    fn general(&self) -> Result<&jsonschema::Validator, &str> {
        self.general
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether `instance` satisfies the schema.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        if let Some(fast) = &self.fast
            && fast.accepts(instance)
        {
            return true;
        }
        match self.general() {
            Ok(validator) => validator.is_valid(instance),
            // Unreachable for schemas the subset accepts (a test checks that every one of
            // them compiles); refusing is the safe answer.
            Err(_) => false,
        }
    }

    /// Every violation of the schema by `instance` (at most 64), as
    /// `{pointer, rule, schema_path, message}` objects. An `anyOf`/`oneOf` that no branch
    /// matched is reported as specifically as the branches allow (see [`push_violation`]).
    pub(crate) fn violations(&self, instance: &Value) -> Vec<Value> {
        match self.general() {
            Ok(validator) => {
                let mut out = Vec::new();
                for error in validator.iter_errors(instance) {
                    push_violation(&error, &mut out);
                    if out.len() >= MAX_VIOLATIONS {
                        break;
                    }
                }
                out.truncate(MAX_VIOLATIONS);
                out
            }
            Err(reason) => vec![json!({
                "pointer": "",
                "rule": "schema",
                "schema_path": "",
                "message": format!("the schema could not be compiled: {reason}"),
            })],
        }
    }
}

/// The most violations reported for one instance.
const MAX_VIOLATIONS: usize = 64;

/// A JSON Schema compiled by the same validator the registry uses for tool arguments, for
/// callers that check a value against a schema outside a registration (the Python
/// package's `quality.validation`).
#[derive(Debug)]
pub struct CompiledSchema(SchemaValidator);

impl CompiledSchema {
    /// Compiles `schema` (2020-12 unless it names another dialect in `$schema`); a schema
    /// that is not valid against its meta-schema is refused with the reason.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        SchemaValidator::new(schema).map(Self)
    }

    /// Whether `instance` satisfies the schema.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.0.is_valid(instance)
    }

    /// Every violation by `instance` (at most 64), as `{pointer, rule, schema_path,
    /// message}` objects; empty when it is valid.
    pub fn violations(&self, instance: &Value) -> Vec<Value> {
        if self.0.is_valid(instance) {
            return Vec::new();
        }
        self.0.violations(instance)
    }
}

fn violation(error: &jsonschema::ValidationError<'_>, rule: &str, message: String) -> Value {
    json!({
        "pointer": error.instance_path().to_string(),
        "rule": rule,
        "schema_path": error.schema_path().to_string(),
        "message": message,
    })
}

/// Adds `error` to `out`. An `anyOf` or `oneOf` that matched no branch says only "not valid
/// under any of the schemas", so it is made specific. The branches that the value failed by
/// type alone are the ones it was not meant for:
///
/// - if one branch is left, its own violations are reported: `-1` for an `Option<u32>`
///   (`anyOf: [{type: integer, minimum: 0}, {type: null}]`) is "less than the minimum of 0";
/// - if none is left, the violation names the types that would do: `"abc" is not of type
///   "integer" or "null"`;
/// - if every branch left failed on a `const` alone (a Rust enum), it lists the constants.
fn push_violation(error: &jsonschema::ValidationError<'_>, out: &mut Vec<Value>) {
    use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
    let context = match error.kind() {
        Kind::AnyOf { context } | Kind::OneOfNotValid { context } => context,
        kind => {
            out.push(violation(error, kind.keyword(), error.to_string()));
            return;
        }
    };
    let here = error.instance_path();
    let only = |branch: &Vec<jsonschema::ValidationError<'static>>, keyword: &str| {
        !branch.is_empty()
            && branch
                .iter()
                .all(|e| e.kind().keyword() == keyword && e.instance_path() == here)
    };
    let meant: Vec<_> = context.iter().filter(|b| !only(b, "type")).collect();
    match meant.as_slice() {
        [branch] => {
            for e in branch.iter() {
                push_violation(e, out);
            }
        }
        [] => {
            let mut types: Vec<String> = Vec::new();
            for e in context.iter().flatten() {
                if let Kind::Type { kind } = e.kind() {
                    let names: Vec<String> = match kind {
                        TypeKind::Single(t) => vec![t.to_string()],
                        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
                    };
                    for name in names {
                        if !types.contains(&name) {
                            types.push(name);
                        }
                    }
                }
            }
            let expected: Vec<String> = types.iter().map(|t| format!("\"{t}\"")).collect();
            let message = format!(
                "{} is not of type {}",
                error.instance(),
                expected.join(" or ")
            );
            out.push(violation(error, "type", message));
        }
        branches if branches.iter().all(|b| only(b, "const")) => {
            let constants: Vec<String> = branches
                .iter()
                .flat_map(|b| b.iter())
                .filter_map(|e| match e.kind() {
                    Kind::Constant { expected_value } => Some(expected_value.to_string()),
                    _ => None,
                })
                .collect();
            let message = format!(
                "{} is not one of {}",
                error.instance(),
                constants.join(", ")
            );
            out.push(violation(error, "enum", message));
        }
        _ => out.push(violation(error, error.kind().keyword(), error.to_string())),
    }
}

/// One compiled schema of the subset.
#[derive(Debug, Default)]
struct Node {
    /// The `false` schema: nothing is valid.
    never: bool,
    types: Option<u8>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional_properties: Option<Box<Node>>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    items: Option<Box<Node>>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
}

const T_NULL: u8 = 1;
const T_BOOLEAN: u8 = 2;
const T_OBJECT: u8 = 4;
const T_ARRAY: u8 = 8;
const T_NUMBER: u8 = 16;
const T_INTEGER: u8 = 32;
const T_STRING: u8 = 64;

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOLEAN,
        "object" => T_OBJECT,
        "array" => T_ARRAY,
        "number" => T_NUMBER,
        "integer" => T_INTEGER,
        "string" => T_STRING,
        _ => return None,
    })
}

/// The types `instance` may have; a number may be an integer.
fn type_bits(instance: &Value) -> u8 {
    match instance {
        Value::Null => T_NULL,
        Value::Bool(_) => T_BOOLEAN,
        Value::Object(_) => T_OBJECT,
        Value::Array(_) => T_ARRAY,
        Value::String(_) => T_STRING,
        Value::Number(_) => T_NUMBER | T_INTEGER,
    }
}

/// The root: like any subschema, but `$schema` may name the 2020-12 dialect.
fn compile_root(schema: &Value) -> Option<Node> {
    if let Value::Object(map) = schema
        && let Some(dialect) = map.get("$schema")
        && dialect.as_str().map(|d| d.trim_end_matches('#')) != Some(DIALECT_2020_12)
    {
        return None;
    }
    compile(schema, true)
}

/// Compiles a schema of the subset, or `None` if anything in it is outside the subset or not
/// well-formed (the general validator then takes it, and reports what is wrong).
fn compile(schema: &Value, root: bool) -> Option<Node> {
    let map = match schema {
        Value::Bool(true) => return Some(Node::default()),
        Value::Bool(false) => {
            return Some(Node {
                never: true,
                ..Node::default()
            });
        }
        Value::Object(map) => map,
        _ => return None,
    };
    let mut node = Node::default();
    for (keyword, value) in map {
        match keyword.as_str() {
            "$schema" if root => {}
            "title" | "description" | "$comment" | "format" => {
                value.as_str()?;
            }
            "deprecated" | "readOnly" | "writeOnly" => {
                value.as_bool()?;
            }
            "default" => {}
            "examples" => {
                value.as_array()?;
            }
            "type" => node.types = Some(compile_types(value)?),
            "enum" => node.enumeration = Some(value.as_array()?.clone()),
            "const" => node.constant = Some(value.clone()),
            "minLength" => node.min_length = Some(value.as_u64()?),
            "maxLength" => node.max_length = Some(value.as_u64()?),
            "minProperties" => node.min_properties = Some(value.as_u64()?),
            "maxProperties" => node.max_properties = Some(value.as_u64()?),
            "minItems" => node.min_items = Some(value.as_u64()?),
            "maxItems" => node.max_items = Some(value.as_u64()?),
            "minimum" => node.minimum = Some(number(value)?),
            "maximum" => node.maximum = Some(number(value)?),
            "exclusiveMinimum" => node.exclusive_minimum = Some(number(value)?),
            "exclusiveMaximum" => node.exclusive_maximum = Some(number(value)?),
            "properties" => {
                node.properties = value
                    .as_object()?
                    .iter()
                    .map(|(k, v)| Some((k.clone(), compile(v, false)?)))
                    .collect::<Option<_>>()?;
            }
            "required" => {
                let names = value.as_array()?;
                let mut required = Vec::with_capacity(names.len());
                for name in names {
                    let name = name.as_str()?;
                    if required.iter().any(|r: &String| r == name) {
                        return None; // the meta-schema wants them unique
                    }
                    required.push(name.to_owned());
                }
                node.required = required;
            }
            "additionalProperties" => {
                node.additional_properties = Some(Box::new(compile(value, false)?));
            }
            "items" => node.items = Some(Box::new(compile(value, false)?)),
            "allOf" => node.all_of = compile_list(value)?,
            "anyOf" => node.any_of = compile_list(value)?,
            "oneOf" => node.one_of = compile_list(value)?,
            _ => return None,
        }
    }
    Some(node)
}

fn compile_types(value: &Value) -> Option<u8> {
    match value {
        Value::String(name) => type_bit(name),
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0u8;
            for name in names {
                let bit = type_bit(name.as_str()?)?;
                if bits & bit != 0 {
                    return None; // the meta-schema wants them unique
                }
                bits |= bit;
            }
            Some(bits)
        }
        _ => None,
    }
}

fn compile_list(value: &Value) -> Option<Vec<Node>> {
    let list = value.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter().map(|s| compile(s, false)).collect()
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

/// `a` compared with `b`, exactly for integers and as `f64` otherwise; `None` when either is
/// not finite.
fn compare(a: &Number, b: &Number) -> Option<std::cmp::Ordering> {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

impl Node {
    /// Whether `instance` certainly satisfies this schema. `false` means "not shown valid".
    fn accepts(&self, instance: &Value) -> bool {
        use std::cmp::Ordering::{Greater, Less};
        if self.never {
            return false;
        }
        if let Some(types) = self.types {
            // An integer literal is both; `1.0` is left to the general validator.
            let bit = match instance {
                Value::Number(n) if !(n.is_i64() || n.is_u64()) => T_NUMBER,
                _ => type_bits(instance),
            };
            if types & bit == 0 {
                return false;
            }
        }
        if let Some(values) = &self.enumeration
            && !values.contains(instance)
        {
            return false;
        }
        if let Some(value) = &self.constant
            && value != instance
        {
            return false;
        }
        let ok = match instance {
            Value::String(s) => self.accepts_string(s),
            Value::Number(n) => {
                let holds = |bound: &Option<Number>, fails: &[std::cmp::Ordering]| {
                    bound
                        .as_ref()
                        .is_none_or(|b| compare(n, b).is_some_and(|o| !fails.contains(&o)))
                };
                holds(&self.minimum, &[Less])
                    && holds(&self.maximum, &[Greater])
                    && holds(&self.exclusive_minimum, &[Less, std::cmp::Ordering::Equal])
                    && holds(
                        &self.exclusive_maximum,
                        &[Greater, std::cmp::Ordering::Equal],
                    )
            }
            Value::Object(map) => self.accepts_object(map),
            Value::Array(items) => {
                let n = items.len() as u64;
                self.min_items.is_none_or(|m| n >= m)
                    && self.max_items.is_none_or(|m| n <= m)
                    && self
                        .items
                        .as_ref()
                        .is_none_or(|schema| items.iter().all(|i| schema.accepts(i)))
            }
            Value::Null | Value::Bool(_) => true,
        };
        ok && self.all_of.iter().all(|s| s.accepts(instance))
            && (self.any_of.is_empty() || self.any_of.iter().any(|s| s.accepts(instance)))
            && (self.one_of.is_empty() || self.accepts_one_of(instance))
    }

    /// `oneOf` needs exactly one branch valid: one branch must accept and every other one
    /// must surely reject (as the string `const`s and `enum`s of a Rust enum's schema do).
    fn accepts_one_of(&self, instance: &Value) -> bool {
        let mut accepted = 0;
        for branch in &self.one_of {
            if branch.accepts(instance) {
                accepted += 1;
                if accepted > 1 {
                    return false;
                }
            } else if !branch.surely_rejects(instance) {
                return false;
            }
        }
        accepted == 1
    }

    /// Whether `instance` is certainly invalid, judged by the checks that are exact: the
    /// `false` schema, a type other than a number, and string `const`s and `enum`s.
    fn surely_rejects(&self, instance: &Value) -> bool {
        if self.never {
            return true;
        }
        if let Some(types) = self.types {
            // Whether `1.0` is an integer is the general validator's call: any number may be.
            if types & type_bits(instance) == 0 {
                return true;
            }
        }
        // Equality with a string is exact: only that same string equals it.
        if let Some(Value::String(c)) = &self.constant
            && instance.as_str() != Some(c.as_str())
        {
            return true;
        }
        if let Some(values) = &self.enumeration
            && values.iter().all(Value::is_string)
            && !values.contains(instance)
        {
            return true;
        }
        false
    }

    fn accepts_string(&self, s: &str) -> bool {
        if self.min_length.is_none() && self.max_length.is_none() {
            return true;
        }
        // Lengths count code points, as JSON Schema does.
        let n = s.chars().count() as u64;
        self.min_length.is_none_or(|m| n >= m) && self.max_length.is_none_or(|m| n <= m)
    }

    fn accepts_object(&self, map: &Map<String, Value>) -> bool {
        let n = map.len() as u64;
        if self.min_properties.is_some_and(|m| n < m) || self.max_properties.is_some_and(|m| n > m)
        {
            return false;
        }
        if !self.required.iter().all(|r| map.contains_key(r)) {
            return false;
        }
        for (key, value) in map {
            let schema = match self.properties.iter().find(|(k, _)| k == key) {
                Some((_, schema)) => Some(schema),
                None => self.additional_properties.as_deref(),
            };
            if let Some(schema) = schema
                && !schema.accepts(value)
            {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fast(schema: Value) -> SchemaValidator {
        let v = SchemaValidator::new(&schema).unwrap();
        assert!(v.is_fast(), "expected the fast path for {schema}");
        v
    }

    #[test]
    fn compiled_schema_is_the_registry_validator_for_outside_callers() {
        // A subset schema (fast path) and one outside it (draft 7, `pattern`).
        let subset = CompiledSchema::compile(&json!({
            "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]
        }))
        .unwrap();
        assert!(subset.is_valid(&json!({"n": 2})));
        assert!(subset.violations(&json!({"n": 2})).is_empty());
        let found = subset.violations(&json!({"n": 0}));
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0]["pointer"].as_str(), found[0]["rule"].as_str()),
            (Some("/n"), Some("minimum"))
        );
        let draft7 = CompiledSchema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array", "items": [{"type": "string", "pattern": "^a"}]
        }))
        .unwrap();
        assert!(draft7.is_valid(&json!(["ab", 3])));
        assert_eq!(
            draft7.violations(&json!(["b"]))[0]["rule"].as_str(),
            Some("pattern")
        );
        assert!(CompiledSchema::compile(&json!({"type": "object", "minProperties": "x"})).is_err());
    }

    #[test]
    fn common_tool_schemas_take_the_fast_path_and_skip_the_general_compiler() {
        let v = fast(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "what to echo", "minLength": 1},
                "count": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "mode": {"enum": ["a", "b"], "default": "a"},
            },
            "required": ["text"],
            "additionalProperties": false,
        }));
        assert!(v.is_valid(&json!({"text": "hi", "count": 3, "tags": ["x"], "mode": "b"})));
        assert!(v.general.get().is_none(), "a valid call compiled nothing");
        assert!(!v.is_valid(&json!({"text": ""})));
        assert!(!v.is_valid(&json!({"text": "x", "extra": 1})));
        assert!(!v.is_valid(&json!({"text": "x", "count": -1})));
        assert!(!v.is_valid(&json!({"text": "x", "tags": ["a", "b", "c", "d"]})));
        assert!(!v.is_valid(&json!({"text": "x", "mode": "c"})));
        assert!(!v.is_valid(&json!({})));
        assert!(
            v.general.get().is_some(),
            "a rejection consulted the general validator"
        );
    }

    #[test]
    fn rust_enum_schemas_take_the_fast_path() {
        let v = fast(json!({
            "type": "object",
            "properties": {"algorithm": {"anyOf": [
                {"oneOf": [
                    {"const": "sha256", "type": "string", "description": "SHA-256."},
                    {"const": "sha512", "type": "string"},
                ]},
                {"type": "null"},
            ]}},
        }));
        assert!(v.is_valid(&json!({"algorithm": "sha512"})));
        assert!(v.is_valid(&json!({"algorithm": null})));
        assert!(v.general.get().is_none(), "valid calls compiled nothing");
        assert!(!v.is_valid(&json!({"algorithm": "md5"})));
        // Both branches valid: oneOf fails, and the fast path must not say otherwise.
        let both = fast(json!({"oneOf": [{"type": "string"}, {"minLength": 1}]}));
        assert!(!both.is_valid(&json!("x")));
        assert!(both.is_valid(&json!(3)));
    }

    #[test]
    fn a_fast_rejection_is_rechecked_by_the_general_validator() {
        // 2020-12 counts 1.0 as an integer; the fast path leaves that to jsonschema.
        let v = fast(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert!(v.is_valid(&json!({"n": 1.0})));
        assert!(!v.is_valid(&json!({"n": 1.5})));
    }

    #[test]
    fn violations_come_from_the_general_validator() {
        let v = fast(json!({"type": "object", "required": ["a"]}));
        let list = v.violations(&json!({}));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["rule"], "required");
    }

    #[test]
    fn unmatched_any_of_and_one_of_are_reported_specifically() {
        let v = fast(json!({"type": "object", "properties": {
            "n": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
            "e": {"anyOf": [
                {"oneOf": [{"type": "string", "const": "text"}, {"type": "string", "const": "base64"}]},
                {"type": "null"},
            ]},
            "u": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer", "minimum": 5}]},
        }}));
        let one = |instance: Value| {
            let list = v.violations(&instance);
            assert_eq!(list.len(), 1, "{instance}: {list:?}");
            list.into_iter().next().unwrap()
        };
        // Wrong type for every branch: the types that would do.
        let r = one(json!({"n": "abc"}));
        assert_eq!(r["rule"], "type");
        assert_eq!(r["pointer"], "/n");
        assert_eq!(r["message"], r#""abc" is not of type "integer" or "null""#);
        // The right type, out of bounds: that branch's own violation.
        let r = one(json!({"n": -1}));
        assert_eq!(r["rule"], "minimum");
        assert_eq!(r["pointer"], "/n");
        assert_eq!(r["schema_path"], "/properties/n/anyOf/0/minimum");
        // Not one of an enum's constants: the constants.
        let r = one(json!({"e": "utf8"}));
        assert_eq!(r["rule"], "enum");
        assert_eq!(r["message"], r#""utf8" is not one of "text", "base64""#);
        // A branch failed by type *and* by a bound was meant: both are reported.
        let rules: Vec<Value> = v
            .violations(&json!({"u": 2.5}))
            .into_iter()
            .map(|r| r["rule"].clone())
            .collect();
        assert_eq!(rules, [json!("type"), json!("minimum")]);
        let r = one(json!({"u": "ab"}));
        assert_eq!(r["rule"], "minLength");
        let r = one(json!({"u": 3}));
        assert_eq!(r["rule"], "minimum");
        // Two branches meant for the value, failed differently: jsonschema's own words.
        let w = fast(
            json!({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "number", "maximum": 1}]}),
        );
        let list = w.violations(&json!(3));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["rule"], "anyOf");
    }

    #[test]
    fn schemas_outside_the_subset_compile_eagerly_and_bad_ones_are_refused() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
            json!({"type": "object", "$defs": {"a": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/a"}}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            json!({"type": "object", "not": {"required": ["a"]}}),
        ] {
            let v = SchemaValidator::new(&schema).unwrap();
            assert!(!v.is_fast(), "{schema}");
            assert!(v.general.get().is_some(), "{schema}");
        }
        for bad in [
            json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
            json!({"type": "object", "required": "a"}),
            json!({"type": "object", "required": ["a", "a"]}),
            json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
            json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
            json!({"type": "object", "anyOf": []}),
        ] {
            assert!(SchemaValidator::new(&bad).is_err(), "{bad} was accepted");
        }
    }

    fn arb_instance() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..5).prop_map(Value::from),
            prop_oneof![Just(1.0f64), Just(-0.5), Just(2.5), Just(3.0)].prop_map(Value::from),
            "[ab]{0,3}".prop_map(Value::from),
            Just(Value::from("é✓")),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[abc]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_schema() -> impl Strategy<Value = Value> {
        let type_name = prop::sample::select(vec![
            "null", "boolean", "object", "array", "number", "integer", "string",
        ]);
        let leaf = prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            type_name.clone().prop_map(|t| json!({"type": t})),
            prop::collection::btree_set(type_name, 1..3)
                .prop_map(|t| json!({"type": t.into_iter().collect::<Vec<_>>()})),
            (0u64..3).prop_map(|n| json!({"minLength": n})),
            (0u64..3).prop_map(|n| json!({"maxLength": n})),
            (0u64..3).prop_map(|n| json!({"minItems": n, "maxProperties": n})),
            (-3i64..3).prop_map(|n| json!({"minimum": n})),
            prop_oneof![Just(json!(2.5)), Just(json!(-1)), Just(json!(3.0))]
                .prop_map(|n| json!({"exclusiveMaximum": n})),
            arb_instance().prop_map(|v| json!({"const": v})),
            prop::collection::vec(arb_instance(), 0..3).prop_map(|v| json!({"enum": v})),
            prop::collection::btree_set("[abc]", 0..3)
                .prop_map(|r| json!({"required": r.into_iter().collect::<Vec<_>>()})),
        ];
        leaf.prop_recursive(3, 24, 3, |inner| {
            prop_oneof![
                prop::collection::btree_map("[abc]", inner.clone(), 0..3)
                    .prop_map(|p| json!({"properties": p})),
                inner
                    .clone()
                    .prop_map(|s| json!({"additionalProperties": s})),
                inner.clone().prop_map(|s| json!({"items": s})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|l| json!({"allOf": l})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|l| json!({"anyOf": l})),
                prop::collection::vec(inner.clone(), 1..4).prop_map(|l| json!({"oneOf": l})),
                prop::collection::vec("[ab]{0,2}", 1..4).prop_map(|c| {
                    // A Rust enum's schema, as schemars writes it.
                    let branches: Vec<Value> = c
                        .iter()
                        .map(|c| json!({"type": "string", "const": c}))
                        .collect();
                    json!({"oneOf": branches})
                }),
                (inner.clone(), inner).prop_map(|(a, b)| {
                    // Two keywords in one object, as real schemas have.
                    let mut m = a.as_object().cloned().unwrap_or_default();
                    if let Value::Object(b) = b {
                        m.extend(b);
                    }
                    Value::Object(m)
                }),
            ]
        })
    }

    /// `oneOf` over small branches that often overlap, and numbers such as `1.0` that the
    /// fast path leaves to the general validator: where a wrong "surely rejects" would show.
    fn arb_one_of() -> impl Strategy<Value = Value> {
        let branch = prop::sample::select(vec![
            json!({"type": "integer"}),
            json!({"type": "number"}),
            json!({"type": "string"}),
            json!({"type": ["string", "null"]}),
            json!({"const": 1}),
            json!({"const": "a"}),
            json!({"enum": ["a", "b"]}),
            json!({"enum": ["a", 1]}),
            json!({"minimum": 1}),
            json!({"minLength": 1}),
            json!(true),
            json!(false),
        ]);
        prop::collection::vec(branch, 1..4).prop_map(|b| json!({"oneOf": b}))
    }

    fn arb_scalar() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![
            json!(null),
            json!(1),
            json!(1.0),
            json!(0),
            json!(2.5),
            json!("a"),
            json!("b"),
            json!(""),
            json!(true),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn one_of_is_accepted_only_when_exactly_one_branch_holds(
            schema in arb_one_of(),
            instance in arb_scalar(),
        ) {
            let node = compile_root(&schema).unwrap();
            let general = jsonschema::validator_for(&schema).unwrap();
            if node.accepts(&instance) {
                prop_assert!(general.is_valid(&instance), "schema {schema} instance {instance}");
            }
        }

        /// Soundness: whatever the fast path accepts, `jsonschema` accepts; and every schema
        /// the subset takes compiles under `jsonschema`.
        #[test]
        fn the_fast_path_never_accepts_what_jsonschema_rejects(
            schema in arb_schema(),
            instances in prop::collection::vec(arb_instance(), 1..6),
        ) {
            let Some(node) = compile_root(&schema) else { return Ok(()) };
            let general = jsonschema::validator_for(&schema);
            prop_assert!(general.is_ok(), "{schema} is in the subset but does not compile: {:?}", general.err());
            let general = general.unwrap();
            for instance in &instances {
                if node.accepts(instance) {
                    prop_assert!(general.is_valid(instance), "schema {schema} instance {instance}");
                }
                let v = SchemaValidator::new(&schema).unwrap();
                prop_assert_eq!(v.is_valid(instance), general.is_valid(instance));
            }
        }
    }
}
