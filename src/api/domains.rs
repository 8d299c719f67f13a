//! `/domains`: create (with a DKIM key and the records to publish), list, read, update,
//! delete, and request verification.

use herald_queue::{Batch, Id, Table};
use serde_json::json;

use super::{Ctx, Reply};
use crate::config::{DkimAlgorithm, values};
use crate::domains::{
    Domain, DomainName, DomainStatus, RecordChecks, RecordStatus, TlsPolicy, generate_dkim_key, save,
};
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::services::RecordName;

/// Resend's regions, accepted for compatibility; herald itself runs where it is installed.
const REGIONS: &[&str] = &["us-east-1", "eu-west-1", "sa-east-1", "ap-northeast-1"];

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    region: Option<String>,
    custom_return_path: Option<String>,
    open_tracking: Option<bool>,
    click_tracking: Option<bool>,
    tls: Option<TlsPolicy>,
    tracking_subdomain: Option<String>,
    capabilities: Option<Capabilities>,
    dkim_algorithm: Option<String>,
}

/// Resend's `capabilities`: what a domain is used for. herald only sends.
#[derive(Debug, serde::Deserialize)]
struct Capabilities {
    sending: Option<Capability>,
    receiving: Option<Capability>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Capability {
    Enabled,
    Disabled,
}

/// Refuses what herald cannot do: receive mail, or hold a domain that does not send.
fn check_capabilities(capabilities: Option<&Capabilities>) -> Result<(), ApiError> {
    let Some(capabilities) = capabilities else {
        return Ok(());
    };
    if capabilities.receiving == Some(Capability::Enabled) {
        return Err(ApiError::validation(
            "herald does not receive mail: `capabilities.receiving` can only be \"disabled\"",
        ));
    }
    if capabilities.sending == Some(Capability::Disabled) {
        return Err(ApiError::validation(
            "herald domains are for sending: `capabilities.sending` can only be \"enabled\"",
        ));
    }
    Ok(())
}

/// The tracking subdomain from a request: one or more DNS labels below the domain,
/// lower case; an empty string or `null` clears it.
fn tracking_subdomain(value: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let value = value.trim().trim_end_matches('.').to_ascii_lowercase();
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() > 63 || !values::is_hostname(&value) {
        return Err(ApiError::validation(
            "The `tracking_subdomain` field must be a DNS name of letters, digits, hyphens and dots, at most 63 characters",
        ));
    }
    Ok(Some(value))
}

/// `POST /domains`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let name = domain_name(body.name)?;
    check_capabilities(body.capabilities.as_ref())?;
    let tracking_subdomain = tracking_subdomain(body.tracking_subdomain)?;
    let region = match body.region.as_deref() {
        None => REGIONS[0].to_owned(),
        Some(region) if REGIONS.contains(&region) => region.to_owned(),
        Some(other) => {
            return Err(ApiError {
                status: hyper::StatusCode::UNPROCESSABLE_ENTITY,
                name: "invalid_region",
                message: format!("Region must be one of {}, got {other:?}", REGIONS.join(", ")),
            });
        }
    };
    let return_path = body
        .custom_return_path
        .unwrap_or_else(|| "send".to_owned())
        .to_ascii_lowercase();
    if return_path.len() > 63 || !values::is_hostname(&return_path) || return_path.contains('.') {
        return Err(ApiError::validation(
            "The `custom_return_path` field must be one DNS label of letters, digits and hyphens",
        ));
    }
    let algorithm = match body.dkim_algorithm.as_deref() {
        None => ctx.state.config.domains.dkim_algorithm,
        Some("rsa") => DkimAlgorithm::Rsa,
        Some("ed25519") => DkimAlgorithm::Ed25519,
        Some(other) => {
            return Err(ApiError::validation(format!(
                "The `dkim_algorithm` field must be \"rsa\" or \"ed25519\", got {other:?}"
            )));
        }
    };
    let team_id = ctx.caller.team_id;
    let store = &ctx.state.store;
    // Key generation happens before the lock: it is the slow part and needs no record.
    let dkim = generate_dkim_key(algorithm).map_err(|_| ApiError::internal(&"DKIM key generation failed"))?;
    let name_key = DomainName::key(team_id, &name);
    // The name is what must stay unique: creations of one name wait for each other.
    let _guard = ctx.state.lock_record(RecordName {
        table: Table::DOMAIN_NAMES.name(),
        key: &name_key,
    });
    if store.get::<DomainName>(&name_key)?.is_some() {
        return Err(ApiError::validation(format!("The domain {name} is already registered")));
    }
    let domain = Domain {
        id: store.next_id(),
        team_id,
        name,
        region,
        custom_return_path: return_path,
        open_tracking: body.open_tracking.unwrap_or(false),
        click_tracking: body.click_tracking.unwrap_or(false),
        tls: body.tls.unwrap_or(TlsPolicy::Opportunistic),
        tracking_subdomain,
        dkim,
        checks: RecordChecks::all(RecordStatus::NotStarted),
        status: DomainStatus::NotStarted,
        dns_verification_skipped: false,
        created_at: store.now(),
        verification_started_at: None,
        last_checked_at: None,
        next_check_at: None,
        failed_checks: 0,
    };
    let config = &ctx.state.config;
    let mut batch = Batch::new();
    batch.put(Domain::key(team_id, domain.id), &domain)?;
    batch.put(
        DomainName::key(team_id, &domain.name),
        &DomainName { domain_id: domain.id },
    )?;
    crate::events::push(
        &mut batch,
        store,
        team_id,
        crate::events::EventKind::DomainCreated,
        || domain.event_json(config),
    )?;
    store.commit(batch).wait()?;
    Ok(Reply::created(domain.to_json(config)))
}

