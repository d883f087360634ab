//! Property tests of the wire types: every message the server can send decodes back to what
//! was sent, ids keep their exact value, and the MCP data types round-trip through JSON.
//! (The seed's schema types are covered in `schema_compat.rs` and `proptest_schema.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use codomyrmex_mcp::wire::{
    CallToolResult, ErrorObject, Implementation, IncomingMessage, OutgoingMessage, RequestId,
    ResourceContents, ToolAnnotations,
};
use codomyrmex_mcp::wire::{Decoded, decode, decode_value};
use codomyrmex_mcp::{ContentBlock, LoggingLevel, ProtocolVersion};
mod json_strategy;
use json_strategy::json_value;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("\\PC{0,8}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

/// Keys that are not declared fields of the type they are flattened into.
fn free_fields(reserved: &'static [&'static str]) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        "[a-z]{1,8}".prop_filter("declared", move |k| !reserved.contains(&k.as_str())),
        json_value(),
        0..3,
    )
    .prop_map(|m| m.into_iter().collect())
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::from),
        any::<u64>().prop_map(|n| RequestId::Number(n.into())),
        "\\PC{0,16}".prop_map(RequestId::String),
    ]
}

const METHODS: &[&str] = &[
    "ping",
    "tools/call",
    "notifications/progress",
    "elicitation/create",
    "x/\"quoted\"\n",
];

fn error_object() -> impl Strategy<Value = ErrorObject> {
    (
        any::<i64>(),
        "\\PC{0,24}",
        // `data: null` reads back as no data, as JSON-RPC does not tell them apart.
        prop::option::of(json_value().prop_filter("null", |v| !v.is_null())),
    )
        .prop_map(|(code, message, data)| ErrorObject {
            code,
            message,
            data,
        })
}

fn outgoing() -> impl Strategy<Value = OutgoingMessage> {
    prop_oneof![
        (request_id(), json_value())
            .prop_map(|(id, result)| OutgoingMessage::Response { id, result }),
        (request_id(), json_value()).prop_map(|(id, result)| OutgoingMessage::Encoded {
            id,
            result: codomyrmex_mcp::wire::EncodedResult::of(&result),
        }),
        (prop::option::of(request_id()), error_object())
            .prop_map(|(id, error)| OutgoingMessage::Error { id, error }),
        (prop::sample::select(METHODS), json_object()).prop_map(|(method, params)| {
            OutgoingMessage::Notification {
                method,
                params: Value::Object(params),
            }
        }),
        (request_id(), prop::sample::select(METHODS), json_object()).prop_map(
            |(id, method, params)| OutgoingMessage::Request {
                id,
                method,
                params: Value::Object(params),
            }
        ),
    ]
}

/// What the peer decodes from a message we send.
fn expected(m: &OutgoingMessage) -> IncomingMessage {
    match m.clone() {
        OutgoingMessage::Response { id, result } => IncomingMessage::Response { id, result },
        OutgoingMessage::Encoded { id, result } => IncomingMessage::Response {
            id,
            result: result
                .to_value()
                .expect("the strategy's values are shallow"),
        },
        OutgoingMessage::Error { id, error } => IncomingMessage::Error { id, error },
        OutgoingMessage::Notification { method, params } => IncomingMessage::Notification {
            method: method.to_owned(),
            params: params.as_object().cloned(),
        },
        OutgoingMessage::Request { id, method, params } => IncomingMessage::Request {
            id,
            method: method.to_owned(),
            params: params.as_object().cloned(),
        },
        OutgoingMessage::Batch(_) => unreachable!("not generated"),
    }
}

/// One member of a message object as text: a JSON-RPC member name or another, written plainly
/// or with its first letter escaped, and a value that is often of the right shape.
fn member() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("jsonrpc".to_owned()),
        Just("id".to_owned()),
        Just("method".to_owned()),
        Just("params".to_owned()),
        Just("result".to_owned()),
        Just("error".to_owned()),
        "\\PC{0,8}",
    ];
    let value = prop_oneof![
        Just(Value::from("2.0")),
        Just(Value::from(7)),
        Just(Value::from("tools/call")),
        json_object().prop_map(Value::Object),
        error_object().prop_map(|e| serde_json::to_value(e).unwrap()),
        json_value(),
    ];
    (name, any::<bool>(), value).prop_map(|(name, escape, value)| {
        let key = match name.chars().next() {
            Some(c) if escape && name.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                format!("\"\\u{:04x}{}\"", u32::from(c), &name[1..])
            }
            _ => serde_json::to_string(&name).unwrap(),
        };
        format!("{key}:{}", serde_json::to_string(&value).unwrap())
    })
}

