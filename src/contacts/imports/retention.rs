//! `[retention] imports`: a finished import (completed or failed) leaves with its refused
//! rows that long after it finished. Its uploaded file is already gone: the worker removes
//! it when it finishes.

use crate::storage::Error;
use herald_queue::{Batch, Due, DueIndex, Id, Store, Table, Timestamp};

use super::ContactImport;
use crate::retention::Expiry;

const INDEX: DueIndex = DueIndex::new(Table::IMPORT_EXPIRY);

/// The key of `import`'s record (and the prefix of its refused rows): team, then id.
fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// Arms, in `batch`, the expiry of `import`, finished at `finished`.
pub fn arm(batch: &mut Batch, import: &ContactImport, finished: Timestamp) {
    INDEX.arm(batch, finished, &key(import.team_id, import.id));
}

/// Arms the expiry of every finished import, at start: those finished before this
/// build armed none (arming one again changes nothing).
pub fn arm_finished(store: &Store) -> Result<(), Error> {
    let mut batch = Batch::new();
    for (_, import) in store.scan::<ContactImport>(herald_queue::Scan::prefix(&[]))? {
        if let (true, Some(finished)) = (import.status.is_final(), import.completed_at) {
            arm(&mut batch, &import, finished);
        }
    }
    if batch.is_empty() {
        return Ok(());
    }
    Ok(store.commit(batch).wait()?)
}

/// Finished imports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Imports;

impl Expiry for Imports {
    const KIND: &'static str = "imports";
    const INDEX: DueIndex = INDEX;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        if due.key.len() == 32 {
            batch.delete::<ContactImport>(&due.key);
            batch.delete_prefix(Table::IMPORT_ERRORS, &due.key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
