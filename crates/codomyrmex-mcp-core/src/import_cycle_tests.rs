//! No import cycles anywhere in the workspace (issue #27, item 6).
//!
//! For every crate root under `crates/*/src` (`lib.rs`, `main.rs`, each `bin/`), builds the
//! module tree from its `mod` declarations (honouring `#[path]`, inline `mod name { .. }`
//! blocks, and leaving out `#[cfg(test)]` items and `*tests.rs` files), then the graph of
//! which module uses which: every path that starts with `crate::`, `super::` or `self::`,
//! in a `use` tree (groups, `self` in a group and globs such as `use super::*` included) or
//! inline in code, is an edge to the deepest module it names. A parent's `mod` declarations,
//! and a module reaching into its own descendants, are not edges (a module owns its
//! children); a child using its parent's items is one. Cycles are the strongly connected
//! components of that graph with more than one module (Tarjan), named in the failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A token of Rust source that matters for paths: comments and literals are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// A plain string literal's text (an attribute's `#[path = "…"]`).
    Str(String),
    PathSep,
    Punct(char),
}

/// The tokens of `text`, each with its line.
fn lex(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' {
            let (start, first_line) = (i + 1, line);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            let end = i.min(chars.len());
            out.push((Tok::Str(chars[start..end].iter().collect()), first_line));
            i += 1;
        } else if (c == 'r' || c == 'b' || c == 'c')
            && (at(i + 1) == '#' || at(i + 1) == '"' || (at(i + 1) == 'r' && c == 'b'))
            && raw_or_byte_string(&chars, i).is_some()
        {
            let (end, lines) = raw_or_byte_string(&chars, i).unwrap_or((i + 1, 0));
            line += lines;
            i = end;
        } else if c == '\'' {
            if at(i + 1) == '\\' {
                // A char literal with an escape: to the closing quote.
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime: the name lexes as an identifier.
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = if c == 'r' && at(i + 1) == '#' {
                i + 2
            } else {
                i
            };
            let mut end = start;
            while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            out.push((Tok::Ident(chars[start..end].iter().collect()), line));
            i = end.max(i + 1);
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// Where a raw, byte or C string starting at `i` ends, and the newlines it spans; `None`
/// when `i` starts no such literal (an identifier such as `r` or `br`).
fn raw_or_byte_string(chars: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if chars.get(j) == Some(&'b') || chars.get(j) == Some(&'c') {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') || (j == i + 1 && !raw && chars[i] == 'r') {
        return None;
    }
    j += 1;
    let mut lines = 0;
    while j < chars.len() {
        match chars[j] {
            '\\' if !raw => j += 1,
            '\n' => lines += 1,
            '"' if (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) => {
                return Some((j + 1 + hashes, lines));
            }
            _ => {}
        }
        j += 1;
    }
    Some((j, lines))
}

/// A module path within a crate: its segments from the root.
type ModPath = Vec<String>;

/// One crate's modules and the edges between them, each with where it was seen.
#[derive(Debug, Default)]
struct CrateGraph {
    modules: BTreeSet<ModPath>,
    /// `(from, to)` → the first `file:line` that made it.
    edges: BTreeMap<(ModPath, ModPath), String>,
    /// Paths found, resolved later (the module set must be complete first).
    uses: Vec<(ModPath, Vec<String>, String)>,
}

/// Reads a file; `None` when there is none.
type Reader<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// The module tree and path uses of the crate rooted at `root`.
fn crate_graph(root: &Path, read: Reader<'_>) -> CrateGraph {
    let mut graph = CrateGraph::default();
    let mut pending = vec![(root.to_path_buf(), ModPath::new(), true)];
    while let Some((file, module, owns_dir)) = pending.pop() {
        let Some(text) = read(&file) else { continue };
        graph.modules.insert(module.clone());
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let child_dir = if owns_dir {
            dir.clone()
        } else {
            dir.join(file.file_stem().unwrap_or_default())
        };
        let label = file.to_string_lossy().into_owned();
        scan(
            &lex(&text),
            &module,
            &dir,
            &child_dir,
            &label,
            &mut graph,
            &mut pending,
            read,
        );
    }
    let uses = std::mem::take(&mut graph.uses);
    for (from, path, at) in uses {
        if let Some(to) = resolve(&graph.modules, &from, &path) {
            // A module reaching into itself or its descendants (a parent using or
            // re-exporting its children's items) is no edge.
            if !to.starts_with(&from) {
                graph.edges.entry((from, to)).or_insert(at);
            }
        }
    }
    graph
}

/// The deepest module `path` names from `from`, if it starts with `crate`, `super` or `self`.
fn resolve(modules: &BTreeSet<ModPath>, from: &ModPath, path: &[String]) -> Option<ModPath> {
    let mut abs = from.clone();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            abs.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop()?;
                rest = &rest[1..];
            }
        }
        Some(child) if modules.contains(&[from.as_slice(), &[child.to_owned()]].concat()) => {}
        _ => return None,
    }
    for segment in rest {
        abs.push(segment.clone());
        if !modules.contains(&abs) {
            abs.pop();
            break;
        }
    }
    Some(abs)
}

