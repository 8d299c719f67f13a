//! Configuration: read once at start, from TOML into validated types.
//!
//! `herald serve --config PATH` reads PATH; without `--config`, `./herald.toml` if it
//! exists, else the built-in defaults. Every key has a default, an unknown key fails the
//! start, and every error names the file and the key. Relative paths in a file are
//! resolved against the file's directory, so a config works wherever herald is started.

mod cluster;
mod contacts;
mod dashboard;
mod effective;
mod plans;
mod raw;
mod regions;
mod retention;
mod tracking;
pub mod values;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use cluster::{ClusterConfig, DatabaseSsl, PostgresConfig, redact as redact_url};
pub use contacts::ContactsConfig;
pub use dashboard::{DashboardConfig, GithubConfig, GoogleConfig};
pub use plans::Plan;
pub use regions::{REGION_NAMES, Region, Warmup};
pub use retention::RetentionConfig;
pub use tracking::{TrackingConfig, TrackingScheme};
pub use values::Rate;

use raw::{RawConfig, RawDkimAlgorithm, RawLogFormat, RawTlsMode};

/// The config file read when `--config` is not given, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "herald.toml";

/// A configuration error: which file, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{message}", source_prefix(.file), key_prefix(.key))]
pub struct ConfigError {
    /// The file, or `None` for the built-in defaults and the environment.
    pub file: Option<PathBuf>,
    /// The key, dotted (`delivery.retry_intervals[2]`), or empty for the file as a whole.
    pub key: String,
    /// What is wrong, and how to write it right.
    pub message: String,
}

fn source_prefix(file: &Option<PathBuf>) -> String {
    file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default()
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("`{key}`: ")
    }
}

/// Everything herald reads from its config, validated.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from, if any.
    pub file: Option<PathBuf>,
    /// `[server]`.
    pub server: ServerConfig,
    /// `[http]`.
    pub http: HttpConfig,
    /// `[smtp]`.
    pub smtp: SmtpConfig,
    /// `[tls]`.
    pub tls: TlsConfig,
    /// `[delivery]`.
    pub delivery: DeliveryConfig,
    /// `[domains]`.
    pub domains: DomainsConfig,
    /// `[api]`.
    pub api: ApiConfig,
    /// `[webhooks]`.
    pub webhooks: WebhooksConfig,
    /// `[spool]`.
    pub spool: SpoolConfig,
    /// `[retention]`.
    pub retention: RetentionConfig,
    /// `[contacts]`.
    pub contacts: ContactsConfig,
    /// `[tracking]`.
    pub tracking: TrackingConfig,
    /// `[cluster]`.
    pub cluster: ClusterConfig,
    /// `[dashboard]`.
    pub dashboard: DashboardConfig,
    /// `[log]`.
    pub log: LogConfig,
    /// `[[plans]]`.
    pub plans: Vec<Plan>,
    /// `[[regions]]`, never empty: without any configured, the one named by
    /// `[delivery] region`.
    pub regions: Vec<Region>,
    /// What the file asks for in a way that still works but should change (a key's old
    /// name): logged at start and printed by `herald config`.
    pub warnings: Vec<String>,
}

/// `[server]`: identity and storage.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// EHLO name, Message-ID domain, and the host named in SPF and return-path MX records.
    pub hostname: String,
    /// Where the spool, TLS material and the bootstrap key live.
    pub data_dir: PathBuf,
    /// How long shutdown waits for sessions and deliveries in flight.
    pub shutdown_grace: Duration,
}

/// `[http]`: the REST API, dashboard, `/metrics` and `/healthz`.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Listen address.
    pub listen: SocketAddr,
    /// A second listener serving the same routes over HTTPS with the `[tls]` certificates
    /// (chosen by SNI): herald's public pages (tracking hosts, unsubscribe) without a proxy.
    pub tls_listen: Option<SocketAddr>,
    /// The base of herald's public pages (`scheme://host[:port]`, no trailing slash):
    /// unsubscribe links and the dashboard's absolute links.
    pub public_url: String,
    /// Connections open at once. Each holds a task and buffers; past this, a new
    /// connection is answered `503` and closed, as SMTP answers `421`.
    pub connections_max: usize,
}

