//! Public paths over the workspace's source: no `#[doc(hidden)] pub` seam but the macros'
//! `__private` paths, and no re-export (`pub use` of an item) that is not on a list that may
//! shrink, never grow.
//!
//! Reads every crate's `src/` (test files, `*tests.rs`, left out). A `#[doc(hidden)]`
//! attribute followed by a `pub` item (not `pub(crate)`) is a seam: an API that is public only
//! to cross a crate boundary. A `pub use` of something else than a module gives an item a
//! second public path (or, from a private module, its only one); each is named below by file
//! and name. Adding one fails the test; removing one fails it too until the list is updated,
//! so the list only shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every non-test source file of the workspace's crates, as `(crate/src/path, text)`.
fn sources() -> Vec<(String, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("crates/").flatten() {
        files_under(&entry.path().join("src"), &mut files);
    }
    let mut out: Vec<(String, String)> = files
        .into_iter()
        .filter(|f| {
            let name = f.file_name().unwrap_or_default().to_string_lossy();
            !name.ends_with("tests.rs")
        })
        .map(|f| {
            let rel = f
                .strip_prefix(&crates)
                .expect("under crates/")
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&f).expect("readable source"))
        })
        .collect();
    out.sort();
    out
}

/// `#[doc(hidden)]` items that are `pub`, as `file: first line of the item`.
fn hidden_pub(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for (i, line) in lines.iter().enumerate() {
        if *line != "#[doc(hidden)]" {
            continue;
        }
        let item = lines[i + 1..]
            .iter()
            .find(|l| !l.starts_with("#[") && !l.starts_with("//"));
        if let Some(item) = item
            && item.starts_with("pub ")
        {
            out.push(format!("{file}: {item}"));
        }
    }
    out
}

/// Every name a `pub use` of `text` makes public (an alias counts as its name; a glob as
/// `*`), except modules (`self`, lowercase names: the one module tree).
fn reexports(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(i) = rest.find("pub use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + "pub use ".len()..];
        let end = after.find(';').unwrap_or(after.len());
        let statement = &after[..end];
        rest = &after[end..];
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        // The leaves of the use tree: split on separators, keep the last segment or alias.
        let flat = statement.replace(['{', '}', '\n'], ",");
        for leaf in flat.split(',').map(str::trim).filter(|l| !l.is_empty()) {
            let name = match leaf.rsplit_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => leaf.rsplit("::").next().unwrap_or(leaf).trim(),
            };
            let is_module =
                name == "self" || name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
            if !name.is_empty() && (name == "*" || !is_module) {
                out.push(format!("{file}: {name}"));
            }
        }
    }
    out
}

/// The `#[doc(hidden)] pub` items allowed: the path the macros' generated code names
/// (`#krate::__private::…`). It must be public for code generated in the user's crate to
/// reach it, and hidden because it is no API of its own.
const HIDDEN_ALLOWED: &[&str] = &[
    "codomyrmex-mcp-core/src/lib.rs: pub use tool_support::__private;",
    "codomyrmex-mcp-core/src/tool_support/mod.rs: pub mod __private;",
    "codomyrmex-mcp/src/lib.rs: pub use codomyrmex_mcp_core::__private;",
];

#[test]
fn no_doc_hidden_pub_seams_but_the_macros_private_path() {
    let found: BTreeSet<String> = sources()
        .iter()
        .flat_map(|(file, text)| hidden_pub(file, text))
        .collect();
    let allowed: BTreeSet<String> = HIDDEN_ALLOWED.iter().map(|s| (*s).to_owned()).collect();
    let added: Vec<_> = found.difference(&allowed).collect();
    let gone: Vec<_> = allowed.difference(&found).collect();
    assert!(
        added.is_empty(),
        "new #[doc(hidden)] pub items: make each a documented API or crate-private: {added:#?}"
    );
    assert!(
        gone.is_empty(),
        "allowed #[doc(hidden)] pub items that are gone: take them off HIDDEN_ALLOWED: {gone:#?}"
    );
}

/// The re-exports of items there are (see the module's doc), in `public_paths.txt` next to
/// this file, one `file: name` a line: the list shrinks as types get one public path.
const REEXPORTS_ALLOWED: &str = include_str!("public_paths.txt");

#[test]
fn no_item_gains_another_public_path() {
    let found: BTreeSet<String> = sources()
        .iter()
        .flat_map(|(file, text)| reexports(file, text))
        .collect();
    let allowed: BTreeSet<String> = REEXPORTS_ALLOWED
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let added: Vec<_> = found.difference(&allowed).collect();
    let gone: Vec<_> = allowed.difference(&found).collect();
    assert!(
        added.is_empty(),
        "new re-exports give items another public path; name each item at one path: {added:#?}"
    );
    assert!(
        gone.is_empty(),
        "re-exports that are gone: take them off src/public_paths.txt: {gone:#?}"
    );
}

#[test]
fn the_scanners_see_what_they_look_for() {
    let text =
        "#[doc(hidden)]\n#[inline]\npub fn seam() {}\n#[doc(hidden)]\npub(crate) fn fine() {}\n";
    assert_eq!(hidden_pub("f.rs", text), ["f.rs: pub fn seam() {}"]);
    let text = "pub use a::{B, c::D as E,\n  f, self};\npub(crate) use g::H;\n// pub use i::J;\npub use k::*;\n";
    assert_eq!(reexports("f.rs", text), ["f.rs: B", "f.rs: E", "f.rs: *"]);
}
