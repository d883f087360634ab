//! Portable names (`name_style = "portable"`): the one mapping from the names `serve` and the
//! gateway give tools and prompts (`module.tool`, `NAMESPACE.tool`) onto names every model
//! API accepts, `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's and Anthropic's rule for tool names).
//!
//! The mapping, applied to the whole dotted name (`everything.echo`):
//! 1. each `.` becomes the separator (`name_separator`, `__` by default: 1 to 8 characters
//!    of `A-Z a-z 0-9 _ -`);
//! 2. `A-Z a-z 0-9 _ -` stay as they are;
//! 3. any other character becomes `_x` and two lowercase hex digits per UTF-8 byte (`/` is
//!    `_x2f`);
//! 4. a result longer than 64 characters is shortened: its first 55 characters, `_`, and
//!    the first 8 hex digits of the SHA-256 of the dotted name, 64 in all.
//!
//! [`Naming::decode`] inverts steps 1 to 3 (separator back to `.`, `_xHH` back to its byte);
//! it gives back the original of every name of at most 64 characters that holds neither the
//! separator nor `_x` and two hex digits itself. A shortened name's original is not what it
//! decodes to: the way back is the server's own table (the gateway routes each mounted name
//! to its upstream's name, and `gateway --check` prints both, marking the names the rule
//! does not turn back). Two names whose portable forms are the same are never merged: the later one is
//! left out and reported (`--check`, and a warning when serving).
//!
//! URIs are not names: resources and templates keep their schemes in either style. Skill
//! names already match (the Agent Skills rules allow `a-z 0-9 -`, at most 64).

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The longest portable name.
pub const MAX_PORTABLE: usize = 64;
/// The separator unless `name_separator` says otherwise.
pub const DEFAULT_SEPARATOR: &str = "__";
/// The longest separator.
const MAX_SEPARATOR: usize = 8;
/// How many characters of the name a shortened name keeps.
const SHORTENED_KEEP: usize = MAX_PORTABLE - 9;

/// How tool and prompt names are spelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NameStyle {
    /// `module.tool`, `NAMESPACE.tool` (the default).
    #[default]
    Dotted,
    /// Only `^[a-zA-Z0-9_-]{1,64}$` (see the [module](self)).
    Portable,
}

impl NameStyle {
    /// Whether it is the default, dotted style.
    pub fn is_dotted(&self) -> bool {
        *self == Self::Dotted
    }
}

/// Whether `separator` is the default one.
pub fn is_default_separator(separator: &str) -> bool {
    separator == DEFAULT_SEPARATOR
}

/// A name style with its separator: the one mapping of names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    style: NameStyle,
    separator: String,
}

impl Default for Naming {
    fn default() -> Self {
        Self {
            style: NameStyle::Dotted,
            separator: DEFAULT_SEPARATOR.to_owned(),
        }
    }
}

/// Whether `name` is a portable name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_portable(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_PORTABLE && name.bytes().all(portable_byte)
}

fn portable_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

impl Naming {
    /// `style` with `separator` (`None`: `__`); refuses a separator that is not 1 to 8
    /// characters of `A-Z a-z 0-9 _ -`.
    pub fn new(style: NameStyle, separator: Option<&str>) -> Result<Self, String> {
        let separator = separator.unwrap_or(DEFAULT_SEPARATOR);
        if separator.is_empty()
            || separator.len() > MAX_SEPARATOR
            || !separator.bytes().all(portable_byte)
        {
            return Err(format!(
                "name_separator {separator:?} must be 1 to {MAX_SEPARATOR} characters of \
                 A-Z, a-z, 0-9, '_' and '-'"
            ));
        }
        Ok(Self {
            style,
            separator: separator.to_owned(),
        })
    }

    /// The style.
    pub fn style(&self) -> NameStyle {
        self.style
    }

    /// The separator (used in the portable style only).
    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// Whether names are mapped.
    pub fn is_portable(&self) -> bool {
        self.style == NameStyle::Portable
    }

