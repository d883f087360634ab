//! The Skills extension through the engine, in both eras.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::context::{MessageSink, NullSink};
use crate::registry::McpToolRegistry;
use crate::skills::{McpSkillRegistry, SkillDefinition};
use crate::test_runtime::run;
use crate::wire::jsonrpc::decode;
use crate::wire::skills::{GetSkillResult, ListSkillsResult, SKILLS_EXTENSION};

const MD: &str = "---\nname: pdf-processing\ndescription: Extract PDFs\n---\n# PDF\n";

fn skills() -> Arc<McpSkillRegistry> {
    let reg = McpSkillRegistry::new();
    reg.add(
        SkillDefinition::new("pdf-processing", MD)
            .unwrap()
            .with_file("templates/invoice.md", "invoice")
            .unwrap(),
    )
    .unwrap();
    reg.add(
        SkillDefinition::new("acme/refunds", "---\nname: refunds\ndescription: R\n---\n").unwrap(),
    )
    .unwrap();
    Arc::new(reg)
}

fn engine(skills: Option<Arc<McpSkillRegistry>>) -> Engine {
    let b = Engine::builder(
        McpServerConfig::default().with_page_size(1),
        Arc::new(McpToolRegistry::new()),
    );
    match skills {
        Some(s) => b.skills(s).build(),
        None => b.build(),
    }
}

fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

async fn send(engine: &Engine, session: &Arc<Session>, request: Value) -> Value {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let decoded = decode(request.to_string().as_bytes());
    let message = engine
        .handle_decoded(session, decoded, &sink)
        .into_message()
        .await
        .map(|m| m.to_bytes());
    serde_json::from_slice(&message.unwrap_or_default()).unwrap_or(Value::Null)
}

async fn answer(engine: &Engine, request: Value) -> Value {
    send(engine, &engine.new_session(), request).await
}

#[test]
fn the_extension_and_resources_are_declared_in_both_eras_only_with_skills() {
    run(async {
        let e = engine(Some(skills()));
        let d = answer(&e, modern(1, "server/discover", json!({}))).await;
        let caps = &d["result"]["capabilities"];
        assert_eq!(
            caps["extensions"][SKILLS_EXTENSION],
            json!({"directoryRead": true}),
            "{d}"
        );
        assert!(caps["resources"].is_object(), "{d}");
        let i = answer(
            &e,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}}),
        )
        .await;
        assert_eq!(
            i["result"]["capabilities"]["extensions"][SKILLS_EXTENSION],
            json!({"directoryRead": true}),
            "{i}"
        );

        let plain = engine(None);
        let d = answer(&plain, modern(1, "server/discover", json!({}))).await;
        assert!(
            d["result"]["capabilities"].get("extensions").is_none(),
            "{d}"
        );
        let l = answer(&plain, modern(2, "skills/list", json!({}))).await;
        assert_eq!(l["error"]["code"], -32601, "{l}");

        let no_dir = engine(Some(Arc::new(
            McpSkillRegistry::new().without_directory_read(),
        )));
        let d = answer(&no_dir, modern(1, "server/discover", json!({}))).await;
        assert_eq!(
            d["result"]["capabilities"]["extensions"][SKILLS_EXTENSION],
            json!({}),
            "{d}"
        );
        let r = answer(
            &no_dir,
            modern(2, "resources/directory/read", json!({"uri": "skill://x"})),
        )
        .await;
        assert_eq!(r["error"]["code"], -32601, "{r}");
    });
}

#[test]
fn skills_list_pages_whole_entries_with_cache_attributes() {
    run(async {
        let e = engine(Some(skills()));
        let first = answer(&e, modern(1, "skills/list", json!({}))).await;
        let page: ListSkillsResult = serde_json::from_value(first["result"].clone()).unwrap();
        assert_eq!(page.skills.len(), 1);
        assert_eq!(page.skills[0].uri, "skill://acme/refunds/SKILL.md");
        assert!(
            page.ttl_ms.is_some() && page.cache_scope.is_some(),
            "{first}"
        );
        assert_eq!(first["result"]["resultType"], "complete");
        let next = page.next_cursor.unwrap();
        let second = answer(&e, modern(2, "skills/list", json!({"cursor": next}))).await;
        let page: ListSkillsResult = serde_json::from_value(second["result"].clone()).unwrap();
        assert_eq!(page.skills[0].uri, "skill://pdf-processing/SKILL.md");
        assert_eq!(page.skills[0].resources.files().unwrap().len(), 2);
        assert!(page.next_cursor.is_none());
        let bad = answer(&e, modern(3, "skills/list", json!({"cursor": "zz"}))).await;
        assert_eq!(bad["error"]["code"], -32602, "{bad}");
    });
}

