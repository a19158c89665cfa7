//! The server key: the current key, which seals, and the old keys still accepted for
//! opening, each with the id stored beside every value it sealed.
//!
//! Written as lines (or comma-separated items) `id:hex`, the current key first: the id is 1
//! to 32 letters, digits, `-` or `_`, the key 64 hex digits (32 bytes). From
//! `RUMMY_SECRETS_KEY` when set, else from the key file (`RUMMY_SECRETS_KEY_FILE`, default
//! `$RUMMY_HOME/secrets.key`), which must be readable by its owner only. With neither set
//! and no file at the default place, a key is made there (mode 0600) at first start.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chacha20poly1305::Key;

use super::SecretsError;
use crate::config::SecretSettings;
use crate::random::random_hex;

/// Bytes in a key.
const KEY_BYTES: usize = 32;
/// The key file's name under the home when none is configured.
const DEFAULT_FILE: &str = "secrets.key";

/// The server's keys; `Debug` names their ids only.
#[derive(Clone)]
pub(crate) struct Keyring {
    /// The current key first, then the old ones.
    keys: Vec<(String, Key)>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("Keyring").field("ids", &ids).finish()
    }
}

impl Keyring {
    /// The keys `settings` name, or the home's key file, made when it does not exist.
    pub(crate) fn load(settings: &SecretSettings, home: &Path) -> Result<Keyring, SecretsError> {
        let given = settings.key.expose().trim();
        if !given.is_empty() {
            return Keyring::parse(given);
        }
        let configured = settings.key_file.trim();
        let path = if configured.is_empty() {
            home.join(DEFAULT_FILE)
        } else {
            PathBuf::from(configured)
        };
        if configured.is_empty() && !path.exists() {
            make_key_file(&path)?;
        }
        read_key_file(&path)
    }

    /// Keys written as `id:hex` items, one a line or comma-separated, the current first.
    pub(crate) fn parse(text: &str) -> Result<Keyring, SecretsError> {
        let mut keys: Vec<(String, Key)> = Vec::new();
        for item in text.split([',', '\n']).map(str::trim) {
            if item.is_empty() || item.starts_with('#') {
                continue;
            }
            let (id, hex) = item.split_once(':').ok_or_else(|| {
                SecretsError::KeyFormat("each key is written id:hex (64 hex digits)".into())
            })?;
            let id = id.trim();
            let well_named = (1..=32).contains(&id.len())
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !well_named {
                return Err(SecretsError::KeyFormat(format!(
                    "key id '{id}' must be 1 to 32 letters, digits, - or _"
                )));
            }
            if keys.iter().any(|(seen, _)| seen == id) {
                return Err(SecretsError::KeyFormat(format!(
                    "key id '{id}' is given twice"
                )));
            }
            let bytes = decode_hex(hex.trim()).ok_or_else(|| {
                SecretsError::KeyFormat(format!(
                    "key '{id}' must be {} hex digits ({KEY_BYTES} bytes)",
                    KEY_BYTES * 2
                ))
            })?;
            keys.push((id.to_owned(), Key::clone_from_slice(&bytes)));
        }
        if keys.is_empty() {
            return Err(SecretsError::KeyFormat("no key is given".into()));
        }
        Ok(Keyring { keys })
    }

    /// The id of the key that seals.
    pub(crate) fn current_id(&self) -> &str {
        &self.current().0
    }

    pub(super) fn current(&self) -> &(String, Key) {
        &self.keys[0]
    }

    /// The key of id `id`, current or old.
    pub(super) fn key(&self, id: &str) -> Option<&Key> {
        self.keys
            .iter()
            .find(|(known, _)| known == id)
            .map(|(_, key)| key)
    }
}

/// `text` as exactly [`KEY_BYTES`] bytes of hex.
fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != KEY_BYTES * 2 || !text.is_ascii() {
        return None;
    }
    (0..KEY_BYTES)
        .map(|at| u8::from_str_radix(&text[at * 2..at * 2 + 2], 16).ok())
        .collect()
}

