//! Elicitation answered at the terminal, for `client` when its stdin is a terminal: the
//! server's message, then `accept`, `decline` or `cancel`; on accept, each field of the
//! requested schema prompted by its type (string, number, integer, boolean, enum), its
//! default taken on an empty line, a required field asked again until given. URL-mode
//! elicitation shows the URL and asks whether to accept.
//!
//! The prompting is [`answer_form`] and [`answer_url`] over any reader and writer, so tests
//! drive it with text; [`handlers`] wires them to stdin and stderr on the blocking pool.
//! Not a form library: nested objects and arrays are not prompted (a schema with one is
//! declined with a message).
//!
//! Everything the server wrote into the question (its message, URL, field names, titles,
//! descriptions, defaults and choices) is shown through [`inert_text`]: a server cannot
//! retitle the terminal or fake a prompt's text.

use std::io::{BufRead, Write};

use codomyrmex_mcp::client::ClientHandlers;
use codomyrmex_mcp::util::inert_text;
use serde_json::{Map, Value, json};

/// How many times an invalid answer is asked again before the elicitation is cancelled.
const MAX_TRIES: usize = 5;

fn line(input: &mut dyn BufRead) -> Option<String> {
    let mut s = String::new();
    match input.read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// Asks accept/decline/cancel; `None` on end of input (cancel).
fn choose(input: &mut dyn BufRead, out: &mut dyn Write) -> Option<&'static str> {
    for _ in 0..MAX_TRIES {
        let _ = write!(out, "answer? [a]ccept, [d]ecline, [c]ancel: ");
        let _ = out.flush();
        match line(input)?.trim().to_ascii_lowercase().as_str() {
            "a" | "accept" | "y" | "yes" => return Some("accept"),
            "d" | "decline" | "n" | "no" => return Some("decline"),
            "c" | "cancel" => return Some("cancel"),
            _ => {}
        }
    }
    Some("cancel")
}

/// One field's value from `text`, by its schema; `Err` says what is expected.
fn parse_field(schema: &Value, text: &str) -> Result<Value, String> {
    let choices: Option<Vec<&Value>> = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|v| v.iter().collect())
        .or_else(|| {
            schema
                .get("oneOf")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(|o| o.get("const")).collect::<Vec<_>>())
        })
        .filter(|c| !c.is_empty());
    if let Some(choices) = choices {
        return choices
            .iter()
            .find(|c| c.as_str() == Some(text) || c.to_string() == text)
            .map(|c| (*c).clone())
            .ok_or_else(|| {
                let names: Vec<String> = choices
                    .iter()
                    .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
                    .collect();
                format!("one of {}", inert_text(&names.join(", ")))
            });
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(json!(true)),
            "n" | "no" | "false" => Ok(json!(false)),
            _ => Err("yes or no".into()),
        },
        Some("integer") => text
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| "an integer".into()),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| json!(n))
            .ok_or_else(|| "a number".into()),
        Some("string") | None => Ok(json!(text)),
        Some(other) => Err(format!(
            "a {}, which cannot be typed here",
            inert_text(other)
        )),
    }
}

/// Answers a form-mode `elicitation/create` by prompting on `out` and reading `input`.
pub fn answer_form(params: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Value {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    let _ = writeln!(out, "\nthe server asks: {}", inert_text(message));
    let schema = params
        .get("requestedSchema")
        .cloned()
        .unwrap_or(Value::Null);
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some((name, _)) = props.iter().find(|(_, p)| {
        matches!(
            p.get("type").and_then(Value::as_str),
            Some("object" | "array")
        ) && p.get("enum").is_none()
    }) {
        let _ = writeln!(
            out,
            "(field {:?} cannot be typed here: declined)",
            inert_text(name)
        );
        return json!({"action": "decline"});
    }
    let Some(action) = choose(input, out) else {
        return json!({"action": "cancel"});
    };
    if action != "accept" {
        return json!({"action": action});
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, prop) in &props {
        let is_required = required.contains(&name.as_str());
        let label = prop
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(name.as_str());
        let mut answered = false;
        for _ in 0..MAX_TRIES {
            let _ = write!(out, "{}", inert_text(label));
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                let _ = write!(out, " ({})", inert_text(d));
            }
            if let Some(d) = prop.get("default") {
                let _ = write!(
                    out,
                    " [{}]",
                    inert_text(&d.as_str().map_or_else(|| d.to_string(), str::to_owned))
                );
            } else if !is_required {
                let _ = write!(out, " [skip]");
            }
            let _ = write!(out, ": ");
            let _ = out.flush();
            let Some(text) = line(input) else {
                return json!({"action": "cancel"});
            };
            if text.is_empty() {
                if let Some(d) = prop.get("default") {
                    content.insert(name.clone(), d.clone());
                    answered = true;
                    break;
                }
                if !is_required {
                    answered = true;
                    break;
                }
                let _ = writeln!(out, "  (required)");
                continue;
            }
            match parse_field(prop, &text) {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    answered = true;
                    break;
                }
                Err(expected) => {
                    let _ = writeln!(out, "  (expected {expected})");
                }
            }
        }
        if !answered {
            return json!({"action": "cancel"});
        }
    }
    json!({"action": "accept", "content": content})
}

