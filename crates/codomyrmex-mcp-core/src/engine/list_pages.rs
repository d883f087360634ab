//! List pages encoded once: `tools/list`, `resources/list` (without listers),
//! `resources/templates/list` and `prompts/list` pages, encoded per list, protocol version
//! and cursor, and reused (their bytes shared) while the registry's change counter stays
//! where it was when each page was built.
//!
//! It owns the cache and the paging of the registries into encoded results; it is not the
//! paging itself (the registries) nor the encoder (`wire`). A resource list with listers is
//! asked afresh every time (`resources.rs`), as the listers' answers can change unseen.

use serde_json::{Map, Value};

use super::*;
use crate::authz::Grant;
use crate::wire::{EncodedResult, ErrorObject, OutgoingMessage, RequestId};

/// Which list a page is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ListKind {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl Engine {
    /// A `*/list` answer: the page after the request's cursor, from the cache when the
    /// registry has not changed since it was built.
    pub(super) fn list_page(
        &self,
        id: RequestId,
        kind: ListKind,
        params: &Map<String, Value>,
        scope: &RequestScope,
        grant: Option<Grant>,
    ) -> OutgoingMessage {
        let checked = cursor(params).and_then(|after| {
            if kind == ListKind::Templates
                && let Some(c) = &after
                && c.parse::<usize>().is_err()
            {
                return Err(ErrorObject::invalid_params("Invalid cursor"));
            }
            Ok(after)
        });
        let after = match checked {
            Ok(after) => after,
            Err(error) => {
                return OutgoingMessage::Error {
                    id: Some(id),
                    error,
                };
            }
        };
        // Read before the page is built: a change that lands while it is built makes the
        // entry stale at once, never a stale page look current.
        let generation = self.list_generation(kind);
        let key = (kind, scope.version, after, grant.map_or(0, Grant::bits));
        let result = match self.shared.list_pages.get(&key, generation) {
            Some(page) => page,
            None => {
                let page = self
                    .encode_page_for(kind, key.2.as_deref(), scope, grant)
                    .into_shared();
                self.shared.list_pages.put(key, generation, &page);
                page
            }
        };
        OutgoingMessage::Encoded { id, result }
    }

    /// The change counter of the registry behind `kind` (resources and templates share one),
    /// plus the authorization policy's epoch (a replaced policy makes every page stale).
    fn list_generation(&self, kind: ListKind) -> u64 {
        let registry = match kind {
            ListKind::Tools => self.shared.registry.generation(),
            ListKind::Resources | ListKind::Templates => {
                // Both counters only grow, so their sum moves whenever either does.
                let resources = self.shared.resources.as_ref().map_or(0, |r| r.generation());
                let skills = self.shared.skills.as_ref().map_or(0, |s| s.generation());
                resources.wrapping_add(skills)
            }
            ListKind::Prompts => self.shared.prompts.as_ref().map_or(0, |p| p.generation()),
        };
        // Both only grow, so their sum moves whenever either does.
        registry.wrapping_add(self.shared.access.epoch())
    }

    /// The page of `kind` after `after`, built and encoded for the request's version (an
    /// empty page for a registry the engine does not have).
    #[cfg(test)]
    pub(super) fn encode_page(
        &self,
        kind: ListKind,
        after: Option<&str>,
        scope: &RequestScope,
    ) -> EncodedResult {
        self.encode_page_for(kind, after, scope, None)
    }

    /// [`encode_page`](Self::encode_page) with the items `grant` does not allow left out
    /// (a page may come out shorter than the page size, or empty, with a `nextCursor`).
    pub(super) fn encode_page_for(
        &self,
        kind: ListKind,
        after: Option<&str>,
        scope: &RequestScope,
        grant: Option<Grant>,
    ) -> EncodedResult {
        let size = self.shared.config.page_size;
        let (name, (items, next)) = match kind {
            ListKind::Tools => {
                let (tools, next) = self.shared.registry.page(after, size);
                (
                    "tools",
                    (self.shared.tasks.with_support(tools, scope), next),
                )
            }
            ListKind::Resources => (
                "resources",
                skills::with_skill_mds(
                    self.shared.skills.as_deref(),
                    after,
                    size,
                    self.shared
                        .resources
                        .as_ref()
                        .map_or_else(Default::default, |r| r.page(after, size)),
                ),
            ),
            ListKind::Templates => {
                let after = after.and_then(|c| c.parse::<usize>().ok());
                let page = self.shared.resources.as_ref().map(|r| {
                    let (items, next) = r.template_page(after, size);
                    (items, next.map(|n| n.to_string()))
                });
                ("resourceTemplates", page.unwrap_or_default())
            }
            ListKind::Prompts => (
                "prompts",
                self.shared
                    .prompts
                    .as_ref()
                    .map_or_else(Default::default, |p| p.page(after, size)),
            ),
        };
        let items = self.shared.access.allowed_items(grant, name, items);
        self.shared.results.encode_finished(
            self.shared.results.page_result(name, items, next, scope),
            scope,
        )
    }
}

/// Encoded pages by (list, version, cursor), each with the registry generation it was built
/// at. Bounded: cursors come from clients, so past [`ListPages::MAX`] entries the cache
/// starts over.
#[derive(Default)]
pub(super) struct ListPages {
    pages: std::sync::Mutex<PageMap>,
}

/// A page's key: its list, the protocol version, the cursor and the caller's grant (its
/// bits; 0 without a policy).
type PageKey = (ListKind, ProtocolVersion, Option<String>, u64);

type PageMap = std::collections::HashMap<PageKey, (u64, EncodedResult)>;

impl ListPages {
    /// The most pages kept.
    pub(super) const MAX: usize = 128;

    fn lock(&self) -> std::sync::MutexGuard<'_, PageMap> {
        self.pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The page for `key`, if it was built at `generation`.
    fn get(&self, key: &PageKey, generation: u64) -> Option<EncodedResult> {
        match self.lock().get(key) {
            Some((built, page)) if *built == generation => Some(page.clone()),
            _ => None,
        }
    }

    fn put(&self, key: PageKey, generation: u64, page: &EncodedResult) {
        let mut pages = self.lock();
        if pages.len() >= Self::MAX && !pages.contains_key(&key) {
            pages.clear();
        }
        pages.insert(key, (generation, page.clone()));
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    #[cfg(test)]
    pub(super) fn insert(&self, key: PageKey, generation: u64, page: &EncodedResult) {
        self.put(key, generation, page);
    }
}

#[cfg(test)]
#[path = "list_pages_tests.rs"]
mod tests;
