//! Tests of the confined tree walk behind `list_directory`, `search` and the root's resources:
//! it never enters a symlink (not even one swapped in for a directory mid-walk) and reads no
//! ignore file outside the root.

use std::path::Path;

use serde_json::json;

use super::ignore_rules::{WalkOptions, walker};
use crate::config::{Limits, Profile, ShellSettings};
use crate::tools::test_support::*;
use crate::tools::{Sandbox, Workspace};

/// Every path the walk of `root` yields, with `swap` run once, just after `a.txt` is yielded
/// (when the walk has read the root's names and not yet reached `d`).
fn walked_with(root: &Path, swap: impl FnOnce()) -> Vec<String> {
    let confined = codomyrmex_mcp::confine::ConfinedRoot::open(root).unwrap();
    let options = WalkOptions {
        include_hidden: false,
        respect_gitignore: true,
        max_depth: None,
        max_filesize: None,
    };
    let walk = walker(&confined, Path::new(""), &options, None).unwrap();
    let mut swap = Some(swap);
    let mut seen = Vec::new();
    for entry in walk {
        let rel = codomyrmex_mcp::confine::ConfinedRoot::display(entry.rel());
        if rel == "a.txt"
            && let Some(swap) = swap.take()
        {
            swap();
        }
        seen.push(rel);
    }
    seen
}

#[cfg(unix)]
#[test]
fn a_directory_swapped_for_an_outside_symlink_mid_walk_is_not_entered() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
    std::fs::write(root.path().join("a.txt"), "a").unwrap();
    std::fs::create_dir(root.path().join("d")).unwrap();
    std::fs::write(root.path().join("d/inner.txt"), "i").unwrap();
    let seen = walked_with(root.path(), || {
        std::fs::remove_dir_all(root.path().join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("d")).unwrap();
    });
    assert!(
        !seen.iter().any(|p| p.starts_with("d/")),
        "the walk entered the swapped-in symlink: {seen:?}"
    );
    assert_eq!(seen, [".", "a.txt", "d"]);
}

/// A root one level below `parent`, with the built-in tools over it.
fn root_in(parent: &Path) -> Fixture {
    let dir = tempfile::tempdir_in(parent).unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let ws = Workspace::new(sandbox, Limits::default(), ShellSettings::default());
    Fixture { dir, ws }
}

fn listed(v: &serde_json::Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn ignore_files_above_the_root_are_not_read() {
    let parent = tempfile::tempdir().unwrap();
    std::fs::write(parent.path().join(".gitignore"), "*.txt\n").unwrap();
    std::fs::write(parent.path().join(".ignore"), "sub/\n").unwrap();
    let fx = root_in(parent.path());
    fx.write("found.txt", "needle\n");
    fx.write("sub/inner.txt", "needle\n");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.list_directory", json!({"recursive": true})).await;
    assert_eq!(listed(&v), ["found.txt", "sub", "sub/inner.txt"]);
    let v = ok(&r, "file_system.search", json!({"pattern": "needle"})).await;
    assert_eq!(v["files_matched"], 2, "{v}");
}

#[cfg(unix)]
#[tokio::test]
async fn an_ignore_file_linked_out_of_the_root_is_not_read() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("rules"), "hidden-by-outside.txt\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("rules"), fx.path(".gitignore")).unwrap();
    fx.write("hidden-by-outside.txt", "x");
    fx.write("kept.txt", "x");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(&r, "file_system.list_directory", json!({})).await;
    assert_eq!(listed(&v), ["hidden-by-outside.txt", "kept.txt"]);
}

#[tokio::test]
async fn ignore_files_of_the_starts_parents_inside_the_root_still_apply() {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\n");
    fx.write("a/.ignore", "skip/\n");
    fx.write("a/b/x.log", "x");
    fx.write("a/b/skip/y.txt", "y");
    fx.write("a/b/z.txt", "z");
    let r = registry(&fx, Profile::Readonly);
    let v = ok(
        &r,
        "file_system.list_directory",
        json!({"path": "a/b", "recursive": true}),
    )
    .await;
    assert_eq!(listed(&v), ["a/b/z.txt"]);
}
