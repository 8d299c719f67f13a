//! `[[regions]]`: where mail leaves from. A region names the source addresses outbound
//! connections bind to, the EHLO name used from them and, optionally, a smarthost in that
//! region; each sending domain belongs to one. Without `[[regions]]` there is one region,
//! named by `[delivery] region`, that connects from whatever address the system picks,
//! as herald always has.

use std::net::IpAddr;

use chrono::NaiveDate;

use super::raw::{RawRegion, RawWarmup};
use super::values::{self, Rate};
use super::{ConfigError, Relay, Secret, Validator};

/// Resend's region names: the Rust SDK decodes a domain's `region` as a strict enum, so
/// herald's regions take one of these names.
pub const REGION_NAMES: &[&str] = &["us-east-1", "eu-west-1", "sa-east-1", "ap-northeast-1"];

/// The longest character-string of a DNS TXT record (RFC 1035 3.3).
const SPF_STRING_MAX: usize = 255;

/// Connections one source address holds open at once when the region does not say.
const CONNECTIONS_PER_ADDRESS: usize = 100;

/// One region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// One of [`REGION_NAMES`].
    pub name: String,
    /// The addresses outbound connections bind to, used in turn; empty lets the system
    /// choose (the implicit default region).
    pub source_addresses: Vec<IpAddr>,
    /// The EHLO name used from them; `None` is `[server] hostname`.
    pub ehlo: Option<String>,
    /// The region's smarthost; `None` is `[delivery] relay` (and without that, MX hosts).
    pub relay: Option<Relay>,
    /// Connections open at once from one source address, to all destinations together.
    pub connections_per_address: usize,
    /// Messages per period from one source address, when limited.
    pub rate_per_address: Option<Rate>,
    /// Warm-up schedules of new addresses.
    pub warmup: Vec<Warmup>,
    /// Made from `[delivery] region` because no `[[regions]]` is configured; not
    /// printed by `herald config`.
    pub implicit: bool,
}

/// A source address's warm-up: its daily limit on day `n` of the schedule is
/// `daily_limits[n]`; before `start` it is the first, after the last day it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warmup {
    /// The address (one of the region's `source_addresses`).
    pub address: IpAddr,
    /// The first day of the schedule (UTC).
    pub start: NaiveDate,
    /// Messages per UTC day, day by day.
    pub daily_limits: Vec<u64>,
}

impl Warmup {
    /// The day of the schedule `day` is (0 for the first, and before it), and that day's
    /// limit; `None` once the schedule is over.
    pub fn on(&self, day: NaiveDate) -> Option<(usize, u64)> {
        let index = usize::try_from((day - self.start).num_days().max(0)).unwrap_or(usize::MAX);
        self.daily_limits.get(index).map(|limit| (index, *limit))
    }
}

impl super::Config {
    /// The region named `name`, or the default one when no configured region has that
    /// name (a region removed from the file: its domains' mail leaves from the default).
    pub fn region(&self, name: &str) -> &Region {
        self.regions
            .iter()
            .find(|r| r.name == name)
            .or_else(|| self.regions.iter().find(|r| r.name == self.delivery.region))
            .unwrap_or(&self.regions[0])
    }

    /// The configured regions' names, in the file's order.
    pub fn region_names(&self) -> Vec<&str> {
        self.regions.iter().map(|r| r.name.as_str()).collect()
    }

    /// The SPF mechanisms the return-path record of a domain in `region` must hold:
    /// `[domains] spf`, then the region's source addresses (`ip4:`, `ip6:`), EHLO name and
    /// smarthost (`a:`).
    pub fn spf_mechanisms(&self, region: &Region) -> Vec<String> {
        let mut mechanisms = vec![self.domains.spf.clone()];
        let mut add = |mechanism: String| {
            if !mechanisms.iter().any(|m| m.eq_ignore_ascii_case(&mechanism)) {
                mechanisms.push(mechanism);
            }
        };
        for address in &region.source_addresses {
            add(match address {
                IpAddr::V4(v4) => format!("ip4:{v4}"),
                IpAddr::V6(v6) => format!("ip6:{v6}"),
            });
        }
        if let Some(ehlo) = &region.ehlo {
            add(format!("a:{ehlo}"));
        }
        if let Some(relay) = &region.relay {
            add(match relay.host.parse::<IpAddr>() {
                Ok(IpAddr::V4(v4)) => format!("ip4:{v4}"),
                Ok(IpAddr::V6(v6)) => format!("ip6:{v6}"),
                Err(_) => format!("a:{}", relay.host),
            });
        }
        mechanisms
    }

    /// The SPF record's value for a domain in `region`.
    pub fn spf_value(&self, region: &Region) -> String {
        format!("v=spf1 {} ~all", self.spf_mechanisms(region).join(" "))
    }

