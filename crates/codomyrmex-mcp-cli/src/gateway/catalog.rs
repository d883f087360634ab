//! The gateway's merged catalogue: what each upstream offers, under local names, and the way
//! back from a local name to the upstream and its own name.
//!
//! Naming is one rule applied in both directions:
//! - tools and prompts: `NAMESPACE.name` (a tool may be renamed: `NAMESPACE.new`);
//! - resources and templates: by [`super::uri`]'s rule (`fs+file:///a`, `ui://app/view`);
//!   a tool's links to its app are renamed with it ([`super::apps::rename_tool_links`]);
//! - skills: their URIs by the same rule ([`super::skills::local_entry`]); their names stay,
//!   so a skill of the same name as an earlier upstream's is left out and reported (clients
//!   find a skill by its name).
//!
//! Upstreams are untrusted: an entry that is not an object, has no usable name or URI, would
//! get a local name the spec does not allow, or collides with an entry of an earlier upstream
//! is left out and reported as a [`Problem`]; the rest of the upstream is still mounted. The
//! titles and descriptions relayed (the entry's own, its annotations' title, and those of
//! a prompt's arguments) are made inert ([`inert_text`]): the gateway's clients show them to
//! people. This module is pure data: it talks to no upstream.

use std::collections::BTreeMap;

use crate::portable::{Naming, is_portable};
use codomyrmex_mcp::authz::glob::Glob;
use codomyrmex_mcp::util::inert_text;
use serde_json::{Map, Value};

use super::uri::local_uri;
use super::{apps, skills};

/// The longest tool or prompt name clients are guaranteed to accept.
const MAX_NAME: usize = 128;
/// The most entries of one kind mounted from one upstream.
pub const MAX_ENTRIES: usize = 10_000;

/// Whether `name` is a tool or prompt name every client accepts: 1 to 128 characters of
/// `A-Z a-z 0-9 _ - .`.
pub fn valid_local_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Which of an upstream's tools and prompts are mounted, and the tools renamed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    include: Vec<Glob>,
    exclude: Vec<Glob>,
    rename: BTreeMap<String, String>,
}

impl Filter {
    /// A filter: with a non-empty `include`, only matching names; then none matching
    /// `exclude`. `rename` maps an upstream tool name to its local name (before the
    /// namespace).
    pub fn new(
        include: &[String],
        exclude: &[String],
        rename: BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let patterns = |list: &[String], key: &str| {
            list.iter()
                .map(|p| Glob::new(p).map_err(|e| format!("`{key}`: {e}")))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            include: patterns(include, "include")?,
            exclude: patterns(exclude, "exclude")?,
            rename,
        })
    }

    /// The name a tool of the upstream's is mounted under (before the namespace): its
    /// rename, or its own name.
    pub fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.rename.get(name).map_or(name, String::as_str)
    }

    /// Whether the upstream name `name` is mounted.
    pub fn admits(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| p.matches(name)))
            && !self.exclude.iter().any(|p| p.matches(name))
    }

    /// The renames whose upstream tool did not appear in `listed`: most likely typos.
    fn unused_renames<'a>(&'a self, listed: &'a [String]) -> impl Iterator<Item = &'a str> {
        self.rename
            .keys()
            .filter(move |k| !listed.iter().any(|n| n == *k))
            .map(String::as_str)
    }
}

/// What one upstream listed, as it sent it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Listing {
    /// `tools/list` entries.
    pub tools: Vec<Value>,
    /// `prompts/list` entries.
    pub prompts: Vec<Value>,
    /// `resources/list` entries.
    pub resources: Vec<Value>,
    /// `resources/templates/list` entries.
    pub templates: Vec<Value>,
    /// The upstream declared `resources.subscribe` (2025-11-25: `resources/subscribe`).
    pub subscribe: bool,
    /// `skills/list` entries (the Skills extension), empty when it serves none.
    pub skills: Vec<Value>,
}

/// One mounted entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Index of its upstream in the configuration.
    pub upstream: usize,
    /// Its name (tools, prompts) or URI (resources, templates) at the upstream.
    pub upstream_name: String,
    /// Its definition as clients see it: the upstream's, with the local name or URI.
    pub definition: Value,
}

/// Something of an upstream that was not mounted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The upstream's namespace.
    pub upstream: String,
    /// What was left out, and why.
    pub message: String,
}

