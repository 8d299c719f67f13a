//! Builds the counters once for the events recorded before they existed. The first start
//! of a build with counters notes a cutoff (its start time) and drops the daily counters
//! they replace; events from the cutoff on are counted as they happen, and this pass
//! counts those before it, reading the status table a page at a time and each email's
//! timeline. Each page's counts and the position reached are one write, so a pass cut
//! short resumes where it stopped and counts nothing twice.

use herald_queue::{Batch, Scan, Store, Table, Timestamp, decode_record};
use serde::{Deserialize, Serialize};

use super::{CounterStore, RocksCounters};
use crate::counters::Metric;
use crate::emails::EmailState;
use crate::emails::record::{EmailEvent, EmailStatus};
use crate::shutdown::Shutdown;
use crate::storage::{Change, Error};

/// The key in [`Table::META`] of the pass's progress.
const PROGRESS: &[u8] = b"counters.backfill";

/// Emails read per write.
const PAGE: usize = 1_000;

/// How far the pass is.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Progress {
    /// Events from this time on are counted as they happen.
    cutoff: u64,
    /// The last status key counted.
    after: Option<Vec<u8>>,
    /// Whether the pass has finished.
    done: bool,
}

fn progress(store: &Store) -> Result<Option<Progress>, Error> {
    Ok(store
        .get_raw(Table::META, PROGRESS)?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

fn save(batch: &mut Batch, progress: &Progress) {
    if let Ok(bytes) = serde_json::to_vec(progress) {
        batch.put_raw(Table::META, PROGRESS.to_vec(), bytes);
    }
}

/// Notes the cutoff on the first start with counters, before anything is counted, and
/// drops the daily counters of earlier builds. Run while the store opens.
pub(crate) fn prepare(store: &Store) -> Result<(), Error> {
    if progress(store)?.is_some() {
        return Ok(());
    }
    let mut batch = Batch::new();
    // The earlier daily counters: a few keys per team and day, none of them ours yet.
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = store.scan_raw(
            Table::COUNTERS,
            Scan {
                after: after.as_deref(),
                limit: PAGE,
                ..Scan::prefix(b"")
            },
        )?;
        for (key, _) in &page {
            if key.get(16) != Some(&super::METRICS) {
                batch.delete_raw(Table::COUNTERS, key.clone());
            }
        }
        if page.len() < PAGE {
            break;
        }
        after = page.last().map(|(key, _)| key.clone());
    }
    save(
        &mut batch,
        &Progress {
            cutoff: store.now().as_millis(),
            after: None,
            done: false,
        },
    );
    Ok(store.commit(batch).wait()?)
}

/// Counts an email's events from before `cutoff` into `batch`.
fn count_email(
    store: &Store,
    counters: &dyn CounterStore,
    batch: &mut Change,
    status: &EmailStatus,
    cutoff: Timestamp,
) -> Result<(), Error> {
    let (mut opened, mut clicked) = (false, false);
    let mut after: Option<Vec<u8>> = None;
    loop {
        let events = store.scan::<EmailEvent>(Scan {
            after: after.as_deref(),
            limit: PAGE,
            ..Scan::prefix(status.id.as_bytes())
        })?;
        for (_, event) in &events {
            if event.created_at >= cutoff {
                continue;
            }
            let human = event.data["machine"] != serde_json::Value::Bool(true);
            let (team, from, at) = (status.team_id, status.from.as_str(), event.created_at);
            match event.kind {
                EmailState::Opened | EmailState::Clicked if !human => {}
                EmailState::Opened => {
                    counters.count(batch, team, from, at, Metric::Opened);
                    if !std::mem::replace(&mut opened, true) {
                        counters.count(batch, team, from, at, Metric::UniqueOpened);
                    }
                }
                EmailState::Clicked => {
                    counters.count(batch, team, from, at, Metric::Clicked);
                    if !std::mem::replace(&mut clicked, true) {
                        counters.count(batch, team, from, at, Metric::UniqueClicked);
                    }
                }
                kind => counters.count(batch, team, from, at, Metric::of(kind, &event.data)),
            }
        }
        if events.len() < PAGE {
            return Ok(());
        }
        after = events.last().map(|(key, _)| key.clone());
    }
}

/// Runs the pass to its end (or to shutdown); answers how many emails it counted.
pub(crate) fn run(store: &Store, shutdown: &Shutdown) -> Result<usize, Error> {
    let Some(mut state) = progress(store)? else {
        return Ok(0);
    };
    let cutoff = Timestamp::from_millis(state.cutoff);
    // A migration of this node's own store: its counters are in the same store.
    let counters = RocksCounters::new(store.clone());
    let mut counted = 0;
    while !state.done && !shutdown.is_triggered() {
        let page = store.scan_raw(
            Table::EMAIL_STATUS,
            Scan {
                after: state.after.as_deref(),
                limit: PAGE,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        for (_, bytes) in &page {
            let Ok(status) = decode_record::<EmailStatus>(bytes) else {
                continue;
            };
            // Emails accepted from the cutoff on are counted as they go.
            if status.id.timestamp().is_some_and(|at| at >= cutoff) {
                continue;
            }
            Change::within(&mut batch, |change| {
                count_email(store, &counters, change, &status, cutoff)
            })??;
            counted += 1;
        }
        state.done = page.len() < PAGE;
        if let Some((key, _)) = page.last() {
            state.after = Some(key.clone());
        }
        save(&mut batch, &state);
        store.commit(batch).wait()?;
    }
    Ok(counted)
}
