//! The delivery scheduler: the due-time runner over the spool's index, handing due
//! messages to the worker threads while there is room in flight.
//!
//! Each message in flight holds its runner claim ([`Claimed`]) from the moment it is due
//! until its outcome is written (or it is given back): the runner's claim bound is the
//! engine's `[delivery] in_flight_max`, and dropping the claim wakes the runner for the
//! next due message. The spool's own claim ([`herald_queue::Spool::try_claim`]) is taken
//! too, because the operator's queue commands take it before they change a message.

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Claim, Id};

use super::Shared;
use super::job::{Held, Job};
use crate::runner::{Claimed, Handler, Limits};

/// The longest the runner sleeps between looks at the due index; new mail and finished
/// messages wake it sooner.
const IDLE_MAX: Duration = Duration::from_millis(250);

/// Due-index entries read at once.
const PAGE: usize = 256;

/// How often the runner looks at the whole due index instead of from where it stopped:
/// due times and ids only grow, so only a message given back unchanged (an operator's
/// change that released it, a shutdown) sorts before the cursor.
const FULL_PASS_EVERY: Duration = Duration::from_secs(1);

/// The runner's limits for `in_flight_max` messages in flight.
pub fn limits(in_flight_max: usize) -> Limits {
    Limits {
        claims_max: in_flight_max,
        page: PAGE,
        resume: Some(FULL_PASS_EVERY),
        ..Limits::new(IDLE_MAX)
    }
}

/// Hands due messages to the workers.
pub struct Scheduler {
    /// The engine.
    pub shared: Arc<Shared>,
}

impl Handler for Scheduler {
    async fn handle(&mut self, due: Vec<Claimed>) {
        let spool = self.shared.state.spool();
        for entry in due {
            let Some(id) = Id::from_slice(entry.key()) else {
                forget_malformed(&self.shared, &entry).await;
                continue;
            };
            // An operator's change holds it for a moment: it is handed out again after.
            if !spool.try_claim(id) {
                continue;
            }
            let claim = Claim { id, due: entry.at() };
            if self.shared.jobs.send(Job::Prepare(Held { claim, entry })).is_err() {
                // The workers are gone: shutdown.
                spool.release(id);
                return;
            }
        }
    }
}

/// Deletes an index entry that names no message (it could never be delivered, and would
/// be handed out on every pass), saying so once.
async fn forget_malformed(shared: &Shared, entry: &Claimed) {
    tracing::error!(key = ?entry.key(), "deleting a malformed entry of the spool's due index");
    if let Err(error) = shared.state.node().spool_queue().disarm(entry.due()).await {
        tracing::error!(%error, "cannot delete a malformed due entry");
    }
}
