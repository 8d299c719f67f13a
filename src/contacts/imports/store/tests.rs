use std::time::Duration;

use herald_queue::Batch;

use super::*;
use crate::contacts::imports::ContactImport;
use crate::contacts::imports::{Columns, ImportCounts, ImportError, ImportStatus, OnConflict};
use crate::contacts::{AudienceStore, RocksContacts};

fn import(store: &Store, team: Id, status: ImportStatus, finished: Option<Timestamp>) -> ContactImport {
    ContactImport {
        id: store.next_id(),
        team_id: team,
        status,
        created_at: store.now(),
        completed_at: finished,
        counts: ImportCounts::default(),
        columns: Columns {
            email: 0,
            first_name: None,
            last_name: None,
            unsubscribed: None,
            properties: Vec::new(),
        },
        on_conflict: OnConflict::Upsert,
        segments: Vec::new(),
        topics: Vec::new(),
        offset: 0,
        line: 1,
        failure: None,
    }
}

#[test]
fn a_finished_import_leaves_with_its_refused_rows_and_a_running_one_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
    let audience = RocksContacts::new(store.clone());
    let team = store.next_id();
    let done = import(&store, team, ImportStatus::Completed, Some(store.now()));
    let running = import(&store, team, ImportStatus::InProgress, None);
    audience.put_import(&done).expect("put");
    audience.put_import(&running).expect("put");
    let mut batch = Batch::new();
    for row in 1..=3u64 {
        let error = ImportError {
            row,
            line: row + 1,
            reason: "not an address".to_owned(),
        };
        let key = [key(team, done.id).as_slice(), &row.to_be_bytes()].concat();
        batch.put(key, &error).expect("stage");
    }
    store.commit(batch).wait().expect("commit");
    assert_eq!(audience.import_errors(&done, 0, 10).expect("errors").len(), 3);

    clock.advance(Duration::from_secs(31 * 24 * 3600));
    // Due thirty days after it finished (what `[retention] imports` defaults to).
    let horizon = Timestamp::from_millis(store.now().as_millis() - 30 * 24 * 3600 * 1000);
    let due = INDEX.due(&store, horizon, None, 10).expect("due");
    assert_eq!(due.len(), 1, "only the finished one");
    let entries: Vec<&Due> = due.iter().collect();
    crate::storage::expiry::expire_now(&store, &Imports, &entries).expect("expire");
    assert_eq!(audience.import(team, done.id).expect("read"), None);
    assert!(audience.import_errors(&done, 0, 10).expect("errors").is_empty());
    assert!(audience.import(team, running.id).expect("read").is_some());
}