#[test]
fn skills_get_answers_an_entry_or_invalid_params() {
    run(async {
        let e = engine(Some(skills()));
        let got = answer(
            &e,
            modern(
                1,
                "skills/get",
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            ),
        )
        .await;
        let r: GetSkillResult = serde_json::from_value(got["result"].clone()).unwrap();
        assert_eq!(r.skill.name(), Some("pdf-processing"));
        assert!(got["result"].get("nextCursor").is_none());
        assert!(r.ttl_ms.is_some() && r.cache_scope.is_some(), "{got}");
        for params in [
            json!({"uri": "skill://nope/SKILL.md"}),
            json!({"uri": 3}),
            json!({}),
        ] {
            let r = answer(&e, modern(2, "skills/get", params.clone())).await;
            assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
        }
    });
}

#[test]
fn skill_files_are_read_through_resources_read_in_both_eras() {
    run(async {
        let e = engine(Some(skills()));
        let r = answer(
            &e,
            modern(
                1,
                "resources/read",
                json!({"uri": "skill://pdf-processing/SKILL.md"}),
            ),
        )
        .await;
        let c = &r["result"]["contents"][0];
        assert_eq!(c["text"], MD, "{r}");
        assert_eq!(c["mimeType"], "text/markdown");
        assert!(r["result"]["ttlMs"].is_number(), "{r}");

        let session = e.new_session();
        let init = send(&e, &session, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})).await;
        assert!(init["result"].is_object(), "{init}");
        let legacy = |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let r = send(
            &e,
            &session,
            legacy(
                2,
                "resources/read",
                json!({"uri": "skill://pdf-processing/templates/invoice.md"}),
            ),
        )
        .await;
        assert_eq!(r["result"]["contents"][0]["text"], "invoice", "{r}");
        let r = send(
            &e,
            &session,
            legacy(
                3,
                "skills/get",
                json!({"uri": "skill://acme/refunds/SKILL.md"}),
            ),
        )
        .await;
        assert_eq!(
            r["result"]["skill"]["frontmatter"]["name"], "refunds",
            "{r}"
        );
        let r = send(
            &e,
            &session,
            legacy(
                4,
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing/templates"}),
            ),
        )
        .await;
        assert_eq!(r["result"]["resources"][0]["name"], "invoice.md", "{r}");
        // An unknown skill:// URI falls through to the ordinary resources: not found.
        let r = send(
            &e,
            &session,
            legacy(
                5,
                "resources/read",
                json!({"uri": "skill://pdf-processing/nope.md"}),
            ),
        )
        .await;
        assert!(r["error"].is_object(), "{r}");
    });
}

#[test]
fn directory_read_lists_children_pages_and_refuses_non_directories() {
    run(async {
        let e = engine(Some(skills()));
        let first = answer(
            &e,
            modern(
                1,
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing"}),
            ),
        )
        .await;
        assert_eq!(
            first["result"]["resources"][0]["uri"], "skill://pdf-processing/SKILL.md",
            "{first}"
        );
        let next = first["result"]["nextCursor"].as_str().unwrap().to_owned();
        let second = answer(
            &e,
            modern(
                2,
                "resources/directory/read",
                json!({"uri": "skill://pdf-processing", "cursor": next}),
            ),
        )
        .await;
        assert_eq!(
            second["result"]["resources"][0]["mimeType"], "inode/directory",
            "{second}"
        );
        assert_eq!(
            second["result"]["resources"][0]["uri"],
            "skill://pdf-processing/templates"
        );
        assert!(second["result"].get("nextCursor").is_none());
        for uri in [
            json!("skill://pdf-processing/SKILL.md"),
            json!("skill://missing"),
            json!(7),
        ] {
            let r = answer(
                &e,
                modern(3, "resources/directory/read", json!({"uri": uri})),
            )
            .await;
            assert_eq!(r["error"]["code"], -32602, "{uri}: {r}");
        }
    });
}

