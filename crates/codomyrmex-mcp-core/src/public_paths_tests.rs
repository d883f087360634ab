//! Public paths over the workspace's source: every item of a library crate's public API at
//! exactly one path, no `#[doc(hidden)] pub` seam but the macros' `__private` paths, and no
//! re-export (`pub use` of an item) that is not on a list that may shrink, never grow.
//!
//! The first is the invariant (ARCHITECTURE.md, "One public path per item"); it walks each
//! crate's module tree from its root as rustdoc and a user do: `pub mod`s, `pub use`s of
//! items, of modules (a module re-exported, here or from another crate of the workspace, is
//! its whole tree again) and globs (less the names a module's own items shadow), leaving out
//! what is `#[doc(hidden)]`. A type defined in a public module and re-exported elsewhere, or
//! a module reachable under two names, gives its items two paths and fails it.
//!
//! Reads every crate's `src/` (test files, `*tests.rs`, left out). A `#[doc(hidden)]`
//! attribute followed by a `pub` item (not `pub(crate)`) is a seam: an API that is public only
//! to cross a crate boundary. A `pub use` of something else than a module gives an item a
//! second public path (or, from a private module, its only one); each is named below by file
//! and name. Adding one fails the test; removing one fails it too until the list is updated,
//! so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
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

// ---------------------------------------------------------------------------------------------
// Every public path of every item: the module tree of each library crate of the workspace,
// walked from its root as a user of the crate sees it.
// ---------------------------------------------------------------------------------------------

/// Comments removed, string literals replaced by `"N"` (N indexes the returned table), char
/// literals by `' '`: what is left is code whose braces and keywords can be counted.
fn scrub(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // A raw string: r"..", r#".."#, br#".."#.
        let prev_ident = i > 0
            && ident(chars[i - 1])
            && !(chars[i - 1] == 'b' && (i < 2 || !ident(chars[i - 2])));
        if c == 'r' && !prev_ident && matches!(next, Some('"') | Some('#')) {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                let start = j + 1;
                let mut k = start;
                loop {
                    if k >= chars.len() {
                        break;
                    }
                    if chars[k] == '"' && (0..hashes).all(|h| chars.get(k + 1 + h) == Some(&'#')) {
                        break;
                    }
                    k += 1;
                }
                strings.push(chars[start..k.min(chars.len())].iter().collect());
                out.push_str(&format!("\"{}\"", strings.len() - 1));
                i = k + 1 + hashes;
                continue;
            }
        }
        if c == '"' {
            let mut k = i + 1;
            let mut s = String::new();
            while k < chars.len() && chars[k] != '"' {
                if chars[k] == '\\' {
                    k += 1;
                }
                if let Some(&ch) = chars.get(k) {
                    s.push(ch);
                }
                k += 1;
            }
            strings.push(s);
            out.push_str(&format!("\"{}\"", strings.len() - 1));
            i = k + 1;
            continue;
        }
        if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            if next == Some('\\') {
                let mut k = i + 3;
                while k < chars.len() && chars[k] != '\'' {
                    k += 1;
                }
                out.push_str("' '");
                i = k + 1;
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                out.push_str("' '");
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    (out, strings)
}

