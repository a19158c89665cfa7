//! How a delivery is signed: `X-Rummy-Signature: t=<unix seconds>,v1=<hex>`, where `<hex>`
//! is HMAC-SHA256, keyed with the webhook's secret (its text, as shown once), of
//! `<unix seconds>.<body>`. A receiver computes the same over the raw body it received and
//! compares in constant time, and refuses a timestamp far from its clock (a replay).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The signature header's name.
pub(crate) const HEADER: &str = "X-Rummy-Signature";

/// The header's value for `body` sent at `timestamp` (unix seconds) under `secret`.
pub(crate) fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex(&mac(secret, timestamp, body)))
}

/// HMAC-SHA256 of `<timestamp>.<body>` keyed with `secret`.
fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: a long one is hashed first, a short one padded.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return Vec::new();
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_hmac_sha256_of_the_timestamp_a_dot_and_the_body() {
        // The signed text is the timestamp, a dot and the body, joined.
        let joined = Hmac::<Sha256>::new_from_slice(b"Jefe")
            .map(|mut mac| {
                mac.update(b"1700000000.what do ya want for nothing?");
                mac.finalize().into_bytes().to_vec()
            })
            .unwrap();
        assert_eq!(
            sign("Jefe", 1_700_000_000, b"what do ya want for nothing?"),
            format!("t=1700000000,v1={}", hex(&joined))
        );
        // The key is used as RFC 4231's test case 2 uses it.
        let rfc = Hmac::<Sha256>::new_from_slice(b"Jefe")
            .map(|mut mac| {
                mac.update(b"what do ya want for nothing?");
                hex(&mac.finalize().into_bytes())
            })
            .unwrap();
        assert_eq!(
            rfc,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_ne!(
            sign("Jefe", 1_700_000_001, b"what do ya want for nothing?"),
            sign("Jefe", 1_700_000_000, b"what do ya want for nothing?")
        );
    }
}
