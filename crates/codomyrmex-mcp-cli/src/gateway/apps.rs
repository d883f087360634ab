//! MCP Apps through the gateway (SEP-1865): a tool's links to its app renamed with the app,
//! and an app's calls of its server's bare tool names resolved to the gateway's names.
//!
//! An upstream's `ui://` resources are mounted under the namespace as every URI is
//! ([`super::uri`]: `ui://dashboard/view` of upstream `app` is `ui://app/dashboard/view`),
//! their HTML and `_meta.ui` untouched. [`rename_tool_links`] renames a tool's
//! `_meta.ui.resourceUri` (and the deprecated `_meta["ui/resourceUri"]`) the same way, so
//! each link still names the mounted resource.
//!
//! An app calls the tools of the server it came from by their own names (`dashboard.refresh`):
//! it cannot know the gateway's (`app.dashboard.refresh`). [`BareNames`] is the gateway tool
//! registry's resolver: a called name no tool is mounted under goes to the one mounted tool
//! whose upstream name it is; when several upstreams mount a tool of that name, the call is
//! refused with an error naming their gateway names. Only mounted tools are candidates, so
//! an upstream's filters apply as to any call, and the engine authorizes the resolved name.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{PoisonError, RwLock};

use codomyrmex_mcp::apps::{LEGACY_RESOURCE_URI_KEY, UI_META_KEY};
use codomyrmex_mcp::{Resolution, ToolResolver};
use serde_json::{Map, Value};

use super::uri::local_uri;

/// Renames the `ui://` links of a tool's `_meta` (`ui.resourceUri`, and the deprecated flat
/// `ui/resourceUri`) to the URIs their resources are mounted under in `namespace`. A link
/// that cannot be renamed is an error naming it: the tool is then not mounted.
pub fn rename_tool_links(namespace: &str, meta: &mut Map<String, Value>) -> Result<(), String> {
    let rename = |link: &mut Value, key: &str| match link {
        Value::String(uri) => match local_uri(namespace, uri) {
            Some(local) => {
                *uri = local;
                Ok(())
            }
            None => Err(format!(
                "its _meta {key} {:?} is not a URI the gateway can rename",
                uri.chars().take(80).collect::<String>()
            )),
        },
        _ => Err(format!("its _meta {key} is not a string")),
    };
    if let Some(Value::Object(ui)) = meta.get_mut(UI_META_KEY)
        && let Some(link) = ui.get_mut("resourceUri")
    {
        rename(link, "ui.resourceUri")?;
    }
    if let Some(link) = meta.get_mut(LEGACY_RESOURCE_URI_KEY) {
        rename(link, LEGACY_RESOURCE_URI_KEY)?;
    }
    Ok(())
}

/// The mounted tools by their upstream (bare) names: the gateway tool registry's resolver.
#[derive(Debug, Default)]
pub struct BareNames {
    by_bare: RwLock<BTreeMap<String, BTreeSet<String>>>,
}

impl BareNames {
    /// Records that the upstream tool `bare` is mounted as `local`.
    pub fn insert(&self, bare: &str, local: &str) {
        self.by_bare
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(bare.to_owned())
            .or_default()
            .insert(local.to_owned());
    }

    /// Forgets that the upstream tool `bare` is mounted as `local`.
    pub fn remove(&self, bare: &str, local: &str) {
        let mut by_bare = self.by_bare.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(locals) = by_bare.get_mut(bare) {
            locals.remove(local);
            if locals.is_empty() {
                by_bare.remove(bare);
            }
        }
    }
}

impl ToolResolver for BareNames {
    fn resolve(&self, name: &str) -> Resolution {
        let by_bare = self.by_bare.read().unwrap_or_else(PoisonError::into_inner);
        let Some(locals) = by_bare.get(name) else {
            return Resolution::Unknown;
        };
        let mut locals: Vec<String> = locals.iter().cloned().collect();
        match locals.len() {
            0 => Resolution::Unknown,
            1 => Resolution::Tool(locals.remove(0)),
            _ => Resolution::Ambiguous(locals),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn links_are_renamed_with_their_resources() {
        let mut meta = json!({
            "ui": {"resourceUri": "ui://dashboard/view", "visibility": ["app"]},
            "ui/resourceUri": "ui://dashboard/view",
            "other": "ui://left/alone"
        });
        rename_tool_links("app", meta.as_object_mut().unwrap()).unwrap();
        assert_eq!(
            meta,
            json!({
                "ui": {"resourceUri": "ui://app/dashboard/view", "visibility": ["app"]},
                "ui/resourceUri": "ui://app/dashboard/view",
                "other": "ui://left/alone"
            })
        );
        let mut bad = json!({"ui": {"resourceUri": 7}});
        assert!(rename_tool_links("app", bad.as_object_mut().unwrap()).is_err());
        let mut bad = json!({"ui/resourceUri": "no scheme"});
        assert!(rename_tool_links("app", bad.as_object_mut().unwrap()).is_err());
        let mut none = json!({"title": "x"});
        rename_tool_links("app", none.as_object_mut().unwrap()).unwrap();
        assert_eq!(none, json!({"title": "x"}));
    }

    #[test]
    fn a_bare_name_resolves_only_when_one_upstream_mounts_it() {
        let names = BareNames::default();
        names.insert("refresh", "a.refresh");
        assert_eq!(
            names.resolve("refresh"),
            Resolution::Tool("a.refresh".into())
        );
        names.insert("refresh", "b.refresh");
        assert_eq!(
            names.resolve("refresh"),
            Resolution::Ambiguous(vec!["a.refresh".into(), "b.refresh".into()])
        );
        names.remove("refresh", "a.refresh");
        assert_eq!(
            names.resolve("refresh"),
            Resolution::Tool("b.refresh".into())
        );
        names.remove("refresh", "b.refresh");
        assert_eq!(names.resolve("refresh"), Resolution::Unknown);
        assert_eq!(names.resolve("other"), Resolution::Unknown);
    }
}