/// The upstreams' offers, merged.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Tools by local name.
    pub tools: BTreeMap<String, Entry>,
    /// Prompts by local name.
    pub prompts: BTreeMap<String, Entry>,
    /// Resources by local URI.
    pub resources: BTreeMap<String, Entry>,
    /// Resource templates by local URI template.
    pub templates: BTreeMap<String, Entry>,
    /// Skills by the local URI of their `SKILL.md`; the definition is the local entry.
    pub skills: BTreeMap<String, Entry>,
    /// What was left out.
    pub problems: Vec<Problem>,
}

/// One upstream's part in [`Catalogue::build_named`].
#[derive(Debug, Clone, Copy)]
pub struct Mount<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// Its filter and renames.
    pub filter: &'a Filter,
    /// What it listed.
    pub listing: &'a Listing,
}

#[derive(Clone, Copy)]
enum Kind {
    Tool,
    Prompt,
    Resource,
    Template,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::Template => "resource template",
        }
    }

    /// The member naming the entry.
    fn key(self) -> &'static str {
        match self {
            Self::Tool | Self::Prompt => "name",
            Self::Resource => "uri",
            Self::Template => "uriTemplate",
        }
    }
}

impl Catalogue {
    /// Merges the upstreams' listings, in order: on a clash of local names the earlier
    /// upstream keeps the name and the later entry is reported.
    #[cfg(test)]
    pub fn build(mounts: &[Mount<'_>]) -> Self {
        Self::build_named(mounts, &Naming::default())
    }

    /// Merges the upstreams' listings, in order, with tool and prompt names spelled by
    /// `naming` ([`crate::portable`]): on a clash of local names (or names that become the
    /// same) the earlier upstream keeps the name and the later entry is left out and reported.
    pub fn build_named(mounts: &[Mount<'_>], naming: &Naming) -> Self {
        let mut catalogue = Self::default();
        for (index, mount) in mounts.iter().enumerate() {
            let listing = mount.listing;
            for (kind, entries) in [
                (Kind::Tool, &listing.tools),
                (Kind::Prompt, &listing.prompts),
                (Kind::Resource, &listing.resources),
                (Kind::Template, &listing.templates),
            ] {
                catalogue.add(index, mount, kind, entries, naming);
            }
            catalogue.add_skills(index, mount.namespace, &listing.skills);
            let tool_names: Vec<String> = listing
                .tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect();
            for unused in mount.filter.unused_renames(&tool_names) {
                catalogue.problems.push(Problem {
                    upstream: mount.namespace.to_owned(),
                    message: format!("rename of {unused:?}: the upstream has no such tool"),
                });
            }
        }
        catalogue
    }

    fn add(
        &mut self,
        index: usize,
        mount: &Mount<'_>,
        kind: Kind,
        entries: &[Value],
        naming: &Naming,
    ) {
        let namespace = mount.namespace;
        let problem = |message: String| Problem {
            upstream: namespace.to_owned(),
            message,
        };
        if entries.len() > MAX_ENTRIES {
            let p = problem(format!(
                "listed {} {}s; only the first {MAX_ENTRIES} are mounted",
                entries.len(),
                kind.noun()
            ));
            self.problems.push(p);
        }
        for entry in entries.iter().take(MAX_ENTRIES) {
            let Some(object) = entry.as_object() else {
                let p = problem(format!("a {} that is not a JSON object", kind.noun()));
                self.problems.push(p);
                continue;
            };
            let Some(upstream_name) = object.get(kind.key()).and_then(Value::as_str) else {
                let p = problem(format!(
                    "a {} without a string `{}`",
                    kind.noun(),
                    kind.key()
                ));
                self.problems.push(p);
                continue;
            };
            let shown: String = upstream_name.chars().take(80).collect();
            if matches!(kind, Kind::Resource | Kind::Template)
                && !mount.listing.skills.is_empty()
                && upstream_name.starts_with("skill://")
            {
                // Its skills' files, mounted with the skills.
                continue;
            }
            let local = match kind {
                Kind::Tool | Kind::Prompt => {
                    if !mount.filter.admits(upstream_name) {
                        continue;
                    }
                    let suffix = match kind {
                        Kind::Tool => mount.filter.renamed(upstream_name),
                        _ => upstream_name,
                    };
                    let local = naming.join(namespace, suffix);
                    if !valid_local_name(&local) || naming.is_portable() && !is_portable(&local) {
                        let p = problem(format!(
                            "{} {shown:?}: its local name would not be 1 to 128 characters of \
                             A-Z, a-z, 0-9, '_', '-' and '.'",
                            kind.noun()
                        ));
                        self.problems.push(p);
                        continue;
                    }
                    local
                }
                Kind::Resource | Kind::Template => match local_uri(namespace, upstream_name) {
                    Some(local) => local,
                    None => {
                        let p = problem(format!(
                            "{} {shown:?}: not a URI with a scheme",
                            kind.noun()
                        ));
                        self.problems.push(p);
                        continue;
                    }
                },
            };
            let table = match kind {
                Kind::Tool => &mut self.tools,
                Kind::Prompt => &mut self.prompts,
                Kind::Resource => &mut self.resources,
                Kind::Template => &mut self.templates,
            };
            if let Some(earlier) = table.get(&local) {
                let message = if naming.is_portable() && matches!(kind, Kind::Tool | Kind::Prompt) {
                    format!(
                        "{} {shown:?}: its portable name {local:?} is already {:?}'s{}; left out, \
                         not merged",
                        kind.noun(),
                        earlier.upstream_name,
                        if earlier.upstream == index {
                            ""
                        } else {
                            " (an earlier upstream)"
                        }
                    )
                } else if earlier.upstream == index {
                    format!(
                        "{} {local:?} appears twice (listed twice, or renamed onto another name)",
                        kind.noun()
                    )
                } else {
                    format!(
                        "{} {local:?} is already taken by an earlier upstream",
                        kind.noun()
                    )
                };
                self.problems.push(problem(message));
                continue;
            }
            let mut definition = object.clone();
            if let (Kind::Tool, Some(Value::Object(meta))) = (kind, definition.get_mut("_meta"))
                && let Err(why) = apps::rename_tool_links(namespace, meta)
            {
                self.problems
                    .push(problem(format!("tool {local:?}: {why}")));
                continue;
            }
            inert_display_text(&mut definition);
            definition.insert(kind.key().to_owned(), Value::String(local.clone()));
            table.insert(
                local,
                Entry {
                    upstream: index,
                    upstream_name: upstream_name.to_owned(),
                    definition: Value::Object(definition),
                },
            );
        }
    }
}

impl Catalogue {
    /// Mounts an upstream's skills: their URIs under the namespace; an entry the library's
    /// client would refuse, or whose name an earlier upstream's skill has, is left out and
    /// reported.
    fn add_skills(&mut self, index: usize, namespace: &str, entries: &[Value]) {
        let problem = |message: String| Problem {
            upstream: namespace.to_owned(),
            message,
        };
        if entries.len() > MAX_ENTRIES {
            let m = format!(
                "listed {} skills; only the first {MAX_ENTRIES} are mounted",
                entries.len()
            );
            self.problems.push(problem(m));
        }
        for raw in entries.iter().take(MAX_ENTRIES) {
            let (name, upstream_uri, local) = match skills::local_entry(namespace, raw) {
                Ok(e) => e,
                Err(why) => {
                    self.problems.push(problem(format!("a skill: {why}")));
                    continue;
                }
            };
            let Some(local_uri) = local.get("uri").and_then(Value::as_str).map(str::to_owned)
            else {
                continue;
            };
            let taken = self.skills.values().find(|e| {
                e.upstream != index
                    && e.definition["frontmatter"]["name"].as_str() == Some(name.as_str())
            });
            if let Some(earlier) = taken {
                let m = format!(
                    "skill {name:?} ({local_uri}): the name is already taken by {}",
                    earlier.definition["uri"].as_str().unwrap_or_default()
                );
                self.problems.push(problem(m));
                continue;
            }
            if self.skills.contains_key(&local_uri) {
                let m = format!("skill {local_uri:?} appears twice");
                self.problems.push(problem(m));
                continue;
            }
            self.skills.insert(
                local_uri,
                Entry {
                    upstream: index,
                    upstream_name: upstream_uri,
                    definition: local,
                },
            );
        }
    }
}

/// The text of `definition` its clients show people, made inert: its `title` and
/// `description`, its annotations' `title`, and the `title` and `description` of each of a
/// prompt's `arguments`.
fn inert_display_text(definition: &mut Map<String, Value>) {
    fn inert_fields(object: &mut Map<String, Value>) {
        for key in ["title", "description"] {
            if let Some(Value::String(text)) = object.get_mut(key)
                && let std::borrow::Cow::Owned(clean) = inert_text(text)
            {
                *text = clean;
            }
        }
    }
    inert_fields(definition);
    if let Some(Value::Object(annotations)) = definition.get_mut("annotations") {
        inert_fields(annotations);
    }
    if let Some(Value::Array(arguments)) = definition.get_mut("arguments") {
        for argument in arguments.iter_mut().filter_map(Value::as_object_mut) {
            inert_fields(argument);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(include: &[&str], exclude: &[&str], rename: &[(&str, &str)]) -> Filter {
        let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Filter::new(
            &s(include),
            &s(exclude),
            rename
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn include_and_exclude_take_the_policies_globs() {
        // The authorization rules' matcher (`*` any run, `?` one character, whole names).
        let f = filter(&["git_*", "read_?", "*_file"], &["git_push"], &[]);
        for admitted in ["git_log", "git_", "read_x", "write_file"] {
            assert!(f.admits(admitted), "{admitted}");
        }
        for refused in ["gi", "git_push", "read_xy", "read_", "write_files", "log"] {
            assert!(!f.admits(refused), "{refused}");
        }
        assert!(filter(&["*"], &[], &[]).admits(""));
        let bad =
            |p: &str| Filter::new(&[p.to_owned()], &[], BTreeMap::new()).expect_err("refused");
        assert!(bad("").contains("`include`"), "{}", bad(""));
        assert!(bad("a\u{7}").contains("control"), "{}", bad("a\u{7}"));
    }

    #[test]
    fn relayed_titles_and_descriptions_are_inert() {
        let h = "\x1b]0;pwned\x07\x1b[2J\u{202e}\u{9b}";
        let listing = Listing {
            tools: vec![
                json!({"name": "t", "title": format!("T{h}"), "description": format!("line{h}\n\tnext"),
                "annotations": {"title": format!("A{h}")}, "inputSchema": {"type": "object"}}),
            ],
            prompts: vec![json!({"name": "p", "description": format!("P{h}"),
                "arguments": [{"name": "a", "title": format!("AT{h}"), "description": format!("AD{h}")}]})],
            resources: vec![
                json!({"uri": "file:///r", "name": "r", "title": format!("R{h}"), "description": format!("RD{h}")}),
            ],
            templates: vec![
                json!({"uriTemplate": "file:///{x}", "name": "x", "description": format!("X{h}")}),
            ],
            subscribe: false,
            skills: Vec::new(),
        };
        let f = filter(&[], &[], &[]);
        let c = Catalogue::build(&[Mount {
            namespace: "up",
            filter: &f,
            listing: &listing,
        }]);
        let tool = &c.tools["up.t"].definition;
        assert_eq!(tool["title"], "T]0;pwned[2J");
        assert_eq!(tool["description"], "line]0;pwned[2J\n\tnext");
        assert_eq!(tool["annotations"]["title"], "A]0;pwned[2J");
        let prompt = &c.prompts["up.p"].definition;
        assert_eq!(prompt["description"], "P]0;pwned[2J");
        assert_eq!(prompt["arguments"][0]["title"], "AT]0;pwned[2J");
        assert_eq!(prompt["arguments"][0]["description"], "AD]0;pwned[2J");
        let resource = &c.resources["up+file:///r"].definition;
        assert_eq!(resource["title"], "R]0;pwned[2J");
        assert_eq!(resource["description"], "RD]0;pwned[2J");
        assert_eq!(
            c.templates["up+file:///{x}"].definition["description"],
            "X]0;pwned[2J"
        );
    }

    #[test]
    fn names_are_namespaced_filtered_and_renamed() {
        let listing = Listing {
            tools: vec![
                json!({"name": "log", "description": "d", "inputSchema": {"type": "object"}}),
                json!({"name": "diff", "inputSchema": {"type": "object"}}),
                json!({"name": "secret_dump", "inputSchema": {"type": "object"}}),
            ],
            prompts: vec![json!({"name": "review"})],
            resources: vec![json!({"uri": "file:///README.md", "name": "readme"})],
            templates: vec![json!({"uriTemplate": "file:///{path}", "name": "files"})],
            subscribe: false,
            skills: Vec::new(),
        };
        let f = filter(&[], &["secret_*"], &[("log", "history")]);
        let c = Catalogue::build(&[Mount {
            namespace: "git",
            filter: &f,
            listing: &listing,
        }]);
        assert_eq!(
            c.tools.keys().collect::<Vec<_>>(),
            ["git.diff", "git.history"]
        );
        let history = &c.tools["git.history"];
        assert_eq!(history.upstream_name, "log");
        assert_eq!(history.definition["name"], "git.history");
        assert_eq!(history.definition["description"], "d");
        assert!(c.prompts.contains_key("git.review"));
        assert_eq!(
            c.resources["git+file:///README.md"].definition["uri"],
            "git+file:///README.md"
        );
        assert_eq!(
            c.templates["git+file:///{path}"].upstream_name,
            "file:///{path}"
        );
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }

    #[test]
    fn include_lists_select() {
        let listing = Listing {
            tools: vec![json!({"name": "a"}), json!({"name": "b"})],
            ..Listing::default()
        };
        let f = filter(&["b"], &[], &[]);
        let c = Catalogue::build(&[Mount {
            namespace: "x",
            filter: &f,
            listing: &listing,
        }]);
        assert_eq!(c.tools.keys().collect::<Vec<_>>(), ["x.b"]);
    }

    #[test]
    fn a_lying_upstream_is_contained_and_reported() {
        let long = "n".repeat(200);
        let liar = Listing {
            tools: vec![
                json!("not an object"),
                json!({"description": "no name"}),
                json!({"name": 7}),
                json!({"name": "has space"}),
                json!({"name": long}),
                json!({"name": "ok"}),
                json!({"name": "ok"}),
            ],
            resources: vec![json!({"uri": "relative/path"})],
            ..Listing::default()
        };
        let f = filter(&[], &[], &[("missing", "m")]);
        let c = Catalogue::build(&[Mount {
            namespace: "liar",
            filter: &f,
            listing: &liar,
        }]);
        assert_eq!(c.tools.keys().collect::<Vec<_>>(), ["liar.ok"]);
        assert!(c.resources.is_empty());
        let messages: Vec<&str> = c.problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 8, "{messages:#?}");
        assert!(c.problems.iter().all(|p| p.upstream == "liar"));
        assert!(messages.iter().any(|m| m.contains("appears twice")));
        assert!(messages.iter().any(|m| m.contains("no such tool")));
        assert!(messages.iter().all(|m| m.len() < 300), "{messages:#?}");
    }

    #[test]
    fn namespaces_keep_upstreams_apart_and_a_rename_onto_a_taken_name_is_reported() {
        let a = Listing {
            tools: vec![json!({"name": "t"})],
            ..Listing::default()
        };
        let b = Listing {
            tools: vec![json!({"name": "u"}), json!({"name": "t"})],
            ..Listing::default()
        };
        // Upstream "b" renames `u` to `t`, which it also lists: the first one listed keeps
        // the name. Upstream "a"'s `t` lives in its own namespace and is untouched.
        let fa = filter(&[], &[], &[]);
        let fb = filter(&[], &[], &[("u", "t")]);
        let c = Catalogue::build(&[
            Mount {
                namespace: "a",
                filter: &fa,
                listing: &a,
            },
            Mount {
                namespace: "b",
                filter: &fb,
                listing: &b,
            },
        ]);
        assert_eq!(c.tools.keys().collect::<Vec<_>>(), ["a.t", "b.t"]);
        assert_eq!(c.tools["b.t"].upstream_name, "u");
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert_eq!(c.problems[0].upstream, "b");
        assert!(c.problems[0].message.contains("renamed onto"));
    }

    #[test]
    fn an_oversized_listing_is_cut_and_reported() {
        let listing = Listing {
            tools: (0..MAX_ENTRIES + 5)
                .map(|i| json!({"name": format!("t{i}")}))
                .collect(),
            ..Listing::default()
        };
        let f = Filter::default();
        let c = Catalogue::build(&[Mount {
            namespace: "big",
            filter: &f,
            listing: &listing,
        }]);
        assert_eq!(c.tools.len(), MAX_ENTRIES);
        assert_eq!(c.problems.len(), 1);
    }
}
