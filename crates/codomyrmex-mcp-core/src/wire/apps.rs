//! The wire types of the MCP Apps extension (`io.modelcontextprotocol/ui`, SEP-1865, stable
//! revision 2026-01-26): a UI resource's `_meta.ui` ([`UiResourceMeta`]: content security
//! policy domains, permissions, dedicated domain, border preference), a tool's `_meta.ui`
//! ([`UiToolMeta`]: the `ui://` resource it renders with, and who may call it), and the
//! client's capability ([`UiClientCapability`]).
//!
//! Data only, as the rest of [`crate::wire`], with the checks every path into a value runs:
//! [`UiToolMeta::from_tool_meta`] and [`UiResourceMeta::from_meta`] read a definition's
//! `_meta` and refuse, with a message naming the key, metadata the extension does not allow
//! (a `resourceUri` outside `ui://`, a visibility other than `"model"`/`"app"`, a CSP source
//! that is not an origin, `csp` on a tool). Keys the extension does not define are kept as
//! they are, so a later revision's keys pass through.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an app's HTML (`resources/list` and `resources/read`).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The URI prefix of UI resources, reserved for the extension.
pub const UI_SCHEME_PREFIX: &str = "ui://";
/// The `_meta` key under which tools and resources carry the extension's metadata.
pub const UI_META_KEY: &str = "ui";
/// The deprecated flat `_meta` key of a tool's resource URI (read, never written).
pub const LEGACY_RESOURCE_URI_KEY: &str = "ui/resourceUri";
/// The most sources one CSP list may hold.
pub const MAX_CSP_SOURCES: usize = 64;
/// The longest CSP source, `domain` or `ui://` URI accepted.
pub const MAX_UI_STRING_LEN: usize = 2048;

/// Why a `_meta.ui` was refused: the message names the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UiMetaError(pub String);

fn bad(msg: impl Into<String>) -> UiMetaError {
    UiMetaError(msg.into())
}

/// Who may call a tool (`_meta.ui.visibility`; `["model", "app"]` when omitted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiVisibility {
    /// The agent sees and may call the tool: hosts list it to the model.
    Model,
    /// The app may call the tool, from this server's connection only.
    App,
}

/// A tool's `_meta.ui`: the UI resource its results render in, and who may call it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiToolMeta {
    /// The `ui://` resource the host renders this tool's results with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may call the tool; `None` is `["model", "app"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<UiVisibility>>,
    /// Keys the extension does not define, kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UiToolMeta {
    /// Metadata linking the tool to `resource_uri`, visible to both model and app.
    pub fn linked(resource_uri: impl Into<String>) -> Self {
        Self {
            resource_uri: Some(resource_uri.into()),
            ..Self::default()
        }
    }

    /// This metadata with `visibility`.
    pub fn with_visibility(mut self, visibility: impl IntoIterator<Item = UiVisibility>) -> Self {
        self.visibility = Some(visibility.into_iter().collect());
        self
    }

    /// Whether the model may see and call the tool (the default).
    pub fn model_visible(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::Model))
    }

    /// Whether an app may call the tool (the default).
    pub fn app_callable(&self) -> bool {
        self.visibility
            .as_ref()
            .is_none_or(|v| v.contains(&UiVisibility::App))
    }

    /// Checks what the extension requires of a tool's `_meta.ui`.
    pub fn validate(&self) -> Result<(), UiMetaError> {
        if let Some(uri) = &self.resource_uri {
            check_ui_uri(uri).map_err(|e| bad(format!("_meta.ui.resourceUri: {e}")))?;
        }
        if let Some(v) = &self.visibility {
            if v.is_empty() {
                return Err(bad(
                    "_meta.ui.visibility is empty: neither the model nor an app could call the tool (omit it for [\"model\", \"app\"])",
                ));
            }
            if v.len() == 2 && v[0] == v[1] {
                return Err(bad("_meta.ui.visibility names the same value twice"));
            }
        }
        for key in ["csp", "permissions"] {
            if self.extra.contains_key(key) {
                return Err(bad(format!(
                    "_meta.ui.{key} belongs on the UI resource, not on the tool (hosts ignore it here)"
                )));
            }
        }
        Ok(())
    }

    /// A tool's `_meta.ui`, read from its whole `_meta` and checked: `None` when it has none.
    /// The deprecated flat `ui/resourceUri` key is accepted as the link when `ui.resourceUri`
    /// is absent, and must agree with it when both are written.
    pub fn from_tool_meta(meta: &Map<String, Value>) -> Result<Option<Self>, UiMetaError> {
        let legacy = match meta.get(LEGACY_RESOURCE_URI_KEY) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(bad(format!(
                    "_meta[\"{LEGACY_RESOURCE_URI_KEY}\"] must be a string"
                )));
            }
        };
        let mut ui = match meta.get(UI_META_KEY) {
            None if legacy.is_none() => return Ok(None),
            None => Self::default(),
            Some(v @ Value::Object(_)) => {
                Self::deserialize(v).map_err(|e| bad(format!("_meta.ui: {e}")))?
            }
            Some(_) => return Err(bad("_meta.ui must be an object")),
        };
        match (&ui.resource_uri, legacy) {
            (Some(a), Some(b)) if *a != b => {
                return Err(bad(format!(
                    "_meta.ui.resourceUri {a:?} and _meta[\"{LEGACY_RESOURCE_URI_KEY}\"] {b:?} disagree"
                )));
            }
            (None, Some(b)) => ui.resource_uri = Some(b),
            _ => {}
        }
        ui.validate()?;
        Ok(Some(ui))
    }
}

