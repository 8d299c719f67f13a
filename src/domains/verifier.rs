//! The background verifier: checks domains whose check is due, records what it found,
//! and schedules the next check (backoff while pending, daily once verified).
//!
//! It runs on the [due-time runner](crate::runner) over the domains' own index
//! ([`Table::DOMAIN_CHECKS`](herald_queue::Table::DOMAIN_CHECKS)), which
//! [`save`](super::save) keeps in step with each domain's `next_check_at`. It replaced a
//! scan of every domain on every pass.

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Batch, RawEntry, Scan, Store, Table, Timestamp};
use tokio::sync::Notify;

use super::model::{CHECKS, Domain, DomainStatus};
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

/// Domains read per page while indexing those stored before the index existed.
const INDEX_PAGE: usize = 1_000;

/// The key in [`Table::META`] that says every domain's next check is in the index: set
/// once the domains stored by builds without it have been given their entries.
const INDEXED: &[u8] = b"domain_checks_indexed";

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
        let store = state.store.clone();
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
            state.store.clone(),
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
    async fn check(&self, claimed: &Claimed) -> Result<(), herald_queue::Error> {
        let (store, key) = (self.state.store.clone(), claimed.key().to_vec());
        let found = tokio::task::spawn_blocking(move || store.get::<Domain>(&key))
            .await
            .map_err(|_| herald_queue::Error::InvalidMessage("verifier read task failed"))?;
        let domain = match found {
            Ok(Some(domain)) if domain.next_check_at == Some(claimed.at()) => domain,
            Ok(_) => return self.disarm(claimed).await,
            Err(error @ herald_queue::Error::Corrupt { .. }) => {
                // No check can be recorded on a domain that cannot be read.
                tracing::warn!(%error, "dropping the scheduled check of a domain that cannot be read");
                return self.disarm(claimed).await;
            }
            Err(error) => return Err(error),
        };
        let checks = check(&self.dns, &domain, &self.state.config).await;
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || record(&state, &domain, checks))
            .await
            .map_err(|_| herald_queue::Error::InvalidMessage("verifier write task failed"))??;
        Ok(())
    }

    async fn disarm(&self, claimed: &Claimed) -> Result<(), herald_queue::Error> {
        let mut batch = Batch::new();
        CHECKS.disarm(&mut batch, claimed.at(), claimed.key());
        self.state.store.commit(batch).await
    }
}

