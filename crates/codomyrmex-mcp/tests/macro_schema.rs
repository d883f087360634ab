//! `#[mcp_tool]`: the definitions it derives, compared with the expected JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use codomyrmex_mcp::{
    McpErrorDetail, McpToolCall, McpToolRegistry, McpToolResult, ToolContext, ToolDefinition,
    ToolOutput, ToolRegistration, mcp_tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn definition<F: 'static>(tool: F) -> ToolDefinition {
    ToolRegistration::of(tool)
        .expect("an #[mcp_tool] function")
        .definition
}

/// The branches of "any JSON value" in a generated schema.
fn any_json_value() -> Value {
    json!([
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
    ])
}

fn input<F: 'static>(tool: F) -> Value {
    definition(tool).input_schema
}

fn output<F: 'static>(tool: F) -> Option<Value> {
    definition(tool).output_schema
}

// ---------------------------------------------------------------------------------------------
// Parameters, one kind at a time.
// ---------------------------------------------------------------------------------------------

#[mcp_tool]
fn integers(a: i32, b: u8, c: i64, d: u64) -> i64 {
    i64::from(a) + i64::from(b) + c + d as i64
}

#[test]
fn integer_parameters() {
    assert_eq!(
        input(integers),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                "b": {"type": "integer", "minimum": 0, "maximum": 255},
                "c": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
                "d": {"type": "integer", "minimum": 0, "maximum": u64::MAX},
            },
            "required": ["a", "b", "c", "d"],
        })
    );
}

#[mcp_tool]
fn floats(x: f32, y: f64) -> f64 {
    f64::from(x) * y
}

#[test]
fn float_parameters() {
    assert_eq!(
        input(floats),
        json!({
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "y": {"type": "number"},
            },
            "required": ["x", "y"],
        })
    );
}

#[mcp_tool]
fn text_and_flags(text: String, loud: bool, mark: char) -> String {
    let text = if loud { text.to_uppercase() } else { text };
    format!("{text}{mark}")
}

#[test]
fn string_bool_and_char_parameters() {
    assert_eq!(
        input(text_and_flags),
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "loud": {"type": "boolean"},
                "mark": {"type": "string", "minLength": 1, "maxLength": 1},
            },
            "required": ["text", "loud", "mark"],
        })
    );
}

#[mcp_tool]
fn optionals(count: Option<u32>, label: Option<String>, always: bool) -> bool {
    count.is_some() || label.is_some() || always
}

#[test]
fn option_parameters_are_not_required() {
    assert_eq!(
        input(optionals),
        json!({
            "type": "object",
            "properties": {
                // `Option<T>` is spelled as Pydantic spells `Optional[T]`: `anyOf` with a `null`
                // branch, never a `type` array (which narrower client dialects reject).
                "count": {"anyOf": [
                    {"type": "integer", "minimum": 0, "maximum": u32::MAX},
                    {"type": "null"},
                ]},
                "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "always": {"type": "boolean"},
            },
            "required": ["always"],
        })
    );
}

#[mcp_tool]
fn sequences(words: Vec<String>, grid: Vec<Vec<i32>>, pair: (i32, String), rgb: [u8; 3]) -> usize {
    words.len() + grid.len() + pair.1.len() + rgb.len()
}

#[test]
fn sequence_and_tuple_parameters() {
    let byte = json!({"type": "integer", "minimum": 0, "maximum": 255});
    assert_eq!(
        input(sequences),
        json!({
            "type": "object",
            "properties": {
                "words": {"type": "array", "items": {"type": "string"}},
                "grid": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}},
                },
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}, {"type": "string"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                "rgb": {"type": "array", "items": byte, "minItems": 3, "maxItems": 3},
            },
            "required": ["words", "grid", "pair", "rgb"],
        })
    );
}

#[mcp_tool]
fn maps(weights: HashMap<String, f64>, flags: BTreeMap<String, bool>) -> usize {
    weights.len() + flags.len()
}

#[test]
fn map_parameters() {
    assert_eq!(
        input(maps),
        json!({
            "type": "object",
            "properties": {
                "weights": {
                    "type": "object",
                    "additionalProperties": {"type": "number"},
                },
                "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
            },
            "required": ["weights", "flags"],
        })
    );
}

