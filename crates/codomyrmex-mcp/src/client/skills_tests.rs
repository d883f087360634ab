//! The client's skills API against a scripted server that lies: digests, sizes and
//! frontmatter that do not match what it serves, unlisted files, malformed entries.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::*;
use crate::Era;

const SKILL: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const BODY: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_BODY: &str = "Supporting content.\n";

/// Answers a request (`method`, `params`) with a result, or `None` for "method not found".
type Script = Arc<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

/// A client connected to a server that answers with `script` and records every
/// `resources/read` URI.
fn client_of(script: Script) -> (McpClient, Arc<Mutex<Vec<String>>>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let reads = Arc::new(Mutex::new(Vec::new()));
    let seen = reads.clone();
    tokio::spawn(async move {
        let (r, mut w) = tokio::io::split(server_io);
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let (Some(id), Some(method)) =
                (msg.get("id"), msg.get("method").and_then(Value::as_str))
            else {
                continue;
            };
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            if method == "resources/read" {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                seen.lock().unwrap().push(uri.to_owned());
            }
            let answer = match script(method, &params) {
                Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                None => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})
                }
            };
            let mut bytes = serde_json::to_vec(&answer).unwrap();
            bytes.push(b'\n');
            if w.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    (McpClient::connect(cr, cw, Era::Legacy), reads)
}

fn entry(skill_md: &str) -> Value {
    json!({
        "uri": SKILL,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": SKILL, "digest": digest_of(skill_md.as_bytes()), "size": skill_md.len()},
            {"uri": FORMS, "digest": digest_of(FORMS_BODY.as_bytes()), "size": FORMS_BODY.len()},
        ],
    })
}

/// A server that lists `listed` and serves `served` as SKILL.md (and FORMS.md as listed).
fn server(listed: Value, served: &'static str) -> Script {
    Arc::new(move |method, params| match method {
        "skills/list" => Some(json!({"skills": [listed.clone()]})),
        "skills/get" => Some(json!({"skill": listed.clone()})),
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            let text = if uri == FORMS { FORMS_BODY } else { served };
            Some(json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
        }
        _ => None,
    })
}

async fn listed_one(client: &McpClient) -> Skill {
    let listing = client.list_skills().await.unwrap();
    assert!(listing.invalid.is_empty(), "{:?}", listing.invalid);
    assert_eq!(listing.skills.len(), 1);
    listing.skills.into_iter().next().unwrap()
}

#[tokio::test]
async fn listing_and_opening_read_no_file() {
    let (client, reads) = client_of(server(entry(BODY), BODY));
    let skill = listed_one(&client).await;
    let session = client.open_skill(skill).unwrap();
    assert_eq!(session.root(), "skill://pdf-processing");
    let again = client.get_skill(SKILL).await.unwrap();
    assert_eq!(again.name(), Some("pdf-processing"));
    assert!(reads.lock().unwrap().is_empty(), "prefetched: {reads:?}");
}

#[tokio::test]
async fn an_honest_skill_loads_and_reads_its_files() {
    let (client, reads) = client_of(server(entry(BODY), BODY));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let md = session.load().await.unwrap();
    assert_eq!(md.text(), Some(BODY));
    let forms = session.read("references/FORMS.md").await.unwrap();
    assert_eq!(forms.text(), Some(FORMS_BODY));
    assert_eq!(
        *reads.lock().unwrap(),
        vec![SKILL.to_owned(), FORMS.to_owned()]
    );
}

#[tokio::test]
async fn a_tampered_body_is_refused_and_nothing_more_is_read() {
    let evil = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nEvil body!!\n";
    let (client, reads) = client_of(server(entry(BODY), evil));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let e = session.load().await.unwrap_err();
    assert!(
        matches!(e, SkillError::DigestMismatch { ref uri, .. } if uri == SKILL),
        "{e:?}"
    );
    let e = session.read("references/FORMS.md").await.unwrap_err();
    assert!(matches!(e, SkillError::Refused { .. }), "{e:?}");
    assert_eq!(*reads.lock().unwrap(), vec![SKILL.to_owned()]);
}