fn is_test_attr(attr: &[Tok]) -> bool {
    let idents: Vec<&str> = attr
        .iter()
        .filter_map(|t| match t {
            Tok::Ident(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    idents == ["cfg", "test"]
}

/// The file an attribute `#[path = "…"]` names.
fn path_attr(attr: &[Tok]) -> Option<String> {
    match attr {
        [
            Tok::Punct('['),
            Tok::Ident(path),
            Tok::Punct('='),
            Tok::Str(file),
            Tok::Punct(']'),
        ] if path == "path" => Some(file.clone()),
        _ => None,
    }
}

/// The index just past the group that opens at `i` (`{`, `[` or `(`).
fn matching(toks: &[(Tok, usize)], i: usize) -> usize {
    let (open, close) = match toks.get(i) {
        Some((Tok::Punct('{'), _)) => ('{', '}'),
        Some((Tok::Punct('['), _)) => ('[', ']'),
        Some((Tok::Punct('('), _)) => ('(', ')'),
        _ => return i + 1,
    };
    let mut depth = 0usize;
    let mut j = i;
    while j < toks.len() {
        match toks[j].0 {
            Tok::Punct(c) if c == open => depth += 1,
            Tok::Punct(c) if c == close => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// Collects the `use` tree starting at `i` (after `use`) into full paths; returns the index
/// after its `;`.
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix.to_vec();
    if toks.get(i).map(|t| &t.0) == Some(&Tok::PathSep) {
        i += 1; // `::name`: an external crate.
        path.push("::".into());
    }
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(name)) if name == "as" => {
                i += 2;
            }
            Some(Tok::Ident(name)) => {
                if name == "self" && !path.is_empty() {
                    // `{self, ..}` names the prefix itself.
                } else {
                    path.push(name.clone());
                }
                i += 1;
            }
            Some(Tok::PathSep) => i += 1,
            Some(Tok::Punct('*')) => i += 1,
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    i = use_tree(toks, i, &path, out);
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Punct(',')) => {
                            i += 1;
                            if toks.get(i).map(|t| &t.0) == Some(&Tok::Punct('}')) {
                                i += 1;
                                break;
                            }
                        }
                        Some(Tok::Punct('}')) => {
                            i += 1;
                            break;
                        }
                        _ => return i,
                    }
                }
                return i;
            }
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

/// Scans one file's tokens in module `module`.
#[allow(clippy::too_many_arguments)]
fn scan(
    toks: &[(Tok, usize)],
    module: &ModPath,
    dir: &Path,
    child_dir: &Path,
    label: &str,
    graph: &mut CrateGraph,
    pending: &mut Vec<(PathBuf, ModPath, bool)>,
    read: Reader<'_>,
) {
    // Inline modules open a context: (its path, its directory for `mod x;`, where it ends).
    let mut contexts: Vec<(ModPath, PathBuf, usize)> =
        vec![(module.clone(), child_dir.to_path_buf(), toks.len())];
    let mut attrs: Vec<Vec<Tok>> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        while contexts.len() > 1 && contexts.last().is_some_and(|c| i >= c.2) {
            contexts.pop();
        }
        let (current, current_dir, _) = contexts.last().cloned().unwrap_or_default();
        let (tok, line) = &toks[i];
        let ident = |j: usize| match toks.get(j) {
            Some((Tok::Ident(s), _)) => Some(s.as_str()),
            _ => None,
        };
        match tok {
            Tok::Punct('#') => {
                let open = if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Punct('!')) {
                    i + 2
                } else {
                    i + 1
                };
                let end = matching(toks, open);
                attrs.push(toks[open..end].iter().map(|t| t.0.clone()).collect());
                i = end;
                continue;
            }
            Tok::Ident(kw) if kw == "mod" => {
                let test = attrs.iter().any(|a| is_test_attr(a));
                let name = ident(i + 1).unwrap_or_default().to_owned();
                let body = i + 2;
                if toks.get(body).map(|t| &t.0) == Some(&Tok::Punct('{')) {
                    let end = matching(toks, body);
                    if test || name.ends_with("tests") {
                        i = end;
                    } else {
                        let mut path = current.clone();
                        path.push(name.clone());
                        graph.modules.insert(path.clone());
                        contexts.push((path, current_dir.join(&name), end));
                        i = body + 1;
                    }
                } else {
                    if !test {
                        let file = match attrs.iter().find_map(|a| path_attr(a)) {
                            Some(p) => dir.join(p),
                            None => {
                                let flat = current_dir.join(format!("{name}.rs"));
                                let nested = current_dir.join(&name).join("mod.rs");
                                if read(&flat).is_none() && read(&nested).is_some() {
                                    nested
                                } else {
                                    flat
                                }
                            }
                        };
                        let file_name = file.file_name().unwrap_or_default().to_string_lossy();
                        if !file_name.ends_with("tests.rs") {
                            let mut path = current.clone();
                            path.push(name);
                            let owns_dir = file_name == "mod.rs";
                            pending.push((file, path, owns_dir));
                        }
                    }
                    i = body + 1;
                }
                attrs.clear();
                continue;
            }
            Tok::Ident(kw) if kw == "use" => {
                let mut paths = Vec::new();
                let end = use_tree(toks, i + 1, &[], &mut paths);
                if !attrs.iter().any(|a| is_test_attr(a)) {
                    for path in paths {
                        let at = format!("{label}:{line}");
                        graph.uses.push((current.clone(), path, at));
                    }
                }
                attrs.clear();
                i = end;
                continue;
            }
            Tok::Ident(kw)
                if (kw == "crate" || kw == "super" || kw == "self")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                    && ident(i.wrapping_sub(1)) != Some("in") =>
            {
                let mut path = vec![kw.clone()];
                let j = extend_path(&mut path, i + 1, toks);
                graph
                    .uses
                    .push((current.clone(), path, format!("{label}:{line}")));
                i = j;
                continue;
            }
            Tok::Ident(first)
                if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                    && i > 0
                    && toks[i - 1].0 != Tok::PathSep =>
            {
                // A path relative to this module (`child::item`), resolved if `first` is a
                // child module.
                let mut path = vec![first.clone()];
                let j = extend_path(&mut path, i + 1, toks);
                graph
                    .uses
                    .push((current.clone(), path, format!("{label}:{line}")));
                i = j;
                continue;
            }
            Tok::Ident(_) if attrs.iter().any(|a| is_test_attr(a)) => {
                // A `#[cfg(test)]` item other than a module or a `use`: skip it whole.
                let mut j = i;
                while j < toks.len() {
                    match toks[j].0 {
                        Tok::Punct(';') => {
                            j += 1;
                            break;
                        }
                        Tok::Punct('{') => {
                            j = matching(toks, j);
                            break;
                        }
                        _ => j += 1,
                    }
                }
                attrs.clear();
                i = j;
                continue;
            }
            Tok::Ident(kw)
                if matches!(
                    kw.as_str(),
                    "pub" | "crate" | "super" | "in" | "unsafe" | "async" | "extern"
                ) => {}
            Tok::Punct('(' | ')') if !attrs.is_empty() => {}
            _ => {
                attrs.clear();
            }
        }
        i += 1;
    }
}

