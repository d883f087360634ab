//! The client address behind trusted reverse proxies.
//!
//! Behind nginx or a load balancer every request comes from the proxy's address, so the
//! per-client limits (the rate limit, the refused-authentication budget) would throttle all
//! clients together. [`ForwardedLayer`] names the client a request counts against: when,
//! and only when, the connection's peer is one of the configured trusted proxies
//! ([`ProxyNet`]), it reads the forwarded chain from `Forwarded: for=` (RFC 7239) or, when
//! there is none, `X-Forwarded-For`, and takes the rightmost hop that is not itself a trusted
//! proxy. A hop that is not an IP address (`unknown`, an obfuscated `_name`) ends the walk:
//! the request then counts against the last trusted hop, never against an address the
//! client chose. From any other peer the headers are ignored, so a client cannot pick its
//! own rate-limit bucket by sending them.
//!
//! This decides only which client a request is accounted to; it is not authentication and
//! nothing else reads it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request};
use tower::{Layer, Service};

/// An IP network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`), or one address (`10.0.0.1`,
/// a `/32` or `/128`): a trusted proxy, or a range of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProxyNet {
    addr: IpAddr,
    prefix: u8,
}

/// A [`ProxyNet`] that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an IP address or CIDR network (such as 10.0.0.0/8 or ::1): {0:?}")]
pub struct ProxyNetError(String);

impl ProxyNet {
    /// The network of `addr` with a prefix of `prefix` bits (clamped to the address size);
    /// host bits are cleared.
    pub fn new(addr: IpAddr, prefix: u8) -> Self {
        let (addr, max) = match addr {
            // An IPv4-mapped address is its IPv4 address, as peers are compared.
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => (IpAddr::V4(v4), 32),
                None => (addr, 128),
            },
            IpAddr::V4(_) => (addr, 32),
        };
        let prefix = prefix.min(max);
        Self {
            addr: mask(addr, prefix),
            prefix,
        }
    }

    /// Whether `ip` is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == self.addr
    }
}

impl FromStr for ProxyNet {
    type Err = ProxyNetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let err = || ProxyNetError(s.chars().take(64).collect());
        let (addr, prefix) = match text.split_once('/') {
            None => (text, None),
            Some((a, p)) => (a, Some(p)),
        };
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => return Err(err()),
            },
        };
        // `::ffff:10.0.0.0/104` is `10.0.0.0/8`.
        let prefix = match addr {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => prefix.saturating_sub(96),
            _ => prefix,
        };
        Ok(Self::new(addr, prefix))
    }
}

impl fmt::Display for ProxyNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & m))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & m))
        }
    }
}

/// The client a request is accounted to, set by [`ForwardedLayer`] and read by the per-client
/// limits in place of the peer address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// One node of a forwarded chain: an address, with or without a port, IPv6 in brackets or not.
fn parse_node(node: &str) -> Option<IpAddr> {
    let node = node.trim().trim_matches('"');
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip);
    }
    node.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// The `for=` values of every `Forwarded` header, in order (`None` for a value that is not
/// an address); `None` when there is no such header.
fn forwarded_for(headers: &HeaderMap) -> Option<Vec<Option<IpAddr>>> {
    let mut values = headers.get_all("forwarded").iter().peekable();
    values.peek()?;
    let mut out = Vec::new();
    for v in values {
        let Ok(v) = v.to_str() else {
            out.push(None);
            continue;
        };
        for element in v.split(',') {
            let node = element.split(';').find_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                k.trim().eq_ignore_ascii_case("for").then_some(v)
            });
            if let Some(node) = node {
                out.push(parse_node(node));
            }
        }
    }
    Some(out)
}

fn x_forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut out = Vec::new();
    for v in headers.get_all("x-forwarded-for") {
        match v.to_str() {
            Ok(v) => out.extend(v.split(',').map(parse_node)),
            Err(_) => out.push(None),
        }
    }
    out
}

/// The client behind `peer`: the rightmost untrusted hop of the forwarded chain when `peer`
/// is trusted (see the module docs), `peer` itself otherwise.
pub(crate) fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &[ProxyNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let chain = forwarded_for(headers).unwrap_or_else(|| x_forwarded_for(headers));
    let mut client = peer;
    for hop in chain.iter().rev() {
        match hop {
            Some(ip) if is_trusted(*ip) => client = *ip,
            Some(ip) => return *ip,
            None => return client,
        }
    }
    client
}

