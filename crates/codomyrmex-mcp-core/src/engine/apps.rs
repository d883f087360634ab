//! The MCP Apps extension (SEP-1865) in the engine: its declaration in the server's
//! capabilities, in both eras (`initialize` and `server/discover`), while a `ui://` resource
//! is registered. The extension defines no method of the server's: UI resources are read with
//! `resources/read` and app-called tools with `tools/call`, and tools carry their
//! `_meta.ui` in `tools/list` whatever the client declared (see [`crate::apps`]).

use serde_json::{Map, Value, json};

use super::*;
use crate::wire::apps::UI_EXTENSION;

impl Engine {
    /// `capabilities` with `extensions["io.modelcontextprotocol/ui"]`, when a UI resource is
    /// registered.
    pub(super) fn with_apps_capability(&self, capabilities: Value) -> Value {
        let serves_apps = self
            .shared
            .resources
            .as_ref()
            .is_some_and(|r| r.has_ui_resources());
        let (true, Value::Object(mut caps)) = (serves_apps, capabilities.clone()) else {
            return capabilities;
        };
        let extensions = caps
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(e) = extensions {
            e.insert(UI_EXTENSION.into(), json!({}));
        }
        Value::Object(caps)
    }
}
