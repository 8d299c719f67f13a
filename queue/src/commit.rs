//! Group commit: one thread owns every write and shares each fsync among all the writes
//! that arrived while the previous one was syncing.
//!
//! Callers encode their [`Batch`] on their own thread and queue it here. The commit thread
//! takes everything queued (up to a count and a byte limit), applies it as one RocksDB
//! write batch with `sync = true`, and answers every caller with the shared result. The
//! more callers wait, the larger the next group, so throughput grows with concurrency
//! while each caller still returns only once its writes are on disk.
//!
//! An earlier design let every caller write its own synced batch and relied on RocksDB's
//! internal write-group leader; that tops out near RocksDB's own group size and pays a
//! write-thread handoff per caller. Merging here keeps one memtable insert and one fsync
//! per group.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Instant;

use rocksdb::{DB, WriteBatch, WriteOptions};
use tokio::sync::oneshot;

use crate::batch::{Batch, Op};
use crate::bodies::{BODY_MIN, Bodies, Place, count_key};
use crate::error::{Error, Refusal};
use crate::generation::Generations;
use crate::mailbox::Mailbox;
use crate::marks::Marks;
use crate::table::Table;

/// Limits of the commit queue.
#[derive(Debug, Clone, Copy)]
pub struct CommitLimits {
    /// Batches waiting for the commit thread before new ones are refused as
    /// [`Refusal::Busy`]. Bounds the memory held by writes the disk has not caught up with.
    pub queue_max: usize,
    /// Batches merged into one synced write at most, so one group's latency stays bounded.
    pub group_max: usize,
    /// Bytes merged into one synced write at most: large messages sync in smaller groups
    /// instead of one huge memtable insert. A batch larger than this alone is written
    /// alone.
    pub group_bytes_max: usize,
}

impl Default for CommitLimits {
    fn default() -> Self {
        CommitLimits {
            queue_max: 16_384,
            group_max: 1_024,
            group_bytes_max: 32 * 1024 * 1024,
        }
    }
}

type Reply = oneshot::Sender<Result<(), Refusal>>;

struct Request {
    batch: Batch,
    reply: Reply,
}

