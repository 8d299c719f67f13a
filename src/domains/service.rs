//! The domains service: create (with a DKIM key and the records to publish), list, read,
//! update, delete, and request verification. Rules live here, for every adapter; storage
//! is [`super::DomainStore`]'s.

use herald_queue::Id;

use super::model::{Domain, DomainStatus, RecordChecks, RecordStatus, TlsPolicy};
use crate::accounts::Caller;
use crate::config::{DkimAlgorithm, values};
use crate::events::EventKind;
use crate::services::{Error, RecordName, Services};
use crate::storage::page::PageRequest;

/// Resend's `capabilities`: what a domain is used for. herald only sends.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct Capabilities {
    /// Sending: only `enabled` is accepted.
    pub sending: Option<Capability>,
    /// Receiving: only `disabled` is accepted.
    pub receiving: Option<Capability>,
}

/// One capability's setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// On.
    Enabled,
    /// Off.
    Disabled,
}

/// A domain to create, as a caller asks for it.
#[derive(Debug, Clone, Default)]
pub struct NewDomain {
    /// The domain name (required).
    pub name: Option<String>,
    /// One of the configured regions (default `[delivery] region`).
    pub region: Option<String>,
    /// The return-path label (default `send`).
    pub custom_return_path: Option<String>,
    /// Open tracking.
    pub open_tracking: Option<bool>,
    /// Click tracking.
    pub click_tracking: Option<bool>,
    /// TLS policy for delivery.
    pub tls: Option<TlsPolicy>,
    /// The tracking subdomain.
    pub tracking_subdomain: Option<String>,
    /// What the domain is for.
    pub capabilities: Option<Capabilities>,
    /// `"rsa"` or `"ed25519"` (default `[domains] dkim_algorithm`).
    pub dkim_algorithm: Option<String>,
}

/// A change to a domain: `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct DomainChange {
    /// Open tracking.
    pub open_tracking: Option<bool>,
    /// Click tracking.
    pub click_tracking: Option<bool>,
    /// TLS policy.
    pub tls: Option<TlsPolicy>,
    /// The tracking subdomain; `Some(None)` or `Some(Some(""))` clears it.
    pub tracking_subdomain: Option<Option<String>>,
    /// What the domain is for (checked, not stored).
    pub capabilities: Option<Capabilities>,
    /// The region its mail leaves from (one of the configured ones).
    pub region: Option<String>,
}

/// `region` when it names a configured region, else `invalid_region` listing them.
fn region(services: &Services, region: &str) -> Result<String, Error> {
    let names = services.config().region_names();
    if names.contains(&region) {
        return Ok(region.to_owned());
    }
    Err(Error::Invalid {
        name: "invalid_region",
        message: format!(
            "The `region` field must be one of this server's regions: {}; got {region:?}",
            names.join(", ")
        ),
    })
}

/// Refuses what herald cannot do: receive mail, or hold a domain that does not send.
fn check_capabilities(capabilities: Option<&Capabilities>) -> Result<(), Error> {
    let Some(capabilities) = capabilities else {
        return Ok(());
    };
    if capabilities.receiving == Some(Capability::Enabled) {
        return Err(Error::invalid(
            "herald does not receive mail: `capabilities.receiving` can only be \"disabled\"",
        ));
    }
    if capabilities.sending == Some(Capability::Disabled) {
        return Err(Error::invalid(
            "herald domains are for sending: `capabilities.sending` can only be \"enabled\"",
        ));
    }
    Ok(())
}

/// The tracking subdomain as given: one or more DNS labels below the domain, lower case;
/// an empty string or `None` clears it.
fn tracking_subdomain(value: Option<String>) -> Result<Option<String>, Error> {
    let Some(value) = value else {
        return Ok(None);
    };
    let value = value.trim().trim_end_matches('.').to_ascii_lowercase();
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() > 63 || !values::is_hostname(&value) {
        return Err(Error::invalid(
            "The `tracking_subdomain` field must be a DNS name of letters, digits, hyphens and dots, at most 63 characters",
        ));
    }
    Ok(Some(value))
}

