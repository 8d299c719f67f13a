//! An atomic set of writes: everything in a [`Batch`] lands in one RocksDB write batch
//! with a synced WAL, or none of it does.

use crate::error::Error;
use crate::table::{self, Record, Table};

/// One write.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Put {
        table: Table,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        table: Table,
        key: Vec<u8>,
    },
    /// Every key in `from..to`.
    DeleteRange {
        table: Table,
        from: Vec<u8>,
        to: Vec<u8>,
    },
    /// Adds a little-endian `u64` to a counter (a merge in a table that counts).
    Add {
        table: Table,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    /// A put of an empty value that many batches repeat alike; the commit thread writes
    /// it once and skips the repeats while nothing has been deleted from its table.
    Mark {
        table: Table,
        key: Vec<u8>,
    },
}

impl Op {
    /// The table written.
    pub(crate) fn table(&self) -> Table {
        match self {
            Op::Put { table, .. }
            | Op::Delete { table, .. }
            | Op::DeleteRange { table, .. }
            | Op::Add { table, .. }
            | Op::Mark { table, .. } => *table,
        }
    }
}

/// Writes to commit together. Build it on the caller's thread (encoding happens here, off
/// the commit thread), then hand it to [`Store::commit`](crate::Store::commit) or pass it
/// as the extra records of an enqueue.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub(crate) ops: Vec<Op>,
    bytes: usize,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }

    /// Puts a typed record under `key` in its table.
    pub fn put<R: Record>(&mut self, key: impl AsRef<[u8]>, record: &R) -> Result<(), Error> {
        let value = table::encode(R::TABLE, record)?;
        self.put_raw(R::TABLE, key.as_ref().to_vec(), value);
        Ok(())
    }

    /// Deletes the record of type `R` under `key`.
    pub fn delete<R: Record>(&mut self, key: impl AsRef<[u8]>) {
        self.delete_raw(R::TABLE, key.as_ref().to_vec());
    }

    /// Puts raw bytes; for tables whose values are not records (messages, the due index).
    pub fn put_raw(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>) {
        self.bytes += key.len() + value.len();
        self.ops.push(Op::Put { table, key, value });
    }

    /// Puts an empty value under `key`, as one of the entries that many batches write
    /// alike (the entry that expires a day of counters, armed by every event counted that
    /// day). Reads see it as any put; the commit thread writes it once and skips its
    /// repeats until something is deleted from `table`, so a hot entry costs one write,
    /// not one per batch.
    pub fn mark(&mut self, table: Table, key: Vec<u8>) {
        self.bytes += key.len();
        self.ops.push(Op::Mark { table, key });
    }

    /// Deletes a raw key.
    pub fn delete_raw(&mut self, table: Table, key: Vec<u8>) {
        self.bytes += key.len();
        self.ops.push(Op::Delete { table, key });
    }

    /// Adds `n` to the counter under `key` in [`Table::COUNTERS`], without reading it:
    /// RocksDB sums the additions (a merge operator), so concurrent writers never race.
    /// Read it back with [`crate::decode_counter`].
    pub fn add(&mut self, key: Vec<u8>, n: u64) {
        self.bytes += key.len() + 8;
        self.ops.push(Op::Add {
            table: Table::COUNTERS,
            key,
            value: n.to_le_bytes().to_vec(),
        });
    }

    /// Deletes every key of `table` that starts with `prefix`, as one range tombstone
    /// (no read, whatever their number). For erasing a whole key space, such as one
    /// team's records in a table keyed by team first; many small ranges would slow
    /// reads, so deleting records one by one stays the rule. A prefix that is empty or
    /// all `0xff` bytes bounds no range, and deletes nothing.
    pub fn delete_prefix(&mut self, table: Table, prefix: &[u8]) {
        let Some(to) = crate::store::prefix_successor(prefix) else {
            return;
        };
        self.bytes += prefix.len() + to.len();
        self.ops.push(Op::DeleteRange {
            table,
            from: prefix.to_vec(),
            to,
        });
    }

    /// Appends every write of `other`, after this batch's own.
    pub fn extend(&mut self, other: Batch) {
        self.bytes += other.bytes;
        self.ops.extend(other.ops);
    }

    /// Number of writes.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch holds no writes.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Bytes of keys and values held.
    pub fn size(&self) -> usize {
        self.bytes
    }
}
