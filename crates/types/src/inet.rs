//! `inet` values: addresses from CQL text as Cassandra reads them, and to text as it prints
//! them.
//!
//! Cassandra turns a literal into an address with Java's `InetAddress.getByName`, so the
//! numeric forms Java accepts are the ones accepted here:
//! - IPv4 as one to four decimal parts (`192.168.0.1`; `10.1` is `10.0.0.1` and `1` is
//!   `0.0.0.1`, as in `inet_aton`), at most 15 characters;
//! - IPv6 in any RFC 4291 form (`::1`, `2001:db8::8:800:200c:417a`, `::ffff:1.2.3.4`),
//!   optionally in brackets (`[::1]`). An IPv4-mapped address (`::ffff:a.b.c.d`) becomes the
//!   4-byte IPv4 address, as Java converts it.
//!
//! Java would also resolve a host name (`'localhost'`) through DNS; Mosaic refuses names, so a
//! statement's meaning never depends on a resolver. Zone ids (`fe80::1%eth0`) are refused too.
//!
//! Text output is Java's `getHostAddress`: dotted IPv4, and IPv6 as eight uncompressed
//! lowercase hex groups (`0:0:0:0:0:0:0:1`), which is what `CAST(a AS text)` shows.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A CQL literal that is not an address Mosaic can make an `inet` of.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Unable to make inet address from '{text}'")]
#[non_exhaustive]
pub struct ParseInetError {
    /// The literal as given.
    pub text: String,
}

/// Parses an `inet` literal as Cassandra's `InetAddressType.fromString` does (without name
/// resolution; see the module doc).
pub fn parse_inet(text: &str) -> Result<IpAddr, ParseInetError> {
    let err = || ParseInetError {
        text: text.to_owned(),
    };
    if let Some(inner) = text.strip_prefix('[') {
        // Brackets promise an IPv6 address.
        let inner = inner.strip_suffix(']').filter(|s| !s.is_empty());
        return match inner.map(parse_ipv6) {
            Some(Some(IpAddr::V6(a))) => Ok(IpAddr::V6(a)),
            _ => Err(err()),
        };
    }
    if let Some(v4) = parse_ipv4(text) {
        return Ok(IpAddr::V4(v4));
    }
    parse_ipv6(text).ok_or_else(err)
}

/// Java's `IPAddressUtil.textToNumericFormatV4`: 1–4 decimal parts, the last filling the
/// remaining bytes.
fn parse_ipv4(text: &str) -> Option<Ipv4Addr> {
    if text.is_empty() || text.len() > 15 {
        return None;
    }
    let parts: Vec<&str> = text.split('.').collect();
    let (last, init) = parts.split_last()?;
    // At most 4 parts (so `init` has at most 3), every part non-empty decimal digits.
    if init.len() > 3 {
        return None;
    }
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // At most 15 digits (the length limit), so this cannot overflow a u64.
        s.parse::<u64>().ok()
    };
    let mut out = [0u8; 4];
    for (slot, part) in out.iter_mut().zip(init) {
        *slot = u8::try_from(number(part)?).ok()?;
    }
    let rest_bytes = 4 - init.len();
    let last = number(last)?;
    if last >= 1u64 << (8 * rest_bytes) {
        return None;
    }
    let be = last.to_be_bytes();
    for (slot, byte) in out
        .iter_mut()
        .skip(init.len())
        .zip(be.iter().skip(8 - rest_bytes))
    {
        *slot = *byte;
    }
    Some(Ipv4Addr::from(out))
}

/// An IPv6 literal; IPv4-mapped addresses come back as IPv4.
fn parse_ipv6(text: &str) -> Option<IpAddr> {
    let addr: Ipv6Addr = text.parse().ok()?;
    Some(match addr.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(addr),
    })
}

/// An address as Java's `InetAddress.getHostAddress` prints it.
pub fn java_host_address(addr: &IpAddr) -> String {
    JavaHostAddress(addr).to_string()
}

struct JavaHostAddress<'a>(&'a IpAddr);

impl fmt::Display for JavaHostAddress<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}"),
            IpAddr::V6(a) => {
                for (i, group) in a.segments().iter().enumerate() {
                    if i > 0 {
                        f.write_str(":")?;
                    }
                    write!(f, "{group:x}")?;
                }
                Ok(())
            }
        }
    }
}

/// The address's bytes: 4 for IPv4, 16 for IPv6 (its `inet` serialization).
pub fn inet_octets(addr: &IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Option<[u8; 4]> {
        match parse_inet(s).ok()? {
            IpAddr::V4(a) => Some(a.octets()),
            IpAddr::V6(_) => None,
        }
    }

    #[test]
    fn ipv4_literals_parse_like_java() {
        assert_eq!(v4("192.168.0.1"), Some([192, 168, 0, 1]));
        assert_eq!(v4("10.1"), Some([10, 0, 0, 1]));
        assert_eq!(v4("1.2.3"), Some([1, 2, 0, 3]));
        assert_eq!(v4("1.2.65535"), Some([1, 2, 255, 255]));
        assert_eq!(v4("1"), Some([0, 0, 0, 1]));
        assert_eq!(v4("4294967295"), Some([255, 255, 255, 255]));
        assert_eq!(v4("010.0.0.1"), Some([10, 0, 0, 1]));
        for bad in [
            "",
            "256.0.0.1",
            "1.2.3.4.5",
            "1..2",
            "1.2.",
            ".1",
            "4294967296",
            "1.2.65536",
            "1.2.3.4 ",
            "0x7f.0.0.1",
            "localhost",
            "1.2.3.-4",
            "0000000000000001",
        ] {
            assert!(parse_inet(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ipv6_literals_parse_and_mapped_addresses_become_ipv4() {
        assert_eq!(parse_inet("::1"), Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(parse_inet("[::1]"), Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(v4("::ffff:1.2.3.4"), Some([1, 2, 3, 4]));
        assert_eq!(v4("::FFFF:102:304"), Some([1, 2, 3, 4]));
        // IPv4-compatible (not mapped) addresses stay IPv6.
        assert!(matches!(parse_inet("::1.2.3.4"), Ok(IpAddr::V6(_))));
        assert_eq!(
            parse_inet("2001:DB8::8:800:200C:417A").map(|a| inet_octets(&a).len()),
            Ok(16)
        );
        for bad in [
            "[1.2.3.4]",
            "[::1",
            "[]",
            ":::",
            "fe80::1%eth0",
            "1:2:3:4:5:6:7:8:9",
        ] {
            assert!(parse_inet(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_inet("nope").unwrap_err().to_string(),
            "Unable to make inet address from 'nope'"
        );
    }

    #[test]
    fn host_addresses_print_as_java_does() {
        let p = |s: &str| java_host_address(&parse_inet(s).unwrap());
        assert_eq!(p("::1"), "0:0:0:0:0:0:0:1");
        assert_eq!(p("2001:db8::ff00:42:8329"), "2001:db8:0:0:0:ff00:42:8329");
        assert_eq!(p("10.1"), "10.0.0.1");
        assert_eq!(p("::ffff:127.0.0.1"), "127.0.0.1");
    }
}
