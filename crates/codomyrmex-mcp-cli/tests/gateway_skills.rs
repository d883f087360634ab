//! Skills through the gateway (issue #30 item 3): two `serve --skills DIR` upstreams behind
//! one gateway, one skill name in both. `client skills` and `client skill NAME` through the
//! gateway list, read and verify the skills under `skill://NAMESPACE/...`; the entries are
//! the upstreams' with only their URIs renamed (same frontmatter, digests and sizes); the
//! skill whose name an earlier upstream has is left out, and `gateway --check` says so. The
//! client speaks each era to the gateway, and the gateway each era to one of its upstreams.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{BIN, Ran, json_of, run};

/// Writes a skill `path` (under `root`) with `files` (relative path, bytes).
fn skill(root: &Path, path: &str, description: &str, files: &[(&str, &[u8])]) {
    let dir = root.join(path);
    std::fs::create_dir_all(&dir).unwrap();
    let name = path.rsplit('/').next().unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nBody of {path}.\n"),
    )
    .unwrap();
    for (rel, bytes) in files {
        let file = dir.join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    config: String,
    /// `serve` of each upstream, as a `--stdio` command.
    kb: String,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        skill(
            &a.join("skills"),
            "acme/pdf-processing",
            "Extract PDFs",
            &[
                ("templates/form.md", b"A form.\n"),
                ("templates/deep/table.csv", b"a,b\n1,2\n"),
                ("bin/logo.bin", &[0, 159, 146, 150, 255, 1, 2]),
            ],
        );
        skill(&a.join("skills"), "shared-name", "The first one", &[]);
        skill(&b.join("skills"), "shared-name", "The second one", &[]);
        skill(
            &b.join("skills"),
            "release-notes",
            "Write release notes",
            &[("notes/x.md", b"x\n")],
        );
        let serve = |root: &Path| {
            format!(
                "{BIN} serve --root {} --skills {}",
                root.display(),
                root.join("skills").display()
            )
        };
        let config = dir.path().join("gateway.toml");
        let upstream = |name: &str, root: &Path, era: &str| {
            format!(
                "[[upstream]]\nname = \"{name}\"\ncommand = \"{BIN}\"\nera = \"{era}\"\n\
                 args = [\"serve\", \"--root\", \"{root}\", \"--skills\", \"{skills}\"]\n",
                root = root.display(),
                skills = root.join("skills").display()
            )
        };
        std::fs::write(
            &config,
            format!(
                "{}\n{}",
                upstream("kb", &a, "modern"),
                upstream("docs", &b, "legacy")
            ),
        )
        .unwrap();
        Self {
            kb: serve(&a),
            config: config.display().to_string(),
            _dir: dir,
        }
    }

    fn gateway(&self) -> String {
        format!("{BIN} gateway --config {}", self.config)
    }

    fn client(&self, server: &str, era: &str, rest: &[&str]) -> Ran {
        run(&[&["client", "--stdio", server, "--era", era][..], rest].concat())
    }
}

/// An entry with its URIs renamed back from under `namespace`.
fn renamed_back(entry: &Value, namespace: &str) -> Value {
    let back = |uri: &Value| {
        json!(
            uri.as_str()
                .unwrap()
                .replacen(&format!("skill://{namespace}/"), "skill://", 1)
        )
    };
    let mut e = entry.clone();
    e["uri"] = back(&entry["uri"]);
    for f in e["resources"].as_array_mut().unwrap() {
        f["uri"] = back(&f["uri"]);
    }
    e
}

fn check(era: &str) {
    let f = Fixture::new();
    let gateway = f.gateway();

    // Listing: every skill under its upstream's namespace, the colliding name once.
    let listed = json_of(&f.client(&gateway, era, &["--json", "skills"]));
    let uris: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["uri"].as_str().unwrap())
        .collect();
    // The upstreams are mounted as they answer: the first to mount `shared-name` keeps it.
    let mut sorted: Vec<&str> = uris
        .iter()
        .map(|u| match *u {
            "skill://kb/shared-name/SKILL.md" | "skill://docs/shared-name/SKILL.md" => "shared",
            other => other,
        })
        .collect();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "shared",
            "skill://docs/release-notes/SKILL.md",
            "skill://kb/acme/pdf-processing/SKILL.md",
        ],
        "{listed:#}"
    );
    assert_eq!(listed["invalid"], json!([]), "{listed:#}");

    // Only URIs are renamed: the entry is the upstream's own (frontmatter, digests, sizes).
    let direct = json_of(&f.client(&f.kb, era, &["--json", "skills"]));
    let direct_pdf = direct["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["frontmatter"]["name"] == "pdf-processing")
        .unwrap();
    let through = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["frontmatter"]["name"] == "pdf-processing")
        .unwrap();
    assert_eq!(&renamed_back(through, "kb"), direct_pdf);
    assert_eq!(through["resources"].as_array().unwrap().len(), 4);

    // Reading: SKILL.md verified through the gateway, and the tree from directory reads.
    let shown = f.client(&gateway, era, &["skill", "pdf-processing"]);
    assert_eq!(shown.code, Some(0), "{}\n{}", shown.stdout, shown.stderr);
    for line in [
        "files:\n",
        "  skill://kb/acme/pdf-processing/SKILL.md  ",
        "  skill://kb/acme/pdf-processing/templates/\n",
        "  skill://kb/acme/pdf-processing/templates/deep/\n",
        "  skill://kb/acme/pdf-processing/templates/deep/table.csv  8 bytes  sha256:",
        "  skill://kb/acme/pdf-processing/bin/logo.bin  7 bytes  sha256:",
        "Body of acme/pdf-processing.\n",
    ] {
        assert!(
            shown.stdout.contains(line),
            "{line:?} not in {}",
            shown.stdout
        );
    }
    let json = json_of(&f.client(
        &gateway,
        era,
        &["--json", "skill", "skill://docs/release-notes/SKILL.md"],
    ));
    assert_eq!(
        json["content"],
        "---\nname: release-notes\ndescription: Write release notes\n---\n# release-notes\nBody of release-notes.\n"
    );
    let files: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "skill://docs/release-notes/SKILL.md",
            "skill://docs/release-notes/notes",
            "skill://docs/release-notes/notes/x.md",
        ]
    );
    // The name both upstreams have names one skill, verified as any other.
    let shared = f.client(&gateway, era, &["skill", "shared-name"]);
    assert_eq!(shared.code, Some(0), "{}", shared.stderr);
    assert!(
        shared.stdout.contains("The first one") != shared.stdout.contains("The second one"),
        "{}",
        shared.stdout
    );
}

#[test]
fn skills_through_the_gateway_modern_client() {
    check("modern");
}

#[test]
fn skills_through_the_gateway_legacy_client() {
    check("legacy");
}

#[test]
fn check_reports_the_colliding_skill_name() {
    let f = Fixture::new();
    let r = run(&["gateway", "--check", "--config", &f.config]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("  skill    skill://kb/acme/pdf-processing/SKILL.md\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "left out: docs: skill \"shared-name\" (skill://docs/shared-name/SKILL.md): the name is already taken by skill://kb/shared-name/SKILL.md"
        ),
        "{}",
        r.stdout
    );
}