    /// The name clients see for the dotted name `name`: `name` itself in the dotted style,
    /// its portable form otherwise.
    pub fn local(&self, name: &str) -> String {
        if !self.is_portable() {
            return name.to_owned();
        }
        let mut out = String::with_capacity(name.len() + 8);
        for c in name.chars() {
            if c == '.' {
                out.push_str(&self.separator);
            } else if c.is_ascii() && portable_byte(c as u8) {
                out.push(c);
            } else {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("_x{b:02x}"));
                }
            }
        }
        if out.is_empty() {
            // Only an empty name maps to nothing; it is not a name, so keep it visible.
            return shortened("", name);
        }
        if out.len() > MAX_PORTABLE {
            return shortened(&out, name);
        }
        out
    }

    /// The local name of `name` mounted under `namespace`.
    pub fn join(&self, namespace: &str, name: &str) -> String {
        self.local(&format!("{namespace}.{name}"))
    }

    /// The dotted name of at most 64 characters that maps to the portable `name` (steps 1 to
    /// 3 undone); `None` when no name does. A shortened name's original is longer, so it is
    /// not this one (see the [module](self)).
    pub fn decode(&self, name: &str) -> Option<String> {
        if !self.is_portable() {
            return Some(name.to_owned());
        }
        if !is_portable(name) {
            return None;
        }
        let mut bytes = Vec::with_capacity(name.len());
        let mut rest = name;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix(self.separator.as_str()) {
                bytes.push(b'.');
                rest = after;
            } else if let Some(b) = rest
                .strip_prefix("_x")
                .and_then(|h| h.get(..2))
                .filter(|h| h.bytes().all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f')))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                bytes.push(b);
                rest = &rest[4..];
            } else {
                bytes.push(rest.as_bytes()[0]);
                rest = &rest[1..];
            }
        }
        let decoded = String::from_utf8(bytes).ok()?;
        // Only what maps back to `name` is its origin (a shortened name never does).
        (self.local(&decoded) == name).then_some(decoded)
    }
}

/// A name over [`MAX_PORTABLE`]: its first characters, `_`, and 8 hex digits of the
/// SHA-256 of the dotted name it came from.
fn shortened(mapped: &str, dotted: &str) -> String {
    let digest = sha2::Sha256::digest(dotted.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = &mapped[..mapped.len().min(SHORTENED_KEEP)];
    format!("{keep}_{hex}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn portable(sep: Option<&str>) -> Naming {
        Naming::new(NameStyle::Portable, sep).unwrap()
    }

    #[test]
    fn dotted_names_keep_their_spelling() {
        let n = Naming::default();
        assert_eq!(n.local("file_system.read"), "file_system.read");
        assert_eq!(n.join("everything", "echo"), "everything.echo");
    }

    #[test]
    fn dots_become_the_separator_and_round_trip() {
        let n = portable(None);
        for (dotted, local) in [
            ("everything.echo", "everything__echo"),
            ("file_system.read", "file_system__read"),
            ("a.b.c-d", "a__b__c-d"),
        ] {
            assert_eq!(n.local(dotted), local);
            assert!(is_portable(local));
            assert_eq!(n.decode(local).as_deref(), Some(dotted));
        }
        let n = portable(Some("-"));
        assert_eq!(n.join("fs", "read_file"), "fs-read_file");
    }

    #[test]
    fn other_characters_are_escaped_reversibly() {
        let n = portable(None);
        for dotted in ["repo/file_system.read", "caf\u{e9}.menu", "a:b c"] {
            let local = n.local(dotted);
            assert!(is_portable(&local), "{local}");
            assert_eq!(n.decode(&local).as_deref(), Some(dotted));
        }
        assert_eq!(n.local("a/b"), "a_x2fb");
    }

    #[test]
    fn long_names_are_shortened_to_64_with_a_digest() {
        let n = portable(None);
        let long = format!("ns.{}", "x".repeat(100));
        let local = n.local(&long);
        assert_eq!(local.len(), MAX_PORTABLE);
        assert!(is_portable(&local));
        assert!(local.starts_with("ns__xxx"));
        // Distinct long names stay distinct, and a shortened name does not decode to its
        // original: only a table turns it back.
        let other = n.local(&format!("ns.{}y", "x".repeat(100)));
        assert_ne!(local, other);
        assert_ne!(n.decode(&local).as_deref(), Some(long.as_str()));
        // Exactly 64 is not shortened.
        let exact = format!("n.{}", "y".repeat(61));
        assert_eq!(n.local(&exact).len(), 64);
        assert_eq!(n.decode(&n.local(&exact)).as_deref(), Some(exact.as_str()));
    }

    #[test]
    fn bad_separators_are_refused() {
        for sep in ["", ".", "a.b", "ninechars", "é"] {
            assert!(
                Naming::new(NameStyle::Portable, Some(sep)).is_err(),
                "{sep}"
            );
        }
        assert!(Naming::new(NameStyle::Portable, Some("_-_")).is_ok());
    }

    #[test]
    fn names_that_merge_are_told_apart_by_decode() {
        // `a__b` and `a.b` map to the same portable name; only one decodes to each.
        let n = portable(None);
        assert_eq!(n.local("a__b"), n.local("a.b"));
        assert_eq!(n.decode("a__b").as_deref(), Some("a.b"));
    }
}