/// The handle to the commit thread. Dropping it lets the thread finish what is queued and
/// stop; the drop waits for that.
pub(crate) struct Committer {
    queue: Arc<Mailbox<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Committer {
    pub(crate) fn start(
        db: Arc<DB>,
        bodies: Arc<Bodies>,
        limits: CommitLimits,
        generations: Arc<Generations>,
    ) -> std::io::Result<Self> {
        let queue = Arc::new(Mailbox::new(limits.queue_max));
        let thread = {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name("herald-commit".into())
                .spawn(move || run(&db, &bodies, &queue, limits, &generations))?
        };
        Ok(Committer {
            queue,
            thread: Some(thread),
        })
    }

    /// Queues `batch`; the returned [`Pending`] resolves once it is durable.
    pub(crate) fn submit(&self, batch: Batch) -> Result<Pending, Refusal> {
        let (reply, receiver) = oneshot::channel();
        match self.queue.push(Request { batch, reply }) {
            Ok(()) => Ok(Pending { receiver }),
            Err(Refusal::Busy) => {
                metrics::counter!("herald_spool_commit_refused_total", "reason" => "busy").increment(1);
                Err(Refusal::Busy)
            }
            Err(refusal) => Err(refusal),
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.queue.close();
        if let Some(thread) = self.thread.take() {
            // The thread only panics on a bug; the panic has already been reported.
            let _ = thread.join();
        }
    }
}

/// Closes and empties the queue when the commit thread ends, by a panic too: the callers
/// still queued then get [`Refusal::Closed`] instead of waiting forever.
struct AbandonOnExit<'a>(&'a Mailbox<Request>);

impl Drop for AbandonOnExit<'_> {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

fn run(db: &DB, bodies: &Bodies, queue: &Mailbox<Request>, limits: CommitLimits, generations: &Generations) {
    let _abandon = AbandonOnExit(queue);
    let mut sync = WriteOptions::default();
    sync.set_sync(true);
    let mut group: Vec<Request> = Vec::with_capacity(limits.group_max);
    let mut marks = Marks::default();
    let mut bytes = 0;
    while queue.take(&mut group, |next, so_far| {
        if so_far.len() == 1 {
            bytes = so_far[0].batch.size();
        }
        let fits = so_far.len() < limits.group_max && bytes + next.batch.size() <= limits.group_bytes_max;
        if fits {
            bytes += next.batch.size();
        }
        fits
    }) {
        let started = Instant::now();
        let result = write_group(db, bodies, &group, &sync, &mut marks)
            .map(|moves| bodies.committed(&moves.added, &moves.removed));
        // Before anyone hears of the write, so that a caller reading after its commit
        // never trusts what it derived before.
        generations.advance(group.iter().flat_map(|request| request.batch.ops.iter()));
        metrics::histogram!("herald_spool_commit_seconds").record(started.elapsed().as_secs_f64());
        metrics::histogram!("herald_spool_commit_group_size").record(group.len() as f64);
        if let Err(error) = &result {
            tracing::error!(%error, batches = group.len(), "spool write failed");
            metrics::counter!("herald_spool_commit_failed_total").increment(1);
        }
        for request in group.drain(..) {
            // A caller that stopped waiting (its task was dropped) no longer needs the
            // answer; its writes are committed or not exactly like everybody else's.
            let _ = request.reply.send(result.clone());
        }
    }
}

/// The messages a group placed in body files and took out of them.
#[derive(Default)]
struct Moves {
    added: Vec<Place>,
    removed: Vec<Place>,
}

fn write_group(
    db: &DB,
    bodies: &Bodies,
    group: &[Request],
    sync: &WriteOptions,
    marks: &mut Marks,
) -> Result<Moves, Refusal> {
    let ops = || group.iter().flat_map(|request| request.batch.ops.iter());
    let large: Vec<&[u8]> = ops().filter_map(large_message).collect();
    // The bytes are synced before the places that name them are written.
    let placed = if large.is_empty() {
        Vec::new()
    } else {
        bodies.append(&large)?
    };
    let mut messages = Messages {
        db,
        places: handle(db, Table::BODY_PLACES)?,
        counts: handle(db, Table::BODY_FILES)?,
        placed: placed.into_iter(),
        in_group: HashMap::new(),
        deleted: HashSet::new(),
        moves: Moves::default(),
    };
    let mut batch = WriteBatch::default();
    // Marks this group writes, remembered once the write is durable.
    let mut new_marks: Vec<(Table, &[u8])> = Vec::new();
    for op in ops() {
        if !matches!(op, Op::Mark { .. }) {
            marks.forget(op.table());
            new_marks.retain(|(table, _)| *table != op.table());
        }
        match op {
            Op::Mark { table, key } => {
                let mark = (*table, key.as_slice());
                if !marks.written(*table, key) && !new_marks.contains(&mark) {
                    apply(db, &mut batch, op)?;
                    new_marks.push(mark);
                }
            }
            // The same test that picked the bytes appended above, so places pair up in order.
            Op::Put { key, .. } if large_message(op).is_some() => {
                messages.put(&mut batch, key)?;
            }
            Op::Delete { table, key } if *table == Table::MESSAGES => {
                batch.delete_cf(handle(db, *table)?, key);
                messages.delete(&mut batch, key)?;
            }
            Op::DeleteRange { table, from, to } if *table == Table::MESSAGES => {
                batch.delete_range_cf(handle(db, *table)?, from, to);
                messages.delete_range(&mut batch, from, to)?;
            }
            _ => apply(db, &mut batch, op)?,
        }
    }
    db.write_opt(batch, sync)
        .map_err(|error| Refusal::Storage(error.to_string()))?;
    for (table, key) in new_marks {
        marks.remember(table, key.to_vec());
    }
    Ok(messages.moves)
}

/// The bytes of `op` when it puts a message that goes to a body file.
fn large_message(op: &Op) -> Option<&[u8]> {
    match op {
        Op::Put { table, value, .. } if *table == Table::MESSAGES && value.len() >= BODY_MIN => Some(value),
        _ => None,
    }
}

/// A group's writes of messages: places instead of large messages, and the places of
/// the messages it deletes.
struct Messages<'a> {
    db: &'a DB,
    places: &'a rocksdb::ColumnFamily,
    counts: &'a rocksdb::ColumnFamily,
    /// The group's large messages' places, in the order of their puts.
    placed: std::vec::IntoIter<Place>,
    /// Places put by this group, not yet in the database.
    in_group: HashMap<&'a [u8], Place>,
    /// Keys this group deleted already: a second delete must not count twice.
    deleted: HashSet<Vec<u8>>,
    moves: Moves,
}

impl<'a> Messages<'a> {
    fn put(&mut self, batch: &mut WriteBatch, key: &'a [u8]) -> Result<(), Refusal> {
        let place = self
            .placed
            .next()
            .ok_or_else(|| Refusal::Storage("a large message without a place".to_owned()))?;
        batch.put_cf(self.places, key, place.encode());
        batch.merge_cf(self.counts, count_key(place.file), 1_u64.to_le_bytes());
        self.in_group.insert(key, place);
        self.deleted.remove(key);
        self.moves.added.push(place);
        Ok(())
    }

