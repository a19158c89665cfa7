//! Which addresses a fetch may reach: never the server's own network (private, loopback,
//! link-local, unique-local, shared/CGNAT, multicast, reserved or unspecified addresses,
//! also when wrapped in an IPv6 form) unless `RUMMY_WEB_ALLOW_NETS` names them. Checked on
//! every address a host name resolves to, at connect time ([`FilteringResolver`]), and on
//! the host of every URL that is an address itself.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The IPv4 ranges refused by default, each with the reason told to the model.
const REFUSED_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "unspecified"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared (CGNAT)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "reserved"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "reserved"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved"),
];

/// The IPv6 ranges refused by default (the forms that embed an IPv4 address are judged by
/// that address instead: see [`refusal`]).
const REFUSED_V6: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "unspecified"),
    (Ipv6Addr::LOCALHOST, 128, "loopback"),
    (Ipv6Addr::UNSPECIFIED, 96, "reserved (IPv4-compatible)"),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "reserved (discard)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique-local",
    ),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

/// The well-known NAT64 prefix `64:ff9b::/96`, whose last 32 bits are an IPv4 address.
const NAT64: Ipv6Addr = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0);

/// The addresses a fetch may connect to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NetFilter {
    /// Networks allowed although a default rule refuses them (`RUMMY_WEB_ALLOW_NETS`).
    allowed: Vec<IpNet>,
}

impl NetFilter {
    /// The default refusals, minus `allowed`.
    pub(crate) fn new(allowed: Vec<IpNet>) -> NetFilter {
        NetFilter { allowed }
    }

    /// Why `ip` may not be reached, `None` when it may.
    pub(crate) fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        let reason = refusal(ip)?;
        let plain = plain(ip);
        let allowed = self
            .allowed
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&plain));
        (!allowed).then_some(reason)
    }
}

/// An address refused by the [`NetFilter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAddress {
    /// The host as the URL names it.
    pub host: String,
    pub address: IpAddr,
    /// What kind of address it is (`loopback`, `private` ...).
    pub reason: &'static str,
}

impl fmt::Display for RefusedAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host == self.address.to_string() {
            write!(f, "{} is a {} address", self.host, self.reason)
        } else {
            write!(
                f,
                "{} resolves to {}, a {} address",
                self.host, self.address, self.reason
            )
        }
    }
}

impl std::error::Error for RefusedAddress {}

/// The default rule for `ip`: why it is refused, judging an IPv4 address wrapped in IPv6
/// (mapped, NAT64, 6to4) by the IPv4 address.
fn refusal(ip: IpAddr) -> Option<&'static str> {
    match plain(ip) {
        IpAddr::V4(v4) => REFUSED_V4
            .iter()
            .find(|(net, prefix, _)| in_v4(v4, *net, *prefix))
            .map(|(_, _, reason)| *reason),
        IpAddr::V6(v6) => REFUSED_V6
            .iter()
            .find(|(net, prefix, _)| in_v6(v6, *net, *prefix))
            .map(|(_, _, reason)| *reason),
    }
}

/// `ip`, or the IPv4 address an IPv6 one carries: `::ffff:a.b.c.d`, `64:ff9b::a.b.c.d`, and
/// `2002:aabb:ccdd::/48` (6to4).
fn plain(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let bits = u128::from(v6);
    if in_v6(v6, NAT64, 96) {
        return IpAddr::V4(Ipv4Addr::from(bits as u32));
    }
    if v6.segments()[0] == 0x2002 {
        return IpAddr::V4(Ipv4Addr::from((bits >> 80) as u32));
    }
    ip
}

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// Resolves host names for the page client, keeping only the addresses the filter
/// permits: the check happens on the addresses the connection will use, so a name that
/// resolves differently later (DNS rebinding) cannot slip past it.
#[derive(Debug, Clone)]
pub(crate) struct FilteringResolver {
    pub filter: Arc<NetFilter>,
}

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let filter = Arc::clone(&self.filter);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let mut permitted = Vec::new();
            for address in resolved {
                match filter.refusal(address.ip()) {
                    None => permitted.push(address),
                    Some(reason) => refused = Some((address.ip(), reason)),
                }
            }
            match (permitted.is_empty(), refused) {
                (true, Some((address, reason))) => Err(Box::new(RefusedAddress {
                    host,
                    address,
                    reason,
                })
                    as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(permitted.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Option<&'static str> {
        NetFilter::default().refusal(text.parse().unwrap())
    }

    #[test]
    fn the_servers_own_v4_networks_are_refused_and_the_internet_is_not() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("127.255.0.9", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("100.127.255.254", Some("shared (CGNAT)")),
            ("0.0.0.0", Some("unspecified")),
            ("224.0.0.1", Some("multicast")),
            ("255.255.255.255", Some("reserved")),
            ("8.8.8.8", None),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("93.184.216.34", None),
        ];
        for (address, expected) in cases {
            assert_eq!(refused(address), expected, "{address}");
        }
    }

    #[test]
    fn v6_ranges_and_wrapped_v4_addresses_are_judged() {
        let cases = [
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fe80::1", Some("link-local")),
            ("fd12:3456::1", Some("unique-local")),
            ("fc00::1", Some("unique-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.0.0.1", Some("private")),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::808:808", None),
            ("2002:c0a8:0101::1", Some("private")),
            ("2002:0808:0808::1", None),
            ("::127.0.0.1", Some("reserved (IPv4-compatible)")),
            ("2606:4700::1111", None),
        ];
        for (address, expected) in cases {
            assert_eq!(refused(address), expected, "{address}");
        }
    }

    #[test]
    fn allowed_networks_lift_the_refusal_for_them_only() {
        let filter = NetFilter::new(vec![
            "127.0.0.0/8".parse().unwrap(),
            "fd00::/8".parse().unwrap(),
        ]);
        let refusal = |text: &str| filter.refusal(text.parse().unwrap());
        assert_eq!(refusal("127.0.0.1"), None);
        assert_eq!(refusal("::ffff:127.0.0.1"), None);
        assert_eq!(refusal("fd00::5"), None);
        assert_eq!(refusal("::1"), Some("loopback"));
        assert_eq!(refusal("10.0.0.1"), Some("private"));
        assert_eq!(refusal("fc00::1"), Some("unique-local"));
    }

    #[actix::test]
    async fn the_resolver_keeps_only_permitted_addresses() {
        let strict = FilteringResolver {
            filter: Arc::new(NetFilter::default()),
        };
        let name: Name = "localhost".parse().unwrap();
        let error = match strict.resolve(name).await {
            Ok(_) => panic!("localhost resolved for a strict filter"),
            Err(error) => error,
        };
        let refused = error.downcast_ref::<RefusedAddress>().unwrap();
        assert_eq!(refused.reason, "loopback");
        assert!(refused.to_string().starts_with("localhost resolves to "));
        let lenient = FilteringResolver {
            filter: Arc::new(NetFilter::new(vec![
                "127.0.0.0/8".parse().unwrap(),
                "::1/128".parse().unwrap(),
            ])),
        };
        let addresses: Vec<SocketAddr> = lenient
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(!addresses.is_empty());
        assert!(addresses.iter().all(|address| address.ip().is_loopback()));
    }
}
