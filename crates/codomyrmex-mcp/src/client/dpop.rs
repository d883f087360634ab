//! DPoP (RFC 9449): sender-constrained access tokens for the client's OAuth flow. One
//! ES256 key per [`OAuthConfig`](super::oauth::OAuthConfig) (made for the process, never
//! stored); a fresh proof (`typ: dpop+jwt`, the public JWK, `jti`, `htm`, `htu`, `iat`, and
//! `ath` beside an access token) on every token request and every request to the
//! resource; the last `DPoP-Nonce` each server sent, echoed in the next proof to it.
//!
//! Used only when the authorization server lists ES256 in
//! `dpop_signing_alg_values_supported`; a token the server issues as `Bearer` is then sent as
//! `Bearer`. Not a DPoP server: nothing here checks a proof.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use super::jws::{Es256Key, random_id, sha256_b64};
use super::lock;
use super::oauth_fetch::{split_url, unix_now};

/// The `DPoP-Nonce` response header.
pub const NONCE_HEADER: &str = "dpop-nonce";

/// A client's DPoP key and the nonces servers gave it.
#[derive(Debug)]
pub struct Dpop {
    key: Es256Key,
    /// The last nonce of each server, by origin.
    nonces: Mutex<HashMap<String, String>>,
}

impl Dpop {
    /// A DPoP key made now.
    pub fn generate() -> Result<Self, String> {
        Ok(Self::with_key(Es256Key::generate()?))
    }

    /// DPoP with `key`.
    pub fn with_key(key: Es256Key) -> Self {
        Self {
            key,
            nonces: Mutex::new(HashMap::new()),
        }
    }

    /// The key's JWK thumbprint: what a bound token's `cnf.jkt` names.
    pub fn thumbprint(&self) -> String {
        self.key.thumbprint()
    }

    /// A proof for one request: `method` to `url` (its query and fragment left out of
    /// `htu`), with `ath` when presenting `access_token`, and the server's last nonce.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = json!({
            "jti": random_id()?,
            "htm": method,
            "htu": htu,
            "iat": unix_now(),
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(sha256_b64(token));
        }
        if let Some(nonce) = origin(url).and_then(|o| lock(&self.nonces).get(&o).cloned()) {
            claims["nonce"] = json!(nonce);
        }
        let mut header = Map::new();
        header.insert("typ".into(), json!("dpop+jwt"));
        header.insert("jwk".into(), self.key.public_jwk());
        Ok(self.key.sign(header, &claims))
    }

    /// Keeps the nonce the server at `url` sent; whether it is new (a retry can help).
    pub fn note_nonce(&self, url: &str, nonce: &str) -> bool {
        let Some(origin) = origin(url) else {
            return false;
        };
        let nonce = nonce.trim();
        if nonce.is_empty() {
            return false;
        }
        lock(&self.nonces).insert(origin, nonce.to_owned()) != Some(nonce.to_owned())
    }
}

fn origin(url: &str) -> Option<String> {
    split_url(url).map(|(origin, _)| origin.to_ascii_lowercase())
}

/// Whether the authorization server metadata offers DPoP with ES256.
pub fn offered(meta: &Value) -> bool {
    meta.get("dpop_signing_alg_values_supported")
        .and_then(Value::as_array)
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some("ES256")))
}

/// Whether a `WWW-Authenticate` header (or a token endpoint's `error`) asks for a nonce.
pub fn asks_for_nonce(error: Option<&str>) -> bool {
    error == Some("use_dpop_nonce")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn claims(jwt: &str) -> (Value, Value) {
        let part = |i: usize| -> Value {
            let seg = jwt.split('.').nth(i).unwrap();
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(seg).unwrap()).unwrap()
        };
        (part(0), part(1))
    }

    #[test]
    fn proofs_carry_what_rfc_9449_asks() {
        let dpop = Dpop::generate().unwrap();
        let a = dpop
            .proof("POST", "http://h:1/mcp?x=1#f", Some("tok"))
            .unwrap();
        let (header, body) = claims(&a);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none());
        assert_eq!(body["htm"], "POST");
        assert_eq!(body["htu"], "http://h:1/mcp");
        assert_eq!(body["ath"], sha256_b64("tok"));
        assert!(body.get("nonce").is_none());
        let b = dpop.proof("POST", "http://h:1/mcp", None).unwrap();
        let (_, body_b) = claims(&b);
        assert_ne!(body["jti"], body_b["jti"], "every proof is fresh");
        assert!(body_b.get("ath").is_none());
    }

    #[test]
    fn nonces_are_per_server_and_echoed() {
        let dpop = Dpop::generate().unwrap();
        assert!(dpop.note_nonce("http://as:1/token", "n1"));
        assert!(!dpop.note_nonce("http://as:1/other", "n1"), "not new");
        assert!(!dpop.note_nonce("http://as:1/token", " "));
        let (_, body) = claims(&dpop.proof("POST", "http://AS:1/token", None).unwrap());
        assert_eq!(body["nonce"], "n1");
        let (_, body) = claims(&dpop.proof("POST", "http://rs:2/mcp", None).unwrap());
        assert!(body.get("nonce").is_none());
    }

    #[test]
    fn only_es256_is_taken_up() {
        assert!(offered(
            &json!({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
        ));
        assert!(!offered(
            &json!({"dpop_signing_alg_values_supported": ["RS256"]})
        ));
        assert!(!offered(&json!({})));
    }
}
