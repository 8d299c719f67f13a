//! Where imports' expiry is kept (`[retention] imports`): a finished import (completed or
//! failed) leaves with its refused rows that long after it finished, by an entry in
//! [`Table::IMPORT_EXPIRY`] armed in the write that finishes it. Its uploaded file is
//! already gone: the worker removes it when it finishes. The import records themselves
//! are the contact store's ([`crate::contacts::store`]).

use herald_queue::{Batch, Due, DueIndex, Id, Store, Table, Timestamp};

use crate::storage::Error;
use crate::storage::expiry::Expiry;

const INDEX: DueIndex = DueIndex::new(Table::IMPORT_EXPIRY);

/// The key of `import`'s record (and the prefix of its refused rows): team, then id.
fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// Arms, in `batch`, the expiry of the import `id` of `team_id`, finished at `finished`.
pub(crate) fn arm(batch: &mut Batch, team_id: Id, id: Id, finished: Timestamp) {
    INDEX.arm(batch, finished, &key(team_id, id));
}

/// Finished imports.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Imports;

impl Expiry for Imports {
    const KIND: &'static str = "imports";
    const INDEX: DueIndex = INDEX;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        if due.key.len() == 32 {
            batch.delete_raw(Table::CONTACT_IMPORTS, due.key.clone());
            batch.delete_prefix(Table::IMPORT_ERRORS, &due.key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
