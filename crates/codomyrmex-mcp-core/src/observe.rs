//! What a server's parts count for its operators: the one hook between the layers that count
//! (the authorization policy's denials, an application's own figures such as the gateway's
//! per-upstream calls) and the transport that shows them (`/metrics` and `/status` of the
//! HTTP transport).
//!
//! A part that counts implements [`Observed`]; the engine names every one
//! ([`Engine::observed`](crate::engine::Engine::observed): its authorization policy in
//! force, then what [`Observers::add`] was given). The transport asks each for
//! its metric families in the Prometheus text format and for its fields of the `/status`
//! document; it knows none of them by name. This module knows no transport and no format
//! beyond the text it is handed.

use std::fmt::Write as _;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};

/// A part of a server that counts something operators read.
pub trait Observed: Send + Sync {
    /// Appends its metric families to `out`, in the Prometheus text format (`# HELP`,
    /// `# TYPE`, samples; no `# EOF`). Label values must be bounded and escaped
    /// ([`label_value`]).
    fn metrics(&self, out: &mut String);

    /// Adds its fields to the `/status` document (nothing by default).
    fn status(&self, _doc: &mut Map<String, Value>) {}
}

/// The [`Observed`] parts given to a server beside its authorization policy: shared, so that
/// a part added after the server was built is read too.
#[derive(Clone, Default)]
pub struct Observers(Arc<RwLock<Vec<Arc<dyn Observed>>>>);

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observers")
            .field("len", &self.snapshot().len())
            .finish()
    }
}

impl Observers {
    /// No parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `part`; the transport reads it from its next scrape on.
    pub fn add(&self, part: Arc<dyn Observed>) {
        self.0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(part);
    }

    /// The parts, in the order they were added.
    pub fn snapshot(&self) -> Vec<Arc<dyn Observed>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// `value` as a Prometheus label value: `\`, `"` and newlines escaped.
pub fn label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Writes the `# HELP` and `# TYPE` lines of a family named `name` (without `_total`).
pub fn family_header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str);

    impl Observed for Fixed {
        fn metrics(&self, out: &mut String) {
            out.push_str(self.0);
        }
    }

    #[test]
    fn parts_are_read_in_order_and_labels_escaped() {
        let o = Observers::new();
        let shared = o.clone();
        o.add(Arc::new(Fixed("a\n")));
        shared.add(Arc::new(Fixed("b\n")));
        let mut out = String::new();
        for p in o.snapshot() {
            p.metrics(&mut out);
        }
        assert_eq!(out, "a\nb\n");
        assert_eq!(label_value("x\"y\\z\n"), "x\\\"y\\\\z\\n");
    }
}