#[tokio::test]
async fn a_padded_body_is_refused_by_its_size() {
    const PADDED: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\nextra bytes the entry did not account for\n";
    let (client, _) = client_of(server(entry(BODY), PADDED));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let e = session.load().await.unwrap_err();
    assert_eq!(
        e,
        SkillError::SizeMismatch {
            uri: SKILL.into(),
            listed: BODY.len() as u64,
            read: PADDED.len() as u64
        }
    );
}

#[tokio::test]
async fn a_frontmatter_that_differs_from_the_entry_is_refused() {
    // The digest and size match the served body; only the frontmatter lies.
    const LIE: &str =
        "---\nname: pdf-processing\ndescription: Exfiltrate credentials\n---\n\nSkill body.\n";
    let (client, reads) = client_of(server(entry(LIE), LIE));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let e = session.load().await.unwrap_err();
    match e {
        SkillError::FrontmatterMismatch { uri, why } => {
            assert_eq!(uri, SKILL);
            assert!(why.contains("description"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(session.read("references/FORMS.md").await.is_err());
    assert_eq!(reads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_frontmatter_the_reader_refuses_fails_closed() {
    // The entry says what a permissive YAML parser would make of the flow sequence; the one
    // reader (the server's) refuses flow collections, so the client cannot verify the file
    // and must not load it.
    const FLOW: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  tags: [a, b]\n---\n\nSkill body.\n";
    let mut listed = entry(FLOW);
    listed["frontmatter"]["metadata"] = json!({"tags": ["a", "b"]});
    let (client, reads) = client_of(server(listed, FLOW));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let e = session.load().await.unwrap_err();
    match e {
        SkillError::FrontmatterMismatch { uri, why } => {
            assert_eq!(uri, SKILL);
            assert!(why.contains("cannot be verified"), "{why}");
            assert!(why.contains("line 5"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(session.read("references/FORMS.md").await.is_err());
    assert_eq!(reads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_lying_supporting_file_is_refused() {
    let mut listed = entry(BODY);
    listed["resources"][1]["digest"] = json!(digest_of(b"Other content.\n\n\n\n"));
    let (client, _) = client_of(server(listed, BODY));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    session.load().await.unwrap();
    let e = session.read("references/FORMS.md").await.unwrap_err();
    assert!(
        matches!(e, SkillError::DigestMismatch { ref uri, .. } if uri == FORMS),
        "{e:?}"
    );
}

#[tokio::test]
async fn unlisted_files_and_reads_before_loading_are_refused_without_a_request() {
    let (client, reads) = client_of(server(entry(BODY), BODY));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let e = session.read("references/FORMS.md").await.unwrap_err();
    assert!(matches!(e, SkillError::NotLoaded { .. }), "{e:?}");
    session.load().await.unwrap();
    let e = session.read("scripts/evil.sh").await.unwrap_err();
    assert_eq!(
        e,
        SkillError::Unlisted {
            uri: "skill://pdf-processing/scripts/evil.sh".into()
        }
    );
    assert_eq!(*reads.lock().unwrap(), vec![SKILL.to_owned()]);
}

#[tokio::test]
async fn malformed_entries_are_left_out_with_their_reason() {
    let good = entry(BODY);
    let mut no_resources = entry(BODY);
    no_resources.as_object_mut().unwrap().remove("resources");
    let mut bad_digest = entry(BODY);
    bad_digest["resources"][0]["digest"] = json!("sha256:ABC");
    let mut wrong_name = entry(BODY);
    wrong_name["frontmatter"]["name"] = json!("other");
    let mut outside = entry(BODY);
    outside["resources"][1]["uri"] = json!("skill://other/SKILL.md");
    let mut traversal = entry(BODY);
    traversal["resources"][1]["uri"] = json!("skill://pdf-processing/../other/SKILL.md");
    let mut no_skill_md = entry(BODY);
    no_skill_md["resources"].as_array_mut().unwrap().remove(0);
    let mut too_big = entry(BODY);
    too_big["resources"][1]["size"] = json!(MAX_SKILL_TOTAL_BYTES);
    let many: Vec<Value> = (0..=MAX_SKILL_RESOURCES)
        .map(|i| {
            let uri = if i == 0 {
                SKILL.to_owned()
            } else {
                format!("skill://pdf-processing/f{i}")
            };
            json!({"uri": uri, "digest": digest_of(b""), "size": 0})
        })
        .collect();
    let mut too_many = entry(BODY);
    too_many["resources"] = Value::Array(many);
    let mut other = entry(BODY);
    other["resources"] = json!("generated");
    let page = json!([
        good,
        no_resources,
        bad_digest,
        wrong_name,
        outside,
        traversal,
        no_skill_md,
        too_big,
        too_many,
        other
    ]);
    let script: Script = Arc::new(move |method, _| {
        (method == "skills/list").then(|| json!({"skills": page.clone()}))
    });
    let (client, _) = client_of(script);
    let listing = client.list_skills().await.unwrap();
    assert_eq!(listing.skills.len(), 1);
    assert_eq!(listing.invalid.len(), 9, "{:#?}", listing.invalid);
    let reasons: Vec<&str> = listing.invalid.iter().map(|i| i.reason.as_str()).collect();
    for (reason, want) in reasons.iter().zip([
        "resources",
        "digest",
        "not the path's last segment",
        "not in the skill's directory",
        "not in the skill's directory",
        "do not list its SKILL.md",
        "bytes listed",
        "files listed",
        "dynamic",
    ]) {
        assert!(reason.contains(want), "{reason:?} should say {want:?}");
    }
}

#[tokio::test]
async fn the_listing_follows_pages_and_stops_at_a_cycle() {
    let script: Script = Arc::new(|method, params| {
        if method != "skills/list" {
            return None;
        }
        let next = match params.get("cursor").and_then(Value::as_str) {
            None => "a",
            Some("a") => "b",
            _ => "a",
        };
        Some(json!({"skills": [entry(BODY)], "nextCursor": next}))
    });
    let (client, _) = client_of(script);
    let e = client.list_skills().await.unwrap_err();
    assert!(
        matches!(e, SkillError::Client(ClientError::Protocol(ref m)) if m.contains("again")),
        "{e:?}"
    );
}

#[tokio::test]
async fn skills_get_answering_for_another_skill_is_refused() {
    // A valid entry, of another skill.
    let other = json!({
        "uri": "skill://else/SKILL.md",
        "frontmatter": {"name": "else", "description": "Another skill"},
        "resources": [{"uri": "skill://else/SKILL.md", "digest": digest_of(b""), "size": 0}],
    });
    let (client, _) = client_of(server(other, BODY));
    let e = client.get_skill(SKILL).await.unwrap_err();
    assert!(
        matches!(e, SkillError::InvalidEntry { ref why, .. } if why.contains("answered with the entry of \"skill://else/SKILL.md\"")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_dynamic_skill_reads_only_inside_its_directory() {
    let mut listed = entry(BODY);
    listed["resources"] = json!("dynamic");
    let (client, reads) = client_of(server(listed, BODY));
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    session.load().await.unwrap();
    session.read("references/FORMS.md").await.unwrap();
    let e = session.read("skill://other/SKILL.md").await.unwrap_err();
    assert!(matches!(e, SkillError::Unlisted { .. }), "{e:?}");
    assert_eq!(reads.lock().unwrap().len(), 2);
}

mod frontmatter {
    use super::super::differing_fields;
    use codomyrmex_mcp_core::skills::frontmatter;
    use serde_json::{Map, Value, json};

    /// The reader the client verifies with: the server's, the one reader.
    fn read(text: &str) -> Result<Map<String, Value>, String> {
        frontmatter::parse(text.as_bytes()).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_yaml_skill_authors_write() {
        let text = "---\r\nname: refunds   # the skill\r\ndescription: >-\r\n  Process refund\r\n  requests.\r\nlicense: 'Apache-2.0'\r\nmetadata:\r\n  version: \"2.1.0\"\r\n  tags:\r\n    - a\r\n    - \"b c\"\r\n  level: 2\r\n  ratio: 0.5\r\n  draft: false\r\n  owner: ~\r\nallowed-tools:\r\n- Read\r\n- Bash(git:*)\r\nnotes: |\r\n  line one\r\n  line two\r\n---\r\nbody\r\n";
        let front = read(text).unwrap();
        assert_eq!(
            serde_json::Value::Object(front),
            json!({
                "name": "refunds",
                "description": "Process refund requests.",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1.0", "tags": ["a", "b c"], "level": 2, "ratio": 0.5, "draft": false, "owner": null},
                "allowed-tools": ["Read", "Bash(git:*)"],
                "notes": "line one\nline two\n",
            })
        );
    }

    #[test]
    fn refuses_what_it_does_not_read() {
        for text in [
            "no frontmatter",
            "---\nname: a\n",
            "---\nname: &x a\n---\n",
            "---\nname: a\nname: b\n---\n",
            "---\nname: \"open\n---\n",
            "---\n- a\n---\n",
            "---\nkey: [a, b\n---\n",
        ] {
            assert!(read(text).is_err(), "{text:?} was read");
        }
    }

    #[test]
    fn flow_collections_are_refused_with_a_reason() {
        // The server's reader refuses them (hosts' YAML parsers may type their plain scalars
        // differently), so the client refuses them too: one reader, one rendering.
        for text in [
            "---\ntags: [a, \"b c\"]\n---\n",
            "---\nmetadata: {k: v}\n---\n",
        ] {
            let e = read(text).unwrap_err();
            assert!(
                e.contains("line 2") && e.contains("quote it"),
                "{text:?}: {e}"
            );
        }
    }

    proptest::proptest! {
        /// Whatever a server writes between the `---` lines is read or refused, never a
        /// panic.
        #[test]
        fn any_frontmatter_is_read_or_refused(body in "[-a-zé: \\[\\]{}'\"#|>+\n\t ~0-9.\\\\&*!]{0,200}") {
            let _ = read(&format!("---\n{body}\n---\n"));
        }
    }

    #[test]
    fn numbers_compare_by_value_and_missing_fields_as_null() {
        let file = read("---\nv: 2\nx: ~\n---\n").unwrap();
        let entry = json!({"v": 2.0}).as_object().unwrap().clone();
        assert!(differing_fields(&file, &entry).is_empty());
        let entry = json!({"v": "2"}).as_object().unwrap().clone();
        assert_eq!(differing_fields(&file, &entry), vec!["v".to_owned()]);
    }
}

/// A server that lists `entry(BODY)` and answers `resources/directory/read` with
/// `children(uri, cursor)`, recording each directory asked for.
fn dir_server(
    children: impl Fn(&str, Option<&str>) -> Value + Send + Sync + 'static,
) -> (Script, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let script: Script = Arc::new(move |method, params| match method {
        "skills/list" => Some(json!({"skills": [entry(BODY)]})),
        "resources/directory/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            seen.lock().unwrap().push(uri.to_owned());
            Some(children(uri, params.get("cursor").and_then(Value::as_str)))
        }
        _ => None,
    });
    (script, asked)
}

fn md_child(size: usize) -> Value {
    json!({"uri": SKILL, "name": "SKILL.md", "mimeType": "text/markdown", "size": size})
}

fn references_child() -> Value {
    json!({"uri": "skill://pdf-processing/references", "name": "references", "mimeType": "inode/directory"})
}

fn forms_child(size: usize) -> Value {
    json!({"uri": FORMS, "name": "FORMS.md", "mimeType": "text/markdown", "size": size})
}

#[tokio::test]
async fn a_directory_is_read_page_by_page_and_checked_against_the_entry_reading_no_file() {
    let (script, asked) = dir_server(|uri, cursor| match (uri, cursor) {
        ("skill://pdf-processing", None) => {
            json!({"resources": [md_child(BODY.len())], "nextCursor": "p2"})
        }
        ("skill://pdf-processing", Some("p2")) => json!({"resources": [references_child()]}),
        _ => json!({"resources": [forms_child(FORMS_BODY.len())]}),
    });
    let (client, reads) = client_of(script);
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    let root = session.list_directory("").await.unwrap();
    assert_eq!(
        root.iter().map(|c| c.uri.as_str()).collect::<Vec<_>>(),
        [SKILL, "skill://pdf-processing/references"]
    );
    assert!(root[1].is_directory());
    let refs = session.list_directory("references").await.unwrap();
    assert_eq!(refs[0].uri, FORMS);
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "skill://pdf-processing",
            "skill://pdf-processing",
            "skill://pdf-processing/references"
        ]
    );
    assert!(reads.lock().unwrap().is_empty(), "read: {reads:?}");
    // The plain call, outside any session.
    let plain = client
        .read_directory("skill://pdf-processing/references")
        .await
        .unwrap();
    assert_eq!(plain.len(), 1);
}

#[tokio::test]
async fn a_directory_that_contradicts_the_entry_is_refused_and_refuses_the_session() {
    type Case = (&'static str, fn(&str, Option<&str>) -> Value);
    let cases: [Case; 5] = [
        ("unlisted file", |_, _| {
            json!({"resources": [md_child(BODY.len()), references_child(),
                {"uri": "skill://pdf-processing/extra.md", "name": "extra.md", "size": 1}]})
        }),
        (
            "size",
            |_, _| json!({"resources": [md_child(BODY.len() + 1), references_child()]}),
        ),
        ("missing", |_, _| json!({"resources": [references_child()]})),
        ("empty directory", |_, _| {
            json!({"resources": [md_child(BODY.len()), references_child(),
                {"uri": "skill://pdf-processing/empty", "name": "empty", "mimeType": "inode/directory"}]})
        }),
        (
            "not a child",
            |_, _| json!({"resources": [md_child(BODY.len()), references_child(), forms_child(FORMS_BODY.len())]}),
        ),
    ];
    for (what, children) in cases {
        let (script, _) = dir_server(children);
        let (client, _) = client_of(script);
        let mut session = client.open_skill(listed_one(&client).await).unwrap();
        let e = session.list_directory("").await.unwrap_err();
        let expected = match what {
            "unlisted file" | "empty directory" => matches!(e, SkillError::Unlisted { .. }),
            "size" => matches!(e, SkillError::SizeMismatch { .. }),
            _ => matches!(e, SkillError::InvalidEntry { .. }),
        };
        assert!(expected, "{what}: {e:?}");
        let again = session.list_directory("").await.unwrap_err();
        assert!(
            matches!(again, SkillError::Refused { .. }),
            "{what}: {again:?}"
        );
    }
}

#[tokio::test]
async fn a_directory_outside_the_skill_is_refused_without_a_request_and_cycles_end() {
    let (script, asked) = dir_server(|_, cursor| {
        let next = if cursor == Some("a") { "b" } else { "a" };
        json!({"resources": [], "nextCursor": next})
    });
    let (client, _) = client_of(script);
    let mut session = client.open_skill(listed_one(&client).await).unwrap();
    for outside in ["skill://other", "../other", "skill://pdf-processing-x"] {
        let e = session.list_directory(outside).await.unwrap_err();
        assert!(matches!(e, SkillError::Unlisted { .. }), "{outside}: {e:?}");
        session = client.open_skill(listed_one(&client).await).unwrap();
    }
    assert!(asked.lock().unwrap().is_empty(), "{asked:?}");
    let e = client.read_directory("skill://x").await.unwrap_err();
    assert!(
        matches!(e, SkillError::Client(ClientError::Protocol(ref m)) if m.contains("again")),
        "{e:?}"
    );
}
