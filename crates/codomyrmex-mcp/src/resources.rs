//! [`McpResourceRegistry`]: static resources, listers and URI templates, with text and binary
//! contents, list-change and update notifications, and a sandboxed directory server.
//!
//! A [`ResourceLister`] lists resources that are not registered one by one (the files of a
//! directory, say): `resources/list` asks each lister for one page at a time, merged with
//! the static resources in URI order. A lister only lists; reading goes through a template.
//!
//! Like the tool registry, it knows nothing of JSON-RPC; the engine maps it onto
//! `resources/list`, `resources/templates/list`, `resources/read` and the subscriptions of
//! both eras.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, watch};

use crate::context::ToolContext;
use crate::registry::BoxFuture;
use crate::uri_template::{UriTemplate, UriTemplateError};
use crate::wire::ResourceContents;

/// A resource's description (MCP `Resource`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDefinition {
    /// The URI.
    pub uri: String,
    /// A programmatic name.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceDefinition {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            meta: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, m: impl Into<String>) -> Self {
        self.mime_type = Some(m.into());
        self
    }
}

/// A template's description (MCP `ResourceTemplate`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateDefinition {
    /// The RFC 6570 template.
    pub uri_template: String,
    /// A programmatic name.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it yields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it yields, if uniform.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceTemplateDefinition {
    /// A template with a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            meta: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, m: impl Into<String>) -> Self {
        self.mime_type = Some(m.into());
        self
    }
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// No resource has this URI.
    #[error("Resource not found: {0}")]
    NotFound(String),
    /// Access was refused (for example, a path escaping a served directory).
    #[error("Access denied: {0}")]
    AccessDenied(String),
    /// The read failed.
    #[error("{0}")]
    Failed(String),
}

/// A read request: the URI, the template variables (empty for static resources) and the
/// request's context.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    /// The URI being read.
    pub uri: String,
    /// Template variables, percent-decoded.
    pub variables: BTreeMap<String, String>,
    /// The request's context (cancellation, metadata, input requests).
    pub context: ToolContext,
}

/// Reads a resource.
pub trait ResourceReader: Send + Sync + 'static {
    /// Produces the contents.
    fn read(
        &self,
        request: ResourceRequest,
    ) -> BoxFuture<'static, Result<Vec<ResourceContents>, ResourceError>>;
}

impl<F, Fut> ResourceReader for F
where
    F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, ResourceError>> + Send + 'static,
{
    fn read(
        &self,
        request: ResourceRequest,
    ) -> BoxFuture<'static, Result<Vec<ResourceContents>, ResourceError>> {
        Box::pin(self(request))
    }
}

/// Lists resources on demand, one page at a time, for `resources/list`.
///
/// The registry calls [`list`](Self::list) for every page a client asks for and never keeps
/// the results: a lister lists lazily, and bounds its own work (how much it walks, say).
pub trait ResourceLister: Send + Sync + 'static {
    /// Up to `limit` resources whose URIs sort after `after` (from the first, when `None`),
    /// in ascending byte order of their URIs.
    fn list(
        &self,
        after: Option<String>,
        limit: usize,
    ) -> BoxFuture<'static, Vec<ResourceDefinition>>;
}

/// A completion provider for a template variable: given the partial value and the other
/// arguments, returns candidates.
pub type Completer = Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

struct StaticResource {
    definition: ResourceDefinition,
    wire: Value,
    reader: Arc<dyn ResourceReader>,
}

struct Template {
    definition: ResourceTemplateDefinition,
    wire: Value,
    template: UriTemplate,
    reader: Arc<dyn ResourceReader>,
    completers: BTreeMap<String, Completer>,
}

/// Which list changed, or which resource was updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceEvent {
    /// A resource's contents changed.
    Updated(String),
}

/// Resources and templates.
pub struct McpResourceRegistry {
    resources: RwLock<BTreeMap<String, Arc<StaticResource>>>,
    templates: RwLock<Vec<Arc<Template>>>,
    listers: RwLock<Vec<Arc<dyn ResourceLister>>>,
    generation: watch::Sender<u64>,
    updates: broadcast::Sender<ResourceEvent>,
}

