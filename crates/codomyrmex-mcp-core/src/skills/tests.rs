use serde_json::json;

use super::*;
use crate::wire::skills::digest_of;

const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n# PDF\n";

fn pdf() -> SkillDefinition {
    SkillDefinition::new("pdf-processing", MD)
        .unwrap()
        .with_file("references/FORMS.md", "forms")
        .unwrap()
        .with_file("templates/regional/eu invoice.md", "eu")
        .unwrap()
        .with_file("logo.png", vec![0x89, b'P', b'N', b'G', 0xff])
        .unwrap()
}

#[test]
fn an_entry_lists_every_file_with_its_digest_and_size_skill_md_first() {
    let entry = pdf().entry();
    assert_eq!(entry.uri, "skill://pdf-processing/SKILL.md");
    assert_eq!(entry.name(), Some("pdf-processing"));
    let files = entry.resources.files().unwrap();
    assert_eq!(files.len(), 4);
    assert_eq!(files[0].uri, entry.uri);
    assert_eq!(files[0].digest, digest_of(MD.as_bytes()));
    assert_eq!(files[0].size, MD.len() as u64);
    let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert!(
        uris.contains(&"skill://pdf-processing/templates/regional/eu%20invoice.md"),
        "{uris:?}"
    );
    assert_eq!(pdf().dynamic().entry().resources, SkillResources::Dynamic);
}

#[test]
fn reads_return_the_bytes_the_digests_cover() {
    let reg = McpSkillRegistry::new();
    reg.add(pdf()).unwrap();
    let entry = reg.get("skill://pdf-processing/SKILL.md").unwrap().entry();
    for f in entry.resources.files().unwrap() {
        let bytes = match reg.read_file(&f.uri).unwrap() {
            ResourceContents::Text { text, .. } => text.into_bytes(),
            ResourceContents::Blob { blob, .. } => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .unwrap()
            }
        };
        assert!(f.matches(&bytes), "{}", f.uri);
    }
    let Some(ResourceContents::Text { mime_type, .. }) =
        reg.read_file("skill://pdf-processing/SKILL.md")
    else {
        panic!("SKILL.md is text");
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert!(reg.read_file("skill://pdf-processing/nope.md").is_none());
    assert!(reg.read_file("skill://pdf-processing").is_none());
    assert!(reg.read_file("skill://other/SKILL.md").is_none());
    assert!(reg.read_file("file:///pdf-processing/SKILL.md").is_none());
}

#[test]
fn directories_list_direct_children_and_refuse_files() {
    let reg = McpSkillRegistry::new();
    reg.add(pdf()).unwrap();
    let root = reg.directory("skill://pdf-processing").unwrap();
    let names: Vec<(&str, bool)> = root
        .values()
        .map(|e| (e.name.as_str(), e.is_directory()))
        .collect();
    assert_eq!(
        names,
        [
            ("SKILL.md", false),
            ("logo.png", false),
            ("references", true),
            ("templates", true)
        ]
    );
    let regional = reg
        .directory("skill://pdf-processing/templates/regional")
        .unwrap();
    let child = regional.values().next().unwrap();
    assert_eq!(child.name, "eu invoice.md");
    assert_eq!(child.size, Some(2));
    assert!(reg.directory("skill://pdf-processing/SKILL.md").is_none());
    assert!(reg.directory("skill://pdf-processing/templates/").is_none());
    assert!(reg.directory("skill://pdf-processing/missing").is_none());
    assert!(reg.directory("skill://pdf").is_none());
}

#[test]
fn names_and_paths_follow_the_rules() {
    for (path, md, needle) in [
        ("Bad", MD, "lowercase"),
        ("a--b", MD, "hyphen"),
        ("-a", MD, "hyphen"),
        (&"a".repeat(65), MD, "1 to 64"),
        ("x/../pdf-processing", MD, "segment"),
        ("ho st/pdf-processing", MD, "host name"),
        ("other", MD, "must equal the last path segment"),
        (
            "pdf-processing",
            "---\nname: pdf-processing\n---\n",
            "description",
        ),
        (
            "pdf-processing",
            "---\nname: pdf-processing\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n",
            "reserved",
        ),
        (
            "pdf-processing",
            "no frontmatter",
            "begin with YAML frontmatter",
        ),
    ] {
        let e = SkillDefinition::new(path, md).unwrap_err().to_string();
        assert!(e.contains(needle), "{path:?}: {e}");
    }
    // A prefix is an organizational path; the name is the last segment.
    let s = SkillDefinition::new(
        "acme/billing/refunds",
        "---\nname: refunds\ndescription: Refunds\n---\n",
    )
    .unwrap();
    assert_eq!(s.uri(), "skill://acme/billing/refunds/SKILL.md");
    assert_eq!(s.name(), "refunds");
    for rel in ["", "a//b", "../x", "a/./b", "a\\b", "SKILL.md"] {
        assert!(pdf().with_file(rel, "x").is_err(), "{rel:?}");
    }
    assert!(pdf().with_file("references/FORMS.md", "again").is_err());
}

#[test]
fn meta_keys_need_their_own_prefix() {
    let s = pdf().with_meta("com.example/origin", json!("x")).unwrap();
    assert_eq!(
        s.skill_md_resource()["_meta"],
        json!({"com.example/origin": "x"})
    );
    assert!(
        pdf()
            .with_meta("io.modelcontextprotocol.skills/x", json!(1))
            .unwrap_err()
            .to_string()
            .contains("reserved")
    );
    assert!(
        pdf()
            .with_meta("origin", json!(1))
            .unwrap_err()
            .to_string()
            .contains("reverse-domain")
    );
}

#[test]
fn the_limits_are_enforced_when_a_skill_is_built() {
    let mut s = SkillDefinition::new("pdf-processing", MD).unwrap();
    for i in 1..MAX_SKILL_RESOURCES {
        s = s.with_file(&format!("f{i}"), "x").unwrap();
    }
    let e = s.with_file("one-more", "x").unwrap_err();
    assert!(matches!(e, SkillError::TooLarge { .. }), "{e}");
    let big = vec![b'x'; usize::try_from(MAX_SKILL_TOTAL_BYTES).unwrap() - MD.len()];
    let s = SkillDefinition::new("pdf-processing", MD)
        .unwrap()
        .with_file("big", big)
        .unwrap();
    assert_eq!(s.total_size(), MAX_SKILL_TOTAL_BYTES);
    let e = s.with_file("x", "1").unwrap_err().to_string();
    assert!(e.contains("16 MiB"), "{e}");
}

#[test]
fn the_registry_refuses_a_second_skill_at_one_uri_and_pages_by_uri() {
    let reg = McpSkillRegistry::new();
    reg.add(pdf()).unwrap();
    assert_eq!(
        reg.add(pdf()),
        Err(SkillError::Duplicate(
            "skill://pdf-processing/SKILL.md".into()
        ))
    );
    reg.add(SkillDefinition::new("a-skill", "---\nname: a-skill\ndescription: A\n---\n").unwrap())
        .unwrap();
    let (page, next) = reg.page(None, 1);
    assert_eq!(page[0]["uri"], json!("skill://a-skill/SKILL.md"));
    let (page, last) = reg.page(next.as_deref(), 1);
    assert_eq!(page[0]["uri"], json!("skill://pdf-processing/SKILL.md"));
    assert_eq!(last, None);
    assert!(reg.remove("skill://a-skill/SKILL.md"));
    assert_eq!(reg.len(), 1);
}
