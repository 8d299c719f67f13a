//! The config file as written: serde structs where every key is optional or defaulted and
//! unknown keys are refused. [`super::Config`] is what the rest of herald reads.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    pub server: RawServer,
    pub http: RawHttp,
    pub smtp: RawSmtp,
    pub tls: RawTls,
    pub delivery: RawDelivery,
    pub domains: RawDomains,
    pub api: RawApi,
    pub webhooks: RawWebhooks,
    pub spool: RawSpool,
    pub retention: RawRetention,
    pub contacts: RawContacts,
    pub tracking: RawTracking,
    pub cluster: RawCluster,
    pub dashboard: RawDashboard,
    pub log: RawLog,
    pub plans: Vec<RawPlan>,
    pub regions: Vec<RawRegion>,
}

/// One `[[regions]]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawRegion {
    pub name: Option<String>,
    pub source_addresses: Option<Vec<String>>,
    pub ehlo: Option<String>,
    pub relay: Option<String>,
    pub relay_username: Option<String>,
    pub relay_password: Option<String>,
    pub connections_per_address: Option<usize>,
    pub rate_per_address: Option<String>,
    pub warmup: Vec<RawWarmup>,
}

/// One `[[regions.warmup]]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWarmup {
    pub address: Option<String>,
    pub start: Option<String>,
    pub daily_limits: Option<Vec<u64>>,
}

/// One `[[plans]]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawPlan {
    pub name: Option<String>,
    pub monthly_emails: Option<u64>,
    pub daily_emails: Option<u64>,
    pub rate_limit: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawServer {
    pub hostname: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub shutdown_grace: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawHttp {
    pub listen: Option<String>,
    pub tls_listen: Option<String>,
    pub public_url: Option<String>,
    pub connections_max: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSmtp {
    pub listeners: Option<Vec<RawListener>>,
    pub username: Option<String>,
    pub line_length_max: Option<usize>,
    pub message_size_max: Option<String>,
    pub recipients_max: Option<usize>,
    pub messages_per_session_max: Option<u32>,
    pub errors_max: Option<u32>,
    pub idle_timeout: Option<String>,
    pub session_time_max: Option<String>,
    pub connections_max: Option<usize>,
    pub connections_per_address_max: Option<usize>,
    pub auth_failures_max: Option<u32>,
    pub auth_lockout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<Vec<RawTrusted>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrusted {
    pub network: String,
    pub api_key_id: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawListener {
    pub addr: String,
    pub tls: RawTlsMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mx: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawTlsMode {
    Starttls,
    Implicit,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawTls {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub sni: Vec<RawCertPair>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCertPair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDelivery {
    pub enabled: Option<bool>,
    pub region: Option<String>,
    pub nameservers: Option<Vec<String>>,
    pub mx_port: Option<u16>,
    pub relay: Option<String>,
    pub relay_username: Option<String>,
    pub relay_password: Option<String>,
    pub retry_intervals: Option<Vec<String>>,
    pub message_lifetime: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub workers: Option<usize>,
    pub in_flight_max: Option<usize>,
    pub connect_timeout: Option<String>,
    pub command_timeout: Option<String>,
    pub idle_timeout: Option<String>,
    pub connections_per_destination: Option<usize>,
    pub messages_per_connection: Option<u32>,
    pub rate: Option<String>,
    pub destinations: Option<Vec<RawDestination>>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDestination {
    pub pattern: String,
    pub connections: Option<usize>,
    pub messages_per_connection: Option<u32>,
    pub rate: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDomains {
    pub dkim_algorithm: Option<RawDkimAlgorithm>,
    pub spf: Option<String>,
    pub retry_intervals: Option<Vec<String>>,
    pub verification_window: Option<String>,
    pub recheck_interval: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawDkimAlgorithm {
    Rsa,
    Ed25519,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawApi {
    pub rate_limit: Option<String>,
    /// The old name of `retention.request_logs`, still read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_retention: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawRetention {
    pub emails: Option<String>,
    pub content: Option<String>,
    pub webhook_messages: Option<String>,
    pub request_logs: Option<String>,
    pub metrics: Option<String>,
    pub imports: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawCluster {
    pub postgres: Option<String>,
    pub node_id: Option<String>,
    pub postgres_connections_max: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawTracking {
    pub cname_target: Option<String>,
    pub scheme: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawContacts {
    pub contacts_max: Option<u64>,
    pub segments_max: Option<u64>,
    pub topics_max: Option<u64>,
    pub properties_max: Option<u64>,
    pub property_value_max: Option<String>,
    pub import_size_max: Option<String>,
    pub import_errors_max: Option<u64>,
    pub uploads_max: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWebhooks {
    pub allow_private_endpoints: Option<bool>,
    pub allowed_networks: Option<Vec<String>>,
    pub retry_intervals: Option<Vec<String>>,
    pub timeout: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSpool {
    pub min_free_space: Option<String>,
    pub commit_queue_max: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLog {
    pub format: Option<RawLogFormat>,
    pub level: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawLogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDashboard {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub google: Option<RawGoogle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github: Option<RawGithub>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawGoogle {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub issuer: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawGithub {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub authorize_url: Option<String>,
    pub token_url: Option<String>,
    pub api_url: Option<String>,
}