impl Default for McpResourceRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for McpResourceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpResourceRegistry")
            .field(
                "resources",
                &self.read_resources().keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceRegistrationError {
    /// The URI template does not parse.
    #[error(transparent)]
    Template(#[from] UriTemplateError),
    /// A different resource already has this URI, or a template this name.
    #[error("{0:?} is already registered")]
    Duplicate(String),
}

impl McpResourceRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            resources: RwLock::new(BTreeMap::new()),
            templates: RwLock::new(Vec::new()),
            listers: RwLock::new(Vec::new()),
            generation: watch::Sender::new(0),
            updates: broadcast::Sender::new(256),
        }
    }

    fn read_resources(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<StaticResource>>> {
        self.resources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn read_templates(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Template>>> {
        self.templates
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a resource with a reader.
    pub fn add(
        &self,
        definition: ResourceDefinition,
        reader: impl ResourceReader,
    ) -> Result<(), ResourceRegistrationError> {
        let wire = serde_json::to_value(&definition).unwrap_or(Value::Null);
        let mut map = self
            .resources
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if map.contains_key(&definition.uri) {
            return Err(ResourceRegistrationError::Duplicate(definition.uri));
        }
        map.insert(
            definition.uri.clone(),
            Arc::new(StaticResource {
                definition,
                wire,
                reader: Arc::new(reader),
            }),
        );
        drop(map);
        self.generation.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Adds a resource whose contents are fixed text.
    pub fn add_text(
        &self,
        definition: ResourceDefinition,
        text: impl Into<String>,
    ) -> Result<(), ResourceRegistrationError> {
        let text: Arc<str> = Arc::from(text.into());
        let mime = definition.mime_type.clone();
        let uri = definition.uri.clone();
        self.add(definition, move |_: ResourceRequest| {
            let contents = vec![ResourceContents::Text {
                uri: uri.clone(),
                mime_type: mime.clone(),
                text: text.to_string(),
                meta: None,
            }];
            async move { Ok(contents) }
        })
    }

    /// Adds a resource whose contents are fixed bytes (sent base64-encoded).
    pub fn add_blob(
        &self,
        definition: ResourceDefinition,
        bytes: &[u8],
    ) -> Result<(), ResourceRegistrationError> {
        let blob: Arc<str> = Arc::from(crate::util::base64_encode(bytes));
        let mime = definition.mime_type.clone();
        let uri = definition.uri.clone();
        self.add(definition, move |_: ResourceRequest| {
            let contents = vec![ResourceContents::Blob {
                uri: uri.clone(),
                mime_type: mime.clone(),
                blob: blob.to_string(),
                meta: None,
            }];
            async move { Ok(contents) }
        })
    }

    /// Adds a URI template with a reader and optional per-variable completers.
    pub fn add_template(
        &self,
        definition: ResourceTemplateDefinition,
        reader: impl ResourceReader,
        completers: BTreeMap<String, Completer>,
    ) -> Result<(), ResourceRegistrationError> {
        let template = UriTemplate::parse(&definition.uri_template)?;
        let wire = serde_json::to_value(&definition).unwrap_or(Value::Null);
        let mut list = self
            .templates
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if list
            .iter()
            .any(|t| t.definition.uri_template == definition.uri_template)
        {
            return Err(ResourceRegistrationError::Duplicate(
                definition.uri_template,
            ));
        }
        list.push(Arc::new(Template {
            definition,
            wire,
            template,
            reader: Arc::new(reader),
            completers,
        }));
        drop(list);
        self.generation.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Removes a resource or template by URI (or template text).
    pub fn remove(&self, uri: &str) -> bool {
        let a = self
            .resources
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uri)
            .is_some();
        let b = {
            let mut list = self
                .templates
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let before = list.len();
            list.retain(|t| t.definition.uri_template != uri);
            list.len() != before
        };
        if a || b {
            self.generation.send_modify(|g| *g += 1);
        }
        a || b
    }

    /// Tells subscribers that `uri`'s contents changed.
    pub fn notify_updated(&self, uri: impl Into<String>) {
        let _ = self.updates.send(ResourceEvent::Updated(uri.into()));
    }

    /// Changes whenever the lists change.
    pub fn subscribe_list(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Receives resource updates.
    pub fn subscribe_updates(&self) -> broadcast::Receiver<ResourceEvent> {
        self.updates.subscribe()
    }

    /// The registered resources, sorted by URI.
    pub fn resources(&self) -> Vec<ResourceDefinition> {
        self.read_resources()
            .values()
            .map(|r| r.definition.clone())
            .collect()
    }

    /// The registered templates, in registration order.
    pub fn templates(&self) -> Vec<ResourceTemplateDefinition> {
        self.read_templates()
            .iter()
            .map(|t| t.definition.clone())
            .collect()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.read_resources().is_empty()
            && self.read_templates().is_empty()
            && self.read_listers().is_empty()
    }

    /// Adds a lister: `resources/list` includes what it lists, after the static resources
    /// in URI order (a static resource wins over a listed one with the same URI).
    pub fn add_lister(&self, lister: impl ResourceLister) {
        self.listers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(lister));
        self.generation.send_modify(|g| *g += 1);
    }

    fn read_listers(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<dyn ResourceLister>>> {
        self.listers.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `resources/list` needs [`page_listed`](Self::page_listed).
    pub(crate) fn has_listers(&self) -> bool {
        !self.read_listers().is_empty()
    }

    pub(crate) fn page(&self, after: Option<&str>, size: usize) -> (Vec<Value>, Option<String>) {
        crate::util::page_after(&self.read_resources(), after, size, |r| r.wire.clone())
    }

    /// One page of the static resources and every lister's, merged in URI order: the first
    /// `size` URIs after `after`, and the cursor of the next page if there is one.
    pub(crate) fn page_listed(
        &self,
        after: Option<String>,
        size: usize,
    ) -> impl Future<Output = (Vec<Value>, Option<String>)> + Send + 'static {
        use std::ops::Bound;
        let size = size.max(1);
        // One more than a page from each source tells whether another page follows.
        let mut merged: BTreeMap<String, Value> = BTreeMap::new();
        let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let statics: Vec<(String, Value)> = self
            .read_resources()
            .range::<str, _>((lower, Bound::Unbounded))
            .take(size + 1)
            .map(|(k, r)| (k.clone(), r.wire.clone()))
            .collect();
        let pending: Vec<_> = self
            .read_listers()
            .iter()
            .map(|l| l.list(after.clone(), size + 1))
            .collect();
        async move {
            for listed in pending {
                for definition in listed.await {
                    // Only what the lister was asked for: after the cursor.
                    if after
                        .as_ref()
                        .is_some_and(|a| definition.uri.as_str() <= a.as_str())
                    {
                        continue;
                    }
                    if let Ok(wire) = serde_json::to_value(&definition) {
                        merged.insert(definition.uri, wire);
                    }
                }
            }
            merged.extend(statics);
            let more = merged.len() > size;
            let page: Vec<(String, Value)> = merged.into_iter().take(size).collect();
            let next = if more {
                page.last().map(|(k, _)| k.clone())
            } else {
                None
            };
            (page.into_iter().map(|(_, v)| v).collect(), next)
        }
    }

    pub(crate) fn template_page(
        &self,
        after: Option<usize>,
        size: usize,
    ) -> (Vec<Value>, Option<usize>) {
        let list = self.read_templates();
        // `after` comes from the client's cursor: saturate rather than overflow.
        let start = after.map_or(0, |a| a.saturating_add(1)).min(list.len());
        let end = start.saturating_add(size.max(1)).min(list.len());
        let page = list
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|t| t.wire.clone())
            .collect();
        (page, (end < list.len()).then(|| end - 1))
    }

    /// Reads `uri`: a static resource first, then the first matching template.
    pub async fn read(
        &self,
        uri: &str,
        context: ToolContext,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let target = self.resolve(uri);
        match target {
            None => Err(ResourceError::NotFound(uri.to_owned())),
            Some((reader, variables)) => {
                reader
                    .read(ResourceRequest {
                        uri: uri.to_owned(),
                        variables,
                        context,
                    })
                    .await
            }
        }
    }

    fn resolve(&self, uri: &str) -> Option<(Arc<dyn ResourceReader>, BTreeMap<String, String>)> {
        if let Some(r) = self.read_resources().get(uri) {
            return Some((r.reader.clone(), BTreeMap::new()));
        }
        self.read_templates()
            .iter()
            .find_map(|t| t.template.matches(uri).map(|vars| (t.reader.clone(), vars)))
    }

    /// The completer of a template variable: `None` for an unknown template, `Some(None)`
    /// when the variable has none. It is cloned out of the lock; the engine runs it under
    /// its execution policy.
    pub(crate) fn completer(&self, template: &str, variable: &str) -> Option<Option<Completer>> {
        let list = self.read_templates();
        let t = list
            .iter()
            .find(|t| t.definition.uri_template == template)?;
        Some(t.completers.get(variable).cloned())
    }

    /// Serves the files under `root` as `{uri_prefix}{+path}` (for example
    /// `file:///{+path}`). Paths are confined to `root`: `..`, absolute paths and symlinks that
    /// leave it are refused. MIME types are detected from the extension and content.
    pub fn serve_directory(
        &self,
        root: impl AsRef<Path>,
        uri_prefix: &str,
        name: &str,
    ) -> Result<(), ResourceRegistrationError> {
        let root = root
            .as_ref()
            .canonicalize()
            .unwrap_or_else(|_| root.as_ref().to_path_buf());
        // Clients see the directory's own name, never where it is on this machine.
        let description = match root.file_name() {
            Some(n) => format!("Files under {}", n.to_string_lossy()),
            None => "Files of the served directory".to_owned(),
        };
        let root = Arc::new(root);
        let template = format!("{uri_prefix}{{+path}}");
        self.add_template(
            ResourceTemplateDefinition::new(template, name).with_description(description),
            move |req: ResourceRequest| {
                let root = root.clone();
                async move {
                    let rel = req.variables.get("path").cloned().unwrap_or_default();
                    let path = confine(&root, &rel).map_err(ResourceError::AccessDenied)?;
                    let bytes = tokio::task::spawn_blocking(move || read_capped(&path))
                        .await
                        .map_err(|_| ResourceError::Failed("read task failed".into()))?
                        .map_err(|e| match e.kind() {
                            std::io::ErrorKind::NotFound => {
                                ResourceError::NotFound(req.uri.clone())
                            }
                            _ => ResourceError::Failed(format!("cannot read {rel}: {}", e.kind())),
                        })?;
                    let mime = crate::util::mime_for(&rel, &bytes);
                    Ok(vec![match String::from_utf8(bytes) {
                        Ok(text) => ResourceContents::Text {
                            uri: req.uri,
                            mime_type: Some(mime.into()),
                            text,
                            meta: None,
                        },
                        Err(e) => ResourceContents::Blob {
                            uri: req.uri,
                            mime_type: Some(mime.into()),
                            blob: crate::util::base64_encode(e.as_bytes()),
                            meta: None,
                        },
                    }])
                }
            },
            BTreeMap::new(),
        )
    }
}

/// The largest file `serve_directory` reads.
const MAX_SERVED_FILE: u64 = 16 * 1024 * 1024;

fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not a file",
        ));
    }
    if meta.len() > MAX_SERVED_FILE {
        return Err(std::io::Error::other("file too large"));
    }
    std::fs::read(path)
}

