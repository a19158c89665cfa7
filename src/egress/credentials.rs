//! Where the proxy finds a person's credential for a host: the header it adds to requests
//! to that host, from the people's sealed secrets (`crate::secrets`, kind
//! [`HOST_CREDENTIAL`], named by the host, set by `hostCredentials/set`).

use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue};

use crate::secrets::{ExposeSecret, SecretStore, HOST_CREDENTIAL};

/// The header the proxy adds to a person's requests to one host (`Authorization: Bearer …`,
/// `PRIVATE-TOKEN: …`). Its value is marked sensitive, so it is never printed.
#[derive(Clone)]
pub(crate) struct HostCredential {
    pub header: HeaderName,
    pub value: HeaderValue,
}

impl std::fmt::Debug for HostCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostCredential({}: …)", self.header)
    }
}

/// A source of people's host credentials.
pub(crate) trait HostCredentials: Send + Sync {
    /// `person`'s credential for `host` (lower case), if they have one; `Err` says why the
    /// one they have cannot be used (sealed under a server key this server does not hold,
    /// altered, or the store unreadable): the request is then refused, never sent without it.
    fn find<'a>(
        &'a self,
        person: &'a str,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<HostCredential>, String>>;
}

/// The text sealed for a credential: its header's name, a colon, its value.
pub(crate) fn sealed_value(header: &HeaderName, value: &str) -> String {
    format!("{header}:{value}")
}

/// The credential a [`sealed_value`] text holds.
fn unsealed(text: &str) -> Option<HostCredential> {
    let (header, value) = text.split_once(':')?;
    let header = HeaderName::from_bytes(header.as_bytes()).ok()?;
    let mut value = HeaderValue::from_str(value).ok()?;
    value.set_sensitive(true);
    Some(HostCredential { header, value })
}

/// People's host credentials in the sealed store.
pub(crate) struct SealedCredentials {
    pub store: SecretStore,
}

impl HostCredentials for SealedCredentials {
    fn find<'a>(
        &'a self,
        person: &'a str,
        host: &'a str,
    ) -> BoxFuture<'a, Result<Option<HostCredential>, String>> {
        Box::pin(async move {
            let host = host.strip_suffix('.').unwrap_or(host);
            match self.store.open(person, HOST_CREDENTIAL, host).await {
                Ok(opened) => Ok(opened.and_then(|text| unsealed(text.expose_secret()))),
                Err(error) => {
                    tracing::error!(%error, host, "cannot open a host credential");
                    Err(error.to_string())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_credential_reads_back_as_its_header_and_sensitive_value() {
        let header = HeaderName::from_static("private-token");
        let credential = unsealed(&sealed_value(&header, "a:b c")).unwrap();
        assert_eq!(credential.header, header);
        assert_eq!(credential.value, "a:b c");
        assert!(credential.value.is_sensitive());
        assert!(!format!("{credential:?}").contains("a:b"));
        assert!(unsealed("no colon").is_none());
    }
}
