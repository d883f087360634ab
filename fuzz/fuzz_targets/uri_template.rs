//! The RFC 6570 matcher: arbitrary templates and URIs never panic, and expanding a template
//! with values then matching the expansion gives the values back.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use codomyrmex_mcp::uri_template::UriTemplate;
use libfuzzer_sys::fuzz_target;

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn word(u: &mut Unstructured, alphabet: &[u8], min: usize) -> Result<String> {
    let n = u.int_in_range(min..=8)?;
    let mut s = String::new();
    for _ in 0..n {
        s.push(char::from(*u.choose(alphabet)?));
    }
    Ok(s)
}

/// Builds a template and an expansion of it, and checks the matcher inverts the expansion.
fn round_trip(u: &mut Unstructured) -> Result<()> {
    let mut template = word(u, b"abcz:/", 0)?;
    let mut uri = template.clone();
    let mut expected = BTreeMap::new();
    let n = u.int_in_range(1..=3)?;
    for i in 0..n {
        let name = format!("v{i}");
        // Literals after a variable hold a separator that no expanded value contains.
        let literal = format!("{}{}", char::from(*u.choose(b":=!@")?), word(u, b"abc", 0)?);
        let last = i + 1 == n;
        // A reserved value may hold any later literal, and the matcher takes the last
        // occurrence of the next one (so `{+path}.json` matches `a.b.json`): only the last
        // variable may be reserved.
        let kinds = if last { 2 } else { 1 };
        match u.int_in_range(0..=kinds)? {
            0 => {
                let value: String = u.arbitrary()?;
                if value.is_empty() {
                    return Ok(());
                }
                template.push_str(&format!("{{{name}}}"));
                uri.push_str(&encode(&value));
                expected.insert(name, value);
            }
            1 => {
                let value: String = u.arbitrary()?;
                if value.is_empty() {
                    return Ok(());
                }
                template.push_str(&format!("{{/{name}}}"));
                uri.push('/');
                uri.push_str(&encode(&value));
                expected.insert(name, value);
            }
            _ => {
                let value = word(u, b"abcXYZ019/._-", 1)?;
                template.push_str(&format!("{{+{name}}}"));
                uri.push_str(&value);
                expected.insert(name, value);
            }
        }
        if !last || u.arbitrary()? {
            template.push_str(&literal);
            uri.push_str(&literal);
        }
    }
    if u.arbitrary()? {
        let names = ["q", "lang"];
        template.push_str("{?q,lang}");
        let mut pairs = Vec::new();
        for name in names {
            if u.arbitrary()? {
                let value: String = u.arbitrary()?;
                pairs.push(format!("{name}={}", encode(&value)));
                expected.insert(name.to_owned(), value);
            }
        }
        if !pairs.is_empty() {
            uri.push('?');
            uri.push_str(&pairs.join("&"));
        }
    }
    let t = UriTemplate::parse(&template)
        .unwrap_or_else(|e| panic!("generated template {template:?} refused: {e}"));
    let got = t.matches(&uri);
    assert_eq!(
        got.as_ref(),
        Some(&expected),
        "template {template:?} uri {uri:?}"
    );
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mode) = u.arbitrary::<u8>() else {
        return;
    };
    if mode % 2 == 0 {
        let _ = round_trip(&mut u);
        return;
    }
    // Arbitrary text: the parser and the matcher never panic, and matches name only the
    // template's variables.
    let rest = u.take_rest();
    let text = String::from_utf8_lossy(rest);
    let (template, uri) = text.split_once('\n').unwrap_or((&text, ""));
    if let Ok(t) = UriTemplate::parse(template) {
        assert_eq!(t.as_str(), template);
        let vars = t.variables();
        if let Some(found) = t.matches(uri) {
            for k in found.keys() {
                assert!(
                    vars.contains(&k.as_str()),
                    "{k} is not a variable of {template}"
                );
            }
        }
    }
});
