//! `herald store copy`'s copies, store by store: records written through the RocksDB
//! stores of a real node in a temp directory are copied by [`herald::storage::copy::run`]
//! into a private PostgreSQL (`util/postgres.rs`) and read back through the PostgreSQL
//! stores equal, with the counts the copy reports. And the copy's guards: a database that
//! holds records is refused, a copy that failed part way is cleared and done again, and a
//! data directory copied once refuses a second copy.
//!
//! The whole command over its binary, from a herald served on RocksDB to one served on
//! PostgreSQL, is `tests/store_copy_cli.rs`'s.

#[path = "store_copy/activity.rs"]
mod activity;
#[path = "store_copy/audience.rs"]
mod audience;
#[path = "util/conformance.rs"]
#[allow(dead_code)]
mod conformance;
#[path = "store_copy/content.rs"]
mod content;
#[path = "store_copy/emails.rs"]
mod emails;
#[path = "util/postgres.rs"]
mod postgres;
#[path = "store_copy/records.rs"]
mod records;

use herald::storage::copy::{Copied, Refused};
use herald::storage::postgres::Postgres;
use herald::storage::{Backends, Node, NodeOptions};
use herald_queue::{Spool, Store};

/// A node on RocksDB in a temp directory, its stores, and a new database to copy into.
pub struct Copying {
    /// The node's data directory.
    pub dir: tempfile::TempDir,
    /// The node.
    pub node: Node,
    /// Its spool (where an email's content may be kept).
    pub spool: Spool,
    /// The node's stores, on RocksDB: where a test writes what is to be copied.
    pub local: Backends,
    /// The database copied into.
    pub db: Postgres,
}

impl Copying {
    /// A new node and database.
    // Not `Default`: it opens a node and a database, which no default value should.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Copying {
        let dir = tempfile::tempdir().expect("tempdir");
        let (node, spool) = Node::open(NodeOptions {
            path: dir.path().join("spool"),
            clock: std::sync::Arc::new(herald_queue::SystemClock),
            min_free_space: 0,
            commit_queue_max: 1024,
        })
        .expect("open the node");
        let local = Backends::rocksdb(&node);
        let db = conformance::postgres();
        Copying {
            dir,
            node,
            spool,
            local,
            db,
        }
    }

    /// Where ids and times come from.
    pub fn ids(&self) -> &Store {
        self.node.store()
    }

    /// Copies the node's records into the database; what the copy reported and the
    /// stores on the database, to read them back through.
    pub fn copy(&self) -> (Copied, Backends) {
        let copied = herald::storage::copy::run(&self.node, &self.spool, &self.db).expect("copy");
        (copied, Backends::postgres(&self.node, &self.db))
    }

    /// Copies, expecting a refusal.
    pub fn refused(&self) -> Refused {
        herald::storage::copy::run(&self.node, &self.spool, &self.db).expect_err("the copy is refused")
    }
}

/// The count the copy reported for `kind`, failing if it reported none.
pub fn count(copied: &Copied, kind: &str) -> u64 {
    copied
        .counts
        .iter()
        .find(|(known, _)| *known == kind)
        .unwrap_or_else(|| panic!("no count for {kind} in {:?}", copied.counts))
        .1
}