/// `[smtp]`: submission listeners.
#[derive(Debug, Clone)]
pub struct SmtpConfig {
    /// One listener per entry.
    pub listeners: Vec<Listener>,
    /// Whether `listeners` came from the config file. Only the built-in defaults may be
    /// skipped when a privileged port cannot be bound; a configured listener that cannot
    /// be bound fails the start.
    pub listeners_configured: bool,
    /// The SMTP AUTH user name; the password is an API key.
    pub username: String,
    /// Limits on what clients may do.
    pub limits: SmtpLimits,
    /// Networks whose clients submit without AUTH, as a key (`[[smtp.trusted]]`, as
    /// Postfix's `mynetworks`); none by default.
    pub trusted: Vec<TrustedNetwork>,
}

/// `[[smtp.trusted]]`: clients from `network` submit without AUTH (and without TLS) as
/// the API key `api_key_id`: its team, permission and domains apply. On a listener with
/// `mx = true` (which the internet's MXs reach), only a loopback network is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedNetwork {
    /// The network, in CIDR notation.
    pub network: ipnet::IpNet,
    /// The key its clients submit as.
    pub api_key_id: herald_queue::Id,
}

impl TrustedNetwork {
    /// Whether the network is on this host only (`127.0.0.0/8` or `::1`), and so may be
    /// trusted on an `mx` listener too.
    pub fn is_loopback(&self) -> bool {
        match self.network {
            ipnet::IpNet::V4(net) => {
                ipnet::Ipv4Net::new(std::net::Ipv4Addr::new(127, 0, 0, 0), 8).is_ok_and(|lo| lo.contains(&net))
            }
            ipnet::IpNet::V6(net) => net.prefix_len() == 128 && net.addr().is_loopback(),
        }
    }
}

/// `[smtp]` limits. Each bounds something a client controls.
#[derive(Debug, Clone)]
pub struct SmtpLimits {
    /// Longest command line in bytes, CRLF included (RFC 5321's minimum is 512; AUTH
    /// tokens need more).
    pub line_length_max: usize,
    /// Largest message, advertised with SIZE; the API allows 40 MB of content too.
    pub message_size_max: u64,
    /// Recipients per message (to, cc and bcc together), as the API's 50.
    pub recipients_max: usize,
    /// Messages per connection, so one client cannot hold a session forever.
    pub messages_per_session_max: u32,
    /// Failed commands before the connection is closed.
    pub errors_max: u32,
    /// Silence allowed before the connection is closed.
    pub idle_timeout: Duration,
    /// Longest session.
    pub session_time_max: Duration,
    /// Connections open at once, over all listeners.
    pub connections_max: usize,
    /// Connections open at once from one client address.
    pub connections_per_address_max: usize,
    /// Failed AUTH attempts from one address before it is refused for `auth_lockout`.
    pub auth_failures_max: u32,
    /// How long an address that failed AUTH too often is refused.
    pub auth_lockout: Duration,
}

/// An SMTP listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// Address to bind.
    pub addr: SocketAddr,
    /// How TLS starts on it.
    pub tls: TlsMode,
    /// Whether receiving MXs may hand it bounces and complaints: `MAIL` without AUTH or
    /// STARTTLS, for recipients at the return-path host of a verified domain only.
    pub mx: bool,
}

/// How a listener does TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain text until the client says STARTTLS (ports 25, 587, 2587).
    StartTls,
    /// TLS from the first byte: SMTPS (ports 465, 2465).
    Implicit,
}

/// `[tls]`: the server certificate.
#[derive(Debug, Clone, Default)]
pub struct TlsConfig {
    /// PEM certificate chain; `None` with `key` `None` means a generated self-signed pair.
    pub cert: Option<PathBuf>,
    /// PEM private key.
    pub key: Option<PathBuf>,
    /// Further certificate/key pairs, chosen by the name the client asks for (SNI).
    pub sni: Vec<(PathBuf, PathBuf)>,
}