/// Content security policy sources a UI resource needs (`_meta.ui.csp`). Each list is of
/// origins (`https://api.example.com`, `wss://live.example.com`, `https://*.example.com`);
/// an empty list is the extension's restrictive default for that directive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceCsp {
    /// Origins for `fetch`, XHR and WebSocket (CSP `connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins of nested iframes (CSP `frame-src`; none when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Allowed base URIs (CSP `base-uri`; `'self'` when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
    /// Keys the extension does not define, kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UiResourceCsp {
    fn validate(&self) -> Result<(), UiMetaError> {
        for (key, list) in [
            ("connectDomains", &self.connect_domains),
            ("resourceDomains", &self.resource_domains),
            ("frameDomains", &self.frame_domains),
            ("baseUriDomains", &self.base_uri_domains),
        ] {
            if list.len() > MAX_CSP_SOURCES {
                return Err(bad(format!(
                    "_meta.ui.csp.{key} has {} sources; at most {MAX_CSP_SOURCES}",
                    list.len()
                )));
            }
            for source in list {
                check_csp_source(source).map_err(|e| bad(format!("_meta.ui.csp.{key}: {e}")))?;
            }
        }
        Ok(())
    }
}

/// Browser capabilities a UI resource asks for (`_meta.ui.permissions`); each requested one
/// is an empty object on the wire. Hosts may grant them or not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourcePermissions {
    /// Permission Policy `camera`.
    #[serde(default, skip_serializing_if = "is_false", with = "presence")]
    pub camera: bool,
    /// Permission Policy `microphone`.
    #[serde(default, skip_serializing_if = "is_false", with = "presence")]
    pub microphone: bool,
    /// Permission Policy `geolocation`.
    #[serde(default, skip_serializing_if = "is_false", with = "presence")]
    pub geolocation: bool,
    /// Permission Policy `clipboard-write`.
    #[serde(default, skip_serializing_if = "is_false", with = "presence")]
    pub clipboard_write: bool,
    /// Keys the extension does not define, kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A permission as the extension writes it: `{}` when requested, absent otherwise.
mod presence {
    use super::*;

    pub(super) fn serialize<S: Serializer>(_: &bool, s: S) -> Result<S::Ok, S::Error> {
        Map::<String, Value>::new().serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        Map::<String, Value>::deserialize(d).map(|_| true)
    }
}

