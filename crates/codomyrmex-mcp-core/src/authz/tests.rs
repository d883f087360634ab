//! Rule matching: globs, callers, grants, denials.

use serde_json::{Map, Value, json};

use super::glob::Glob;
use super::*;

fn entry(name: &str) -> PolicyEntry {
    PolicyEntry {
        name: name.into(),
        ..PolicyEntry::default()
    }
}

fn claims(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn caller<'a>(
    subject: &'a str,
    scopes: &'a [String],
    claims: &'a Map<String, Value>,
) -> Caller<'a> {
    Caller {
        subject,
        scopes,
        claims,
    }
}

#[test]
fn globs_match_whole_names() {
    let g = |p: &str| Glob::new(p).unwrap();
    assert!(g("*").matches("anything.at/all"));
    assert!(g("*").matches(""));
    assert!(g("git_*").matches("git_status"));
    assert!(!g("git_*").matches("xgit_status"));
    assert!(g("*.read").matches("repo.file_system.read"));
    assert!(!g("*.read").matches("repo.read_all"));
    assert!(g("a?c").matches("abc"));
    assert!(!g("a?c").matches("ac"));
    assert!(g("a*b*c").matches("a__b__b__c"));
    assert!(!g("a*b*c").matches("a__b__b__"));
    assert!(g("file:///docs/*").matches("file:///docs/{path}"));
    assert!(g("echo").matches("echo"));
    assert!(!g("echo").matches("echo2"));
    assert!(g("é*").matches("été"));
    assert!(g("?t?").matches("été"));
    assert!(g("a?c").matches("aéc"));
    assert!(!g("a?c").matches("aééc"));
}

#[test]
fn bad_patterns_are_refused() {
    assert!(Glob::new("").is_err());
    assert!(Glob::new(&"x".repeat(glob::MAX_PATTERN + 1)).is_err());
    assert!(Glob::new("a\nb").is_err());
}

#[test]
fn a_huge_name_matches_no_wildcard_pattern() {
    let g = Glob::new("*").unwrap();
    assert!(!g.matches(&"a".repeat(glob::MAX_NAME + 1)));
}

#[test]
fn no_rules_is_no_policy() {
    assert!(Authorization::compile(&[]).unwrap().is_none());
}

#[test]
fn rules_match_by_subject_scope_and_claim() {
    let mut by_subject = entry("alice");
    by_subject.subjects = vec!["alice".into()];
    by_subject.tools = vec!["echo".into()];
    let mut by_scope = entry("writers");
    by_scope.scopes = vec!["mcp:write".into(), "mcp:read".into()];
    by_scope.tools = vec!["write_*".into()];
    let mut by_claim = entry("ops");
    by_claim.claims.insert("team".into(), "ops".into());
    by_claim.claims.insert("org.region".into(), "eu-*".into());
    by_claim.prompts = vec!["*".into()];
    let a = Authorization::compile(&[by_subject, by_scope, by_claim])
        .unwrap()
        .unwrap();
    let none: Map<String, Value> = Map::new();
    let both = ["mcp:read".to_string(), "mcp:write".to_string()];
    let read_only = ["mcp:read".to_string()];

    let g = a.grant(Some(caller("alice", &[], &none)));
    assert!(a.allows(g, Kind::Tool, "echo"));
    assert!(!a.allows(g, Kind::Tool, "write_file"));
    assert!(!a.allows(g, Kind::Prompt, "p"));

    let g = a.grant(Some(caller("bob", &both, &none)));
    assert!(a.allows(g, Kind::Tool, "write_file"));
    assert!(!a.allows(g, Kind::Tool, "echo"));
    // Every scope is required.
    let g = a.grant(Some(caller("bob", &read_only, &none)));
    assert_eq!(g.bits(), 0);

    let ops = claims(json!({"team": ["dev", "ops"], "org": {"region": "eu-west"}}));
    let g = a.grant(Some(caller("carol", &[], &ops)));
    assert!(a.allows(g, Kind::Prompt, "incident"));
    assert!(!a.allows(g, Kind::Tool, "echo"));
    // Every claim is required.
    let half = claims(json!({"team": "ops", "org": {"region": "us-east"}}));
    assert_eq!(a.grant(Some(caller("carol", &[], &half))).bits(), 0);

    // Matched by two rules: the union.
    let g = a.grant(Some(caller("alice", &both, &none)));
    assert!(a.allows(g, Kind::Tool, "echo") && a.allows(g, Kind::Tool, "write_x"));
}

