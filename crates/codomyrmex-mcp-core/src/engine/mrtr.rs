//! Multi round-trip requests (2026-07-28): the round state a tool sees, and sealing of
//! `requestState` so a client cannot tamper with it.
//!
//! A request that needs input from the client returns `InputRequiredResult` with
//! `inputRequests` and a sealed `requestState`. The client retries with `inputResponses` and
//! the state; the server re-runs the handler with every response gathered so far. The state is
//! `base64url(payload) "." base64url(HMAC-SHA256(key, payload))`; the payload binds the method,
//! the target (tool, prompt or URI), the principal and an expiry.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::platform::{Entropy, TimeSource};
pub(crate) use crate::round::RoundTrip;
use crate::wire::ErrorObject;

/// Seals and opens `requestState`.
///
/// Fails closed: without a configured key and without OS randomness it has no key, and then
/// refuses to seal ([`Sealer::seal`] errs) and opens nothing.
pub(crate) struct Sealer {
    key: Option<[u8; 64]>,
    ttl: Duration,
    /// The wall clock expiry is set and checked against.
    time: Arc<dyn TimeSource>,
}

/// What a state is bound to.
pub(crate) struct Binding<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) principal: Option<&'a str>,
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn invalid(reason: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Invalid requestState: {reason}"))
}

impl Sealer {
    /// A sealer with `key`, or a key drawn from `entropy` when `None`. If `entropy` fails,
    /// the sealer has no key: it never falls back to a guessable one. Expiry follows `time`'s
    /// wall clock.
    pub(crate) fn new(
        key: Option<[u8; 32]>,
        ttl: Duration,
        entropy: &dyn Entropy,
        time: Arc<dyn TimeSource>,
    ) -> Self {
        let mut full = [0u8; 64];
        let key = match key {
            Some(k) => {
                full[..32].copy_from_slice(&k);
                Some(full)
            }
            None => match entropy.fill(&mut full) {
                Ok(()) => Some(full),
                Err(e) => {
                    tracing::error!(error = %e, "no OS randomness for the requestState key; multi round-trip requests are refused");
                    None
                }
            },
        };
        Self { key, ttl, time }
    }

    fn mac(&self, payload: &[u8]) -> Option<Hmac<Sha256>> {
        // A block-sized (64-byte) key makes HMAC's keyed constructor infallible.
        let key: &hmac::digest::Key<Hmac<Sha256>> = self.key.as_ref()?.into();
        let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new(key);
        mac.update(payload);
        Some(mac)
    }

    pub(crate) fn seal(
        &self,
        binding: &Binding<'_>,
        responses: &Map<String, Value>,
        state: Option<&Value>,
    ) -> Result<String, ErrorObject> {
        self.seal_at(binding, responses, state, self.time.wall())
    }

    /// [`seal`](Self::seal) at `wall`, the wall-clock time the round ended at.
    pub(crate) fn seal_at(
        &self,
        binding: &Binding<'_>,
        responses: &Map<String, Value>,
        state: Option<&Value>,
        wall: std::time::SystemTime,
    ) -> Result<String, ErrorObject> {
        let payload = json!({
            "v": 1,
            "m": binding.method,
            "t": binding.target,
            "p": binding.principal,
            "exp": secs(wall) + self.ttl.as_secs(),
            "r": responses,
            "s": state,
        });
        self.seal_payload(payload.to_string().as_bytes())
            .ok_or_else(|| ErrorObject::internal("The server cannot seal requestState"))
    }

