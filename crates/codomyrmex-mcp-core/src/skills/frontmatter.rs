//! A `SKILL.md`'s YAML frontmatter, read into a JSON object.
//!
//! Why not a YAML crate: none is in the workspace's lock file, frontmatter is a few lines of
//! `key: value`, and the extension requires the entry's `frontmatter` to be *identical in
//! content* to what a host's YAML parser makes of the file. A full parser would accept YAML
//! whose JSON rendering hosts disagree on (timestamps, `0x` numbers, anchors, tags, merge
//! keys); this reader accepts a bounded subset whose rendering is unambiguous and refuses the
//! rest with an error that says what to change (usually: quote the value):
//!
//! - block mappings (nested by indentation, at most [`MAX_DEPTH`] levels), unique plain keys;
//! - block sequences of scalars (`- item`);
//! - scalars: double-quoted (JSON-like escapes and YAML's `\x`, `\U`), single-quoted (`''`),
//!   plain (a comment after ` #` dropped; continuation lines folded with a space), literal `|`
//!   and folded `>` block scalars with `-`/`+` chomping;
//! - plain scalars are typed as YAML 1.2's core schema types them: `null`/`~`/empty, `true`/
//!   `false`, decimal integers and floats; anything else plain is a string.
//!
//! Refused: flow collections (`[`, `{`), anchors, aliases and tags (`&`, `*`, `!`),
//! directives, plain values that YAML would read as something else here (timestamps, `0x`/`0o`
//! numbers, `.inf`/`.nan`, `: ` inside a plain value), tabs in indentation, and frontmatter
//! longer than [`MAX_FRONTMATTER_BYTES`].

use serde_json::{Map, Number, Value};

/// The longest frontmatter block read, in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The deepest nesting of mappings.
pub const MAX_DEPTH: usize = 8;

/// Why a `SKILL.md`'s frontmatter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not begin with a `---` line.
    #[error("SKILL.md must begin with YAML frontmatter: a first line of ---")]
    Missing,
    /// No closing `---` line.
    #[error("SKILL.md frontmatter has no closing --- line")]
    Unterminated,
    /// The block is too long.
    #[error("SKILL.md frontmatter is longer than {MAX_FRONTMATTER_BYTES} bytes")]
    TooLong,
    /// The file is not UTF-8.
    #[error("SKILL.md is not UTF-8")]
    NotUtf8,
    /// A line this reader does not accept.
    #[error("SKILL.md frontmatter line {line}: {reason}")]
    Line {
        /// 1-based line number in the file.
        line: usize,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// The frontmatter of `skill_md` as a JSON object (see the module docs for the subset read).
pub fn parse(skill_md: &[u8]) -> Result<Map<String, Value>, FrontmatterError> {
    let text = std::str::from_utf8(skill_md).map_err(|_| FrontmatterError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next() != Some("---") {
        return Err(FrontmatterError::Missing);
    }
    let mut body = Vec::new();
    let mut bytes = 0usize;
    let mut closed = false;
    for l in lines {
        if l.trim_end_matches([' ', '\t']) == "---" {
            closed = true;
            break;
        }
        bytes += l.len() + 1;
        if bytes > MAX_FRONTMATTER_BYTES {
            return Err(FrontmatterError::TooLong);
        }
        body.push(l);
    }
    if !closed {
        return Err(FrontmatterError::Unterminated);
    }
    let mut p = Parser {
        lines: body,
        pos: 0,
    };
    let map = p.mapping(0, 0)?;
    p.skip_blank();
    if p.pos < p.lines.len() {
        return Err(p.err("unexpected indentation"));
    }
    Ok(map)
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '\t']);
    t.is_empty() || t.starts_with('#')
}

impl<'a> Parser<'a> {
    fn err(&self, reason: impl Into<String>) -> FrontmatterError {
        FrontmatterError::Line {
            // +2: the opening --- is line 1.
            line: self.pos + 2,
            reason: reason.into(),
        }
    }

    fn skip_blank(&mut self) {
        while self.pos < self.lines.len() && is_blank(self.lines[self.pos]) {
            self.pos += 1;
        }
    }

    /// The next non-blank line's indentation, if any.
    fn peek_indent(&mut self) -> Result<Option<usize>, FrontmatterError> {
        self.skip_blank();
        let Some(line) = self.lines.get(self.pos) else {
            return Ok(None);
        };
        if line.starts_with(' ') && line.trim_start_matches(' ').starts_with('\t')
            || line.starts_with('\t')
        {
            return Err(self.err("tabs are not allowed in indentation"));
        }
        Ok(Some(indent_of(line)))
    }

