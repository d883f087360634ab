//! Resolving a called tool name the registry does not hold ([`ToolResolver`]).
//!
//! A server in front of other servers (the gateway) lists their tools under names of its
//! own, while a client that cannot know those names (an MCP App calling back into its
//! server's tools) calls the bare names. The registry asks its resolver, if one is set, for
//! the registered name a name it does not hold stands for. The engine resolves the name first
//! and then treats the call exactly as a call of the registered name: the authorization
//! policy, the execution policy and the tool's settings all see the registered name.

use std::sync::{Arc, PoisonError};

use super::McpToolRegistry;

/// What a name the registry does not hold stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Nothing: the call is answered as a call of an unknown tool.
    Unknown,
    /// The registered tool of this name.
    Tool(String),
    /// Several registered tools, by these names: the call is refused with an error naming
    /// them, never a silent choice.
    Ambiguous(Vec<String>),
}

/// Maps a tool name the registry does not hold onto registered names
/// ([`McpToolRegistry::set_resolver`]).
pub trait ToolResolver: Send + Sync + 'static {
    /// What `name` stands for. The registry keeps only the registered names of what this
    /// returns; a name it returns that is not registered counts as unknown.
    fn resolve(&self, name: &str) -> Resolution;
}

impl McpToolRegistry {
    /// Sets the resolver asked about the names of calls this registry holds no tool of
    /// (replacing any earlier one).
    pub fn set_resolver(&self, resolver: Arc<dyn ToolResolver>) {
        *self
            .resolver
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(resolver);
    }

    /// The registered name a call of `name` goes to: `name` itself when it is registered,
    /// else what the resolver says, keeping only registered names.
    pub fn resolve(&self, name: &str) -> Resolution {
        if self.read().contains_key(name) {
            return Resolution::Tool(name.to_owned());
        }
        let resolver = self
            .resolver
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(resolver) = resolver else {
            return Resolution::Unknown;
        };
        let registered = |n: &String| self.read().contains_key(n);
        match resolver.resolve(name) {
            Resolution::Unknown => Resolution::Unknown,
            Resolution::Tool(n) if registered(&n) => Resolution::Tool(n),
            Resolution::Tool(_) => Resolution::Unknown,
            Resolution::Ambiguous(names) => {
                let mut names: Vec<String> = names.into_iter().filter(registered).collect();
                names.sort();
                names.dedup();
                match names.len() {
                    0 => Resolution::Unknown,
                    1 => Resolution::Tool(names.remove(0)),
                    _ => Resolution::Ambiguous(names),
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Map, Value, json};

    use super::*;

    struct Bare(BTreeMap<&'static str, Vec<&'static str>>);

    impl ToolResolver for Bare {
        fn resolve(&self, name: &str) -> Resolution {
            match self.0.get(name).map(Vec::as_slice) {
                None | Some([]) => Resolution::Unknown,
                Some([one]) => Resolution::Tool((*one).to_owned()),
                Some(many) => Resolution::Ambiguous(many.iter().map(|s| (*s).into()).collect()),
            }
        }
    }

    fn registry(names: &[&str]) -> McpToolRegistry {
        let r = McpToolRegistry::new();
        for n in names {
            r.register(
                *n,
                json!({"type": "object"}),
                |_: Map<String, Value>| async { Ok::<_, crate::McpErrorDetail>(json!({})) },
            )
            .unwrap();
        }
        r
    }

    #[test]
    fn a_registered_name_is_itself_and_others_go_to_the_resolver() {
        let r = registry(&["a.t", "b.t", "a.only"]);
        assert_eq!(r.resolve("a.t"), Resolution::Tool("a.t".into()));
        assert_eq!(r.resolve("t"), Resolution::Unknown, "no resolver yet");
        r.set_resolver(Arc::new(Bare(BTreeMap::from([
            ("t", vec!["b.t", "a.t"]),
            ("only", vec!["a.only"]),
            ("gone", vec!["a.gone"]),
            ("half", vec!["a.gone", "a.only"]),
        ]))));
        assert_eq!(
            r.resolve("t"),
            Resolution::Ambiguous(vec!["a.t".into(), "b.t".into()])
        );
        assert_eq!(r.resolve("only"), Resolution::Tool("a.only".into()));
        // What the resolver names must be registered.
        assert_eq!(r.resolve("gone"), Resolution::Unknown);
        assert_eq!(r.resolve("half"), Resolution::Tool("a.only".into()));
        assert_eq!(r.resolve("nothing"), Resolution::Unknown);
    }
}
