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
use std::sync::{Arc, PoisonError, RwLock};

use crate::sync::{Broadcast, Changes, Generation, Receiver};
use serde::Serialize;
use serde_json::{Map, Value};

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

/// Which resource was updated, or subscribed to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceEvent {
    /// A resource's contents changed.
    Updated(String),
    /// A client subscribed to this URI (`resources/subscribe`, or a `subscriptions/listen`
    /// stream naming it), which may be a static resource, a URI of a template, or none: a
    /// registry whose resources come from elsewhere (a gateway's) subscribes at their source.
    Subscribed(String),
    /// The last client subscribed to this URI unsubscribed, or its session or listen stream
    /// ended: a registry whose resources come from elsewhere unsubscribes at their source.
    Unsubscribed(String),
}

/// One client's subscription to a URI, counted by its registry while it lives; when the last
/// one of a URI is dropped, the registry sends [`ResourceEvent::Unsubscribed`].
pub(crate) struct Subscriber {
    registry: std::sync::Weak<McpResourceRegistry>,
    uri: String,
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let last = {
            let mut counts = registry
                .subscribers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match counts.get_mut(&self.uri) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    counts.remove(&self.uri);
                    true
                }
                None => false,
            }
        };
        if last {
            registry
                .updates
                .send(ResourceEvent::Unsubscribed(std::mem::take(&mut self.uri)));
        }
    }
}

