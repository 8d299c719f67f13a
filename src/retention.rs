//! Retention: records leave the store when `[retention]` says their time is up.
//!
//! Each kind of record that expires keeps a [`DueIndex`] of `(time its retention counts
//! from, item key)` entries, armed in the same batch as the write that starts the count
//! (an email's final outcome, a webhook message's last attempt, a request). A runner per
//! kind claims the entries whose time plus the retention has passed ([`Limits::delay`],
//! so a changed retention applies to what is stored already) and removes their records,
//! a bounded batch per pass, resting as long as each batch took: acceptance and delivery
//! share the commit thread with the sweep, never wait behind more than one batch of it,
//! and keep at least half of the core it runs on. Files dense with the deletions
//! are compacted by RocksDB itself (the tables are opened with a deletion-triggered
//! compaction), so the space comes back rather than being hidden.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::storage::Error;
use herald_queue::{Batch, Due, DueIndex, Store};

use crate::runner::{Claimed, Handler, Limits, Runner, Wake};
use crate::shutdown::Shutdown;

/// Entries handled per pass: one write batch of at most this many items' deletions.
const BATCH: usize = 256;

/// Longest sleep between looks at an index: an entry armed just after a pass (no write
/// wakes a sweep) is removed at most this late, which keeps retentions of a few seconds
/// exact enough; a look when nothing is due is one seek.
const IDLE_MAX: Duration = Duration::from_secs(1);

/// One kind of expiring record.
pub trait Expiry: Send + Sync + 'static {
    /// Its name in logs and metrics (`emails`, `content`, ...).
    const KIND: &'static str;

    /// Its index.
    const INDEX: DueIndex;

    /// Adds to `batch` what expires the item of `due` (deletions, or a rewrite without
    /// the expired part). The sweep disarms the entry itself. An item that is gone, or
    /// whose record says the entry is stale, adds nothing.
    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error>;
}

/// Runs `expiry` until shutdown: removes what was armed more than `retention` ago.
/// `None` keeps everything (the entries stay armed, and a later retention applies to
/// them).
pub async fn run<E: Expiry>(store: Store, expiry: E, retention: Option<Duration>, mut shutdown: Shutdown) {
    let Some(retention) = retention else {
        shutdown.triggered().await;
        return;
    };
    let limits = Limits {
        claims_max: BATCH,
        page: BATCH,
        delay: retention,
        ..Limits::new(IDLE_MAX)
    };
    let runner = Runner::new(E::KIND, store.clone(), E::INDEX, limits, Wake::default());
    let sweep = Sweep {
        store,
        expiry: Arc::new(expiry),
    };
    runner.run(sweep, shutdown).await;
}

/// Expires `due`'s items in one batch and commits it; returns how many. Blocks. An item
/// that cannot be read is left as it is and its entry dropped (said in the log once),
/// rather than failing every later pass.
pub fn expire_now<E: Expiry>(store: &Store, expiry: &E, due: &[&Due]) -> Result<usize, Error> {
    let mut batch = Batch::new();
    for entry in due {
        let mut own = Batch::new();
        match expiry.expire(store, entry, &mut own) {
            Ok(()) => batch.extend(own),
            Err(error) => {
                tracing::error!(kind = E::KIND, key = ?entry.key, %error, "cannot expire a record; leaving it");
            }
        }
        E::INDEX.disarm(&mut batch, entry.at, &entry.key);
    }
    store.commit(batch).wait()?;
    metrics::counter!("herald_expired_total", "kind" => E::KIND).increment(due.len() as u64);
    Ok(due.len())
}

/// The runner's handler for one kind.
struct Sweep<E> {
    store: Store,
    expiry: Arc<E>,
}

impl<E: Expiry> Handler for Sweep<E> {
    async fn handle(&mut self, due: Vec<Claimed>) {
        let (store, expiry) = (self.store.clone(), Arc::clone(&self.expiry));
        let started = Instant::now();
        // The claims drop with `due`, after the write.
        let swept = tokio::task::spawn_blocking(move || {
            let entries: Vec<&Due> = due.iter().map(Claimed::due).collect();
            expire_now(&store, expiry.as_ref(), &entries)
        });
        match swept.await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(kind = E::KIND, %error, "expiry failed; retrying"),
            Err(error) => tracing::error!(kind = E::KIND, %error, "an expiry task failed"),
        }
        // Rest as long as the batch took: a backlog is swept with at most half of one
        // core, and acceptance and delivery keep the rest.
        tokio::time::sleep(started.elapsed()).await;
    }
}