/// A UI resource's `_meta.ui`: on its `resources/list` entry and on each content item
/// `resources/read` returns (the content item's wins for hosts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResourceMeta {
    /// The content security policy sources the app needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<UiResourceCsp>,
    /// The browser permissions the app asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<UiResourcePermissions>,
    /// A dedicated sandbox origin; its format is the host's (see its documentation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `true` asks the host for a visible border and background, `false` for none; `None`
    /// leaves it to the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
    /// Keys the extension does not define, kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UiResourceMeta {
    /// Whether nothing is set (no `_meta.ui` is written then).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Checks what the extension requires of a resource's `_meta.ui`.
    pub fn validate(&self) -> Result<(), UiMetaError> {
        if let Some(csp) = &self.csp {
            csp.validate()?;
        }
        if let Some(domain) = &self.domain {
            if domain.is_empty() || domain.len() > MAX_UI_STRING_LEN {
                return Err(bad(format!(
                    "_meta.ui.domain must be 1 to {MAX_UI_STRING_LEN} bytes"
                )));
            }
            if let Some(c) = domain.chars().find(|c| unsafe_in_policy(*c)) {
                return Err(bad(format!(
                    "_meta.ui.domain {domain:?} contains {c:?}; a domain has no spaces, quotes, `;` or `,`"
                )));
            }
        }
        Ok(())
    }

    /// A resource's `_meta.ui`, read from its whole `_meta` and checked: `None` when it has
    /// none.
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Option<Self>, UiMetaError> {
        let ui = match meta.get(UI_META_KEY) {
            None => return Ok(None),
            Some(v @ Value::Object(_)) => {
                Self::deserialize(v).map_err(|e| bad(format!("_meta.ui: {e}")))?
            }
            Some(_) => return Err(bad("_meta.ui must be an object")),
        };
        ui.validate()?;
        Ok(Some(ui))
    }

    /// This metadata as a `_meta` object: `{"ui": ...}`.
    pub fn to_meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(
            UI_META_KEY.into(),
            serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new())),
        );
        meta
    }
}

/// A client's settings under `capabilities.extensions["io.modelcontextprotocol/ui"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiClientCapability {
    /// The UI MIME types the client renders; [`APP_MIME_TYPE`] for MCP Apps.
    #[serde(default)]
    pub mime_types: Vec<String>,
}

impl UiClientCapability {
    /// The settings a client declared in `capabilities` (2025-11-25's `initialize`, or a
    /// 2026-07-28 request's `_meta`), if it declared the extension in a form that reads.
    pub fn of(capabilities: &Value) -> Option<Self> {
        let settings = capabilities.get("extensions")?.get(UI_EXTENSION)?;
        Self::deserialize(settings).ok()
    }

    /// Whether the client renders MCP Apps (it lists [`APP_MIME_TYPE`]).
    pub fn renders_apps(&self) -> bool {
        self.mime_types.iter().any(|m| m == APP_MIME_TYPE)
    }
}

/// Whether a client whose capabilities are `capabilities` declared MCP Apps support: the
/// extension, with [`APP_MIME_TYPE`] among its `mimeTypes`. Tools use it to choose between a
/// UI-oriented and a text-only answer (`ToolContext::client_capabilities`).
pub fn client_supports_apps(capabilities: &Value) -> bool {
    UiClientCapability::of(capabilities).is_some_and(|c| c.renders_apps())
}

/// A character a CSP source or domain may not hold: it would end or split a directive.
fn unsafe_in_policy(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, ';' | ',' | '\'' | '"')
}

/// Checks a `ui://` URI: the prefix, something after it, no spaces or controls.
pub fn check_ui_uri(uri: &str) -> Result<(), String> {
    let Some(rest) = uri.strip_prefix(UI_SCHEME_PREFIX) else {
        return Err(format!("{:?} is not a ui:// URI", shorten(uri)));
    };
    if rest.is_empty() {
        return Err("\"ui://\" names no resource".into());
    }
    if uri.len() > MAX_UI_STRING_LEN {
        return Err(format!("the URI is longer than {MAX_UI_STRING_LEN} bytes"));
    }
    if let Some(c) = uri.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{:?} contains {c:?}", shorten(uri)));
    }
    Ok(())
}

/// Checks one CSP source: `scheme://host[:port][/path]`, the host optionally `*.`-prefixed.
fn check_csp_source(source: &str) -> Result<(), String> {
    let shown = shorten(source);
    if source.len() > MAX_UI_STRING_LEN {
        return Err(format!("a source is longer than {MAX_UI_STRING_LEN} bytes"));
    }
    if let Some(c) = source.chars().find(|c| unsafe_in_policy(*c)) {
        return Err(format!(
            "{shown:?} contains {c:?}; a source is one origin, with no spaces, quotes, `;` or `,`"
        ));
    }
    let not_origin = || {
        format!(
            "{shown:?} is not an origin such as \"https://api.example.com\" or \"https://*.example.com\""
        )
    };
    let (scheme, rest) = source.split_once("://").ok_or_else(not_origin)?;
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    let host = host.strip_prefix("*.").unwrap_or(host);
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '[' | ']' | ':'));
    let port_ok =
        port.is_none_or(|p| p == "*" || (!p.is_empty() && p.chars().all(|c| c.is_ascii_digit())));
    if scheme_ok && host_ok && port_ok && !authority.contains('@') {
        Ok(())
    } else {
        Err(not_origin())
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
#[path = "apps_tests.rs"]
mod tests;
