//! The one RocksDB instance: open, read, scan and commit.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, DB, Direction, IteratorMode, Options, ReadOptions};

use crate::batch::Batch;
use crate::bodies::{Bodies, Place};
use crate::cache::Memo;
use crate::clock::{SharedClock, SystemClock, Timestamp};
use crate::commit::{Commit, CommitLimits, Committer, Pending};
use crate::disk::DiskGuard;
use crate::error::{Error, Refusal};
use crate::generation::Generations;
use crate::id::{Id, IdGenerator};
use crate::table::{self, Record, Table};

/// Obsolete write-ahead logs kept to be written over by new ones (see [`open_db`]).
const WAL_RECYCLE: usize = 4;

/// How to open a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Directory of the RocksDB instance; created when missing.
    pub path: PathBuf,
    /// New mail is refused while less than this many bytes are free on the file system
    /// holding `path`. Zero disables the check.
    pub min_free_space: u64,
    /// The clock every timestamp and id is read from.
    pub clock: SharedClock,
    /// Commit queue limits.
    pub commit: CommitLimits,
}

impl StoreOptions {
    /// Options with the system clock, default limits and a 256 MiB free-space minimum.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreOptions {
            path: path.into(),
            min_free_space: 256 * 1024 * 1024,
            clock: Arc::new(SystemClock),
            commit: CommitLimits::default(),
        }
    }
}

/// A range of one table to read: keys under `prefix`, strictly after the cursor `after`
/// in the direction of travel, at most `limit` of them.
#[derive(Debug, Clone, Copy)]
pub struct Scan<'a> {
    /// Only keys starting with these bytes.
    pub prefix: &'a [u8],
    /// Start after this key (exclusive); `None` starts at the prefix's first key (or last,
    /// when reversed).
    pub after: Option<&'a [u8]>,
    /// Newest first when keys are time-ordered.
    pub reverse: bool,
    /// Most records returned.
    pub limit: usize,
}

impl<'a> Scan<'a> {
    /// Every key under `prefix`, in key order.
    pub fn prefix(prefix: &'a [u8]) -> Self {
        Scan {
            prefix,
            after: None,
            reverse: false,
            limit: usize::MAX,
        }
    }
}

/// A raw key and value.
pub type RawEntry = (Vec<u8>, Vec<u8>);

/// What the store knows about its own health, for `/healthz` and the logs.
#[derive(Debug, Clone)]
pub struct Health {
    /// Bytes free on the data directory's file system at the last reading.
    pub disk_available: u64,
    /// The configured minimum.
    pub disk_minimum: u64,
}

/// The room one table takes (see [`Store::table_sizes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSize {
    /// The table.
    pub table: Table,
    /// Bytes in its files on disk (SST and blob files).
    pub disk_bytes: u64,
    /// Bytes in its memtables.
    pub memory_bytes: u64,
    /// RocksDB's estimate of its keys.
    pub keys: u64,
}

/// Prefix answers [`Store::has_prefix`] keeps at most (about one per team and table
/// asked); past it, they are forgotten and read again.
const PREFIX_MEMO_MAX: usize = 65_536;