/// A primary colour.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Colour {
    Red,
    Green,
    Blue,
}

/// A shape to draw.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[mcp_tool]
fn enums(colour: Colour, shape: Shape) -> String {
    let area = match shape {
        Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
        Shape::Square { side } => side * side,
    };
    format!("{colour:?} {area}")
}

#[test]
fn enum_parameters_are_referenced_from_defs() {
    assert_eq!(
        input(enums),
        json!({
            "type": "object",
            "properties": {
                "colour": {"$ref": "#/$defs/Colour"},
                "shape": {"$ref": "#/$defs/Shape"},
            },
            "required": ["colour", "shape"],
            "$defs": {
                "Colour": {
                    "description": "A primary colour.",
                    "type": "string",
                    "enum": ["red", "green", "blue"],
                },
                "Shape": {
                    "description": "A shape to draw.",
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "circle"},
                                "radius": {"type": "number"},
                            },
                            "required": ["kind", "radius"],
                        },
                        {
                            "type": "object",
                            "properties": {
                                "kind": {"type": "string", "const": "square"},
                                "side": {"type": "number"},
                            },
                            "required": ["kind", "side"],
                        },
                    ],
                },
            },
        })
    );
}

/// A point on the plane.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Point {
    /// Abscissa.
    x: f64,
    /// Ordinate.
    y: f64,
    /// An optional name.
    label: Option<String>,
}

#[mcp_tool]
fn structs(origin: Point, path: Vec<Point>, target: Option<Point>) -> usize {
    let _ = (origin, target);
    path.len()
}

#[test]
fn struct_parameters_share_one_definition() {
    assert_eq!(
        input(structs),
        json!({
            "type": "object",
            "properties": {
                "origin": {"$ref": "#/$defs/Point"},
                "path": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
                "target": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]},
            },
            "required": ["origin", "path"],
            "$defs": {
                "Point": {
                    "description": "A point on the plane.",
                    "type": "object",
                    "properties": {
                        "x": {"description": "Abscissa.", "type": "number"},
                        "y": {"description": "Ordinate.", "type": "number"},
                        "label": {
                            "description": "An optional name.",
                            "anyOf": [{"type": "string"}, {"type": "null"}],
                        },
                    },
                    "required": ["x", "y"],
                },
            },
        })
    );
}

#[mcp_tool]
fn any_json(value: Value, #[arg(description = "Anything at all")] described: Value) -> bool {
    value == described
}

#[test]
fn json_value_parameters_accept_anything() {
    assert_eq!(
        input(any_json),
        json!({
            "type": "object",
            "properties": {
                // "Any JSON value", spelled out: a bare `true` or an empty schema is what
                // MCP Inspector flags and narrower client dialects reject.
                "value": {"anyOf": any_json_value()},
                "described": {"description": "Anything at all", "anyOf": any_json_value()},
            },
            "required": ["value", "described"],
        })
    );
}

#[mcp_tool]
fn annotated(
    /// The count, from a doc comment.
    count: u16,
    #[arg(description = "The text, from the attribute")] text: String,
    #[arg(default = 5)] limit: i32,
    #[arg(default = "en", description = "The language")] language: String,
    #[arg(default = Colour::Green)] colour: Colour,
    #[arg(rename = "type")] kind: String,
    r#match: bool,
) -> String {
    format!("{count}{text}{limit}{language}{colour:?}{kind}{match}")
}

#[test]
fn descriptions_defaults_and_renames() {
    assert_eq!(
        input(annotated),
        json!({
            "type": "object",
            "properties": {
                "count": {
                    "description": "The count, from a doc comment.",
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 65535,
                },
                "text": {"description": "The text, from the attribute", "type": "string"},
                "limit": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX, "default": 5},
                "language": {"type": "string", "description": "The language", "default": "en"},
                "colour": {"$ref": "#/$defs/Colour", "default": "green"},
                "type": {"type": "string"},
                "match": {"type": "boolean"},
            },
            "required": ["count", "text", "type", "match"],
            "$defs": {
                "Colour": {
                    "description": "A primary colour.",
                    "type": "string",
                    "enum": ["red", "green", "blue"],
                },
            },
        })
    );
}

