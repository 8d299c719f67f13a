//! The due-time runner: one loop for everything in herald that waits for a time.
//!
//! A store keeps a queue of due entries ([`DueQueue`]) beside its records (the spool's
//! scheduled sends and delivery retries, webhook retries, domain re-checks, expiry of
//! records) and a user gives the runner that queue and a [`Handler`]. The runner sleeps
//! until the earliest entry is due (capped by [`Limits::idle_max`]), until a [`Wake`]
//! says earlier work was armed, or until shutdown; then it claims the entries due by now and hands
//! them to the handler, earliest first. The handler does the work and, in the same batch
//! as the item's new state, re-arms the entry for later or disarms it.
//!
//! ```text
//!   arm (in the item's own write) ──> index ──> runner: claim due ──> handler
//!         wake ───────────────────────────────┘                        │
//!         ^                                                            │ rearm / disarm,
//!         └──────── claim released (dropped) ──────────────────────────┘ one batch
//! ```
//!
//! A claim ([`Claimed`]) keeps an item from being handed out twice while its handler
//! works on it, and waking the runner when it is dropped; claims live in memory only, so
//! after a crash every entry still armed is simply due again. Time is read from the
//! queue's clock; the tokio timer only paces the sleeps.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use herald_queue::{Due, Timestamp};

use crate::shutdown::Shutdown;
use crate::storage::due::DueQueue;

pub use crate::wake::Wake;

/// Shortest pause after a pass that handed out work, before the next one. A handler
/// that gives entries back still due (its write failed) then retries them at most this
/// often instead of spinning; the claims of one pass bound the throughput it costs.
const PASS_GAP: Duration = Duration::from_millis(10);

/// How a runner paces itself. Every field is a limit; see [`Limits::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest sleep without looking at the index: how late work armed by a path that
    /// does not wake the runner can be picked up.
    pub idle_max: Duration,
    /// Entries claimed and not yet released at most: bounds the memory claims hold and
    /// the work one slow item (a dead endpoint) can keep waiting.
    pub claims_max: usize,
    /// Index entries read per page while claiming, so one read never holds a backlog.
    pub page: usize,
    /// How long after its indexed time an entry is due. Zero for indexes keyed by the
    /// due time; an expiry index keyed by creation time sets the retention here, so a
    /// changed retention applies to what is already stored.
    pub delay: Duration,
    /// `Some(every)`: a pass starts after the last entry the previous pass looked at,
    /// not at the earliest, and starts at the earliest again at least this often. For an
    /// index whose new entries sort after everything claimed before them (the spool: due
    /// times and ids only grow) and that holds many claims at once, so a pass does not
    /// walk past all of them. An entry given back still due before the cursor waits for
    /// the next full pass. `None`: every pass starts at the earliest entry.
    pub resume: Option<Duration>,
}

impl Limits {
    /// Limits with `idle_max`, 1024 claims, pages of 256 entries, no delay, and every
    /// pass from the earliest entry.
    pub const fn new(idle_max: Duration) -> Self {
        Limits {
            idle_max,
            claims_max: 1_024,
            page: 256,
            delay: Duration::ZERO,
            resume: None,
        }
    }
}

/// What a runner's user does with due entries.
pub trait Handler: Send + 'static {
    /// Works on `due` (claimed entries, earliest first). For each, in the batch that
    /// writes the item's new state, re-arm the entry for later or disarm it; an entry
    /// left armed at a time already past is handed out again. Each [`Claimed`] holds its
    /// item until dropped, so a handler may keep entries to work on later (in order,
    /// say) and the runner will not hand them out meanwhile.
    fn handle(&mut self, due: Vec<Claimed>) -> impl Future<Output = ()> + Send;
}

/// One due entry handed to a handler. Its item is not handed out again until this is
/// dropped; dropping it wakes the runner.
#[derive(Debug)]
pub struct Claimed {
    due: Due,
    claims: Arc<Claims>,
}

impl Claimed {
    /// The entry: its item key and the time it was due.
    pub fn due(&self) -> &Due {
        &self.due
    }

    /// The time it was due (the time it was armed at, for an index with a delay).
    pub fn at(&self) -> Timestamp {
        self.due.at
    }

    /// The item's key.
    pub fn key(&self) -> &[u8] {
        &self.due.key
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        self.claims.lock().remove(&self.due.key);
        self.claims.wake.wake();
    }
}