/// A valid domain name from the request, lower case: at least two labels.
fn domain_name(name: Option<String>) -> Result<String, ApiError> {
    let Some(name) = name else {
        return Err(ApiError::missing_field("name"));
    };
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err(ApiError::missing_field("name"));
    }
    if !values::is_hostname(&name)
        || !name.contains('.')
        || name
            .rsplit('.')
            .next()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(ApiError::validation(format!("{name:?} is not a valid domain name")));
    }
    Ok(name)
}

/// Locks the team's domain `id` for a change of its record (the background verifier
/// takes the same lock).
fn lock_domain<'a>(ctx: &Ctx<'a>, id: &str) -> Result<std::sync::MutexGuard<'a, ()>, ApiError> {
    let key = Domain::key(ctx.caller.team_id, format::id(id, "domain")?);
    Ok(ctx.state.lock_record(RecordName {
        table: Table::DOMAINS.name(),
        key: &key,
    }))
}

fn load(ctx: &Ctx<'_>, id: &str) -> Result<(Id, Domain), ApiError> {
    let id = format::id(id, "domain")?;
    let domain = ctx
        .state
        .store
        .get::<Domain>(Domain::key(ctx.caller.team_id, id))?
        .ok_or_else(|| ApiError::not_found("Domain not found"))?;
    Ok((id, domain))
}

/// `GET /domains`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let (domains, has_more) = page.load::<Domain>(&ctx.state.store, ctx.caller.team_id.as_bytes())?;
    Ok(Reply::ok(envelope(
        domains.iter().map(Domain::summary_json).collect(),
        has_more,
    )))
}

/// `GET /domains/{id}`.
pub fn get(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let (_, domain) = load(ctx, id)?;
    Ok(Reply::ok(domain.to_json(&ctx.state.config)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    open_tracking: Option<bool>,
    click_tracking: Option<bool>,
    tls: Option<TlsPolicy>,
    /// Absent: unchanged; `null` or `""`: cleared.
    #[serde(default, deserialize_with = "present")]
    tracking_subdomain: Option<Option<String>>,
    capabilities: Option<Capabilities>,
}

/// Tells a field given as `null` (`Some(None)`) from an absent one (`None`).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Some)
}

/// `PATCH /domains/{id}`: tracking and TLS policy.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: UpdateBody = ctx.request.json()?;
    check_capabilities(body.capabilities.as_ref())?;
    let tracking = body.tracking_subdomain.map(tracking_subdomain).transpose()?;
    let _guard = lock_domain(ctx, id)?;
    let (id, mut domain) = load(ctx, id)?;
    domain.open_tracking = body.open_tracking.unwrap_or(domain.open_tracking);
    domain.click_tracking = body.click_tracking.unwrap_or(domain.click_tracking);
    domain.tls = body.tls.unwrap_or(domain.tls);
    if let Some(tracking) = tracking {
        domain.tracking_subdomain = tracking;
    }
    save(&ctx.state.store, &ctx.state.config, &domain, true)?;
    Ok(Reply::ok(json!({ "object": "domain", "id": id })))
}

/// `DELETE /domains/{id}`.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let _guard = lock_domain(ctx, id)?;
    let (id, domain) = load(ctx, id)?;
    let store = &ctx.state.store;
    let mut batch = Batch::new();
    batch.delete::<Domain>(Domain::key(ctx.caller.team_id, id));
    batch.delete::<DomainName>(DomainName::key(ctx.caller.team_id, &domain.name));
    crate::events::push(
        &mut batch,
        store,
        domain.team_id,
        crate::events::EventKind::DomainDeleted,
        || domain.event_json(&ctx.state.config),
    )?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({ "object": "domain", "id": id, "deleted": true })))
}

#[derive(Debug, serde::Deserialize)]
struct VerifyBody {
    #[serde(default)]
    skip_dns: bool,
}

/// `POST /domains/{id}/verify`: checks DNS now, in the background (poll `GET` for the
/// result). With `{"skip_dns": true}` the operator marks the domain verified without DNS.
pub fn verify(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let body: VerifyBody = ctx.request.json()?;
    if body.skip_dns && !ctx.caller.operator {
        return Err(ApiError::forbidden(
            "Only the operator's full-access API key can skip DNS verification",
        ));
    }
    let _guard = lock_domain(ctx, id)?;
    let (id, mut domain) = load(ctx, id)?;
    let store = &ctx.state.store;
    let now = store.now();
    let before = domain.status;
    if body.skip_dns {
        domain.dns_verification_skipped = true;
        domain.status = DomainStatus::Verified;
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
    save(store, &ctx.state.config, &domain, domain.status.wire() != before.wire())?;
    ctx.state.verifier.wake();
    Ok(Reply::ok(json!({ "object": "domain", "id": id })))
}
