//! Which address a connection comes from: its TCP peer, unless that peer is a reverse proxy
//! listed in `RUMMY_TRUSTED_PROXIES`; then the hops of `X-Forwarded-For` are read from the
//! right, each one added by the proxy nearer to rummy, and the first hop that is not a
//! trusted proxy is the client. Hops to the left of it were written by that client and are
//! never believed. Likewise a request came over TLS when the trusted proxy that sent it says
//! so in `X-Forwarded-Proto` (rummy itself listens in plain HTTP).

use std::net::{IpAddr, SocketAddr};

use actix_http::RequestHead;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The client behind `peer`: `peer` itself unless it is trusted. Through trusted proxies only,
/// the right-most hop that is not trusted; when every hop is trusted, the left-most; when a
/// hop cannot be read, the trusted hop that reported it.
pub(crate) fn client_addr(peer: IpAddr, head: &RequestHead, trusted: &[IpNet]) -> IpAddr {
    let mut client = peer.to_canonical();
    if !is_trusted(client, trusted) {
        return client;
    }
    let values: Vec<&str> = head
        .headers()
        .get_all(X_FORWARDED_FOR)
        // A value that is not visible ASCII is one unreadable hop.
        .map(|value| value.to_str().unwrap_or_default())
        .collect();
    for hop in values.iter().rev().flat_map(|value| value.rsplit(',')) {
        let Some(hop) = parse_hop(hop) else {
            break;
        };
        client = hop;
        if !is_trusted(hop, trusted) {
            break;
        }
    }
    client
}

const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// Whether the browser's request reached the proxy in front of `peer` over TLS: `peer` is a
/// trusted proxy and the scheme it forwards (the last `X-Forwarded-Proto` value, its own) is
/// `https`.
pub(crate) fn over_tls(peer: IpAddr, head: &RequestHead, trusted: &[IpNet]) -> bool {
    is_trusted(peer.to_canonical(), trusted)
        && head
            .headers()
            .get_all(X_FORWARDED_PROTO)
            .last()
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .is_some_and(|scheme| scheme.trim().eq_ignore_ascii_case("https"))
}

fn is_trusted(addr: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|net| net.contains(&addr))
}

/// One hop: an address, possibly with a port (`192.0.2.1:4711`, `[2001:db8::1]:4711`) or in
/// brackets.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    let addr = hop
        .parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|socket| socket.ip()))
        .or_else(|_| {
            hop.strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .unwrap_or_default()
                .parse::<IpAddr>()
        })
        .ok()?;
    Some(addr.to_canonical())
}

#[cfg(test)]
mod tests {
    use actix_http::header::{HeaderName, HeaderValue};

    use super::*;

    fn head(forwarded_for: &[&str]) -> RequestHead {
        let mut head = RequestHead::default();
        for value in forwarded_for {
            head.headers_mut().append(
                HeaderName::from_static(X_FORWARDED_FOR),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        head
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|net| net.parse().unwrap()).collect()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_proxy_says_the_request_came_over_tls() {
        let proxies = nets(&["10.0.0.0/8"]);
        let mut https = RequestHead::default();
        https.headers_mut().append(
            HeaderName::from_static(X_FORWARDED_PROTO),
            HeaderValue::from_static("http, https"),
        );
        assert!(over_tls(ip("10.0.0.1"), &https, &proxies));
        assert!(!over_tls(ip("192.0.2.7"), &https, &proxies), "not trusted");
        let mut http = RequestHead::default();
        http.headers_mut().append(
            HeaderName::from_static(X_FORWARDED_PROTO),
            HeaderValue::from_static("https, http"),
        );
        assert!(
            !over_tls(ip("10.0.0.1"), &http, &proxies),
            "its own hop said http"
        );
        assert!(!over_tls(ip("10.0.0.1"), &head(&[]), &proxies));
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let forged = head(&["203.0.113.9"]);
        assert_eq!(client_addr(ip("192.0.2.7"), &forged, &[]), ip("192.0.2.7"));
        let proxies = nets(&["10.0.0.0/8"]);
        assert_eq!(
            client_addr(ip("192.0.2.7"), &forged, &proxies),
            ip("192.0.2.7")
        );
    }

    #[test]
    fn through_a_trusted_proxy_the_right_most_untrusted_hop_is_the_client() {
        let proxies = nets(&["10.0.0.1/32", "10.1.0.0/16"]);
        let chain = head(&["203.0.113.9, 198.51.100.4", "10.1.2.3"]);
        assert_eq!(
            client_addr(ip("10.0.0.1"), &chain, &proxies),
            ip("198.51.100.4"),
            "the forged 203.0.113.9 on the left is ignored"
        );
        let one_hop = head(&["198.51.100.4"]);
        assert_eq!(
            client_addr(ip("10.1.9.9"), &one_hop, &proxies),
            ip("198.51.100.4")
        );
    }

    #[test]
    fn without_a_readable_untrusted_hop_the_farthest_trusted_one_answers() {
        let proxies = nets(&["10.0.0.0/8"]);
        assert_eq!(
            client_addr(ip("10.0.0.1"), &head(&[]), &proxies),
            ip("10.0.0.1")
        );
        let inside = head(&["10.0.0.3, 10.0.0.2"]);
        assert_eq!(
            client_addr(ip("10.0.0.1"), &inside, &proxies),
            ip("10.0.0.3")
        );
        let garbage = head(&["198.51.100.4, unknown, 10.0.0.2"]);
        assert_eq!(
            client_addr(ip("10.0.0.1"), &garbage, &proxies),
            ip("10.0.0.2")
        );
    }

    #[test]
    fn hops_with_ports_brackets_and_mapped_addresses_are_read() {
        let proxies = nets(&["127.0.0.1/32", "::1/128"]);
        for (hop, client) in [
            ("198.51.100.4:4711", "198.51.100.4"),
            ("[2001:db8::1]:4711", "2001:db8::1"),
            ("[2001:db8::1]", "2001:db8::1"),
            (" 2001:db8::2 ", "2001:db8::2"),
        ] {
            assert_eq!(
                client_addr(ip("::1"), &head(&[hop]), &proxies),
                ip(client),
                "{hop}"
            );
        }
        assert_eq!(
            client_addr(ip("::ffff:127.0.0.1"), &head(&["198.51.100.4"]), &proxies),
            ip("198.51.100.4"),
            "an IPv4 peer on a dual-stack socket is still the trusted 127.0.0.1"
        );
    }
}