/// The item keys claimed now.
#[derive(Debug)]
struct Claims {
    held: Mutex<HashSet<Vec<u8>>>,
    wake: Wake,
}

impl Claims {
    fn lock(&self) -> MutexGuard<'_, HashSet<Vec<u8>>> {
        // Inserts and removes are single operations: the set is whole after a panic.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where the next pass starts, for a runner that resumes ([`Limits::resume`]).
#[derive(Debug)]
struct Cursor {
    /// The last entry a pass looked at; `None` starts at the earliest.
    after: Option<Due>,
    /// When the next pass starts at the earliest entry again. Real time: this paces
    /// reads, it decides nothing.
    full_pass_at: std::time::Instant,
}

/// What one pass found.
struct Pass {
    claimed: Vec<Claimed>,
    /// When the earliest entry not yet due falls due (delay included).
    next: Option<Timestamp>,
}

/// A runner over one index. Build it, hand out its [`Runner::waker`], then
/// [`Runner::run`] it.
#[derive(Debug)]
pub struct Runner {
    name: &'static str,
    queue: Arc<dyn DueQueue>,
    limits: Limits,
    claims: Arc<Claims>,
    cursor: Mutex<Cursor>,
}

impl Runner {
    /// A runner of `queue`, named `name` in logs, woken through `wake`.
    pub fn new(name: &'static str, queue: Arc<dyn DueQueue>, limits: Limits, wake: Wake) -> Self {
        assert!(
            limits.claims_max > 0 && limits.page > 0,
            "a runner must claim something"
        );
        Runner {
            name,
            queue,
            limits,
            claims: Arc::new(Claims {
                held: Mutex::default(),
                wake,
            }),
            cursor: Mutex::new(Cursor {
                after: None,
                full_pass_at: std::time::Instant::now(),
            }),
        }
    }

    /// The handle that wakes this runner.
    pub fn waker(&self) -> Wake {
        self.claims.wake.clone()
    }

    /// Runs until shutdown: claims what is due, hands it to `handler`, sleeps until the
    /// next entry is due or a wake. Entries the handler still holds at shutdown stay
    /// armed, and are due again after the next start.
    pub async fn run(self, mut handler: impl Handler, mut shutdown: Shutdown) {
        let runner = Arc::new(self);
        while !shutdown.is_triggered() {
            let pass = {
                let runner = Arc::clone(&runner);
                tokio::task::spawn_blocking(move || runner.pass())
            };
            let pass = match pass.await {
                Ok(Ok(pass)) => Some(pass),
                Ok(Err(error)) => {
                    tracing::error!(runner = runner.name, %error, "cannot read a due index");
                    None
                }
                Err(error) => {
                    tracing::error!(runner = runner.name, %error, "a due-index pass failed");
                    None
                }
            };
            let next = pass.as_ref().and_then(|pass| pass.next);
            if let Some(pass) = pass
                && !pass.claimed.is_empty()
            {
                handler.handle(pass.claimed).await;
                tokio::select! {
                    () = tokio::time::sleep(PASS_GAP) => {}
                    () = shutdown.triggered() => break,
                }
            }
            let now = runner.queue.now();
            let wait = next.map_or(runner.limits.idle_max, |at| {
                at.saturating_since(now).min(runner.limits.idle_max)
            });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = runner.claims.wake.woken() => {}
                () = shutdown.triggered() => break,
            }
        }
    }

    /// Claims every entry due by now whose item is not claimed already, as far as room
    /// allows, and says when the next one falls due. Reads the store: call it off the
    /// async workers.
    fn pass(&self) -> Result<Pass, crate::storage::Error> {
        let delay = self.limits.delay;
        let now = self.queue.now();
        // Entries indexed at or before the horizon are due now.
        let horizon = Timestamp::from_millis(now.as_millis().saturating_sub(millis(delay)));
        let mut claimed = Vec::new();
        let mut after = self.start_after();
        // The last entry looked at, claimed now or held already: where a resuming
        // runner's next pass starts.
        let mut looked_at = None;
        'pages: loop {
            let room = self.limits.claims_max.saturating_sub(self.claims.lock().len());
            if room == 0 {
                break;
            }
            let page = self.queue.due(horizon, after.as_ref(), self.limits.page)?;
            let last_page = page.len() < self.limits.page;
            let mut held = self.claims.lock();
            for due in page {
                if held.len() >= self.limits.claims_max {
                    break 'pages;
                }
                if held.insert(due.key.clone()) {
                    claimed.push(Claimed {
                        due: due.clone(),
                        claims: Arc::clone(&self.claims),
                    });
                }
                looked_at = Some(due);
            }
            drop(held);
            if last_page {
                break;
            }
            after.clone_from(&looked_at);
        }
        if self.limits.resume.is_some()
            && let Some(last) = looked_at
        {
            self.lock_cursor().after = Some(last);
        }
        let next = self.queue.next_after(horizon)?.map(|at| at.saturating_add(delay));
        Ok(Pass { claimed, next })
    }
}

