//! The node's own storage: the RocksDB this node's spool lives in, and on a node on its
//! own every record besides ([`super::Backends::rocksdb`]). Above storage it is reached
//! only through [`Node`]: commits of staged changes, the spool's due queue, and what the
//! operator sees of the disk (health, admission, table sizes); no table or key.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use herald_queue::{Health, SharedClock, Spool, Store, StoreOptions, TableSize};

use super::due::{self, DueQueue};
use super::{Change, Error, Refusal};
use crate::shutdown::Shutdown;

/// The key in the node's metadata naming the database its records are kept in.
const RECORDS_SHARED: &[u8] = b"records.postgres";

/// Where and how the node's store is opened.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The store's directory (`<data_dir>/spool`).
    pub path: PathBuf,
    /// The clock records and ids are stamped with.
    pub clock: SharedClock,
    /// `[spool] min_free_space`: below it, new data is refused.
    pub min_free_space: u64,
    /// `[spool] commit_queue_max`: writes waiting for the commit thread, at most.
    pub commit_queue_max: usize,
}

/// The node's own storage. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Node {
    store: Store,
}

impl Node {
    /// Opens the node's store: refuses one a newer build wrote ([`super::format`]),
    /// opens the spool (resuming the mail it holds) and does what an upgrade must do
    /// before anything is served ([`super::migrations`]). Blocks: run it off
    /// the async workers.
    pub fn open(options: NodeOptions) -> anyhow::Result<(Node, Spool)> {
        let mut store_options = StoreOptions::new(options.path);
        store_options.clock = options.clock;
        store_options.min_free_space = options.min_free_space;
        store_options.commit.queue_max = options.commit_queue_max;
        let store = Store::open(store_options)?;
        super::format::check(&store)?;
        let (spool, recovery) = Spool::open(store.clone())?;
        if recovery.messages > 0 {
            tracing::info!(
                messages = recovery.messages,
                recipients = recovery.recipients,
                "resuming spooled mail"
            );
        }
        super::migrations::at_start(&store).context("cannot migrate the store")?;
        Ok((Node { store }, spool))
    }

    /// The node over `store`, opened already (tests and benchmarks open their own).
    pub fn new(store: Store) -> Node {
        Node { store }
    }

    /// The RocksDB store itself: for the stores built on it, and for tests and
    /// benchmarks that look inside. Code above storage goes through the methods above.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Commits `change` durably: its writes land at once or not at all. Blocks.
    pub fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.store.commit(change.into_local()?).wait()?)
    }

    /// Runs what an upgrade leaves to do beside serving ([`super::migrations`]) until
    /// done or shutdown.
    pub fn migrate_in_background(&self, spool: Spool, shutdown: Shutdown) -> impl Future<Output = ()> + Send + 'static {
        super::migrations::in_background(self.store.clone(), spool, shutdown)
    }

    /// The spool's messages by the time they are due (scheduled sends, retries), for the
    /// delivery scheduler's runner; a malformed entry is disarmed through it.
    pub fn spool_queue(&self) -> Arc<dyn DueQueue> {
        due::rocks(&self.store, Spool::DUE)
    }

    /// Records that this node keeps its records in the database at `url` (redacted): a
    /// later start without it must refuse rather than start over on the node's own.
    pub fn mark_records_shared(&self, url: &str) -> Result<(), Error> {
        let mut batch = herald_queue::Batch::new();
        batch.put_raw(
            herald_queue::Table::META,
            RECORDS_SHARED.to_vec(),
            url.as_bytes().to_vec(),
        );
        Ok(self.store.commit(batch).wait()?)
    }

    /// The database this node's records were kept in, if they ever were (redacted).
    pub fn records_shared(&self) -> Result<Option<String>, Error> {
        Ok(self
            .store
            .get_raw(herald_queue::Table::META, RECORDS_SHARED)?
            .map(|url| String::from_utf8_lossy(&url).into_owned()))
    }

    /// The disk's room, as last read.
    pub fn health(&self) -> Health {
        self.store.health()
    }

    /// `Ok` when there is room to accept new data; the refusal says why not.
    pub fn admit(&self) -> Result<(), Refusal> {
        self.store.admit()
    }

    /// Each table's room on disk and in memory (cheap estimates).
    pub fn table_sizes(&self) -> Vec<TableSize> {
        self.store.table_sizes()
    }
}
