//! Where the engine asks the authorization policy ([`crate::authz`]): once per request for
//! the caller's grant, then per name. Lists are filtered item by item here (and cached per
//! grant by `list_pages.rs`); a refused call, read, get or completion is answered as if the
//! name did not exist, so a caller learns nothing of what it may not use.
//!
//! The policy in force is one immutable snapshot ([`LivePolicy`]), replaced whole by
//! [`Engine::set_authorization`] when a configuration is reloaded: a request reads it once per
//! question, the list caches are keyed by its epoch, and every client hears `list_changed`.

use arc_swap::ArcSwap;

use serde_json::Value;

use super::*;
use crate::authz::{Authorization, Grant, Kind};

/// The authorization policy in force, and how many times it was replaced.
#[derive(Debug)]
struct LivePolicy {
    /// `None`: everything is allowed.
    policy: Option<Arc<Authorization>>,
    /// Bumped at each replacement: cached list pages built under an older policy are stale.
    epoch: u64,
}

/// The engine's side of authorization: the policy in force, and the skills whose files it
/// decides by the skill's name. Made once per engine.
pub(super) struct Access {
    /// The policy in force, replaced whole ([`Access::replace`]). Read on every call: an
    /// `ArcSwap` is read without a write to memory the threads share, as a `RwLock`'s read
    /// lock is not.
    live: ArcSwap<LivePolicy>,
    /// The skills being served, if any.
    skills: Option<Arc<crate::skills::McpSkillRegistry>>,
}

impl Access {
    /// `policy` over these `skills`.
    pub(super) fn new(
        policy: Option<Arc<Authorization>>,
        skills: Option<Arc<crate::skills::McpSkillRegistry>>,
    ) -> Self {
        Self {
            live: ArcSwap::from_pointee(LivePolicy { policy, epoch: 0 }),
            skills,
        }
    }

    /// One snapshot of the policy in force, held (not copied) for one question: a question
    /// is answered from one snapshot.
    fn live(&self) -> arc_swap::Guard<Arc<LivePolicy>> {
        self.live.load()
    }

    /// The policy in force.
    pub(super) fn policy(&self) -> Option<Arc<Authorization>> {
        self.live().policy.clone()
    }

    /// Puts `policy` in force as one value, with the next epoch.
    pub(super) fn replace(&self, policy: Option<Arc<Authorization>>) {
        self.live.rcu(|live| LivePolicy {
            policy: policy.clone(),
            epoch: live.epoch.wrapping_add(1),
        });
    }

    /// How many times the policy was replaced (part of every list page's cache key).
    pub(super) fn epoch(&self) -> u64 {
        self.live().epoch
    }

    /// The caller's grant under the policy in force; `None` when there is no policy
    /// (everything allowed). A session without a principal is the local caller.
    pub(super) fn grant(&self, session: &Session) -> Option<Grant> {
        let policy = self.live().policy.clone()?;
        Some(policy.grant(session.principal_ref().map(|p| p.caller())))
    }

    /// Whether the caller may use `name` of `kind`; a refusal is counted. The grant and the
    /// answer come from one snapshot of the policy.
    pub(super) fn permits(&self, session: &Session, kind: Kind, name: &str) -> bool {
        let live = self.live();
        let Some(policy) = &live.policy else {
            return true;
        };
        let grant = policy.grant(session.principal_ref().map(|p| p.caller()));
        policy.permits(grant, kind, name)
    }

    /// Whether the caller may read `uri` (a resource, an App's `ui://` resource, or a file of
    /// a skill, decided by the skill's name); a refusal is counted.
    pub(super) fn permits_uri(&self, session: &Session, uri: &str) -> bool {
        let live = self.live();
        let Some(policy) = &live.policy else {
            return true;
        };
        let grant = policy.grant(session.principal_ref().map(|p| p.caller()));
        match Kind::of_uri(uri) {
            Kind::Skill => match self.skill_name_of(uri) {
                Some(name) => policy.permits(grant, Kind::Skill, &name),
                None => policy.permits(grant, Kind::Resource, uri),
            },
            kind => policy.permits(grant, kind, uri),
        }
    }

    /// The items of a `key` list (`tools`, `prompts`, `resources`, `resourceTemplates`,
    /// `skills`) that `grant` allows; all of them without a policy.
    pub(super) fn allowed_items(
        &self,
        grant: Option<Grant>,
        key: &str,
        mut items: Vec<Value>,
    ) -> Vec<Value> {
        let (Some(policy), Some(grant)) = (self.policy(), grant) else {
            return items;
        };
        fn text<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
            v.get(field).and_then(Value::as_str)
        }
        let allows =
            |kind: Kind, name: Option<&str>| name.is_some_and(|n| policy.allows(grant, kind, n));
        items.retain(|item| match key {
            "tools" => allows(Kind::Tool, text(item, "name")),
            "prompts" => allows(Kind::Prompt, text(item, "name")),
            "skills" => allows(
                Kind::Skill,
                item.get("frontmatter").and_then(|f| text(f, "name")),
            ),
            "resourceTemplates" => {
                let uri = text(item, "uriTemplate");
                allows(uri.map_or(Kind::Resource, Kind::of_uri), uri)
            }
            _ => {
                let uri = text(item, "uri");
                match uri.map(Kind::of_uri) {
                    Some(Kind::Skill) => allows(
                        Kind::Skill,
                        uri.and_then(|u| self.skill_name_of(u)).as_deref(),
                    ),
                    Some(kind) => allows(kind, uri),
                    None => false,
                }
            }
        });
        items
    }

    /// The name of the skill `uri` (a `skill://` URI) belongs to, if any.
    fn skill_name_of(&self, uri: &str) -> Option<String> {
        let skills = self.skills.as_ref()?;
        skills
            .skills()
            .into_iter()
            .find(|s| {
                let root = s.root_uri();
                uri == root || uri.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
            })
            .map(|s| s.name().to_owned())
    }
}

impl Engine {
    /// The authorization policy in force (`config().authorization` until
    /// [`set_authorization`](Self::set_authorization) replaces it).
    pub fn authorization(&self) -> Option<Arc<Authorization>> {
        self.shared.access.policy()
    }

    /// Replaces the authorization policy as one value (a reloaded configuration's): requests
    /// from now on are decided by `policy`, cached list pages are rebuilt, and every client
    /// hears that the tools, prompts and resources lists changed (in both eras, as if the
    /// registries had changed), since what each caller may see can have changed.
    pub fn set_authorization(&self, policy: Option<Arc<Authorization>>) {
        self.shared.access.replace(policy);
        for event in [
            ServerEvent::ToolsListChanged,
            ServerEvent::PromptsListChanged,
            ServerEvent::ResourcesListChanged,
        ] {
            self.shared.listeners.announce(event);
        }
    }

    /// Every part whose counts `/metrics` and `/status` show ([`crate::observe`]): the
    /// authorization policy in force (its denials), then the configuration's
    /// [`observers`](crate::config::McpServerConfig::observers).
    pub fn observed(&self) -> Vec<Arc<dyn crate::observe::Observed>> {
        let mut parts: Vec<Arc<dyn crate::observe::Observed>> = Vec::new();
        if let Some(a) = self.authorization() {
            parts.push(a);
        }
        parts.extend(self.shared.config.observers.snapshot());
        parts
    }
}