    fn delete(&mut self, batch: &mut WriteBatch, key: &'a [u8]) -> Result<(), Refusal> {
        if !self.deleted.insert(key.to_vec()) {
            return Ok(());
        }
        let place = match self.in_group.remove(key) {
            Some(place) => Some(place),
            None => self
                .db
                .get_pinned_cf(self.places, key)
                .map_err(|error| Refusal::Storage(error.to_string()))?
                .and_then(|bytes| Place::decode(&bytes)),
        };
        if let Some(place) = place {
            batch.delete_cf(self.places, key);
            // Minus one: the counts wrap.
            batch.merge_cf(self.counts, count_key(place.file), u64::MAX.to_le_bytes());
            self.moves.removed.push(place);
        }
        Ok(())
    }

    fn delete_range(&mut self, batch: &mut WriteBatch, from: &[u8], to: &[u8]) -> Result<(), Refusal> {
        let mode = rocksdb::IteratorMode::From(from, rocksdb::Direction::Forward);
        for entry in self.db.iterator_cf(self.places, mode) {
            let (key, value) = entry.map_err(|error| Refusal::Storage(error.to_string()))?;
            if &*key >= to {
                break;
            }
            if !self.deleted.insert(key.to_vec()) {
                continue;
            }
            if let Some(place) = Place::decode(&value) {
                batch.merge_cf(self.counts, count_key(place.file), u64::MAX.to_le_bytes());
                self.moves.removed.push(place);
            }
        }
        // Places put earlier in this group are in the range too.
        let in_range: Vec<&[u8]> = self
            .in_group
            .keys()
            .copied()
            .filter(|key| *key >= from && *key < to)
            .collect();
        for key in in_range {
            self.deleted.insert(key.to_vec());
            if let Some(place) = self.in_group.remove(key) {
                batch.merge_cf(self.counts, count_key(place.file), u64::MAX.to_le_bytes());
                self.moves.removed.push(place);
            }
        }
        batch.delete_range_cf(self.places, from, to);
        Ok(())
    }
}

fn handle(db: &DB, table: Table) -> Result<&rocksdb::ColumnFamily, Refusal> {
    db.cf_handle(table.name())
        .ok_or_else(|| Refusal::Storage(format!("unknown table `{}`", table.name())))
}

fn apply(db: &DB, batch: &mut WriteBatch, op: &Op) -> Result<(), Refusal> {
    let table = op.table();
    // Every table in `Table::ALL` is created at open, so a missing handle is a bug in the
    // caller's table, reported as a write error instead of a panic on the commit thread.
    let Some(cf) = db.cf_handle(table.name()) else {
        return Err(Refusal::Storage(format!("unknown table `{}`", table.name())));
    };
    match op {
        Op::Put { key, value, .. } => batch.put_cf(cf, key, value),
        Op::Delete { key, .. } => batch.delete_cf(cf, key),
        Op::DeleteRange { from, to, .. } => batch.delete_range_cf(cf, from, to),
        Op::Add { key, value, .. } => batch.merge_cf(cf, key, value),
        Op::Mark { key, .. } => batch.put_cf(cf, key, []),
    }
    Ok(())
}

/// A write that is queued and not yet durable.
pub(crate) struct Pending {
    receiver: oneshot::Receiver<Result<(), Refusal>>,
}

impl Pending {
    /// Blocks until the write is durable or failed. Not for async tasks: await instead.
    pub(crate) fn wait(self) -> Result<(), Refusal> {
        map_reply(self.receiver.blocking_recv())
    }
}

impl Future for Pending {
    type Output = Result<(), Refusal>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.receiver).poll(cx).map(map_reply)
    }
}

fn map_reply(reply: Result<Result<(), Refusal>, oneshot::error::RecvError>) -> Result<(), Refusal> {
    reply.unwrap_or(Err(Refusal::Closed))
}

/// A commit of records: resolves to `Ok(())` once durable. Await it from async code, or
/// call [`Commit::wait`] from a plain thread.
#[must_use = "a commit is not durable until it is awaited or waited for"]
pub struct Commit {
    state: CommitState,
}

enum CommitState {
    Refused(Option<Refusal>),
    Waiting(Pending),
}

impl Commit {
    pub(crate) fn new(submitted: Result<Pending, Refusal>) -> Self {
        let state = match submitted {
            Ok(pending) => CommitState::Waiting(pending),
            Err(refusal) => CommitState::Refused(Some(refusal)),
        };
        Commit { state }
    }

    /// Blocks until the commit is durable. Not for async tasks: await instead.
    pub fn wait(self) -> Result<(), Error> {
        match self.state {
            CommitState::Refused(refusal) => Err(Error::Unavailable(refusal.unwrap_or(Refusal::Closed))),
            CommitState::Waiting(pending) => pending.wait().map_err(Error::Unavailable),
        }
    }
}

impl Future for Commit {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            CommitState::Refused(refusal) => {
                Poll::Ready(Err(Error::Unavailable(refusal.take().unwrap_or(Refusal::Closed))))
            }
            CommitState::Waiting(pending) => Pin::new(pending).poll(cx).map(|r| r.map_err(Error::Unavailable)),
        }
    }
}
