//! Incremental `text/event-stream` parsing for the client's HTTP transport: events with
//! their ids (for `Last-Event-ID`) and the server's `retry` delay. Bounded: a line, or an
//! event's `data:` lines together, longer than [`MAX_BODY`](super::http::MAX_BODY) is an
//! error. Parsing only; no I/O.

use std::time::Duration;

use super::endpoint::MAX_BODY;

/// The longest `retry` delay honoured.
pub const MAX_RETRY: Duration = Duration::from_secs(30);

/// One parsed SSE event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:`, if any.
    pub id: Option<String>,
}

/// Incremental `text/event-stream` parsing: feed bytes, get complete events; `retry:` is
/// remembered. Bounded: a line, or an event's data, longer than [`MAX_BODY`] is an error.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<String>,
    /// The bytes held in `data`, the `\n`s that will join them counted.
    data_len: usize,
    id: Option<String>,
    /// The last `retry:` the server sent.
    pub retry: Option<Duration>,
    /// The last event id seen (for `Last-Event-ID`).
    pub last_id: Option<String>,
}

impl SseParser {
    /// Feeds bytes; returns each event they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                if self.line.len() > MAX_BODY {
                    return Err("an SSE line is too long".into());
                }
                continue;
            }
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            if line.is_empty() {
                let id = self.id.take();
                if id.is_some() {
                    self.last_id.clone_from(&id);
                }
                self.data_len = 0;
                if !self.data.is_empty() {
                    events.push(SseEvent {
                        data: std::mem::take(&mut self.data).join("\n"),
                        id,
                    });
                }
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "data" => {
                    self.data_len = self.data_len.saturating_add(value.len() + 1);
                    if self.data_len > MAX_BODY {
                        return Err("an SSE event is too long".into());
                    }
                    self.data.push(value.to_owned());
                }
                "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
                "retry" => {
                    if let Ok(ms) = value.parse::<u64>() {
                        self.retry = Some(Duration::from_millis(ms).min(MAX_RETRY));
                    }
                }
                _ => {}
            }
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_across_chunks_keep_ids_and_retry() {
        let mut p = SseParser::default();
        assert!(
            p.feed(b": comment\nevent: message\nid: 1\nretry: 250\ndata: {\"a\":")
                .unwrap()
                .is_empty()
        );
        let events = p.feed(b"1}\r\n\r\ndata: x\ndata: y\n\n").unwrap();
        assert_eq!(
            events[0],
            SseEvent {
                data: "{\"a\":1}".into(),
                id: Some("1".into())
            }
        );
        assert_eq!(events[1].data, "x\ny");
        assert_eq!(p.last_id.as_deref(), Some("1"));
        assert_eq!(p.retry, Some(Duration::from_millis(250)));
        // An id-only event (priming) moves the resumption point without data.
        assert!(p.feed(b"id: 7\ndata:\n\n").unwrap().len() == 1);
        assert_eq!(p.last_id.as_deref(), Some("7"));
        assert!(p.feed(b"retry: 99999999\n\n").unwrap().is_empty());
        assert_eq!(p.retry, Some(MAX_RETRY));
    }

    /// Many `data:` lines, each short, never make one event larger than `MAX_BODY`: before
    /// the bound the parser held them all.
    #[test]
    fn an_events_data_lines_together_are_bounded() {
        let mut p = SseParser::default();
        let line = format!("data: {}\n", "x".repeat(1 << 20));
        let mut failed = None;
        for i in 0..(MAX_BODY >> 20) + 2 {
            if let Err(e) = p.feed(line.as_bytes()) {
                failed = Some((i, e));
                break;
            }
        }
        let (i, e) = failed.expect("the event's data is bounded");
        assert_eq!(i, (MAX_BODY >> 20) - 1, "{e}");
        assert!(e.contains("too long"), "{e}");
        // A blank line ends an event: its data no longer counts for the next.
        let mut p = SseParser::default();
        let event = format!("{}\n", line.repeat((MAX_BODY >> 20) - 1));
        for _ in 0..3 {
            let events = p.feed(event.as_bytes()).unwrap();
            assert_eq!(events.len(), 1);
        }
    }
}
