//! The stored domain and its statuses, and the records it asks the owner to publish.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use super::dkim::DkimKey;
use crate::config::Config;
use crate::wire;

/// A sending domain.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Domain {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The domain name, lower case, without a trailing dot.
    pub name: String,
    /// The region label (Resend's wire field; herald runs wherever it is installed).
    pub region: String,
    /// The return-path subdomain's label (`send`).
    pub custom_return_path: String,
    /// Open tracking for its emails.
    pub open_tracking: bool,
    /// Click tracking for its emails.
    pub click_tracking: bool,
    /// TLS policy for delivery of its emails.
    pub tls: TlsPolicy,
    /// The subdomain that will serve open and click tracking (Resend's
    /// `tracking_subdomain`, for example `links`), stored and answered as given.
    #[serde(default)]
    pub tracking_subdomain: Option<String>,
    /// The DKIM key.
    pub dkim: DkimKey,
    /// Each record's status.
    pub checks: RecordChecks,
    /// The domain's status, derived from `checks` when they change.
    pub status: DomainStatus,
    /// The operator marked it verified without DNS (`herald domains verify --skip-dns`).
    #[serde(default)]
    pub dns_verification_skipped: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// When verification was last requested (or last lost); retries count from here.
    pub verification_started_at: Option<Timestamp>,
    /// When DNS was last checked.
    pub last_checked_at: Option<Timestamp>,
    /// When the background verifier checks it next.
    pub next_check_at: Option<Timestamp>,
    /// Consecutive checks that did not verify.
    pub failed_checks: u32,
}

impl Domain {
    /// The return-path host: `<custom_return_path>.<name>`.
    pub fn return_path_host(&self) -> String {
        format!("{}.{}", self.custom_return_path, self.name)
    }

    /// The DKIM record's host.
    pub fn dkim_host(&self) -> String {
        format!("{}._domainkey.{}", self.dkim.selector, self.name)
    }

    /// The tracking host, `<tracking_subdomain>.<name>`, when the domain has one.
    pub fn tracking_host(&self) -> Option<String> {
        self.tracking_subdomain
            .as_ref()
            .map(|sub| format!("{sub}.{}", self.name))
    }

    /// Whether opens (`opens`) or clicks are tracked now: the flag is on and the tracking
    /// host's record is verified, so tracking links always name the sender's own domain.
    pub fn tracks(&self, opens: bool) -> bool {
        let wanted = if opens { self.open_tracking } else { self.click_tracking };
        wanted && self.tracking_subdomain.is_some() && self.checks.tracking == RecordStatus::Verified
    }

    /// The DMARC record's host.
    pub fn dmarc_host(&self) -> String {
        format!("_dmarc.{}", self.name)
    }

    /// The SPF mechanisms its return-path record must hold: its region's
    /// ([`Config::spf_mechanisms`]).
    pub fn spf_mechanisms(&self, config: &Config) -> Vec<String> {
        config.spf_mechanisms(config.region(&self.region))
    }

    /// The SPF record's value under `config`.
    pub fn spf_value(&self, config: &Config) -> String {
        config.spf_value(config.region(&self.region))
    }

    /// The records to publish, in Resend's shape, with their statuses: only the kinds the
    /// SDKs know (`SPF`, `DKIM`, ...), because some decode `record` as a strict enum.
    pub fn records(&self, config: &Config) -> Vec<Value> {
        let mut records = vec![
            json!({
                "record": "DKIM",
                "name": format!("{}._domainkey", self.dkim.selector),
                "type": "TXT",
                "ttl": "Auto",
                "status": self.checks.dkim,
                "value": self.dkim.record_value(),
            }),
            json!({
                "record": "SPF",
                "name": self.custom_return_path,
                "type": "MX",
                "ttl": "Auto",
                "status": self.checks.spf_mx,
                "value": config.server.hostname,
                "priority": 10,
            }),
            json!({
                "record": "SPF",
                "name": self.custom_return_path,
                "type": "TXT",
                "ttl": "Auto",
                "status": self.checks.spf_txt,
                "value": self.spf_value(config),
            }),
        ];
        if let Some(sub) = &self.tracking_subdomain {
            records.push(json!({
                "record": "Tracking",
                "name": sub,
                "type": "CNAME",
                "ttl": "Auto",
                "status": self.checks.tracking,
                "value": config.tracking.cname_target,
            }));
        }
        records
    }

