//! Authorization: which principal may list and use which names (issue #31, item 1).
//!
//! A policy is a list of rules ([`PolicyEntry`], the `[[policy]]` tables of `serve`'s and the
//! gateway's configuration files), compiled once into an [`Authorization`] at load time.
//! Each rule names a principal (`name`, the label of its metrics), says whom it matches
//! (`subjects`, `scopes`, `claims`, or `local` for the caller of a transport that
//! authenticates nobody, such as stdio) and which names that caller may list and use, per
//! kind ([`Kind`]): tools, prompts, resources and resource templates, skills, and Apps'
//! `ui://` resources. Completion follows the prompt or template it completes, and tasks the
//! tool that started them.
//!
//! Once any rule is configured, everything not allowed is denied: a caller matched by no
//! rule sees empty lists. A caller matched by several rules gets the union of what they
//! allow. The engine asks [`Authorization::grant`] once per request (which rules match
//! the caller: a bit set, [`Grant`]) and [`Authorization::permits`] per name; lists are
//! filtered per grant and cached per grant, so each name of a list is tried once per list
//! change. Nothing here knows HTTP, JSON-RPC methods or transports: the caller is plain data
//! ([`Caller`]).
//!
//! Plain rules, not CEL: a rule is a conjunction (every field given must match), rules
//! are a disjunction, and patterns are globs (`glob.rs`). That covers what an MCP CEL policy
//! is written for (`jwt.sub == "alice" && mcp.tool.name.startsWith("git_")`, a claim's value,
//! a scope held) with no interpreter in the binary; what it does not express is negation
//! (allow-lists only) and arithmetic on claims.

pub mod glob;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::observe::{Observed, family_header, label_value};

use glob::Glob;

/// The most rules a policy may hold (a [`Grant`] is a 64-bit set).
pub const MAX_RULES: usize = 64;

/// One rule as written (`[[policy]]`): whom it matches, and what it allows them.
///
/// ```toml
/// [[policy]]
/// name = "ops"                      # the principal's name (metrics label, `--check`)
/// subjects = ["alice", "svc-*"]     # any of these subjects (globs)
/// scopes = ["mcp:ops"]              # and every one of these scopes
/// claims = { team = "ops" }         # and each claim's value (a glob; an array claim: any element)
/// tools = ["*"]
/// prompts = ["incident-*"]
/// resources = ["file:///srv/*"]     # resource URIs and template URIs
/// skills = ["*"]                    # skill names
/// apps = ["ui://*"]                 # ui:// resources of MCP Apps
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    /// The principal's name: the `principal` label of its denials on `/metrics`.
    pub name: String,
    /// Matches the caller of a transport that authenticated nobody (stdio; HTTP without
    /// authentication), and nobody else.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local: bool,
    /// Subjects (a JWT's `sub`, or a static token's configured identity), as globs; any one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    /// Scopes the caller must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Claims of the caller's token, each matched by a glob (a dotted name reaches into an
    /// object claim when no claim has the dotted name itself).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
    /// Tool names allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Prompt names allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Resource URIs and resource template URIs allowed (not `ui://` nor `skill://` ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Skill names allowed (`skills/list`, `skills/get`, and the skills' `skill://` files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// `ui://` resources allowed (MCP Apps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<String>,
}

/// What kind of name is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool, by name (task-augmented calls included).
    Tool,
    /// A prompt, by name.
    Prompt,
    /// A resource or resource template, by URI.
    Resource,
    /// A skill, by name.
    Skill,
    /// An App's `ui://` resource, by URI.
    App,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Tool,
        Kind::Prompt,
        Kind::Resource,
        Kind::Skill,
        Kind::App,
    ];

    fn index(self) -> usize {
        match self {
            Kind::Tool => 0,
            Kind::Prompt => 1,
            Kind::Resource => 2,
            Kind::Skill => 3,
            Kind::App => 4,
        }
    }

    /// The key of the kind in a `[[policy]]` table.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Tool => "tools",
            Kind::Prompt => "prompts",
            Kind::Resource => "resources",
            Kind::Skill => "skills",
            Kind::App => "apps",
        }
    }

    /// The kind a `resources/*` URI belongs to: `ui://` is an App's, `skill://` a skill's
    /// file (decided by the skill's name, which the caller resolves), any other a resource.
    pub fn of_uri(uri: &str) -> Kind {
        if uri.starts_with("ui://") {
            Kind::App
        } else if uri.starts_with("skill://") {
            Kind::Skill
        } else {
            Kind::Resource
        }
    }
}

