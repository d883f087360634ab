//! Rewrites generated tool schemas into the spelling that every client reads.
//!
//! schemars writes `Option<T>` as `"type": ["integer", "null"]` and `serde_json::Value` as a
//! bare `true`. Both are valid JSON Schema 2020-12, but clients that map tool schemas onto a
//! narrower dialect (the OpenAPI subset behind Gemini's function declarations, OpenAI's
//! strict mode) reject or mangle them, and MCP Inspector reports them as portability
//! warnings and, for `true`, an error. [`make_portable`] rewrites:
//!
//! - a `type` array into `anyOf` branches with one `type` each, moving every keyword that
//!   constrains a value into the branches it applies to (so `minimum` goes with `integer`,
//!   never with `null`) and keeping annotations (`description`, `default`, ...) outside. This
//!   is the shape Pydantic gives `Optional[int]`.
//! - a bare `true`, or an object with no constraining keyword, in a schema position into an
//!   explicit "any JSON value": `anyOf` over the six JSON types, with its annotations kept.
//!   In `additionalProperties` and the like, where a boolean is the usual spelling, `{}`
//!   becomes `true` instead.
//! - a bare `false` into `{"not": {}}`.
//! - a `format` that JSON Schema does not define into what it means: schemars's numeric
//!   formats (`uint32`, `int64`, `uint`, `double`, ...) become the `minimum`/`maximum` of the
//!   Rust integer type, written as exact JSON integers (up to 64 bits; a 128-bit type keeps
//!   only `minimum: 0` if unsigned, as its bounds do not fit the integers serde_json holds),
//!   and `float`/`double` nothing; any other format JSON Schema does not define is dropped.
//!   MCP Inspector warns on every `tools/call` of a tool whose output schema names one.
//!
//! Each rewrite accepts exactly the values the original accepted, a numeric format read as
//! the range of its Rust type (as schemars means it) and unknown formats as asserting nothing. This is applied to the
//! schemas that `#[mcp_tool]` generates, never to a schema a user wrote by hand.

use serde_json::{Map, Value, json};

/// Deeper schemas are left as they are (generated schemas are far shallower).
const MAX_DEPTH: usize = 128;

/// The JSON Schema type names.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// Keywords that stay on the outer schema when a `type` array is split: annotations,
/// identifiers and definitions.
const OUTER: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$vocabulary",
    "$defs",
    "definitions",
];

/// Keywords that constrain values (as MCP Inspector counts them): a schema with none of these
/// accepts everything.
const CONSTRAINING: &[&str] = &[
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "dependencies",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
];

/// The types a keyword constrains, when it constrains only some.
fn applies_only_to(keyword: &str) -> Option<&'static [&'static str]> {
    Some(match keyword {
        "multipleOf" | "maximum" | "exclusiveMaximum" | "minimum" | "exclusiveMinimum" => {
            &["number", "integer"]
        }
        "maxLength" | "minLength" | "pattern" | "contentMediaType" | "contentEncoding"
        | "contentSchema" => &["string"],
        "items" | "prefixItems" | "contains" | "maxContains" | "minContains" | "maxItems"
        | "minItems" | "uniqueItems" | "additionalItems" | "unevaluatedItems" => &["array"],
        "properties"
        | "patternProperties"
        | "additionalProperties"
        | "unevaluatedProperties"
        | "propertyNames"
        | "required"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies"
        | "maxProperties"
        | "minProperties" => &["object"],
        // Every defined format describes a non-null value (schemars puts `uint32` on integers).
        "format" => &["boolean", "object", "array", "number", "string", "integer"],
        _ => return None,
    })
}

