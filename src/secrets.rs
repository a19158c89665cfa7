//! Secrets at rest: people's provider keys, their MCP credentials, the admin-set provider
//! keys and whatever another part of the server keeps for a person (an egress proxy's host
//! credentials), each sealed under the server key before it reaches the store.
//!
//! `keyring.rs` loads the server key (the current one, which seals, and the old ones still
//! accepted for opening) from `RUMMY_SECRETS_KEY` or a key file, refusing one whose
//! permissions let others read it or whose key is not 32 bytes, and makes one in the home at
//! first start when none is configured. `seal.rs` is the AEAD (XChaCha20-Poly1305, a random
//! nonce per seal): the row a value belongs to (person, kind, name) and the key's id are its
//! associated data, so a sealed value copied to another row, or altered, does not open.
//! `store.rs` is the API other parts use (seal, open, list, remove by person and kind) over
//! the `secrets` table (`db::queries::secrets`), and the start-up step that re-seals every
//! value still under an old key. A secret in memory is a [`SecretString`]: its `Debug` prints
//! nothing of it, and it is only exposed where it is sent.

mod keyring;
mod seal;
mod store;

pub(crate) use keyring::Keyring;
pub(crate) use seal::{Binding, Sealed};
pub(crate) use store::SecretStore;

pub(crate) use secrecy::{ExposeSecret, SecretString};

/// The kind of a person's provider key (its name: the provider's slug).
pub(crate) const PROVIDER_KEY: &str = "provider";
/// The kind of a person's credential for a host their commands reach through the egress
/// proxy (its name: the host; its value: [`crate::egress::sealed_value`]).
pub(crate) const HOST_CREDENTIAL: &str = "host";
/// The kind of a person's credential for an MCP server that takes each person's own (its
/// name: the server's, as `mcp.toml` names it).
pub(crate) const MCP_CREDENTIAL: &str = "mcp";
/// The person of the server's own secrets (the admin-set provider keys).
pub(crate) const SERVER: &str = "";

/// Why a secret could not be sealed or opened, or the server key not loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SecretsError {
    /// The key file cannot be read, made, or is open to others.
    #[error("server key file {path}: {why}")]
    KeyFile { path: String, why: String },
    /// The configured key (file or `RUMMY_SECRETS_KEY`) is malformed.
    #[error("server key: {0}")]
    KeyFormat(String),
    /// A stored value was sealed under a key this server does not hold.
    #[error(
        "a stored secret ({0}) is sealed under server key '{1}', which this server does not \
         hold: add that key as an old key (see Configuration: secrets)"
    )]
    UnknownKey(String, String),
    /// The value did not open: it was altered, or moved from another row.
    #[error("a stored secret ({0}) does not open: it was altered or moved from another row")]
    Unopenable(String),
    /// The system's randomness failed.
    #[error("no randomness for a nonce: {0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
}