fn text_contents() -> impl Strategy<Value = ResourceContents> {
    (
        "\\PC{0,16}",
        prop::option::of("[a-z]{1,6}/[a-z]{1,6}"),
        "\\PC{0,24}",
        prop::option::of(json_object()),
    )
        .prop_map(|(uri, mime_type, text, meta)| ResourceContents::Text {
            uri,
            mime_type,
            text,
            meta,
        })
}

fn resource_contents() -> impl Strategy<Value = ResourceContents> {
    prop_oneof![
        text_contents(),
        (
            "\\PC{0,16}",
            prop::option::of("[a-z]{1,6}/[a-z]{1,6}"),
            "[A-Za-z0-9+/]{0,16}",
            prop::option::of(json_object()),
        )
            .prop_map(|(uri, mime_type, blob, meta)| ResourceContents::Blob {
                uri,
                mime_type,
                blob,
                meta,
            }),
    ]
}

fn content_block() -> impl Strategy<Value = ContentBlock> {
    let annotations = || prop::option::of(json_object());
    prop_oneof![
        ("\\PC{0,24}", annotations(), annotations()).prop_map(|(text, annotations, meta)| {
            ContentBlock::Text {
                text,
                annotations,
                meta,
            }
        }),
        (
            "[A-Za-z0-9+/]{0,16}",
            "[a-z]{1,6}/[a-z]{1,6}",
            annotations(),
            annotations()
        )
            .prop_map(|(data, mime_type, annotations, meta)| ContentBlock::Image {
                data,
                mime_type,
                annotations,
                meta,
            }),
        (
            "[A-Za-z0-9+/]{0,16}",
            "[a-z]{1,6}/[a-z]{1,6}",
            annotations(),
            annotations()
        )
            .prop_map(|(data, mime_type, annotations, meta)| ContentBlock::Audio {
                data,
                mime_type,
                annotations,
                meta,
            }),
        (
            "\\PC{0,16}",
            "\\PC{0,8}",
            free_fields(&["type", "uri", "name"])
        )
            .prop_map(|(uri, name, fields)| ContentBlock::ResourceLink {
                uri,
                name,
                fields
            }),
        (resource_contents(), annotations(), annotations()).prop_map(
            |(resource, annotations, meta)| ContentBlock::Resource {
                resource,
                annotations,
                meta,
            }
        ),
    ]
}

fn implementation() -> impl Strategy<Value = Implementation> {
    (
        "\\PC{0,12}",
        "\\PC{0,8}",
        prop::option::of("\\PC{0,8}"),
        prop::option::of("\\PC{0,8}"),
        prop::option::of("\\PC{0,8}"),
    )
        .prop_map(
            |(name, version, title, description, website_url)| Implementation {
                name,
                version,
                title,
                description,
                website_url,
            },
        )
}

fn annotations() -> impl Strategy<Value = ToolAnnotations> {
    (
        prop::option::of("\\PC{0,8}"),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(title, r, d, i, o)| ToolAnnotations {
            title,
            read_only_hint: r,
            destructive_hint: d,
            idempotent_hint: i,
            open_world_hint: o,
        })
}

fn call_tool_result() -> impl Strategy<Value = CallToolResult> {
    (
        prop::collection::vec(content_block(), 0..3),
        prop::option::of(json_object().prop_map(Value::Object)),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(content, structured_content, is_error)| CallToolResult {
            content,
            structured_content,
            is_error,
        })
}

