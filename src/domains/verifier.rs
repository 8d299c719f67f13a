//! The background verifier: checks domains whose check is due, records what it found,
//! and schedules the next check (backoff while pending, daily once verified).
//!
//! It runs on the [due-time runner](crate::runner) over the domains' own queue
//! ([`super::DomainStore::check_queue`]), which the domain store keeps in step with each
//! domain's `next_check_at`. It replaced a scan of every domain on every pass.

use std::sync::Arc;
use std::time::Duration;

use herald_queue::Timestamp;

use super::model::{Domain, DomainStatus};
use super::verify::check;
use crate::config::Config;
use crate::dns::Dns;
use crate::runner::{self, Claimed, Handler, Runner};
use crate::services::Services;
use crate::shutdown::Shutdown;
use crate::storage::due::DueQueue;

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

/// Runs the verifier until shutdown, woken early by [`Services::verifier_wake`].
pub async fn run(state: Arc<Services>, dns: Dns, shutdown: Shutdown) {
    let limits = runner::Limits {
        claims_max: PASS_MAX,
        page: PASS_MAX,
        ..runner::Limits::new(IDLE_MAX)
    };
    let queue = state.domains().check_queue();
    let wake = state.verifier_wake().clone();
    let runner = Runner::new("domains", Arc::clone(&queue), limits, wake);
    runner.run(Checker { state, dns, queue }, shutdown).await;
}

/// The runner's handler: checks each due domain in turn.
struct Checker {
    state: Arc<Services>,
    dns: Dns,
    queue: Arc<dyn DueQueue>,
}

impl Handler for Checker {
    async fn handle(&mut self, due: Vec<Claimed>) {
        for claimed in due {
            if let Err(error) = self.check(&claimed).await {
                tracing::error!(%error, "domain verification failed");
            }
        }
    }
}

impl Checker {
    /// Checks the domain of a due entry and records the result, which re-arms or
    /// disarms it; an entry whose domain was deleted or rescheduled since is removed.
    async fn check(&self, claimed: &Claimed) -> Result<(), crate::storage::Error> {
        let (state, key) = (Arc::clone(&self.state), claimed.key().to_vec());
        let found = tokio::task::spawn_blocking(move || state.domains().at_check(&key))
            .await
            .map_err(|_| crate::storage::Error::Failed("the verifier's read task failed".into()))?;
        let domain = match found {
            Ok(Some(domain)) if domain.next_check_at == Some(claimed.at()) => domain,
            Ok(_) => return self.disarm(claimed).await,
            Err(error @ crate::storage::Error::Corrupt { .. }) => {
                // No check can be recorded on a domain that cannot be read.
                tracing::warn!(%error, "dropping the scheduled check of a domain that cannot be read");
                return self.disarm(claimed).await;
            }
            Err(error) => return Err(error),
        };
        let checks = check(&self.dns, &domain, self.state.config()).await;
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || record(&state, &domain, checks))
            .await
            .map_err(|_| crate::storage::Error::Failed("the verifier's write task failed".into()))??;
        Ok(())
    }

    async fn disarm(&self, claimed: &Claimed) -> Result<(), crate::storage::Error> {
        self.queue.disarm(claimed.due()).await
    }
}

/// Writes a check's result onto the current version of the domain (it may have been
/// edited or deleted meanwhile) with a `domain.updated` event when its status changed.
fn record(
    state: &Services,
    checked: &Domain,
    checks: super::model::RecordChecks,
) -> Result<Option<Timestamp>, crate::storage::Error> {
    let config = state.config();
    let _guard = super::service::lock(state, checked.team_id, checked.id);
    let Some(mut domain) = state.domains().get(checked.team_id, checked.id)? else {
        return Ok(None);
    };
    if domain.dns_verification_skipped {
        domain.next_check_at = None;
        super::service::save(state, &domain, false)?;
        return Ok(None);
    }
    let now = state.now();
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
