//! The MCP Apps extension (`io.modelcontextprotocol/ui`, SEP-1865) on [`McpServer`]: a tool
//! brings an interactive HTML view that hosts render in a sandboxed iframe.
//!
//! The types are the core's ([`codomyrmex_mcp_core::apps`], re-exported here); this module
//! adds the server's builder steps:
//!
//! - [`McpServer::ui_resource`] serves an app's HTML ([`UiResource`]) as a `ui://` resource
//!   of MIME type [`APP_MIME_TYPE`] with its `_meta.ui`;
//! - [`McpServer::tool`] registers a tool, refusing one whose `_meta.ui.resourceUri` no
//!   resource of the server serves (register the UI resource first);
//! - [`McpServer::check_apps`] runs the same check over every tool already in the registry
//!   (those from `#[mcp_tool(ui = "ui://...")]` and discovery), once everything is added.
//!
//! ```
//! use std::sync::Arc;
//! use codomyrmex_mcp::apps::{UiResource, UiToolMeta, UiVisibility};
//! use codomyrmex_mcp::{McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry};
//! use codomyrmex_mcp::{ToolDefinition, ToolRegistration};
//! use serde_json::{Map, Value, json};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::new(McpServerConfig::new("demo", "1.0.0"), Arc::new(McpToolRegistry::new()))
//!     .ui_resource(UiResource::html("ui://demo/view", "view", "<!DOCTYPE html><html>...</html>")
//!         .with_prefers_border(true))?
//!     .tool(ToolRegistration::new(
//!         ToolDefinition::new("demo.show", json!({"type": "object"})),
//!         |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({"rows": []})) },
//!     ).ui("ui://demo/view"))?
//!     .tool(ToolRegistration::new(
//!         ToolDefinition::new("demo.refresh", json!({"type": "object"})),
//!         |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({"rows": []})) },
//!     ).with_ui(UiToolMeta::linked("ui://demo/view").with_visibility([UiVisibility::App])))?;
//! server.check_apps()?;
//! # Ok(()) }
//! ```

use std::sync::Arc;

pub use codomyrmex_mcp_core::apps::*;

use crate::McpResourceRegistry;
use crate::McpServer;
use crate::ToolRegistration;

impl McpServer {
    /// This server, also serving the app `resource` (a `ui://` resource with its `_meta.ui`).
    /// A resource registry is attached if the server has none. The extension is declared in
    /// the server's capabilities from then on.
    pub fn ui_resource(self, resource: UiResource) -> Result<Self, AppsError> {
        let (server, resources) = self.resource_registry();
        resource.register(&resources)?;
        Ok(server)
    }

    /// This server, with `registration` added to its tool registry. A tool whose
    /// `_meta.ui.resourceUri` no resource of this server serves is refused
    /// ([`AppsError::Unlinked`]), as is a `_meta.ui` the extension does not allow.
    pub fn tool(self, registration: ToolRegistration) -> Result<Self, AppsError> {
        if let Some(uri) = registration.definition.ui().and_then(|ui| ui.resource_uri) {
            let served = self.engine().resources().is_some_and(|r| r.serves(&uri));
            if !served {
                return Err(AppsError::Unlinked(vec![(
                    registration.definition.name.clone(),
                    uri,
                )]));
            }
        }
        self.registry().register_tool(registration)?;
        Ok(self)
    }

    /// `Ok` when every tool of the registry that links a UI resource links one this server
    /// serves; otherwise [`AppsError::Unlinked`] names each tool and URI. Call it once the
    /// tools and resources are added, before serving.
    pub fn check_apps(&self) -> Result<(), AppsError> {
        check_links(self.registry(), self.engine().resources().map(Arc::as_ref))
    }

    /// This server with a resource registry (its own, or a new one attached), and that registry.
    fn resource_registry(self) -> (Self, Arc<McpResourceRegistry>) {
        if let Some(r) = self.engine().resources().cloned() {
            return (self, r);
        }
        let r = Arc::new(McpResourceRegistry::new());
        (self.with_resources(r.clone()), r)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::ToolDefinition;
    use crate::{McpErrorDetail, McpServerConfig, McpToolRegistry};

    fn server() -> McpServer {
        McpServer::new(
            McpServerConfig::new("t", "1"),
            Arc::new(McpToolRegistry::new()),
        )
    }

    fn registration(name: &str) -> ToolRegistration {
        ToolRegistration::new(
            ToolDefinition::new(name, json!({"type": "object"})),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!(1)) },
        )
    }

    #[test]
    fn a_tool_linking_a_ui_resource_the_server_does_not_serve_is_refused() {
        let e = server()
            .tool(registration("show").ui("ui://app/view"))
            .err()
            .unwrap();
        assert_eq!(
            e,
            AppsError::Unlinked(vec![("show".into(), "ui://app/view".into())])
        );
        let s = server()
            .ui_resource(UiResource::html("ui://app/view", "view", "<html></html>"))
            .unwrap()
            .tool(registration("show").ui("ui://app/view"))
            .unwrap();
        assert_eq!(s.registry().list_tools(), ["show"]);
        assert!(s.engine().resources().unwrap().has_ui_resources());
        s.check_apps().unwrap();
        let e = s
            .tool(registration("bad").ui("https://x/app.html"))
            .err()
            .unwrap();
        assert!(matches!(e, AppsError::Tool(_)), "{e}");
    }

    #[test]
    fn check_apps_names_the_tools_registered_elsewhere_whose_link_is_not_served() {
        let s = server();
        s.registry()
            .register_tool(registration("macro_made").ui("ui://app/missing"))
            .unwrap();
        let e = s.check_apps().unwrap_err();
        assert!(
            e.to_string()
                .contains("tool \"macro_made\" links \"ui://app/missing\""),
            "{e}"
        );
        let s = s
            .ui_resource(UiResource::html("ui://app/missing", "v", "<html></html>"))
            .unwrap();
        s.check_apps().unwrap();
    }
}
