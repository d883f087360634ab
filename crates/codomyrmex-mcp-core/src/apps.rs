//! The MCP Apps extension (`io.modelcontextprotocol/ui`, SEP-1865), server side: a tool
//! brings an interactive HTML view, a `ui://` resource the host renders in a sandboxed
//! iframe and that talks to the host over `postMessage`.
//!
//! - [`UiResource`] is an app's HTML with its `_meta.ui` (content security policy sources,
//!   permissions, dedicated domain, border preference), registered into a
//!   [`McpResourceRegistry`] as a `ui://` resource of MIME type
//!   [`APP_MIME_TYPE`]; its `_meta.ui` is on the `resources/list` entry and on the
//!   content item `resources/read` returns.
//! - [`ToolDefinition::with_ui`] links a tool to it through `_meta.ui.resourceUri`, with the
//!   extension's visibility ([`UiVisibility`]): `["app"]` makes a tool the app may call
//!   that hosts do not show the model. The server lists every tool with its metadata: the
//!   extension leaves it to the host to keep an app-only tool out of the agent's list.
//! - [`check_links`] finds the tools that link a `ui://` URI no resource serves; the library's
//!   `McpServer` refuses to take them.
//!
//! The tool registry refuses a tool whose `_meta.ui` the extension does not allow
//! ([`McpRegistrationError::InvalidUiMeta`]), and the resource registry a `ui://` resource
//! with another MIME type or a bad `_meta.ui`
//! ([`ResourceRegistrationError::InvalidUi`]), whichever way they are registered. The engine
//! declares the extension (`capabilities.extensions["io.modelcontextprotocol/ui"]`, in
//! `initialize` and `server/discover`) while a `ui://` resource is registered; the metadata is
//! sent to every client, since clients ignore `_meta` they do not know.

use std::sync::Arc;

use serde_json::Value;

use crate::registry::{McpRegistrationError, McpToolRegistry, ToolDefinition, ToolRegistration};
use crate::resources::{McpResourceRegistry, ResourceDefinition, ResourceRegistrationError};
// The wire's Apps types and rules, whose one public path is here.
pub use crate::wire::apps::*;

/// Why an app could not be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AppsError {
    /// The UI resource was refused.
    #[error(transparent)]
    Resource(#[from] ResourceRegistrationError),
    /// The tool was refused.
    #[error(transparent)]
    Tool(#[from] McpRegistrationError),
    /// Tools link `ui://` URIs that no registered resource serves: `(tool, uri)` pairs.
    #[error("{}", unlinked_message(.0))]
    Unlinked(Vec<(String, String)>),
}

fn unlinked_message(pairs: &[(String, String)]) -> String {
    let shown: Vec<String> = pairs
        .iter()
        .map(|(tool, uri)| format!("tool {tool:?} links {uri:?}"))
        .collect();
    format!(
        "{} but no registered resource serves it; register the UI resource first",
        shown.join(", ")
    )
}

/// An app's HTML, served as a `ui://` resource with the extension's `_meta.ui`.
#[derive(Debug, Clone, PartialEq)]
pub struct UiResource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    html: Arc<str>,
    meta: UiResourceMeta,
}