impl Runner {
    /// Where this pass starts: after the cursor for a resuming runner, unless a full pass
    /// is due, or a wake named an earlier time ([`Wake::wake_from`]).
    fn start_after(&self) -> Option<Due> {
        let rewind = self.claims.wake.take_earliest();
        let every = self.limits.resume?;
        let mut cursor = self.lock_cursor();
        let now = std::time::Instant::now();
        if now >= cursor.full_pass_at {
            cursor.full_pass_at = now + every;
            cursor.after = None;
        }
        if let (Some(at), Some(after)) = (rewind, &cursor.after)
            && after.at >= at
        {
            // The bare time sorts before every entry at it.
            cursor.after = Some(Due { at, key: Vec::new() });
        }
        cursor.after.clone()
    }

    fn lock_cursor(&self) -> MutexGuard<'_, Cursor> {
        // Reads and writes are single assignments: the cursor is whole after a panic.
        self.cursor.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use herald_queue::{Batch, DueIndex, ManualClock, Store, Table};
    use tokio::sync::mpsc;

    use super::*;
    use crate::shutdown::Controller;

    /// Any table serves: the runner only reads raw keys.
    const INDEX: DueIndex = DueIndex::new(Table::WEBHOOK_DUE);
    /// How long a test waits for something that should happen at once.
    const DEADLINE: Duration = Duration::from_secs(10);
    /// Longer than any test runs: a runner that is not woken does not look again.
    const ASLEEP: Duration = Duration::from_secs(3600);
    const MINUTE: Duration = Duration::from_secs(60);

    /// What the test handler does with an item each time it is due.
    #[derive(Debug, Clone, Copy)]
    enum Then {
        Disarm,
        /// Re-arm it this much after now, once; disarm it the next time.
        RearmOnce(Duration),
    }

    /// Reports every entry it is handed; disarms or re-arms it in its own batch.
    struct Recorder {
        store: Store,
        then: Then,
        seen: mpsc::UnboundedSender<Due>,
        rearmed: HashSet<Vec<u8>>,
    }

    impl Handler for Recorder {
        async fn handle(&mut self, due: Vec<Claimed>) {
            for claimed in due {
                let entry = claimed.due().clone();
                let mut batch = Batch::new();
                match self.then {
                    Then::RearmOnce(after) if self.rearmed.insert(entry.key.clone()) => {
                        let later = self.store.now().saturating_add(after);
                        INDEX.rearm(&mut batch, entry.at, later, &entry.key);
                    }
                    _ => INDEX.disarm(&mut batch, entry.at, &entry.key),
                }
                self.store.commit(batch).await.expect("commit");
                drop(claimed);
                let _ = self.seen.send(entry);
            }
        }
    }

    struct Harness {
        store: Store,
        clock: Arc<ManualClock>,
        wake: Wake,
        seen: mpsc::UnboundedReceiver<Due>,
        controller: Controller,
        task: tokio::task::JoinHandle<()>,
        _dir: tempfile::TempDir,
    }

