//! What a store's copy reads and writes through: [`Copy`].

use herald_queue::{Record, Scan, Spool, Store, Table};

use crate::storage::Error;
use crate::storage::postgres::{Postgres, Statement, commit_statements};

/// Statements run in one transaction at most: large enough that a copy is not a round
/// trip per row, small enough that a transaction stays short.
const CHUNK: usize = 500;

/// Records read from RocksDB at a time.
const SCAN_PAGE: usize = 1000;

/// A copy in progress: where records are read and written, and how many of each kind went
/// in.
pub struct Copy<'a> {
    from: &'a Store,
    spool: &'a Spool,
    to: &'a Postgres,
    pending: Vec<Statement>,
    counts: Vec<(&'static str, u64)>,
}

impl std::fmt::Debug for Copy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Copy")
            .field("pending", &self.pending.len())
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl<'a> Copy<'a> {
    /// A copy from `from` and its `spool` into `to`, nothing written yet.
    pub(super) fn new(from: &'a Store, spool: &'a Spool, to: &'a Postgres) -> Copy<'a> {
        Copy {
            from,
            spool,
            to,
            pending: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Records per kind, in the order first written.
    pub(super) fn into_counts(self) -> Vec<(&'static str, u64)> {
        self.counts
    }

    /// The node's store, to read from.
    pub fn from(&self) -> &'a Store {
        self.from
    }

    /// The node's spool (message bodies an email record keeps there on RocksDB).
    pub fn spool(&self) -> &'a Spool {
        self.spool
    }

    /// The database, to build statements for.
    pub fn to(&self) -> &'a Postgres {
        self.to
    }

    /// Calls `each` with every record of `R`'s table and its key, in key order.
    pub fn each<R: Record>(
        &mut self,
        mut each: impl FnMut(&mut Self, &[u8], R) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.each_raw(R::TABLE, |copy, key, _| {
            let record = copy.from.get::<R>(key)?.ok_or_else(|| Error::Corrupt {
                table: R::TABLE.name(),
                reason: "a record went while it was copied".to_owned(),
            })?;
            each(copy, key, record)
        })
    }

    /// Calls `each` with every key and raw value of `table`, in key order.
    pub fn each_raw(
        &mut self,
        table: Table,
        mut each: impl FnMut(&mut Self, &[u8], &[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = self.from.scan_raw(
                table,
                Scan {
                    prefix: &[],
                    after: after.as_deref(),
                    reverse: false,
                    limit: SCAN_PAGE,
                },
            )?;
            let Some((last, _)) = page.last() else {
                return Ok(());
            };
            let full = page.len() == SCAN_PAGE;
            after = Some(last.clone());
            for (key, value) in &page {
                each(self, key, value)?;
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// Writes `statement`, one record of `kind` (as the counts name it: "teams", "API
    /// keys"). Statements run in order, a chunk at a time, each chunk in a transaction.
    pub fn write(&mut self, kind: &'static str, statement: Statement) -> Result<(), Error> {
        match self.counts.iter_mut().find(|(known, _)| *known == kind) {
            Some((_, count)) => *count += 1,
            None => self.counts.push((kind, 1)),
        }
        self.also(statement)
    }

    /// Writes `statement`, part of a record counted already (a version of a template, an
    /// email's event).
    pub fn also(&mut self, statement: Statement) -> Result<(), Error> {
        self.pending.push(statement);
        if self.pending.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Names `kind` in the counts even when it has no record (an operator reads a zero
    /// as "there were none", a missing line as "not copied").
    pub fn expect(&mut self, kind: &'static str) {
        if !self.counts.iter().any(|(known, _)| *known == kind) {
            self.counts.push((kind, 0));
        }
    }

    /// Runs what is pending.
    pub(super) fn flush(&mut self) -> Result<(), Error> {
        let pending = std::mem::take(&mut self.pending);
        commit_statements(&pending)
    }
}
