//! DNS lookups: TXT records for domain verification (ownership tokens, DKIM, SPF,
//! DMARC) and, later, MX records for delivery.
//!
//! [`Dns`] is a thin wrapper over hickory-resolver. Each lookup returns a [`Lookup`], which
//! keeps the three outcomes callers must treat differently apart: the records, a definite
//! "there are none" (NXDOMAIN or no records of that type), and a temporary failure
//! (SERVFAIL, refused, timeout, network) after which the caller should try again later.
//! Only building the resolver can fail outright ([`DnsError`]).
//!
//! Names are always queried as absolute names, so the search domains of
//! `/etc/resolv.conf` are never appended: `example.com` never becomes
//! `example.com.corp.internal`.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData, RecordType};

/// How long one attempt waits for an answer. Verification runs while a user waits on an
/// API call and delivery retries on its own schedule, so a slow server is better treated
/// as a temporary failure than waited on.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Attempts per lookup before reporting a temporary failure: enough to ride out one lost
/// UDP datagram without doubling the worst-case wait more than once.
const ATTEMPTS: usize = 2;

/// DNS lookups for domain verification and (later) MX resolution.
///
/// Cheap to clone: clones share the resolver, its connections and its cache.
#[derive(Clone, Debug)]
pub struct Dns {
    resolver: TokioResolver,
}

impl Dns {
    /// A resolver using `nameservers`, or the system's (`/etc/resolv.conf`) when the list
    /// is empty. Each server is asked over UDP, falling back to TCP when an answer is
    /// truncated. `cache` false disables caching, so verification sees records the moment
    /// they are published rather than after the previous answer's TTL.
    pub fn new(nameservers: &[SocketAddr], cache: bool) -> Result<Dns, DnsError> {
        let mut builder = if nameservers.is_empty() {
            TokioResolver::builder_tokio().map_err(|source| DnsError::SystemConfig { source })?
        } else {
            let servers = nameservers.iter().map(|addr| name_server(*addr)).collect();
            let config = ResolverConfig::from_name_servers(servers);
            TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
        };
        configure(builder.options_mut(), cache);
        let resolver = builder.build().map_err(|source| DnsError::Build { source })?;
        Ok(Dns { resolver })
    }

    /// The underlying resolver, for libraries that take one (mail-auth's verifier).
    pub fn resolver(&self) -> &TokioResolver {
        &self.resolver
    }

    /// TXT records at `name`, one `String` per record with the record's
    /// character-strings concatenated: a 2048-bit DKIM key does not fit one 255-byte
    /// character-string, so publishers split it and readers must join it back. Bytes that
    /// are not UTF-8 are replaced with U+FFFD; every TXT value herald reads is ASCII.
    pub async fn txt(&self, name: &str) -> Lookup<Vec<String>> {
        self.lookup(name, RecordType::TXT, |rdata| match rdata {
            RData::TXT(txt) => Some(String::from_utf8_lossy(&txt.txt_data.concat()).into_owned()),
            _ => None,
        })
        .await
    }

    /// MX records at `name` as `(preference, exchange)`, sorted by preference (then by
    /// exchange, so the order is deterministic; delivery shuffles equal preferences
    /// itself). Exchanges are lower-cased ASCII (IDNA names in punycode) without the
    /// trailing dot. A null MX (RFC 7505, "this domain accepts no mail") appears as an
    /// empty exchange.
    pub async fn mx(&self, name: &str) -> Lookup<Vec<(u16, String)>> {
        let mut found = self
            .lookup(name, RecordType::MX, |rdata| match rdata {
                RData::MX(mx) => Some((mx.preference, exchange_name(&mx.exchange))),
                _ => None,
            })
            .await;
        if let Lookup::Found(records) = &mut found {
            records.sort_unstable();
        }
        found
    }

