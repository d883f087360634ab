//! MCP data types shared by both eras: content blocks, tool results, identities, log levels.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Name and version of an MCP implementation (`serverInfo`, `clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description of the implementation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A URL for the implementation's website.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// A name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
        }
    }
}

/// Hints describing a tool's behaviour. All are hints, never guarantees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The contents of a resource: text or base64 binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The resource's URI.
        uri: String,
        /// The MIME type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Binary contents, base64-encoded.
    Blob {
        /// The resource's URI.
        uri: String,
        /// The MIME type, if known.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 data.
        blob: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

/// A content block of a tool result or prompt message.
///
/// `annotations` and `_meta` are kept as JSON objects so any valid value passes through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Content annotations (audience, priority, lastModified).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Map<String, Value>>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// The MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Content annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Map<String, Value>>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// The MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Content annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Map<String, Value>>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// The rest of the `Resource` fields (title, description, mimeType, size, ...).
        #[serde(flatten)]
        fields: Map<String, Value>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Content annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Map<String, Value>>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An image block from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An audio block from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// A resource link.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            fields: Map::new(),
        }
    }

    /// An embedded resource.
    pub fn embedded(resource: ResourceContents) -> Self {
        Self::Resource {
            resource,
            annotations: None,
            meta: None,
        }
    }

    /// The block as a JSON value, equal to `serde_json::to_value(self)` but moving the text
    /// and data instead of copying them.
    pub fn into_value(self) -> Value {
        fn block(
            kind: &str,
            fields: impl IntoIterator<Item = (&'static str, String)>,
            annotations: Option<Map<String, Value>>,
            meta: Option<Map<String, Value>>,
        ) -> Value {
            let mut map = Map::new();
            map.insert("type".into(), Value::String(kind.into()));
            for (k, v) in fields {
                map.insert(k.into(), Value::String(v));
            }
            if let Some(a) = annotations {
                map.insert("annotations".into(), Value::Object(a));
            }
            if let Some(m) = meta {
                map.insert("_meta".into(), Value::Object(m));
            }
            Value::Object(map)
        }
        match self {
            Self::Text {
                text,
                annotations,
                meta,
            } => block("text", [("text", text)], annotations, meta),
            Self::Image {
                data,
                mime_type,
                annotations,
                meta,
            } => block(
                "image",
                [("data", data), ("mimeType", mime_type)],
                annotations,
                meta,
            ),
            Self::Audio {
                data,
                mime_type,
                annotations,
                meta,
            } => block(
                "audio",
                [("data", data), ("mimeType", mime_type)],
                annotations,
                meta,
            ),
            other => serde_json::to_value(&other).unwrap_or(Value::Null),
        }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured content, validated against the tool's output schema when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call ended in a tool-level error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

/// Log severity, as syslog (RFC 5424) orders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// General information.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warnings.
    Warning,
    /// Errors.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_use_spec_tags() {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::image("AAAA", "image/png"),
            ContentBlock::audio("AAAA", "audio/wav"),
            ContentBlock::resource_link("file:///a", "a"),
            ContentBlock::embedded(ResourceContents::Text {
                uri: "test://x".into(),
                mime_type: Some("text/plain".into()),
                text: "x".into(),
                meta: None,
            }),
        ];
        let v = serde_json::to_value(&blocks).unwrap();
        assert_eq!(v[0], json!({"type":"text","text":"hi"}));
        assert_eq!(
            v[1],
            json!({"type":"image","data":"AAAA","mimeType":"image/png"})
        );
        assert_eq!(v[2]["type"], "audio");
        assert_eq!(
            v[3],
            json!({"type":"resource_link","uri":"file:///a","name":"a"})
        );
        assert_eq!(v[4]["resource"]["mimeType"], "text/plain");
        let back: Vec<ContentBlock> = serde_json::from_value(v).unwrap();
        assert_eq!(back, blocks);
    }

    #[test]
    fn log_levels_order_like_syslog() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
        let l: LoggingLevel = serde_json::from_value(json!("warning")).unwrap();
        assert_eq!(l, LoggingLevel::Warning);
        assert!(serde_json::from_value::<LoggingLevel>(json!("loud")).is_err());
    }
}
