//! The egress proxy's certificate authority: made once per server and kept under its home
//! (`$RUMMY_HOME/egress/ca.crt`, and `ca.key` readable by rummy alone), so commands that
//! trust its certificate accept the certificates the proxy makes, host by host, for the
//! connections it opens to add a person's credential.

use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;

use super::EgressError;

/// The CA certificate's common name.
const NAME: &str = "rummy egress proxy CA";

/// The CA, and the TLS configurations made with it so far, one per host.
pub(crate) struct Authority {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM: all a command is given.
    certificate: String,
    made: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl Authority {
    /// The CA kept in `dir`, made there first when there is none. Blocking file I/O.
    pub(crate) fn load_or_make(dir: &Path) -> Result<Authority, EgressError> {
        let path = dir.join("ca.crt");
        let key_path = dir.join("ca.key");
        let (certificate, key) = match (
            std::fs::read_to_string(&path),
            std::fs::read_to_string(&key_path),
        ) {
            (Ok(certificate), Ok(key)) => (certificate, KeyPair::from_pem(&key)?),
            _ => {
                std::fs::create_dir_all(dir)
                    .map_err(EgressError::io("making the CA's directory"))?;
                let key = KeyPair::generate()?;
                let certificate = ca_params().self_signed(&key)?.pem();
                write_private(&key_path, &key.serialize_pem())?;
                std::fs::write(&path, &certificate)
                    .map_err(EgressError::io("writing the CA certificate"))?;
                (certificate, key)
            }
        };
        Ok(Authority {
            issuer: Issuer::new(ca_params(), key),
            certificate,
            made: Mutex::default(),
        })
    }

    /// The CA certificate, PEM (the public part only).
    pub(crate) fn certificate(&self) -> &str {
        &self.certificate
    }

    /// A TLS server configuration presenting a certificate for `host` signed by this CA
    /// (made on first need, then kept).
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, EgressError> {
        let mut made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(config) = made.get(host) {
            return Ok(Arc::clone(config));
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![host.to_owned()])?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        let leaf = params.signed_by(&key, &self.issuer)?;
        let chain = vec![
            leaf.der().clone(),
            CertificateDer::from_pem_slice_ca(&self.certificate)?,
        ];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        made.insert(host.to_owned(), Arc::clone(&config));
        Ok(config)
    }
}

/// The CA's parameters: the same each time, so the issuer rebuilt from them and the kept
/// key signs certificates that chain to the kept certificate.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, NAME);
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = rcgen::date_time_ymd(2024, 1, 1);
    params.not_after = rcgen::date_time_ymd(2124, 1, 1);
    params
}

/// Writes `text` to a new file at `path` only its owner may read.
fn write_private(path: &Path, text: &str) -> Result<(), EgressError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(EgressError::io("writing the CA key"))?;
    file.write_all(text.as_bytes())
        .map_err(EgressError::io("writing the CA key"))
}

/// The first certificate of a PEM text.
trait FromPemCa: Sized {
    fn from_pem_slice_ca(pem: &str) -> Result<Self, EgressError>;
}

impl FromPemCa for CertificateDer<'static> {
    fn from_pem_slice_ca(pem: &str) -> Result<Self, EgressError> {
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        CertificateDer::from_pem_slice(pem.as_bytes())
            .map_err(|error| EgressError::Certificate(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_kept_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let made = Authority::load_or_make(dir.path()).unwrap();
        let again = Authority::load_or_make(dir.path()).unwrap();
        assert_eq!(made.certificate(), again.certificate());
        let mode = std::fs::metadata(dir.path().join("ca.key")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);
        assert!(again.server_config("example.com").is_ok());
    }
}
