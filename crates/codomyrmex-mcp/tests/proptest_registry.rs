//! Property tests of `McpToolRegistry` under random sequences of operations, against a model:
//! the listing stays sorted (directly and through paginated `tools/list`), an identical
//! registration is idempotent, and a refused registration (conflict, bad name, bad schema)
//! leaves the state and the change counter unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use codomyrmex_mcp::engine::{Engine, Handled};
use codomyrmex_mcp::wire::{IncomingMessage, RequestId};
use codomyrmex_mcp::{
    McpErrorDetail, McpRegistrationError, McpServerConfig, McpToolRegistry, ToolDefinition,
    ToolRegistration,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NAMES: &[&str] = &[
    "a", "b", "c", "a.b", "a-b", "a_b", "Z", "zz.top", "tool.9", "", "bad name", "é",
];

/// Schemas by index: 0-3 valid and pairwise different, 4-5 invalid.
fn schema(i: usize) -> Value {
    match i {
        0 => json!({"type": "object"}),
        1 => json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        2 => json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}),
        3 => json!({"type": "object", "additionalProperties": false}),
        4 => json!({"type": "array"}),
        _ => json!({"type": "object", "properties": {"x": {"type": 5}}}),
    }
}

#[derive(Debug, Clone)]
enum Op {
    Register { name: usize, schema: usize },
    RegisterDescribed { name: usize, description: usize },
    Unregister { name: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NAMES.len(), 0..6usize).prop_map(|(name, schema)| Op::Register { name, schema }),
        1 => (0..NAMES.len(), 0..2usize)
            .prop_map(|(name, description)| Op::RegisterDescribed { name, description }),
        2 => (0..NAMES.len()).prop_map(|name| Op::Unregister { name }),
    ]
}

fn handler(_: Map<String, Value>) -> Result<Value, McpErrorDetail> {
    Ok(json!({}))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Every tool through `tools/list`, following `nextCursor`.
fn listed_through_engine(registry: &Arc<McpToolRegistry>, page_size: usize) -> Vec<String> {
    let engine = Engine::new(
        McpServerConfig::default()
            .with_rate_limit(None)
            .with_page_size(page_size),
        registry.clone(),
    );
    let session = engine.new_session();
    let sink: Arc<dyn codomyrmex_mcp::MessageSink> = Arc::new(codomyrmex_mcp::NullSink);
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    for round in 0..100 {
        let mut meta = Map::new();
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            json!("2026-07-28"),
        );
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            json!({}),
        );
        let mut params = Map::new();
        params.insert("_meta".into(), Value::Object(meta));
        if let Some(c) = &cursor {
            params.insert("cursor".into(), c.clone());
        }
        let message = IncomingMessage::Request {
            id: RequestId::from(round),
            method: "tools/list".into(),
            params: Some(params),
        };
        let Handled::Reply(reply) = engine.handle(&session, message, &sink) else {
            panic!("tools/list is answered at once");
        };
        let Some(result) = reply.result_value() else {
            panic!("tools/list succeeds: {reply:?}");
        };
        for t in result["tools"].as_array().expect("a tools array") {
            names.push(t["name"].as_str().expect("a name").to_owned());
        }
        match result.get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => return names,
        }
    }
    panic!("pagination did not end");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn registry_matches_its_model(ops in prop::collection::vec(op(), 1..40), page_size in 1..4usize) {
        let registry = Arc::new(McpToolRegistry::new());
        let mut changes = registry.subscribe();
        changes.mark_unchanged();
        // name -> (schema index, description index)
        let mut model: BTreeMap<String, (usize, Option<usize>)> = BTreeMap::new();
        for op in ops {
            let before = registry.definitions();
            let changed_before = changes.has_changed();
            prop_assert!(!changed_before);
            let (name, outcome, wanted) = match op {
                Op::Register { name, schema: s } => {
                    let name = NAMES[name];
                    (name, registry.register(name, schema(s), handler), (s, None))
                }
                Op::RegisterDescribed { name, description } => {
                    let name = NAMES[name];
                    let definition = ToolDefinition::new(name, schema(0))
                        .with_description(format!("description {description}"));
                    (
                        name,
                        registry.register_tool(ToolRegistration::new(definition, handler)),
                        (0, Some(description)),
                    )
                }
                Op::Unregister { name } => {
                    let name = NAMES[name];
                    let removed = registry.unregister(name);
                    prop_assert_eq!(removed, model.remove(name).is_some());
                    prop_assert_eq!(changes.has_changed(), removed);
                    changes.mark_unchanged();
                    prop_assert_eq!(registry.list_tools(), model.keys().cloned().collect::<Vec<_>>());
                    continue;
                }
            };
            match (&outcome, model.get(name)) {
                (Ok(()), Some(existing)) => {
                    // Idempotent: the same definition again changes nothing.
                    prop_assert_eq!(*existing, wanted);
                    prop_assert_eq!(registry.definitions(), before);
                    prop_assert!(!changes.has_changed());
                }
                (Ok(()), None) => {
                    prop_assert!(valid_name(name));
                    prop_assert!(wanted.0 < 4, "an invalid schema was accepted");
                    model.insert(name.to_owned(), wanted);
                    prop_assert!(changes.has_changed());
                    changes.mark_unchanged();
                }
                (Err(e), existing) => {
                    // Refused: nothing changed, and the reason is the right one.
                    prop_assert_eq!(registry.definitions(), before);
                    prop_assert!(!changes.has_changed());
                    match e {
                        McpRegistrationError::InvalidName { .. } => prop_assert!(!valid_name(name)),
                        McpRegistrationError::Conflict { .. } => {
                            prop_assert!(existing.is_some_and(|x| *x != wanted));
                        }
                        McpRegistrationError::InvalidSchema { .. } => {
                            prop_assert!(existing.is_none());
                            prop_assert!(wanted.0 >= 4);
                        }
                        other => prop_assert!(false, "unexpected refusal: {other}"),
                    }
                }
            }
            // The listing is sorted, unique and equal to the model.
            let listed = registry.list_tools();
            prop_assert!(listed.windows(2).all(|w| w[0] < w[1]), "unsorted: {:?}", listed);
            prop_assert_eq!(&listed, &model.keys().cloned().collect::<Vec<_>>());
            prop_assert_eq!(registry.len(), model.len());
        }
        let paged = listed_through_engine(&registry, page_size);
        prop_assert_eq!(paged, registry.list_tools());
    }
}
