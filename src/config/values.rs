//! Parsers for the value types config keys hold: durations, rates, byte sizes, addresses.
//! Each returns a message fit to follow the key's name.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// A rate such as `50/s`: `count` events per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Events allowed per period; at least 1.
    pub count: u32,
    /// The period; at least a millisecond.
    pub per: Duration,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.per.as_secs() {
            1 if self.per.subsec_nanos() == 0 => write!(f, "{}/s", self.count),
            60 if self.per.subsec_nanos() == 0 => write!(f, "{}/m", self.count),
            3600 if self.per.subsec_nanos() == 0 => write!(f, "{}/h", self.count),
            _ => write!(f, "{}/{}", self.count, humantime::format_duration(self.per)),
        }
    }
}

/// `"30s"`, `"5m"`, `"72h"`, `"1h 30m"`: a positive duration.
pub fn duration(text: &str) -> Result<Duration, String> {
    let parsed = humantime::parse_duration(text.trim())
        .map_err(|e| format!("invalid duration {text:?} ({e}); write it like \"30s\", \"5m\" or \"72h\""))?;
    if parsed.is_zero() {
        return Err(format!("duration {text:?} must be greater than zero"));
    }
    Ok(parsed)
}

/// `"50/s"`, `"600/m"`, `"10000/h"`, or `"5/10s"`.
pub fn rate(text: &str) -> Result<Rate, String> {
    let invalid = || format!("invalid rate {text:?}; write it like \"50/s\", \"600/m\" or \"10000/h\"");
    let (count, unit) = text.trim().split_once('/').ok_or_else(invalid)?;
    let count: u32 = count.trim().parse().map_err(|_| invalid())?;
    if count == 0 {
        return Err(format!("rate {text:?} must allow at least one request"));
    }
    let per = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        other => duration(other).map_err(|_| invalid())?,
    };
    if per < Duration::from_millis(1) {
        return Err(invalid());
    }
    Ok(Rate { count, per })
}

/// `"256MiB"`, `"1 GB"`, `"0"`: a number of bytes.
pub fn byte_size(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<bytesize::ByteSize>()
        .map(|size| size.as_u64())
        .map_err(|e| format!("invalid size {text:?} ({e}); write it like \"256MiB\" or \"1GB\""))
}

/// `"127.0.0.1:3000"` or `"[::1]:3000"`.
pub fn socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!("invalid address {text:?}; write it as ip:port, like \"127.0.0.1:3000\" or \"[::1]:3000\"")
    })
}

/// The base URL of public pages: `http(s)://host[:port]`, with no path, query or
/// fragment; a trailing `/` is dropped.
pub fn public_url(text: &str) -> Result<String, String> {
    let trimmed = text.trim().trim_end_matches('/');
    let fail = || {
        format!(
            "invalid URL {text:?}; write it as https://host or https://host:port, like \"https://mail.example.com\""
        )
    };
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
        .ok_or_else(fail)?;
    let host = rest
        .rsplit_once(':')
        .filter(|(_, port)| port.parse::<u16>().is_ok())
        .map_or(rest, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || !(is_hostname(host) || host.parse::<IpAddr>().is_ok()) {
        return Err(fail());
    }
    Ok(trimmed.to_owned())
}

/// A DNS server: `"ip:port"`, or a bare IP for port 53.
pub fn nameserver(text: &str) -> Result<SocketAddr, String> {
    let trimmed = text.trim();
    if let Ok(ip) = trimmed.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 53));
    }
    socket_addr(trimmed)
}

/// A smarthost `"host:port"`: a DNS name or IP, and a port.
pub fn host_port(text: &str) -> Result<(String, u16), String> {
    let invalid = || format!("invalid relay {text:?}; write it as host:port, like \"smtp.example.com:587\"");
    if let Ok(addr) = text.trim().parse::<SocketAddr>() {
        return Ok((addr.ip().to_string(), addr.port()));
    }
    let (host, port) = text.trim().rsplit_once(':').ok_or_else(invalid)?;
    let port: u16 = port.parse().map_err(|_| invalid())?;
    if port == 0 || !is_hostname(host) {
        return Err(invalid());
    }
    Ok((host.to_owned(), port))
}

/// Whether `name` is a syntactically valid DNS host name (letters, digits, hyphens, dots;
/// labels of 1 to 63 characters; at most 253 in all).
pub fn is_hostname(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("72h"), Ok(Duration::from_secs(72 * 3600)));
        assert_eq!(duration(" 1m 30s "), Ok(Duration::from_secs(90)));
        assert!(duration("0s").is_err());
        assert!(duration("5x").is_err());
        assert!(duration("").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(
            rate("50/s"),
            Ok(Rate {
                count: 50,
                per: Duration::from_secs(1)
            })
        );
        assert_eq!(rate("600/m").map(|r| r.per), Ok(Duration::from_secs(60)));
        assert_eq!(rate("5/10s").map(|r| r.per), Ok(Duration::from_secs(10)));
        assert_eq!(rate("50/s").map(|r| r.to_string()), Ok("50/s".into()));
        for bad in ["0/s", "50", "x/s", "50/fortnight", "-1/s", "50/0s"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_addresses() {
        assert_eq!(byte_size("256MiB"), Ok(256 * 1024 * 1024));
        assert_eq!(byte_size("0"), Ok(0));
        assert!(byte_size("lots").is_err());
        assert!(socket_addr("127.0.0.1:3000").is_ok());
        assert!(socket_addr("localhost:3000").is_err());
        assert_eq!(nameserver("127.0.0.1").map(|a| a.port()), Ok(53));
        assert_eq!(nameserver("[::1]:5353").map(|a| a.port()), Ok(5353));
        assert_eq!(host_port("smtp.example.com:587"), Ok(("smtp.example.com".into(), 587)));
        assert!(host_port("smtp.example.com").is_err());
        assert!(host_port("bad_host:25").is_err());
        assert!(is_hostname("mail.example.com"));
        assert!(!is_hostname("-bad.example.com"));
        assert!(!is_hostname("a..b"));
    }
}