/// The top-level statements of scrubbed code: each one's head (what comes before its first
/// `{` at depth 0, or the whole statement) and its body (between that brace and its match).
fn statements(code: &str) -> Vec<(String, Option<String>)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            ';' => {
                out.push((chars[start..i].iter().collect(), None));
                start = i + 1;
            }
            '{' => {
                let head: String = chars[start..i].iter().collect();
                let mut depth = 0;
                let mut j = i;
                while j < chars.len() {
                    match chars[j] {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let body: String = chars[i + 1..j.min(chars.len())].iter().collect();
                if is_use(&strip_attributes(&head).1) {
                    // `use a::{b, c};`: the statement goes on to its `;`.
                    i = j + 1;
                    continue;
                }
                out.push((head, Some(body)));
                i = j + 1;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// A head's attributes (`#[..]`, `#![..]`) and what follows them, whitespace collapsed.
fn strip_attributes(head: &str) -> (Vec<String>, String) {
    let chars: Vec<char> = head.chars().collect();
    let mut attributes = Vec::new();
    let mut rest = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '#' {
            let mut j = i + 1;
            if chars.get(j) == Some(&'!') {
                j += 1;
            }
            if chars.get(j) == Some(&'[') {
                let mut depth = 0;
                let mut k = j;
                while k < chars.len() {
                    match chars[k] {
                        '[' => depth += 1,
                        ']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                attributes.push(chars[j + 1..k.min(chars.len())].iter().collect::<String>());
                i = k + 1;
                continue;
            }
        }
        rest.push(chars[i]);
        i += 1;
    }
    let attributes: Vec<String> = attributes
        .into_iter()
        .map(|a| a.split_whitespace().collect::<Vec<_>>().join(""))
        .collect();
    (
        attributes,
        rest.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

fn is_use(rest: &str) -> bool {
    let (_, after) = visibility(rest);
    after.starts_with("use ")
}

/// A statement's visibility (`pub`, `pub(crate)`, ... or empty) and what follows it.
fn visibility(rest: &str) -> (&str, &str) {
    let rest = rest.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        let after_t = after.trim_start();
        if after_t.starts_with('(') {
            let end = after_t.find(')').map_or(after_t.len(), |e| e + 1);
            let vis_len = rest.len() - after_t.len() + end;
            return (&rest[..vis_len], rest[vis_len..].trim_start());
        }
        if after.starts_with(' ') {
            return ("pub", after.trim_start());
        }
    }
    ("", rest)
}

/// The names a `use` tree brings in, each with its path (a glob's name is `*`; `self`
/// names the module before it; an alias names what it renames; `_` brings no name).
fn use_leaves(tree: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    leaves_into("", tree, &mut out);
    out
}

fn leaves_into(prefix: &str, tree: &str, out: &mut Vec<(String, Vec<String>)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let close = tree.rfind('}').unwrap_or(tree.len());
        let prefix = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..close.max(open + 1)];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    leaves_into(&prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        leaves_into(&prefix, &inner[start..], out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim())),
        None => (tree, None),
    };
    let full = format!("{prefix}{path}");
    let mut segments: Vec<String> = full
        .split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if segments.last().is_some_and(|s| s == "self") {
        segments.pop();
    }
    let Some(last) = segments.last().cloned() else {
        return;
    };
    let name = alias.map(str::to_owned).unwrap_or(last);
    if name != "_" {
        out.push((name, segments));
    }
}

/// What a name in a module stands for.
#[derive(Debug, Clone)]
enum Target {
    /// A module of the tree (an index into `Tree::modules`).
    Module(usize),
    /// An item defined there: `crate::path::Name`.
    Item(String),
    /// An import: the path as written (`crate::a::B`, `super::c`, `*` last for a glob).
    Use(Vec<String>),
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    target: Target,
    public: bool,
    hidden: bool,
}

#[derive(Debug)]
struct Module {
    krate: String,
    path: Vec<String>,
    entries: Vec<Entry>,
}

/// The module trees of the workspace's library crates.
#[derive(Default)]
struct Tree {
    modules: Vec<Module>,
    roots: BTreeMap<String, usize>,
}

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    Module(usize),
    Item(String),
    External(String),
}

impl Tree {
    /// Every crate under `crates/` with a `src/lib.rs`.
    fn load(crates: &Path) -> Tree {
        let mut tree = Tree::default();
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates)
            .expect("crates/")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("src/lib.rs").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let krate = dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .replace('-', "_");
            let root = dir.join("src/lib.rs");
            let text = std::fs::read_to_string(&root).expect("readable lib.rs");
            let id = tree.module(&krate, Vec::new(), &root, &text);
            tree.roots.insert(krate, id);
        }
        tree
    }

    fn module(&mut self, krate: &str, path: Vec<String>, file: &Path, text: &str) -> usize {
        let (code, strings) = scrub(text);
        self.module_code(krate, path, file, &code, &strings)
    }

    fn module_code(
        &mut self,
        krate: &str,
        path: Vec<String>,
        file: &Path,
        code: &str,
        strings: &[String],
    ) -> usize {
        let id = self.modules.len();
        self.modules.push(Module {
            krate: krate.to_owned(),
            path: path.clone(),
            entries: Vec::new(),
        });
        // Where `mod x;` finds x: beside lib.rs/mod.rs, or in the directory named for this file.
        let stem = file
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let base = if stem == "lib" || stem == "mod" || path.is_empty() {
            file.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            file.with_extension("")
        };
        for (head, body) in statements(code) {
            let (attributes, rest) = strip_attributes(&head);
            if attributes.iter().any(|a| a == "cfg(test)") {
                continue;
            }
            let hidden = attributes.iter().any(|a| a == "doc(hidden)");
            let (vis, rest) = visibility(&rest);
            let public = vis == "pub";
            let mut words = rest.split(' ');
            let first = words.next().unwrap_or_default();
            if first == "use" {
                let tree = rest.get(3..).unwrap_or_default();
                let tree = match &body {
                    Some(b) => format!("{tree} {{{b}}}"),
                    None => tree.to_owned(),
                };
                for (name, segments) in use_leaves(&tree) {
                    let entry = Entry {
                        name,
                        target: Target::Use(segments),
                        public,
                        hidden,
                    };
                    self.modules[id].entries.push(entry);
                }
                continue;
            }
            if first == "mod" {
                let name = words.next().unwrap_or_default().to_owned();
                let mut child_path = path.clone();
                child_path.push(name.clone());
                let child = match &body {
                    Some(b) => self.module_code(krate, child_path, file, b, strings),
                    None => {
                        let explicit = attributes.iter().find_map(|a| {
                            let n = a.strip_prefix("path=\"")?.strip_suffix('"')?;
                            strings.get(n.parse::<usize>().ok()?).cloned()
                        });
                        let candidates = match explicit {
                            Some(p) => vec![file.parent().unwrap_or(Path::new("")).join(p)],
                            None => vec![
                                base.join(format!("{name}.rs")),
                                base.join(&name).join("mod.rs"),
                            ],
                        };
                        let Some(found) = candidates.into_iter().find(|c| c.is_file()) else {
                            assert!(
                                !public,
                                "{}: cannot find the file of `pub mod {name}`",
                                file.display()
                            );
                            continue;
                        };
                        let text = std::fs::read_to_string(&found).expect("readable module");
                        self.module(krate, child_path, &found, &text)
                    }
                };
                let entry = Entry {
                    name,
                    target: Target::Module(child),
                    public,
                    hidden,
                };
                self.modules[id].entries.push(entry);
                continue;
            }
            // An item: qualifiers, then its keyword and name.
            let mut word = first;
            let mut rest_words = words;
            loop {
                match word {
                    "async" | "unsafe" | "default" | "extern" => {}
                    "const" => {
                        // `const fn` or `const NAME`.
                        let next = rest_words.clone().next().unwrap_or_default();
                        if next != "fn" && next != "unsafe" && next != "async" && next != "extern" {
                            break;
                        }
                    }
                    w if w.starts_with('"') => {}
                    _ => break,
                }
                word = rest_words.next().unwrap_or_default();
            }
            if matches!(
                word,
                "struct" | "enum" | "trait" | "fn" | "const" | "static" | "type" | "union"
            ) {
                let mut name = rest_words.next().unwrap_or_default();
                if word == "static" && name == "mut" {
                    name = rest_words.next().unwrap_or_default();
                }
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.is_empty() {
                    continue;
                }
                let mut full = vec![krate.to_owned()];
                full.extend(path.iter().cloned());
                full.push(name.clone());
                let entry = Entry {
                    name,
                    target: Target::Item(full.join("::")),
                    public,
                    hidden,
                };
                self.modules[id].entries.push(entry);
            }
        }
        id
    }

    /// What `segments` names, seen from module `from`.
    fn resolve(&self, from: usize, segments: &[String], depth: usize) -> Vec<Resolved> {
        if depth > 32 || segments.is_empty() {
            return Vec::new();
        }
        let module = &self.modules[from];
        let (mut current, rest) = match segments[0].as_str() {
            "crate" => (
                vec![Resolved::Module(self.roots[&module.krate])],
                &segments[1..],
            ),
            "self" => (vec![Resolved::Module(from)], &segments[1..]),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let target = &module.path[..module.path.len().saturating_sub(ups)];
                let parent = self
                    .modules
                    .iter()
                    .position(|m| m.krate == module.krate && m.path == target)
                    .expect("the parent module");
                (vec![Resolved::Module(parent)], &segments[ups..])
            }
            first if module.entries.iter().any(|e| e.name == first) => {
                (vec![Resolved::Module(from)], segments)
            }
            first if self.roots.contains_key(first) => {
                (vec![Resolved::Module(self.roots[first])], &segments[1..])
            }
            _ => return vec![Resolved::External(segments.join("::"))],
        };
        for segment in rest {
            let mut next = Vec::new();
            for r in &current {
                if let Resolved::Module(m) = r {
                    next.extend(self.lookup(*m, segment, depth));
                }
            }
            if next.is_empty() {
                return vec![Resolved::External(segments.join("::"))];
            }
            current = next;
        }
        let mut out: Vec<Resolved> = Vec::new();
        for r in current {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    /// What `name` stands for in module `m`: its own names first, else what its globs bring.
    fn lookup(&self, m: usize, name: &str, depth: usize) -> Vec<Resolved> {
        let mut out = Vec::new();
        for entry in self.modules[m].entries.iter().filter(|e| e.name == name) {
            out.extend(self.target(m, entry, depth));
        }
        if out.is_empty() {
            for entry in self.modules[m].entries.iter().filter(|e| e.name == "*") {
                if let Target::Use(segments) = &entry.target {
                    for r in self.resolve(m, &segments[..segments.len() - 1], depth + 1) {
                        if let Resolved::Module(g) = r {
                            out.extend(self.lookup(g, name, depth + 1));
                        }
                    }
                }
            }
        }
        out
    }

    fn target(&self, m: usize, entry: &Entry, depth: usize) -> Vec<Resolved> {
        match &entry.target {
            Target::Module(id) => vec![Resolved::Module(*id)],
            Target::Item(item) => vec![Resolved::Item(item.clone())],
            Target::Use(segments) => self.resolve(m, segments, depth + 1),
        }
    }

    /// The names module `m` makes public (not hidden), with what each stands for: its own
    /// `pub` names, and those of its `pub` globs that none of its own names shadows.
    fn public_names(&self, m: usize, depth: usize) -> Vec<(String, Resolved)> {
        let module = &self.modules[m];
        let own: BTreeSet<&str> = module
            .entries
            .iter()
            .filter(|e| e.name != "*")
            .map(|e| e.name.as_str())
            .collect();
        let mut out = Vec::new();
        for entry in module.entries.iter().filter(|e| e.public && !e.hidden) {
            match &entry.target {
                Target::Use(segments) if entry.name == "*" => {
                    for r in self.resolve(m, &segments[..segments.len() - 1], depth + 1) {
                        if let Resolved::Module(g) = r {
                            for (name, target) in self.public_names(g, depth + 1) {
                                if !own.contains(name.as_str()) {
                                    out.push((name, target));
                                }
                            }
                        }
                    }
                }
                _ => {
                    for r in self.target(m, entry, depth) {
                        out.push((entry.name.clone(), r));
                    }
                }
            }
        }
        out
    }

    /// Every item's public paths in `krate`'s API, as `item: {paths}`.
    fn public_paths(&self, krate: &str) -> BTreeMap<String, BTreeSet<String>> {
        let mut out = BTreeMap::new();
        let mut stack = Vec::new();
        self.walk(self.roots[krate], krate.to_owned(), &mut stack, &mut out);
        out
    }

    fn walk(
        &self,
        m: usize,
        prefix: String,
        stack: &mut Vec<usize>,
        out: &mut BTreeMap<String, BTreeSet<String>>,
    ) {
        if stack.contains(&m) {
            return;
        }
        stack.push(m);
        for (name, target) in self.public_names(m, 0) {
            let path = format!("{prefix}::{name}");
            match target {
                Resolved::Module(child) => self.walk(child, path, stack, out),
                Resolved::Item(item) => {
                    out.entry(item).or_default().insert(path);
                }
                Resolved::External(external) => {
                    out.entry(format!("(external) {external}"))
                        .or_default()
                        .insert(path);
                }
            }
        }
        stack.pop();
    }
}

/// The items of `krate`'s public API that have more than one public path.
fn several_paths(tree: &Tree, krate: &str) -> Vec<String> {
    tree.public_paths(krate)
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(item, paths)| {
            format!(
                "{item}: {}",
                paths.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

#[test]
fn every_item_of_every_library_crate_has_one_public_path() {
    let tree = Tree::load(&crates_dir());
    assert!(
        tree.roots.contains_key("codomyrmex_mcp") && tree.roots.contains_key("codomyrmex_mcp_core"),
        "the library and the core are read"
    );
    let mut found = Vec::new();
    for krate in tree.roots.keys() {
        let paths = tree.public_paths(krate);
        assert!(
            !paths.is_empty(),
            "{krate}: no public item found: the reader is broken"
        );
        found.extend(several_paths(&tree, krate));
    }
    assert!(
        found.is_empty(),
        "items with more than one public path: keep one (ARCHITECTURE.md, \"One public path \
         per item\"): {found:#?}"
    );
}

#[test]
fn the_path_walk_sees_every_kind_of_second_path() {
    let dir = std::env::temp_dir().join(format!("public-paths-{}", std::process::id()));
    let src = dir.join("demo-lib").join("src");
    std::fs::create_dir_all(src.join("outer")).expect("a scratch crate");
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).expect("a scratch file");
    // A type in a public module re-exported at the root; a module re-exported under a
    // second name; a glob that an own item shadows; a hidden seam; an item of a private
    // module with one path; a string and a comment that look like code.
    write(
        "lib.rs",
        "//! pub use nothing::Here;\npub mod outer;\nmod inner;\npub use outer::Twice;\n\
         pub use outer as again;\npub use inner::*;\npub struct Shadowed;\n#[doc(hidden)]\n\
         pub use inner::Hidden;\nconst S: &str = \"pub use x::Y; }\";\n",
    );
    write(
        "outer/mod.rs",
        "pub struct Twice;\nimpl Twice { pub fn method() {} }\n",
    );
    write(
        "inner.rs",
        "pub struct Once;\npub struct Shadowed;\npub struct Hidden;\n",
    );
    let tree = Tree::load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let paths = tree.public_paths("demo_lib");
    let of = |item: &str| -> Vec<String> {
        paths
            .get(item)
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(
        of("demo_lib::outer::Twice"),
        [
            "demo_lib::Twice",
            "demo_lib::again::Twice",
            "demo_lib::outer::Twice"
        ]
    );
    assert_eq!(of("demo_lib::inner::Once"), ["demo_lib::Once"]);
    assert_eq!(of("demo_lib::Shadowed"), ["demo_lib::Shadowed"]);
    assert!(of("demo_lib::inner::Shadowed").is_empty(), "{paths:#?}");
    assert!(of("demo_lib::inner::Hidden").is_empty(), "{paths:#?}");
    assert!(
        !paths
            .keys()
            .any(|k| k.contains("method") || k.contains("Here") || k.contains("::Y")),
        "{paths:#?}"
    );
    assert_eq!(
        several_paths(&tree, "demo_lib"),
        ["demo_lib::outer::Twice: demo_lib::Twice, demo_lib::again::Twice, demo_lib::outer::Twice"]
    );
}
