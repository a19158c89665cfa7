//! Where the proxy finds a person's credential for a host: the header it adds to requests
//! to that host, from the people's sealed secrets.

use futures_util::future::BoxFuture;
use http::{HeaderName, HeaderValue};

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
    /// `person`'s credential for `host` (lower case), if they have one; a source that
    /// fails logs why and answers `None` (the request then goes without it).
    fn find<'a>(&'a self, person: &'a str, host: &'a str) -> BoxFuture<'a, Option<HostCredential>>;
}

/// The source of a server that keeps no host credentials: the proxy adds none.
pub(crate) struct NoCredentials;

impl HostCredentials for NoCredentials {
    fn find<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Option<HostCredential>> {
        Box::pin(std::future::ready(None))
    }
}