/// The strongly connected components of more than one node (Tarjan's algorithm).
fn cycles<N: Ord + Clone>(nodes: &BTreeSet<N>, edges: &BTreeSet<(N, N)>) -> Vec<Vec<N>> {
    struct State<'g, N> {
        out: BTreeMap<&'g N, Vec<&'g N>>,
        index: BTreeMap<&'g N, usize>,
        low: BTreeMap<&'g N, usize>,
        stack: Vec<&'g N>,
        on_stack: BTreeSet<&'g N>,
        next: usize,
        found: Vec<Vec<N>>,
    }
    fn connect<'g, N: Ord + Clone>(s: &mut State<'g, N>, v: &'g N) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let succ = s.out.get(v).cloned().unwrap_or_default();
        for w in succ {
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        out: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for (a, b) in edges {
        state.out.entry(a).or_default().push(b);
    }
    for n in nodes {
        if !state.index.contains_key(n) {
            connect(&mut state, n);
        }
    }
    state.found.sort();
    state.found
}

/// Every crate root under `crates/*/src`.
fn crate_roots() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut roots = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for src in dirs {
        for name in ["lib.rs", "main.rs"] {
            if src.join(name).is_file() {
                roots.push(src.join(name));
            }
        }
        let mut bins: Vec<PathBuf> = std::fs::read_dir(src.join("bin"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        bins.sort();
        for bin in bins {
            if bin.is_dir() && bin.join("main.rs").is_file() {
                roots.push(bin.join("main.rs"));
            } else if bin.extension().is_some_and(|e| e == "rs") {
                roots.push(bin);
            }
        }
    }
    roots
}

fn name(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

/// Each cycle of the crate at `root`, with the uses that close it.
fn cycles_of(root: &Path, read: Reader<'_>) -> Vec<String> {
    let graph = crate_graph(root, read);
    let edges: BTreeSet<(ModPath, ModPath)> = graph.edges.keys().cloned().collect();
    cycles(&graph.modules, &edges)
        .into_iter()
        .map(|component| {
            let members: BTreeSet<&ModPath> = component.iter().collect();
            let evidence: Vec<String> = graph
                .edges
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), at)| format!("{} -> {} ({at})", name(a), name(b)))
                .collect();
            format!(
                "{}: {}\n    {}",
                root.display(),
                component.iter().map(name).collect::<Vec<_>>().join(" <-> "),
                evidence.join("\n    ")
            )
        })
        .collect()
}