/// A handle to the store. Cloning is cheap; the database closes when the last handle is
/// dropped, after the commit thread has written everything queued.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    // Declared before `db` so it drops first: the commit thread finishes and joins while
    // the database is still open.
    committer: Committer,
    db: Arc<DB>,
    bodies: Arc<Bodies>,
    disk: DiskGuard,
    generations: Arc<Generations>,
    prefixes: Memo<(Table, Vec<u8>), bool>,
    clock: SharedClock,
    ids: IdGenerator,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the store, creating any table this build knows and the
    /// directory is missing.
    pub fn open(options: StoreOptions) -> Result<Store, Error> {
        let path = options.path.clone();
        std::fs::create_dir_all(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let db = open_db(&path)?;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let (bodies, emptied) = Bodies::open(&path, body_counts(&db)?).map_err(io)?;
        let bodies = Arc::new(bodies);
        let db = Arc::new(db);
        let generations = Arc::new(Generations::new());
        let committer = Committer::start(
            Arc::clone(&db),
            Arc::clone(&bodies),
            options.commit,
            Arc::clone(&generations),
        )
        .map_err(io)?;
        let store = Store {
            inner: Arc::new(Inner {
                committer,
                db,
                bodies,
                disk: DiskGuard::new(path.clone(), options.min_free_space),
                generations,
                prefixes: Memo::new(PREFIX_MEMO_MAX),
                clock: options.clock,
                ids: IdGenerator::default(),
                path,
            }),
        };
        if !emptied.is_empty() {
            let mut batch = Batch::new();
            for file in emptied {
                batch.delete_raw(Table::BODY_FILES, crate::bodies::count_key(file).to_vec());
            }
            store.commit(batch).wait()?;
        }
        Ok(store)
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The current time from the injected clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// The injected clock itself, for what keeps time beside the store (rate limits).
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// A new time-ordered id.
    pub fn next_id(&self) -> Id {
        self.inner.ids.next(self.now())
    }

    /// `Ok` when there is room to accept new data; the refusal says why not.
    pub fn admit(&self) -> Result<(), Refusal> {
        self.inner.disk.admit()
    }

    /// The store's health.
    pub fn health(&self) -> Health {
        Health {
            disk_available: self.inner.disk.available(),
            disk_minimum: self.inner.disk.minimum(),
        }
    }

    /// How much room each table takes now: on-disk files (SST and blob) and memtables, and
    /// an estimate of its keys. RocksDB's own estimates, cheap to read.
    pub fn table_sizes(&self) -> Vec<TableSize> {
        Table::ALL
            .iter()
            .filter_map(|&table| {
                let cf = self.inner.db.cf_handle(table.name())?;
                let int = |name: &str| {
                    self.inner
                        .db
                        .property_int_value_cf(&cf, name)
                        .ok()
                        .flatten()
                        .unwrap_or(0)
                };
                let files = if table == Table::MESSAGES {
                    self.inner.bodies.disk_bytes()
                } else {
                    0
                };
                Some(TableSize {
                    table,
                    disk_bytes: int("rocksdb.total-sst-files-size") + int("rocksdb.total-blob-file-size") + files,
                    memory_bytes: int("rocksdb.size-all-mem-tables"),
                    keys: int("rocksdb.estimate-num-keys"),
                })
            })
            .collect()
    }

    /// Compacts all of `table` now, so that deleted records give their space back at once
    /// instead of when RocksDB next compacts their files. Blocks while it runs; for tools
    /// and benchmarks (RocksDB compacts files dense with deletions by itself).
    pub fn compact(&self, table: Table) {
        if let Some(cf) = self.inner.db.cf_handle(table.name()) {
            self.inner.db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>);
        }
    }

    /// Commits `batch` atomically with a synced WAL. Concurrent commits share fsyncs.
    pub fn commit(&self, batch: Batch) -> Commit {
        Commit::new(self.submit(batch))
    }

    pub(crate) fn submit(&self, batch: Batch) -> Result<Pending, Refusal> {
        self.inner.committer.submit(batch)
    }

    /// The record of type `R` under `key`.
    pub fn get<R: Record>(&self, key: impl AsRef<[u8]>) -> Result<Option<R>, Error> {
        self.get_raw(R::TABLE, key.as_ref())?
            .map(|bytes| table::decode(R::TABLE, &bytes))
            .transpose()
    }

    /// Raw bytes under `key` in `table`; for [`Table::MESSAGES`], from the body files too.
    pub fn get_raw(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        if table == Table::MESSAGES
            && let Some(place) = self.place(key)?
        {
            return self.read_body(key, place);
        }
        let cf = self.cf(table)?;
        Ok(self.inner.db.get_cf(cf, key)?)
    }

    fn place(&self, key: &[u8]) -> Result<Option<Place>, Error> {
        let Some(bytes) = self.inner.db.get_pinned_cf(self.cf(Table::BODY_PLACES)?, key)? else {
            return Ok(None);
        };
        Place::decode(&bytes).map(Some).ok_or_else(|| Error::Corrupt {
            table: Table::BODY_PLACES.name(),
            reason: format!("a place of {} bytes", bytes.len()),
        })
    }

    fn read_body(&self, key: &[u8], place: Place) -> Result<Option<Vec<u8>>, Error> {
        match self.inner.bodies.read(place) {
            Ok(bytes) => Ok(Some(bytes)),
            // Deleted while it was read: its range may be punched out already.
            Err(_) if self.place(key)?.is_none() => Ok(None),
            Err(error) => Err(Error::Corrupt {
                table: Table::BODY_PLACES.name(),
                reason: format!(
                    "the {} bytes at {} in body file {}: {error}",
                    place.len, place.offset, place.file
                ),
            }),
        }
    }

    /// `table`'s write generation: it changes after every committed write that touches
    /// the table (see `generation.rs`). Load it before reading what is to be kept, and
    /// keep what was read only while it has not changed.
    pub fn generation(&self, table: Table) -> u64 {
        self.inner.generations.of(table)
    }

    /// Whether any record of `table` has a key starting with `prefix`. The answer is kept
    /// until the table next changes, so asking on every message costs no read.
    pub fn has_prefix(&self, table: Table, prefix: &[u8]) -> Result<bool, Error> {
        self.inner
            .prefixes
            .get_or_try(self, table, (table, prefix.to_vec()), || {
                let first = self.scan_raw(
                    table,
                    Scan {
                        prefix,
                        after: None,
                        reverse: false,
                        limit: 1,
                    },
                )?;
                Ok(!first.is_empty())
            })
    }

    /// Records of type `R` in the range `scan` describes, with their keys.
    pub fn scan<R: Record>(&self, scan: Scan<'_>) -> Result<Vec<(Vec<u8>, R)>, Error> {
        self.scan_raw(R::TABLE, scan)?
            .into_iter()
            .map(|(key, value)| Ok((key, table::decode(R::TABLE, &value)?)))
            .collect()
    }

    /// Raw keys and values in the range `scan` describes.
    pub fn scan_raw(&self, table: Table, scan: Scan<'_>) -> Result<Vec<RawEntry>, Error> {
        let cf = self.cf(table)?;
        let mut read = ReadOptions::default();
        // Prefix scans are short; keep them out of the block cache's hot list.
        read.fill_cache(false);
        let start_after_prefix = prefix_successor(scan.prefix);
        // A cursor outside the prefix's range starts at the range's edge instead of
        // ending the scan before it reaches the prefix.
        let mode = match (scan.reverse, scan.after) {
            (false, Some(after)) if after > scan.prefix => IteratorMode::From(after, Direction::Forward),
            (false, _) => IteratorMode::From(scan.prefix, Direction::Forward),
            (true, Some(after)) if start_after_prefix.as_deref().is_none_or(|end| after < end) => {
                IteratorMode::From(after, Direction::Reverse)
            }
            (true, _) => match &start_after_prefix {
                Some(end) => IteratorMode::From(end, Direction::Reverse),
                None => IteratorMode::End,
            },
        };
        let mut out = Vec::new();
        for item in self.inner.db.iterator_cf_opt(cf, read, mode) {
            let (key, value) = item?;
            if scan.after.is_some_and(|after| *key == *after) {
                continue;
            }
            if scan.reverse && start_after_prefix.as_deref().is_some_and(|end| *key >= *end) {
                continue;
            }
            if !key.starts_with(scan.prefix) {
                break;
            }
            if out.len() >= scan.limit {
                break;
            }
            out.push((key.into_vec(), value.into_vec()));
        }
        Ok(out)
    }

    /// Iterates every key and value of `table` in order, calling `visit` until it returns
    /// `false`. For recovery scans that must not hold the whole table in memory.
    pub(crate) fn for_each_raw(
        &self,
        table: Table,
        visit: impl FnMut(&[u8], &[u8]) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        self.for_each_raw_from(table, None, visit)
    }

    /// Like [`Store::for_each_raw`], starting at the first key `>= from`.
    pub(crate) fn for_each_raw_from(
        &self,
        table: Table,
        from: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let cf = self.cf(table)?;
        let mode = match from {
            Some(key) => IteratorMode::From(key, rocksdb::Direction::Forward),
            None => IteratorMode::Start,
        };
        for item in self.inner.db.iterator_cf(cf, mode) {
            let (key, value) = item?;
            if !visit(&key, &value)? {
                break;
            }
        }
        Ok(())
    }

    fn cf(&self, table: Table) -> Result<&rocksdb::ColumnFamily, Error> {
        self.inner.db.cf_handle(table.name()).ok_or(Error::Corrupt {
            table: table.name(),
            reason: "column family missing".to_owned(),
        })
    }
}