    /// Seals raw payload bytes: `base64url(payload) "." base64url(tag)`. Tests and fuzzing use
    /// it to reach what [`Sealer::open`] does after the integrity check.
    /// `None` when the sealer has no key.
    pub(crate) fn seal_payload(&self, bytes: &[u8]) -> Option<String> {
        let tag = self.mac(bytes)?.finalize().into_bytes();
        Some(format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(bytes),
            URL_SAFE_NO_PAD.encode(tag)
        ))
    }

    /// Verifies and opens a state: returns the earlier responses and the handler's state.
    /// `now` is the wall time the request is handled at.
    pub(crate) fn open(
        &self,
        sealed: &str,
        binding: &Binding<'_>,
        now: SystemTime,
    ) -> Result<(Map<String, Value>, Option<Value>), ErrorObject> {
        if sealed.len() > 1 << 20 {
            return Err(invalid("too large"));
        }
        let (body, tag) = sealed.split_once('.').ok_or_else(|| invalid("malformed"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| invalid("malformed"))?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| invalid("malformed"))?;
        self.mac(&bytes)
            .ok_or_else(|| invalid("the server has no key to verify it"))?
            .verify_slice(&tag)
            .map_err(|_| invalid("integrity check failed"))?;
        let payload: Value = serde_json::from_slice(&bytes).map_err(|_| invalid("malformed"))?;
        if payload["v"] != 1 {
            return Err(invalid("unknown version"));
        }
        if payload["exp"].as_u64().is_none_or(|e| e < secs(now)) {
            return Err(invalid("expired"));
        }
        if payload["m"] != binding.method || payload["t"] != binding.target {
            return Err(invalid("issued for a different request"));
        }
        if payload["p"].as_str() != binding.principal {
            return Err(invalid("issued to a different principal"));
        }
        let responses = match payload.get("r") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let state = payload.get("s").filter(|s| !s.is_null()).cloned();
        Ok((responses, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{FrozenTime, NoEntropy};

    /// Distinct bytes on every draw (so two sealers get two keys); never all zero.
    struct TestEntropy;
    impl Entropy for TestEntropy {
        fn fill(&self, buf: &mut [u8]) -> Result<(), crate::platform::EntropyError> {
            crate::platform::testing::platform().entropy.fill(buf)
        }
    }

    fn clock() -> Arc<FrozenTime> {
        Arc::new(FrozenTime::starting_at(
            crate::platform::test_origin(),
            UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        ))
    }

    /// The wall time of `clock()` before it is moved.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    fn sealer(key: Option<[u8; 32]>, ttl: Duration) -> Sealer {
        Sealer::new(key, ttl, &TestEntropy, clock())
    }

    fn b<'a>(m: &'a str, t: &'a str, p: Option<&'a str>) -> Binding<'a> {
        Binding {
            method: m,
            target: t,
            principal: p,
        }
    }

    #[test]
    fn round_trips_and_rejects_tampering() {
        let s = sealer(None, Duration::from_secs(60));
        let mut r = Map::new();
        r.insert("k".into(), json!({"action": "accept"}));
        let sealed = s
            .seal(&b("tools/call", "t", None), &r, Some(&json!({"step": 2})))
            .unwrap();
        let (r2, st) = s.open(&sealed, &b("tools/call", "t", None), now()).unwrap();
        assert_eq!(r2, r);
        assert_eq!(st, Some(json!({"step": 2})));
        // Flip one character of the payload.
        let mut chars: Vec<char> = sealed.chars().collect();
        chars[3] = if chars[3] == 'A' { 'B' } else { 'A' };
        let tampered: String = chars.into_iter().collect();
        assert_eq!(
            s.open(&tampered, &b("tools/call", "t", None), now())
                .unwrap_err()
                .code,
            -32602
        );
        assert!(
            s.open("garbage", &b("tools/call", "t", None), now())
                .is_err()
        );
        assert!(
            s.open(&sealed, &b("tools/call", "other", None), now())
                .is_err()
        );
        assert!(
            s.open(&sealed, &b("prompts/get", "t", None), now())
                .is_err()
        );
        assert!(
            s.open(&sealed, &b("tools/call", "t", Some("mallory")), now())
                .is_err()
        );
        let other = sealer(None, Duration::from_secs(60));
        assert!(
            other
                .open(&sealed, &b("tools/call", "t", None), now())
                .is_err()
        );
    }

    /// The tag is plain HMAC-SHA256 over the payload: RFC 4231 test case 2 (key "Jefe", which
    /// HMAC zero-pads to the block size just as the sealer pads a 32-byte key).
    #[test]
    fn the_tag_is_hmac_sha256_rfc_4231() {
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let s = sealer(Some(key), Duration::from_secs(60));
        assert_eq!(
            s.seal_payload(b"what do ya want for nothing?").unwrap(),
            // base64url("what do ya want for nothing?") "." base64url(5bdcc146...64ec3843)
            "d2hhdCBkbyB5YSB3YW50IGZvciBub3RoaW5nPw.W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM"
        );
    }

    /// A state sealed by an earlier build (same key) still opens: the format and the MAC do
    /// not change with the crates that compute them.
    #[test]
    fn a_state_sealed_by_an_earlier_build_opens() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let s = sealer(Some(key), Duration::from_secs(60));
        let payload = br#"{"v":1,"m":"tools/call","t":"t","p":null,"exp":99999999999,"r":{"k":"yes"},"s":{"step":2}}"#;
        let sealed = "eyJ2IjoxLCJtIjoidG9vbHMvY2FsbCIsInQiOiJ0IiwicCI6bnVsbCwiZXhwIjo5OTk5OTk5OTk5OSwiciI6eyJrIjoieWVzIn0sInMiOnsic3RlcCI6Mn19.qapX2dBe6fdKZs8Q_Ozk5hoJjgM_3cj3lPZ_yhPHImw";
        assert_eq!(s.seal_payload(payload).unwrap(), sealed);
        let (r, st) = s.open(sealed, &b("tools/call", "t", None), now()).unwrap();
        assert_eq!(r["k"], "yes");
        assert_eq!(st, Some(json!({"step": 2})));
    }

    #[test]
    fn expired_states_are_refused() {
        let time = clock();
        let s = Sealer::new(
            Some([7; 32]),
            Duration::from_secs(0),
            &TestEntropy,
            time.clone(),
        );
        let sealed = s
            .seal(&b("tools/call", "t", None), &Map::new(), None)
            .unwrap();
        assert!(s.open(&sealed, &b("tools/call", "t", None), now()).is_ok());
        // On the virtual clock: no sleep.
        time.advance(Duration::from_millis(1100));
        assert!(
            s.open(&sealed, &b("tools/call", "t", None), time.wall())
                .unwrap_err()
                .message
                .contains("expired")
        );
    }

    #[test]
    fn without_randomness_the_sealer_fails_closed() {
        let s = Sealer::new(None, Duration::from_secs(60), &NoEntropy, clock());
        let err = s
            .seal(&b("tools/call", "t", None), &Map::new(), None)
            .unwrap_err();
        assert_eq!(err.code, -32603);
        // Nothing opens either, not even a state sealed with the all-zero key.
        let zero = sealer(Some([0; 32]), Duration::from_secs(60));
        let forged = zero
            .seal(&b("tools/call", "t", None), &Map::new(), None)
            .unwrap();
        assert!(s.open(&forged, &b("tools/call", "t", None), now()).is_err());
        // A configured key needs no randomness.
        let keyed = Sealer::new(Some([3; 32]), Duration::from_secs(60), &NoEntropy, clock());
        assert!(
            keyed
                .seal(&b("tools/call", "t", None), &Map::new(), None)
                .is_ok()
        );
    }
}