#[test]
fn default_deny_once_any_rule_exists() {
    let mut e = entry("alice");
    e.subjects = vec!["alice".into()];
    e.tools = vec!["*".into()];
    let a = Authorization::compile(&[e]).unwrap().unwrap();
    let none = Map::new();
    let g = a.grant(Some(caller("mallory", &[], &none)));
    for kind in Kind::ALL {
        assert!(!a.allows(g, kind, "echo"), "{kind:?}");
    }
    // The unauthenticated caller too, without a local rule.
    assert!(!a.allows(a.grant(None), Kind::Tool, "echo"));
    // And alice has tools only.
    let g = a.grant(Some(caller("alice", &[], &none)));
    assert!(a.allows(g, Kind::Tool, "echo"));
    assert!(!a.allows(g, Kind::Resource, "file:///x"));
}

#[test]
fn the_local_rule_matches_only_the_unauthenticated_caller() {
    let mut e = entry("me");
    e.local = true;
    e.tools = vec!["*".into()];
    let a = Authorization::compile(&[e]).unwrap().unwrap();
    assert!(a.allows(a.grant(None), Kind::Tool, "echo"));
    let none = Map::new();
    assert!(!a.allows(a.grant(Some(caller("me", &[], &none))), Kind::Tool, "echo"));
}

#[test]
fn denials_are_counted_per_principal_name() {
    let mut e = entry("ops");
    e.subjects = vec!["o-*".into()];
    e.tools = vec!["echo".into()];
    let a = Authorization::compile(&[e]).unwrap().unwrap();
    let none = Map::new();
    let ops = a.grant(Some(caller("o-1", &[], &none)));
    assert!(a.permits(ops, Kind::Tool, "echo"));
    assert!(!a.permits(ops, Kind::Tool, "rm"));
    assert!(!a.permits(ops, Kind::Tool, "rm"));
    assert!(!a.permits(a.grant(Some(caller("x", &[], &none))), Kind::Tool, "echo"));
    assert_eq!(a.denials(), vec![("ops", 2), ("", 1)]);
    let text = a.metrics_text();
    assert!(
        text.contains("mcp_authz_denials_total{principal=\"ops\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("mcp_authz_denials_total{principal=\"\"} 1\n"),
        "{text}"
    );
}

#[test]
fn bad_rules_are_refused_naming_the_rule() {
    let mut nobody = entry("x");
    nobody.tools = vec!["*".into()];
    let e = Authorization::compile(&[nobody]).unwrap_err();
    assert_eq!(e.number, 1);
    assert!(e.to_string().contains("matches nobody"), "{e}");

    let mut both = entry("y");
    both.local = true;
    both.subjects = vec!["a".into()];
    let mut ok = entry("ok");
    ok.local = true;
    let e = Authorization::compile(&[ok.clone(), both]).unwrap_err();
    assert_eq!((e.index, e.number), (1, 2));

    let mut empty = entry("z");
    empty.subjects = vec!["a".into()];
    empty.tools = vec![String::new()];
    let e = Authorization::compile(&[empty]).unwrap_err();
    assert!(e.to_string().contains("tools: a pattern is empty"), "{e}");

    let mut bad_name = ok.clone();
    bad_name.name = "has space".into();
    assert!(Authorization::compile(&[bad_name]).is_err());

    let many = vec![ok; MAX_RULES + 1];
    assert!(Authorization::compile(&many).is_err());
}

#[test]
fn uris_have_kinds() {
    assert_eq!(Kind::of_uri("ui://app/x.html"), Kind::App);
    assert_eq!(Kind::of_uri("skill://a/SKILL.md"), Kind::Skill);
    assert_eq!(Kind::of_uri("file:///x"), Kind::Resource);
}

#[test]
fn principal_allows_answers_per_name() {
    let mut a1 = entry("ops");
    a1.subjects = vec!["o".into()];
    a1.tools = vec!["a".into()];
    let mut a2 = entry("ops");
    a2.scopes = vec!["s".into()];
    a2.tools = vec!["b".into()];
    let a = Authorization::compile(&[a1, a2]).unwrap().unwrap();
    assert_eq!(a.principals(), ["ops".to_string()]);
    assert!(a.principal_allows("ops", Kind::Tool, "a"));
    assert!(a.principal_allows("ops", Kind::Tool, "b"));
    assert!(!a.principal_allows("ops", Kind::Tool, "c"));
    assert!(!a.principal_allows("dev", Kind::Tool, "a"));
}
