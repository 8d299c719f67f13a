//! Preparing a claimed message: load it, settle suppressed recipients without
//! connecting, sign it once with its domain's DKIM key, and hand one piece per recipient
//! domain to the destinations.

use std::collections::BTreeMap;
use std::sync::Arc;

use herald_queue::Id;

use super::Shared;
use super::job::Held;
use super::job::{Links, MessageJob, Outcome, Outgoing};
use crate::domains::TlsPolicy;

/// Prepares `held` (on a worker thread). Its runner claim goes with the job, or is
/// dropped here when there is nothing to send.
pub fn prepare(shared: &Arc<Shared>, held: Held) {
    let Held { claim, entry } = held;
    let spool = shared.state.spool();
    if shared.is_stopping() {
        release(shared, claim.id);
        return;
    }
    let (envelope, raw) = match spool.load(claim.id) {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return release(shared, claim.id),
        Err(error) => {
            tracing::error!(id = %claim.id, %error, "cannot load a due message");
            return retry_later(shared, claim.id);
        }
    };
    let now = shared.state.now();
    let due: Vec<usize> = envelope.due_recipients(now).map(|(i, _)| i).collect();
    let Some(team_id) = envelope.team.parse::<Id>().ok().filter(|_| !due.is_empty()) else {
        return release(shared, claim.id);
    };
    // A canceled broadcast's email that was waiting for its turn is dropped, not sent.
    if let Some(broadcast) = envelope.metadata.get("broadcast_id").and_then(|b| b.parse::<Id>().ok()) {
        match crate::broadcasts::service::is_canceled(&shared.state, team_id, broadcast) {
            Ok(false) => {}
            Ok(true) => {
                match crate::broadcasts::service::cancel_claimed(&shared.state, team_id, broadcast, claim.id) {
                    Ok(true) => {}
                    // Its record is gone (erased): the message goes too.
                    Ok(false) => {
                        if let Err(error) = spool.cancel(claim.id, |_, _| Ok(())) {
                            tracing::error!(id = %claim.id, %error, "cannot cancel a canceled broadcast's email");
                            return retry_later(shared, claim.id);
                        }
                    }
                    Err(error) => {
                        tracing::error!(id = %claim.id, %error, "cannot cancel a canceled broadcast's email");
                        return retry_later(shared, claim.id);
                    }
                }
                return;
            }
            Err(error) => {
                tracing::error!(id = %claim.id, %error, "cannot read a broadcast");
                return retry_later(shared, claim.id);
            }
        }
    }
    let domain = envelope
        .metadata
        .get("domain_id")
        .and_then(|id| id.parse::<Id>().ok())
        .map(|id| shared.state.domains().cached(team_id, id));

    let mut suppressed = Vec::new();
    let mut by_domain: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for index in due {
        let address = &envelope.recipients[index].address;
        match shared.state.suppressions().find(team_id, address) {
            Ok(Some(entry)) => suppressed.push((index, entry.origin)),
            Ok(None) => by_domain.entry(recipient_domain(address)).or_default().push(index),
            Err(error) => {
                tracing::error!(id = %claim.id, %error, "cannot read the suppression list");
                return retry_later(shared, claim.id);
            }
        }
    }

    let mut failure = None;
    let mut header = Vec::new();
    let mut tls_required = false;
    let mut region = String::new();
    if !by_domain.is_empty() {
        match domain {
            Some(Ok(Some(domain))) => {
                tls_required = domain.tls == TlsPolicy::Enforced;
                // Read now, so a region changed before this attempt applies to it.
                region.clone_from(&domain.region);
                match shared.signers.sign(&domain, &raw) {
                    Ok(signature) => header = signature,
                    Err(why) => failure = Some(why),
                }
            }
            Some(Err(error)) => {
                tracing::error!(id = %claim.id, %error, "cannot read the sending domain");
                return retry_later(shared, claim.id);
            }
            Some(Ok(None)) | None => failure = Some("The sending domain no longer exists".to_owned()),
        }
    }

    let job = MessageJob::new(
        claim.id,
        team_id,
        envelope.sender.clone(),
        envelope.recipients.iter().map(|r| r.address.clone()).collect(),
        Arc::new(Outgoing { header, body: raw }),
        Links {
            finished: shared.finished.clone(),
            spool: spool.clone(),
            entry,
        },
    );
    // The job now owns both claims.
    for (index, origin) in suppressed {
        job.record(index, Outcome::Suppressed(origin));
    }
    for (domain, indexes) in by_domain {
        if let Some(why) = &failure {
            for index in indexes {
                job.record(index, Outcome::Failed(why.clone()));
            }
            continue;
        }
        let piece = job.piece(indexes);
        shared.destinations.push(shared, &region, &domain, tls_required, piece);
    }
    job.release_guard();
}

/// Gives a claim back without a job (nothing to do, or a storage error).
/// After a storage error, the message waits [`STORAGE_RETRY`] instead of being claimed
/// again on the scheduler's next pass, a second later, with the same error; when even
/// that write fails it is released as it was.
fn retry_later(shared: &Shared, id: Id) {
    let at = shared.state.now().saturating_add(STORAGE_RETRY);
    match shared.state.spool().reschedule(id, at) {
        Ok(_) => {}
        Err(error) => {
            tracing::error!(%id, %error, "cannot put off a message after a storage error");
            release(shared, id);
        }
    }
}

/// How long a message waits after a storage error while it was being prepared.
const STORAGE_RETRY: std::time::Duration = std::time::Duration::from_secs(30);

fn release(shared: &Shared, id: Id) {
    shared.state.spool().release(id);
}

/// The lower-cased domain of an address (IDNA names stay as given, lower-cased).
fn recipient_domain(address: &str) -> String {
    address
        .rsplit_once('@')
        .map_or(address, |(_, d)| d)
        .trim_end_matches('.')
        .to_lowercase()
}
