//! `[retention] request_logs`: logs leave when their time is up, on the due-time runner
//! ([`crate::retention`]); the entries of the index older builds kept are moved into its
//! own by [`migrate`], in the background at start.

use herald_queue::{Batch, Due, DueIndex, Id, Scan, Store, Table};

use super::{EXPIRY, key as log_key};
use crate::logs::RequestLog;
use crate::storage::expiry::Expiry;

/// Old expiry entries moved per batch at start.
const MIGRATE_BATCH: usize = 1_000;

/// `[retention] request_logs`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Logs;

impl Expiry for Logs {
    const KIND: &'static str = "request_logs";
    const INDEX: DueIndex = EXPIRY;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), crate::storage::Error> {
        batch.delete::<RequestLog>(&due.key);
        Ok(())
    }
}

/// Moves the entries of [`Table::LOG_EXPIRY`] (log id, then team) into the due index, a
/// batch at a time; returns how many. Safe to stop and run again: each batch moves its
/// entries whole.
pub(crate) fn migrate(store: &Store) -> Result<usize, crate::storage::Error> {
    let mut moved = 0;
    loop {
        let entries = store.scan_raw(
            Table::LOG_EXPIRY,
            Scan {
                limit: MIGRATE_BATCH,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        for (key, _) in &entries {
            if let (Some(id), Some(team)) = (
                key.get(..16).and_then(Id::from_slice),
                key.get(16..).and_then(Id::from_slice),
            ) {
                let at = id.timestamp().unwrap_or_else(|| store.now());
                EXPIRY.arm(&mut batch, at, &log_key(team, id));
                moved += 1;
            }
            batch.delete_raw(Table::LOG_EXPIRY, key.clone());
        }
        if !batch.is_empty() {
            store.commit(batch).wait()?;
        }
        if entries.len() < MIGRATE_BATCH {
            return Ok(moved);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use herald_queue::Timestamp;

    use super::*;
    use crate::logs::{RequestLogStore, RocksRequestLogs};
    use crate::storage::expiry::expire_now;

    #[test]
    fn logs_expire_after_the_retention_and_old_index_entries_are_moved_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let team = store.next_id();
        let logs = RocksRequestLogs::new(store.clone());
        let log = |store: &Store| RequestLog {
            id: store.next_id(),
            team_id: team,
            api_key_id: team,
            method: "GET".into(),
            path: "/domains".into(),
            query: None,
            status: 200,
            user_agent: None,
            duration_ms: 1,
            request_body: None,
            response_body: None,
            created_at: store.now(),
        };
        // Two logs as an older build wrote them: the expiry entry is log id then team.
        for _ in 0..2 {
            let old = log(&store);
            let mut batch = Batch::new();
            batch.put(log_key(team, old.id), &old).expect("encode");
            batch.put_raw(
                Table::LOG_EXPIRY,
                [old.id.as_bytes().as_slice(), team.as_bytes()].concat(),
                Vec::new(),
            );
            store.commit(batch).wait().expect("commit");
        }
        logs.record(&log(&store));
        clock.advance(Duration::from_secs(3600));
        logs.record(&log(&store));
        // `record` does not wait; a synced commit after it flushes the queue in order.
        store.commit(Batch::new()).wait().expect("commit");
        assert_eq!(migrate(&store).expect("migrate"), 2);
        assert!(
            store
                .scan_raw(Table::LOG_EXPIRY, Scan::prefix(b""))
                .expect("scan")
                .is_empty()
        );

        // With a 90-minute retention, an hour and a half later the first three are due.
        clock.advance(Duration::from_secs(1800));
        let horizon = Timestamp::from_millis(store.now().as_millis() - 5_400_000);
        let due = EXPIRY.due(&store, horizon, None, 100).expect("due");
        assert_eq!(due.len(), 3);
        let entries: Vec<&Due> = due.iter().collect();
        assert_eq!(expire_now(&store, &Logs, &entries).expect("expire"), 3);
        let left = store.scan::<RequestLog>(Scan::prefix(team.as_bytes())).expect("scan");
        assert_eq!(left.len(), 1, "only the newest");
        assert_eq!(EXPIRY.due(&store, store.now(), None, 100).expect("due").len(), 1);
    }
}
