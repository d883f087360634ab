//! The gateway's URI naming, both ways: an upstream's URI under its namespace, and a local
//! URI back to its upstream's namespace and URI. A leaf: it imports nothing of the gateway,
//! so the catalogue, the Skills and the Apps mounts can all use it without a cycle.
//!
//! One rule per scheme:
//! - `ui://` (MCP Apps) and `skill://` (Skills): the namespace becomes the authority, the
//!   upstream's URI after `//` its path: `ui://dashboard/view` of upstream `app` is
//!   `ui://app/dashboard/view`, `skill://acme/refunds/SKILL.md` of upstream `kb` is
//!   `skill://kb/acme/refunds/SKILL.md`. Clients find apps and skills by their scheme, so it
//!   stays; a skill's name (the last segment) stays too.
//! - any other scheme: the namespace joins the scheme, `file:///a` of upstream `fs` becomes
//!   `fs+file:///a`. A `+` can never be part of a namespace, so the split back is
//!   unambiguous, and a template stays a valid RFC 6570 template.

/// The longest namespace.
pub const MAX_NAMESPACE: usize = 32;

/// The schemes whose URIs take the namespace as their authority.
const AUTHORITY_SCHEMES: [&str; 2] = ["ui", "skill"];

/// Whether `name` can be a namespace: a lowercase ASCII letter, then lowercase letters,
/// digits and `-`; at most 32 characters. Such a name is valid as a tool-name prefix, as the
/// first part of a URI scheme (`name+file`) and as a URI authority (`ui://name/...`).
pub fn valid_namespace(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= MAX_NAMESPACE
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
}

/// Whether `scheme` is an RFC 3986 scheme: a letter, then letters, digits, `+`, `-`, `.`.
pub fn valid_scheme(scheme: &str) -> bool {
    let mut bytes = scheme.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// The scheme of `uri` when it is one whose URIs take the namespace as their authority,
/// and the rest after `scheme://`.
fn authority_form(uri: &str) -> Option<(&'static str, &str)> {
    AUTHORITY_SCHEMES.iter().find_map(|scheme| {
        let rest = uri.strip_prefix(scheme)?.strip_prefix("://")?;
        Some((*scheme, rest))
    })
}

/// The local URI (or template) of an upstream's `uri` under `namespace`. `None` when `uri`
/// has no valid scheme, or is a `ui://` or `skill://` URI with nothing after `//`.
pub fn local_uri(namespace: &str, uri: &str) -> Option<String> {
    if let Some((scheme, rest)) = authority_form(uri) {
        return (!rest.is_empty() && !rest.starts_with('/'))
            .then(|| format!("{scheme}://{namespace}/{rest}"));
    }
    let (scheme, _) = uri.split_once(':')?;
    valid_scheme(scheme).then(|| format!("{namespace}+{uri}"))
}

/// The namespace and upstream URI of a local URI, the inverse of [`local_uri`].
pub fn split_local_uri(local: &str) -> Option<(&str, String)> {
    if let Some((scheme, rest)) = authority_form(local) {
        let (namespace, upstream) = rest.split_once('/')?;
        return (valid_namespace(namespace) && !upstream.is_empty() && !upstream.starts_with('/'))
            .then(|| (namespace, format!("{scheme}://{upstream}")));
    }
    let (namespace, uri) = local.split_once('+')?;
    let (scheme, _) = uri.split_once(':')?;
    (valid_namespace(namespace) && valid_scheme(scheme)).then(|| (namespace, uri.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_through_the_namespace() {
        for (namespace, upstream, local) in [
            ("fs", "file:///etc/x", "fs+file:///etc/x"),
            ("fs", "file:///{path}", "fs+file:///{path}"),
            ("a", "git+ssh://h/r", "a+git+ssh://h/r"),
            ("app", "ui://dashboard/view", "ui://app/dashboard/view"),
            ("app", "ui://view", "ui://app/view"),
            (
                "kb",
                "skill://acme/billing/refunds/SKILL.md",
                "skill://kb/acme/billing/refunds/SKILL.md",
            ),
            ("kb", "skill://refunds", "skill://kb/refunds"),
            ("kb", "skill://{+path}", "skill://kb/{+path}"),
        ] {
            assert_eq!(
                local_uri(namespace, upstream).as_deref(),
                Some(local),
                "{upstream}"
            );
            assert_eq!(
                split_local_uri(local),
                Some((namespace, upstream.to_owned())),
                "{local}"
            );
        }
    }

    #[test]
    fn what_cannot_be_named_is_refused() {
        assert_eq!(local_uri("fs", "no-scheme"), None);
        assert_eq!(local_uri("fs", "{scheme}://x"), None);
        assert_eq!(local_uri("app", "ui://"), None);
        assert_eq!(local_uri("app", "ui:///x"), None);
        assert_eq!(split_local_uri("file:///x"), None);
        assert_eq!(split_local_uri("Bad+file:///x"), None);
        assert_eq!(split_local_uri("ui://app"), None);
        assert_eq!(split_local_uri("ui://app/"), None);
        assert_eq!(split_local_uri("ui://Bad/x"), None);
        assert_eq!(split_local_uri("skill://a+b/x"), None);
    }

    #[test]
    fn namespaces_are_lowercase_words() {
        assert!(valid_namespace("git"));
        assert!(valid_namespace("a-1"));
        assert!(!valid_namespace("1a"));
        assert!(!valid_namespace("A"));
        assert!(!valid_namespace("a.b"));
        assert!(!valid_namespace(&"a".repeat(MAX_NAMESPACE + 1)));
    }
}
