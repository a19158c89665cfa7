//! `rummy healthcheck`: what a container's `HEALTHCHECK` runs, since the slim image has no
//! curl. A plain `GET /healthz` (alive) or `GET /readyz` (able to serve) on the configured
//! port of this host; the caller turns the outcome into the exit status.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::config::ServerSettings;

/// How long the probe waits for the whole answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Why the server is not healthy, as far as the probe can tell.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// No connection, no answer in time, or no HTTP client to send with.
    #[error("GET {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The server answered, but not 2xx.
    #[error("GET {url} answered {status}")]
    Unhealthy {
        url: String,
        status: reqwest::StatusCode,
    },
}

/// Where the server listens as seen from its own host: a wildcard bind is probed on loopback.
pub fn probe_addr(server: &ServerSettings) -> SocketAddr {
    let host = match server.host {
        IpAddr::V4(host) if host.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(host) if host.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        host => host,
    };
    SocketAddr::new(host, server.port)
}

/// What the probe asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `/healthz`: the process answers HTTP.
    Alive,
    /// `/readyz`: the store answers in time and the migrations are applied, so a proxy may
    /// send clients to it.
    Ready,
}

impl Probe {
    fn path(self) -> &'static str {
        match self {
            Probe::Alive => "/healthz",
            Probe::Ready => "/readyz",
        }
    }
}

/// Asks the server at [`probe_addr`] for `probe`'s path, directly (never through an
/// `HTTP_PROXY` of the environment).
pub async fn probe(server: &ServerSettings, probe: Probe) -> Result<(), HealthError> {
    let url = format!("http://{}{}", probe_addr(server), probe.path());
    let unreachable = |source| HealthError::Unreachable {
        url: url.clone(),
        source,
    };
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .no_proxy()
        .build()
        .map_err(unreachable)?;
    let response = client.get(&url).send().await.map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        return Err(HealthError::Unhealthy { url, status });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;
    use crate::config::Settings;

    fn server(host: &str) -> ServerSettings {
        let home = tempfile::tempdir().unwrap();
        let env: HashMap<String, String> = [
            ("RUMMY_HOME", home.path().to_str().unwrap()),
            ("RUMMY_HOST", host),
            ("PORT", "4711"),
            ("RUMMY_AUTH_TOKEN", "s3cret"),
            ("RUMMY_PROJECTS_DIR", home.path().to_str().unwrap()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
        Settings::load(&env, Path::new("config")).unwrap().server
    }

    #[test]
    fn a_wildcard_bind_is_probed_on_loopback_and_any_other_as_bound() {
        for (host, probed) in [
            ("0.0.0.0", "127.0.0.1:4711"),
            ("::", "[::1]:4711"),
            ("127.0.0.1", "127.0.0.1:4711"),
            ("192.0.2.7", "192.0.2.7:4711"),
            ("2001:db8::7", "[2001:db8::7]:4711"),
        ] {
            assert_eq!(probe_addr(&server(host)).to_string(), probed, "{host}");
        }
    }
}