/// Every `resources/list` page of `e`, walked by cursor: the URIs, and the entries by URI.
async fn resources_listed(e: &Engine) -> (Vec<String>, Vec<Value>) {
    let session = e.new_session();
    let (mut uris, mut entries, mut cursor) = (Vec::new(), Vec::new(), None::<Value>);
    for id in 1..20 {
        let params = cursor.take().map_or(json!({}), |c| json!({"cursor": c}));
        let page = send(e, &session, modern(id, "resources/list", params)).await;
        for r in page["result"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            uris.push(r["uri"].as_str().unwrap_or_default().to_owned());
            entries.push(r);
        }
        match page["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => return (uris, entries),
        }
    }
    panic!("resources/list never ended: {uris:?}");
}

struct Listed;
impl crate::resources::ResourceLister for Listed {
    fn list(
        &self,
        after: Option<String>,
        limit: usize,
    ) -> crate::registry::BoxFuture<'static, Vec<crate::resources::ResourceDefinition>> {
        let all = ["a://listed", "zz://listed"];
        let out = all
            .iter()
            .filter(|u| after.as_deref().is_none_or(|a| **u > a))
            .take(limit)
            .map(|u| crate::resources::ResourceDefinition::new(*u, *u))
            .collect();
        Box::pin(async move { out })
    }
}

#[test]
fn resources_list_lists_each_skill_md_with_its_frontmatter_name_and_description() {
    run(async {
        // With static resources on both sides of `skill://` and a page of one, the SKILL.md
        // entries are merged into the URI order and the cursor walks through all of them.
        let resources = Arc::new(crate::resources::McpResourceRegistry::new());
        for uri in ["file:///a.txt", "zz://last"] {
            resources
                .add_text(crate::resources::ResourceDefinition::new(uri, uri), "x")
                .unwrap();
        }
        let e = Engine::builder(
            McpServerConfig::default().with_page_size(1),
            Arc::new(McpToolRegistry::new()),
        )
        .resources(resources.clone())
        .skills(skills())
        .build();
        let (uris, entries) = resources_listed(&e).await;
        assert_eq!(
            uris,
            [
                "file:///a.txt",
                "skill://acme/refunds/SKILL.md",
                "skill://pdf-processing/SKILL.md",
                "zz://last"
            ],
            "{entries:?}"
        );
        let pdf = &entries[2];
        assert_eq!(pdf["name"], "pdf-processing", "{pdf}");
        assert_eq!(pdf["description"], "Extract PDFs", "{pdf}");
        assert_eq!(pdf["mimeType"], "text/markdown", "{pdf}");
        // Supporting files are read through the manifest, not listed.
        assert!(!uris.iter().any(|u| u.contains("invoice")), "{uris:?}");

        // A skill added later is listed (the cached pages go stale).
        e.skills()
            .unwrap()
            .add(SkillDefinition::new("later", "---\nname: later\ndescription: L\n---\n").unwrap())
            .unwrap();
        let (uris, _) = resources_listed(&e).await;
        assert!(
            uris.contains(&"skill://later/SKILL.md".to_owned()),
            "{uris:?}"
        );

        // Through the listers' path too.
        resources.add_lister(Listed);
        let (uris, _) = resources_listed(&e).await;
        assert_eq!(
            uris,
            [
                "a://listed",
                "file:///a.txt",
                "skill://acme/refunds/SKILL.md",
                "skill://later/SKILL.md",
                "skill://pdf-processing/SKILL.md",
                "zz://last",
                "zz://listed"
            ]
        );

        // With skills and no resource registry of their own, the SKILL.md files alone.
        let (uris, _) = resources_listed(&engine(Some(skills()))).await;
        assert_eq!(
            uris,
            [
                "skill://acme/refunds/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ]
        );
    });
}