/// `[delivery]`: outbound delivery to MX hosts.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Whether spooled mail is delivered; `false` keeps it queued (maintenance, tests).
    pub enabled: bool,
    /// DNS servers for MX lookups and domain verification; empty is the system resolver.
    pub nameservers: Vec<SocketAddr>,
    /// The port MX hosts are contacted on.
    pub mx_port: u16,
    /// A smarthost that receives all mail instead of the MX hosts (a region's own comes
    /// first).
    pub relay: Option<Relay>,
    /// The region of domains that name none, and the name of the one region when
    /// `[[regions]]` configures none.
    pub region: String,
    /// Waits between attempts; the last repeats. Each gets ±10 % jitter.
    pub retry_intervals: Vec<Duration>,
    /// How long a message is retried, counted from its first due time.
    pub message_lifetime: Duration,
    /// Extra trusted roots for verified TLS to MX hosts.
    pub ca_file: Option<PathBuf>,
    /// Delivery worker threads (loading and signing), and as many async threads driving
    /// the SMTP sessions.
    pub workers: usize,
    /// Messages claimed from the spool and in delivery at once, at most.
    pub in_flight_max: usize,
    /// How long a TCP connect to one MX address may take before the next is tried.
    pub connect_timeout: Duration,
    /// How long one SMTP reply may take (the end of data's included).
    pub command_timeout: Duration,
    /// How long an idle connection is kept open for the next message to its destination.
    pub idle_timeout: Duration,
    /// Limits for destinations that no entry of `destinations` matches.
    pub limits: DestinationLimits,
    /// Limits by recipient domain pattern; the first match wins.
    pub destinations: Vec<Destination>,
}

/// Limits on delivery to one destination (a recipient domain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestinationLimits {
    /// Concurrent connections at most.
    pub connections: usize,
    /// Messages sent over one connection before it is closed.
    pub messages_per_connection: u32,
    /// Messages per period at most (GCRA); `None` is unlimited.
    pub rate: Option<Rate>,
}

/// `[[delivery.destinations]]`: limits for the recipient domains matching `pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// `example.com` (that domain) or `*.example.com` (its subdomains), lower case.
    pub pattern: String,
    /// The limits.
    pub limits: DestinationLimits,
}

impl Destination {
    /// Whether `domain` (lower case) matches the pattern.
    pub fn matches(&self, domain: &str) -> bool {
        match self.pattern.strip_prefix("*.") {
            Some(parent) => domain.strip_suffix(parent).is_some_and(|rest| rest.ends_with('.')),
            None => domain == self.pattern,
        }
    }
}

impl DeliveryConfig {
    /// The limits for recipient domain `domain` (lower case).
    pub fn limits_for(&self, domain: &str) -> DestinationLimits {
        self.destinations
            .iter()
            .find(|d| d.matches(domain))
            .map_or(self.limits, |d| d.limits)
    }
}

/// A smarthost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    /// Host name or IP.
    pub host: String,
    /// Port.
    pub port: u16,
    /// AUTH credentials, when the smarthost wants them.
    pub credentials: Option<(String, Secret)>,
}

/// What a secret prints as in the effective config.
pub const REDACTED: &str = "<redacted>";

/// A secret config value: never printed, never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `[domains]`: sending domains.
#[derive(Debug, Clone)]
pub struct DomainsConfig {
    /// Key algorithm for new domains' DKIM keys.
    pub dkim_algorithm: DkimAlgorithm,
    /// The SPF mechanism published in the return-path SPF record.
    pub spf: String,
    /// Waits between DNS checks of a domain that is not verified yet; the last repeats.
    pub retry_intervals: Vec<Duration>,
    /// How long after verification was requested (or lost) the checks go on.
    pub verification_window: Duration,
    /// Wait between checks of a verified domain, so one whose records disappear stops
    /// being verified.
    pub recheck_interval: Duration,
}

/// A DKIM key algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DkimAlgorithm {
    /// RSA-SHA256 with a 2048-bit key.
    Rsa,
    /// Ed25519-SHA256 (RFC 8463).
    Ed25519,
}

/// `[api]`: the REST API.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Requests per team; a team may have its own.
    pub rate_limit: Rate,
}

/// `[webhooks]`: event delivery to applications.
#[derive(Debug, Clone)]
pub struct WebhooksConfig {
    /// Allow endpoints on loopback, private, link-local and metadata addresses. For tests
    /// and local development only.
    pub allow_private_endpoints: bool,
    /// Networks whose addresses endpoints may use although they are not public: a
    /// receiver on an internal network, allowed without lifting the checks for every
    /// other private address.
    pub allowed_networks: Vec<ipnet::IpNet>,
    /// Waits between retries after the immediate first try; after the last one fails,
    /// the message is marked failed.
    pub retry_intervals: Vec<Duration>,
    /// Time allowed for one webhook request.
    pub timeout: Duration,
}

/// `[spool]`: storage limits.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    /// New mail is refused (SMTP 452, HTTP 503) while less than this is free on the data
    /// directory's file system, so the disk never fills mid-write.
    pub min_free_space: u64,
    /// Writes waiting for the commit thread before new mail is refused as busy (SMTP 451,
    /// HTTP 503): bounds the memory held by writes the disk has not caught up with.
    pub commit_queue_max: usize,
}