/// Answers a URL-mode `elicitation/create`: shows the URL, asks whether to accept.
pub fn answer_url(params: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Value {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    let url = params.get("url").and_then(Value::as_str).unwrap_or("?");
    let _ = writeln!(
        out,
        "\nthe server asks: {}\nopen: {}",
        inert_text(message),
        inert_text(url)
    );
    let action = choose(input, out).unwrap_or("cancel");
    json!({"action": action})
}

/// `handlers` with elicitation (form and URL) answered at the terminal: questions on
/// stderr, answers from stdin.
pub fn handlers(handlers: ClientHandlers) -> ClientHandlers {
    let run = |f: fn(&Value, &mut dyn BufRead, &mut dyn Write) -> Value| {
        move |params: Value| async move {
            tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                f(&params, &mut input, &mut std::io::stderr())
            })
            .await
            .map_err(|e| {
                codomyrmex_mcp::wire::ErrorObject::new(
                    codomyrmex_mcp::wire::ErrorCode::INTERNAL_ERROR,
                    format!("the prompt failed: {e}"),
                )
            })
        }
    };
    handlers
        .elicitation(run(answer_form))
        .url_elicitation(run(answer_url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(params: &Value, typed: &str) -> (Value, String) {
        let mut out = Vec::new();
        let v = answer_form(params, &mut typed.as_bytes(), &mut out);
        (v, String::from_utf8_lossy(&out).into_owned())
    }

    fn params() -> Value {
        json!({"message": "Who are you?", "requestedSchema": {"type": "object", "required": ["name", "age"], "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer"},
            "admin": {"type": "boolean", "default": false},
            "colour": {"type": "string", "enum": ["red", "green"]},
            "note": {"type": "string"}
        }}})
    }

    #[test]
    fn fields_are_prompted_by_their_schema() {
        // Fields in the schema's (sorted) order: admin, age, colour, name, note.
        let (v, shown) = form(&params(), "a\n\nx\n41\nblue\ngreen\n\nAda\n\n");
        assert_eq!(
            v,
            json!({"action": "accept", "content": {"admin": false, "age": 41, "colour": "green", "name": "Ada"}}),
            "{shown}"
        );
        assert!(shown.contains("the server asks: Who are you?"), "{shown}");
        assert!(shown.contains("(expected an integer)"), "{shown}");
        assert!(shown.contains("(expected one of red, green)"), "{shown}");
        assert!(shown.contains("Name: "), "{shown}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        assert_eq!(form(&params(), "d\n").0, json!({"action": "decline"}));
        assert_eq!(form(&params(), "cancel\n").0, json!({"action": "cancel"}));
        assert_eq!(form(&params(), "").0, json!({"action": "cancel"}));
        // Input ends half-way through the form.
        assert_eq!(form(&params(), "a\nyes\n").0, json!({"action": "cancel"}));
        // A required field left empty is asked again, then given up on.
        assert_eq!(
            form(&params(), "a\n\n\n\n\n\n\n").0,
            json!({"action": "cancel"})
        );
    }

    #[test]
    fn nested_fields_are_declined_and_urls_shown() {
        let p =
            json!({"message": "m", "requestedSchema": {"properties": {"x": {"type": "object"}}}});
        assert_eq!(form(&p, "a\n").0, json!({"action": "decline"}));
        let mut out = Vec::new();
        let v = answer_url(
            &json!({"message": "Sign in", "url": "https://x/y"}),
            &mut "y\n".as_bytes(),
            &mut out,
        );
        assert_eq!(v, json!({"action": "accept"}));
        assert!(String::from_utf8_lossy(&out).contains("open: https://x/y"));
    }

    /// What a server can put in a question to take over the terminal.
    const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[2J\u{202e}\u{9b}\u{200b}\r";

    fn assert_inert(shown: &str) {
        for c in ['\x1b', '\x07', '\u{202e}', '\u{9b}', '\u{200b}', '\r'] {
            assert!(!shown.contains(c), "{c:?} reached the terminal: {shown:?}");
        }
    }

    #[test]
    fn a_servers_question_is_shown_inert() {
        let h = HOSTILE;
        let p = json!({"message": format!("who{h}\tare\nyou"), "requestedSchema": {"type": "object", "properties": {
            "colour": {"type": "string", "title": format!("Colour{h}"), "description": format!("d{h}"),
                       "default": format!("red{h}"), "enum": [format!("red{h}"), "green"]},
            "kind": {"type": format!("weird{h}")}
        }}});
        let (_, shown) = form(&p, "a\nblue\ngreen\nx\n\n\n\n\n");
        assert_inert(&shown);
        assert!(shown.contains("who]0;pwned[2J\tare\nyou"), "{shown:?}");
        assert!(
            shown.contains("Colour]0;pwned[2J (d]0;pwned[2J)"),
            "{shown:?}"
        );
        assert!(shown.contains("(expected a weird]0;pwned[2J"), "{shown:?}");
        let p = json!({"message": "m", "requestedSchema": {"properties": {format!("x{h}"): {"type": "object"}}}});
        let (_, shown) = form(&p, "a\n");
        assert_inert(&shown);
        let mut out = Vec::new();
        answer_url(
            &json!({"message": format!("Sign in{h}"), "url": format!("https://x/y{h}")}),
            &mut "n\n".as_bytes(),
            &mut out,
        );
        let shown = String::from_utf8_lossy(&out);
        assert_inert(&shown);
        assert!(shown.contains("open: https://x/y]0;pwned[2J"), "{shown:?}");
    }
}