/// Who is asking, as the transport established it.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The subject.
    pub subject: &'a str,
    /// The scopes held.
    pub scopes: &'a [String],
    /// The token's claims (empty for a static token).
    pub claims: &'a Map<String, Value>,
}

/// Which rules matched a caller: decided once per request by [`Authorization::grant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Grant(u64);

impl Grant {
    /// The set as bits (rule `i` is bit `i`): a cache key.
    pub fn bits(self) -> u64 {
        self.0
    }
}

/// A rule that breaks the schema's rules, with the rule's position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy #{number} ({name:?}): {message}")]
pub struct PolicyError {
    /// The rule's position, from 0.
    pub index: usize,
    /// The rule's position, from 1 (as the message shows it).
    pub number: usize,
    /// The rule's `name`.
    pub name: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Debug)]
enum Who {
    Local,
    Matched {
        subjects: Vec<Glob>,
        scopes: Vec<String>,
        claims: Vec<(String, Glob)>,
    },
}

#[derive(Debug)]
struct Rule {
    /// Index into `Authorization::names`.
    principal: usize,
    who: Who,
    allow: [Vec<Glob>; 5],
}

/// A compiled policy: see the [module](self).
#[derive(Debug)]
pub struct Authorization {
    rules: Vec<Rule>,
    /// The rules' distinct principal names, in order of first appearance.
    names: Vec<String>,
    /// Denials per name, and one more for callers no rule matched.
    denials: Vec<AtomicU64>,
    entries: Vec<PolicyEntry>,
}

impl Authorization {
    /// Compiles `entries`; `Ok(None)` when there are none (no policy: everything allowed).
    pub fn compile(entries: &[PolicyEntry]) -> Result<Option<Self>, PolicyError> {
        if entries.is_empty() {
            return Ok(None);
        }
        let mut names: Vec<String> = Vec::new();
        let mut rules = Vec::with_capacity(entries.len());
        for (index, e) in entries.iter().enumerate() {
            let fail = |message: String| PolicyError {
                index,
                number: index + 1,
                name: e.name.clone(),
                message,
            };
            if index >= MAX_RULES {
                return Err(fail(format!("a policy holds at most {MAX_RULES} rules")));
            }
            if e.name.is_empty()
                || e.name.len() > 64
                || !e
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b))
            {
                return Err(fail(
                    "`name` must be 1 to 64 characters of A-Z, a-z, 0-9, '-', '_', '.', '@'".into(),
                ));
            }
            let matchers = !e.subjects.is_empty() || !e.scopes.is_empty() || !e.claims.is_empty();
            let who = match (e.local, matchers) {
                (true, true) => {
                    return Err(fail(
                        "`local = true` matches the unauthenticated caller: it takes no \
                         `subjects`, `scopes` or `claims`"
                            .into(),
                    ));
                }
                (false, false) => {
                    return Err(fail(
                        "the rule matches nobody: give `subjects` (\"*\" for every \
                         authenticated caller), `scopes`, `claims`, or `local = true`"
                            .into(),
                    ));
                }
                (true, false) => Who::Local,
                (false, true) => Who::Matched {
                    subjects: globs(&e.subjects).map_err(|m| fail(format!("subjects: {m}")))?,
                    scopes: e.scopes.clone(),
                    claims: e
                        .claims
                        .iter()
                        .map(|(k, v)| {
                            if k.is_empty() {
                                return Err(fail("claims: a claim's name is empty".into()));
                            }
                            Glob::new(v)
                                .map(|g| (k.clone(), g))
                                .map_err(|m| fail(format!("claims.{k}: {m}")))
                        })
                        .collect::<Result<_, _>>()?,
                },
            };
            let lists = [&e.tools, &e.prompts, &e.resources, &e.skills, &e.apps];
            let mut allow: [Vec<Glob>; 5] = Default::default();
            for (kind, list) in Kind::ALL.iter().zip(lists) {
                allow[kind.index()] =
                    globs(list).map_err(|m| fail(format!("{}: {m}", kind.key())))?;
            }
            let principal = match names.iter().position(|n| *n == e.name) {
                Some(i) => i,
                None => {
                    names.push(e.name.clone());
                    names.len() - 1
                }
            };
            rules.push(Rule {
                principal,
                who,
                allow,
            });
        }
        let denials = (0..=names.len()).map(|_| AtomicU64::new(0)).collect();
        Ok(Some(Self {
            rules,
            names,
            denials,
            entries: entries.to_vec(),
        }))
    }

    /// The rules as written.
    pub fn entries(&self) -> &[PolicyEntry] {
        &self.entries
    }

    /// Which rules match `caller` (`None`: the transport authenticated nobody).
    pub fn grant(&self, caller: Option<Caller<'_>>) -> Grant {
        let mut bits = 0u64;
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.who.matches(caller.as_ref()) {
                bits |= 1 << i;
            }
        }
        Grant(bits)
    }

    /// Whether `grant` allows `name` of `kind`.
    pub fn allows(&self, grant: Grant, kind: Kind, name: &str) -> bool {
        self.granted(grant)
            .any(|r| r.allow[kind.index()].iter().any(|g| g.matches(name)))
    }

    /// [`allows`](Self::allows), counting a refusal on `/metrics` under the first matching
    /// rule's principal (or under `""` when no rule matched): for a request that is refused.
    pub fn permits(&self, grant: Grant, kind: Kind, name: &str) -> bool {
        if self.allows(grant, kind, name) {
            return true;
        }
        let slot = self
            .granted(grant)
            .next()
            .map_or(self.names.len(), |r| r.principal);
        if let Some(c) = self.denials.get(slot) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        false
    }

    /// Whether the rules named `principal` allow `name` of `kind` (for `--check`).
    pub fn principal_allows(&self, principal: &str, kind: Kind, name: &str) -> bool {
        self.rules.iter().any(|r| {
            self.names[r.principal] == principal
                && r.allow[kind.index()].iter().any(|g| g.matches(name))
        })
    }

    /// The principals' names, in order of first appearance.
    pub fn principals(&self) -> &[String] {
        &self.names
    }

    /// Denials so far: one per principal name, then `("", n)` for callers no rule matched.
    pub fn denials(&self) -> Vec<(&str, u64)> {
        self.names
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(""))
            .zip(&self.denials)
            .map(|(n, c)| (n, c.load(Ordering::Relaxed)))
            .collect()
    }

    /// The denials in the text format `/metrics` serves:
    /// `mcp_authz_denials_total{principal=..}` (what [`Observed::metrics`] writes).
    pub fn metrics_text(&self) -> String {
        let mut out = String::new();
        self.metrics(&mut out);
        out
    }

    fn granted(&self, grant: Grant) -> impl Iterator<Item = &Rule> {
        self.rules
            .iter()
            .enumerate()
            .filter(move |(i, _)| grant.0 & (1 << i) != 0)
            .map(|(_, r)| r)
    }
}