/// Each body file's message count, as committed.
fn body_counts(db: &DB) -> Result<std::collections::HashMap<u32, u64>, Error> {
    let Some(cf) = db.cf_handle(Table::BODY_FILES.name()) else {
        return Ok(std::collections::HashMap::new());
    };
    let mut counts = std::collections::HashMap::new();
    for entry in db.iterator_cf(cf, IteratorMode::Start) {
        let (key, value) = entry?;
        let Ok(file) = <[u8; 4]>::try_from(&*key) else {
            return Err(Error::Corrupt {
                table: Table::BODY_FILES.name(),
                reason: format!("a key of {} bytes", key.len()),
            });
        };
        counts.insert(u32::from_be_bytes(file), table::decode_counter(&value));
    }
    Ok(counts)
}

/// The smallest key greater than every key starting with `prefix`, or `None` when there
/// is none (the prefix is empty or all `0xff`).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn open_db(path: &Path) -> Result<DB, Error> {
    let mut options = Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    options.set_max_background_jobs(2);
    options.set_keep_log_file_num(4);
    // Bound the WAL: past this, memtables of idle tables are flushed so old logs can go.
    options.set_max_total_wal_size(256 * 1024 * 1024);
    // Write new logs over old ones instead of growing fresh files: every commit is an
    // fdatasync, and one that does not change the file's size needs no inode (or, on a
    // journaling file system, no journal) write besides the data. Recovery stays
    // point-in-time (the default), with which RocksDB supports recycling.
    options.set_recycle_log_file_num(WAL_RECYCLE);
    let mut names: Vec<String> = Table::ALL.iter().map(|t| t.name().to_owned()).collect();
    // Tables written by a newer build must be opened too, or RocksDB refuses to open.
    if let Ok(existing) = DB::list_cf(&options, path) {
        for name in existing {
            if name != rocksdb::DEFAULT_COLUMN_FAMILY_NAME && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let descriptors = names.into_iter().map(|name| {
        let cf_options = table_options(&name);
        ColumnFamilyDescriptor::new(name, cf_options)
    });
    DB::open_cf_descriptors(&options, path, descriptors).map_err(|source| Error::Open {
        path: path.to_owned(),
        source,
    })
}

/// Tables whose records are deleted in bulk: queues, due indexes, and what retention
/// expires.
const EXPIRING: &[Table] = &[
    Table::DUE,
    Table::OUTBOX,
    Table::LOG_EXPIRY,
    Table::LOG_DUE,
    Table::LOGS,
    Table::IDEMPOTENCY_EXPIRY,
    Table::EMAILS,
    Table::EMAIL_STATUS,
    Table::EVENTS,
    Table::EMAIL_EXPIRY,
    Table::CONTENT_EXPIRY,
    Table::WEBHOOK_MESSAGES,
    Table::WEBHOOK_ATTEMPTS,
    Table::WEBHOOK_EXPIRY,
    Table::COUNTER_EXPIRY,
    Table::IMPORT_EXPIRY,
    Table::CONTACT_IMPORTS,
    Table::IMPORT_ERRORS,
];

fn table_options(name: &str) -> Options {
    let mut options = Options::default();
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    if name == Table::MESSAGES.name() || name == Table::IMAGE_BYTES.name() {
        // Message bodies are large, and short-lived unless retained for their record: keep
        // them in blob files so compaction moves small pointers instead of rewriting the
        // bodies. Images are large too.
        options.set_write_buffer_size(64 * 1024 * 1024);
        options.set_enable_blob_files(true);
        options.set_min_blob_size(4096);
        options.set_enable_blob_gc(true);
    }
    if name == Table::BODY_PLACES.name() {
        // Every delete of a message looks its place up, and short messages have none: a
        // bloom filter answers those misses without reading a block.
        let mut block = rocksdb::BlockBasedOptions::default();
        block.set_bloom_filter(10.0, false);
        options.set_block_based_table_factory(&block);
    }
    if name == Table::COUNTERS.name() || name == Table::BODY_FILES.name() {
        options.set_merge_operator_associative("herald_add_u64", table::add_counters);
    }
    if EXPIRING.iter().any(|table| table.name() == name) {
        // Queues are read from the front and deleted from the front, and expiry deletes
        // records in runs: compact files dense with tombstones early, so scans do not wade
        // through them and the space comes back.
        options.add_compact_on_deletion_collector_factory(1_000, 500, 0.5);
    }
    options
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Note(u32);

    impl Record for Note {
        const TABLE: Table = Table::DOMAINS;
    }

    /// The write-ahead logs in `dir`: file name to inode.
    fn logs(dir: &Path) -> HashMap<String, u64> {
        std::fs::read_dir(dir)
            .expect("read dir")
            .map(|entry| entry.expect("entry"))
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".log"))
            .map(|entry| {
                let inode = entry.metadata().expect("metadata").ino();
                (entry.file_name().to_string_lossy().into_owned(), inode)
            })
            .collect()
    }

    #[test]
    fn counters_add_up_without_reading_and_survive_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = || {
            Store::open(StoreOptions {
                min_free_space: 0,
                ..StoreOptions::new(dir.path())
            })
            .expect("open")
        };
        let store = open();
        for n in [1, 2, 3] {
            let mut batch = Batch::new();
            batch.add(b"team-day-sent".to_vec(), n);
            batch.add(b"team-day-sent".to_vec(), 10);
            store.commit(batch).wait().expect("commit");
        }
        let read = |store: &Store| {
            store
                .get_raw(Table::COUNTERS, b"team-day-sent")
                .expect("read")
                .map(|bytes| crate::decode_counter(&bytes))
        };
        assert_eq!(read(&store), Some(36));
        drop(store);
        let store = open();
        assert_eq!(read(&store), Some(36), "merged values are durable");
        let scanned = store.scan_raw(Table::COUNTERS, Scan::prefix(b"team")).expect("scan");
        assert_eq!(crate::decode_counter(&scanned[0].1), 36);
    }

    #[test]
    fn a_prefix_delete_removes_that_key_space_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(StoreOptions {
            min_free_space: 0,
            ..StoreOptions::new(dir.path())
        })
        .expect("open");
        let mut batch = Batch::new();
        for key in [&b"aa1"[..], b"aa2", b"ab1", b"a\xff"] {
            batch.put(key, &Note(1)).expect("encode");
        }
        store.commit(batch).wait().expect("commit");
        let mut batch = Batch::new();
        batch.delete_prefix(Table::DOMAINS, b"aa");
        batch.delete_prefix(Table::DOMAINS, b"");
        store.commit(batch).wait().expect("commit");
        let left: Vec<Vec<u8>> = store
            .scan::<Note>(Scan::prefix(b""))
            .expect("scan")
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        assert_eq!(
            left,
            vec![b"ab1".to_vec(), b"a\xff".to_vec()],
            "an empty prefix deletes nothing"
        );
    }

    #[test]
    fn a_new_write_ahead_log_is_an_old_one_written_over_and_loses_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kept = tempfile::tempdir_in(dir.path()).expect("kept");
        let path = dir.path().join("db");
        let mut old = HashMap::new();
        let mut recycled = false;
        {
            let store = Store::open(StoreOptions::new(&path)).expect("open");
            for round in 0..6u32 {
                let mut batch = Batch::new();
                batch.put(round.to_be_bytes(), &Note(round)).expect("encode");
                store.commit(batch).wait().expect("commit");
                for (name, inode) in logs(&path) {
                    if old.get(&inode).is_some_and(|first: &String| *first != name) {
                        recycled = true;
                    }
                    if let std::collections::hash_map::Entry::Vacant(entry) = old.entry(inode) {
                        // A second link keeps the inode alive should RocksDB delete the
                        // file, so the same inode under a new name can only be a rename:
                        // the old log reused.
                        std::fs::hard_link(path.join(&name), kept.path().join(&name)).expect("link");
                        entry.insert(name);
                    }
                }
                for table in Table::ALL {
                    let cf = store.inner.db.cf_handle(table.name()).expect("table");
                    store.inner.db.flush_cf(cf).expect("flush");
                }
            }
            // Left in a reused log only: reopening must replay these and nothing older
            // from the tail of what the log held before.
            let mut batch = Batch::new();
            batch.put(0u32.to_be_bytes(), &Note(100)).expect("encode");
            batch.delete::<Note>(1u32.to_be_bytes());
            store.commit(batch).wait().expect("commit");
        }
        assert!(recycled, "no write-ahead log was reused: {old:?}");
        let store = Store::open(StoreOptions::new(&path)).expect("reopen");
        assert_eq!(store.get::<Note>(0u32.to_be_bytes()).expect("get"), Some(Note(100)));
        assert_eq!(store.get::<Note>(1u32.to_be_bytes()).expect("get"), None);
        for round in 2..6u32 {
            assert_eq!(store.get::<Note>(round.to_be_bytes()).expect("get"), Some(Note(round)));
        }
    }
}