/// A valid domain name, lower case: at least two labels, not ending in a number.
fn domain_name(name: Option<String>) -> Result<String, Error> {
    let Some(name) = name else {
        return Err(Error::MissingField("name"));
    };
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err(Error::MissingField("name"));
    }
    if !values::is_hostname(&name)
        || !name.contains('.')
        || name
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(Error::invalid(format!("{name:?} is not a valid domain name")));
    }
    Ok(name)
}

/// Creates a domain of the caller's team with a new DKIM key.
pub fn create(services: &Services, caller: &Caller, new: NewDomain) -> Result<Domain, Error> {
    caller.require_full_access()?;
    let name = domain_name(new.name)?;
    check_capabilities(new.capabilities.as_ref())?;
    let tracking_subdomain = tracking_subdomain(new.tracking_subdomain)?;
    let region = region(
        services,
        new.region.as_deref().unwrap_or(&services.config().delivery.region),
    )?;
    let return_path = new
        .custom_return_path
        .unwrap_or_else(|| "send".to_owned())
        .to_ascii_lowercase();
    if return_path.len() > 63 || !values::is_hostname(&return_path) || return_path.contains('.') {
        return Err(Error::invalid(
            "The `custom_return_path` field must be one DNS label of letters, digits and hyphens",
        ));
    }
    let algorithm = match new.dkim_algorithm.as_deref() {
        None => services.config().domains.dkim_algorithm,
        Some("rsa") => DkimAlgorithm::Rsa,
        Some("ed25519") => DkimAlgorithm::Ed25519,
        Some(other) => {
            return Err(Error::invalid(format!(
                "The `dkim_algorithm` field must be \"rsa\" or \"ed25519\", got {other:?}"
            )));
        }
    };
    let team_id = caller.team_id;
    // Key generation happens before the lock: it is the slow part and needs no record.
    let dkim = super::generate_dkim_key(algorithm).map_err(|_| Error::Internal("DKIM key generation failed"))?;
    // The name is what must stay unique: creations of one name wait for each other.
    let lock_name = [team_id.as_bytes().as_slice(), name.as_bytes()].concat();
    let _guard = services.lock_record(RecordName {
        table: "domain_names",
        key: &lock_name,
    });
    if services.domains().by_name(team_id, &name)?.is_some() {
        return Err(Error::invalid(format!("The domain {name} is already registered")));
    }
    let domain = Domain {
        id: services.next_id(),
        team_id,
        name,
        region,
        custom_return_path: return_path,
        open_tracking: new.open_tracking.unwrap_or(false),
        click_tracking: new.click_tracking.unwrap_or(false),
        tls: new.tls.unwrap_or(TlsPolicy::Opportunistic),
        tracking_subdomain,
        dkim,
        checks: RecordChecks::all(RecordStatus::NotStarted),
        status: DomainStatus::NotStarted,
        dns_verification_skipped: false,
        created_at: services.now(),
        verification_started_at: None,
        last_checked_at: None,
        next_check_at: None,
        failed_checks: 0,
    };
    let event = crate::services::outbox::new(services, team_id, EventKind::DomainCreated, || {
        domain.event_json(services.config())
    })?;
    services.domains().insert(&domain, event.as_ref())?;
    Ok(domain)
}

/// One page of the caller's team's domains, newest first, and whether more lie beyond it.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Domain>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.domains().list(caller.team_id, page)?)
}

/// The caller's domain `id`.
pub fn get(services: &Services, caller: &Caller, id: Id) -> Result<Domain, Error> {
    caller.require_full_access()?;
    services
        .domains()
        .get(caller.team_id, id)?
        .ok_or(Error::NotFound("Domain not found"))
}