#[test]
fn no_module_of_any_crate_in_the_workspace_is_in_an_import_cycle() {
    let roots = crate_roots();
    assert!(roots.len() >= 8, "the crate roots were found: {roots:?}");
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let mut modules = 0;
    let mut found = Vec::new();
    for root in &roots {
        modules += crate_graph(root, &read).modules.len();
        found.extend(cycles_of(root, &read));
    }
    assert!(
        modules > 150,
        "the module trees were read: {modules} modules"
    );
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

/// The finder sees every form of path: `crate::`, `super::`, `self::`, groups, `use
/// super::*`, and paths inline in code; and it leaves out a parent's `mod` lines, a parent's
/// use of its children, `#[cfg(test)]` items, comments and strings.
#[test]
fn the_cycle_finder_sees_every_form_of_path() {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "/c/lib.rs",
            "mod a;\nmod b;\nmod p;\nmod q;\nmod r;\nmod s;\n",
        ),
        ("/c/a.rs", "use super::*;\n"),
        ("/c/b.rs", "fn f() { crate::a::g(); }\n"),
        (
            "/c/p/mod.rs",
            "mod x;\nmod y;\npub use x::X;\npub use self::y::Y;\n",
        ),
        ("/c/p/x.rs", "use super::{y::{self, Y}, Z};\n"),
        (
            "/c/p/y.rs",
            "pub struct Y;\nfn g() -> super::x::X { todo!() }\n",
        ),
        (
            "/c/q.rs",
            "// crate::r::f()\nconst S: &str = \"crate::r::f\";\n#[cfg(test)]\nuse crate::r;\n#[cfg(test)]\nmod tests { use crate::r::*; }\n",
        ),
        ("/c/r.rs", "pub use crate::q::*;\n"),
        (
            "/c/s.rs",
            "mod inner { fn h() { super::super::q::f(); } }\n",
        ),
    ]);
    let read = |p: &Path| {
        files
            .get(p.to_str().unwrap_or_default())
            .map(|s| (*s).to_owned())
    };
    let graph = crate_graph(Path::new("/c/lib.rs"), &read);
    let edge = |a: &str, b: &str| {
        let split = |s: &str| -> ModPath {
            if s.is_empty() {
                Vec::new()
            } else {
                s.split("::").map(str::to_owned).collect()
            }
        };
        graph.edges.contains_key(&(split(a), split(b)))
    };
    assert!(edge("a", ""), "use super::* from a child of the root");
    assert!(edge("b", "a"), "an inline crate:: path");
    assert!(edge("p::x", "p::y"), "a group, with self");
    assert!(edge("p::x", "p"), "a child using its parent's item");
    assert!(edge("p::y", "p::x"), "an inline super:: path");
    assert!(
        !edge("p", "p::x") && !edge("p", "p::y"),
        "a parent reaching its children"
    );
    assert!(!edge("q", "r"), "comments, strings and #[cfg(test)] items");
    assert!(edge("r", "q"), "a glob of crate::");
    assert!(
        edge("s::inner", "q"),
        "super::super:: from an inline module"
    );
    let p_x: ModPath = vec!["p".into(), "x".into()];
    let path = |s: &str| -> Vec<String> { s.split("::").map(str::to_owned).collect() };
    assert_eq!(
        resolve(&graph.modules, &p_x, &path("self::X")),
        Some(p_x.clone())
    );
    assert_eq!(
        resolve(&graph.modules, &p_x, &path("super::y::Y")),
        Some(vec!["p".into(), "y".into()])
    );
    assert_eq!(
        resolve(&graph.modules, &p_x, &path("crate::q::f")),
        Some(vec!["q".into()])
    );
    let found = cycles_of(Path::new("/c/lib.rs"), &read);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("p::x <-> p::y"), "{found:#?}");
}

#[test]
fn tarjan_finds_each_strongly_connected_component() {
    let nodes: BTreeSet<u8> = (1..=7).collect();
    let edges: BTreeSet<(u8, u8)> = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 4), (6, 7)].into();
    assert_eq!(cycles(&nodes, &edges), vec![vec![1, 2, 3], vec![4, 5]]);
    let acyclic: BTreeSet<(u8, u8)> = [(1, 2), (2, 3), (1, 3)].into();
    assert!(cycles(&nodes, &acyclic).is_empty());
}

/// Appends to `path` the names of the `::name` segments starting at token `j`, and returns the
/// index of the first token after them.
fn extend_path(path: &mut Vec<String>, mut j: usize, toks: &[(Tok, usize)]) -> usize {
    while toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
        match toks.get(j + 1) {
            Some((Tok::Ident(name), _)) => path.push(name.clone()),
            _ => break,
        }
        j += 2;
    }
    j
}