/// Gives every domain with a next check its entry in [`CHECKS`], once: domains stored by
/// builds without the index have none. Returns how many it indexed. Takes no record
/// locks: a domain saved meanwhile arms its own entry, and an entry armed here for a
/// version just replaced is stale, which the verifier drops when it comes due.
pub(super) fn index_unindexed(store: &Store) -> Result<usize, herald_queue::Error> {
    if store.get_raw(Table::META, INDEXED)?.is_some() {
        return Ok(0);
    }
    let mut indexed = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page: Vec<RawEntry> = store.scan_raw(
            Table::DOMAINS,
            Scan {
                after: after.as_deref(),
                limit: INDEX_PAGE,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        for (key, bytes) in &page {
            // A domain that cannot be read cannot be checked either.
            let Ok(domain) = herald_queue::decode_record::<Domain>(bytes) else {
                continue;
            };
            if let Some(at) = domain.next_check_at
                && !CHECKS.contains(store, at, key)?
            {
                CHECKS.arm(&mut batch, at, key);
                indexed += 1;
            }
        }
        let last = page.len() < INDEX_PAGE;
        if last {
            batch.put_raw(Table::META, INDEXED.to_vec(), b"1".to_vec());
        }
        store.commit(batch).wait()?;
        if last {
            return Ok(indexed);
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

/// Writes a check's result onto the current version of the domain (it may have been
/// edited or deleted meanwhile) with a `domain.updated` event when its status changed.
fn record(
    state: &Services,
    checked: &Domain,
    checks: super::model::RecordChecks,
) -> Result<Option<Timestamp>, herald_queue::Error> {
    let (store, config) = (&state.store, &state.config);
    let key = Domain::key(checked.team_id, checked.id);
    let _guard = state.lock_record(crate::services::RecordName {
        table: herald_queue::Table::DOMAINS.name(),
        key: &key,
    });
    let Some(mut domain) = store.get::<Domain>(&key)? else {
        return Ok(None);
    };
    if domain.dns_verification_skipped {
        domain.next_check_at = None;
        super::model::save(store, config, &domain, false)?;
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
    super::model::save(store, config, &domain, domain.status.wire() != before.wire())?;
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

#[cfg(test)]
mod tests {
    use herald_queue::{Batch, Id};

    use super::*;
    use crate::config::DkimAlgorithm;
    use crate::domains::{RecordChecks, RecordStatus, TlsPolicy, save};

    const HOUR: Duration = Duration::from_secs(3600);

    fn domain(store: &Store, next_check_at: Option<Timestamp>) -> Domain {
        Domain {
            id: store.next_id(),
            team_id: Id::from_bytes([3; 16]),
            name: "example.test".into(),
            region: "us-east-1".into(),
            custom_return_path: "send".into(),
            open_tracking: false,
            click_tracking: false,
            tls: TlsPolicy::Opportunistic,
            tracking_subdomain: None,
            dkim: super::super::generate_dkim_key(DkimAlgorithm::Ed25519).expect("key"),
            checks: RecordChecks::all(RecordStatus::Pending),
            status: DomainStatus::Pending,
            dns_verification_skipped: false,
            created_at: store.now(),
            verification_started_at: Some(store.now()),
            last_checked_at: None,
            next_check_at,
            failed_checks: 0,
        }
    }

    /// Every entry of the index, as (time, domain id).
    fn armed(store: &Store) -> Vec<(Timestamp, Id)> {
        CHECKS
            .due(store, Timestamp::from_millis(u64::MAX), None, usize::MAX)
            .expect("scan")
            .into_iter()
            .map(|due| (due.at, Id::from_slice(&due.key[16..]).expect("domain id")))
            .collect()
    }

    #[test]
    fn saving_a_domain_moves_its_entry_with_its_next_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let config = Config::defaults();
        let now = store.now();
        let mut domain = domain(&store, None);
        save(&store, &config, &domain, false).expect("save");
        assert!(armed(&store).is_empty(), "nothing to check");
        domain.next_check_at = Some(now);
        save(&store, &config, &domain, false).expect("save");
        assert_eq!(armed(&store), [(now, domain.id)]);
        let later = now.saturating_add(HOUR);
        domain.next_check_at = Some(later);
        save(&store, &config, &domain, true).expect("save");
        assert_eq!(armed(&store), [(later, domain.id)], "moved, not copied");
        domain.next_check_at = None;
        save(&store, &config, &domain, false).expect("save");
        assert!(armed(&store).is_empty());
    }

    #[test]
    fn domains_from_before_the_index_are_indexed_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let due = store.now().saturating_add(HOUR);
        // Written as builds without the index wrote them: the record alone.
        let legacy = |next_check_at| {
            let domain = domain(&store, next_check_at);
            let mut batch = Batch::new();
            batch
                .put(Domain::key(domain.team_id, domain.id), &domain)
                .expect("encode");
            store.commit(batch).wait().expect("commit");
            domain.id
        };
        let pending = legacy(Some(due));
        legacy(None);
        let mut batch = Batch::new();
        batch.put_raw(Table::DOMAINS, vec![9; 32], b"not a domain".to_vec());
        store.commit(batch).wait().expect("commit");
        assert_eq!(index_unindexed(&store).expect("index"), 1);
        assert_eq!(armed(&store), [(due, pending)]);
        legacy(Some(due));
        assert_eq!(index_unindexed(&store).expect("index"), 0, "done once");
        assert_eq!(armed(&store).len(), 1);
    }
}