/// The formats JSON Schema 2020-12 defines; every other one is rewritten or dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The bounds of schemars's numeric format `format`, as exact JSON integers:
/// `(minimum, maximum)`. `None` for a format that is not numeric.
fn numeric_format_bounds(format: &str) -> Option<(Option<Value>, Option<Value>)> {
    fn b(min: impl Into<Value>, max: impl Into<Value>) -> (Option<Value>, Option<Value>) {
        (Some(min.into()), Some(max.into()))
    }
    Some(match format {
        "int8" => b(i8::MIN, i8::MAX),
        "int16" => b(i16::MIN, i16::MAX),
        "int32" => b(i32::MIN, i32::MAX),
        "int64" => b(i64::MIN, i64::MAX),
        "int" => b(isize::MIN as i64, isize::MAX as i64),
        "uint8" => b(0, u8::MAX),
        "uint16" => b(0, u16::MAX),
        "uint32" => b(0, u32::MAX),
        "uint64" => b(0, u64::MAX),
        "uint" => b(0, usize::MAX as u64),
        "uint128" => (Some(0.into()), None),
        "int128" | "float" | "double" => (None, None),
        _ => return None,
    })
}

/// Whether `a <= b`, exactly for integers.
fn le(a: &serde_json::Number, b: &serde_json::Number) -> Option<bool> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return Some(a <= b);
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return Some(a <= b);
    }
    // One is negative and the other past i64::MAX, or one is a float.
    match (a.as_i64(), b.as_u64(), a.as_u64(), b.as_i64()) {
        (Some(_), Some(_), _, _) => Some(true),
        (_, _, Some(_), Some(_)) => Some(false),
        _ => Some(a.as_f64()? <= b.as_f64()?),
    }
}

/// Replaces a non-standard `format` with the bounds it stands for, or drops it.
fn standard_format(map: &mut Map<String, Value>) {
    let Some(Value::String(format)) = map.get("format") else {
        return;
    };
    if STANDARD_FORMATS.contains(&format.as_str()) {
        return;
    }
    let bounds = numeric_format_bounds(format);
    map.remove("format");
    let Some((minimum, maximum)) = bounds else {
        return;
    };
    // Keep a bound that is already as tight (or that is not a number: not ours to fix).
    for (keyword, bound, tighter) in [("minimum", minimum, false), ("maximum", maximum, true)] {
        let Some(Value::Number(bound)) = bound else {
            continue;
        };
        let keep = match map.get(keyword) {
            None => false,
            Some(Value::Number(old)) if tighter => le(old, &bound).unwrap_or(true),
            Some(Value::Number(old)) => le(&bound, old).unwrap_or(true),
            Some(_) => true,
        };
        if !keep {
            map.insert(keyword.into(), Value::Number(bound));
        }
    }
}

/// Where a subschema sits, which decides what its portable spelling is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    /// Anywhere a schema object is expected.
    Schema,
    /// `additionalProperties` and its kin, where `true` and `false` are the usual spelling.
    BooleanValued,
    /// Under `not`, where `{}` is the idiom (`"not": {}` rejects everything).
    Not,
}

/// Rewrites `schema` in place into its portable spelling (see the module docs).
pub(crate) fn make_portable(schema: &mut Value) {
    visit(schema, Position::Schema, 0);
}

fn visit(schema: &mut Value, position: Position, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match schema {
        Value::Bool(accepts) if position == Position::Schema => {
            *schema = if *accepts {
                any_value(Map::new())
            } else {
                json!({"not": {}})
            };
        }
        Value::Object(map) => {
            standard_format(map);
            split_type_union(map);
            if !constrains(map) {
                match position {
                    Position::Not => {}
                    Position::BooleanValued if map.is_empty() => {
                        *schema = Value::Bool(true);
                        return;
                    }
                    Position::Schema | Position::BooleanValued => {
                        *schema = any_value(std::mem::take(map));
                    }
                }
            }
            if let Value::Object(map) = schema {
                visit_children(map, depth);
            }
        }
        _ => {}
    }
}

