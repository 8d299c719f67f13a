//! What an upgrade leaves to do in the node's RocksDB: records and indexes earlier builds
//! wrote without something this build relies on. Each step is safe to stop and run
//! again, and marks itself done so that later starts skip it. Some run while the store
//! opens, before anything is served ([`super::Node::open`]); the rest beside everything
//! else ([`super::Node::migrate_in_background`]).

use std::future::Future;

use herald_queue::{Spool, Store};

use super::Error;
use crate::shutdown::Shutdown;

/// The steps that must be done before the store is used: counters' cutoff noted (so
/// nothing is counted twice), finished imports armed to expire, emails indexed by
/// status (the dashboard lists by it). Blocks.
pub(crate) fn at_start(store: &Store) -> Result<(), Error> {
    crate::counters::store::backfill::prepare(store)?;
    crate::contacts::RocksContacts::new(store.clone()).arm_finished_imports()?;
    let indexed = crate::emails::store::build_index(store)?;
    if indexed > 0 {
        tracing::info!(emails = indexed, "emails indexed by status for the dashboard");
    }
    Ok(())
}

/// One step: what it does, in words for the log, and the work, which answers how many
/// records it changed.
type Step = (&'static str, Box<dyn FnOnce() -> Result<usize, Error> + Send>);

/// The steps that may run while herald serves, one after another until done or
/// shutdown: request logs' and domains' index entries of older builds moved or made,
/// emails final before retention existed armed to expire, metrics counted for events
/// recorded before counters existed. A step that fails is said in the log and tried
/// again at the next start; what was written since is indexed already.
pub(crate) async fn in_background(store: Store, spool: Spool, shutdown: Shutdown) {
    let steps: [Step; 4] = [
        ("request log expiry entries moved to the new index", {
            let store = store.clone();
            Box::new(move || crate::logs::store::migrate(&store))
        }),
        ("domains' next checks indexed", {
            let store = store.clone();
            Box::new(move || crate::domains::store::index_unindexed(&store))
        }),
        ("emails final before retention armed to expire", {
            let store = store.clone();
            Box::new(move || crate::emails::store::retention::index_unindexed(&store, &spool))
        }),
        ("metrics counted for earlier emails", {
            let shutdown = shutdown.clone();
            Box::new(move || crate::counters::store::backfill::run(&store, &shutdown))
        }),
    ];
    for (what, step) in steps {
        if shutdown.is_triggered() {
            return;
        }
        step_off_the_workers(what, tokio::task::spawn_blocking(step)).await;
    }
}

/// Waits for one step and says what it did.
async fn step_off_the_workers(
    what: &'static str,
    step: impl Future<Output = Result<Result<usize, Error>, tokio::task::JoinError>>,
) {
    match step.await {
        Ok(Ok(0)) => {}
        Ok(Ok(done)) => tracing::info!(done, "{what}"),
        Ok(Err(error)) => tracing::warn!(%error, "{what}: failed; the next start tries again"),
        Err(error) => tracing::warn!(%error, "{what}: the task failed; the next start tries again"),
    }
}
