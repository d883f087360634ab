//! The client's cache of list pages (2026-07-28 `ttlMs` and `cacheScope`), bounded in pages
//! and bytes, and the notifications that invalidate it. No I/O, no clock: time is an input.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The list methods whose results may be cached, and the notification that invalidates each.
pub fn list_changed_method(notification: &str) -> Option<&'static str> {
    match notification {
        "notifications/tools/list_changed" => Some("tools/list"),
        "notifications/prompts/list_changed" => Some("prompts/list"),
        "notifications/resources/list_changed" => Some("resources/list"),
        _ => None,
    }
}

#[derive(Debug, Clone)]
struct CacheEntry {
    value: Value,
    /// The page's encoded length, as the caller measured it ([`page_len`]).
    bytes: usize,
    expires: Instant,
    /// `cacheScope: "private"`: kept for the authorization context it was fetched in only.
    private: bool,
}

/// List results kept for as long as their `ttlMs` says (2026-07-28 caching). A result
/// without `ttlMs`, or with `0`, is not kept. `cacheScope: "public"` results are kept across
/// authorization contexts; `"private"` ones (and those that name no scope) only within the
/// context they were fetched in: a new context ([`set_context`](Self::set_context), a new
/// access token) drops them. Bounded in entries ([`MAX_CACHE_ENTRIES`]) and in the encoded
/// bytes of the pages kept ([`MAX_CACHE_BYTES`]): a page larger than that is not kept, and a
/// full cache drops its stale pages, then everything.
#[derive(Debug, Default)]
pub struct ListCache {
    entries: HashMap<(String, Option<String>), CacheEntry>,
    /// The sum of the entries' `bytes`.
    bytes: usize,
    context: u64,
}

/// The most list pages kept.
pub const MAX_CACHE_ENTRIES: usize = 256;
/// The most bytes of list pages kept (their compact JSON encoding, cursors not counted).
pub const MAX_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The length of `page`'s compact JSON encoding when it is at most `limit`; past it, some
/// count over `limit` (the encoder stops soon after passing it, so a huge page is not walked
/// to its end).
pub fn page_len(page: &Value, limit: usize) -> usize {
    let mut counter = crate::wire::encode::Counter::until(limit);
    crate::wire::encode::write_value(&mut counter, page);
    crate::wire::encode::Sink::written(&counter)
}

impl ListCache {
    /// Enters authorization context `context` (a counter the transport bumps when the
    /// credentials it sends change); a new one forgets every private page.
    pub fn set_context(&mut self, context: u64) {
        if context != self.context {
            self.context = context;
            self.retain(|_, e| !e.private);
        }
    }

    /// Keeps the entries `keep` says to, the byte count following.
    fn retain(&mut self, mut keep: impl FnMut(&(String, Option<String>), &CacheEntry) -> bool) {
        let mut bytes = 0usize;
        self.entries.retain(|k, e| {
            let kept = keep(k, e);
            if kept {
                bytes = bytes.saturating_add(e.bytes);
            }
            kept
        });
        self.bytes = bytes;
    }

    /// The number of pages kept and their bytes.
    pub fn usage(&self) -> (usize, usize) {
        (self.entries.len(), self.bytes)
    }

    /// The cached page of `method` at `cursor`, if it is still fresh at `now`.
    pub fn get(&mut self, method: &str, cursor: Option<&str>, now: Instant) -> Option<Value> {
        let key = (method.to_owned(), cursor.map(str::to_owned));
        match self.entries.get(&key) {
            Some(e) if now < e.expires => Some(e.value.clone()),
            Some(_) => {
                if let Some(e) = self.entries.remove(&key) {
                    self.bytes = self.bytes.saturating_sub(e.bytes);
                }
                None
            }
            None => None,
        }
    }

    /// Keeps `page` (whose encoded length is `bytes`, see [`page_len`]) if it carries a
    /// positive `ttlMs` and is not larger than [`MAX_CACHE_BYTES`].
    pub fn store(
        &mut self,
        method: &str,
        cursor: Option<&str>,
        page: &Value,
        bytes: usize,
        now: Instant,
    ) {
        let Some(ttl) = page.get("ttlMs").and_then(Value::as_u64).filter(|t| *t > 0) else {
            return;
        };
        if bytes > MAX_CACHE_BYTES {
            return;
        }
        let key = (method.to_owned(), cursor.map(str::to_owned));
        if let Some(old) = self.entries.remove(&key) {
            self.bytes = self.bytes.saturating_sub(old.bytes);
        }
        let full = |c: &Self| {
            c.entries.len() >= MAX_CACHE_ENTRIES || c.bytes.saturating_add(bytes) > MAX_CACHE_BYTES
        };
        if full(self) {
            self.retain(|_, e| now < e.expires);
            if full(self) {
                self.entries.clear();
                self.bytes = 0;
            }
        }
        // A TTL too large for the clock is kept for a day.
        let expires = now
            .checked_add(Duration::from_millis(ttl))
            .or_else(|| now.checked_add(Duration::from_secs(86_400)))
            .unwrap_or(now);
        let private = page.get("cacheScope").and_then(Value::as_str) != Some("public");
        self.bytes = self.bytes.saturating_add(bytes);
        self.entries.insert(
            key,
            CacheEntry {
                value: page.clone(),
                bytes,
                expires,
                private,
            },
        );
    }

