//! The client's paginated lists: every page of a list method, honouring `ttlMs` (through the
//! [`ListCache`](super::proto::ListCache)) and bounded by the client's
//! [`ClientLimits`](super::ClientLimits): a cursor the server already gave ends the walk with
//! a protocol error, and too many items, bytes or pages with [`ClientError::Limit`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::{ClientError, McpClient, lock, param_headers, proto};

/// How much of a cursor an error shows.
const SHOWN_CURSOR_CHARS: usize = 64;

impl McpClient {
    /// Every item of a paginated list (`key` is the result's array field), honouring
    /// `ttlMs`: a page still fresh is not asked for again. Bounded by the client's
    /// [`ClientLimits`](super::ClientLimits) (items, bytes and pages of this one list): past
    /// one, [`ClientError::Limit`]. A `nextCursor` the server already gave in this walk (its
    /// pages cycle) is a [`ClientError::Protocol`] naming the method and the cursor.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        self.walk(method, key, None).await
    }

    /// Every item of a paginated request that takes `params` besides the cursor (such as
    /// `resources/directory/read {uri}`), bounded as [`list_all`](Self::list_all) is. Its
    /// pages are not cached: the list cache is kept per method and cursor.
    pub(crate) async fn list_all_with(
        &self,
        method: &str,
        key: &str,
        params: &Map<String, Value>,
    ) -> Result<Vec<Value>, ClientError> {
        self.walk(method, key, Some(params)).await
    }

    async fn walk(
        &self,
        method: &str,
        key: &str,
        params: Option<&Map<String, Value>>,
    ) -> Result<Vec<Value>, ClientError> {
        let limits = self.shared.limits;
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..limits.list_pages {
            let page = self
                .list_page(method, params, cursor.as_deref(), &mut bytes)
                .await?;
            let Some(list) = page.get(key).and_then(Value::as_array) else {
                return Err(ClientError::Protocol(format!(
                    "{method} result has no {key} array"
                )));
            };
            if items.len().saturating_add(list.len()) > limits.list_items {
                return Err(ClientError::Limit(format!(
                    "{method}: the server listed more than {} items",
                    limits.list_items
                )));
            }
            items.extend(list.iter().cloned());
            let Some(next) = page.get("nextCursor").and_then(Value::as_str) else {
                return Ok(items);
            };
            if let Some(c) = cursor.take() {
                seen.insert(c);
            }
            if seen.contains(next) {
                let shown: String = next.chars().take(SHOWN_CURSOR_CHARS).collect();
                return Err(ClientError::Protocol(format!(
                    "{method}: the server gave cursor {shown:?} again (its pages cycle)"
                )));
            }
            cursor = Some(next.to_owned());
        }
        Err(ClientError::Limit(format!(
            "{method}: the server's list goes on past {} pages",
            limits.list_pages
        )))
    }

    /// The page of `method` at `cursor`, from the cache while it is fresh; its encoded length
    /// is added to `bytes`, and past the client's `list_bytes` it is an error (and not
    /// kept). With `params`, the page is asked with them (and the cursor) and not cached.
    async fn list_page(
        &self,
        method: &str,
        params: Option<&Map<String, Value>>,
        cursor: Option<&str>,
        bytes: &mut usize,
    ) -> Result<Value, ClientError> {
        let budget = self.shared.limits.list_bytes;
        if let Some(params) = params {
            let mut params = params.clone();
            if let Some(c) = cursor {
                params.insert("cursor".into(), json!(c));
            }
            let page = self.request(method, Value::Object(params)).await?;
            return Self::counted(method, page, budget, bytes);
        }
        // Private pages are served only under the credentials they were fetched with.
        let context = self.auth_context.load(Ordering::Acquire);
        let cached = {
            let mut cache = lock(&self.shared.cache);
            cache.set_context(context);
            cache.get(method, cursor, Instant::now())
        };
        let fetched = cached.is_none();
        let page = match cached {
            Some(p) => p,
            None => {
                let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
                self.request(method, params).await?
            }
        };
        let before = *bytes;
        let page = Self::counted(method, page, budget, bytes)?;
        // Kept only if the credentials did not change meanwhile (an authorization on the
        // way): which context it belongs to is then unclear.
        if fetched && self.auth_context.load(Ordering::Acquire) == context {
            let len = bytes.saturating_sub(before);
            lock(&self.shared.cache).store(method, cursor, &page, len, Instant::now());
        }
        Ok(page)
    }

    /// `page`, its encoded length added to `bytes`; past `budget`, an error.
    fn counted(
        method: &str,
        page: Value,
        budget: usize,
        bytes: &mut usize,
    ) -> Result<Value, ClientError> {
        let len = proto::page_len(&page, budget.saturating_sub(*bytes));
        *bytes = bytes.saturating_add(len);
        if *bytes > budget {
            return Err(ClientError::Limit(format!(
                "{method}: the server's pages add up to more than {budget} bytes"
            )));
        }
        Ok(page)
    }

    /// Every tool, following pagination. A tool whose `x-mcp-header` annotations are invalid
    /// is left out (2026-07-28 asks clients to reject it); the others' annotations are kept
    /// for the `Mcp-Param-*` headers of their calls.
    pub async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        let mut tools = self.list_all("tools/list", "tools").await?;
        let mut headers = HashMap::new();
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            match param_headers::annotated_params(schema) {
                Ok(params) => {
                    if !params.is_empty() {
                        headers.insert(name.to_owned(), params);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!(
                        "client: leaving out tool {name:?}: {}",
                        crate::util::inert_text(&why)
                    );
                    false
                }
            }
        });
        *lock(&self.tool_headers) = headers;
        Ok(tools)
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all("prompts/list", "prompts").await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all("resources/list", "resources").await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all("resources/templates/list", "resourceTemplates")
            .await
    }
}