/// Resolves `rel` under `root`, refusing anything that would leave it.
pub(crate) fn confine(root: &Path, rel: &str) -> Result<PathBuf, String> {
    if rel.len() > 4096 {
        return Err("path is too long".into());
    }
    let rel_path = Path::new(rel);
    if rel_path.is_absolute() || rel.starts_with('/') || rel.starts_with('\\') {
        return Err("absolute paths are not allowed".into());
    }
    if rel_path.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err("'..' and other special path components are not allowed".into());
    }
    let joined = root.join(rel_path);
    match joined.canonicalize() {
        Ok(real) if real.starts_with(root) => Ok(real),
        Ok(_) => Err("the path leaves the served directory (through a symlink)".into()),
        // Let the caller report a missing file as not found.
        Err(_) => Ok(joined),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_cursors_near_usize_max_do_not_overflow() {
        // Regression: the cursor of `resources/templates/list` is the client's; `after + 1`
        // and `start + size` overflowed (a panic with overflow checks, a wrong page without).
        let r = McpResourceRegistry::new();
        for i in 0..3 {
            r.add_template(
                ResourceTemplateDefinition::new(format!("t{i}://{{x}}"), "t"),
                |_: ResourceRequest| async move { Ok(Vec::new()) },
                BTreeMap::new(),
            )
            .unwrap();
        }
        for after in [usize::MAX, usize::MAX - 1, usize::MAX - 100, 3, 2] {
            let (page, next) = r.template_page(Some(after), 100);
            assert!(page.is_empty(), "{after}");
            assert_eq!(next, None);
        }
        assert_eq!(r.template_page(Some(0), usize::MAX).0.len(), 2);
        assert_eq!(r.template_page(None, 2).1, Some(1));
        assert_eq!(r.template_page(Some(1), 1).0.len(), 1);
    }

    #[tokio::test]
    async fn static_and_template_reads() {
        let r = McpResourceRegistry::new();
        r.add_text(
            ResourceDefinition::new("test://static-text", "t").with_mime_type("text/plain"),
            "hello",
        )
        .unwrap();
        r.add_blob(
            ResourceDefinition::new("test://bin", "b").with_mime_type("image/png"),
            &[1, 2, 3],
        )
        .unwrap();
        r.add_template(
            ResourceTemplateDefinition::new("test://template/{id}/data", "tpl"),
            |req: ResourceRequest| async move {
                Ok(vec![ResourceContents::Text {
                    uri: req.uri,
                    mime_type: None,
                    text: req.variables["id"].clone(),
                    meta: None,
                }])
            },
            BTreeMap::new(),
        )
        .unwrap();
        let c = r
            .read("test://static-text", ToolContext::detached())
            .await
            .unwrap();
        assert!(matches!(&c[0], ResourceContents::Text { text, .. } if text == "hello"));
        let c = r.read("test://bin", ToolContext::detached()).await.unwrap();
        assert!(matches!(&c[0], ResourceContents::Blob { blob, .. } if blob == "AQID"));
        let c = r
            .read("test://template/42/data", ToolContext::detached())
            .await
            .unwrap();
        assert!(matches!(&c[0], ResourceContents::Text { text, .. } if text == "42"));
        assert_eq!(
            r.read("test://nope", ToolContext::detached())
                .await
                .unwrap_err(),
            ResourceError::NotFound("test://nope".into())
        );
        assert!(matches!(
            r.add_text(ResourceDefinition::new("test://bin", "dup"), "x"),
            Err(ResourceRegistrationError::Duplicate(_))
        ));
    }

    #[tokio::test]
    async fn directory_serving_is_sandboxed() {
        let dir = std::env::temp_dir().join(format!("cmcp-res-{}", std::process::id()));
        let outside = std::env::temp_dir().join(format!("cmcp-out-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(dir.join("sub/a.txt"), "inside").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
        let r = McpResourceRegistry::new();
        r.serve_directory(&dir, "file:///", "files").unwrap();
        let ok = r
            .read("file:///sub/a.txt", ToolContext::detached())
            .await
            .unwrap();
        assert!(
            matches!(&ok[0], ResourceContents::Text { text, mime_type: Some(m), .. } if text == "inside" && m == "text/plain")
        );
        for bad in [
            "file:///../etc/passwd",
            "file:////etc/passwd",
            "file:///sub/../../x",
        ] {
            assert!(
                matches!(
                    r.read(bad, ToolContext::detached()).await,
                    Err(ResourceError::AccessDenied(_))
                ),
                "{bad}"
            );
        }
        #[cfg(unix)]
        assert!(matches!(
            r.read("file:///escape/secret.txt", ToolContext::detached())
                .await,
            Err(ResourceError::AccessDenied(_))
        ));
        assert!(matches!(
            r.read("file:///missing.txt", ToolContext::detached()).await,
            Err(ResourceError::NotFound(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[tokio::test]
    async fn directory_serving_never_shows_the_roots_absolute_path() {
        let dir = std::env::temp_dir().join(format!("cmcp-leak-{}", std::process::id()));
        let outside = std::env::temp_dir().join(format!("cmcp-leak-out-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("s.txt"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("escape")).unwrap();
        let root = dir.canonicalize().unwrap();
        let abs = root.to_string_lossy().into_owned();
        let r = McpResourceRegistry::new();
        r.serve_directory(&dir, "file:///", "files").unwrap();
        for t in r.templates() {
            let shown = serde_json::to_string(&t).unwrap();
            assert!(!shown.contains(&abs), "a template shows the root: {shown}");
        }
        for uri in [
            "file:///missing.txt",
            "file:///sub",
            "file:///../x",
            "file:///escape/s.txt",
            "file:///sub/../../x",
        ] {
            if let Err(e) = r.read(uri, ToolContext::detached()).await {
                let shown = format!("{e} {e:?}");
                assert!(!shown.contains(&abs), "{uri}: {shown}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&outside);
    }
}