    /// Forgets every page of `method` (its list changed).
    pub fn invalidate(&mut self, method: &str) {
        self.retain(|(m, _), _| m != method);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    // A test's clock: the cache itself never reads one.
    #[allow(clippy::disallowed_methods)]
    fn list_cache_honours_ttl_and_invalidation() {
        let mut c = ListCache::default();
        let t0 = Instant::now();
        let page = json!({"tools": [], "ttlMs": 1000});
        c.store("tools/list", None, &page, 16, t0);
        assert_eq!(
            c.get("tools/list", None, t0 + Duration::from_millis(999)),
            Some(page.clone())
        );
        assert_eq!(
            c.get("tools/list", None, t0 + Duration::from_millis(1000)),
            None
        );
        c.store("tools/list", None, &page, 16, t0);
        c.invalidate("tools/list");
        assert_eq!(c.get("tools/list", None, t0), None);
        c.store("tools/list", None, &json!({"tools": []}), 16, t0);
        c.store(
            "tools/list",
            None,
            &json!({"tools": [], "ttlMs": 0}),
            16,
            t0,
        );
        assert_eq!(c.get("tools/list", None, t0), None, "no ttl, no caching");
        c.store(
            "tools/list",
            Some("c"),
            &json!({"tools": [], "ttlMs": u64::MAX}),
            16,
            t0,
        );
        assert!(c.get("tools/list", Some("c"), t0).is_some());
        // cacheScope: a private page (or one naming no scope) is not served under another
        // authorization context; a public one is.
        let mut c = ListCache::default();
        c.set_context(1);
        let private = json!({"tools": [1], "ttlMs": 1000, "cacheScope": "private"});
        let public = json!({"tools": [2], "ttlMs": 1000, "cacheScope": "public"});
        let unscoped = json!({"tools": [3], "ttlMs": 1000});
        c.store("tools/list", None, &private, 16, t0);
        c.store("prompts/list", None, &public, 16, t0);
        c.store("resources/list", None, &unscoped, 16, t0);
        c.set_context(1);
        assert_eq!(c.get("tools/list", None, t0), Some(private));
        c.set_context(2);
        assert_eq!(c.get("tools/list", None, t0), None);
        assert_eq!(c.get("resources/list", None, t0), None);
        assert_eq!(c.get("prompts/list", None, t0), Some(public));
        assert_eq!(
            list_changed_method("notifications/tools/list_changed"),
            Some("tools/list")
        );
    }

    #[test]
    // A test's clock: the cache itself never reads one.
    #[allow(clippy::disallowed_methods)]
    fn list_cache_is_bounded_in_bytes_and_pages() {
        let t0 = Instant::now();
        let page = json!({"tools": [], "ttlMs": 60_000});
        let mut c = ListCache::default();
        // A page larger than the whole cache is not kept.
        c.store("tools/list", None, &page, MAX_CACHE_BYTES + 1, t0);
        assert_eq!(c.get("tools/list", None, t0), None);
        assert_eq!(c.usage(), (0, 0));
        // Pages that together pass the byte bound: the cache never holds more than it.
        let quarter = MAX_CACHE_BYTES / 4;
        for i in 0..10 {
            c.store("tools/list", Some(&i.to_string()), &page, quarter, t0);
            let (pages, bytes) = c.usage();
            assert!(bytes <= MAX_CACHE_BYTES, "{bytes}");
            assert!(pages <= 4, "{pages}");
        }
        // The same page stored again replaces its bytes, never adds them.
        let mut c = ListCache::default();
        for _ in 0..10 {
            c.store("tools/list", Some("a"), &page, 100, t0);
        }
        assert_eq!(c.usage(), (1, 100));
        for i in 0..(MAX_CACHE_ENTRIES * 2) {
            c.store("tools/list", Some(&i.to_string()), &page, 1, t0);
            assert!(c.usage().0 <= MAX_CACHE_ENTRIES);
        }
        c.invalidate("tools/list");
        assert_eq!(c.usage(), (0, 0));
        assert_eq!(page_len(&page, usize::MAX), page.to_string().len());
        assert!(page_len(&json!({"a": "x".repeat(100_000)}), 10) < 100_000);
    }
}