    /// A block mapping whose keys are at `indent`.
    fn mapping(
        &mut self,
        indent: usize,
        depth: usize,
    ) -> Result<Map<String, Value>, FrontmatterError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("mappings nest deeper than {MAX_DEPTH} levels")));
        }
        let mut map = Map::new();
        while let Some(ind) = self.peek_indent()? {
            if ind < indent {
                break;
            }
            if ind > indent {
                return Err(self.err("unexpected indentation"));
            }
            let line = &self.lines[self.pos][ind..];
            if line.starts_with("- ") || line == "-" {
                return Err(self.err("a sequence item where a mapping key was expected"));
            }
            let (key, rest) = split_key(line).ok_or_else(|| {
                self.err("expected `key: value` (a plain key, then a colon and a space)")
            })?;
            if map.contains_key(key) {
                return Err(self.err(format!("duplicate key {key:?}")));
            }
            let key = key.to_owned();
            self.pos += 1;
            let value = self.value(rest, indent, depth)?;
            map.insert(key, value);
        }
        Ok(map)
    }

    /// The value after `key:` on a line of a mapping at `indent`.
    fn value(
        &mut self,
        rest: &str,
        indent: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        let rest = strip_comment(rest).trim();
        if rest.is_empty() {
            // A nested mapping, a sequence, or null.
            return match self.peek_indent()? {
                Some(ind) if ind > indent && self.item_at(ind) => {
                    Ok(Value::Array(self.sequence(ind)?))
                }
                Some(ind) if ind > indent => Ok(Value::Object(self.mapping(ind, depth + 1)?)),
                Some(ind) if ind == indent && self.item_at(ind) => {
                    Ok(Value::Array(self.sequence(ind)?))
                }
                _ => Ok(Value::Null),
            };
        }
        if let Some(header) = rest.strip_prefix('|') {
            return self.block_scalar(header, indent, true).map(Value::String);
        }
        if let Some(header) = rest.strip_prefix('>') {
            return self.block_scalar(header, indent, false).map(Value::String);
        }
        self.scalar(rest, indent)
    }

    fn item_at(&self, ind: usize) -> bool {
        let line = &self.lines[self.pos][ind..];
        line.starts_with("- ") || line == "-"
    }

    /// A block sequence of scalars, its `-` at `indent`.
    fn sequence(&mut self, indent: usize) -> Result<Vec<Value>, FrontmatterError> {
        let mut items = Vec::new();
        while let Some(ind) = self.peek_indent()? {
            if ind != indent || !self.item_at(ind) {
                if ind > indent {
                    return Err(self.err("unexpected indentation in a sequence"));
                }
                break;
            }
            let item = self.lines[self.pos][ind + 1..].trim_start();
            let item = strip_comment(item).trim();
            self.pos += 1;
            if item.is_empty() {
                return Err(self.err("an empty or nested sequence item; write scalars only"));
            }
            if split_key(item).is_some() {
                return Err(self.err("mappings inside sequences are not supported"));
            }
            if item.starts_with('|') || item.starts_with('>') {
                return Err(self.err("block scalars inside sequences are not supported"));
            }
            items.push(self.scalar(item, indent)?);
        }
        Ok(items)
    }

    /// A scalar that starts on the current line's `text`; plain scalars may continue on more
    /// indented lines.
    fn scalar(&mut self, text: &str, indent: usize) -> Result<Value, FrontmatterError> {
        let line = self.pos.saturating_sub(1);
        let err = |reason: String| FrontmatterError::Line {
            line: line + 2,
            reason,
        };
        if text.starts_with('"') {
            return double_quoted(text).map(Value::String).map_err(err);
        }
        if text.starts_with('\'') {
            return single_quoted(text).map(Value::String).map_err(err);
        }
        if let Some(c) = text.chars().next()
            && "[]{}&*!%@`,?".contains(c)
        {
            return Err(err(format!(
                "a value starting with {c:?} (flow collections, anchors, aliases, tags and \
                 reserved indicators are not supported); quote it"
            )));
        }
        if text.contains(": ") || text.ends_with(':') {
            return Err(err("a plain value containing \": \"; quote it".into()));
        }
        // Continuation lines of a multi-line plain scalar.
        let mut joined = text.to_owned();
        let mut continued = false;
        loop {
            let save = self.pos;
            match self.peek_indent()? {
                Some(ind) if ind > indent => {
                    let next = strip_comment(self.lines[self.pos][ind..].trim_end()).trim_end();
                    if split_key(next).is_some() || next.starts_with("- ") {
                        return Err(self.err("unexpected indentation"));
                    }
                    // Blank lines between continuation lines would be newlines; refuse.
                    if self.pos != save {
                        return Err(
                            self.err("a blank line inside a plain value; use a block scalar")
                        );
                    }
                    joined.push(' ');
                    joined.push_str(next);
                    continued = true;
                    self.pos += 1;
                }
                _ => {
                    self.pos = save;
                    break;
                }
            }
        }
        if continued {
            return Ok(Value::String(joined));
        }
        plain(&joined).map_err(err)
    }

    /// A `|` (literal) or `>` (folded) block scalar with `header` (chomping) after it.
    fn block_scalar(
        &mut self,
        header: &str,
        indent: usize,
        literal: bool,
    ) -> Result<String, FrontmatterError> {
        let chomp = match strip_comment(header).trim() {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            _ => return Err(self.err("block scalar indentation indicators are not supported")),
        };
        let mut raw: Vec<&str> = Vec::new();
        let mut block_indent = None;
        while let Some(line) = self.lines.get(self.pos) {
            let trimmed = line.trim_start_matches(' ');
            if trimmed.is_empty() {
                raw.push("");
                self.pos += 1;
                continue;
            }
            let ind = indent_of(line);
            let want = *block_indent.get_or_insert(ind);
            if ind <= indent || ind < want {
                break;
            }
            if trimmed.starts_with('\t') {
                return Err(self.err("tabs are not allowed in indentation"));
            }
            if !literal && ind > want {
                return Err(self.err("more-indented lines in a folded (>) scalar; use |"));
            }
            raw.push(&line[want..]);
            self.pos += 1;
        }
        // Trailing empty lines belong to chomping.
        let mut trailing = 0;
        while raw.last() == Some(&"") {
            raw.pop();
            trailing += 1;
        }
        let mut out = String::new();
        for (i, l) in raw.iter().enumerate() {
            if i > 0 {
                if literal {
                    out.push('\n');
                } else if l.is_empty() {
                    // Folding: an empty line is a newline, the break before it dropped.
                    out.push('\n');
                    continue;
                } else if !raw[i - 1].is_empty() {
                    out.push(' ');
                }
            }
            out.push_str(l);
        }
        if !raw.is_empty() {
            match chomp {
                Chomp::Strip => {}
                Chomp::Clip => out.push('\n'),
                Chomp::Keep => out.push_str(&"\n".repeat(trailing + 1)),
            }
        }
        Ok(out)
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// `key` and what follows `key:` when `line` is a mapping entry with a plain key.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(i) = line.find(": ") {
        (&line[..i], &line[i + 1..])
    } else if let Some(k) = line.strip_suffix(':') {
        (k, "")
    } else {
        return None;
    };
    let ok = !key.is_empty()
        && !key.starts_with(['"', '\'', '-', '#', '?', '[', '{', '&', '*', '!', '|', '>'])
        && !key.contains(" #")
        && key.trim() == key;
    ok.then_some((key, rest))
}

