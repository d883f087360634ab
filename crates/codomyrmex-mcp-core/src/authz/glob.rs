//! Name patterns: `*` stands for any run of characters (none included, `/` and `.`
//! included), `?` for exactly one; every other character stands for itself. A pattern
//! matches a whole name, never a part of one. The one matcher of names in the workspace:
//! authorization rules use it, and so do the gateway's `include`/`exclude` lists.

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN: usize = 1024;

/// The longest name a pattern is tried against, in bytes; a longer name matches no pattern
/// (a client-sent URI could otherwise make each match cost its length times the pattern's).
pub const MAX_NAME: usize = 16 * 1024;

/// A checked pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    chars: Vec<char>,
    /// The same, as bytes (used when the pattern and the name are both ASCII).
    bytes: Vec<u8>,
    /// The pattern has no wildcard: compared as a string.
    literal: Option<String>,
}

impl Glob {
    /// Checks `pattern`: not empty, at most [`MAX_PATTERN`] bytes, no control characters.
    pub fn new(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("a pattern is empty (use \"*\" for every name)".into());
        }
        if pattern.len() > MAX_PATTERN {
            return Err(format!(
                "a pattern is longer than {MAX_PATTERN} bytes: {:?}…",
                pattern.chars().take(32).collect::<String>()
            ));
        }
        if pattern.chars().any(char::is_control) {
            return Err(format!("the pattern {pattern:?} holds a control character"));
        }
        let literal = (!pattern.contains(['*', '?'])).then(|| pattern.to_owned());
        Ok(Self {
            chars: pattern.chars().collect(),
            bytes: pattern.as_bytes().to_vec(),
            literal,
        })
    }

    /// Whether the whole of `name` matches: linear in practice (greedy, backtracking only to
    /// the last `*`), and never more than the pattern's length times the name's.
    pub fn matches(&self, name: &str) -> bool {
        if let Some(l) = &self.literal {
            return l == name;
        }
        if name.len() > MAX_NAME {
            return false;
        }
        if name.is_ascii() && self.bytes.is_ascii() {
            // The common case, without allocating: an ASCII byte is a character.
            return wild(&self.bytes, name.as_bytes(), b'*', b'?');
        }
        let name: Vec<char> = name.chars().collect();
        wild(&self.chars, &name, '*', '?')
    }
}

/// Whether all of `name` matches `p`, `star` standing for any run and `one` for one item:
/// greedy, backtracking only to the last `star`.
fn wild<T: Copy + PartialEq>(p: &[T], name: &[T], star: T, one: T) -> bool {
    let (mut i, mut j) = (0usize, 0usize);
    let mut last: Option<(usize, usize)> = None;
    while i < name.len() {
        match p.get(j) {
            Some(c) if *c == star => {
                last = Some((j, i));
                j += 1;
            }
            Some(c) if *c == one || *c == name[i] => {
                i += 1;
                j += 1;
            }
            _ => match last {
                Some((sj, si)) => {
                    j = sj + 1;
                    i = si + 1;
                    last = Some((sj, si + 1));
                }
                None => return false,
            },
        }
    }
    p[j..].iter().all(|c| *c == star)
}