impl UiResource {
    /// The HTML document `html` served at `uri` (a `ui://` URI) under `name`.
    pub fn html(
        uri: impl Into<String>,
        name: impl Into<String>,
        html: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            html: html.into(),
            meta: UiResourceMeta::default(),
        }
    }

    /// Sets the display title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the whole `_meta.ui`.
    pub fn with_meta(mut self, meta: UiResourceMeta) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the content security policy sources the app needs.
    pub fn with_csp(mut self, csp: UiResourceCsp) -> Self {
        self.meta.csp = Some(csp);
        self
    }

    /// Sets the browser permissions the app asks for.
    pub fn with_permissions(mut self, permissions: UiResourcePermissions) -> Self {
        self.meta.permissions = Some(permissions);
        self
    }

    /// Sets the dedicated sandbox origin (its format is the host's).
    pub fn with_domain(mut self, domain: impl Into<String>) -> Self {
        self.meta.domain = Some(domain.into());
        self
    }

    /// Asks the host for a visible border and background (`true`) or none (`false`).
    pub fn with_prefers_border(mut self, prefers_border: bool) -> Self {
        self.meta.prefers_border = Some(prefers_border);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The `_meta.ui`.
    pub fn meta(&self) -> &UiResourceMeta {
        &self.meta
    }

    /// The `resources/list` entry.
    pub fn definition(&self) -> ResourceDefinition {
        let mut definition = ResourceDefinition::new(&self.uri, &self.name);
        definition.title = self.title.clone();
        definition.description = self.description.clone();
        definition.mime_type = Some(APP_MIME_TYPE.to_owned());
        if !self.meta.is_empty() {
            definition.meta = Some(self.meta.to_meta());
        }
        definition
    }

    /// Registers it into `resources`: a `ui://` URI, the metadata checked, the HTML read
    /// back with `_meta.ui` on its content item.
    pub fn register(&self, resources: &McpResourceRegistry) -> Result<(), AppsError> {
        if !self.uri.starts_with(UI_SCHEME_PREFIX) {
            return Err(ResourceRegistrationError::InvalidUi {
                uri: self.uri.chars().take(256).collect(),
                reason: "a UI resource's URI starts with \"ui://\"".into(),
            }
            .into());
        }
        resources.add_text(self.definition(), self.html.to_string())?;
        Ok(())
    }
}

impl ToolDefinition {
    /// This definition with `_meta.ui` set to `ui` (the MCP Apps extension): the `ui://`
    /// resource its results render in, and who may call it. Checked when registered.
    pub fn with_ui(self, ui: UiToolMeta) -> Self {
        let value = serde_json::to_value(ui).unwrap_or(Value::Null);
        self.with_meta(UI_META_KEY, value)
    }

    /// This definition linked to the UI resource at `resource_uri`, visible to model and app.
    pub fn with_ui_resource(self, resource_uri: impl Into<String>) -> Self {
        self.with_ui(UiToolMeta::linked(resource_uri))
    }

    /// The tool's `_meta.ui`, if it has one that reads.
    pub fn ui(&self) -> Option<UiToolMeta> {
        UiToolMeta::from_tool_meta(self.meta.as_ref()?)
            .ok()
            .flatten()
    }
}

impl ToolRegistration {
    /// This registration linked to the UI resource at `resource_uri`, visible to model and
    /// app ([`ToolDefinition::with_ui_resource`]).
    pub fn ui(mut self, resource_uri: impl Into<String>) -> Self {
        self.definition = self.definition.with_ui_resource(resource_uri);
        self
    }

    /// This registration with `_meta.ui` set to `ui` ([`ToolDefinition::with_ui`]).
    pub fn with_ui(mut self, ui: UiToolMeta) -> Self {
        self.definition = self.definition.with_ui(ui);
        self
    }
}

/// The `(tool, uri)` pairs of `tools` whose `_meta.ui.resourceUri` no resource of
/// `resources` serves (every linking tool, when there is no resource registry).
pub fn unlinked(
    tools: &McpToolRegistry,
    resources: Option<&McpResourceRegistry>,
) -> Vec<(String, String)> {
    tools
        .definitions()
        .into_iter()
        .filter_map(|d| {
            let uri = d.ui()?.resource_uri?;
            let served = resources.is_some_and(|r| r.serves(&uri));
            (!served).then_some((d.name, uri))
        })
        .collect()
}

/// `Ok` when every tool's `_meta.ui.resourceUri` is served by a resource of `resources`.
pub fn check_links(
    tools: &McpToolRegistry,
    resources: Option<&McpResourceRegistry>,
) -> Result<(), AppsError> {
    let missing = unlinked(tools, resources);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(AppsError::Unlinked(missing))
    }
}

#[cfg(test)]
#[path = "apps_tests.rs"]
mod tests;
