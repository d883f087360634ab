//! JSON-RPC decoding: any bytes decode without panicking, errors know their response, and ids
//! survive a round trip exactly.
#![no_main]

use codomyrmex_mcp::wire::{Decoded, IncomingMessage, OutgoingMessage, decode, decode_value};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn check(item: &Result<IncomingMessage, codomyrmex_mcp::wire::DecodeError>) {
    match item {
        Ok(IncomingMessage::Request { id, method, .. }) => {
            // The id is echoed byte for byte in a response.
            let out = OutgoingMessage::Response {
                id: id.clone(),
                result: json!({}),
            }
            .to_bytes();
            assert!(!out.contains(&b'\n'));
            let Decoded::Single(Ok(IncomingMessage::Response { id: back, .. })) = decode(&out)
            else {
                panic!(
                    "our own response did not decode: {}",
                    String::from_utf8_lossy(&out)
                );
            };
            assert_eq!(&back, id);
            let _ = method.len();
        }
        Ok(_) => {}
        Err(e) => {
            // Every decoding error has a well-formed error response.
            let out = e.to_response().to_bytes();
            let Decoded::Single(Ok(IncomingMessage::Error { error, .. })) = decode(&out) else {
                panic!(
                    "error response did not decode: {}",
                    String::from_utf8_lossy(&out)
                );
            };
            assert!(
                error.code == -32700 || error.code == -32600,
                "{}",
                error.code
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let decoded = decode(data);
    // Decoding bytes and decoding the parsed value agree.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        assert_eq!(decode_value(value), decoded);
    } else {
        assert!(matches!(decoded, Decoded::Single(Err(_))));
    }
    match &decoded {
        Decoded::Single(item) => check(item),
        Decoded::Batch(items) => {
            assert!(!items.is_empty());
            items.iter().for_each(check);
        }
    }
});
