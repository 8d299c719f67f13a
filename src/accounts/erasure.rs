//! Erasing a deleted team: everything it kept leaves the store (its mail still queued,
//! email records with their content and timelines, domains, webhooks with their messages
//! and attempts, request logs, images, idempotency records, keys), then the team record
//! itself. Only the suppression list stays: it exists to remember addresses that must
//! not be mailed again.
//!
//! `DELETE /teams/{id}` deletes the team's keys at once (its tokens stop working) and
//! marks the team deleted; this engine then erases a bounded batch at a time, so a team
//! with millions of emails never holds the commit thread for long. The mark is the
//! record of work left: after a restart the erasure resumes where it was.
//!
//! Every store erases its own records (`erase_team`): emails with their timelines,
//! contacts, the audience, templates, users, request logs, images, broadcasts, the webhook
//! log and idempotency records; domains and webhooks are deleted one by one through
//! theirs, which keep caches; the counters last.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_queue::Id;

use super::Team;
use crate::services::Services;
use crate::shutdown::Shutdown;
use crate::storage::page::{Cursor, PageRequest};
use crate::storage::{Change, Error};
use crate::wake::Wake;

/// Records deleted per write.
const BATCH: usize = 512;

/// Longest sleep when no team is being erased (a deletion wakes the engine).
const IDLE: Duration = Duration::from_secs(60);

/// Runs until shutdown: erases every team marked deleted, a batch at a time.
pub async fn run(services: Arc<Services>, wake: Wake, mut shutdown: Shutdown) {
    let progress = Arc::new(Mutex::new(Progress::default()));
    while !shutdown.is_triggered() {
        let (state, progress) = (Arc::clone(&services), Arc::clone(&progress));
        let pass = tokio::task::spawn_blocking(move || {
            let mut progress = progress.lock().unwrap_or_else(PoisonError::into_inner);
            erase_some(&state, &mut progress)
        });
        let more = match pass.await {
            Ok(Ok(more)) => more,
            Ok(Err(error)) => {
                tracing::warn!(%error, "team erasure failed; retrying");
                false
            }
            Err(error) => {
                tracing::error!(%error, "a team erasure task failed");
                false
            }
        };
        let pause = if more { Duration::from_millis(5) } else { IDLE };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = wake.woken() => {}
            () = shutdown.triggered() => return,
        }
    }
}

/// What the engine remembers between passes (in memory: a restart starts over, which is
/// only slower).
#[derive(Debug, Default)]
pub struct Progress {
    /// Deleted teams with no mail left in the spool: none can arrive (their keys are
    /// gone), so the spool is not walked for them again.
    spool_clear: HashSet<Id>,
}

/// Erases one batch of the first deleted team's records; `true` when work is left.
/// Blocks.
pub fn erase_some(services: &Services, progress: &mut Progress) -> Result<bool, Error> {
    let Some(team) = services
        .accounts()
        .teams()?
        .into_iter()
        .find(|t| t.deleted_at.is_some())
    else {
        return Ok(false);
    };
    if !progress.spool_clear.contains(&team.id) {
        if cancel_queued(services, &team)? {
            return Ok(true);
        }
        progress.spool_clear.insert(team.id);
    }
    if erase_batch(services, &team)? {
        return Ok(true);
    }
    services.accounts().delete_team(team.id)?;
    tracing::info!(team_id = %team.id, "team erased");
    Ok(true)
}

/// Cancels up to [`BATCH`] of `team`'s messages still in the spool; `false` when there
/// are none. Mail leaves the queue first, so that delivery writes nothing more.
fn cancel_queued(services: &Services, team: &Team) -> Result<bool, Error> {
    let spool = services.spool();
    let mut queued = Vec::new();
    let team_text = team.id.to_string();
    spool.walk(None, |id, envelope| {
        if envelope.team == team_text {
            queued.push(id);
        }
        Ok(queued.len() < BATCH)
    })?;
    if !queued.is_empty() {
        for id in queued {
            // A message in flight is left to its attempt and erased on a later pass.
            if spool.try_claim(id) {
                spool.cancel(id, |_, _| Ok(()))?;
            }
        }
        return Ok(true);
    }
    Ok(false)
}

/// Erases up to [`BATCH`] of `team`'s records; `false` once none are left but the team
/// record.
fn erase_batch(services: &Services, team: &Team) -> Result<bool, Error> {
    for webhook in services.webhooks().for_team(team.id)? {
        services.webhooks().delete(&webhook)?;
    }
    let first = PageRequest {
        limit: BATCH,
        cursor: Cursor::Start,
    };
    let (domains, _) = services.domains().list(team.id, &first)?;
    if !domains.is_empty() {
        for domain in domains {
            services.domains().delete(&domain, None)?;
        }
        return Ok(true);
    }
    // The emails first, a batch per pass; the other stores after, once: most erase with
    // one range tombstone per table, which a pass per batch of emails would repeat.
    let mut change = Change::new();
    let erased = services.emails().erase_team(&mut change, team.id, BATCH)?;
    services.emails().commit(change)?;
    if !erased.is_empty() {
        return Ok(true);
    }
    if services.contacts().erase_team(team.id)?
        || services.audience().erase_team(team.id)?
        || services.templates().erase_team(team.id)?
        || services.users().erase_team(team.id)?
        || services.request_logs().erase_team(team.id)?
        || services.images().erase_team(team.id)?
        || services.broadcasts().erase_team(team.id)?
        || services.webhook_log().erase_team(team.id)?
        || services.idempotency().keys().erase_team(team.id)?
    {
        return Ok(true);
    }
    // The counters last, once nothing of the team can count any more.
    services.counters().erase_team(team.id)
}
