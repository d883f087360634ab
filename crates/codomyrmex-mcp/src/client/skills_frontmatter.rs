//! A `SKILL.md`'s YAML frontmatter read back as JSON, so the client can compare it field by
//! field with the frontmatter a skill's entry carries (SEP-2640, "Integrity and
//! verification").
//!
//! The frontmatter the Agent Skills format uses is a small YAML block mapping; this reads the
//! part of YAML 1.2 such blocks are written in: block mappings and sequences, plain, single-
//! and double-quoted scalars (plain ones resolved by the core schema: null, booleans,
//! integers, floats, else strings), literal (`|`) and folded (`>`) block scalars, flow
//! sequences and mappings on one line, and comments. What it does not read (anchors,
//! aliases, tags, several documents, complex keys) is an error, never a guess: a
//! frontmatter this cannot read is refused as unverifiable, not passed.

use serde_json::{Map, Number, Value};

/// The deepest nesting read (block and flow together).
const MAX_DEPTH: usize = 32;

/// The frontmatter of `text` (a `SKILL.md`): the mapping between a first line `---` and the
/// next line `---`, as a JSON object. An error says why it cannot be read.
pub fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md does not begin with a `---` frontmatter line".into());
    }
    let mut block = Vec::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        block.push(line);
    }
    if !closed {
        return Err("the frontmatter has no closing `---` line".into());
    }
    let lines: Vec<Line<'_>> = block
        .iter()
        .enumerate()
        .map(|(i, raw)| Line::of(i + 2, raw))
        .collect();
    if let Some(l) = lines.iter().find(|l| l.indent_has_tab && !l.blank()) {
        return Err(format!("line {}: a tab in indentation", l.number));
    }
    let mut parser = Block { lines, at: 0 };
    if parser.lines.is_empty() {
        return Ok(Map::new());
    }
    let value = parser.node(0, 0)?;
    if let Some(l) = parser.lines.get(parser.at) {
        return Err(format!("line {}: unexpected indentation", l.number));
    }
    match value {
        Value::Object(map) => Ok(map),
        _ => Err("the frontmatter is not a mapping".into()),
    }
}

/// Whether two frontmatter values are the same: JSON equality, numbers by value (`2` and
/// `2.0` are the same number).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// The fields on which two frontmatters differ (a field one lacks counts as `null`, as in
/// the suite's comparison), sorted.
pub fn differing_fields(file: &Map<String, Value>, entry: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<&String> = file.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            let a = file.get(*k).unwrap_or(&Value::Null);
            let b = entry.get(*k).unwrap_or(&Value::Null);
            !same_value(a, b)
        })
        .cloned()
        .collect()
}

/// One content line: its indentation and text (a comment-only or blank line is none).
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    number: usize,
    indent: usize,
    indent_has_tab: bool,
    /// The line after its indentation.
    text: &'a str,
    /// The whole line (block scalars keep their own indentation).
    raw: &'a str,
}

impl<'a> Line<'a> {
    fn of(number: usize, raw: &'a str) -> Self {
        let text = raw.trim_start_matches([' ', '\t']);
        let indent = raw.len() - text.len();
        Self {
            number,
            indent,
            indent_has_tab: raw[..indent].contains('\t'),
            text,
            raw,
        }
    }

    fn blank(&self) -> bool {
        self.text.trim_end().is_empty() || self.text.starts_with('#')
    }
}