/// Validation keywords on parameters, and a tool that refuses unknown arguments.
#[mcp_tool(name = "constrained", deny_unknown_arguments)]
fn constrained(
    #[arg(minimum = 1, maximum = 500)] count: Option<u32>,
    /// An offset, from a doc comment.
    #[arg(minimum = -2.5, maximum = 2.5)]
    offset: f64,
    #[arg(minimum = -10)] delta: i32,
    #[arg(min_length = 1, max_length = 64)] name: String,
    #[arg(min_items = 1, max_items = 3, default = vec![1])] items: Vec<i64>,
) -> String {
    format!("{count:?}{offset}{delta}{name}{items:?}")
}

#[mcp_tool(deny_unknown_arguments = false)]
fn lenient(n: i32) -> i32 {
    n
}

#[mcp_tool(deny_unknown_arguments)]
fn strict_without_parameters() {}

#[test]
fn validation_keywords_and_denied_unknown_arguments() {
    assert_eq!(
        input(constrained),
        json!({
            "type": "object",
            "properties": {
                "count": {"anyOf": [
                    {"type": "integer", "minimum": 1, "maximum": 500},
                    {"type": "null"},
                ]},
                "offset": {
                    "description": "An offset, from a doc comment.",
                    "type": "number",
                    "minimum": -2.5,
                    "maximum": 2.5,
                },
                "delta": {"type": "integer", "minimum": -10, "maximum": i32::MAX},
                "name": {"type": "string", "minLength": 1, "maxLength": 64},
                "items": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
                    "minItems": 1,
                    "maxItems": 3,
                    "default": [1],
                },
            },
            "required": ["offset", "delta", "name"],
            "additionalProperties": false,
        })
    );
    assert_eq!(
        input(lenient),
        json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}},
            "required": ["n"],
        })
    );
    assert_eq!(
        input(strict_without_parameters),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_registry_enforces_validation_keywords_and_unknown_arguments() {
    let registry = McpToolRegistry::new();
    for tool in [
        ToolRegistration::of(constrained).unwrap(),
        ToolRegistration::of(lenient).unwrap(),
        ToolRegistration::of(strict_without_parameters).unwrap(),
    ] {
        registry.register_tool(tool).unwrap();
    }
    let run = |name: &'static str, arguments: Value| {
        let registry = &registry;
        async move {
            let Value::Object(arguments) = arguments else {
                unreachable!()
            };
            registry.execute(&McpToolCall::new(name, arguments)).await
        }
    };
    let ok = run(
        "constrained",
        json!({"offset": 1.5, "delta": -10, "name": "x"}),
    )
    .await;
    assert_eq!(ok.status(), "success", "{ok:?}");
    assert_eq!(ok.data().unwrap()["result"], "None1.5-10x[1]");
    for bad in [
        json!({"offset": 0, "delta": 0, "name": "x", "count": 0}),
        json!({"offset": 0, "delta": 0, "name": "x", "count": 501}),
        json!({"offset": 3, "delta": 0, "name": "x"}),
        json!({"offset": 0, "delta": -11, "name": "x"}),
        json!({"offset": 0, "delta": 0, "name": ""}),
        json!({"offset": 0, "delta": 0, "name": "x", "items": []}),
        json!({"offset": 0, "delta": 0, "name": "x", "items": [1, 2, 3, 4]}),
        json!({"offset": 0, "delta": 0, "name": "x", "bogus": true}),
    ] {
        let result = run("constrained", bad.clone()).await;
        let error = result.error().unwrap_or_else(|| panic!("{bad} passed"));
        assert_eq!(error.error_type, "ValidationError", "{bad}");
    }
    let refused = run("strict_without_parameters", json!({"bogus": 1})).await;
    assert_eq!(refused.error().unwrap().error_type, "ValidationError");
    // Without the flag, unknown arguments are ignored.
    let ignored = run("lenient", json!({"n": 4, "bogus": 1})).await;
    assert_eq!(ignored.data().unwrap()["result"], 4);
}

#[tokio::test(flavor = "current_thread")]
async fn the_handler_itself_refuses_unknown_arguments() {
    let handler = ToolRegistration::of(constrained).unwrap().handler;
    let Value::Object(arguments) =
        json!({"offset": 0, "delta": 0, "name": "x", "bogus": 1, "other": 2})
    else {
        unreachable!()
    };
    let output = handler.call(arguments, ToolContext::detached()).await;
    let error = output.result.error().unwrap();
    assert_eq!(error.error_type, "ValidationError");
    assert_eq!(error.error_message, "Unknown arguments: bogus, other");
}