/// Text and `Value` round trips agree with the original, and re-encoding is stable.
fn round_trip<T>(value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).expect("encodes");
    let back: T = serde_json::from_str(&text).expect("decodes");
    prop_assert_eq!(&back, value);
    prop_assert_eq!(serde_json::to_string(&back).expect("encodes"), text);
    let via_value: T =
        serde_json::from_value(serde_json::to_value(value).expect("to value")).expect("decodes");
    prop_assert_eq!(&via_value, value);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sent_messages_decode_to_what_was_sent(m in outgoing()) {
        let bytes = m.to_bytes();
        prop_assert!(!bytes.contains(&b'\n'), "one line per message");
        match decode(&bytes) {
            Decoded::Single(Ok(got)) => prop_assert_eq!(got, expected(&m)),
            other => prop_assert!(false, "{:?} decoded to {:?}", m, other),
        }
    }

    #[test]
    fn a_single_message_decodes_as_its_parsed_json_does(
        members in prop::collection::vec(member(), 0..8),
        space in prop::bool::ANY,
    ) {
        // `decode` reads a lone object straight into its envelope; the general path parses a
        // `Value` first. Both must agree, repeated and escaped member names included.
        let text = format!("{}{{{}}}", if space { " \n" } else { "" }, members.join(","));
        let general = decode_value(serde_json::from_str(&text).unwrap());
        prop_assert_eq!(decode(text.as_bytes()), general, "{}", text);
    }

    #[test]
    fn batches_decode_element_by_element(items in prop::collection::vec(outgoing(), 1..5)) {
        let batch = OutgoingMessage::Batch(items.clone());
        let Decoded::Batch(got) = decode(&batch.to_bytes()) else {
            return Err(TestCaseError::fail("a batch decodes as a batch"));
        };
        prop_assert_eq!(got.len(), items.len());
        for (g, m) in got.into_iter().zip(&items) {
            prop_assert_eq!(g.expect("each element decodes"), expected(m));
        }
    }

    #[test]
    fn request_ids_round_trip_exactly(id in request_id()) {
        round_trip(&id)?;
        let echoed = OutgoingMessage::Response { id: id.clone(), result: Value::Null };
        let Decoded::Single(Ok(IncomingMessage::Response { id: back, .. })) = decode(&echoed.to_bytes()) else {
            return Err(TestCaseError::fail("a response decodes"));
        };
        prop_assert_eq!(back.to_string(), id.to_string());
        prop_assert_eq!(back, id);
    }

    #[test]
    fn error_objects_round_trip(e in error_object()) {
        round_trip(&e)?;
    }

    #[test]
    fn content_blocks_round_trip(b in content_block()) {
        round_trip(&b)?;
        let v = serde_json::to_value(&b).expect("to value");
        prop_assert!(v["type"].is_string(), "tagged: {}", v);
    }

    #[test]
    fn resource_contents_round_trip(c in resource_contents()) {
        round_trip(&c)?;
    }

    #[test]
    fn call_tool_results_round_trip(r in call_tool_result()) {
        round_trip(&r)?;
    }

    #[test]
    fn implementations_and_annotations_round_trip(i in implementation(), a in annotations()) {
        round_trip(&i)?;
        round_trip(&a)?;
        prop_assert_eq!(a.is_empty(), a == ToolAnnotations::default());
    }

    #[test]
    fn arbitrary_json_never_breaks_the_decoders(v in json_value()) {
        // Whatever the peer sends, a decoder accepts it or refuses it; what it accepts
        // re-encodes to something it accepts again, unchanged.
        fn stable<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(v: &Value) -> Result<(), TestCaseError> {
            if let Ok(t) = serde_json::from_value::<T>(v.clone()) {
                let again: T = serde_json::from_value(serde_json::to_value(&t).expect("encodes")).expect("re-decodes");
                prop_assert_eq!(again, t);
            }
            Ok(())
        }
        stable::<ContentBlock>(&v)?;
        stable::<ResourceContents>(&v)?;
        stable::<CallToolResult>(&v)?;
        stable::<Implementation>(&v)?;
        stable::<ToolAnnotations>(&v)?;
        stable::<ErrorObject>(&v)?;
        stable::<RequestId>(&v)?;
        let _ = codomyrmex_mcp::wire::decode_value(v);
    }
}

#[test]
fn every_log_level_and_version_round_trips() {
    use LoggingLevel::*;
    let levels = [
        Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
    ];
    for (i, l) in levels.iter().enumerate() {
        let v = serde_json::to_value(l).expect("encodes");
        assert_eq!(v, Value::from(l.as_str()));
        assert_eq!(
            serde_json::from_value::<LoggingLevel>(v).expect("decodes"),
            *l
        );
        assert!(levels[..i].iter().all(|lower| lower < l));
    }
    for v in ProtocolVersion::ALL {
        assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        let json = serde_json::to_value(v).expect("encodes");
        assert_eq!(json, Value::from(v.as_str()));
        assert_eq!(
            serde_json::from_value::<ProtocolVersion>(json).expect("decodes"),
            v
        );
    }
}
