//! The one outbound HTTP client: attachment `path` downloads now, webhook deliveries
//! later. It refuses loopback, private, link-local, shared, multicast and cloud metadata
//! addresses **when connecting** (it resolves the name itself and connects to the address
//! it checked, so a name that resolves differently the second time cannot slip through),
//! unless `[webhooks] allow_private_endpoints` is set. Every request is bounded in time
//! and in response size; redirects are not followed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

/// Limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The whole exchange, connect to last byte.
    pub timeout: Duration,
    /// Largest response body read.
    pub body_max: usize,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// Not an http(s) URL with a host and without user info.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The host resolves only to addresses herald refuses to contact.
    #[error("{host} resolves to {addr}, a private, loopback, link-local or metadata address, which is refused")]
    Refused {
        /// The host.
        host: String,
        /// The refused address.
        addr: IpAddr,
    },
    /// DNS, TCP, TLS or HTTP failed.
    #[error("cannot fetch {url}: {reason}")]
    Failed {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The time limit passed.
    #[error("{0} took longer than the time limit")]
    Timeout(String),
    /// The response is larger than allowed.
    #[error("{url} is larger than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The server answered with a status that is not a success.
    #[error("{url} answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
}

/// A response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// The client.
#[derive(Clone)]
pub struct Outbound {
    allow_private: bool,
    allowed_networks: Arc<[ipnet::IpNet]>,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("allow_private", &self.allow_private)
            .field("allowed_networks", &self.allowed_networks)
            .finish_non_exhaustive()
    }
}

impl Outbound {
    /// A client; `allow_private` lifts the address checks (tests, local development),
    /// `allowed_networks` lifts them for the addresses in those networks only.
    pub fn new(allow_private: bool, allowed_networks: Vec<ipnet::IpNet>) -> Result<Outbound, herald_tls::Error> {
        Ok(Outbound {
            allow_private,
            allowed_networks: allowed_networks.into(),
            tls: herald_tls::client_config(herald_tls::Verification::Required, None)?,
        })
    }

    /// `GET url`; a status other than 2xx is an error.
    pub async fn get(&self, url: &str, limits: Limits) -> Result<Response, OutboundError> {
        let response = self.send(Method::GET, url, Vec::new(), Bytes::new(), limits).await?;
        if !response.status.is_success() {
            return Err(OutboundError::Status {
                url: url.to_owned(),
                status: response.status.as_u16(),
            });
        }
        Ok(response)
    }

    /// Checks `url` the way [`send`](Self::send) does before it connects: the URL's form,
    /// then, unless private addresses are allowed, every address its host resolves to now.
    /// Webhook endpoints are checked so when they are saved, to refuse a bad one early;
    /// `send` checks again at connect time, since what a name resolves to can change.
    pub async fn check(&self, url: &str) -> Result<(), OutboundError> {
        let target = Target::parse(url)?;
        if self.allow_private {
            return Ok(());
        }
        self.resolve(&target.host, target.port, url).await.map(drop)
    }

    /// Sends one request with `headers` and `body` and returns the response, whatever its
    /// status.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: Vec<(String, String)>,
        body: Bytes,
        limits: Limits,
    ) -> Result<Response, OutboundError> {
        tokio::time::timeout(
            limits.timeout,
            self.exchange(method, url, headers, body, limits.body_max),
        )
        .await
        .map_err(|_| OutboundError::Timeout(url.to_owned()))?
    }

    async fn exchange(
        &self,
        method: Method,
        url: &str,
        headers: Vec<(String, String)>,
        body: Bytes,
        body_max: usize,
    ) -> Result<Response, OutboundError> {
        let Target { uri, https, host, port } = Target::parse(url)?;
        let addr = self.resolve(&host, port, url).await?;
        let failed = |reason: String| OutboundError::Failed {
            url: url.to_owned(),
            reason,
        };
        let stream = TcpStream::connect(addr).await.map_err(|e| failed(e.to_string()))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let authority = uri.authority().map(ToString::to_string).unwrap_or_else(|| host.clone());
        let mut request = Request::builder().method(method).uri(path).header("host", authority);
        // The caller's headers, then a default user agent unless the caller named one:
        // `header` appends, and a request with two `user-agent`s confuses receivers.
        let mut has_agent = false;
        for (name, value) in headers {
            has_agent |= name.eq_ignore_ascii_case("user-agent");
            request = request.header(name, value);
        }
        if !has_agent {
            request = request.header("user-agent", concat!("herald/", env!("CARGO_PKG_VERSION")));
        }
        let request = request.body(Full::new(body)).map_err(|e| failed(e.to_string()))?;
        let response = if https {
            let name = ServerName::try_from(host.clone()).map_err(|e| failed(e.to_string()))?;
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(&self.tls))
                .connect(name, stream)
                .await
                .map_err(|e| failed(format!("TLS: {e}")))?;
            round_trip(TokioIo::new(tls), request).await
        } else {
            round_trip(TokioIo::new(stream), request).await
        }
        .map_err(failed)?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
        let body = Limited::new(response.into_body(), body_max)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                    OutboundError::TooLarge {
                        url: url.to_owned(),
                        limit: body_max,
                    }
                } else {
                    failed(e.to_string())
                }
            })?;
        Ok(Response {
            status,
            content_type,
            body: body.to_bytes(),
        })
    }

    /// The address to connect to: the first one the name resolves to, provided every
    /// address it resolves to may be contacted.
    async fn resolve(&self, host: &str, port: u16, url: &str) -> Result<SocketAddr, OutboundError> {
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|e| OutboundError::Failed {
                    url: url.to_owned(),
                    reason: format!("cannot resolve {host}: {e}"),
                })?
                .collect(),
        };
        if let Some(bad) = addrs.iter().find(|a| !self.permits(a.ip())) {
            return Err(OutboundError::Refused {
                host: host.to_owned(),
                addr: bad.ip(),
            });
        }
        addrs.first().copied().ok_or_else(|| OutboundError::Failed {
            url: url.to_owned(),
            reason: format!("{host} has no addresses"),
        })
    }
}

