//! Retention: records leave the store when `[retention]` says their time is up.
//!
//! Each kind of record that expires keeps a due index of `(time its retention counts
//! from, item key)` entries, armed in the same batch as the write that starts the count
//! (an email's final outcome, a webhook message's last attempt, a request). A runner per
//! kind claims the entries whose time plus the retention has passed ([`Limits::delay`],
//! so a changed retention applies to what is stored already) and has their store expire
//! them ([`Sweep`]), a bounded batch per pass, resting as long as each batch took:
//! acceptance and delivery share the commit thread with the sweep, never wait behind
//! more than one batch of it, and keep at least half of the core it runs on. Files dense
//! with the deletions are compacted by RocksDB itself (the tables are opened with a deletion-triggered
//! compaction), so the space comes back rather than being hidden.

use std::sync::Arc;
use std::time::{Duration, Instant};

use herald_queue::Due;

use crate::runner::{Claimed, Handler, Limits, Runner, Wake};
use crate::shutdown::Shutdown;
use crate::storage::expiry::Sweep;

/// Entries handled per pass: one write batch of at most this many items' deletions.
const BATCH: usize = 256;

/// Longest sleep between looks at an index: an entry armed just after a pass (no write
/// wakes a sweep) is removed at most this late, which keeps retentions of a few seconds
/// exact enough; a look when nothing is due is one seek.
const IDLE_MAX: Duration = Duration::from_secs(1);

/// Runs `sweep` until shutdown: expires what was armed more than `retention` ago.
/// `None` keeps everything (the entries stay armed, and a later retention applies to
/// them).
pub async fn run(sweep: Arc<dyn Sweep>, retention: Option<Duration>, mut shutdown: Shutdown) {
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
    let runner = Runner::new(sweep.kind(), sweep.queue(), limits, Wake::default());
    runner.run(Sweeper { sweep }, shutdown).await;
}

/// The runner's handler for one kind.
struct Sweeper {
    sweep: Arc<dyn Sweep>,
}

impl Handler for Sweeper {
    async fn handle(&mut self, due: Vec<Claimed>) {
        let sweep = Arc::clone(&self.sweep);
        let kind = sweep.kind();
        let started = Instant::now();
        // The claims drop with `due`, after the write.
        let swept = tokio::task::spawn_blocking(move || {
            let entries: Vec<&Due> = due.iter().map(Claimed::due).collect();
            sweep.expire(&entries)
        });
        match swept.await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(kind, %error, "expiry failed; retrying"),
            Err(error) => tracing::error!(kind, %error, "an expiry task failed"),
        }
        // Rest as long as the batch took: a backlog is swept with at most half of one
        // core, and acceptance and delivery keep the rest.
        tokio::time::sleep(started.elapsed()).await;
    }
}
