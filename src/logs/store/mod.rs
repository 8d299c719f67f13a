//! Where request logs are kept. [`RequestLogStore`] is what the HTTP adapter writes
//! through and `GET /logs` and the dashboard read; [`RocksRequestLogs`] keeps them in the
//! node's RocksDB, keyed by team then log id, each with its entry in the expiry index
//! that `[retention] request_logs` walks; [`PostgresRequestLogs`] keeps them in
//! PostgreSQL.
//!
//! The keys and encodings of [`Table::LOGS`] and [`Table::LOG_DUE`] are this module's
//! alone.

mod copy;
mod expiry;
mod postgres;

use std::sync::Arc;

use herald_queue::{Batch, DueIndex, Id, Record, Scan, Store, Table};

use super::model::RequestLog;
use crate::storage::Error;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;

pub use copy::copy;
pub(crate) use expiry::migrate;
pub use postgres::PostgresRequestLogs;

/// Logs by the time of their request, for `[retention] request_logs`.
const EXPIRY: DueIndex = DueIndex::new(Table::LOG_DUE);

/// Request logs by team.
pub trait RequestLogStore: Send + Sync + std::fmt::Debug {
    /// Queues `log` for writing. Nobody waits for it: a log lost in a crash is
    /// acceptable, slowing every request down by a durable write is not; a log that
    /// cannot be written is reported in the log.
    fn record(&self, log: &RequestLog);
    /// The log `id` of `team_id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<RequestLog>, Error>;
    /// One page of `team_id`'s logs, newest first, and whether more lie beyond it.
    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<RequestLog>, bool), Error>;
    /// Up to `limit` of `team_id`'s newest logs, newest first.
    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<RequestLog>, Error>;
    /// Erases the deleted team `team_id`'s logs, durably: `true` while more is left.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
    /// The logs' retention (`[retention] request_logs`), for the retention engine.
    fn expiry(&self) -> Arc<dyn Sweep>;
}

impl Record for RequestLog {
    const TABLE: Table = Table::LOGS;
}

/// The key of the log `id` of `team_id`.
fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// Request logs in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksRequestLogs {
    store: Store,
}

impl RocksRequestLogs {
    /// Request logs in `store`.
    pub fn new(store: Store) -> RocksRequestLogs {
        RocksRequestLogs { store }
    }
}

impl RequestLogStore for RocksRequestLogs {
    fn record(&self, log: &RequestLog) {
        let mut batch = Batch::new();
        let key = key(log.team_id, log.id);
        EXPIRY.arm(&mut batch, log.created_at, &key);
        match batch.put(key, log) {
            Ok(()) => drop(self.store.commit(batch)),
            Err(error) => tracing::warn!(%error, "cannot encode a request log"),
        }
    }

    fn get(&self, team_id: Id, id: Id) -> Result<Option<RequestLog>, Error> {
        Ok(self.store.get::<RequestLog>(key(team_id, id))?)
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<RequestLog>, bool), Error> {
        Ok(page.load::<RequestLog>(&self.store, team_id.as_bytes())?)
    }

    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<RequestLog>, Error> {
        let found = self.store.scan::<RequestLog>(Scan {
            prefix: team_id.as_bytes(),
            after: None,
            reverse: true,
            limit,
        })?;
        Ok(found.into_iter().map(|(_, log)| log).collect())
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone, however many there are. Their
        // expiry entries find nothing when they fall due.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::LOGS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        crate::storage::expiry::sweep(&self.store, expiry::Logs)
    }
}