#[mcp_tool]
async fn with_context(first: &ToolContext, n: i32) -> String {
    format!("{}{n}", first.tool_name())
}

#[mcp_tool]
fn with_owned_context(n: i32, cx: ToolContext) -> String {
    format!("{}{n}", cx.tool_name())
}

#[mcp_tool]
fn no_parameters() {}

#[test]
fn the_context_is_not_an_argument() {
    let expected = json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}},
        "required": ["n"],
    });
    assert_eq!(input(with_context), expected);
    assert_eq!(input(with_owned_context), expected);
    assert_eq!(
        input(no_parameters),
        json!({"type": "object", "properties": {}})
    );
}

// ---------------------------------------------------------------------------------------------
// Output schemas.
// ---------------------------------------------------------------------------------------------

/// Summary statistics.
#[derive(Serialize, JsonSchema)]
struct Stats {
    count: usize,
    mean: Option<f64>,
    extremes: Option<(f64, f64)>,
}

#[mcp_tool]
fn stats(values: Vec<f64>) -> Stats {
    let count = values.len();
    let mean = (count > 0).then(|| values.iter().sum::<f64>() / count as f64);
    Stats {
        count,
        mean,
        extremes: None,
    }
}

#[mcp_tool]
fn fallible_stats(values: Vec<f64>) -> Result<Stats, std::io::Error> {
    Ok(stats(values))
}

#[mcp_tool]
fn points() -> std::io::Result<Vec<Point>> {
    Ok(Vec::new())
}

#[mcp_tool]
fn colour() -> Colour {
    Colour::Red
}

#[mcp_tool]
fn lookup() -> HashMap<String, i64> {
    HashMap::new()
}

#[mcp_tool]
fn raw() -> ToolOutput {
    ToolOutput::from_result(McpToolResult::no_change_needed("nothing to do"))
}

#[mcp_tool]
fn raw_result() -> Result<McpToolResult, McpErrorDetail> {
    Ok(McpToolResult::no_change_needed("nothing to do"))
}

#[test]
fn object_results_are_their_own_output_schema() {
    let expected = json!({
        "title": "Stats",
        "description": "Summary statistics.",
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0, "maximum": usize::MAX},
            "mean": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "extremes": {"anyOf": [
                {
                    "type": "array",
                    "prefixItems": [
                        {"type": "number"},
                        {"type": "number"},
                    ],
                    "minItems": 2,
                    "maxItems": 2,
                },
                {"type": "null"},
            ]},
        },
        // Output schemas follow what serde writes: `None` is written as `null`, so every
        // field is always present.
        "required": ["count", "mean", "extremes"],
    });
    assert_eq!(output(stats), Some(expected.clone()));
    assert_eq!(output(fallible_stats), Some(expected));
    assert_eq!(
        output(lookup),
        Some(json!({
            "title": "Map_of_int64",
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
        }))
    );
}

#[test]
fn other_results_are_wrapped_in_a_result_property() {
    assert_eq!(
        output(integers),
        Some(json!({
            "type": "object",
            "properties": {"result": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}},
            "required": ["result"],
        }))
    );
    assert_eq!(
        output(points),
        Some(json!({
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
            "required": ["result"],
            "$defs": {
                "Point": {
                    "description": "A point on the plane.",
                    "type": "object",
                    "properties": {
                        "x": {"description": "Abscissa.", "type": "number"},
                        "y": {"description": "Ordinate.", "type": "number"},
                        "label": {
                            "description": "An optional name.",
                            "anyOf": [{"type": "string"}, {"type": "null"}],
                        },
                    },
                    "required": ["x", "y", "label"],
                },
            },
        }))
    );
    assert_eq!(
        output(colour),
        Some(json!({
            "type": "object",
            "properties": {"result": {"$ref": "#/$defs/Colour"}},
            "required": ["result"],
            "$defs": {
                "Colour": {
                    "description": "A primary colour.",
                    "type": "string",
                    "enum": ["red", "green", "blue"],
                },
            },
        }))
    );
    assert_eq!(
        output(no_parameters),
        Some(json!({
            "type": "object",
            "properties": {"result": {"type": "null"}},
            "required": ["result"],
        }))
    );
}

