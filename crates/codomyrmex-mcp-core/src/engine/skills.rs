//! The Skills extension's methods (SEP-2640): `skills/list`, `skills/get`,
//! `resources/directory/read`, and `resources/read` of a `skill://` file, answered at once
//! from the [`McpSkillRegistry`](crate::skills::McpSkillRegistry) (no handler runs: the
//! bytes are in memory), in both eras. The extension defines no client capability, so
//! nothing is gated on the client's; the server declares
//! `extensions["io.modelcontextprotocol/skills"]` (and `resources`) in both eras.

use serde_json::{Map, Value, json};

use crate::skills::McpSkillRegistry;

use super::*;
use crate::wire::skills::{
    METHOD_DIRECTORY_READ, METHOD_SKILLS_GET, METHOD_SKILLS_LIST, SKILLS_EXTENSION,
    SkillsCapability,
};

/// Whether `method` is one of the extension's.
pub(super) fn is_skills_method(method: &str) -> bool {
    matches!(
        method,
        METHOD_SKILLS_LIST | METHOD_SKILLS_GET | METHOD_DIRECTORY_READ
    )
}

impl Engine {
    /// Answers a method of the extension (`is_skills_method`).
    pub(super) fn handle_skills(
        &self,
        session: &Session,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Handled {
        let Some(skills) = self.shared.skills.as_ref() else {
            return error(&id, ErrorObject::method_not_found(method));
        };
        let result = match method {
            METHOD_SKILLS_LIST => cursor(params).map(|after| {
                let (items, next) = skills.page(after.as_deref(), self.shared.config.page_size);
                let items = self.shared.access.allowed_items(
                    self.shared.access.grant(session),
                    "skills",
                    items,
                );
                self.shared
                    .results
                    .page_result("skills", items, next, scope)
            }),
            METHOD_SKILLS_GET => match params.get("uri") {
                Some(Value::String(uri)) => match skills.get(uri).filter(|s| {
                    self.shared
                        .access
                        .permits(session, crate::authz::Kind::Skill, s.name())
                }) {
                    Some(skill) => {
                        let mut obj = Map::new();
                        obj.insert(
                            "skill".into(),
                            serde_json::to_value(skill.entry()).unwrap_or(Value::Null),
                        );
                        Ok(self.shared.results.cacheable(obj, scope))
                    }
                    None => Err(ErrorObject::invalid_params(format!(
                        "No skill is served at {}",
                        shown(uri)
                    ))
                    .with_data(json!({"uri": shown(uri)}))),
                },
                _ => Err(ErrorObject::invalid_params(
                    "skills/get: uri must be a string",
                )),
            },
            METHOD_DIRECTORY_READ if skills.directory_read() => {
                match params.get("uri").and_then(Value::as_str) {
                    Some(uri) if !self.shared.access.permits_uri(session, uri) => {
                        Err(ErrorObject::invalid_params(format!(
                            "{} is not a directory resource",
                            shown(uri)
                        ))
                        .with_data(json!({"uri": shown(uri)})))
                    }
                    _ => self.read_directory(params),
                }
            }
            _ => Err(ErrorObject::method_not_found(method)),
        };
        Handled::Reply(self.shared.results.respond(id, result, scope))
    }

    fn read_directory(&self, params: &Map<String, Value>) -> Result<Value, ErrorObject> {
        let Some(Value::String(uri)) = params.get("uri") else {
            return Err(ErrorObject::invalid_params(
                "resources/directory/read: uri must be a string",
            ));
        };
        let after = cursor(params)?;
        let skills = self.shared.skills.as_ref();
        let Some(children) = skills.and_then(|s| s.directory(uri)) else {
            return Err(ErrorObject::invalid_params(format!(
                "{} is not a directory resource",
                shown(uri)
            ))
            .with_data(json!({"uri": shown(uri)})));
        };
        let (items, next) = crate::util::page_after(
            &children,
            after.as_deref(),
            self.shared.config.page_size,
            |e| serde_json::to_value(e).unwrap_or(Value::Null),
        );
        let mut obj = Map::new();
        obj.insert("resources".into(), Value::Array(items));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        Ok(Value::Object(obj))
    }

    /// The answer to a `resources/read` of a skill file, when `uri` is one.
    pub(super) fn read_skill_file(
        &self,
        id: &RequestId,
        uri: &str,
        scope: &RequestScope,
    ) -> Option<Handled> {
        let contents = self.shared.skills.as_ref()?.read_file(uri)?;
        let mut obj = Map::new();
        obj.insert(
            "contents".into(),
            json!([serde_json::to_value(contents).unwrap_or(Value::Null)]),
        );
        let result = self.shared.results.cacheable(obj, scope);
        Some(Handled::Reply(self.shared.results.respond_capped(
            id.clone(),
            result,
            scope,
        )))
    }

    /// `capabilities` with the extension's declaration, when skills are served.
    pub(super) fn with_skills_capability(&self, capabilities: Value) -> Value {
        let (Some(skills), Value::Object(mut caps)) = (&self.shared.skills, capabilities.clone())
        else {
            return capabilities;
        };
        let settings = SkillsCapability {
            directory_read: skills.directory_read(),
        };
        let extensions = caps
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(e) = extensions {
            e.insert(
                SKILLS_EXTENSION.into(),
                serde_json::to_value(settings).unwrap_or_else(|_| json!({})),
            );
        }
        Value::Object(caps)
    }
}

/// A `resources/list` page (`items` after the cursor `after`, `more` when the registry
/// has more) with every skill's `SKILL.md` merged in, as the extension lists them: one
/// ordered URI space, so the cursor (the last URI of a page) continues both. Of the union
/// the first `size` entries are kept; since each source gave at most `size` after the
/// cursor, nothing either one still holds sorts before the last one kept.
pub(super) fn with_skill_mds(
    skills: Option<&McpSkillRegistry>,
    after: Option<&str>,
    size: usize,
    (items, next): (Vec<Value>, Option<String>),
) -> (Vec<Value>, Option<String>) {
    let Some(skills) = skills else {
        return (items, next);
    };
    let (mds, more_mds) = skills.skill_md_page(after, size);
    if mds.is_empty() {
        return (items, next);
    }
    let size = size.max(1);
    let mut merged: Vec<(String, Value)> = items
        .into_iter()
        .map(|v| {
            let uri = v
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (uri, v)
        })
        .chain(mds)
        .collect();
    merged.sort_by(|a, b| a.0.cmp(&b.0));
    let dropped = merged.len() > size;
    merged.truncate(size);
    let next = (dropped || next.is_some() || more_mds)
        .then(|| merged.last().map(|(uri, _)| uri.clone()))
        .flatten();
    (merged.into_iter().map(|(_, v)| v).collect(), next)
}

/// A client's URI as an error message shows it: at most 256 characters.
fn shown(uri: &str) -> String {
    uri.chars().take(256).collect()
}
