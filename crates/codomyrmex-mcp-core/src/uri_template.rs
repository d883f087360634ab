//! RFC 6570 URI templates: expansion-free matching of concrete URIs against templates.
//!
//! Supported expressions: `{var}` (simple: matches one or more characters other than `/`, `?`,
//! `#` and `,`), `{+var}` (reserved: matches anything, including `/`), `{#var}` (fragment),
//! `{/var}` (a path segment), and `{?a,b}` / `{&a,b}` (query parameters, each optional and in
//! any order). Matching is linear in the URI's length and never backtracks exponentially.

use std::collections::BTreeMap;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{var}`, `{+var}`, `{#var}`, `{/var}`.
    Var {
        name: String,
        op: Op,
    },
    /// `{?a,b}` or `{&a,b}`: trailing query parameters.
    Query(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Segment,
}

/// Why a template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct UriTemplateError {
    template: String,
    reason: &'static str,
}

fn valid_var(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%')
}

impl UriTemplate {
    /// Parses a template.
    pub fn parse(template: &str) -> Result<Self, UriTemplateError> {
        let err = |reason| UriTemplateError {
            template: template.to_owned(),
            reason,
        };
        if template.len() > 2048 {
            return Err(err("longer than 2048 bytes"));
        }
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                None => {
                    if rest.contains('}') {
                        return Err(err("unmatched '}'"));
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(i) => {
                    if i > 0 {
                        if rest[..i].contains('}') {
                            return Err(err("unmatched '}'"));
                        }
                        parts.push(Part::Literal(rest[..i].to_owned()));
                    }
                    let after = &rest[i + 1..];
                    let end = after.find('}').ok_or_else(|| err("unclosed '{'"))?;
                    let expr = &after[..end];
                    let (op, names) = match expr.chars().next() {
                        Some('+') => (Some(Op::Reserved), &expr[1..]),
                        Some('#') => (Some(Op::Fragment), &expr[1..]),
                        Some('/') => (Some(Op::Segment), &expr[1..]),
                        Some('?') | Some('&') => (None, &expr[1..]),
                        _ => (Some(Op::Simple), expr),
                    };
                    let names: Vec<String> = names
                        .split(',')
                        .map(|n| n.trim_end_matches('*').to_owned())
                        .collect();
                    if names.iter().any(|n| !valid_var(n)) {
                        return Err(err("invalid variable name"));
                    }
                    match op {
                        Some(op) => {
                            if names.len() != 1 {
                                return Err(err(
                                    "only single-variable path expressions are supported",
                                ));
                            }
                            if let Some(Part::Var { .. }) = parts.last() {
                                return Err(err(
                                    "two adjacent variables cannot be matched unambiguously",
                                ));
                            }
                            parts.push(Part::Var {
                                name: names[0].clone(),
                                op,
                            });
                        }
                        None => parts.push(Part::Query(names)),
                    }
                    rest = &after[end + 1..];
                }
            }
        }
        if let Some(pos) = parts.iter().position(|p| matches!(p, Part::Query(_)))
            && pos + 1 != parts.len()
        {
            return Err(err("a query expression must come last"));
        }
        Ok(Self {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for p in &self.parts {
            match p {
                Part::Var { name, .. } => out.push(name.as_str()),
                Part::Query(names) => out.extend(names.iter().map(String::as_str)),
                Part::Literal(_) => {}
            }
        }
        out
    }

    /// Matches `uri`, returning the (percent-decoded) variable values.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var { name, op } => {
                    let mut r = rest;
                    match op {
                        Op::Fragment => r = r.strip_prefix('#')?,
                        Op::Segment => r = r.strip_prefix('/')?,
                        _ => {}
                    }
                    // The value runs to the next literal (or the query, or the end).
                    let stop = |c: char| match op {
                        Op::Simple => matches!(c, '/' | '?' | '#' | ','),
                        Op::Segment => matches!(c, '/' | '?' | '#'),
                        Op::Reserved => false,
                        Op::Fragment => false,
                    };
                    // A trailing query expression starts at the first `?`: no value before it
                    // runs into it, not even a reserved one (which may hold `?` otherwise).
                    let limit = match self.parts.last() {
                        Some(Part::Query(_)) => r.find(|c| c == '?' || stop(c)),
                        _ => r.find(stop),
                    }
                    .unwrap_or(r.len());
                    let end = match self.parts.get(i + 1) {
                        // Reserved values may contain the literal; take the last occurrence so
                        // `{+path}.json` matches `a.b.json`.
                        Some(Part::Literal(l)) if matches!(op, Op::Reserved | Op::Fragment) => {
                            r[..limit].rfind(l.as_str())?
                        }
                        Some(Part::Literal(l)) => r[..limit].find(l.as_str()).or_else(|| {
                            (limit < r.len() && r[limit..].starts_with(l.as_str())).then_some(limit)
                        })?,
                        // The query is optional: the value ends where it starts, if it is there.
                        Some(Part::Query(_)) => r[..limit].find('?').unwrap_or(limit),
                        _ => limit,
                    };
                    if end == 0 {
                        return None;
                    }
                    vars.insert(name.clone(), percent_decode(&r[..end])?);
                    rest = &r[end..];
                }
                Part::Query(names) => {
                    if rest.is_empty() {
                        return Some(vars);
                    }
                    let q = rest.strip_prefix('?')?;
                    for pair in q.split('&') {
                        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                        if names.iter().any(|n| n == k) {
                            vars.insert(k.to_owned(), percent_decode(v)?);
                        } else {
                            return None;
                        }
                    }
                    rest = "";
                }
            }
            i += 1;
        }
        rest.is_empty().then_some(vars)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Exactly two hex digits: `from_str_radix` alone would also take a sign (`%+f`).
            let hex = s.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t)
            .unwrap()
            .matches(uri)
            .map(|v| v.into_iter().collect())
    }

    fn kv(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn simple_variables() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/data"),
            kv(&[("id", "123")])
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/datax"),
            None
        );
        assert_eq!(
            m("users/{a}-{b}", "users/x-y"),
            kv(&[("a", "x"), ("b", "y")])
        );
        assert_eq!(
            m("x/{name}", "x/hello%20world"),
            kv(&[("name", "hello world")])
        );
        assert_eq!(m("x/{name}", "x/bad%zz"), None);
    }

    #[test]
    fn reserved_and_query() {
        assert_eq!(
            m("file:///{+path}", "file:///a/b/c.txt"),
            kv(&[("path", "a/b/c.txt")])
        );
        assert_eq!(
            m("file:///{+path}.json", "file:///a.b.json"),
            kv(&[("path", "a.b")])
        );
        assert_eq!(
            m("search{?q,lang}", "search?lang=en&q=rust"),
            kv(&[("lang", "en"), ("q", "rust")])
        );
        assert_eq!(m("search{?q,lang}", "search"), kv(&[]));
        assert_eq!(m("search{?q}", "search?evil=1"), None);
        assert_eq!(m("a{/seg}/b", "a/x/b"), kv(&[("seg", "x")]));
    }

    #[test]
    fn bad_templates_are_refused() {
        for t in ["a{b", "a}b", "{}", "{a b}", "{a}{b}", "x{?q}/y", "{+a,b}"] {
            assert!(UriTemplate::parse(t).is_err(), "{t}");
        }
        assert_eq!(
            UriTemplate::parse("a/{x}/{+y}{?z}").unwrap().variables(),
            ["x", "y", "z"]
        );
    }

    #[test]
    fn query_expressions_are_optional_after_any_variable() {
        // Regression: a variable followed by `{?...}` matched only when a query was present.
        assert_eq!(m("search/{id}{?q}", "search/5"), kv(&[("id", "5")]));
        assert_eq!(
            m("search/{id}{?q}", "search/5?q=x"),
            kv(&[("id", "5"), ("q", "x")])
        );
        assert_eq!(
            m("file:///{+path}{?v}", "file:///a/b"),
            kv(&[("path", "a/b")])
        );
        assert_eq!(
            m("file:///{+path}{?v}", "file:///a/b?v=2"),
            kv(&[("path", "a/b"), ("v", "2")])
        );
        assert_eq!(m("a{/seg}{?q}", "a/x"), kv(&[("seg", "x")]));
    }

    #[test]
    fn reserved_values_stop_at_a_trailing_query() {
        // Regression (found by the uri_template fuzz target): a reserved value followed by a
        // literal took the literal's last occurrence, even inside the query, so the query
        // expression never matched.
        assert_eq!(
            m("file:///{+path}.json{?v}", "file:///a.json?v=x.json"),
            kv(&[("path", "a"), ("v", "x.json")])
        );
        assert_eq!(
            m("x/{+p}={?q}", "x/a/b=?q=c%3Dd=e"),
            kv(&[("p", "a/b"), ("q", "c=d=e")])
        );
        // Without a query expression a reserved value may still hold `?`.
        assert_eq!(m("x/{+p}", "x/a?b"), kv(&[("p", "a?b")]));
    }

    #[test]
    fn percent_escapes_need_two_hex_digits() {
        // Regression: `u8::from_str_radix` accepts a leading sign, so `%+f` decoded to 0x0f.
        assert_eq!(m("x/{name}", "x/%+f"), None);
        assert_eq!(m("x/{name}", "x/%-1"), None);
        assert_eq!(m("x/{name}", "x/%2f"), kv(&[("name", "/")]));
    }

    #[test]
    fn long_inputs_are_linear() {
        let t = UriTemplate::parse("p/{a}/q").unwrap();
        let uri = format!("p/{}/r", "x".repeat(100_000));
        assert!(t.matches(&uri).is_none());
    }
}