/// `text` without a trailing ` # comment` (outside quotes).
fn strip_comment(text: &str) -> &str {
    if text.starts_with('"') || text.starts_with('\'') {
        return text;
    }
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn plain(text: &str) -> Result<Value, String> {
    let t = text.trim();
    match t {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let lower = t.to_ascii_lowercase();
    if lower.starts_with("0x")
        || lower.starts_with("0o")
        || lower.trim_start_matches(['+', '-']).starts_with(".inf")
        || lower == ".nan"
    {
        return Err(format!("{t:?} would be read as a special number; quote it"));
    }
    if looks_like_timestamp(t) {
        return Err(format!("{t:?} would be read as a timestamp; quote it"));
    }
    if is_int(t) {
        if let Ok(i) = t.parse::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        return Err(format!(
            "{t:?} is an integer too large to render exactly; quote it"
        ));
    }
    if is_float(t) {
        return t
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{t:?} is not a finite number; quote it"));
    }
    Ok(Value::String(t.to_owned()))
}

fn is_int(t: &str) -> bool {
    let d = t.strip_prefix(['+', '-']).unwrap_or(t);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

fn is_float(t: &str) -> bool {
    let d = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mant, exp) = match d.find(['e', 'E']) {
        Some(i) => (&d[..i], Some(&d[i + 1..])),
        None => (d, None),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], Some(&mant[i + 1..])),
        None => (mant, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mant_ok = digits(int)
        && frac.is_none_or(digits)
        && !(int.is_empty() && frac.is_none_or(str::is_empty));
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mant_ok && exp_ok && (frac.is_some() || exp.is_some())
}

/// `YYYY-MM-DD` at the start: YAML 1.1 parsers (js-yaml among them) read these as dates.
fn looks_like_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 8
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5].is_ascii_digit()
        && (b[6] == b'-' || b[6].is_ascii_digit())
}