    impl Harness {
        /// A runner over a fresh store, started after `arm` wrote its first entries.
        async fn start(limits: Limits, then: Then, arm: impl FnOnce(&Store, &mut Batch)) -> Harness {
            let dir = tempfile::tempdir().expect("tempdir");
            let (store, clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
            let mut batch = Batch::new();
            arm(&store, &mut batch);
            store.commit(batch).await.expect("commit");
            let (sender, seen) = mpsc::unbounded_channel();
            let handler = Recorder {
                store: store.clone(),
                then,
                seen: sender,
                rearmed: HashSet::new(),
            };
            let runner = Runner::new(
                "test",
                crate::storage::due::rocks(&store, INDEX),
                limits,
                Wake::default(),
            );
            let wake = runner.waker();
            let controller = Controller::default();
            let task = tokio::spawn(runner.run(handler, controller.handle()));
            Harness {
                store,
                clock,
                wake,
                seen,
                controller,
                task,
                _dir: dir,
            }
        }

        async fn next(&mut self) -> Due {
            tokio::time::timeout(DEADLINE, self.seen.recv())
                .await
                .expect("handed an entry in time")
                .expect("the runner is running")
        }

        async fn arm(&self, after: Duration, key: &[u8]) {
            let mut batch = Batch::new();
            INDEX.arm(&mut batch, self.store.now().saturating_add(after), key);
            self.store.commit(batch).await.expect("commit");
        }

        fn armed(&self) -> usize {
            INDEX
                .due(&self.store, Timestamp::from_millis(u64::MAX), None, usize::MAX)
                .expect("scan")
                .len()
        }

        async fn stop(self) {
            assert!(self.controller.shutdown(DEADLINE).await, "the runner stops");
            self.task.await.expect("the runner ends cleanly");
        }
    }

    #[tokio::test]
    async fn due_work_runs_earliest_first_and_early_work_waits_for_its_time() {
        let mut harness = Harness::start(Limits::new(ASLEEP), Then::Disarm, |store, batch| {
            let now = store.now();
            INDEX.arm(batch, now.saturating_add(MINUTE), b"early");
            INDEX.arm(batch, now, b"second");
            INDEX.arm(batch, Timestamp::from_millis(now.as_millis() - 1), b"first");
        })
        .await;
        assert_eq!(harness.next().await.key, b"first");
        assert_eq!(harness.next().await.key, b"second");
        assert!(harness.seen.try_recv().is_err(), "the early entry is not due");
        assert_eq!(harness.armed(), 1);
        harness.clock.advance(MINUTE);
        // The runner sleeps on the tokio timer; a test clock moved by hand needs a wake.
        harness.wake.wake();
        assert_eq!(harness.next().await.key, b"early");
        assert_eq!(harness.armed(), 0);
        harness.stop().await;
    }

    #[tokio::test]
    async fn a_wake_brings_earlier_work_forward() {
        let mut harness = Harness::start(Limits::new(ASLEEP), Then::Disarm, |store, batch| {
            INDEX.arm(batch, store.now().saturating_add(ASLEEP), b"much later");
        })
        .await;
        harness.arm(Duration::ZERO, b"now").await;
        harness.wake.wake();
        assert_eq!(harness.next().await.key, b"now", "not an hour later");
        harness.stop().await;
    }

    #[tokio::test]
    async fn a_handler_rearms_and_the_item_comes_due_again() {
        let mut harness = Harness::start(Limits::new(ASLEEP), Then::RearmOnce(MINUTE), |store, batch| {
            INDEX.arm(batch, store.now(), b"retried");
        })
        .await;
        let first = harness.next().await;
        assert_eq!(harness.armed(), 1, "re-armed, not gone");
        harness.clock.advance(MINUTE);
        harness.wake.wake();
        let second = harness.next().await;
        assert_eq!(second.key, b"retried");
        assert_eq!(second.at, first.at.saturating_add(MINUTE));
        assert_eq!(harness.armed(), 0);
        harness.stop().await;
    }

    #[tokio::test]
    async fn an_index_with_a_delay_is_due_that_long_after_its_time() {
        let limits = Limits {
            delay: MINUTE,
            ..Limits::new(ASLEEP)
        };
        let mut harness = Harness::start(limits, Then::Disarm, |_, _| {}).await;
        harness.arm(Duration::ZERO, b"expires").await;
        harness.arm(Duration::from_secs(1), b"later").await;
        harness.clock.advance(MINUTE);
        harness.wake.wake();
        assert_eq!(harness.next().await.key, b"expires");
        assert_eq!(harness.armed(), 1, "a second to go");
        harness.stop().await;
    }

    /// Arms `key` due now, durably (for tests that drive passes by hand).
    fn arm_now(store: &Store, key: &[u8]) {
        let mut batch = Batch::new();
        INDEX.arm(&mut batch, store.now(), key);
        store.commit(batch).wait().expect("commit");
    }