impl Outbound {
    /// Whether requests may go to `ip`: a public address, one in an allowed network, or
    /// any when private addresses are allowed.
    fn permits(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            IpAddr::V4(_) => ip,
        };
        self.allow_private || is_public(ip) || self.allowed_networks.iter().any(|network| network.contains(&ip))
    }
}

/// Where a URL points: what the client connects to.
struct Target {
    uri: hyper::Uri,
    https: bool,
    /// The host name or IP address, without the brackets of an IPv6 literal.
    host: String,
    port: u16,
}

impl Target {
    /// Parses an absolute http(s) URL with a host. User info (`user:password@`) is
    /// refused: it would otherwise travel in the `Host` header, and credentials in a
    /// stored URL end up in logs and screenshots.
    fn parse(url: &str) -> Result<Target, OutboundError> {
        let refuse = |reason| OutboundError::Url {
            url: url.to_owned(),
            reason,
        };
        let uri: hyper::Uri = url.parse().map_err(|_| refuse("it is not a valid absolute URL"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            Some(_) => return Err(refuse("only http:// and https:// URLs are fetched")),
            None => return Err(refuse("it is not an absolute URL (http:// or https://)")),
        };
        let authority = uri.authority().ok_or_else(|| refuse("it has no host"))?;
        if authority.as_str().contains('@') {
            return Err(refuse("user info (user:password@) is not allowed in the URL"));
        }
        let host = authority.host().trim_matches(['[', ']']).to_owned();
        if host.is_empty() {
            return Err(refuse("it has no host"));
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Target { uri, https, host, port })
    }
}

async fn round_trip<T>(
    io: TokioIo<T>,
    request: Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    sender.send_request(request).await.map_err(|e| e.to_string())
}

/// Whether `ip` is an address on the public internet: not loopback, private, link-local
/// (which includes the 169.254.169.254 metadata service), shared (CGNAT), multicast,
/// documentation, benchmarking, reserved or unspecified, also when written as an
/// IPv4-mapped IPv6 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_unspecified()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || first == 0x2001 && ip.segments()[1] == 0x0db8
        || first == 0x0064 && ip.segments()[1] == 0xff9b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_is_refused_unless_allowed() {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let limits = Limits {
            timeout: Duration::from_secs(5),
            body_max: 1024,
        };
        let strict = Outbound::new(false, Vec::new()).expect("client");
        let err = strict.get("http://127.0.0.1:9/x", limits).await.expect_err("refused");
        assert!(matches!(err, OutboundError::Refused { .. }), "{err}");
        let err = strict.get("http://[::1]:9/x", limits).await.expect_err("refused");
        assert!(matches!(err, OutboundError::Refused { .. }), "{err}");
        let err = strict.get("http://localhost:9/x", limits).await.expect_err("refused");
        assert!(matches!(err, OutboundError::Refused { .. }), "{err}");
        assert!(matches!(
            strict.get("ftp://example.com/x", limits).await,
            Err(OutboundError::Url { .. })
        ));
        let err = strict.check("http://10.0.0.1/hook").await.expect_err("refused");
        assert!(matches!(err, OutboundError::Refused { .. }), "{err}");
        let lenient = Outbound::new(true, Vec::new()).expect("client");
        lenient.check("http://127.0.0.1:9/hook").await.expect("allowed");
        lenient.check("https://93.184.216.34/hook").await.expect("public");

        let networks = vec![
            "127.0.0.2/32".parse().expect("net"),
            "fd00:1::/64".parse().expect("net"),
        ];
        let listed = Outbound::new(false, networks).expect("client");
        listed
            .check("http://127.0.0.2:9/hook")
            .await
            .expect("in an allowed network");
        listed
            .check("http://[fd00:1::5]/hook")
            .await
            .expect("in an allowed network");
        listed
            .check("http://[::ffff:127.0.0.2]/hook")
            .await
            .expect("mapped into an allowed network");
        for outside in [
            "http://127.0.0.1:9/hook",
            "http://169.254.169.254/latest",
            "http://[fd00:2::5]/hook",
        ] {
            let err = listed.check(outside).await.expect_err("outside the allowed networks");
            assert!(matches!(err, OutboundError::Refused { .. }), "{outside}: {err}");
        }
    }

    #[test]
    fn urls_are_absolute_http_with_a_host_and_no_user_info() {
        let target = Target::parse("https://[::1]:8443/hook?x=1").expect("valid");
        assert_eq!((target.https, target.host.as_str(), target.port), (true, "::1", 8443));
        let target = Target::parse("http://Example.COM/hook").expect("valid");
        assert_eq!((target.https, target.port), (false, 80));
        for (url, reason) in [
            ("ftp://example.com/x", "only http"),
            ("/relative/path", "not an absolute URL"),
            ("example.com/hook", "absolute URL"),
            ("http://user:secret@example.com/", "user info"),
            ("https://@example.com/", "user info"),
            ("http://exa mple.com/", "not a valid"),
            ("", "not a valid"),
        ] {
            match Target::parse(url) {
                Err(OutboundError::Url { reason: got, .. }) => assert!(got.contains(reason), "{url}: {got}"),
                Err(other) => panic!("{url}: {other}"),
                Ok(target) => panic!("{url}: accepted with host {:?}", target.host),
            }
        }
    }
}
