//! Storage: the layer under the services that alone reads and writes tables. Its pieces
//! are the node's own store ([`Node`]: opened, its [`format`] checked, [`migrations`]
//! run), the stores the services are assembled from ([`Backends`]), the unit of work
//! ([`Change`]), record [`locks`], pages of lists ([`page`]), queues of items waiting for
//! a time ([`due`]) and the expiry of records ([`expiry`]); the stores themselves live
//! beside the records they keep (the `store.rs` files and `store/` folders).
//!
//! A service that needs writes of two stores to land together (a contact's change and
//! the counter it moves, say) stages them into one [`Change`] and hands it to the store
//! that commits: on RocksDB one synced batch, as every write has always been, so the
//! durability contract is untouched; on a shared backend the seam where the node's
//! writes part from the shared ones.

mod backends;
pub mod copy;
pub mod due;
mod error;
pub mod expiry;
pub mod format;
pub mod locks;
pub mod migrations;
mod node;
pub mod page;
pub mod postgres;

pub use backends::Backends;
pub use error::{Error, Refusal};
pub use node::{Node, NodeOptions};

use std::future::Future;
use std::pin::Pin;

use herald_queue::Batch;

/// A commit on its way: resolves once the write is durable (or refused).
pub type Committing = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// Writes staged to land together with a store's own. Opaque outside storage: a service
/// stages into it through the stores' and counters' functions and passes it on.
///
/// A change holds the node's writes (one RocksDB batch) and, where records are shared,
/// statements for the database. Committing it runs the statements first, in one
/// transaction, then writes the batch: a shared record never lags the node's write that
/// reports it, and a statement that ran without its batch (the node failed between the
/// two) is run again when the work is redone, which statements allow (they are upserts
/// and deletes). Issue 43 makes the two commits act as one.
#[derive(Debug)]
pub struct Change {
    batch: Batch,
    shared: Vec<postgres::Statement>,
}

impl Change {
    /// Nothing staged.
    pub fn new() -> Change {
        Change {
            batch: Batch::new(),
            shared: Vec::new(),
        }
    }

    /// Stages `other`'s writes after this change's own.
    pub fn extend(&mut self, other: Change) {
        self.batch.extend(other.batch);
        self.shared.extend(other.shared);
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty() && self.shared.is_empty()
    }

    /// The node's writes, for the store that commits them or stages more.
    pub(crate) fn batch(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// Stages a statement for the shared database.
    pub(crate) fn stage_shared(&mut self, statement: postgres::Statement) {
        self.shared.push(statement);
    }

    /// Commits the staged statements, if any, and answers the node's writes, for the
    /// store that commits them. Blocks while statements run.
    pub(crate) fn into_local(self) -> Result<Batch, Error> {
        postgres::commit_statements(&self.shared)?;
        Ok(self.batch)
    }

    /// Runs `stage` on a change that holds `batch`'s writes and leaves its writes in
    /// `batch`: for stores staging into a write the spool makes (a delivery outcome, a
    /// cancellation), whose callbacks hand out the batch itself. Moves, never copies.
    /// Statements staged meanwhile are committed before this returns, ahead of the
    /// spool's write.
    pub(crate) fn within<T>(batch: &mut Batch, stage: impl FnOnce(&mut Change) -> T) -> Result<T, Error> {
        let mut change = Change {
            batch: std::mem::take(batch),
            shared: Vec::new(),
        };
        let answer = stage(&mut change);
        *batch = change.batch;
        postgres::commit_statements(&change.shared)?;
        Ok(answer)
    }
}

impl Default for Change {
    fn default() -> Change {
        Change::new()
    }
}
