//! Compact JWS signing with ES256 (ECDSA on P-256 with SHA-256, RFC 7515/7518), the one
//! signature the client's OAuth extensions make: `private_key_jwt` client assertions (RFC
//! 7523) from a PKCS#8 PEM key, and DPoP proofs (RFC 9449) from a key generated for the
//! process. Also the key's public JWK and its RFC 7638 thumbprint.
//!
//! Signing only: the client never verifies a JWT (access tokens are opaque to it). Other
//! algorithms (RS256, EdDSA, ...) are refused with a clear error, not signed.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// An ES256 signing key.
#[derive(Clone)]
pub struct Es256Key(SigningKey);

impl std::fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the private key.
        f.debug_tuple("Es256Key").field(&self.thumbprint()).finish()
    }
}

impl Es256Key {
    /// A fresh key from the OS's randomness.
    pub fn generate() -> Result<Self, String> {
        // A random 32-byte string is a valid scalar but with probability ~2^-128; retry.
        for _ in 0..8 {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a key: {e}"))?;
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                return Ok(Self(key));
            }
        }
        Err("could not generate a P-256 key".into())
    }

    /// A key from a PKCS#8 PEM document (`-----BEGIN PRIVATE KEY-----`), for `alg`, which
    /// must be `ES256`.
    pub fn from_pkcs8_pem(pem: &str, alg: &str) -> Result<Self, String> {
        if alg != "ES256" {
            return Err(format!(
                "signing algorithm {alg:?} is not supported (only ES256 is)"
            ));
        }
        pem.trim()
            .parse::<SigningKey>()
            .map(Self)
            .map_err(|_| "the private key is not a PKCS#8 PEM P-256 key".to_owned())
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`; never `d`).
    pub fn public_jwk(&self) -> Value {
        let point = self.0.verifying_key().to_sec1_point(false);
        let (x, y) = (
            point.x().map(|x| URL_SAFE_NO_PAD.encode(x)),
            point.y().map(|y| URL_SAFE_NO_PAD.encode(y)),
        );
        json!({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    }

    /// The JWK SHA-256 thumbprint (RFC 7638): the required members in lexicographic order,
    /// no whitespace, hashed, base64url.
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        let field = |k: &str| jwk.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            field("x"),
            field("y")
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// Signs `claims` with `header` (its `alg` is set to ES256): the compact serialization.
    pub fn sign(&self, header: Map<String, Value>, claims: &Value) -> String {
        let mut header = header;
        header.insert("alg".into(), json!("ES256"));
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(Value::Object(header).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature: Signature = self.0.sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }
}

/// A random `jti`: 16 bytes, base64url.
pub fn random_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a jti: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// base64url(SHA-256(text)): a DPoP proof's `ath`.
pub fn sha256_b64(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier as _;

    #[test]
    fn a_signature_verifies_with_the_public_jwk() {
        let key = Es256Key::generate().unwrap();
        let jwt = key.sign(Map::new(), &json!({"a": 1}));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        let jwk = key.public_jwk();
        assert!(jwk.get("d").is_none());
        let mut sec1 = vec![4u8];
        for k in ["x", "y"] {
            sec1.extend(URL_SAFE_NO_PAD.decode(jwk[k].as_str().unwrap()).unwrap());
        }
        let verifying = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        verifying
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // d = 1: the public key is P-256's generator point (SEC 2, section 2.4.2).
        let mut one = [0u8; 32];
        one[31] = 1;
        let key = Es256Key(SigningKey::from_slice(&one).unwrap());
        let jwk = key.public_jwk();
        // The generator point of P-256.
        assert_eq!(jwk["x"], "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY");
        assert_eq!(jwk["y"], "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU");
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        assert_eq!(key.thumbprint(), sha256_b64(&canonical));
    }

    #[test]
    fn bad_keys_and_algorithms_are_errors() {
        assert!(Es256Key::from_pkcs8_pem("not a key", "ES256").is_err());
        assert!(Es256Key::from_pkcs8_pem("", "RS256").is_err());
    }
}