/// Reads the key file at `path`, refusing one that its group or others may read or write.
fn read_key_file(path: &Path) -> Result<Keyring, SecretsError> {
    let failed = |why: String| SecretsError::KeyFile {
        path: path.display().to_string(),
        why,
    };
    let metadata = fs::metadata(path).map_err(|error| failed(error.to_string()))?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(failed(format!(
            "its mode is {mode:04o}, open to its group or others: make it readable by the \
             server's user only (chmod 600)"
        )));
    }
    let text = fs::read_to_string(path).map_err(|error| failed(error.to_string()))?;
    Keyring::parse(&text).map_err(|error| failed(error.to_string()))
}

/// Makes a key file with one new random key, readable by its owner only.
fn make_key_file(path: &Path) -> Result<(), SecretsError> {
    let failed = |why: String| SecretsError::KeyFile {
        path: path.display().to_string(),
        why,
    };
    let random = |error: getrandom::Error| SecretsError::Random(error.to_string());
    let id = format!("k{}", random_hex(4).map_err(random)?);
    let key = random_hex(KEY_BYTES).map_err(random)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|error| failed(format!("cannot make it: {error}")))?;
    file.write_all(format!("{id}:{key}\n").as_bytes())
        .map_err(|error| failed(format!("cannot write it: {error}")))?;
    tracing::info!(
        path = %path.display(),
        key.id = id,
        "made a server key for secrets at rest (keep it: without it stored secrets do not open)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    const HEX_A: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const HEX_B: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    fn settings(key: &str, file: &str) -> SecretSettings {
        SecretSettings {
            key: Secret::new(key.into()),
            key_file: file.into(),
        }
    }

    #[test]
    fn the_first_key_seals_and_the_others_are_kept() {
        let keyring = Keyring::parse(&format!("new:{HEX_B}, old:{HEX_A}")).unwrap();
        assert_eq!(keyring.current_id(), "new");
        assert!(keyring.key("old").is_some());
        assert!(keyring.key("other").is_none());
        let debug = format!("{keyring:?}");
        assert!(debug.contains("new") && !debug.contains("ffee") && !debug.contains("255"));
    }

    #[test]
    fn malformed_keys_are_refused_with_what_is_wrong() {
        for (text, says) in [
            ("", "no key"),
            (HEX_A, "id:hex"),
            (&format!("a:{}", &HEX_A[2..]) as &str, "64 hex digits"),
            (&format!("a:{HEX_A}00"), "64 hex digits"),
            (&format!("a:{}zz", &HEX_A[2..]), "64 hex digits"),
            (&format!("a b:{HEX_A}"), "letters, digits"),
            (&format!("a:{HEX_A}\na:{HEX_B}"), "twice"),
        ] {
            let error = Keyring::parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_key_file_open_to_others_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("key");
        fs::write(&path, format!("a:{HEX_A}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let file = path.to_str().unwrap();
        let error = Keyring::load(&settings("", file), home.path()).unwrap_err();
        assert!(error.to_string().contains("chmod 600"), "{error}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let keyring = Keyring::load(&settings("", file), home.path()).unwrap();
        assert_eq!(keyring.current_id(), "a");
    }

    #[test]
    fn a_key_file_of_the_wrong_length_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("key");
        fs::write(&path, format!("a:{}\n", &HEX_A[..40])).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let error = Keyring::load(&settings("", path.to_str().unwrap()), home.path())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("64 hex digits") && error.contains("key"),
            "{error}"
        );
    }

    #[test]
    fn a_configured_file_that_is_missing_is_an_error_not_a_new_key() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("missing");
        let error = Keyring::load(&settings("", path.to_str().unwrap()), home.path());
        assert!(error.is_err());
        assert!(!path.exists());
    }

    #[test]
    fn the_home_gets_a_private_key_file_once() {
        let home = tempfile::tempdir().unwrap();
        let first = Keyring::load(&settings("", ""), home.path()).unwrap();
        let path = home.path().join(DEFAULT_FILE);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = Keyring::load(&settings("", ""), home.path()).unwrap();
        assert_eq!(first.current_id(), again.current_id());
        assert_eq!(first.current().1, again.current().1);
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let home = tempfile::tempdir().unwrap();
        let keyring = Keyring::load(&settings(&format!("env:{HEX_A}"), ""), home.path()).unwrap();
        assert_eq!(keyring.current_id(), "env");
        assert!(!home.path().join(DEFAULT_FILE).exists());
    }
}
