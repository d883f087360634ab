//! Inputs that crashed a fuzz target (`fuzz/`, run by `scripts/fuzz.sh`), kept as tests once
//! fixed. Each test names its target and the crash artifact it came from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use codomyrmex_mcp::uri_template::UriTemplate;
use codomyrmex_mcp::wire::{Decoded, decode};

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// uri_template, crash-efad7e44b1f9d16da4b42fc87feac9a6e06a8eba: a reserved variable followed
/// by a literal took the literal's last occurrence, which was inside the query.
#[test]
fn uri_template_reserved_value_before_a_query() {
    let t = UriTemplate::parse("/bazczz{/v0}:{/v1}@aab{+v2}={?q,lang}").unwrap();
    let uri = "/bazczz/Ng%7D%0Asearch%3Flang:/earc%2Cl%25aNg%7D%0Ase%2Farch%3Flang%3Ditems%2F%7Bid%7D%0Atest%3A%2F%2Fit%5C~@aabY00-999/=?q=arc%2Cl%25aNg%7D%0Ase%2Farch%3Flang%3Ditems%2F%7Bid%7D%0Atest%3A%2F%2Fit%5C~&lang=%2F4en%26q%3D2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii%2F4en%26q%3D2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii";
    let expected = vars(&[
        (
            "lang",
            "/4en&q=2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii/4en&q=2iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii",
        ),
        ("q", "arc,l%aNg}\nse/arch?lang=items/{id}\ntest://it\\~"),
        ("v0", "Ng}\nsearch?lang"),
        ("v1", "earc,l%aNg}\nse/arch?lang=items/{id}\ntest://it\\~"),
        ("v2", "Y00-999/"),
    ]);
    assert_eq!(t.matches(uri), Some(expected));
}

/// jsonrpc_decode, crash-70be5553f54aa79543605ae5a0fbee1225e28e59: an unknown member holding
/// a number out of `f64`'s range (`37E3700`) was skipped by the single-message fast path, so a
/// message that is no JSON value to serde_json decoded as a request. Nesting past the
/// recursion limit in an unknown member is the same case.
#[test]
fn jsonrpc_unknown_members_are_parsed_like_the_rest() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for bytes in [
        r#"{"jsonrpc":"2.0","id":1,"x":37E3700,"method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"x":-1e400,"method":"ping"}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","id":1,"x":{deep},"method":"ping"}}"#),
    ] {
        assert!(serde_json::from_str::<serde_json::Value>(&bytes).is_err());
        assert!(
            matches!(decode(bytes.as_bytes()), Decoded::Single(Err(_))),
            "{bytes}"
        );
    }
    let artifact = br#"{"jsonrpc":"2.0","id":18446744073709551615,"&&&e": "x", "dnrpc": "2.0", "[e": -32700, "codeagextprotnrpc": "2.0", "Xd": 1, "method": "tooos/call", "papc": "20", "icdnpr": "2.0", "i(d": 1, "mttttttttttttttjsssc": "2.0", "[e":37E3700, "messagextprotnrpc": "2.0", "i&&&&&&&&&&&&method":"ping"}"#;
    assert!(matches!(decode(artifact), Decoded::Single(Err(_))));
    // In range, an unknown member is still ignored.
    let fine = br#"{"jsonrpc":"2.0","id":1,"x":[1e300,{"y":null}],"method":"ping"}"#;
    assert!(matches!(decode(fine), Decoded::Single(Ok(_))));
}

/// client_stream: the turns of a hostile server, joined with the fuzz target's separator.
fn turns(turns: &[&str]) -> Vec<u8> {
    turns.join("\0").into_bytes()
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","id":$ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}}
"#;

fn hostile(bytes: &[u8]) -> codomyrmex_mcp::fuzzing::HostileOutcome {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(codomyrmex_mcp::fuzzing::hostile_server(bytes))
}

/// client_stream, issue #26 finding 2: `tools/list` pages that cycle a → b → a with a long
/// `ttlMs` end the list at the repeated cursor (the cache served the rest before), and the
/// client goes on to the next steps.
#[test]
fn client_stream_a_cursor_cycle_ends_the_list() {
    let page = |next: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":$ID,"result":{{"tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}],"nextCursor":"{next}","ttlMs":3600000}}}}
"#
        )
    };
    let (a, b, a2) = (page("a"), page("b"), page("a"));
    let out = hostile(&turns(&["", INITIALIZED, "", &a, &b, &a2]));
    assert!(out.initialize.is_ok(), "{out:?}");
    match &out.lists[0] {
        Err(codomyrmex_mcp::client::ClientError::Protocol(why)) => {
            assert!(why.contains("tools/list") && why.contains("cycle"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // Every turn written, the server hung up: the rest fails cleanly.
    assert!(out.call.is_err(), "{out:?}");
}

/// client_stream, issue #26 finding 3: a turn of 1,000 `roots/list` requests before the
/// answer; the list still completes.
#[test]
fn client_stream_a_flood_of_server_requests() {
    let mut flood = String::new();
    for i in 0..1000 {
        flood.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":"r{i}","method":"roots/list"}}
"#
        ));
    }
    flood.push_str(
        r#"{"jsonrpc":"2.0","id":$ID,"result":{"tools":[]}}
"#,
    );
    let out = hostile(&turns(&["", INITIALIZED, "", &flood]));
    assert!(matches!(out.lists[0], Ok(0)), "{out:?}");
}

/// client_stream: garbage, deep nesting, unknown ids, batches and a line cut short: errors,
/// never a panic or a hang.
#[test]
fn client_stream_garbage() {
    let deep = format!("{}\n", "[".repeat(100_000));
    for input in [
        Vec::new(),
        b"\0\0\0\0\0\0\0\0\0\0".to_vec(),
        b"\xff\xfe\n{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n[1,2,3]\n{}\n".to_vec(),
        deep.into_bytes(),
        turns(&[
            "",
            INITIALIZED,
            "",
            r#"{"jsonrpc":"2.0","id":$ID,"result":{"tools":7}}"#,
        ]),
        turns(&[
            "",
            INITIALIZED,
            "",
            r#"{"jsonrpc":"2.0","id":$ID,"result":{"tools":[],"nextCursor":"x"}}
"#,
            r#"{"jsonrpc":"2.0","id":$ID,"result":{"tools":[],"nextCursor":"x"}}
"#,
        ]),
        turns(&[
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}
"#,
            INITIALIZED,
        ]),
    ] {
        let out = hostile(&input);
        assert_eq!(out.lists.len(), 4, "{out:?}");
    }
}