/// Sets each request's [`ClientAddr`] from its peer and, behind trusted proxies, the
/// forwarded headers (see the module docs). Place it outside the per-client limits.
#[derive(Debug, Clone)]
pub struct ForwardedLayer {
    trusted: Arc<[ProxyNet]>,
}

impl ForwardedLayer {
    /// Trusts the forwarded headers of peers in `trusted`.
    pub fn new(trusted: impl IntoIterator<Item = ProxyNet>) -> Self {
        Self {
            trusted: trusted.into_iter().collect(),
        }
    }
}

impl<S> Layer<S> for ForwardedLayer {
    type Service = Forwarded<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Forwarded {
            inner,
            trusted: self.trusted.clone(),
        }
    }
}

/// The service [`ForwardedLayer`] produces.
#[derive(Debug, Clone)]
pub struct Forwarded<S> {
    inner: S,
    trusted: Arc<[ProxyNet]>,
}

impl<S, B> Service<Request<B>> for Forwarded<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() {
            let client = resolve(peer.ip(), req.headers(), &self.trusted);
            req.extensions_mut().insert(ClientAddr(client));
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn nets(list: &[&str]) -> Vec<ProxyNet> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn networks_parse_and_match() {
        let n: ProxyNet = "10.1.2.3/8".parse().unwrap();
        assert_eq!(n.to_string(), "10.0.0.0/8");
        assert!(n.contains(ip("10.200.0.1")));
        assert!(n.contains(ip("::ffff:10.0.0.9")));
        assert!(!n.contains(ip("11.0.0.1")));
        let one: ProxyNet = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        let v6: ProxyNet = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:1::1")) && !v6.contains(ip("10.0.0.1")));
        let all: ProxyNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("8.8.8.8")));
        let mapped: ProxyNet = "::ffff:10.0.0.0/104".parse().unwrap();
        assert_eq!(mapped.to_string(), "10.0.0.0/8");
        let mapped: ProxyNet = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(mapped.to_string(), "10.0.0.1/32");
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x",
            "10.0.0.1/-1",
            "1.2.3.4/a",
        ] {
            assert!(bad.parse::<ProxyNet>().is_err(), "{bad}");
        }
    }

    #[test]
    fn untrusted_peers_headers_are_ignored() {
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(
            resolve(ip("9.9.9.9"), &h, &nets(&["10.0.0.0/8"])),
            ip("9.9.9.9")
        );
        assert_eq!(resolve(ip("9.9.9.9"), &h, &[]), ip("9.9.9.9"));
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let t = nets(&["10.0.0.0/8"]);
        // The client claims to be 6.6.6.6; the first proxy appended the real 1.1.1.1.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 1.1.1.1, 10.0.0.2")]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("1.1.1.1"));
        // Several headers are one list.
        let h = headers(&[
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-for", "1.1.1.1"),
        ]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("1.1.1.1"));
        // Every hop trusted: the leftmost.
        let h = headers(&[("x-forwarded-for", "10.0.0.7, 10.0.0.2")]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("10.0.0.7"));
        // No header: the proxy itself.
        assert_eq!(
            resolve(ip("10.0.0.1"), &HeaderMap::new(), &t),
            ip("10.0.0.1")
        );
        // A hop that is no address: the last trusted one, never a client-chosen value.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, garbage, 10.0.0.2")]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("10.0.0.2"));
    }

    #[test]
    fn forwarded_wins_and_is_parsed() {
        let t = nets(&["10.0.0.0/8"]);
        let h = headers(&[
            ("x-forwarded-for", "3.3.3.3"),
            (
                "forwarded",
                "for=6.6.6.6;proto=http, For=\"[2001:db8:cafe::17]:4711\";by=10.0.0.1",
            ),
        ]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("2001:db8:cafe::17"));
        let h = headers(&[("forwarded", "for=1.2.3.4:80")]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("1.2.3.4"));
        let h = headers(&[("forwarded", "for=unknown")]);
        assert_eq!(resolve(ip("10.0.0.1"), &h, &t), ip("10.0.0.1"));
    }
}