fn visit_children(map: &mut Map<String, Value>, depth: usize) {
    for (keyword, value) in map.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" => {
                if let Value::Object(members) = value {
                    for member in members.values_mut() {
                        // Draft-07 `dependencies` may hold arrays of names: not schemas.
                        if !member.is_array() {
                            visit(member, Position::Schema, depth + 1);
                        }
                    }
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(items) = value {
                    for item in items {
                        visit(item, Position::Schema, depth + 1);
                    }
                }
            }
            "items" => match value {
                Value::Array(items) => {
                    for item in items {
                        visit(item, Position::Schema, depth + 1);
                    }
                }
                _ => visit(value, Position::Schema, depth + 1),
            },
            "contains" | "propertyNames" | "if" | "then" | "else" | "contentSchema" => {
                visit(value, Position::Schema, depth + 1);
            }
            "additionalProperties"
            | "unevaluatedProperties"
            | "additionalItems"
            | "unevaluatedItems" => visit(value, Position::BooleanValued, depth + 1),
            "not" => visit(value, Position::Not, depth + 1),
            _ => {}
        }
    }
}

/// Whether the schema constrains its instance at all.
fn constrains(map: &Map<String, Value>) -> bool {
    map.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
        || (map.contains_key("if") && (map.contains_key("then") || map.contains_key("else")))
}

/// "Any JSON value", spelled with one `type` per branch, keeping `annotations`.
fn any_value(mut annotations: Map<String, Value>) -> Value {
    annotations.insert(
        "anyOf".into(),
        json!([
            {"type": "object"},
            {"type": "array"},
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ]),
    );
    Value::Object(annotations)
}