    /// What the operator should know about the SPF records the configured regions ask
    /// for: one longer than a DNS string (255 octets) must be published as several
    /// strings of one TXT record, which some DNS consoles do not do by themselves, and a
    /// domain whose record is published cut short fails SPF.
    pub(super) fn spf_warnings(&self) -> Vec<String> {
        self.regions
            .iter()
            .enumerate()
            .filter(|(_, region)| !region.implicit)
            .filter_map(|(index, region)| {
                let value = self.spf_value(region);
                (value.len() > SPF_STRING_MAX).then(|| {
                    format!(
                        "regions[{index}] ({}): the SPF record of its domains is {} characters, more than one \
                         DNS string holds ({SPF_STRING_MAX}): publish it as several quoted strings in one TXT \
                         record, or list fewer addresses (a CIDR range in `[domains] spf` covers many)",
                        region.name,
                        value.len()
                    )
                })
            })
            .collect()
    }

    /// The EHLO name mail from `region` uses.
    pub fn ehlo_of<'a>(&'a self, region: &'a Region) -> &'a str {
        region.ehlo.as_deref().unwrap_or(&self.server.hostname)
    }

    /// The smarthost mail from `region` goes to, if any.
    pub fn relay_of<'a>(&'a self, region: &'a Region) -> Option<&'a Relay> {
        region.relay.as_ref().or(self.delivery.relay.as_ref())
    }
}

impl Region {
    /// The warm-up schedule of `address`, if it has one.
    pub fn warmup_of(&self, address: IpAddr) -> Option<&Warmup> {
        self.warmup.iter().find(|w| w.address == address)
    }
}