/// Locks the domain `id` of `team_id` for a change of its record (the background verifier
/// takes the same lock).
pub fn lock(services: &Services, team_id: Id, id: Id) -> crate::services::Held<'_> {
    let name = [team_id.as_bytes().as_slice(), id.as_bytes()].concat();
    services.lock_record(RecordName {
        table: "domains",
        key: &name,
    })
}

/// Writes `domain` durably, with a `domain.updated` event when `changed` (webhooks hear
/// of every change of a domain, and only of changes). The caller holds its [`lock`].
pub fn save(services: &Services, domain: &Domain, changed: bool) -> Result<(), crate::storage::Error> {
    let event = if changed {
        crate::services::outbox::new(services, domain.team_id, EventKind::DomainUpdated, || {
            domain.event_json(services.config())
        })?
    } else {
        None
    };
    services.domains().put(domain, event.as_ref())
}

/// Changes the caller's domain `id`: tracking and TLS policy.
pub fn update(services: &Services, caller: &Caller, id: Id, change: DomainChange) -> Result<(), Error> {
    caller.require_full_access()?;
    check_capabilities(change.capabilities.as_ref())?;
    let tracking = change.tracking_subdomain.map(tracking_subdomain).transpose()?;
    let new_region = change
        .region
        .as_deref()
        .map(|name| region(services, name))
        .transpose()?;
    let _guard = lock(services, caller.team_id, id);
    let mut domain = get(services, caller, id)?;
    let before = domain.clone();
    domain.open_tracking = change.open_tracking.unwrap_or(domain.open_tracking);
    domain.click_tracking = change.click_tracking.unwrap_or(domain.click_tracking);
    domain.tls = change.tls.unwrap_or(domain.tls);
    if let Some(tracking) = tracking {
        domain.tracking_subdomain = tracking;
    }
    // Mail not yet in flight leaves from the new region (delivery reads it per attempt).
    if let Some(region) = new_region {
        domain.region = region;
    }
    // Webhooks hear of changes only: a change to what the domain already is is none.
    save(services, &domain, domain != before)?;
    Ok(())
}

/// Deletes the caller's domain `id`; mail already accepted from it is still delivered.
pub fn delete(services: &Services, caller: &Caller, id: Id) -> Result<(), Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id, id);
    let domain = get(services, caller, id)?;
    let event = crate::services::outbox::new(services, domain.team_id, EventKind::DomainDeleted, || {
        domain.event_json(services.config())
    })?;
    services.domains().delete(&domain, event.as_ref())?;
    Ok(())
}

/// Starts verification of the caller's domain `id` now, in the background. With
/// `skip_dns` the operator marks it verified without DNS.
pub fn verify(services: &Services, caller: &Caller, id: Id, skip_dns: bool) -> Result<(), Error> {
    caller.require_full_access()?;
    if skip_dns && !caller.operator {
        return Err(Error::Forbidden(
            "Only the operator's full-access API key can skip DNS verification".to_owned(),
        ));
    }
    let _guard = lock(services, caller.team_id, id);
    let mut domain = get(services, caller, id)?;
    let now = services.now();
    let before = domain.status;
    if skip_dns {
        domain.dns_verification_skipped = true;
        domain.status = DomainStatus::Verified;
        // Its tracking host too: the operator vouches for the domain's DNS as a whole.
        if domain.tracking_subdomain.is_some() {
            domain.checks.tracking = RecordStatus::Verified;
        }
        domain.next_check_at = None;
    } else {
        domain.dns_verification_skipped = false;
        domain.checks = RecordChecks::all(RecordStatus::Pending);
        domain.status = DomainStatus::Pending;
        domain.verification_started_at = Some(now);
        domain.failed_checks = 0;
        domain.next_check_at = Some(now);
    }
    // A status stored by an older build as `temporary_failure` was answered as `pending`.
    save(services, &domain, domain.status.wire() != before.wire())?;
    services.verifier_wake().wake();
    Ok(())
}
