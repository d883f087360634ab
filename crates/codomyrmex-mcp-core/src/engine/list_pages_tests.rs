//! The cached list pages: the same bytes as a fresh encoding while the registry stands still,
//! the change once it moves, for every list and era.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::prompts::{PromptDefinition, PromptRequest, PromptResult};
use crate::resources::{ResourceDefinition, ResourceRequest, ResourceTemplateDefinition};
use crate::schema::McpErrorDetail;
use crate::wire::{EncodedResult, IncomingMessage, OutgoingMessage, RequestId};

const LISTS: [(ListKind, &str, &str); 4] = [
    (ListKind::Tools, "tools/list", "tools"),
    (ListKind::Resources, "resources/list", "resources"),
    (
        ListKind::Templates,
        "resources/templates/list",
        "resourceTemplates",
    ),
    (ListKind::Prompts, "prompts/list", "prompts"),
];

fn scope(engine: &Engine, version: &str) -> RequestScope {
    let version = ProtocolVersion::parse(version).unwrap();
    RequestScope {
        era: version.era(),
        version,
        client_capabilities: crate::context::no_capabilities(),
        log_level: None,
        progress_token: None,
        now: engine.now(),
    }
}

/// The `result` bytes of a `method` answer, as written.
fn list_bytes(engine: &Engine, method: &str, version: &str) -> Vec<u8> {
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
    if version != "2026-07-28" {
        let init = IncomingMessage::Request {
            id: RequestId::from(0),
            method: "initialize".into(),
            params: json!({"protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}})
            .as_object()
            .cloned(),
        };
        let _ = engine.handle(&session, init, &sink);
    }
    let params = if version == "2026-07-28" {
        json!({"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
    } else {
        json!({})
    };
    let request = IncomingMessage::Request {
        id: RequestId::from(1),
        method: method.into(),
        params: params.as_object().cloned(),
    };
    match engine.handle(&session, request, &sink) {
        Handled::Reply(OutgoingMessage::Encoded { result, .. }) => result.to_vec(),
        other => panic!("an encoded reply expected: {other:?}"),
    }
}

fn list(engine: &Engine, method: &str, version: &str) -> Value {
    serde_json::from_slice(&list_bytes(engine, method, version)).unwrap()
}

/// The first page as encoded afresh, not read from the cache.
fn fresh(engine: &Engine, kind: ListKind, version: &str) -> Vec<u8> {
    engine
        .encode_page(kind, None, &scope(engine, version))
        .to_vec()
}

fn names(page: &Value, member: &str) -> Vec<String> {
    page[member]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

struct Registries {
    tools: Arc<McpToolRegistry>,
    resources: Arc<McpResourceRegistry>,
    prompts: Arc<McpPromptRegistry>,
}

impl Registries {
    fn add(&self, kind: ListKind, name: &str) {
        match kind {
            ListKind::Tools => self
                .tools
                .register(
                    name,
                    json!({"type": "object"}),
                    |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({})) },
                )
                .unwrap(),
            ListKind::Resources => self
                .resources
                .add_text(ResourceDefinition::new(format!("mem://{name}"), name), "A")
                .unwrap(),
            ListKind::Templates => self
                .resources
                .add_template(
                    ResourceTemplateDefinition::new(format!("mem://{name}/{{x}}"), name),
                    |_: ResourceRequest| async move { Ok(vec![]) },
                    BTreeMap::new(),
                )
                .unwrap(),
            ListKind::Prompts => {
                assert!(self.prompts.add(
                    PromptDefinition::new(name, "d"),
                    |_: PromptRequest| async move {
                        Ok(PromptResult {
                            description: None,
                            messages: vec![],
                        })
                    },
                ));
            }
        }
    }

    fn remove(&self, kind: ListKind, name: &str) {
        let removed = match kind {
            ListKind::Tools => self.tools.unregister(name),
            ListKind::Resources => self.resources.remove(&format!("mem://{name}")),
            ListKind::Templates => return,
            ListKind::Prompts => self.prompts.remove(name),
        };
        assert!(removed);
    }
}

fn engine() -> (Engine, Registries) {
    let r = Registries {
        tools: Arc::new(McpToolRegistry::new()),
        resources: Arc::new(McpResourceRegistry::new()),
        prompts: Arc::new(McpPromptRegistry::new()),
    };
    for (kind, ..) in LISTS {
        r.add(kind, "a");
    }
    let engine = Engine::builder(McpServerConfig::default(), r.tools.clone())
        .resources(r.resources.clone())
        .prompts(r.prompts.clone())
        .build();
    (engine, r)
}

#[test]
fn a_reused_page_follows_every_registry_change_in_each_era() {
    let (engine, registries) = engine();
    let eras = ["2026-07-28", "2025-11-25", "2024-11-05"];
    for (kind, method, member) in LISTS {
        for version in eras {
            assert_eq!(names(&list(&engine, method, version), member), ["a"]);
        }
        let modern = list(&engine, method, "2026-07-28");
        assert_eq!(modern, list(&engine, method, "2026-07-28"), "{method}");
        assert!(modern.get("ttlMs").is_some(), "{method}");
        assert!(list(&engine, method, "2025-11-25").get("ttlMs").is_none());
        registries.add(kind, "b");
        for version in eras {
            let page = list(&engine, method, version);
            assert_eq!(names(&page, member), ["a", "b"], "{method} {version}");
        }
        if kind != ListKind::Templates {
            registries.remove(kind, "a");
            for version in eras {
                let page = list(&engine, method, version);
                assert_eq!(names(&page, member), ["b"], "{method} {version}");
            }
        }
    }
}

#[test]
fn a_cached_page_is_the_fresh_encoding_until_the_registry_changes() {
    let (engine, registries) = engine();
    for (kind, method, _) in LISTS {
        for version in ["2026-07-28", "2025-11-25"] {
            let cached = engine.shared.list_pages.len();
            let first = list_bytes(&engine, method, version);
            // The first answer was kept; the second comes from the cache: the same bytes as
            // a fresh encoding, and as the value path's (`finish_result`, then serde_json).
            assert_eq!(engine.shared.list_pages.len(), cached + 1, "{method}");
            assert_eq!(list_bytes(&engine, method, version), first, "{method}");
            assert_eq!(engine.shared.list_pages.len(), cached + 1, "{method}");
            assert_eq!(fresh(&engine, kind, version), first, "{method} {version}");
            let value: Value = serde_json::from_slice(&first).unwrap();
            assert_eq!(serde_json::to_vec(&value).unwrap(), first, "{method}");
            let modern = version == "2026-07-28";
            assert_eq!(value.get("resultType").is_some(), modern, "{method}");
            assert_eq!(value["_meta"][META_SERVER_INFO].is_object(), modern);
        }
        let before = list_bytes(&engine, method, "2026-07-28");
        registries.add(kind, "b");
        let after = list_bytes(&engine, method, "2026-07-28");
        assert_ne!(after, before, "{method}");
        assert_eq!(after, fresh(&engine, kind, "2026-07-28"), "{method}");
    }
}

#[test]
fn a_bad_cursor_is_refused_before_the_cache() {
    let (engine, _registries) = engine();
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
    for (_, method, _) in LISTS {
        for cursor in [json!("%%%"), json!(5), json!(encode_cursor("x"))] {
            let request = IncomingMessage::Request {
                id: RequestId::from(1),
                method: method.into(),
                params: json!({"cursor": cursor, "_meta": {
                    META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}})
                .as_object()
                .cloned(),
            };
            let answer = engine.handle(&session, request, &sink);
            let is_error = matches!(answer, Handled::Reply(OutgoingMessage::Error { .. }));
            // A well-formed cursor naming no template index is still refused; for the
            // others it is just a place in the list.
            let expect = cursor != json!(encode_cursor("x")) || method.contains("templates");
            assert_eq!(is_error, expect, "{method} {cursor}");
        }
    }
}

#[test]
fn the_cache_stays_bounded_whatever_cursors_clients_send() {
    let pages = ListPages::default();
    for i in 0..10 * ListPages::MAX {
        let key = (
            ListKind::Prompts,
            ProtocolVersion::LATEST_MODERN,
            Some(format!("c{i}")),
            0,
        );
        pages.insert(key, 0, &EncodedResult::of(&json!({})));
    }
    assert!(pages.len() <= ListPages::MAX);
}
