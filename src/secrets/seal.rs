//! Sealing and opening one value: XChaCha20-Poly1305 under the server key, a random 24-byte
//! nonce per seal stored before the ciphertext, and the row the value belongs to with the
//! key's id as associated data.

use std::fmt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use secrecy::{ExposeSecret, SecretString};

use super::{Keyring, SecretsError};

/// Bytes of the nonce before the ciphertext.
const NONCE_BYTES: usize = 24;
/// What the associated data begins with: the format's version.
const CONTEXT: &[u8] = b"rummy-secret-v1";

/// The row a value is sealed for: whose (`""`: the server's), of what kind, under what name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding<'a> {
    pub person: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

impl fmt::Display for Binding<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = if self.person.is_empty() {
            "the server"
        } else {
            self.person
        };
        write!(f, "{}/{} of {whose}", self.kind, self.name)
    }
}

impl Binding<'_> {
    /// The associated data: the context, then the key's id and each part, length-prefixed,
    /// so no two bindings share one.
    fn associated(&self, key_id: &str) -> Vec<u8> {
        let mut data = CONTEXT.to_vec();
        for part in [key_id, self.person, self.kind, self.name] {
            data.extend_from_slice(&(part.len() as u64).to_be_bytes());
            data.extend_from_slice(part.as_bytes());
        }
        data
    }
}

/// A sealed value as stored: the id of the key that sealed it, and nonce + ciphertext.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub key_id: String,
    pub bytes: Vec<u8>,
}

impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sealed({}, {} bytes)", self.key_id, self.bytes.len())
    }
}

impl Keyring {
    /// `value` sealed under the current key for `binding`.
    pub(crate) fn seal(
        &self,
        binding: Binding<'_>,
        value: &SecretString,
    ) -> Result<Sealed, SecretsError> {
        let (key_id, key) = self.current();
        let mut nonce = [0_u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce)
            .map_err(|error| SecretsError::Random(error.to_string()))?;
        let associated = binding.associated(key_id);
        let ciphertext = XChaCha20Poly1305::new(key)
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: value.expose_secret().as_bytes(),
                    aad: &associated,
                },
            )
            .map_err(|_| SecretsError::Unopenable(binding.to_string()))?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&ciphertext);
        Ok(Sealed {
            key_id: key_id.clone(),
            bytes,
        })
    }

    /// The value `sealed` holds, when it was sealed for `binding` under a key this server
    /// holds and was not altered since.
    pub(crate) fn open(
        &self,
        binding: Binding<'_>,
        sealed: &Sealed,
    ) -> Result<SecretString, SecretsError> {
        let key = self
            .key(&sealed.key_id)
            .ok_or_else(|| SecretsError::UnknownKey(binding.to_string(), sealed.key_id.clone()))?;
        let unopenable = || SecretsError::Unopenable(binding.to_string());
        if sealed.bytes.len() < NONCE_BYTES {
            return Err(unopenable());
        }
        let (nonce, ciphertext) = sealed.bytes.split_at(NONCE_BYTES);
        let associated = binding.associated(&sealed.key_id);
        let plain = XChaCha20Poly1305::new(key)
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &associated,
                },
            )
            .map_err(|_| unopenable())?;
        let text = String::from_utf8(plain).map_err(|_| unopenable())?;
        Ok(SecretString::from(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX_A: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const HEX_B: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    const ADA: Binding<'static> = Binding {
        person: "ada",
        kind: "provider",
        name: "openai",
    };

    fn secret(text: &str) -> SecretString {
        SecretString::from(text.to_owned())
    }

    #[test]
    fn a_sealed_value_opens_for_its_row_and_hides_its_text() {
        let keyring = Keyring::parse(&format!("a:{HEX_A}")).unwrap();
        let sealed = keyring.seal(ADA, &secret("sk-ada-123")).unwrap();
        assert_eq!(sealed.key_id, "a");
        assert!(!sealed
            .bytes
            .windows(b"sk-ada".len())
            .any(|window| window == b"sk-ada"));
        assert_eq!(
            keyring.open(ADA, &sealed).unwrap().expose_secret(),
            "sk-ada-123"
        );
        let again = keyring.seal(ADA, &secret("sk-ada-123")).unwrap();
        assert_ne!(sealed.bytes, again.bytes, "a fresh nonce each time");
        assert_eq!(
            format!("{sealed:?}"),
            format!("Sealed(a, {} bytes)", sealed.bytes.len())
        );
    }

    #[test]
    fn a_value_moved_to_another_row_does_not_open() {
        let keyring = Keyring::parse(&format!("a:{HEX_A}")).unwrap();
        let sealed = keyring.seal(ADA, &secret("sk-ada")).unwrap();
        for moved in [
            Binding {
                person: "bob",
                ..ADA
            },
            Binding { kind: "mcp", ..ADA },
            Binding { name: "xai", ..ADA },
            Binding {
                person: "adap",
                name: "rovideropenai",
                kind: "",
            },
        ] {
            let error = keyring.open(moved, &sealed).unwrap_err().to_string();
            assert!(error.contains("altered or moved"), "{error}");
        }
    }

    #[test]
    fn an_altered_value_does_not_open() {
        let keyring = Keyring::parse(&format!("a:{HEX_A}")).unwrap();
        let sealed = keyring.seal(ADA, &secret("sk-ada")).unwrap();
        for at in [0, NONCE_BYTES, sealed.bytes.len() - 1] {
            let mut altered = sealed.clone();
            altered.bytes[at] ^= 1;
            let error = keyring.open(ADA, &altered).unwrap_err().to_string();
            assert!(error.contains("provider/openai of ada"), "{error}");
        }
        let short = Sealed {
            key_id: "a".into(),
            bytes: sealed.bytes[..NONCE_BYTES - 1].to_vec(),
        };
        assert!(keyring.open(ADA, &short).is_err());
    }

    #[test]
    fn a_value_relabelled_with_another_key_id_does_not_open() {
        let keyring = Keyring::parse(&format!("a:{HEX_A}\nb:{HEX_A}")).unwrap();
        let mut sealed = keyring.seal(ADA, &secret("sk-ada")).unwrap();
        sealed.key_id = "b".into();
        assert!(keyring.open(ADA, &sealed).is_err());
    }

    #[test]
    fn an_old_key_opens_and_an_unknown_one_is_named() {
        let old = Keyring::parse(&format!("old:{HEX_A}")).unwrap();
        let sealed = old.seal(ADA, &secret("sk-ada")).unwrap();
        let rotated = Keyring::parse(&format!("new:{HEX_B}\nold:{HEX_A}")).unwrap();
        assert_eq!(
            rotated.open(ADA, &sealed).unwrap().expose_secret(),
            "sk-ada"
        );
        assert_eq!(rotated.seal(ADA, &secret("x")).unwrap().key_id, "new");
        let forgotten = Keyring::parse(&format!("new:{HEX_B}")).unwrap();
        let error = forgotten.open(ADA, &sealed).unwrap_err().to_string();
        assert!(error.contains("'old'"), "{error}");
    }
}