    /// The recommended DMARC record, a herald field of its own beside `records`: DMARC is
    /// advised, not required, and no SDK's record kinds include it.
    pub fn dmarc_json(&self) -> Value {
        json!({
            "name": "_dmarc",
            "type": "TXT",
            "ttl": "Auto",
            "status": self.checks.dmarc,
            "value": DMARC_VALUE,
            "recommended": true,
        })
    }

    /// The full resource (`GET /domains/{id}`).
    pub fn to_json(&self, config: &Config) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("domain"));
            map.insert("records".into(), json!(self.records(config)));
            map.insert("dmarc".into(), self.dmarc_json());
            map.insert("tls".into(), json!(self.tls));
            map.insert("custom_return_path".into(), json!(self.custom_return_path));
            map.insert("dns_verification_skipped".into(), json!(self.dns_verification_skipped));
            map.insert(
                "last_checked_at".into(),
                json!(self.last_checked_at.map(wire::timestamp)),
            );
        }
        value
    }

    /// The list item (`GET /domains`). `tracking_subdomain` is left out when there is none,
    /// as Resend's types have it (optional, never `null`: npm `resend` 6.38.0
    /// `tracking_subdomain?: string`, PyPI `resend` 2.52.0 `NotRequired[str]`).
    pub fn summary_json(&self) -> Value {
        let mut value = json!({
            "id": self.id,
            "name": self.name,
            "status": self.status.wire(),
            "created_at": wire::timestamp(self.created_at),
            "region": self.region,
            "open_tracking": self.open_tracking,
            "click_tracking": self.click_tracking,
            "capabilities": { "sending": "enabled", "receiving": "disabled" },
        });
        if let (Some(subdomain), Value::Object(map)) = (&self.tracking_subdomain, &mut value) {
            map.shift_insert(7, "tracking_subdomain".into(), json!(subdomain));
        }
        value
    }

    /// The payload of `domain.*` events.
    pub fn event_json(&self, config: &Config) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "status": self.status.wire(),
            // Webhook payloads write time in ISO 8601, unlike resource bodies (Resend's
            // document: `DomainEventData.created_at`, `format: date-time`).
            "created_at": wire::iso8601(self.created_at),
            "region": self.region,
            "records": self.records(config),
            "dmarc": self.dmarc_json(),
        })
    }
}

/// The value of the recommended DMARC record: report only, so publishing it changes no
/// receiver's handling of the domain's mail.
pub const DMARC_VALUE: &str = "v=DMARC1; p=none;";

/// TLS policy for delivering a domain's mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsPolicy {
    /// Use TLS when the receiver offers it.
    Opportunistic,
    /// Deliver only over verified TLS.
    Enforced,
}

/// A domain's status, in Resend's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainStatus {
    /// Never checked.
    NotStarted,
    /// A check is under way.
    Pending,
    /// DKIM and SPF verified.
    Verified,
    /// Some required records verified, the others not yet checked.
    PartiallyVerified,
    /// Some required records verified, others failed.
    PartiallyFailed,
    /// No required record verified.
    Failed,
    /// DNS could not be asked. Older builds stored it; it is answered as `pending`,
    /// because Resend uses it only for a record's status and the SDKs that decode a
    /// domain's status strictly do not know it.
    TemporaryFailure,
}

impl DomainStatus {
    /// The status as the API answers it: one of Resend's domain statuses.
    pub fn wire(self) -> Self {
        match self {
            DomainStatus::TemporaryFailure => DomainStatus::Pending,
            other => other,
        }
    }
}

