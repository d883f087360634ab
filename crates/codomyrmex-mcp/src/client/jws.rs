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
        let bad = || "the private key is not a PKCS#8 PEM P-256 key".to_owned();
        let body: String = pem
            .trim()
            .strip_prefix("-----BEGIN PRIVATE KEY-----")
            .and_then(|r| r.trim_end().strip_suffix("-----END PRIVATE KEY-----"))
            .ok_or_else(bad)?
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| bad())?;
        let scalar = pkcs8_p256_scalar(&der).ok_or_else(bad)?;
        SigningKey::from_slice(scalar).map(Self).map_err(|_| bad())
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

/// One DER element of `der` at its start: (tag, contents, the rest).
fn der_element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        0..=0x7f => (usize::from(first), rest),
        0x81 => {
            let (&l, rest) = rest.split_first()?;
            (usize::from(l), rest)
        }
        0x82 => {
            let (l, rest) = rest.split_at_checked(2)?;
            (usize::from(l[0]) << 8 | usize::from(l[1]), rest)
        }
        _ => return None,
    };
    let (contents, rest) = rest.split_at_checked(len)?;
    Some((tag, contents, rest))
}

/// The P-256 private scalar of a PKCS#8 `PrivateKeyInfo` (RFC 5208) holding an
/// `ECPrivateKey` (RFC 5915): the algorithm must be id-ecPublicKey on prime256v1.
fn pkcs8_p256_scalar(der: &[u8]) -> Option<&[u8]> {
    const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    const PRIME256V1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let (0x30, info, _) = der_element(der)? else {
        return None;
    };
    let (0x02, [0], info) = der_element(info)? else {
        return None;
    };
    let (0x30, algorithm, info) = der_element(info)? else {
        return None;
    };
    let (0x06, EC_PUBLIC_KEY, curve) = der_element(algorithm)? else {
        return None;
    };
    let (0x06, PRIME256V1, _) = der_element(curve)? else {
        return None;
    };
    let (0x04, key, _) = der_element(info)? else {
        return None;
    };
    let (0x30, ec, _) = der_element(key)? else {
        return None;
    };
    let (0x02, [1], ec) = der_element(ec)? else {
        return None;
    };
    match der_element(ec)? {
        (0x04, scalar, _) if scalar.len() == 32 => Some(scalar),
        _ => None,
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

    /// A minimal PKCS#8 P-256 key (RFC 5208 and 5915, no optional fields): d = 1, so the
    /// public key is the generator.
    const PEM_D1: &str = "-----BEGIN PRIVATE KEY-----\n\
        MEECAQAwEwYHKoZIzj0CAQYIKoZIzj0DAQcEJzAlAgEBBCAAAAAAAAAAAAAAAAAA\n\
        AAAAAAAAAAAAAAAAAAAAAAAAAQ==\n\
        -----END PRIVATE KEY-----\n";

    #[test]
    fn pkcs8_pem_keys_are_read() {
        let key = Es256Key::from_pkcs8_pem(PEM_D1, "ES256").unwrap();
        assert_eq!(
            key.public_jwk()["x"],
            "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY"
        );
    }

    #[test]
    fn bad_keys_and_algorithms_are_errors() {
        assert!(Es256Key::from_pkcs8_pem("not a key", "ES256").is_err());
        assert!(Es256Key::from_pkcs8_pem(PEM_D1, "RS256").is_err());
        // Every truncation, and another curve OID.
        let der = base64::engine::general_purpose::STANDARD
            .decode("MEECAQAwEwYHKoZIzj0CAQYIKoZIzj0DAQcEJzAlAgEBBCAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQ==")
            .unwrap();
        for cut in 0..der.len() {
            assert!(pkcs8_p256_scalar(&der[..cut]).is_none(), "{cut}");
        }
        let mut other = der.clone();
        other[25] = 0x22;
        assert!(pkcs8_p256_scalar(&other).is_none());
        assert!(pkcs8_p256_scalar(&der).is_some());
    }
}
