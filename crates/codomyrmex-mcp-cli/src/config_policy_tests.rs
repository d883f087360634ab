//! `[[policy]]` in `serve`'s configuration file: compiled at load, a bad rule named by its
//! line.

use clap::Parser;

use super::*;

fn opts(args: &[&str]) -> ServerOptions {
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        o: ServerOptions,
    }
    let mut argv = vec!["t"];
    argv.extend_from_slice(args);
    T::try_parse_from(argv).unwrap().o
}

fn load(text: &str) -> Result<Effective, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, text).unwrap();
    resolve(&opts(&["--config", path.to_str().unwrap()]))
}

#[test]
fn policies_are_compiled_at_load() {
    let e = load(
        "root = \".\"\n\n[[policy]]\nname = \"ops\"\nsubjects = [\"alice\"]\ntools = [\"git.*\"]\n\n\
         [[policy]]\nname = \"me\"\nlocal = true\ntools = [\"*\"]\n",
    )
    .unwrap();
    let a = e.authorization.expect("compiled");
    assert_eq!(a.principals(), ["ops".to_string(), "me".to_string()]);
    assert_eq!(e.policies.len(), 2);
    // Shown by `config --show` as written.
    let shown = e_toml(&load("[[policy]]\nname = \"me\"\nlocal = true\n").unwrap());
    assert!(
        shown.contains("[[policy]]") && shown.contains("local = true"),
        "{shown}"
    );
    assert!(load("root = \".\"\n").unwrap().authorization.is_none());
}

fn e_toml(e: &Effective) -> String {
    e.to_toml().unwrap()
}

#[test]
fn a_bad_rule_is_a_config_error_naming_its_line() {
    let text = "root = \".\"\n\n[[policy]]\nname = \"ok\"\nlocal = true\n\n[[policy]]\nname = \"nobody\"\ntools = [\"*\"]\n";
    let e = load(text).unwrap_err().to_string();
    assert!(e.contains(":7:"), "{e}");
    assert!(
        e.contains("policy #2 (\"nobody\")") && e.contains("matches nobody"),
        "{e}"
    );
    // An unknown key or a wrong type: toml's own error, with its line.
    let e = load("[[policy]]\nname = \"x\"\nlocal = true\ntool = [\"*\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains(":4:") && e.contains("tool"), "{e}");
    let e = load("[[policy]]\nname = \"x\"\nsubjects = [\"a\"]\nclaims = { admin = true }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains(":4:"), "{e}");
}

#[test]
fn the_examples_policy_compiles_when_uncommented() {
    let policy: Vec<&str> = EXAMPLE
        .lines()
        .skip_while(|l| !l.starts_with("# [[policy]]"))
        .map(|l| l.strip_prefix("# ").unwrap_or(l))
        .collect();
    assert!(policy.len() > 3, "{EXAMPLE}");
    let e = load(&policy.join("\n")).unwrap();
    let a = e.authorization.expect("compiled");
    assert!(a.principal_allows("ops", codomyrmex_mcp::authz::Kind::Tool, "git.log"));
}