impl Who {
    fn matches(&self, caller: Option<&Caller<'_>>) -> bool {
        match (self, caller) {
            (Who::Local, None) => true,
            (Who::Local, Some(_)) | (Who::Matched { .. }, None) => false,
            (
                Who::Matched {
                    subjects,
                    scopes,
                    claims,
                },
                Some(c),
            ) => {
                (subjects.is_empty() || subjects.iter().any(|g| g.matches(c.subject)))
                    && scopes.iter().all(|s| c.scopes.contains(s))
                    && claims
                        .iter()
                        .all(|(k, g)| claim(c.claims, k).is_some_and(|v| value_matches(v, g)))
            }
        }
    }
}

/// The claim `key`: by that name, else by a dotted path into object claims.
fn claim<'a>(claims: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(key) {
        return Some(v);
    }
    let mut parts = key.split('.');
    let mut v = claims.get(parts.next()?)?;
    for p in parts {
        v = v.as_object()?.get(p)?;
    }
    Some(v)
}

fn value_matches(v: &Value, g: &Glob) -> bool {
    match v {
        Value::String(s) => g.matches(s),
        Value::Array(items) => items.iter().any(|i| !i.is_array() && value_matches(i, g)),
        Value::Number(n) => g.matches(&n.to_string()),
        Value::Bool(b) => g.matches(if *b { "true" } else { "false" }),
        Value::Null | Value::Object(_) => false,
    }
}

fn globs(list: &[String]) -> Result<Vec<Glob>, String> {
    list.iter().map(|p| Glob::new(p)).collect()
}

/// The policy's denials per principal on `/metrics`, through the one hook
/// ([`crate::observe`]).
impl Observed for Authorization {
    fn metrics(&self, out: &mut String) {
        family_header(
            out,
            "mcp_authz_denials",
            "counter",
            "Requests refused by the authorization policy, by the principal name of the first \
             rule that matched the caller (\"\" when none did).",
        );
        for (name, n) in self.denials() {
            let _ = writeln!(
                out,
                "mcp_authz_denials_total{{principal=\"{}\"}} {n}",
                label_value(name)
            );
        }
    }
}
