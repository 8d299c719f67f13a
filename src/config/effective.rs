//! Renders the effective configuration back to TOML for `herald config`, every key with
//! its value in force and secrets replaced by a marker.

use std::time::Duration;

use super::raw::{
    RawApi, RawCertPair, RawConfig, RawDelivery, RawDestination, RawDkimAlgorithm, RawDomains, RawHttp, RawListener,
    RawLog, RawLogFormat, RawPlan, RawServer, RawSmtp, RawSpool, RawTls, RawTlsMode, RawTrusted, RawWebhooks,
};
use super::{Config, DkimAlgorithm, LogFormat, TlsMode};

use super::REDACTED;

pub fn render(config: &Config) -> String {
    let raw = RawConfig {
        server: RawServer {
            hostname: Some(config.server.hostname.clone()),
            data_dir: Some(config.server.data_dir.clone()),
            shutdown_grace: Some(human(config.server.shutdown_grace)),
        },
        http: RawHttp {
            listen: Some(config.http.listen.to_string()),
            tls_listen: config.http.tls_listen.map(|a| a.to_string()),
            public_url: Some(config.http.public_url.clone()),
            connections_max: Some(config.http.connections_max),
        },
        smtp: RawSmtp {
            listeners: Some(
                config
                    .smtp
                    .listeners
                    .iter()
                    .map(|l| RawListener {
                        addr: l.addr.to_string(),
                        tls: match l.tls {
                            TlsMode::StartTls => RawTlsMode::Starttls,
                            TlsMode::Implicit => RawTlsMode::Implicit,
                        },
                        mx: Some(l.mx),
                    })
                    .collect(),
            ),
            username: Some(config.smtp.username.clone()),
            line_length_max: Some(config.smtp.limits.line_length_max),
            message_size_max: Some(
                bytesize::ByteSize::b(config.smtp.limits.message_size_max)
                    .display()
                    .iec()
                    .to_string(),
            ),
            recipients_max: Some(config.smtp.limits.recipients_max),
            messages_per_session_max: Some(config.smtp.limits.messages_per_session_max),
            errors_max: Some(config.smtp.limits.errors_max),
            idle_timeout: Some(human(config.smtp.limits.idle_timeout)),
            session_time_max: Some(human(config.smtp.limits.session_time_max)),
            connections_max: Some(config.smtp.limits.connections_max),
            connections_per_address_max: Some(config.smtp.limits.connections_per_address_max),
            auth_failures_max: Some(config.smtp.limits.auth_failures_max),
            auth_lockout: Some(human(config.smtp.limits.auth_lockout)),
            trusted: Some(
                config
                    .smtp
                    .trusted
                    .iter()
                    .map(|t| RawTrusted {
                        network: t.network.to_string(),
                        api_key_id: t.api_key_id.to_string(),
                    })
                    .collect(),
            ),
        },
        tls: RawTls {
            cert: config.tls.cert.clone(),
            key: config.tls.key.clone(),
            sni: config
                .tls
                .sni
                .iter()
                .map(|(cert, key)| RawCertPair {
                    cert: cert.clone(),
                    key: key.clone(),
                })
                .collect(),
        },
        delivery: RawDelivery {
            enabled: Some(config.delivery.enabled),
            region: Some(config.delivery.region.clone()),
            nameservers: Some(config.delivery.nameservers.iter().map(ToString::to_string).collect()),
            mx_port: Some(config.delivery.mx_port),
            relay: config.delivery.relay.as_ref().map(|r| format!("{}:{}", r.host, r.port)),
            relay_username: config
                .delivery
                .relay
                .as_ref()
                .and_then(|r| r.credentials.as_ref().map(|c| c.0.clone())),
            relay_password: config
                .delivery
                .relay
                .as_ref()
                .and_then(|r| r.credentials.as_ref().map(|_| REDACTED.to_owned())),
            retry_intervals: Some(config.delivery.retry_intervals.iter().copied().map(human).collect()),
            message_lifetime: Some(human(config.delivery.message_lifetime)),
            ca_file: config.delivery.ca_file.clone(),
            workers: Some(config.delivery.workers),
            in_flight_max: Some(config.delivery.in_flight_max),
            connect_timeout: Some(human(config.delivery.connect_timeout)),
            command_timeout: Some(human(config.delivery.command_timeout)),
            idle_timeout: Some(human(config.delivery.idle_timeout)),
            connections_per_destination: Some(config.delivery.limits.connections),
            messages_per_connection: Some(config.delivery.limits.messages_per_connection),
            rate: config.delivery.limits.rate.map(|r| r.to_string()),
            destinations: Some(
                config
                    .delivery
                    .destinations
                    .iter()
                    .map(|d| RawDestination {
                        pattern: d.pattern.clone(),
                        connections: Some(d.limits.connections),
                        messages_per_connection: Some(d.limits.messages_per_connection),
                        rate: d.limits.rate.map(|r| r.to_string()),
                    })
                    .collect(),
            ),
        },
        domains: RawDomains {
            dkim_algorithm: Some(match config.domains.dkim_algorithm {
                DkimAlgorithm::Rsa => RawDkimAlgorithm::Rsa,
                DkimAlgorithm::Ed25519 => RawDkimAlgorithm::Ed25519,
            }),
            spf: Some(config.domains.spf.clone()),
            retry_intervals: Some(config.domains.retry_intervals.iter().copied().map(human).collect()),
            verification_window: Some(human(config.domains.verification_window)),
            recheck_interval: Some(human(config.domains.recheck_interval)),
        },
        api: RawApi {
            rate_limit: Some(config.api.rate_limit.to_string()),
            log_retention: None,
        },
        retention: super::retention::render(&config.retention),
        contacts: super::contacts::render(&config.contacts),
        tracking: super::tracking::render(&config.tracking),
        cluster: super::cluster::render(&config.cluster),
        dashboard: super::dashboard::render(&config.dashboard),
        webhooks: RawWebhooks {
            allow_private_endpoints: Some(config.webhooks.allow_private_endpoints),
            allowed_networks: Some(
                config
                    .webhooks
                    .allowed_networks
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            ),
            retry_intervals: Some(config.webhooks.retry_intervals.iter().copied().map(human).collect()),
            timeout: Some(human(config.webhooks.timeout)),
        },
        spool: RawSpool {
            min_free_space: Some(
                bytesize::ByteSize::b(config.spool.min_free_space)
                    .display()
                    .iec()
                    .to_string(),
            ),
            commit_queue_max: Some(config.spool.commit_queue_max),
        },
        log: RawLog {
            format: Some(match config.log.format {
                LogFormat::Human => RawLogFormat::Human,
                LogFormat::Json => RawLogFormat::Json,
            }),
            level: Some(config.log.level.clone()),
        },
        plans: config
            .plans
            .iter()
            .map(|plan| RawPlan {
                name: Some(plan.name.clone()),
                monthly_emails: Some(plan.monthly_emails),
                daily_emails: plan.daily_emails,
                rate_limit: plan.rate_limit.map(|r| r.to_string()),
            })
            .collect(),
        regions: super::regions::render(&config.regions),
    };
    let mut source = match &config.file {
        Some(file) => format!("# effective configuration, from {}\n", file.display()),
        None => "# effective configuration, from the built-in defaults\n".to_owned(),
    };
    for warning in &config.warnings {
        source.push_str(&format!("# warning: {warning}\n"));
    }
    // Every field is a plain string, number, bool or table, which TOML always represents;
    // a failure would be a bug in the raw structs, shown in place of the config.
    let body = toml::to_string_pretty(&raw).unwrap_or_else(|e| format!("# cannot render the configuration: {e}\n"));
    source + &body
}

fn human(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}