/// Resources and templates.
///
/// Static resources by URI, and templates (RFC 6570 level 1, `users://{id}/profile`) whose
/// reader gets the URI's variables. A read tries the static resources first.
///
/// ```
/// use std::collections::BTreeMap;
/// use codomyrmex_mcp_core::{ResourceError, ResourceRequest};
/// use codomyrmex_mcp_core::wire::ResourceContents;
/// use codomyrmex_mcp_core::{
///     McpResourceRegistry, ResourceDefinition, ResourceTemplateDefinition, ToolContext,
/// };
///
/// let resources = McpResourceRegistry::new();
/// resources.add_text(
///     ResourceDefinition::new("config://app", "settings").with_mime_type("application/json"),
///     r#"{"debug":false}"#,
/// )?;
/// resources.add_template(
///     ResourceTemplateDefinition::new("users://{id}/profile", "profile"),
///     |request: ResourceRequest| async move {
///         let id = request.variables.get("id").cloned().unwrap_or_default();
///         let text = format!("the profile of user {id}");
///         let contents = ResourceContents::Text { uri: request.uri, mime_type: None, text, meta: None };
///         Ok::<_, ResourceError>(vec![contents])
///     },
///     BTreeMap::new(), // no completion of `id`
/// )?;
///
/// let read = |uri: &str| futures_executor::block_on(resources.read(uri, ToolContext::detached()));
/// let ResourceContents::Text { text, .. } = &read("config://app")?[0] else { panic!() };
/// assert_eq!(text, r#"{"debug":false}"#);
/// let ResourceContents::Text { text, .. } = &read("users://7/profile")?[0] else { panic!() };
/// assert_eq!(text, "the profile of user 7");
/// assert!(read("users://7").is_err()); // no resource, no template matches
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct McpResourceRegistry {
    resources: RwLock<BTreeMap<String, Arc<StaticResource>>>,
    templates: RwLock<Vec<Arc<Template>>>,
    listers: RwLock<Vec<Arc<dyn ResourceLister>>>,
    generation: Generation,
    updates: Broadcast<ResourceEvent>,
    /// How many live [`Subscriber`]s each URI has.
    subscribers: std::sync::Mutex<std::collections::HashMap<String, usize>>,
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
    /// A `ui://` resource (the MCP Apps extension) whose MIME type or `_meta.ui` the
    /// extension does not allow.
    #[error("UI resource {uri:?}: {reason}")]
    InvalidUi {
        /// The resource's URI (or template).
        uri: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The `_meta` of a fixed resource's content item: a `ui://` resource's `_meta.ui` is
/// repeated there, where hosts look first (the MCP Apps extension); nothing otherwise.
fn content_ui_meta(definition: &ResourceDefinition) -> Option<Map<String, Value>> {
    use crate::wire::apps::{UI_META_KEY, UI_SCHEME_PREFIX};
    if !definition.uri.starts_with(UI_SCHEME_PREFIX) {
        return None;
    }
    let ui = definition.meta.as_ref()?.get(UI_META_KEY)?;
    let mut meta = Map::new();
    meta.insert(UI_META_KEY.into(), ui.clone());
    Some(meta)
}

/// The MCP Apps extension's rules for a `ui://` resource or template: its MIME type is
/// [`APP_MIME_TYPE`](crate::wire::apps::APP_MIME_TYPE) (set when none is given), its
/// `_meta.ui` reads. Any other URI is left alone.
fn check_ui(
    uri: &str,
    mime_type: &mut Option<String>,
    meta: Option<&Map<String, Value>>,
) -> Result<(), ResourceRegistrationError> {
    use crate::wire::apps::{APP_MIME_TYPE, UI_SCHEME_PREFIX, UiResourceMeta, check_ui_uri};
    #[cfg(test)]
    tests::UI_CHECKS.with(|n| n.set(n.get() + 1));
    if !uri.starts_with(UI_SCHEME_PREFIX) {
        return Ok(());
    }
    let invalid = |reason: String| ResourceRegistrationError::InvalidUi {
        uri: uri.chars().take(256).collect(),
        reason,
    };
    check_ui_uri(uri).map_err(invalid)?;
    match mime_type.as_deref() {
        None => *mime_type = Some(APP_MIME_TYPE.to_owned()),
        Some(APP_MIME_TYPE) => {}
        Some(other) => {
            return Err(invalid(format!(
                "the MIME type of a ui:// resource is {APP_MIME_TYPE:?}, not {other:?}"
            )));
        }
    }
    if let Some(meta) = meta {
        UiResourceMeta::from_meta(meta).map_err(|e| invalid(e.0))?;
    }
    Ok(())
}

/// A resource definition that passed [`check_ui`] (its MIME type set for a `ui://` one):
/// what [`McpResourceRegistry::insert`] takes, so each way of adding runs the check once.
struct UiChecked(ResourceDefinition);

/// `definition`, checked against the MCP Apps extension's rules ([`check_ui`]).
fn with_ui_checked(
    mut definition: ResourceDefinition,
) -> Result<UiChecked, ResourceRegistrationError> {
    check_ui(
        &definition.uri,
        &mut definition.mime_type,
        definition.meta.as_ref(),
    )?;
    Ok(UiChecked(definition))
}

impl McpResourceRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            resources: RwLock::new(BTreeMap::new()),
            templates: RwLock::new(Vec::new()),
            listers: RwLock::new(Vec::new()),
            generation: Generation::new(),
            updates: Broadcast::new(256),
            subscribers: std::sync::Mutex::new(std::collections::HashMap::new()),
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
        self.insert(with_ui_checked(definition)?, reader)
    }

    /// Adds a resource whose definition passed [`with_ui_checked`].
    fn insert(
        &self,
        UiChecked(definition): UiChecked,
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
        self.generation.bump();
        Ok(())
    }

    /// Adds a resource whose contents are fixed text.
    pub fn add_text(
        &self,
        definition: ResourceDefinition,
        text: impl Into<String>,
    ) -> Result<(), ResourceRegistrationError> {
        let checked = with_ui_checked(definition)?;
        let text: Arc<str> = Arc::from(text.into());
        let mime = checked.0.mime_type.clone();
        let uri = checked.0.uri.clone();
        let meta = content_ui_meta(&checked.0);
        self.insert(checked, move |_: ResourceRequest| {
            let contents = vec![ResourceContents::Text {
                uri: uri.clone(),
                mime_type: mime.clone(),
                text: text.to_string(),
                meta: meta.clone(),
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
        let checked = with_ui_checked(definition)?;
        let blob: Arc<str> = Arc::from(crate::util::base64_encode(bytes));
        let mime = checked.0.mime_type.clone();
        let uri = checked.0.uri.clone();
        let meta = content_ui_meta(&checked.0);
        self.insert(checked, move |_: ResourceRequest| {
            let contents = vec![ResourceContents::Blob {
                uri: uri.clone(),
                mime_type: mime.clone(),
                blob: blob.to_string(),
                meta: meta.clone(),
            }];
            async move { Ok(contents) }
        })
    }

    /// Adds a URI template with a reader and optional per-variable completers.
    pub fn add_template(
        &self,
        mut definition: ResourceTemplateDefinition,
        reader: impl ResourceReader,
        completers: BTreeMap<String, Completer>,
    ) -> Result<(), ResourceRegistrationError> {
        check_ui(
            &definition.uri_template,
            &mut definition.mime_type,
            definition.meta.as_ref(),
        )?;
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
        self.generation.bump();
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
            self.generation.bump();
        }
        a || b
    }

    /// Tells subscribers that `uri`'s contents changed.
    pub fn notify_updated(&self, uri: impl Into<String>) {
        self.updates.send(ResourceEvent::Updated(uri.into()));
    }

    /// Tells [`subscribe_updates`](Self::subscribe_updates) receivers that a client
    /// subscribed to `uri` ([`ResourceEvent::Subscribed`]); the subscription is counted until
    /// the returned [`Subscriber`] is dropped ([`ResourceEvent::Unsubscribed`] after the
    /// last).
    pub(crate) fn note_subscribed(self: &Arc<Self>, uri: &str) -> Subscriber {
        *self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(uri.to_owned())
            .or_insert(0) += 1;
        self.updates.send(ResourceEvent::Subscribed(uri.to_owned()));
        Subscriber {
            registry: Arc::downgrade(self),
            uri: uri.to_owned(),
        }
    }

    /// Changes whenever the lists change.
    pub fn subscribe_list(&self) -> Changes {
        self.generation.subscribe()
    }

    /// Receives resource updates, and the URIs clients subscribe to.
    pub fn subscribe_updates(&self) -> Receiver<ResourceEvent> {
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

    /// Whether `uri` reads: a static resource has it, or a template matches it.
    pub fn serves(&self, uri: &str) -> bool {
        self.resolve(uri).is_some()
    }

    /// Whether a `ui://` resource or template (the MCP Apps extension) is registered.
    pub fn has_ui_resources(&self) -> bool {
        let prefix = crate::wire::apps::UI_SCHEME_PREFIX;
        self.read_resources()
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .is_some_and(|(k, _)| k.starts_with(prefix))
            || self
                .read_templates()
                .iter()
                .any(|t| t.definition.uri_template.starts_with(prefix))
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
        self.generation.bump();
    }

    fn read_listers(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<dyn ResourceLister>>> {
        self.listers.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `resources/list` needs [`page_listed`](Self::page_listed).
    /// The number of changes so far (what a cached list page was built at).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.get()
    }

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
        // The listers are user code: they are first called inside the returned future, so
        // that a panic in `list` itself happens where the driver's unwind guard catches it.
        let listers: Vec<Arc<dyn ResourceLister>> = self.read_listers().clone();
        async move {
            for lister in listers {
                for definition in lister.list(after.clone(), size + 1).await {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// How many times [`check_ui`] ran on this thread.
        pub(super) static UI_CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Each way of adding a resource checks its `ui://` rules once, not once per layer (a
    /// fixed resource's were checked by `add_text`/`add_blob` and again by `add`).
    #[test]
    fn each_add_checks_the_ui_rules_once() {
        let r = McpResourceRegistry::new();
        let checks = |add: &dyn Fn(&McpResourceRegistry, &str)| {
            let before = UI_CHECKS.with(std::cell::Cell::get);
            add(&r, &format!("ui://app/{before}"));
            UI_CHECKS.with(std::cell::Cell::get) - before
        };
        let text = |r: &McpResourceRegistry, uri: &str| {
            r.add_text(ResourceDefinition::new(uri, "t"), "<p>")
                .unwrap();
        };
        let blob = |r: &McpResourceRegistry, uri: &str| {
            r.add_blob(ResourceDefinition::new(uri, "b"), b"<p>")
                .unwrap();
        };
        let read = |r: &McpResourceRegistry, uri: &str| {
            r.add(
                ResourceDefinition::new(uri, "r"),
                |_: ResourceRequest| async move { Ok(Vec::new()) },
            )
            .unwrap();
        };
        assert_eq!(
            (checks(&text), checks(&blob), checks(&read)),
            (1, 1, 1),
            "check_ui runs per add_text, add_blob, add"
        );
        let wrong = ResourceDefinition {
            mime_type: Some("text/plain".into()),
            ..ResourceDefinition::new("ui://app/wrong", "w")
        };
        assert!(r.add_text(wrong, "x").is_err(), "the check still refuses");
    }

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

    #[test]
    fn static_and_template_reads() {
        crate::test_runtime::run(async {
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
        });
    }
}
