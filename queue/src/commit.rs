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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Instant;

use rocksdb::{DB, WriteBatch, WriteOptions};
use tokio::sync::oneshot;

use crate::batch::{Batch, Op};
use crate::error::{Error, Refusal};
use crate::generation::Generations;
use crate::mailbox::Mailbox;

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
    pub(crate) fn start(db: Arc<DB>, limits: CommitLimits, generations: Arc<Generations>) -> std::io::Result<Self> {
        let queue = Arc::new(Mailbox::new(limits.queue_max));
        let thread = {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name("herald-commit".into())
                .spawn(move || run(&db, &queue, limits, &generations))?
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

fn run(db: &DB, queue: &Mailbox<Request>, limits: CommitLimits, generations: &Generations) {
    let _abandon = AbandonOnExit(queue);
    let mut sync = WriteOptions::default();
    sync.set_sync(true);
    let mut group: Vec<Request> = Vec::with_capacity(limits.group_max);
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
        let result = write_group(db, &group, &sync);
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

fn write_group(db: &DB, group: &[Request], sync: &WriteOptions) -> Result<(), Refusal> {
    let mut batch = WriteBatch::default();
    for request in group {
        for op in &request.batch.ops {
            apply(db, &mut batch, op)?;
        }
    }
    db.write_opt(batch, sync)
        .map_err(|error| Refusal::Storage(error.to_string()))
}

fn apply(db: &DB, batch: &mut WriteBatch, op: &Op) -> Result<(), Refusal> {
    let (Op::Put { table, .. } | Op::Delete { table, .. } | Op::DeleteRange { table, .. } | Op::Add { table, .. }) = op;
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