/// `[log]`: logging.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Human-readable lines or one JSON object per line.
    pub format: LogFormat,
    /// A tracing filter such as `info` or `herald=debug,info`; `RUST_LOG` overrides it.
    pub level: String,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// For terminals and journald.
    Human,
    /// For log pipelines.
    Json,
}

impl Config {
    /// Loads the config for `herald serve`: `path` when given (it must exist), else
    /// `./herald.toml` when present, else the built-in defaults.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        match path {
            Some(path) => Config::from_file(path),
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => Config::from_file(Path::new(DEFAULT_CONFIG_FILE)),
            None => Config::from_raw(RawConfig::default(), None),
        }
    }

    /// Reads and validates one file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: Some(path.to_owned()),
            key: String::new(),
            message: format!("cannot read the config file: {e}"),
        })?;
        Config::from_toml(&text, Some(path))
    }

    /// Parses and validates TOML text; `file` names it in errors and anchors relative
    /// paths.
    pub fn from_toml(text: &str, file: Option<&Path>) -> Result<Config, ConfigError> {
        let deserializer = toml::Deserializer::parse(text).map_err(|e| ConfigError {
            file: file.map(Path::to_owned),
            key: String::new(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let raw: RawConfig = serde_path_to_error::deserialize(deserializer).map_err(|e| ConfigError {
            file: file.map(Path::to_owned),
            key: e.path().to_string(),
            message: e
                .inner()
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_owned(),
        })?;
        Config::from_raw(raw, file)
    }

    /// The built-in defaults.
    pub fn defaults() -> Config {
        // The defaults are constants that validate; a failure here is a bug caught by the
        // unit tests, so it is reported rather than hidden.
        Config::from_raw(RawConfig::default(), None).unwrap_or_else(|e| panic!("built-in defaults are invalid: {e}"))
    }

    /// The effective configuration as TOML, secrets redacted: what `herald config`
    /// prints.
    pub fn to_toml(&self) -> String {
        effective::render(self)
    }

    fn from_raw(raw: RawConfig, file: Option<&Path>) -> Result<Config, ConfigError> {
        Validator { file }.config(raw)
    }
}

/// Turns a [`RawConfig`] into a [`Config`], naming the key in every error.
struct Validator<'a> {
    file: Option<&'a Path>,
}

impl Validator<'_> {
    fn error(&self, key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.map(Path::to_owned),
            key: key.into(),
            message: message.into(),
        }
    }

    fn check<T>(&self, key: &str, result: Result<T, String>) -> Result<T, ConfigError> {
        result.map_err(|message| self.error(key, message))
    }

    /// Resolves a path from the file against the file's directory.
    fn path(&self, path: PathBuf) -> PathBuf {
        match self.file.and_then(Path::parent) {
            Some(dir) if path.is_relative() && !dir.as_os_str().is_empty() => dir.join(path),
            _ => path,
        }
    }

    fn existing_file(&self, key: &str, path: PathBuf) -> Result<PathBuf, ConfigError> {
        let path = self.path(path);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path),
            Ok(_) => Err(self.error(key, format!("{} is not a file", path.display()))),
            Err(e) => Err(self.error(key, format!("cannot read {}: {e}", path.display()))),
        }
    }

    fn durations(&self, key: &str, texts: &[String]) -> Result<Vec<Duration>, ConfigError> {
        if texts.is_empty() {
            return Err(self.error(key, "needs at least one interval"));
        }
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| self.check(&format!("{key}[{i}]"), values::duration(text)))
            .collect()
    }

    fn config(&self, raw: RawConfig) -> Result<Config, ConfigError> {
        let server = self.server(raw.server)?;
        let mut warnings = Vec::new();
        let retention = self.retention(&raw.retention, &raw.api, &mut warnings)?;
        let spf = raw.domains.spf.unwrap_or_else(|| format!("a:{}", server.hostname));
        if spf.trim().is_empty() || spf.contains(char::is_whitespace) {
            return Err(self.error(
                "domains.spf",
                "must be one SPF mechanism such as \"a:mail.example.com\"",
            ));
        }
        let delivery = self.delivery(raw.delivery)?;
        let regions = self.regions(&raw.regions, &delivery.region)?;
        let listen = self.check(
            "http.listen",
            values::socket_addr(raw.http.listen.as_deref().unwrap_or("127.0.0.1:3000")),
        )?;
        let tls_listen = raw
            .http
            .tls_listen
            .as_deref()
            .map(|text| self.check("http.tls_listen", values::socket_addr(text)))
            .transpose()?;
        if raw.http.public_url.is_none() && listen.ip().is_unspecified() && delivery.enabled {
            // Sent mail carries this address (unsubscribe links, design images): one
            // made from a wildcard listener reaches nobody.
            warnings.push(format!(
                "http.public_url is not set, so it is http://{listen}, which no recipient can reach: unsubscribe \
                 links and design images in sent mail will not work; set [http] public_url to the address \
                 herald's public pages are reached at"
            ));
        }
        let public_url = match raw.http.public_url.as_deref() {
            Some(text) => self.check("http.public_url", values::public_url(text))?,
            None => format!("http://{listen}"),
        };
        let mut config = Config {
            file: self.file.map(Path::to_owned),
            http: HttpConfig {
                listen,
                tls_listen,
                public_url,
                connections_max: positive(self, "http.connections_max", raw.http.connections_max.unwrap_or(1000))?,
            },
            smtp: self.smtp(raw.smtp)?,
            tls: self.tls(raw.tls)?,
            delivery,
            domains: DomainsConfig {
                dkim_algorithm: match raw.domains.dkim_algorithm.unwrap_or(RawDkimAlgorithm::Rsa) {
                    RawDkimAlgorithm::Rsa => DkimAlgorithm::Rsa,
                    RawDkimAlgorithm::Ed25519 => DkimAlgorithm::Ed25519,
                },
                spf,
                retry_intervals: self.durations(
                    "domains.retry_intervals",
                    &raw.domains
                        .retry_intervals
                        .unwrap_or_else(|| strings(&["1m", "5m", "15m", "1h", "4h"])),
                )?,
                verification_window: self.check(
                    "domains.verification_window",
                    values::duration(raw.domains.verification_window.as_deref().unwrap_or("72h")),
                )?,
                recheck_interval: self.check(
                    "domains.recheck_interval",
                    values::duration(raw.domains.recheck_interval.as_deref().unwrap_or("24h")),
                )?,
            },
            api: ApiConfig {
                rate_limit: self.check(
                    "api.rate_limit",
                    values::rate(raw.api.rate_limit.as_deref().unwrap_or("50/s")),
                )?,
            },
            webhooks: WebhooksConfig {
                allow_private_endpoints: raw.webhooks.allow_private_endpoints.unwrap_or(false),
                allowed_networks: raw
                    .webhooks
                    .allowed_networks
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, text)| {
                        self.check(
                            &format!("webhooks.allowed_networks[{i}]"),
                            text.parse::<ipnet::IpNet>().map_err(|e| {
                                format!("{text:?} is not a network in CIDR notation (like \"10.1.2.0/24\"): {e}")
                            }),
                        )
                    })
                    .collect::<Result<_, _>>()?,
                retry_intervals: self.durations(
                    "webhooks.retry_intervals",
                    &raw.webhooks
                        .retry_intervals
                        .unwrap_or_else(|| strings(&["5s", "5m", "30m", "2h", "5h", "10h", "10h"])),
                )?,
                timeout: self.check(
                    "webhooks.timeout",
                    values::duration(raw.webhooks.timeout.as_deref().unwrap_or("15s")),
                )?,
            },
            spool: SpoolConfig {
                min_free_space: self.check(
                    "spool.min_free_space",
                    values::byte_size(raw.spool.min_free_space.as_deref().unwrap_or("256MiB")),
                )?,
                commit_queue_max: positive(
                    self,
                    "spool.commit_queue_max",
                    raw.spool
                        .commit_queue_max
                        .unwrap_or(herald_queue::CommitLimits::default().queue_max),
                )?,
            },
            log: LogConfig {
                format: match raw.log.format.unwrap_or(RawLogFormat::Human) {
                    RawLogFormat::Human => LogFormat::Human,
                    RawLogFormat::Json => LogFormat::Json,
                },
                level: self.log_level(raw.log.level)?,
            },
            retention,
            contacts: self.contacts(&raw.contacts)?,
            tracking: self.tracking(&raw.tracking, &server.hostname)?,
            cluster: self.cluster(&raw.cluster, &server.hostname)?,
            dashboard: self.dashboard(&raw.dashboard)?,
            plans: self.plans(&raw.plans)?,
            regions,
            warnings,
            server,
        };
        let spf = config.spf_warnings();
        config.warnings.extend(spf);
        Ok(config)
    }

    fn server(&self, raw: raw::RawServer) -> Result<ServerConfig, ConfigError> {
        let hostname = match raw.hostname {
            Some(name) => name,
            None => gethostname::gethostname().to_string_lossy().into_owned(),
        };
        if !values::is_hostname(&hostname) {
            return Err(self.error("server.hostname", format!("{hostname:?} is not a valid host name")));
        }
        let data_dir = match raw.data_dir {
            Some(dir) => self.path(dir),
            None => default_data_dir(),
        };
        if data_dir.as_os_str().is_empty() {
            return Err(self.error("server.data_dir", "must not be empty"));
        }
        Ok(ServerConfig {
            hostname: hostname.trim_end_matches('.').to_ascii_lowercase(),
            data_dir,
            shutdown_grace: self.check(
                "server.shutdown_grace",
                values::duration(raw.shutdown_grace.as_deref().unwrap_or("30s")),
            )?,
        })
    }

    fn smtp(&self, raw: raw::RawSmtp) -> Result<SmtpConfig, ConfigError> {
        let listeners_configured = raw.listeners.is_some();
        let listeners = match raw.listeners {
            Some(listeners) => listeners
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    Ok(Listener {
                        addr: self.check(&format!("smtp.listeners[{i}].addr"), values::socket_addr(&l.addr))?,
                        tls: match l.tls {
                            RawTlsMode::Starttls => TlsMode::StartTls,
                            RawTlsMode::Implicit => TlsMode::Implicit,
                        },
                        mx: l
                            .mx
                            .unwrap_or_else(|| values::socket_addr(&l.addr).is_ok_and(|a| a.port() == 25)),
                    })
                })
                .collect::<Result<Vec<_>, ConfigError>>()?,
            None => default_listeners(),
        };
        for (i, listener) in listeners.iter().enumerate() {
            // Port 0 asks the kernel for any free port, so it may appear more than once.
            if listener.addr.port() != 0 && listeners[..i].iter().any(|l| l.addr == listener.addr) {
                return Err(self.error(
                    format!("smtp.listeners[{i}].addr"),
                    format!("{} is listed twice", listener.addr),
                ));
            }
        }
        let username = raw.username.unwrap_or_else(|| "resend".to_owned());
        if username.is_empty()
            || username.len() > 64
            || username.contains(|c: char| c.is_whitespace() || c.is_control())
        {
            return Err(self.error("smtp.username", "must be 1 to 64 characters without spaces"));
        }
        let limits = SmtpLimits {
            line_length_max: positive(self, "smtp.line_length_max", raw.line_length_max.unwrap_or(2048))?,
            message_size_max: self.check(
                "smtp.message_size_max",
                values::byte_size(raw.message_size_max.as_deref().unwrap_or("40MiB")),
            )?,
            recipients_max: positive(self, "smtp.recipients_max", raw.recipients_max.unwrap_or(50))?,
            messages_per_session_max: positive(
                self,
                "smtp.messages_per_session_max",
                raw.messages_per_session_max.unwrap_or(1000),
            )?,
            errors_max: positive(self, "smtp.errors_max", raw.errors_max.unwrap_or(10))?,
            idle_timeout: self.check(
                "smtp.idle_timeout",
                values::duration(raw.idle_timeout.as_deref().unwrap_or("5m")),
            )?,
            session_time_max: self.check(
                "smtp.session_time_max",
                values::duration(raw.session_time_max.as_deref().unwrap_or("30m")),
            )?,
            connections_max: positive(self, "smtp.connections_max", raw.connections_max.unwrap_or(1000))?,
            connections_per_address_max: positive(
                self,
                "smtp.connections_per_address_max",
                raw.connections_per_address_max.unwrap_or(100),
            )?,
            auth_failures_max: positive(self, "smtp.auth_failures_max", raw.auth_failures_max.unwrap_or(10))?,
            auth_lockout: self.check(
                "smtp.auth_lockout",
                values::duration(raw.auth_lockout.as_deref().unwrap_or("15m")),
            )?,
        };
        if limits.line_length_max < 512 {
            return Err(self.error("smtp.line_length_max", "must be at least 512 (RFC 5321)"));
        }
        let trusted = raw
            .trusted
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, entry)| self.trusted(i, &entry))
            .collect::<Result<Vec<_>, ConfigError>>()?;
        Ok(SmtpConfig {
            listeners,
            listeners_configured,
            username,
            limits,
            trusted,
        })
    }

    fn trusted(&self, i: usize, raw: &raw::RawTrusted) -> Result<TrustedNetwork, ConfigError> {
        let key = format!("smtp.trusted[{i}].network");
        let network: ipnet::IpNet = raw.network.trim().parse().map_err(|_| {
            self.error(
                &key,
                format!(
                    "{:?} is not a network in CIDR notation, such as 10.0.0.0/8, 192.0.2.7/32 or 2001:db8::/32",
                    raw.network
                ),
            )
        })?;
        if network.trunc() != network {
            return Err(self.error(
                &key,
                format!("{network} has host bits set; the network is {}", network.trunc()),
            ));
        }
        let widest = if network.addr().is_ipv4() { 8 } else { 16 };
        if network.prefix_len() < widest {
            return Err(self.error(
                &key,
                format!("{network} is wider than /{widest}: herald would relay for much of the internet"),
            ));
        }
        let api_key_id = raw.api_key_id.trim().parse().map_err(|_| {
            self.error(
                format!("smtp.trusted[{i}].api_key_id"),
                "is not an API key id (the `id` that `POST /api-keys` answered)",
            )
        })?;
        Ok(TrustedNetwork { network, api_key_id })
    }

    fn tls(&self, raw: raw::RawTls) -> Result<TlsConfig, ConfigError> {
        let (cert, key) = match (raw.cert, raw.key) {
            (Some(cert), Some(key)) => (
                Some(self.existing_file("tls.cert", cert)?),
                Some(self.existing_file("tls.key", key)?),
            ),
            (None, None) => (None, None),
            (Some(_), None) => return Err(self.error("tls.key", "is required when tls.cert is set")),
            (None, Some(_)) => return Err(self.error("tls.cert", "is required when tls.key is set")),
        };
        if cert.is_none() && !raw.sni.is_empty() {
            return Err(self.error("tls.sni", "needs tls.cert and tls.key for clients that send no name"));
        }
        let sni = raw
            .sni
            .into_iter()
            .enumerate()
            .map(|(i, pair)| {
                Ok((
                    self.existing_file(&format!("tls.sni[{i}].cert"), pair.cert)?,
                    self.existing_file(&format!("tls.sni[{i}].key"), pair.key)?,
                ))
            })
            .collect::<Result<_, ConfigError>>()?;
        Ok(TlsConfig { cert, key, sni })
    }

    fn delivery(&self, raw: raw::RawDelivery) -> Result<DeliveryConfig, ConfigError> {
        let nameservers = raw
            .nameservers
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, text)| self.check(&format!("delivery.nameservers[{i}]"), values::nameserver(text)))
            .collect::<Result<_, _>>()?;
        let mx_port = raw.mx_port.unwrap_or(25);
        if mx_port == 0 {
            return Err(self.error("delivery.mx_port", "must be a port from 1 to 65535"));
        }
        let relay = self.relay("delivery", raw.relay.as_deref(), raw.relay_username, raw.relay_password)?;
        DeliveryConfig {
            enabled: raw.enabled.unwrap_or(true),
            nameservers,
            mx_port,
            relay,
            region: raw.region.unwrap_or_else(|| REGION_NAMES[0].to_owned()),
            retry_intervals: self.durations(
                "delivery.retry_intervals",
                &raw.retry_intervals
                    .unwrap_or_else(|| strings(&["1m", "5m", "15m", "30m", "1h", "2h", "4h"])),
            )?,
            message_lifetime: self.check(
                "delivery.message_lifetime",
                values::duration(raw.message_lifetime.as_deref().unwrap_or("72h")),
            )?,
            ca_file: raw
                .ca_file
                .map(|p| self.existing_file("delivery.ca_file", p))
                .transpose()?,
            workers: positive(self, "delivery.workers", raw.workers.unwrap_or_else(default_workers))?,
            in_flight_max: positive(self, "delivery.in_flight_max", raw.in_flight_max.unwrap_or(10_000))?,
            connect_timeout: self.positive_duration(
                "delivery.connect_timeout",
                raw.connect_timeout.as_deref(),
                "10s",
            )?,
            command_timeout: self.positive_duration(
                "delivery.command_timeout",
                raw.command_timeout.as_deref(),
                "5m",
            )?,
            idle_timeout: self.positive_duration("delivery.idle_timeout", raw.idle_timeout.as_deref(), "10s")?,
            limits: self.destination_limits(
                "delivery",
                DestinationLimits {
                    connections: 10,
                    messages_per_connection: 100,
                    rate: None,
                },
                raw.connections_per_destination,
                raw.messages_per_connection,
                raw.rate,
            )?,
            destinations: Vec::new(),
        }
        .with_destinations(self, raw.destinations.unwrap_or_default())
    }

    fn positive_duration(&self, key: &str, text: Option<&str>, default: &str) -> Result<Duration, ConfigError> {
        let duration = self.check(key, values::duration(text.unwrap_or(default)))?;
        if duration.is_zero() {
            return Err(self.error(key, "must be longer than zero"));
        }
        Ok(duration)
    }

    fn destination_limits(
        &self,
        prefix: &str,
        defaults: DestinationLimits,
        connections: Option<usize>,
        messages_per_connection: Option<u32>,
        rate: Option<String>,
    ) -> Result<DestinationLimits, ConfigError> {
        let connections_key = if prefix == "delivery" {
            format!("{prefix}.connections_per_destination")
        } else {
            format!("{prefix}.connections")
        };
        Ok(DestinationLimits {
            connections: positive(self, &connections_key, connections.unwrap_or(defaults.connections))?,
            messages_per_connection: positive(
                self,
                &format!("{prefix}.messages_per_connection"),
                messages_per_connection.unwrap_or(defaults.messages_per_connection),
            )?,
            rate: match rate {
                Some(text) => Some(self.check(&format!("{prefix}.rate"), values::rate(&text))?),
                None => defaults.rate,
            },
        })
    }

    fn log_level(&self, level: Option<String>) -> Result<String, ConfigError> {
        let level = level.unwrap_or_else(|| "info".to_owned());
        tracing_subscriber::EnvFilter::try_new(&level)
            .map_err(|e| self.error("log.level", format!("invalid filter {level:?}: {e}")))?;
        Ok(level)
    }
}

