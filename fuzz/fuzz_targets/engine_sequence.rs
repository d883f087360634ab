//! The engine, fed arbitrary message sequences of both eras on one session (as over stdio),
//! with tools that sleep, panic, ask for input and return too much.
//!
//! Invariants checked: nothing panics (except the tools, whose panics must be contained);
//! every request gets at most one answer, and only requests get answers; nothing a panicking
//! handler said reaches the client; every outgoing message encodes to one line of JSON; no
//! work hangs once cancelled; and nothing stays in flight at the end.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::Unstructured;
use codomyrmex_mcp::MessageSink;
use codomyrmex_mcp::engine::Handled;
use codomyrmex_mcp::wire::{DecodeError, Decoded, IncomingMessage, OutgoingMessage, decode};
use fuzz_support::{RecordingSink, SECRET, engine, message, quiet_expected_panics};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Checks one outgoing message and returns the ids of the responses in it.
fn inspect(m: &OutgoingMessage, states: &mut Vec<String>) -> Vec<Value> {
    let bytes = m.to_bytes();
    assert!(!bytes.contains(&b'\n'), "an outgoing message spans lines");
    let text = String::from_utf8(bytes).expect("outgoing JSON is UTF-8");
    assert!(
        !text.contains(SECRET),
        "panic text reached the client: {text}"
    );
    let value: Value = serde_json::from_str(&text).expect("outgoing message is JSON");
    match m {
        OutgoingMessage::Batch(items) => items.iter().flat_map(|i| inspect(i, states)).collect(),
        OutgoingMessage::Response { id, result } => {
            if let Some(s) = result.get("requestState").and_then(Value::as_str)
                && states.len() < 8
            {
                states.push(s.to_owned());
            }
            vec![serde_json::to_value(id).unwrap_or_default()]
        }
        OutgoingMessage::Error { id: Some(id), .. } => {
            vec![serde_json::to_value(id).unwrap_or_default()]
        }
        _ => {
            let _ = value;
            Vec::new()
        }
    }
}

async fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let engine = engine();
    let session = engine.new_session();
    let recorder = Arc::new(RecordingSink::default());
    let sink: Arc<dyn MessageSink> = recorder.clone();
    let answers: Arc<Mutex<Vec<OutgoingMessage>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    let mut states: Vec<String> = Vec::new();
    // Requests sent, by id (as JSON), counting duplicates.
    let mut asked: HashMap<String, usize> = HashMap::new();

    let steps = u.int_in_range(1..=24usize).unwrap_or(1);
    for _ in 0..steps {
        if u.is_empty() {
            break;
        }
        let bytes = if u.ratio(1, 16).unwrap_or(false) {
            // Raw bytes, as a broken client may send.
            let n = u.int_in_range(0..=64usize).unwrap_or(0);
            u.bytes(n).unwrap_or_default().to_vec()
        } else {
            let Ok(m) = message(&mut u, &states, 0) else {
                break;
            };
            serde_json::to_vec(&m).unwrap_or_default()
        };
        let decoded = decode(&bytes);
        let is_notification = matches!(
            decoded,
            Decoded::Single(Ok(IncomingMessage::Notification { .. }))
                | Decoded::Single(Ok(IncomingMessage::Response { .. }))
                | Decoded::Single(Ok(IncomingMessage::Error { .. }))
        );
        // What may be answered: requests, and invalid messages whose id could be read.
        let mut count = |m: &Result<IncomingMessage, DecodeError>| {
            let id = match m {
                Ok(IncomingMessage::Request { id, .. }) => id,
                Err(DecodeError::Invalid { id: Some(id), .. }) => id,
                _ => return,
            };
            let key = serde_json::to_string(id).unwrap_or_default();
            *asked.entry(key).or_default() += 1;
        };
        match &decoded {
            Decoded::Single(m) => count(m),
            Decoded::Batch(items) => items.iter().for_each(&mut count),
        }
        match engine.handle_decoded(&session, decoded, &sink) {
            Handled::Nothing => {}
            Handled::Reply(m) => {
                assert!(
                    !is_notification,
                    "a notification or response was answered: {m:?}"
                );
                answers.lock().unwrap().push(m);
            }
            work => {
                assert!(!is_notification, "a notification or response started work");
                let work = codomyrmex_mcp::runtime::drive(work);
                let answers = answers.clone();
                tasks.spawn(async move {
                    if let Some(m) = work.await {
                        answers.lock().unwrap().push(m);
                    }
                });
            }
        }
        // Let the work run a little, sometimes past timeouts, before the next message.
        match u.int_in_range(0..=3u8).unwrap_or(0) {
            0 => {}
            1 => tokio::task::yield_now().await,
            2 => tokio::time::sleep(Duration::from_millis(5)).await,
            _ => tokio::time::sleep(Duration::from_secs(31)).await,
        }
        let done: Vec<OutgoingMessage> = answers.lock().unwrap().drain(..).collect();
        for m in &done {
            for id in inspect(m, &mut states) {
                let key = serde_json::to_string(&id).unwrap_or_default();
                if key != "null" {
                    let n = asked
                        .get_mut(&key)
                        .unwrap_or_else(|| panic!("answer to {key}, never asked"));
                    assert!(*n > 0, "two answers to {key}");
                    *n -= 1;
                }
            }
        }
    }

    // Everything that can finish finishes (virtual time; tools sleep at most 120 s, the tool
    // timeout is 30 s). Subscriptions never end: cancel them, then nothing may still run.
    let _ = tokio::time::timeout(Duration::from_secs(300), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    session.cancel_all();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "work kept running after cancel_all");
    for m in answers.lock().unwrap().drain(..) {
        inspect(&m, &mut states);
    }
    for m in recorder.messages.lock().unwrap().iter() {
        inspect(m, &mut states);
    }
    assert_eq!(session.in_flight(), 0, "requests leaked in flight");
}

fuzz_target!(|data: &[u8]| {
    quiet_expected_panics();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(run(data));
});