/// The block parser: the frontmatter's lines and the next one to read.
struct Block<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Block<'a> {
    /// The next content line, blank and comment lines skipped.
    fn peek(&mut self) -> Option<Line<'a>> {
        while let Some(l) = self.lines.get(self.at) {
            if l.blank() {
                self.at += 1;
            } else {
                return Some(*l);
            }
        }
        None
    }

    /// The node starting at the next content line, indented at least `min`.
    fn node(&mut self, min: usize, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("the frontmatter nests too deeply".into());
        }
        let Some(first) = self.peek() else {
            return Ok(Value::Null);
        };
        if first.indent < min {
            return Ok(Value::Null);
        }
        if is_item(first.text) {
            self.sequence(first.indent, depth)
        } else {
            self.mapping(first.indent, depth)
        }
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent != indent || !is_item(line.text) {
                if line.indent > indent {
                    return Err(format!("line {}: unexpected indentation", line.number));
                }
                break;
            }
            self.at += 1;
            let rest = line.text[1..].trim_start_matches(' ');
            let item_indent = line.indent + (line.text.len() - rest.len());
            let rest = strip_comment(rest);
            if rest.is_empty() {
                items.push(self.node(indent + 1, depth + 1)?);
            } else if key_split(rest).is_some() {
                // `- key: value` starts a mapping whose keys line up after the dash.
                let value = self.mapping_from(item_indent, Some(rest), line.number, depth + 1)?;
                items.push(value);
            } else {
                items.push(self.scalar_value(rest, line.number, indent, depth + 1)?);
            }
        }
        Ok(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        self.mapping_from(indent, None, 0, depth)
    }

    /// A block mapping at `indent`; `first` is a pair already taken from a `- ` line.
    fn mapping_from(
        &mut self,
        indent: usize,
        first: Option<&'a str>,
        first_number: usize,
        depth: usize,
    ) -> Result<Value, String> {
        let mut map = Map::new();
        let mut pending = first.map(|t| (t, first_number));
        loop {
            let (text, number) = match pending.take() {
                Some(p) => p,
                None => {
                    let Some(line) = self.peek() else { break };
                    if line.indent < indent {
                        break;
                    }
                    if line.indent > indent || is_item(line.text) {
                        return Err(format!("line {}: unexpected indentation", line.number));
                    }
                    self.at += 1;
                    (line.text, line.number)
                }
            };
            let Some((key, rest)) = key_split(text) else {
                return Err(format!("line {number}: expected `key: value`"));
            };
            let key = scalar_key(key, number)?;
            let rest = strip_comment(rest.trim_start_matches(' '));
            let value = if rest.is_empty() {
                // A nested block: more indented, or a sequence at the same indentation.
                match self.peek() {
                    Some(next) if next.indent > indent => self.node(indent + 1, depth + 1)?,
                    Some(next) if next.indent == indent && is_item(next.text) => {
                        self.sequence(indent, depth + 1)?
                    }
                    _ => Value::Null,
                }
            } else {
                self.scalar_value(rest, number, indent, depth + 1)?
            };
            if map.insert(key.clone(), value).is_some() {
                return Err(format!("line {number}: duplicate key {key:?}"));
            }
        }
        Ok(Value::Object(map))
    }

    /// The value after `key: ` (or `- `): a block scalar, a flow collection, a quoted or a
    /// plain scalar (a plain one may go on over more indented lines).
    fn scalar_value(
        &mut self,
        text: &'a str,
        number: usize,
        indent: usize,
        depth: usize,
    ) -> Result<Value, String> {
        let first = text.chars().next().unwrap_or(' ');
        match first {
            '|' | '>' => self.block_scalar(text, number, indent),
            '[' | '{' => {
                let mut flow = Flow {
                    text: text.as_bytes(),
                    src: text,
                    at: 0,
                    number,
                };
                let v = flow.value(depth)?;
                flow.skip_spaces();
                if flow.at != text.len() {
                    return Err(format!("line {number}: text after a flow collection"));
                }
                Ok(v)
            }
            '"' | '\'' => {
                let (s, used) = quoted(text, number)?;
                if !text[used..].trim().is_empty() {
                    return Err(format!("line {number}: text after a quoted scalar"));
                }
                Ok(Value::String(s))
            }
            '&' | '*' | '!' | '%' | '@' | '`' => Err(format!(
                "line {number}: anchors, aliases, tags and directives are not read"
            )),
            _ => {
                // Continuation lines of a multi-line plain scalar fold with spaces.
                let mut folded = text.trim_end().to_owned();
                let mut multi = false;
                while let Some(next) = self.peek() {
                    if next.indent <= indent {
                        break;
                    }
                    self.at += 1;
                    folded.push(' ');
                    folded.push_str(strip_comment(next.text).trim_end());
                    multi = true;
                }
                Ok(if multi {
                    Value::String(folded)
                } else {
                    plain(&folded, number)?
                })
            }
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar with its chomping indicator.
    fn block_scalar(
        &mut self,
        header: &str,
        number: usize,
        indent: usize,
    ) -> Result<Value, String> {
        let header = header.trim_end();
        let literal = header.starts_with('|');
        let mut chomp = ' ';
        let mut explicit = None;
        for c in header[1..].chars() {
            match c {
                '-' | '+' if chomp == ' ' => chomp = c,
                '1'..='9' if explicit.is_none() => explicit = c.to_digit(10),
                _ => {
                    return Err(format!(
                        "line {number}: a block scalar header this does not read"
                    ));
                }
            }
        }
        let mut body: Vec<&str> = Vec::new();
        let mut block_indent = explicit.map(|n| indent + n as usize);
        while let Some(line) = self.lines.get(self.at) {
            let blank = line.text.trim_end().is_empty();
            if !blank {
                let want = *block_indent.get_or_insert(line.indent);
                if line.indent < want || line.indent <= indent {
                    break;
                }
            }
            self.at += 1;
            let cut = block_indent.unwrap_or(usize::MAX).min(line.raw.len());
            body.push(if blank && line.raw.len() <= cut {
                ""
            } else {
                &line.raw[cut..]
            });
        }
        // Trailing blank lines belong to the chomping, not the content.
        let mut trailing = 0;
        while body.last().is_some_and(|l| l.is_empty()) {
            body.pop();
            trailing += 1;
        }
        let out = if literal {
            body.join("\n")
        } else {
            fold(&body)
        };
        let mut out = out;
        if !body.is_empty() {
            match chomp {
                '-' => {}
                '+' => out.push_str(&"\n".repeat(trailing + 1)),
                _ => out.push('\n'),
            }
        }
        Ok(Value::String(out))
    }
}

/// The lines of a folded block scalar joined: lines break into spaces, a run of `n` blank
/// lines into `n` newlines, and more indented lines keep their breaks.
fn fold(body: &[&str]) -> String {
    let mut out = String::new();
    let mut breaks = 0;
    let mut first = true;
    let mut prev_more = false;
    for l in body {
        if l.is_empty() {
            breaks += 1;
            continue;
        }
        let more = l.starts_with(' ');
        if first {
            out.push_str(&"\n".repeat(breaks));
        } else if breaks == 0 {
            out.push(if more || prev_more { '\n' } else { ' ' });
        } else {
            out.push_str(&"\n".repeat(breaks + usize::from(more || prev_more)));
        }
        out.push_str(l);
        first = false;
        prev_more = more;
        breaks = 0;
    }
    out
}

/// A flow collection on one line.
struct Flow<'a> {
    text: &'a [u8],
    src: &'a str,
    at: usize,
    number: usize,
}

