//! The background verifier: checks domains whose check is due, records what it found,
//! and schedules the next check (backoff while pending, daily once verified).
//!
//! It runs on the [due-time runner](crate::runner) over the domains' own index
//! ([`Table::DOMAIN_CHECKS`](herald_queue::Table::DOMAIN_CHECKS)), which
//! [the domain store](super::RocksDomains) keeps in step with each domain's `next_check_at`. It replaced a
//! scan of every domain on every pass.

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Batch, Timestamp};
use tokio::sync::Notify;

use super::model::{Domain, DomainStatus};
use super::store::{CHECKS, domain_at, index_unindexed};
use super::verify::check;
use crate::config::Config;
use crate::dns::Dns;
use crate::runner::{self, Claimed, Handler, Runner, Wake};
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

    /// Runs the verifier until shutdown; the first run after an upgrade first indexes
    /// the domains stored before the index existed.
    pub async fn run(self, state: Arc<Services>, dns: Dns, shutdown: Shutdown) {
        let store = state.store().clone();
        match tokio::task::spawn_blocking(move || index_unindexed(&store)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(indexed)) => tracing::info!(indexed, "indexed the domains' next checks"),
            // Domains saved from now on are indexed; the rest are tried at the next start.
            Ok(Err(error)) => tracing::error!(%error, "cannot index the domains' next checks"),
            Err(error) => tracing::error!(%error, "the domain indexing task failed"),
        }
        let limits = runner::Limits {
            claims_max: PASS_MAX,
            page: PASS_MAX,
            ..runner::Limits::new(IDLE_MAX)
        };
        let runner = Runner::new(
            "domains",
            state.store().clone(),
            CHECKS,
            limits,
            Wake::from_notify(self.wake),
        );
        runner.run(Checker { state, dns }, shutdown).await;
    }
}

/// The runner's handler: checks each due domain in turn.
struct Checker {
    state: Arc<Services>,
    dns: Dns,
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
        let (store, key) = (self.state.store().clone(), claimed.key().to_vec());
        let found = tokio::task::spawn_blocking(move || domain_at(&store, &key))
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
        let mut batch = Batch::new();
        CHECKS.disarm(&mut batch, claimed.at(), claimed.key());
        Ok(self.state.store().commit(batch).await?)
    }
}

/// Writes a check's result onto the current version of the domain (it may have been
/// edited or deleted meanwhile) with a `domain.updated` event when its status changed.
fn record(
    state: &Services,
    checked: &Domain,
    checks: super::model::RecordChecks,
) -> Result<Option<Timestamp>, crate::storage::Error> {
    let (store, config) = (state.store(), state.config());
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
