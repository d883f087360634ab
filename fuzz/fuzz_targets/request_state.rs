//! Unsealing of `requestState`: arbitrary strings are refused without panicking; arbitrary
//! payloads behind a valid tag are handled; sealed states open only for the request they were
//! issued for, and any change to one is detected.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use codomyrmex_mcp::fuzzing::RequestStateSealer;
use fuzz_support::{json_object, json_value, pick_str};
use libfuzzer_sys::fuzz_target;

const METHODS: &[&str] = &["tools/call", "prompts/get", "resources/read"];
const TARGETS: &[&str] = &["ask", "echo", "test://items/1", ""];

fn sealer() -> &'static RequestStateSealer {
    static S: OnceLock<RequestStateSealer> = OnceLock::new();
    S.get_or_init(|| RequestStateSealer::new([42; 32], Duration::from_secs(600)))
}

fn principal(u: &mut Unstructured) -> Result<Option<String>> {
    Ok(if u.arbitrary()? {
        Some(pick_str(u, &["alice", "bob", ""])?)
    } else {
        None
    })
}

fn run(u: &mut Unstructured) -> Result<()> {
    let s = sealer();
    let method = pick_str(u, METHODS)?;
    let target = pick_str(u, TARGETS)?;
    let who = principal(u)?;
    match u.int_in_range(0..=2u8)? {
        0 => {
            // Anything a client may send.
            let sealed: String = u.arbitrary()?;
            if let Ok((responses, state)) = s.open(&sealed, &method, &target, who.as_deref()) {
                panic!("a forged state opened: {sealed:?} -> {responses:?} {state:?}");
            }
        }
        1 => {
            // A valid tag over arbitrary bytes: the payload checks must hold on their own.
            let n = u.arbitrary_len::<u8>()?;
            let payload = u.bytes(n)?;
            let sealed = s.seal_payload(payload);
            let _ = s.open(&sealed, &method, &target, who.as_deref());
        }
        _ => {
            let responses = json_object(u, 2)?;
            let state = if u.arbitrary()? {
                Some(json_value(u, 2)?)
            } else {
                None
            };
            let sealed = s.seal(&method, &target, who.as_deref(), &responses, state.as_ref());
            let (r, st) = s
                .open(&sealed, &method, &target, who.as_deref())
                .expect("a fresh state opens for its own request");
            assert_eq!(r, responses);
            assert_eq!(st, state.filter(|v| !v.is_null()));
            // Another request, or another caller, cannot use it.
            let other_target = format!("{target}x");
            assert!(
                s.open(&sealed, &method, &other_target, who.as_deref())
                    .is_err()
            );
            let other_who = format!("{}-other", who.clone().unwrap_or_default());
            assert!(s.open(&sealed, &method, &target, Some(&other_who)).is_err());
            // Any single-character change is detected.
            if !sealed.is_empty() {
                let i = u.choose_index(sealed.len())?;
                let replacement = *u.choose(b"AQgw_-.x0")?;
                let mut bytes = sealed.clone().into_bytes();
                if bytes[i] != replacement {
                    bytes[i] = replacement;
                    let tampered = String::from_utf8(bytes).expect("ASCII");
                    assert!(
                        s.open(&tampered, &method, &target, who.as_deref()).is_err(),
                        "tampering at {i} went unnoticed"
                    );
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