    /// The item keys a pass claimed, in order.
    fn keys(pass: &Pass) -> Vec<Vec<u8>> {
        pass.claimed.iter().map(|c| c.key().to_vec()).collect()
    }

    #[test]
    fn claims_are_bounded_and_an_item_is_not_handed_out_twice_while_held() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let arm = |key: &[u8]| arm_now(&store, key);
        for key in [b"a", b"b", b"c"] {
            arm(key);
        }
        let limits = Limits {
            claims_max: 2,
            page: 1,
            ..Limits::new(ASLEEP)
        };
        let runner = Runner::new(
            "test",
            crate::storage::due::rocks(&store, INDEX),
            limits,
            Wake::default(),
        );
        let mut first = runner.pass().expect("pass");
        assert_eq!(
            keys(&first),
            [b"a".to_vec(), b"b".to_vec()],
            "two pages, earliest first"
        );
        assert!(runner.pass().expect("pass").claimed.is_empty(), "no room");
        // Done with a: disarmed, then the claim dropped.
        let a = first.claimed.remove(0);
        let mut batch = Batch::new();
        INDEX.disarm(&mut batch, a.at(), a.key());
        store.commit(batch).wait().expect("commit");
        drop(a);
        let second = runner.pass().expect("pass");
        assert_eq!(keys(&second), [b"c".to_vec()], "b is still held");
        // A claim given back unchanged leaves its entry due: it is handed out again.
        drop(first);
        arm(b"d");
        assert_eq!(keys(&runner.pass().expect("pass")), [b"b".to_vec()]);
        drop(second);
        assert_eq!(runner.claims.lock().len(), 0, "every claim released");
    }

    #[test]
    fn a_resuming_runner_starts_after_its_last_pass_and_a_full_pass_finds_what_was_given_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let arm = |key: &[u8]| arm_now(&store, key);
        for key in [b"a", b"b", b"c"] {
            arm(key);
        }
        let limits = Limits {
            claims_max: 2,
            resume: Some(ASLEEP),
            ..Limits::new(ASLEEP)
        };
        let runner = Runner::new(
            "test",
            crate::storage::due::rocks(&store, INDEX),
            limits,
            Wake::default(),
        );
        let mut first = runner.pass().expect("pass");
        assert_eq!(keys(&first), [b"a".to_vec(), b"b".to_vec()]);
        // a is given back still due: it sorts before the cursor.
        drop(first.claimed.remove(0));
        arm(b"d");
        let second = runner.pass().expect("pass");
        assert_eq!(
            keys(&second),
            [b"c".to_vec()],
            "resumes after b; b is held, a is behind"
        );
        drop((first, second));
        assert_eq!(keys(&runner.pass().expect("pass")), [b"d".to_vec()]);
        // Time for a full pass: what was given back is found again.
        runner.lock_cursor().full_pass_at = std::time::Instant::now();
        let full = runner.pass().expect("pass");
        assert_eq!(keys(&full), [b"a".to_vec(), b"b".to_vec()], "from the earliest");
    }

    #[test]
    fn a_wake_from_an_earlier_time_finds_an_entry_that_committed_behind_the_cursor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let wake = Wake::default();
        let limits = Limits {
            resume: Some(Duration::from_secs(3_600)),
            ..Limits::new(ASLEEP)
        };
        let runner = Runner::new("test", crate::storage::due::rocks(&store, INDEX), limits, wake.clone());
        assert!(runner.pass().expect("pass").claimed.is_empty());
        // `late` takes its time first, `early` after; `early` commits first and is read.
        let taken = store.now();
        clock.advance(Duration::from_millis(5));
        arm_now(&store, b"early");
        let first = runner.pass().expect("pass");
        assert_eq!(keys(&first), [b"early".to_vec()]);
        let mut batch = Batch::new();
        INDEX.arm(&mut batch, taken, b"late");
        store.commit(batch).wait().expect("commit");
        wake.wake();
        assert!(
            runner.pass().expect("pass").claimed.is_empty(),
            "a plain wake resumes after early, and late sorts before it"
        );
        wake.wake_from(taken);
        assert_eq!(keys(&runner.pass().expect("pass")), [b"late".to_vec()], "rewound");
        assert!(runner.pass().expect("pass").claimed.is_empty(), "once");
        drop(first);
    }
}