    /// The CNAME targets at `name`, lower-cased without the trailing dot.
    pub async fn cname(&self, name: &str) -> Lookup<Vec<String>> {
        self.lookup(name, RecordType::CNAME, |rdata| match rdata {
            RData::CNAME(target) => Some(exchange_name(&target.0)),
            _ => None,
        })
        .await
    }

    /// The IPv4 then IPv6 addresses of `name`. Found when either family has addresses;
    /// not found only when the authority says neither has any.
    pub async fn ips(&self, name: &str) -> Lookup<Vec<IpAddr>> {
        let v4 = self
            .lookup(name, RecordType::A, |rdata| match rdata {
                RData::A(a) => Some(IpAddr::V4(a.0)),
                _ => None,
            })
            .await;
        let v6 = self
            .lookup(name, RecordType::AAAA, |rdata| match rdata {
                RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                _ => None,
            })
            .await;
        match (v4, v6) {
            (Lookup::Found(mut v4), Lookup::Found(v6)) => {
                v4.extend(v6);
                Lookup::Found(v4)
            }
            (Lookup::Found(found), _) | (_, Lookup::Found(found)) => Lookup::Found(found),
            (Lookup::TemporaryFailure(why), _) | (_, Lookup::TemporaryFailure(why)) => Lookup::TemporaryFailure(why),
            (Lookup::NotFound, Lookup::NotFound) => Lookup::NotFound,
        }
    }

    /// The names `ip` points back to (PTR), lower-cased without the trailing dot.
    pub async fn ptr(&self, ip: IpAddr) -> Lookup<Vec<String>> {
        let name = Name::from(ip).to_ascii();
        self.lookup(&name, RecordType::PTR, |rdata| match rdata {
            RData::PTR(target) => Some(exchange_name(&target.0)),
            _ => None,
        })
        .await
    }

    /// Looks up `record_type` at `name` and keeps the records `extract` accepts. The
    /// answer may also hold the CNAME records that led to the name, which `extract`
    /// skips by returning `None`.
    async fn lookup<T>(
        &self,
        name: &str,
        record_type: RecordType,
        extract: impl Fn(&RData) -> Option<T>,
    ) -> Lookup<Vec<T>> {
        let Some(name) = absolute(name) else {
            // Such a name cannot be registered, so it has no records. Reporting a
            // temporary failure instead would have callers retry forever.
            tracing::debug!(name, "not a valid DNS name");
            return Lookup::NotFound;
        };
        match self.resolver.lookup(name.clone(), record_type).await {
            Ok(lookup) => {
                let records: Vec<T> = lookup
                    .answers()
                    .iter()
                    .filter_map(|record| extract(&record.data))
                    .collect();
                if records.is_empty() {
                    Lookup::NotFound
                } else {
                    Lookup::Found(records)
                }
            }
            Err(error) => {
                tracing::debug!(%name, %record_type, %error, "DNS lookup failed");
                outcome_of_error(&error)
            }
        }
    }
}

/// The outcome of one lookup: an expected-outcome enum, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<T> {
    /// The records, never empty.
    Found(T),
    /// The name does not exist (NXDOMAIN) or has no records of the asked type. This is
    /// an answer from the authority, so callers may act on it (fail a verification,
    /// bounce a message).
    NotFound,
    /// No answer could be had: SERVFAIL, REFUSED, a timeout or a network error. Callers
    /// should try again later; the text says why, for logs and API responses.
    TemporaryFailure(String),
}

/// Why a [`Dns`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnsError {
    /// The system's resolver configuration (`/etc/resolv.conf`) could not be read or
    /// parsed.
    #[error("cannot read the system DNS configuration (/etc/resolv.conf)")]
    SystemConfig {
        /// The resolver's error.
        source: NetError,
    },
    /// The resolver rejected its configuration.
    #[error("cannot build the DNS resolver")]
    Build {
        /// The resolver's error.
        source: NetError,
    },
}