#[test]
fn raw_results_declare_no_output_schema() {
    assert_eq!(output(raw), None);
    assert_eq!(output(raw_result), None);
}

#[test]
fn no_schema_root_is_a_bare_ref() {
    for tool in [
        definition(enums),
        definition(structs),
        definition(colour),
        definition(points),
        definition(stats),
    ] {
        let schemas = std::iter::once(&tool.input_schema).chain(tool.output_schema.as_ref());
        for schema in schemas {
            assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
            assert!(schema.get("$ref").is_none(), "{}: {schema}", tool.name);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Names, descriptions, annotations, metadata and settings.
// ---------------------------------------------------------------------------------------------

/// Reads a file's content.
///
/// Paths are relative to the workspace root.
#[mcp_tool(
    name = "file_utility.read_file_content",
    title = "Read a file",
    read_only,
    destructive = false,
    idempotent,
    open_world = false,
    category = "files",
    tags = ["io", "read"],
    version = "1.2.0",
    deprecated_in = "2.0",
    timeout = "1500ms"
)]
fn read_file_content(path: String) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

#[mcp_tool(description = "Given explicitly.", timeout = 2)]
/// Not this doc comment.
fn explicit_description() {}

#[test]
fn attribute_arguments_fill_the_definition() {
    let registration = ToolRegistration::of(read_file_content).unwrap();
    let wire = serde_json::to_value(&registration.definition).unwrap();
    assert_eq!(
        wire,
        json!({
            "name": "file_utility.read_file_content",
            "title": "Read a file",
            "description": "Reads a file's content.\n\nPaths are relative to the workspace root.",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "string"}},
                "required": ["result"],
            },
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
            },
            "_meta": {
                "category": "files",
                "tags": ["io", "read"],
                "version": "1.2.0",
                "deprecated_in": "2.0",
            },
        })
    );
    assert_eq!(
        registration.settings.timeout,
        Some(Duration::from_millis(1500))
    );
    assert_eq!(registration.settings.deprecated_in.as_deref(), Some("2.0"));
}

#[test]
fn defaults_name_after_the_function_and_describe_from_the_doc_comment() {
    let plain = ToolRegistration::of(integers).unwrap();
    assert_eq!(plain.definition.name, "integers");
    assert_eq!(plain.definition.title, None);
    assert_eq!(plain.definition.description, None);
    assert!(plain.definition.annotations.is_empty());
    assert_eq!(plain.definition.meta, None);
    assert_eq!(plain.settings, Default::default());

    let explicit = ToolRegistration::of(explicit_description).unwrap();
    assert_eq!(
        explicit.definition.description.as_deref(),
        Some("Given explicitly.")
    );
    assert_eq!(explicit.settings.timeout, Some(Duration::from_secs(2)));
    assert_eq!(definition(r#annotated).name, "annotated");
}

#[test]
fn functions_stay_callable_as_written() {
    assert_eq!(integers(1, 2, 3, 4), 10);
    assert_eq!(text_and_flags("hi".into(), true, '!'), "HI!");
    assert!(optionals(None, None, true));
    assert_eq!(colour() as u8, Colour::Red as u8);
    no_parameters();
}

// ---------------------------------------------------------------------------------------------
// Output schemas describe what the tool writes (serde's serialize side).
// ---------------------------------------------------------------------------------------------

/// A result whose empty list is left out when written.
#[derive(Serialize, JsonSchema)]
struct Sparse {
    name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    items: Vec<String>,
}

#[mcp_tool]
fn sparse(name: String) -> Sparse {
    Sparse {
        name,
        items: Vec::new(),
    }
}

#[tokio::test]
async fn output_schema_follows_serialization_so_skipped_fields_are_optional() {
    let schema = output(sparse).expect("an output schema");
    assert_eq!(schema["required"], json!(["name"]), "{schema}");
    let registry = McpToolRegistry::new();
    registry.register_fn(sparse).unwrap();
    let Value::Object(args) = json!({"name": "n"}) else {
        unreachable!()
    };
    let result = registry.execute(&McpToolCall::new("sparse", args)).await;
    assert_eq!(result.status(), "success", "{result:?}");
    assert_eq!(result.data().unwrap().get("items"), None);
}
