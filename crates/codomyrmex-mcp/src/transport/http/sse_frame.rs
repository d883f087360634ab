//! The SSE framing of one message: what both the response body (`sse.rs`) and the replay
//! logs (`replay.rs`) write, in a module of its own so that neither depends on the other for it.

use bytes::Bytes;

use crate::wire::OutgoingMessage;

/// Frames one message as an SSE `message` event, with an optional event id.
pub(crate) fn frame(message: &OutgoingMessage, id: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(96);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: message\ndata: ");
    // Compact JSON has no raw newlines, so one `data:` line carries it.
    message.write_to(&mut out);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}