/// One server at `addr`: UDP first, TCP for truncated answers.
fn name_server(addr: SocketAddr) -> NameServerConfig {
    let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
        .into_iter()
        .map(|mut connection| {
            connection.port = addr.port();
            connection
        })
        .collect();
    // Trusting NXDOMAIN means one server's "no such name" is final rather than a cue to
    // ask the next; every configured server is expected to give the same answer.
    NameServerConfig::new(addr.ip(), true, connections)
}

/// Applies herald's limits on top of the defaults or the system's options.
fn configure(options: &mut ResolverOpts, cache: bool) {
    options.timeout = TIMEOUT;
    options.attempts = ATTEMPTS;
    if !cache {
        // A zero-capacity cache can still serve an entry until its eviction runs, so the
        // TTLs are also clamped to zero: an entry is then stale as soon as it is stored.
        options.cache_size = 0;
        options.positive_max_ttl = Some(Duration::ZERO);
        options.negative_max_ttl = Some(Duration::ZERO);
    }
}

/// `name` as an absolute DNS name, or `None` when it is not a valid one.
fn absolute(name: &str) -> Option<Name> {
    let mut name = Name::from_utf8(name).ok()?;
    name.set_fqdn(true);
    Some(name)
}

/// An MX exchange as herald compares and connects to it: lower-case ASCII, no root dot.
fn exchange_name(exchange: &Name) -> String {
    exchange.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}

/// Sorts a failed lookup into "no such records" and "ask again later".
fn outcome_of_error<T>(error: &NetError) -> Lookup<T> {
    // NXDOMAIN and NOERROR-with-no-answers both arrive as "no records found"; every
    // other error (an error response code, a timeout, I/O) says nothing about the records.
    if error.is_no_records_found() {
        Lookup::NotFound
    } else {
        Lookup::TemporaryFailure(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use hickory_resolver::net::{DnsError as NetDnsError, NoRecords};
    use hickory_resolver::proto::op::{Query, ResponseCode};

    use super::*;

    #[test]
    fn absolute_appends_the_root_once() {
        let relative = absolute("Example.COM").expect("valid name");
        let already = absolute("example.com.").expect("valid name");
        assert!(relative.is_fqdn());
        // IDNA mapping lower-cases, which DNS comparisons ignore anyway.
        assert_eq!(relative.to_ascii(), "example.com.");
        assert_eq!(already.to_ascii(), "example.com.");
    }

    #[test]
    fn absolute_encodes_international_names_as_punycode() {
        let name = absolute("bücher.example").expect("valid name");
        assert_eq!(name.to_ascii(), "xn--bcher-kva.example.");
    }

    #[test]
    fn absolute_rejects_invalid_names() {
        let too_long_label = format!("{}.example", "a".repeat(64));
        assert_eq!(absolute(&too_long_label), None);
        assert_eq!(absolute("a..b"), None);
    }

    #[test]
    fn exchange_name_is_lower_case_without_the_root() {
        let name = Name::from_ascii("MX1.Example.COM.").expect("valid name");
        assert_eq!(exchange_name(&name), "mx1.example.com");
        assert_eq!(exchange_name(&Name::root()), "");
    }

    #[test]
    fn no_records_is_not_found_and_the_rest_is_temporary() {
        let query = Query::query(Name::from_ascii("example.com.").expect("valid name"), RecordType::TXT);
        let nxdomain: NetError = NoRecords::new(query.clone(), ResponseCode::NXDomain).into();
        let nodata: NetError = NoRecords::new(query, ResponseCode::NoError).into();
        let servfail = NetError::Dns(NetDnsError::ResponseCode(ResponseCode::ServFail));
        assert_eq!(outcome_of_error::<()>(&nxdomain), Lookup::NotFound);
        assert_eq!(outcome_of_error::<()>(&nodata), Lookup::NotFound);
        assert!(matches!(outcome_of_error::<()>(&servfail), Lookup::TemporaryFailure(_)));
        assert!(matches!(
            outcome_of_error::<()>(&NetError::Timeout),
            Lookup::TemporaryFailure(_)
        ));
    }
}
