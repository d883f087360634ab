//! Where the engine asks the authorization policy ([`crate::authz`]): once per request for
//! the caller's grant, then per name. Lists are filtered item by item here (and cached per
//! grant by `list_pages.rs`); a refused call, read, get or completion is answered as if the
//! name did not exist, so a caller learns nothing of what it may not use.

use serde_json::Value;

use super::*;
use crate::authz::{Authorization, Grant, Kind};

/// The engine's side of authorization: the configured policy, and the skills whose files it
/// decides by the skill's name. Made once per engine.
pub(super) struct Access {
    /// The configured policy; `None`: everything is allowed.
    policy: Option<Arc<Authorization>>,
    /// The skills being served, if any.
    skills: Option<Arc<crate::skills::McpSkillRegistry>>,
}

impl Access {
    /// `policy` over these `skills`.
    pub(super) fn new(
        policy: Option<Arc<Authorization>>,
        skills: Option<Arc<crate::skills::McpSkillRegistry>>,
    ) -> Self {
        Self { policy, skills }
    }

    /// The caller's grant under the configured policy; `None` when there is no policy
    /// (everything allowed). A session without a principal is the local caller.
    pub(super) fn grant(&self, session: &Session) -> Option<Grant> {
        let policy = self.policy.as_ref()?;
        Some(policy.grant(session.principal_ref().map(|p| p.caller())))
    }

    /// Whether the caller may use `name` of `kind`; a refusal is counted.
    pub(super) fn permits(&self, session: &Session, kind: Kind, name: &str) -> bool {
        match (&self.policy, self.grant(session)) {
            (Some(policy), Some(grant)) => policy.permits(grant, kind, name),
            _ => true,
        }
    }

    /// Whether the caller may read `uri` (a resource, an App's `ui://` resource, or a file of
    /// a skill, decided by the skill's name); a refusal is counted.
    pub(super) fn permits_uri(&self, session: &Session, uri: &str) -> bool {
        let Some(grant) = self.grant(session) else {
            return true;
        };
        let Some(policy) = &self.policy else {
            return true;
        };
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
        let (Some(policy), Some(grant)) = (&self.policy, grant) else {
            return items;
        };
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_owned);
        items.retain(|item| {
            let (kind, name) = match key {
                "tools" => (Kind::Tool, text(item, "name")),
                "prompts" => (Kind::Prompt, text(item, "name")),
                "skills" => (
                    Kind::Skill,
                    item.get("frontmatter").and_then(|f| text(f, "name")),
                ),
                "resourceTemplates" => {
                    let uri = text(item, "uriTemplate");
                    (uri.as_deref().map_or(Kind::Resource, Kind::of_uri), uri)
                }
                _ => {
                    let uri = text(item, "uri");
                    match uri.as_deref().map(Kind::of_uri) {
                        Some(Kind::Skill) => (
                            Kind::Skill,
                            uri.as_deref().and_then(|u| self.skill_name_of(u)),
                        ),
                        Some(kind) => (kind, uri),
                        None => (Kind::Resource, None),
                    }
                }
            };
            name.is_some_and(|n| policy.allows(grant, kind, &n))
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