fn double_quoted(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                let rest = strip_comment(text[1 + i + 1..].trim_start());
                if !rest.trim().is_empty() {
                    return Err("text after a closing quote".into());
                }
                return Ok(out);
            }
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    ' ' => out.push(' '),
                    'x' | 'u' | 'U' => {
                        let digits = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.by_ref().take(digits).map(|(_, c)| c).collect();
                        let c = (hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                            .then(|| u32::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("a \\{e} escape that is not a character"))?;
                        out.push(c);
                    }
                    other => return Err(format!("the escape \\{other} is not supported")),
                }
            }
            c => out.push(c),
        }
    }
    Err("a double-quoted value must close on its line".into())
}

fn single_quoted(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let body = &text[1..];
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, c)| *c) == Some('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let rest = strip_comment(body[i + 1..].trim_start());
            if !rest.trim().is_empty() {
                return Err("text after a closing quote".into());
            }
            return Ok(out);
        }
        out.push(c);
    }
    Err("a single-quoted value must close on its line".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(text: &str) -> Result<Value, FrontmatterError> {
        parse(text.as_bytes()).map(Value::Object)
    }

    #[test]
    fn reads_the_common_shapes() {
        let v = fm("---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\n---\n# Body\n").unwrap();
        assert_eq!(
            v,
            json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "license": "Apache-2.0"})
        );
        let v = fm("---\r\nname: a # a comment\r\n# whole-line comment\r\ndescription: \"quoted: \\\"yes\\\"\"\r\nmetadata:\r\n  version: 2.1\r\n  author: 'O''Brien'\r\n  nested:\r\n    flag: true\r\n    none: ~\r\n    count: 12\r\ntags:\r\n- x\r\n- 'y'\r\nallowed-tools: Bash(git:*) Read\r\n---\r\n").unwrap();
        assert_eq!(
            v,
            json!({
                "name": "a", "description": "quoted: \"yes\"",
                "metadata": {"version": 2.1, "author": "O'Brien", "nested": {"flag": true, "none": null, "count": 12}},
                "tags": ["x", "y"],
                "allowed-tools": "Bash(git:*) Read"
            })
        );
    }

    #[test]
    fn reads_block_and_multi_line_scalars() {
        let v = fm("---\nname: a\ndescription: >-\n  one\n  two\n\n  three\nbody: |\n  line 1\n    indented\n\nafter: x\nwrapped: first\n  second\n---\n").unwrap();
        assert_eq!(v["description"], json!("one two\nthree"));
        assert_eq!(v["body"], json!("line 1\n  indented\n"));
        assert_eq!(v["after"], json!("x"));
        assert_eq!(v["wrapped"], json!("first second"));
    }

    #[test]
    fn reads_yaml_hex_escapes() {
        // YAML's \x, \u and \U escapes name one character each: every host reads them alike.
        let v = fm("---\nd: \"a\\x1b]\\x07\\u202e\\U0001F600\"\n---\n").unwrap();
        assert_eq!(v["d"], json!("a\u{1b}]\u{7}\u{202e}\u{1F600}"));
        for bad in [
            "\\x1",
            "\\x+1",
            "\\u+123",
            "\\UFFFFFFFF",
            "\\ud800",
            "\\xzz",
        ] {
            let text = format!("---\nd: \"{bad}\"\n---\n");
            assert!(fm(&text).is_err(), "{text:?} was read");
        }
    }

    #[test]
    fn refuses_what_hosts_could_read_differently() {
        for (text, needle) in [
            ("name: a\n", "begin"),
            ("---\nname: a\n", "closing"),
            ("---\nname: [a, b]\n---\n", "quote it"),
            ("---\nname: &x a\n---\n", "quote it"),
            ("---\ndate: 2024-01-02\n---\n", "timestamp"),
            ("---\nn: 0x1F\n---\n", "special number"),
            ("---\nd: a: b\n---\n", "quote it"),
            ("---\nname: a\nname: b\n---\n", "duplicate"),
            ("---\nname: a\n\tdescription: b\n---\n", "tabs"),
            ("---\nl:\n  - k: v\n---\n", "mappings inside sequences"),
            (
                "---\nbig: 123456789012345678901234567890\n---\n",
                "too large",
            ),
            ("---\n  name: a\nx: b\n---\n", "indentation"),
        ] {
            let e = fm(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        let long = format!("---\nd: {}\n---\n", "x".repeat(MAX_FRONTMATTER_BYTES));
        assert_eq!(fm(&long), Err(FrontmatterError::TooLong));
        assert_eq!(parse(b"---\n\xff\n---\n"), Err(FrontmatterError::NotUtf8));
        let deep: String = (0..=MAX_DEPTH + 1)
            .map(|d| format!("{}k{d}:\n", "  ".repeat(d)))
            .collect();
        assert!(
            fm(&format!("---\n{deep}---\n"))
                .unwrap_err()
                .to_string()
                .contains("deeper")
        );
    }
}
