//! Where a sandboxed command may go through the egress proxy: destinations named by host
//! (`github.com`, or `*.npmjs.org` for any name below it) and TCP port (443 unless named),
//! the server's (`RUMMY_SANDBOX_HOSTS`) and each project's within them (`sandbox.hosts`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The port a destination names when it names none.
const DEFAULT_PORT: u16 = 443;

/// One allowed destination: a host name, or every name below a domain, at one port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Destination {
    /// Lower case, without a trailing dot; for a wildcard, the domain below which names
    /// are allowed (`npmjs.org` for `*.npmjs.org`).
    host: String,
    /// Whether names below `host` are allowed, not `host` itself.
    wildcard: bool,
    port: u16,
}

/// Why a destination could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a destination (host, *.domain or either with :port)")]
pub struct BadDestination(String);

impl FromStr for Destination {
    type Err = BadDestination;

    fn from_str(text: &str) -> Result<Destination, BadDestination> {
        let bad = || BadDestination(text.to_owned());
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => (name, port.parse::<u16>().map_err(|_| bad())?),
            None => (text, DEFAULT_PORT),
        };
        let (wildcard, name) = match name.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, name),
        };
        let host = normal(name);
        let labels_ok = host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if port == 0 || host.is_empty() || !labels_ok {
            return Err(bad());
        }
        Ok(Destination {
            host,
            wildcard,
            port,
        })
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = if self.wildcard { "*." } else { "" };
        write!(f, "{star}{}:{}", self.host, self.port)
    }
}

impl Serialize for Destination {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Destination {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Destination, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Destination {
    /// Whether a connection to `host` (any case, a trailing dot allowed) at `port` is one
    /// this destination allows.
    pub(crate) fn allows(&self, host: &str, port: u16) -> bool {
        let host = normal(host);
        port == self.port
            && if self.wildcard {
                host.strip_suffix(&self.host)
                    .is_some_and(|above| above.len() > 1 && above.ends_with('.'))
            } else {
                host == self.host
            }
    }

    /// Whether everything `other` allows, this allows too (a project's destination within
    /// the server's).
    pub(crate) fn covers(&self, other: &Destination) -> bool {
        if other.wildcard {
            self.wildcard
                && self.port == other.port
                && (self.host == other.host || self.allows(&other.host, other.port))
        } else {
            self.allows(&other.host, other.port)
        }
    }
}

/// Whether any of `destinations` allows `host` at `port`.
pub(crate) fn allowed(destinations: &[Destination], host: &str, port: u16) -> bool {
    destinations
        .iter()
        .any(|destination| destination.allows(host, port))
}

/// The one host name `text` names (no wildcard, no port), lower case without a trailing
/// dot; `None` when it names something else.
pub(crate) fn host_name(text: &str) -> Option<String> {
    let destination = text.parse::<Destination>().ok()?;
    (!destination.wildcard && !text.contains(':')).then_some(destination.host)
}

/// `host` lower-cased, its trailing dot dropped.
fn normal(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(text: &str) -> Destination {
        text.parse().unwrap()
    }

    #[test]
    fn a_host_allows_itself_at_its_port_only() {
        let github = destination("GitHub.com");
        assert!(github.allows("github.com", 443));
        assert!(github.allows("GITHUB.COM.", 443));
        assert!(!github.allows("github.com", 80));
        assert!(!github.allows("api.github.com", 443));
        assert!(!github.allows("evilgithub.com", 443));
        assert!(!github.allows("github.com.evil.org", 443));
        assert!(destination("localhost:8080").allows("localhost", 8080));
    }

    #[test]
    fn a_wildcard_allows_names_below_its_domain_not_the_domain_itself() {
        let npm = destination("*.npmjs.org:443");
        assert!(npm.allows("registry.npmjs.org", 443));
        assert!(npm.allows("a.b.npmjs.org", 443));
        assert!(!npm.allows("npmjs.org", 443));
        assert!(!npm.allows("evilnpmjs.org", 443));
        assert!(!npm.allows(".npmjs.org", 443));
        assert!(!npm.allows("registry.npmjs.org", 80));
    }

    #[test]
    fn what_is_not_a_destination_is_refused() {
        for bad in [
            "",
            "*.",
            "a..b",
            "-a.com",
            "a-.com",
            "a.com:0",
            "a.com:http",
            "a.com:70000",
            "a b.com",
            "http://a.com",
            "*.*.a.com",
            "a.com/path",
        ] {
            assert!(bad.parse::<Destination>().is_err(), "{bad}");
        }
        assert_eq!(destination("*.A.com").to_string(), "*.a.com:443");
        assert_eq!(destination("a.com:80").to_string(), "a.com:80");
    }

    #[test]
    fn the_server_covers_what_a_project_may_allow() {
        let server = destination("*.example.com");
        assert!(server.covers(&destination("git.example.com")));
        assert!(server.covers(&destination("*.git.example.com")));
        assert!(server.covers(&destination("*.example.com")));
        assert!(!server.covers(&destination("example.com")));
        assert!(!server.covers(&destination("git.example.com:80")));
        assert!(!server.covers(&destination("*.com")));
        let host = destination("example.com");
        assert!(host.covers(&destination("example.com")));
        assert!(!host.covers(&destination("*.example.com")));
        assert!(!host.covers(&destination("other.com")));
        assert!(allowed(&[host, server], "a.example.com", 443));
        assert!(!allowed(&[], "example.com", 443));
    }

    #[test]
    fn a_host_name_is_one_name_without_port_or_wildcard() {
        assert_eq!(
            host_name("Git.Example.com.").as_deref(),
            Some("git.example.com")
        );
        assert_eq!(host_name("localhost").as_deref(), Some("localhost"));
        for bad in [
            "*.example.com",
            "example.com:443",
            "",
            "a b",
            "http://a.com",
        ] {
            assert_eq!(host_name(bad), None, "{bad}");
        }
    }
}