impl Validator<'_> {
    /// Validates `[[regions]]` against `default` (`[delivery] region`): names from
    /// [`REGION_NAMES`], unique; addresses unique across regions; warm-up schedules for
    /// the region's own addresses. With none configured, the one implicit region.
    pub(super) fn regions(&self, raw: &[RawRegion], default: &str) -> Result<Vec<Region>, ConfigError> {
        if !REGION_NAMES.contains(&default) {
            return Err(self.error(
                "delivery.region",
                format!("{default:?} is not a region; use one of {}", REGION_NAMES.join(", ")),
            ));
        }
        if raw.is_empty() {
            return Ok(vec![Region {
                name: default.to_owned(),
                source_addresses: Vec::new(),
                ehlo: None,
                relay: None,
                connections_per_address: CONNECTIONS_PER_ADDRESS,
                rate_per_address: None,
                warmup: Vec::new(),
                implicit: true,
            }]);
        }
        let mut regions: Vec<Region> = Vec::with_capacity(raw.len());
        for (i, entry) in raw.iter().enumerate() {
            let region = self.region(i, entry)?;
            if regions.iter().any(|r| r.name == region.name) {
                return Err(self.error(
                    format!("regions[{i}].name"),
                    format!("another region is named {:?}", region.name),
                ));
            }
            for (j, address) in region.source_addresses.iter().enumerate() {
                if let Some(other) = regions.iter().find(|r| r.source_addresses.contains(address)) {
                    return Err(self.error(
                        format!("regions[{i}].source_addresses[{j}]"),
                        format!("{address} is already a source address of {}", other.name),
                    ));
                }
            }
            regions.push(region);
        }
        if !regions.iter().any(|r| r.name == default) {
            let names: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
            return Err(self.error(
                "delivery.region",
                format!(
                    "the default region {default:?} is not among [[regions]] ({})",
                    names.join(", ")
                ),
            ));
        }
        Ok(regions)
    }

    fn region(&self, i: usize, entry: &RawRegion) -> Result<Region, ConfigError> {
        let key = |field: &str| format!("regions[{i}].{field}");
        let name = entry.name.clone().unwrap_or_default();
        if !REGION_NAMES.contains(&name.as_str()) {
            return Err(self.error(
                key("name"),
                format!("{name:?} is not a region; use one of {}", REGION_NAMES.join(", ")),
            ));
        }
        let mut source_addresses: Vec<IpAddr> = Vec::new();
        for (j, text) in entry.source_addresses.iter().flatten().enumerate() {
            let address = text.trim().parse::<IpAddr>().map_err(|_| {
                self.error(
                    key(&format!("source_addresses[{j}]")),
                    format!("{text:?} is not an IPv4 or IPv6 address"),
                )
            })?;
            if address.is_unspecified() || address.is_multicast() {
                return Err(self.error(
                    key(&format!("source_addresses[{j}]")),
                    format!("{address} cannot be a source address"),
                ));
            }
            if source_addresses.contains(&address) {
                return Err(self.error(
                    key(&format!("source_addresses[{j}]")),
                    format!("{address} is listed twice"),
                ));
            }
            source_addresses.push(address);
        }
        let ehlo = match &entry.ehlo {
            Some(name) if values::is_hostname(name) => Some(name.trim_end_matches('.').to_ascii_lowercase()),
            Some(name) => return Err(self.error(key("ehlo"), format!("{name:?} is not a host name"))),
            None => None,
        };
        let relay = self.relay(
            &format!("regions[{i}]"),
            entry.relay.as_deref(),
            entry.relay_username.clone(),
            entry.relay_password.clone(),
        )?;
        let connections_per_address = match entry.connections_per_address {
            Some(0) => return Err(self.error(key("connections_per_address"), "must be at least 1")),
            Some(n) => n,
            None => CONNECTIONS_PER_ADDRESS,
        };
        let rate_per_address = entry
            .rate_per_address
            .as_deref()
            .map(|text| self.check(&key("rate_per_address"), values::rate(text)))
            .transpose()?;
        let warmup = entry
            .warmup
            .iter()
            .enumerate()
            .map(|(j, raw)| self.warmup(&key(&format!("warmup[{j}]")), raw, &source_addresses))
            .collect::<Result<Vec<_>, _>>()?;
        for (j, schedule) in warmup.iter().enumerate() {
            if warmup[..j].iter().any(|w| w.address == schedule.address) {
                return Err(self.error(
                    key(&format!("warmup[{j}].address")),
                    format!("{} has another warm-up schedule", schedule.address),
                ));
            }
        }
        Ok(Region {
            name,
            source_addresses,
            ehlo,
            relay,
            connections_per_address,
            rate_per_address,
            warmup,
            implicit: false,
        })
    }

    fn warmup(&self, prefix: &str, raw: &RawWarmup, addresses: &[IpAddr]) -> Result<Warmup, ConfigError> {
        let key = |field: &str| format!("{prefix}.{field}");
        let text = raw
            .address
            .as_deref()
            .ok_or_else(|| self.error(key("address"), "a warm-up schedule names its source address"))?;
        let address = text
            .trim()
            .parse::<IpAddr>()
            .map_err(|_| self.error(key("address"), format!("{text:?} is not an IPv4 or IPv6 address")))?;
        if !addresses.contains(&address) {
            return Err(self.error(
                key("address"),
                format!("{address} is not one of the region's source_addresses"),
            ));
        }
        let start = raw.start.as_deref().ok_or_else(|| {
            self.error(
                key("start"),
                "a warm-up schedule needs its first day, like \"2026-12-01\"",
            )
        })?;
        let start = NaiveDate::parse_from_str(start.trim(), "%Y-%m-%d")
            .map_err(|_| self.error(key("start"), format!("{start:?} is not a date like \"2026-12-01\"")))?;
        let daily_limits = raw.daily_limits.clone().unwrap_or_default();
        if daily_limits.is_empty() {
            return Err(self.error(key("daily_limits"), "needs at least one day's limit"));
        }
        if let Some(j) = daily_limits.iter().position(|n| *n == 0) {
            return Err(self.error(format!("{prefix}.daily_limits[{j}]"), "must be at least 1"));
        }
        Ok(Warmup {
            address,
            start,
            daily_limits,
        })
    }

    /// A smarthost from `<prefix>.relay` and its credentials.
    pub(super) fn relay(
        &self,
        prefix: &str,
        relay: Option<&str>,
        username: Option<String>,
        password: Option<String>,
    ) -> Result<Option<Relay>, ConfigError> {
        let credentials = match (username, password) {
            (Some(user), Some(password)) => Some((user, Secret(password))),
            (None, None) => None,
            (Some(_), None) => {
                return Err(self.error(format!("{prefix}.relay_password"), "is required with relay_username"));
            }
            (None, Some(_)) => {
                return Err(self.error(format!("{prefix}.relay_username"), "is required with relay_password"));
            }
        };
        match relay {
            Some(text) => {
                let (host, port) = self.check(&format!("{prefix}.relay"), values::host_port(text))?;
                Ok(Some(Relay {
                    host,
                    port,
                    credentials,
                }))
            }
            None if credentials.is_some() => {
                Err(self.error(format!("{prefix}.relay"), "is required when relay credentials are set"))
            }
            None => Ok(None),
        }
    }
}

/// `[[regions]]` as `herald config` prints them: the configured ones, secrets redacted.
pub(super) fn render(regions: &[Region]) -> Vec<RawRegion> {
    regions
        .iter()
        .filter(|region| !region.implicit)
        .map(|region| RawRegion {
            name: Some(region.name.clone()),
            source_addresses: Some(region.source_addresses.iter().map(ToString::to_string).collect()),
            ehlo: region.ehlo.clone(),
            relay: region.relay.as_ref().map(|r| format!("{}:{}", r.host, r.port)),
            relay_username: region
                .relay
                .as_ref()
                .and_then(|r| r.credentials.as_ref().map(|c| c.0.clone())),
            relay_password: region
                .relay
                .as_ref()
                .and_then(|r| r.credentials.as_ref().map(|_| super::REDACTED.to_owned())),
            connections_per_address: Some(region.connections_per_address),
            rate_per_address: region.rate_per_address.map(|r| r.to_string()),
            warmup: region
                .warmup
                .iter()
                .map(|w| RawWarmup {
                    address: Some(w.address.to_string()),
                    start: Some(w.start.format("%Y-%m-%d").to_string()),
                    daily_limits: Some(w.daily_limits.clone()),
                })
                .collect(),
        })
        .collect()
}