/// One record's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordStatus {
    /// Never checked.
    NotStarted,
    /// A check is under way.
    Pending,
    /// Found with the right value.
    Verified,
    /// Missing or wrong.
    Failed,
    /// DNS could not be asked.
    TemporaryFailure,
}

/// The status of each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordChecks {
    /// DKIM TXT.
    pub dkim: RecordStatus,
    /// SPF TXT on the return path.
    pub spf_txt: RecordStatus,
    /// MX on the return path.
    pub spf_mx: RecordStatus,
    /// DMARC TXT (recommended, not required).
    pub dmarc: RecordStatus,
    /// The tracking host's CNAME (only with a `tracking_subdomain`; not required for
    /// sending, required for tracking).
    #[serde(default = "not_started")]
    pub tracking: RecordStatus,
}

fn not_started() -> RecordStatus {
    RecordStatus::NotStarted
}

impl RecordChecks {
    /// All records at `status`.
    pub fn all(status: RecordStatus) -> Self {
        RecordChecks {
            dkim: status,
            spf_txt: status,
            spf_mx: status,
            dmarc: status,
            tracking: status,
        }
    }

    /// The domain status these record statuses amount to. DKIM and both SPF records are
    /// required; DMARC is reported only. A record DNS could not be asked about keeps the
    /// domain `pending`: its check is repeated.
    pub fn domain_status(&self) -> DomainStatus {
        let required = [self.dkim, self.spf_txt, self.spf_mx];
        let count = |status| required.iter().filter(|s| **s == status).count();
        if count(RecordStatus::NotStarted) == required.len() {
            DomainStatus::NotStarted
        } else if count(RecordStatus::Pending) > 0 {
            DomainStatus::Pending
        } else if count(RecordStatus::Verified) == required.len() {
            DomainStatus::Verified
        } else if count(RecordStatus::Failed) == 0 && count(RecordStatus::TemporaryFailure) > 0 {
            DomainStatus::Pending
        } else if count(RecordStatus::Verified) > 0 && count(RecordStatus::Failed) > 0 {
            DomainStatus::PartiallyFailed
        } else if count(RecordStatus::Verified) > 0 {
            DomainStatus::PartiallyVerified
        } else {
            DomainStatus::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RecordStatus::{Failed, NotStarted, Pending, TemporaryFailure, Verified};

    fn checks(dkim: RecordStatus, spf_txt: RecordStatus, spf_mx: RecordStatus) -> RecordChecks {
        RecordChecks {
            dkim,
            spf_txt,
            spf_mx,
            dmarc: Failed,
            tracking: NotStarted,
        }
    }

    #[test]
    fn domain_status_follows_the_required_records() {
        assert_eq!(
            checks(NotStarted, NotStarted, NotStarted).domain_status(),
            DomainStatus::NotStarted
        );
        assert_eq!(
            checks(Pending, Verified, Verified).domain_status(),
            DomainStatus::Pending
        );
        assert_eq!(
            checks(Verified, Verified, Verified).domain_status(),
            DomainStatus::Verified
        );
        assert_eq!(
            checks(Verified, Failed, Verified).domain_status(),
            DomainStatus::PartiallyFailed
        );
        assert_eq!(
            checks(Verified, NotStarted, Verified).domain_status(),
            DomainStatus::PartiallyVerified
        );
        assert_eq!(checks(Failed, Failed, Failed).domain_status(), DomainStatus::Failed);
        assert_eq!(
            checks(Verified, TemporaryFailure, Verified).domain_status(),
            DomainStatus::Pending
        );
        assert_eq!(DomainStatus::TemporaryFailure.wire(), DomainStatus::Pending);
        assert_eq!(
            checks(Failed, TemporaryFailure, Verified).domain_status(),
            DomainStatus::PartiallyFailed
        );
    }
}