impl Flow<'_> {
    fn skip_spaces(&mut self) {
        while self.text.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("the frontmatter nests too deeply".into());
        }
        self.skip_spaces();
        match self.text.get(self.at) {
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_spaces();
                    if self.text.get(self.at) == Some(&b']') {
                        self.at += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.skip_spaces();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {}
                        _ => return Err(format!("line {}: an unclosed `[`", self.number)),
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut map = Map::new();
                loop {
                    self.skip_spaces();
                    if self.text.get(self.at) == Some(&b'}') {
                        self.at += 1;
                        return Ok(Value::Object(map));
                    }
                    let key = match self.value(depth + 1)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.skip_spaces();
                    if self.text.get(self.at) != Some(&b':') {
                        return Err(format!(
                            "line {}: expected `:` in a flow mapping",
                            self.number
                        ));
                    }
                    self.at += 1;
                    let value = self.value(depth + 1)?;
                    if map.insert(key.clone(), value).is_some() {
                        return Err(format!("line {}: duplicate key {key:?}", self.number));
                    }
                    self.skip_spaces();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {}
                        _ => return Err(format!("line {}: an unclosed `{{`", self.number)),
                    }
                }
            }
            Some(b'"' | b'\'') => {
                let (s, used) = quoted(&self.src[self.at..], self.number)?;
                self.at += used;
                Ok(Value::String(s))
            }
            Some(_) => {
                let start = self.at;
                while let Some(&b) = self.text.get(self.at) {
                    // `:` ends a key only before a space (or the end), as in YAML.
                    let colon_ends = b == b':'
                        && matches!(
                            self.text.get(self.at + 1),
                            None | Some(b' ' | b',' | b']' | b'}')
                        );
                    if matches!(b, b',' | b']' | b'}' | b'[' | b'{') || colon_ends {
                        break;
                    }
                    self.at += 1;
                }
                plain(self.src[start..self.at].trim(), self.number)
            }
            None => Err(format!("line {}: an unclosed flow collection", self.number)),
        }
    }
}

fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// `key: rest` split at the first `: ` (or a final `:`) outside quotes.
fn key_split(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut quote = None;
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (None, b'"' | b'\'') if i == 0 => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b':') if matches!(bytes.get(i + 1), None | Some(b' ')) => {
                return Some((&text[..i], &text[i + 1..]));
            }
            (None, b'#') if i > 0 && bytes[i - 1] == b' ' => return None,
            _ => {}
        }
    }
    None
}

/// A mapping key: plain or quoted, as a string.
fn scalar_key(key: &str, number: usize) -> Result<String, String> {
    let key = key.trim_end();
    if key.starts_with('"') || key.starts_with('\'') {
        let (s, used) = quoted(key, number)?;
        if used != key.len() {
            return Err(format!("line {number}: text after a quoted key"));
        }
        return Ok(s);
    }
    if key.is_empty() || key.starts_with(['?', '&', '*', '!', '[', '{']) {
        return Err(format!("line {number}: a key this does not read"));
    }
    Ok(key.to_owned())
}

/// `text` without a trailing ` # comment`.
fn strip_comment(text: &str) -> &str {
    if text.starts_with(['"', '\'']) {
        return text.trim_end();
    }
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1] == b' ') {
            return text[..i].trim_end();
        }
    }
    text.trim_end()
}

/// A quoted scalar at the start of `text`: its value and the bytes it took.
fn quoted(text: &str, number: usize) -> Result<(String, usize), String> {
    let mut chars = text.char_indices();
    let Some((_, q)) = chars.next() else {
        return Err(format!("line {number}: an empty quoted scalar"));
    };
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match (q, c) {
            ('\'', '\'') => {
                if text[i + 1..].starts_with('\'') {
                    out.push('\'');
                    chars.next();
                } else {
                    return Ok((out, i + 1));
                }
            }
            ('"', '"') => return Ok((out, i + 1)),
            ('"', '\\') => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '"' | '\\' | '/' | ' ' => out.push(e),
                    'x' | 'u' | 'U' => {
                        let n = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut code = 0u32;
                        for _ in 0..n {
                            let d = chars
                                .next()
                                .and_then(|(_, h)| h.to_digit(16))
                                .ok_or_else(|| format!("line {number}: a bad \\{e} escape"))?;
                            code = code * 16 + d;
                        }
                        out.push(
                            char::from_u32(code)
                                .ok_or_else(|| format!("line {number}: a bad \\{e} escape"))?,
                        );
                    }
                    _ => return Err(format!("line {number}: an escape this does not read")),
                }
            }
            _ => out.push(c),
        }
    }
    Err(format!("line {number}: an unclosed quoted scalar"))
}

/// A plain scalar by the YAML 1.2 core schema.
fn plain(text: &str, number: usize) -> Result<Value, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "-.inf" | ".nan" | ".NaN" | ".NAN" => {
            return Err(format!("line {number}: {text} has no JSON form"));
        }
        _ => {}
    }
    if text.starts_with(['&', '*', '!', '%', '@', '`', '|', '>']) {
        return Err(format!(
            "line {number}: anchors, aliases, tags and directives are not read"
        ));
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        if let Ok(u) = text.trim_start_matches('+').parse::<u64>() {
            return Ok(Value::Number(u.into()));
        }
    }
    if let Some(Ok(i)) = text.strip_prefix("0o").map(|o| i64::from_str_radix(o, 8)) {
        return Ok(Value::Number(i.into()));
    }
    if let Some(Ok(i)) = text.strip_prefix("0x").map(|h| i64::from_str_radix(h, 16)) {
        return Ok(Value::Number(i.into()));
    }
    if let Some(n) = is_core_float(text)
        .then(|| text.parse::<f64>().ok().and_then(Number::from_f64))
        .flatten()
    {
        return Ok(Value::Number(n));
    }
    Ok(Value::String(text.to_owned()))
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_core_float(text: &str) -> bool {
    let s = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit()))
                && (!frac.is_empty() || !int.is_empty())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exp_ok
}
