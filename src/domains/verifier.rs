//! The background verifier: checks domains whose check is due, records what it found,
//! and schedules the next check (backoff while pending, daily once verified).

use std::sync::Arc;
use std::time::Duration;

use herald_queue::Timestamp;
use tokio::sync::Notify;

use super::model::{Domain, DomainStatus};
use super::verify::check;
use crate::config::Config;
use crate::dns::Dns;
use crate::services::Services;
use crate::shutdown::Shutdown;

/// Longest the verifier sleeps without looking for due checks, so a check scheduled by
/// another path is never late by more than this.
const IDLE_MAX: Duration = Duration::from_secs(60);

/// Domains checked at most per pass, so one pass never holds the loop long.
const PASS_MAX: usize = 100;

/// How often and how long domains are re-checked.
#[derive(Debug, Clone)]
pub struct VerifierSettings {
    /// Waits between checks of a domain that is not verified; the last repeats.
    pub retry_intervals: Vec<Duration>,
    /// How long a domain that is not verified keeps being re-checked.
    pub window: Duration,
    /// Wait between checks of a verified domain.
    pub recheck_interval: Duration,
}

/// A handle to wake the background verifier.
#[derive(Debug, Clone, Default)]
pub struct Verifier {
    wake: Arc<Notify>,
}

impl Verifier {
    /// Wakes the verifier to look for due checks now.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs the verifier until shutdown.
    pub async fn run(self, state: Arc<Services>, dns: Dns, mut shutdown: Shutdown) {
        let store = state.store.clone();
        loop {
            let next = match pass(&state, &dns).await {
                Ok(next) => next,
                Err(error) => {
                    tracing::error!(%error, "domain verification pass failed");
                    None
                }
            };
            let wait = next.map_or(IDLE_MAX, |at| at.saturating_since(store.now()).min(IDLE_MAX));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.wake.notified() => {}
                () = shutdown.triggered() => return,
            }
        }
    }
}

/// Checks every due domain; returns when the next one is due.
async fn pass(state: &Arc<Services>, dns: &Dns) -> Result<Option<Timestamp>, herald_queue::Error> {
    let store = &state.store;
    let now = store.now();
    let domains = {
        let state = Arc::clone(state);
        tokio::task::spawn_blocking(move || state.domains().all())
            .await
            .map_err(|_| herald_queue::Error::InvalidMessage("verifier scan task failed"))??
    };
    let mut next: Option<Timestamp> = None;
    let mut checked = 0;
    for domain in domains {
        let Some(due) = domain.next_check_at else { continue };
        if due > now || checked >= PASS_MAX {
            next = Some(next.map_or(due, |n| n.min(due)));
            continue;
        }
        checked += 1;
        let checks = check(dns, &domain, &state.config).await;
        let state = Arc::clone(state);
        let scheduled = tokio::task::spawn_blocking(move || record(&state, &domain, checks))
            .await
            .map_err(|_| herald_queue::Error::InvalidMessage("verifier write task failed"))??;
        if let Some(at) = scheduled {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    Ok(next)
}

/// Writes a check's result onto the current version of the domain (it may have been
/// edited or deleted meanwhile) with a `domain.updated` event when its status changed.
fn record(
    state: &Services,
    checked: &Domain,
    checks: super::model::RecordChecks,
) -> Result<Option<Timestamp>, herald_queue::Error> {
    let (store, config) = (&state.store, &state.config);
    let _guard = super::service::lock(state, checked.team_id, checked.id);
    let Some(mut domain) = state.domains().get(checked.team_id, checked.id)? else {
        return Ok(None);
    };
    if domain.dns_verification_skipped {
        domain.next_check_at = None;
        super::service::save(state, &domain, false)?;
        return Ok(None);
    }
    let now = store.now();
    let before = domain.status;
    let settings = settings(config);
    domain.checks = checks;
    domain.status = checks.domain_status();
    domain.last_checked_at = Some(now);
    if domain.status == DomainStatus::Verified {
        domain.failed_checks = 0;
        domain.next_check_at = Some(now.saturating_add(settings.recheck_interval));
    } else {
        if before == DomainStatus::Verified {
            // Records that disappeared get the same retry window as a new domain.
            domain.verification_started_at = Some(now);
            tracing::warn!(domain = %domain.name, status = ?domain.status, "a verified domain lost its DNS records");
        }
        let started = domain.verification_started_at.unwrap_or(now);
        let interval_index = (domain.failed_checks as usize).min(settings.retry_intervals.len().saturating_sub(1));
        let interval = settings
            .retry_intervals
            .get(interval_index)
            .copied()
            .unwrap_or(IDLE_MAX);
        domain.failed_checks = domain.failed_checks.saturating_add(1);
        domain.next_check_at = (now.saturating_since(started) < settings.window).then(|| now.saturating_add(interval));
    }
    if domain.status != before {
        tracing::info!(domain = %domain.name, from = ?before, to = ?domain.status, "domain verification status changed");
    }
    // A status stored by an older build as `temporary_failure` is answered as `pending`:
    // becoming `pending` is no change a webhook needs to hear of.
    super::service::save(state, &domain, domain.status.wire() != before.wire())?;
    Ok(domain.next_check_at)
}

/// The verifier's settings from the config.
pub fn settings(config: &Config) -> VerifierSettings {
    VerifierSettings {
        retry_intervals: config.domains.retry_intervals.clone(),
        window: config.domains.verification_window,
        recheck_interval: config.domains.recheck_interval,
    }
}