/// `{"type": [A, B], ...}` becomes `{"anyOf": [{"type": A, ...}, {"type": B, ...}]}`, each
/// branch keeping the keywords that apply to its type. A one-element array becomes a string.
/// A `type` that is not an array of distinct type names is left alone.
fn split_type_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let mut names: Vec<&'static str> = Vec::with_capacity(types.len());
    for t in types {
        let Some(name) = t.as_str().and_then(|t| TYPES.iter().find(|n| **n == t)) else {
            return;
        };
        if names.contains(name) {
            return;
        }
        names.push(name);
    }
    match names.as_slice() {
        [] => {}
        [one] => {
            map.insert("type".into(), Value::String((*one).into()));
        }
        _ => {
            map.remove("type");
            let (outer, constraints): (Map<String, Value>, Map<String, Value>) =
                std::mem::take(map)
                    .into_iter()
                    .partition(|(k, _)| OUTER.contains(&k.as_str()));
            let branches = names
                .iter()
                .map(|name| {
                    let mut branch = Map::new();
                    branch.insert("type".into(), Value::String((*name).into()));
                    for (k, v) in &constraints {
                        let applies = applies_only_to(k).is_none_or(|types| {
                            types.contains(name)
                                || (*name == "integer" && types.contains(&"number"))
                        });
                        if applies {
                            branch.insert(k.clone(), v.clone());
                        }
                    }
                    Value::Object(branch)
                })
                .collect();
            *map = outer;
            map.insert("anyOf".into(), Value::Array(branches));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn portable(mut schema: Value) -> Value {
        make_portable(&mut schema);
        schema
    }

    #[test]
    fn nullable_types_become_any_of_with_constraints_in_their_branch() {
        assert_eq!(
            portable(json!({
                "description": "How many.",
                "default": null,
                "type": ["integer", "null"],
                "format": "uint32",
                "minimum": 1,
                "maximum": 500,
            })),
            json!({
                "description": "How many.",
                "default": null,
                "anyOf": [
                    {"type": "integer", "minimum": 1, "maximum": 500},
                    {"type": "null"},
                ],
            })
        );
    }

    #[test]
    fn non_standard_formats_become_bounds_or_go() {
        let cases = [
            (
                json!({"type": "integer", "format": "uint8", "minimum": 0}),
                json!({"type": "integer", "minimum": 0, "maximum": 255}),
            ),
            (
                json!({"type": "integer", "format": "int32"}),
                json!({"type": "integer", "minimum": -2147483648, "maximum": 2147483647}),
            ),
            (
                json!({"type": "integer", "format": "uint32", "minimum": 1, "maximum": 500}),
                json!({"type": "integer", "minimum": 1, "maximum": 500}),
            ),
            (
                json!({"type": "integer", "format": "uint64", "minimum": 0}),
                json!({"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64}),
            ),
            (
                json!({"type": "integer", "format": "int64"}),
                json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}),
            ),
            (
                json!({"type": "integer", "format": "uint128", "minimum": 0}),
                json!({"type": "integer", "minimum": 0}),
            ),
            (
                json!({"type": "number", "format": "double"}),
                json!({"type": "number"}),
            ),
            (
                json!({"type": "number", "format": "float"}),
                json!({"type": "number"}),
            ),
            (
                json!({"type": "string", "format": "ip"}),
                json!({"type": "string"}),
            ),
            (
                json!({"type": "string", "format": "date-time"}),
                json!({"type": "string", "format": "date-time"}),
            ),
            (
                json!({"type": "string", "format": "uuid"}),
                json!({"type": "string", "format": "uuid"}),
            ),
        ];
        for (before, after) in cases {
            assert_eq!(portable(before.clone()), after, "{before}");
        }
    }

    /// The formats of real schemars output: none but the standard ones survive.
    #[test]
    fn generated_schemas_name_only_standard_formats() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Numbers {
            a: u8,
            b: u16,
            c: u32,
            d: u64,
            e: usize,
            f: i8,
            g: i32,
            h: i64,
            i: isize,
            j: f32,
            k: f64,
            l: Option<u64>,
            m: Vec<u32>,
            n: std::net::IpAddr,
        }
        let mut schema = schemars::schema_for!(Numbers).to_value();
        let before = schema.to_string();
        assert!(before.contains("\"uint64\""), "{before}");
        make_portable(&mut schema);
        let mut formats = Vec::new();
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(f)) = m.get("format") {
                        out.push(f.clone());
                    }
                    m.values().for_each(|v| walk(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        walk(&schema, &mut formats);
        assert!(
            formats
                .iter()
                .all(|f| STANDARD_FORMATS.contains(&f.as_str())),
            "{formats:?} in {schema}"
        );
        assert_eq!(
            schema["properties"]["d"],
            json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
        );
    }

    #[test]
    fn each_branch_keeps_only_the_keywords_of_its_type() {
        assert_eq!(
            portable(json!({
                "type": ["string", "array", "object"],
                "minLength": 1,
                "items": {"type": "string"},
                "properties": {"a": {"type": "integer"}},
                "required": ["a"],
                "enum": ["x", ["y"], {"a": 1}],
            })),
            json!({"anyOf": [
                {"type": "string", "minLength": 1, "enum": ["x", ["y"], {"a": 1}]},
                {"type": "array", "items": {"type": "string"}, "enum": ["x", ["y"], {"a": 1}]},
                {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}},
                    "required": ["a"],
                    "enum": ["x", ["y"], {"a": 1}],
                },
            ]})
        );
    }

    #[test]
    fn unions_nested_anywhere_are_split() {
        assert_eq!(
            portable(json!({
                "type": "object",
                "properties": {"tags": {"type": ["array", "null"], "items": {"type": ["string", "null"]}}},
                "$defs": {"D": {"type": "object", "properties": {"n": {"type": ["number", "null"]}}}},
            })),
            json!({
                "type": "object",
                "properties": {"tags": {"anyOf": [
                    {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                    {"type": "null"},
                ]}},
                "$defs": {"D": {"type": "object", "properties": {"n": {"anyOf": [
                    {"type": "number"}, {"type": "null"},
                ]}}}},
            })
        );
    }

    #[test]
    fn any_value_is_spelled_out_and_booleans_stay_where_they_belong() {
        let any = json!([
            {"type": "object"}, {"type": "array"}, {"type": "string"},
            {"type": "number"}, {"type": "boolean"}, {"type": "null"},
        ]);
        assert_eq!(
            portable(json!({
                "type": "object",
                "properties": {
                    "value": true,
                    "described": {"description": "Anything."},
                    "never": false,
                    "list": {"type": "array", "items": true},
                },
                "additionalProperties": {},
                "not": {},
            })),
            json!({
                "type": "object",
                "properties": {
                    "value": {"anyOf": any},
                    "described": {"description": "Anything.", "anyOf": any},
                    "never": {"not": {}},
                    "list": {"type": "array", "items": {"anyOf": any}},
                },
                "additionalProperties": true,
                "not": {},
            })
        );
        assert_eq!(
            portable(json!({"type": "object", "additionalProperties": false})),
            json!({"type": "object", "additionalProperties": false})
        );
    }

    #[test]
    fn odd_type_arrays_are_left_alone_or_simplified() {
        assert_eq!(
            portable(json!({"type": ["string"]})),
            json!({"type": "string"})
        );
        for odd in [
            json!({"type": ["string", "string"]}),
            json!({"type": ["string", 3]}),
            json!({"type": ["text", "null"]}),
        ] {
            assert_eq!(portable(odd.clone()), odd);
        }
    }

    /// The rewritten shapes stay on the built-in validator's fast path, as the originals were.
    #[test]
    fn rewritten_schemas_keep_the_fast_validation_path() {
        let schema = portable(json!({
            "type": "object",
            "properties": {
                "count": {"type": ["integer", "null"], "format": "uint32", "minimum": 1},
                "label": {"description": "A name.", "type": ["string", "null"], "maxLength": 9},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}},
                "value": true,
            },
            "required": ["value"],
            "additionalProperties": false,
        }));
        let v = crate::validation::SchemaValidator::new(&schema).unwrap();
        assert!(v.is_fast(), "{schema}");
        assert!(
            v.is_valid(&json!({"count": 2, "label": null, "tags": ["a"], "value": {"x": [1]}}))
        );
        assert!(!v.is_valid(&json!({"count": 0, "value": 1})));
    }

    /// schemars's numeric formats, read as the ranges of their Rust types, in a keyword of its
    /// own (`jsonschema` asserts no unknown format): the meaning the rewrite must keep.
    struct RustFormat(&'static str);

    impl RustFormat {
        fn holds(&self, instance: &Value) -> bool {
            let Value::Number(n) = instance else {
                return true;
            };
            let range: Option<(i128, i128)> = match self.0 {
                "int8" => Some((i8::MIN.into(), i8::MAX.into())),
                "int16" => Some((i16::MIN.into(), i16::MAX.into())),
                "int32" => Some((i32::MIN.into(), i32::MAX.into())),
                "int64" | "int" => Some((i64::MIN.into(), i64::MAX.into())),
                "uint8" => Some((0, u8::MAX.into())),
                "uint16" => Some((0, u16::MAX.into())),
                "uint32" => Some((0, u32::MAX.into())),
                "uint64" | "uint" => Some((0, u64::MAX.into())),
                _ => None,
            };
            let Some((lo, hi)) = range else {
                return true;
            };
            if let Some(i) = n.as_i64() {
                return (lo..=hi).contains(&i128::from(i));
            }
            if let Some(u) = n.as_u64() {
                return (lo..=hi).contains(&i128::from(u));
            }
            let f = n.as_f64().unwrap();
            (lo as f64) <= f && f <= (hi as f64)
        }
    }

    impl<'i> jsonschema::Keyword<'i> for RustFormat {
        fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
            if self.holds(instance) {
                Ok(())
            } else {
                Err(jsonschema::ValidationError::custom(
                    "out of the format's range",
                ))
            }
        }

        fn is_valid(&self, instance: &'i Value) -> bool {
            self.holds(instance)
        }
    }

    /// `schema` with every `format` renamed into the `x-rust-format` keyword.
    fn formats_as_keyword(schema: &Value) -> Value {
        match schema {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let k = if k == "format" && v.is_string() {
                            "x-rust-format"
                        } else {
                            k
                        };
                        (k.to_owned(), formats_as_keyword(v))
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(formats_as_keyword).collect()),
            other => other.clone(),
        }
    }

    /// A validator of what `schema` means, numeric formats included.
    fn reference(schema: &Value) -> Option<jsonschema::Validator> {
        jsonschema::options()
            .with_keyword("x-rust-format", |_, value, _| {
                let format = match value.as_str() {
                    Some(f) => [
                        "int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32",
                        "uint64", "uint",
                    ]
                    .into_iter()
                    .find(|n| *n == f)
                    .unwrap_or(""),
                    None => "",
                };
                Ok(Box::new(RustFormat(format)))
            })
            .build(&formats_as_keyword(schema))
            .ok()
    }

    /// Every rewrite accepts exactly what the original accepted (checked with the general
    /// validator on a spread of instances).
    #[test]
    fn rewrites_accept_exactly_what_the_originals_accept() {
        let schemas = [
            json!({"type": ["integer", "null"], "minimum": 2, "maximum": 9}),
            json!({"type": ["string", "number"], "minLength": 2, "minimum": 3, "enum": ["ab", "c", 4, 1]}),
            json!({"type": ["array", "null"], "prefixItems": [{"type": "number"}], "minItems": 1, "maxItems": 1}),
            json!({"type": ["object", "null"], "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
            json!({"type": "object", "properties": {"v": true, "w": false}}),
            json!({"type": ["boolean", "null"], "const": true}),
            json!({"type": ["integer", "null"], "format": "uint8", "minimum": 0}),
            json!({"type": "integer", "format": "int8"}),
            json!({"type": "integer", "format": "uint64", "minimum": 0}),
            json!({"type": "integer", "format": "int64"}),
            json!({"type": "number", "format": "double", "minimum": 3}),
        ];
        let instances = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(2),
            json!(4),
            json!(9.5),
            json!(10),
            json!("c"),
            json!("ab"),
            json!([]),
            json!([1]),
            json!([1, 2]),
            json!(["x"]),
            json!({}),
            json!({"a": "x"}),
            json!({"a": 1}),
            json!({"a": "x", "b": 1}),
            json!({"v": [1, {"x": null}]}),
            json!({"w": 1}),
            json!(-129),
            json!(-128),
            json!(127),
            json!(255),
            json!(256),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e20),
            json!(-1e20),
        ];
        for schema in schemas {
            let rewritten = portable(schema.clone());
            assert_ne!(rewritten, schema);
            let before = reference(&schema).unwrap();
            let after = jsonschema::validator_for(&rewritten).unwrap();
            for instance in &instances {
                assert_eq!(
                    before.is_valid(instance),
                    after.is_valid(instance),
                    "{schema} vs {rewritten} on {instance}"
                );
            }
        }
    }

    /// A schema node: a `type` (string or array, sometimes with duplicates or unknown names)
    /// and any mix of keywords of every kind, with subschemas nested a few levels.
    fn arb_schema() -> impl Strategy<Value = Value> {
        let type_name = prop::sample::select(vec![
            "null", "boolean", "object", "array", "number", "string", "integer",
        ]);
        let types = prop_oneof![
            type_name.clone().prop_map(|t| json!(t)),
            prop::collection::vec(type_name, 1..4).prop_map(|t| json!(t)),
        ];
        let leaf = prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!({})),
            Just(json!({"description": "d"})),
            types.clone().prop_map(|t| json!({"type": t})),
        ];
        leaf.prop_recursive(3, 24, 4, move |inner| {
            let keyword = prop_oneof![
                (-3i64..4).prop_map(|n| ("minimum".to_owned(), json!(n))),
                (0u64..3).prop_map(|n| ("minLength".to_owned(), json!(n))),
                (0u64..3).prop_map(|n| ("maxItems".to_owned(), json!(n))),
                (0u64..2).prop_map(|n| ("minProperties".to_owned(), json!(n))),
                Just(("required".to_owned(), json!(["a"]))),
                Just(("enum".to_owned(), json!([null, 1, "ab", [], {"a": 1}]))),
                Just(("const".to_owned(), json!(1))),
                prop::sample::select(vec![
                    "uint8",
                    "int8",
                    "uint32",
                    "int32",
                    "uint64",
                    "int64",
                    "uint",
                    "double",
                    "date-time",
                    "ip"
                ])
                .prop_map(|f| ("format".to_owned(), json!(f))),
                prop::sample::select(vec![
                    json!(-200),
                    json!(127),
                    json!(300),
                    json!(u64::MAX),
                    json!(2.5)
                ])
                .prop_map(|n| ("maximum".to_owned(), n)),
                Just(("default".to_owned(), json!(null))),
                inner.clone().prop_map(|s| ("items".to_owned(), s)),
                inner.clone().prop_map(|s| ("not".to_owned(), s)),
                inner
                    .clone()
                    .prop_map(|s| ("additionalProperties".to_owned(), s)),
                inner
                    .clone()
                    .prop_map(|s| ("properties".to_owned(), json!({"a": s}))),
                prop::collection::vec(inner.clone(), 1..3)
                    .prop_map(|l| ("anyOf".to_owned(), Value::Array(l))),
            ];
            (
                prop::option::of(types.clone()),
                prop::collection::vec(keyword, 0..4),
            )
                .prop_map(|(types, keywords)| {
                    let mut map: Map<String, Value> = keywords.into_iter().collect();
                    if let Some(t) = types {
                        map.insert("type".into(), t);
                    }
                    Value::Object(map)
                })
        })
    }

    fn arb_instance() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..4).prop_map(Value::from),
            Just(json!(2.5)),
            prop::sample::select(vec![
                json!(-129),
                json!(128),
                json!(256),
                json!(70_000),
                json!(-3_000_000_000i64),
                json!(5_000_000_000u64),
                json!(i64::MIN),
                json!(u64::MAX),
                json!(1e20),
                json!(-1e20),
            ]),
            "[ab]{0,3}".prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[ab]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        /// Whatever the schema, the rewrite accepts exactly what the original accepts.
        #[test]
        fn any_rewrite_accepts_exactly_what_the_original_accepts(
            schema in arb_schema(),
            instances in prop::collection::vec(arb_instance(), 1..6),
        ) {
            let rewritten = portable(schema.clone());
            let Some(before) = reference(&schema) else {
                // Not a valid schema (an `enum` clash, say): nothing to compare.
                return Ok(());
            };
            let after = jsonschema::validator_for(&rewritten);
            prop_assert!(after.is_ok(), "{schema} became the invalid {rewritten}");
            let after = after.unwrap();
            for instance in &instances {
                prop_assert_eq!(
                    before.is_valid(instance),
                    after.is_valid(instance),
                    "{} vs {} on {}", schema, rewritten, instance
                );
            }
        }

        /// A numeric format, alone or with bounds of its own, means the same after the rewrite
        /// (the range of its Rust type), at the edges of every range.
        #[test]
        fn numeric_formats_keep_their_meaning(
            format in prop::sample::select(vec![
                "uint8", "uint16", "uint32", "uint64", "uint", "int8", "int16", "int32", "int64",
                "int", "float", "double",
            ]),
            ty in prop::sample::select(vec![json!("integer"), json!("number"), json!(["integer", "null"])]),
            minimum in prop::option::of(prop::sample::select(vec![json!(-200), json!(0), json!(1), json!(i64::MIN), json!(0.5)])),
            maximum in prop::option::of(prop::sample::select(vec![json!(100), json!(300), json!(u64::MAX), json!(-1), json!(1e30)])),
            instances in prop::collection::vec(prop::sample::select(vec![
                json!(0), json!(-1), json!(255), json!(256), json!(-128), json!(-129), json!(65_535),
                json!(65_536), json!(i32::MIN), json!(i32::MAX), json!(u32::MAX), json!(4_294_967_296u64),
                json!(i64::MIN), json!(i64::MAX), json!(u64::MAX), json!(1.5), json!(-0.5), json!(1e19),
                json!(2e19), json!(-1e19), json!(null), json!("7"),
            ]), 1..8),
        ) {
            let mut schema = json!({"type": ty, "format": format});
            if let Some(m) = minimum {
                schema["minimum"] = m;
            }
            if let Some(m) = maximum {
                schema["maximum"] = m;
            }
            let rewritten = portable(schema.clone());
            prop_assert!(rewritten.get("format").is_none(), "{}", rewritten);
            let before = reference(&schema).unwrap();
            let after = jsonschema::validator_for(&rewritten).unwrap();
            for instance in &instances {
                prop_assert_eq!(
                    before.is_valid(instance),
                    after.is_valid(instance),
                    "{} vs {} on {}", schema, rewritten, instance
                );
            }
        }
    }
}
