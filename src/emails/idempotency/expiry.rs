//! The engine that expires idempotency records on the due-time runner, [`RETENTION`]
//! after they were written. At start it first gives records from builds without the
//! expiry index their entries (once: a failed backfill is tried at the next start, and
//! the index still expires everything written since).

use std::sync::Arc;
use std::time::Duration;

use herald_queue::Due;

use super::record::RETENTION;
use super::store::SWEEP_BATCH;
use crate::runner::{self, Claimed, Handler, Runner, Wake};
use crate::services::Services;

/// Longest the expiry runner sleeps. A new record falls due after every one armed
/// before it, so nothing needs to wake the runner; this bounds the wait should the wall
/// clock jump (it was also the interval of the sweep this replaced).
const EXPIRY_IDLE_MAX: Duration = Duration::from_secs(600);

/// Expires records until shutdown.
pub async fn run(state: Arc<Services>, shutdown: crate::shutdown::Shutdown) {
    let backfill = Arc::clone(&state);
    let indexed = tokio::task::spawn_blocking(move || backfill.idempotency().keys().backfill(backfill.now()));
    match indexed.await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "idempotency expiry failed"),
        Err(error) => tracing::warn!(%error, "idempotency expiry task failed"),
    }
    let limits = runner::Limits {
        claims_max: SWEEP_BATCH,
        page: SWEEP_BATCH,
        delay: RETENTION,
        ..runner::Limits::new(EXPIRY_IDLE_MAX)
    };
    let queue = state.idempotency().keys().expiry_queue();
    let runner = Runner::new("idempotency", queue, limits, Wake::default());
    runner.run(Expirer { state }, shutdown).await;
}

/// The runner's handler: deletes the due records, a batch per pass.
struct Expirer {
    state: Arc<Services>,
}

impl Handler for Expirer {
    async fn handle(&mut self, due: Vec<Claimed>) {
        let state = Arc::clone(&self.state);
        let expired = tokio::task::spawn_blocking(move || {
            let entries: Vec<Due> = due.iter().map(Claimed::due).cloned().collect();
            let expired = state.idempotency().keys().expire(&entries);
            // The claims go after the write.
            drop(due);
            expired
        });
        match expired.await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "idempotency expiry failed"),
            Err(error) => tracing::warn!(%error, "idempotency expiry task failed"),
        }
    }
}