impl DeliveryConfig {
    fn with_destinations(
        mut self,
        validator: &Validator<'_>,
        raw: Vec<raw::RawDestination>,
    ) -> Result<DeliveryConfig, ConfigError> {
        for (i, entry) in raw.into_iter().enumerate() {
            let prefix = format!("delivery.destinations[{i}]");
            let pattern = entry.pattern.trim().trim_end_matches('.').to_ascii_lowercase();
            let name = pattern.strip_prefix("*.").unwrap_or(&pattern);
            if !values::is_hostname(name) {
                return Err(validator.error(
                    format!("{prefix}.pattern"),
                    format!("{:?} is not a domain or *.domain pattern", entry.pattern),
                ));
            }
            let limits = validator.destination_limits(
                &prefix,
                self.limits,
                entry.connections,
                entry.messages_per_connection,
                entry.rate,
            )?;
            self.destinations.push(Destination { pattern, limits });
        }
        Ok(self)
    }
}

/// One delivery worker per core, at least two: workers sign and never wait for a disk
/// (the outcome thread does), so more than the cores only adds switching.
fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .max(2)
}

/// A count that must be at least 1.
fn positive<T: PartialOrd + Default + Copy>(validator: &Validator<'_>, key: &str, value: T) -> Result<T, ConfigError> {
    if value > T::default() {
        Ok(value)
    } else {
        Err(validator.error(key, "must be at least 1"))
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The default SMTP listeners: STARTTLS on 25, 587 and 2587; implicit TLS on 465 and 2465.
fn default_listeners() -> Vec<Listener> {
    [
        (25, TlsMode::StartTls),
        (465, TlsMode::Implicit),
        (587, TlsMode::StartTls),
        (2465, TlsMode::Implicit),
        (2587, TlsMode::StartTls),
    ]
    .into_iter()
    .map(|(port, tls)| Listener {
        addr: SocketAddr::from(([0, 0, 0, 0], port)),
        tls,
        mx: port == 25,
    })
    .collect()
}

/// `$STATE_DIRECTORY` when systemd sets it (its first entry), else `./herald-data`.
fn default_data_dir() -> PathBuf {
    std::env::var_os("STATE_DIRECTORY")
        .and_then(|dirs| std::env::split_paths(&dirs).next())
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("herald-data"))
}

#[cfg(test)]
mod tests;
