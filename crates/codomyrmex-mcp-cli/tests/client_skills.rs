//! `client skills` and `client skill NAME` against a stdio server with skills (the Skills
//! extension, SEP-2640): listing reads no file; a skill's SKILL.md is printed only once
//! verified against its entry, inert on the terminal and exact with `--json`; a lying
//! server's content is refused; a name two skills share is never resolved silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{Ran, json_of, python_server, run};

/// A 2025-11-25 server with skills. Every `resources/read` URI is appended to the file
/// `READS` (set below). `pdf-processing` is honest (with control characters in its
/// description and body); `liar` serves a SKILL.md its digest does not match; two skills
/// share the name `dup`; `broken` has no `resources`.
const SKILLS_SERVER: &str = r#"
import hashlib
H = "\x1b]0;pwned\x07\x1b[2J\u202e\u200b"
def entry(uri, name, desc, files):
    return {"uri": uri, "frontmatter": {"name": name, "description": desc},
            "resources": [{"uri": u, "digest": "sha256:" + hashlib.sha256(b.encode()).hexdigest(), "size": len(b.encode())} for u, b in files]}
PDF_DESC = "Extract PDFs" + H
PDF_MD = '---\nname: pdf-processing\ndescription: "Extract PDFs\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\u200b"\n---\n\nSkill body' + H + '\nsecond line\n'
FORMS = "Supporting content.\n"
FILES = {
    "skill://pdf-processing/SKILL.md": PDF_MD,
    "skill://pdf-processing/references/FORMS.md": FORMS,
    "skill://liar/SKILL.md": "---\nname: liar\ndescription: Lies\n---\nEvil body\n",
    "skill://a/dup/SKILL.md": "---\nname: dup\ndescription: One\n---\n",
    "skill://b/dup/SKILL.md": "---\nname: dup\ndescription: Two\n---\n",
}
SKILLS = [
    entry("skill://pdf-processing/SKILL.md", "pdf-processing", PDF_DESC,
          [("skill://pdf-processing/SKILL.md", PDF_MD), ("skill://pdf-processing/references/FORMS.md", FORMS)]),
    entry("skill://liar/SKILL.md", "liar", "Lies", [("skill://liar/SKILL.md", "---\nname: liar\ndescription: Lies\n---\nHonest body\n")]),
    entry("skill://a/dup/SKILL.md", "dup", "One", [("skill://a/dup/SKILL.md", FILES["skill://a/dup/SKILL.md"])]),
    entry("skill://b/dup/SKILL.md", "dup", "Two", [("skill://b/dup/SKILL.md", FILES["skill://b/dup/SKILL.md"])]),
    {"uri": "skill://broken/SKILL.md", "frontmatter": {"name": "broken", "description": "No resources"}},
]
def answer(method, p, m):
    if method == "initialize":
        return initialized("skills", {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})
    if method == "skills/list":
        return {"result": {"skills": SKILLS}}
    if method == "skills/get":
        for s in SKILLS:
            if s["uri"] == p.get("uri"):
                return {"result": {"skill": s}}
        return {"error": {"code": -32602, "message": "no such skill"}}
    if method == "resources/read":
        with open(READS, "a") as f:
            f.write(p.get("uri") + "\n")
        uri = p.get("uri")
        return {"result": {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": FILES.get(uri, "")}]}}
    return NOT_FOUND
serve(answer)
"#;

/// What must never reach the terminal.
const FORBIDDEN: [char; 5] = ['\x1b', '\x07', '\u{202e}', '\u{200b}', '\r'];

struct Fixture {
    dir: tempfile::TempDir,
    server: String,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let reads = dir.path().join("reads.txt");
        let script = format!("READS = {:?}\n{SKILLS_SERVER}", reads.display().to_string());
        let server = python_server(dir.path(), "skills.py", &script);
        Self { dir, server }
    }

    fn client(&self, rest: &[&str]) -> Ran {
        run(&[
            &["client", "--stdio", &self.server, "--era", "legacy"][..],
            rest,
        ]
        .concat())
    }

    /// The URIs the server was asked to read, in order.
    fn reads(&self) -> Vec<String> {
        read_lines(&self.dir.path().join("reads.txt"))
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn assert_inert(what: &str, r: &Ran) {
    for c in FORBIDDEN {
        assert!(
            !r.stdout.contains(c) && !r.stderr.contains(c),
            "{what}: {c:?} reached the terminal: {:?} {:?}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn skills_lists_every_skill_and_reads_no_file() {
    let f = Fixture::new();
    let r = f.client(&["skills"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_inert("skills", &r);
    for shown in [
        "pdf-processing  skill://pdf-processing/SKILL.md  [2 file(s)]",
        "Extract PDFs]0;pwned[2J",
        "dup  skill://a/dup/SKILL.md",
        "dup  skill://b/dup/SKILL.md",
        "left out: skill://broken/SKILL.md: invalid skill entry skill://broken/SKILL.md: missing field `resources`",
    ] {
        assert!(r.stdout.contains(shown), "{shown:?} not in {}", r.stdout);
    }
    assert!(f.reads().is_empty(), "listing read {:?}", f.reads());
}

#[test]
fn skills_json_is_the_exact_listing() {
    let f = Fixture::new();
    let listing = json_of(&f.client(&["--json", "skills"]));
    let skills = listing["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 4);
    assert_eq!(
        skills[0]["frontmatter"]["description"],
        json!("Extract PDFs\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}\u{200b}")
    );
    assert_eq!(
        listing["invalid"][0]["uri"],
        json!("skill://broken/SKILL.md")
    );
}

#[test]
fn skill_prints_its_verified_skill_md_and_file_list_inert() {
    let f = Fixture::new();
    let r = f.client(&["skill", "pdf-processing"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_inert("skill", &r);
    for shown in [
        "files:\n  skill://pdf-processing/SKILL.md  ",
        "  skill://pdf-processing/references/FORMS.md  20 bytes  sha256:",
        "Skill body]0;pwned[2J\nsecond line\n",
    ] {
        assert!(r.stdout.contains(shown), "{shown:?} not in {}", r.stdout);
    }
    // SKILL.md only: the supporting file is listed, not read.
    assert_eq!(
        f.reads(),
        vec!["skill://pdf-processing/SKILL.md".to_owned()]
    );
}

#[test]
fn skill_json_is_exact() {
    let f = Fixture::new();
    let v: Value = json_of(&f.client(&["--json", "skill", "skill://pdf-processing/SKILL.md"]));
    assert_eq!(v["skill"]["uri"], json!("skill://pdf-processing/SKILL.md"));
    let content = v["content"].as_str().unwrap();
    assert!(
        content.ends_with("Skill body\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}\u{200b}\nsecond line\n")
    );
}

#[test]
fn a_skill_md_its_entry_does_not_describe_is_refused() {
    let f = Fixture::new();
    let r = f.client(&["skill", "liar"]);
    assert_eq!(r.code, Some(6), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "printed {:?}", r.stdout);
    assert!(!r.stderr.contains("Evil body"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("refused: skill://liar/SKILL.md: the server sent"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_shared_name_is_not_resolved_silently() {
    let f = Fixture::new();
    let r = f.client(&["skill", "dup"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("2 skills are named \"dup\"; name one by its URI: skill://a/dup/SKILL.md, skill://b/dup/SKILL.md"),
        "{}",
        r.stderr
    );
    let r = f.client(&["skill", "skill://b/dup/SKILL.md"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("description: Two"), "{}", r.stdout);
    assert!(f.reads() == vec!["skill://b/dup/SKILL.md".to_owned()]);
}
