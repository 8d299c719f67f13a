//! The delivery engine: drains the spool's due index to recipients' MX hosts.
//!
//! ```text
//! scheduler thread ──crossbeam──> worker threads ──> destinations (async, on the
//!   (claim_due)                   load, suppressions,     delivery runtime's threads):
//!                                 DKIM sign once,         MX, connections, throttling
//!                                 split by domain               │
//!                                        ^                      │ last piece done
//!                                        └──── Finish ──────────┘
//!                                 one spool update per attempt: states, events, records
//! ```
//!
//! Worker threads do everything that blocks or burns CPU (RocksDB reads, signing, the
//! synced outcome writes); the runtime's threads only drive sockets, each many sessions.

mod client;
pub mod decide;
mod destination;
mod hash;
mod job;
mod outcome;
mod prepare;
pub mod reply;
mod route;
mod sign;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use herald_tls::Verification;
use tokio::sync::Notify;

use self::client::TlsChoice;
use self::destination::Destinations;
use self::job::Job;
use self::sign::Signers;
use crate::dns::Dns;
use crate::services::Services;

pub use self::decide::retry_wait;

/// Claims taken from the spool at once.
const CLAIM_BATCH: usize = 256;
/// The longest the scheduler sleeps between looks at the due index; submissions wake it
/// sooner.
const POLL_MAX: Duration = Duration::from_millis(250);

/// How often the scheduler looks at the whole due index instead of from its cursor.
const FULL_PASS_EVERY: Duration = Duration::from_secs(1);

/// What the scheduler, the workers and the connection tasks share.
pub(crate) struct Shared {
    state: Arc<Services>,
    dns: Dns,
    signers: Signers,
    tls: TlsChoice,
    destinations: Destinations,
    runtime: tokio::runtime::Handle,
    jobs: Sender<Job>,
    /// Finished messages, whose outcomes workers write before preparing anything new.
    finished: Sender<Job>,
    in_flight: Arc<AtomicUsize>,
    /// Connection tasks running.
    sessions: AtomicUsize,
    stopping: AtomicBool,
    stop: Notify,
}

impl Shared {
    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }
}

/// The running engine. [`Delivery::stop`] ends it.
pub struct Delivery {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    scheduler: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
}

impl Delivery {
    /// Starts the scheduler, `[delivery] workers` worker threads and the runtime that
    /// drives outbound sessions. The scheduler waits on `wake` between looks at the due
    /// index ([`crate::services::Services::wake_delivery`] sends to it).
    pub fn start(state: Arc<Services>, wake: crossbeam_channel::Receiver<()>) -> anyhow::Result<Delivery> {
        let config = &state.config().delivery;
        let dns = Dns::new(&config.nameservers, true)?;
        let tls = TlsChoice {
            opportunistic: herald_tls::client_config(Verification::Opportunistic, None)?,
            verified: herald_tls::client_config(Verification::Required, config.ca_file.as_deref())?,
            required: false,
            plaintext: false,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.workers)
            .thread_name("herald-delivery")
            .enable_all()
            .build()?;
        let (jobs, receiver) = crossbeam_channel::unbounded();
        let (finished, finished_receiver) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            dns,
            signers: Signers::default(),
            tls,
            destinations: Destinations::default(),
            runtime: runtime.handle().clone(),
            jobs,
            finished,
            in_flight: Arc::new(AtomicUsize::new(0)),
            sessions: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
            state,
        });
        let mut workers = Vec::new();
        for n in 0..shared.state.config().delivery.workers {
            let shared = Arc::clone(&shared);
            let (receiver, finished) = (receiver.clone(), finished_receiver.clone());
            workers.push(
                std::thread::Builder::new()
                    .name(format!("herald-deliver-{n}"))
                    .spawn(move || work(&shared, &receiver, &finished))?,
            );
        }
        let scheduler = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("herald-scheduler".into())
                .spawn(move || schedule(&shared, &wake))?
        };
        Ok(Delivery {
            shared,
            runtime: Some(runtime),
            scheduler: Some(scheduler),
            workers,
        })
    }

    /// Stops taking due mail, lets transactions in flight finish within `grace`, writes
    /// their outcomes and stops. Whatever did not finish stays in the spool as it was and
    /// is delivered after the next start. Blocks: call it off the async workers.
    pub fn stop(mut self, grace: Duration) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.stop.notify_waiters();
        if let Some(scheduler) = self.scheduler.take() {
            let _ = scheduler.join();
        }
        self.shared.destinations.clear();
        // Connection tasks finish the transaction they are in, then see the stop and quit.
        let deadline = std::time::Instant::now() + grace;
        while self.shared.sessions.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(runtime) = self.runtime.take() {
            // What is still running after the grace period is cut off; its recipients stay
            // as the spool has them and are tried again after the next start.
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
        self.shared.destinations.clear();
        for _ in &self.workers {
            let _ = self.shared.jobs.send(Job::Stop);
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Drop for Delivery {
    /// Without [`Delivery::stop`] (a server dropped in a test, a panic), the engine stops
    /// without waiting: nothing in flight is written, and every claim stays in the spool.
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.stop.notify_waiters();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        for _ in &self.workers {
            let _ = self.shared.jobs.send(Job::Stop);
        }
    }
}

/// The scheduler thread: claims due messages while there is room in flight.
fn schedule(shared: &Shared, wake: &crossbeam_channel::Receiver<()>) {
    let spool = shared.state.spool();
    let in_flight_max = shared.state.config().delivery.in_flight_max;
    // New and retried mail always sorts after what was claimed before it (due times and
    // ids only grow), so each pass starts where the last one stopped; a full pass now and
    // then finds claims that were given back unchanged.
    let mut cursor: Option<Vec<u8>> = None;
    let mut last_full_pass = std::time::Instant::now();
    while !shared.is_stopping() {
        if last_full_pass.elapsed() >= FULL_PASS_EVERY {
            cursor = None;
            last_full_pass = std::time::Instant::now();
        }
        let room = in_flight_max.saturating_sub(shared.in_flight.load(Ordering::Acquire));
        let mut full = false;
        if room > 0 {
            match spool.claim_due_from(room.min(CLAIM_BATCH), cursor.as_deref()) {
                Ok((claims, next)) => {
                    if next.is_some() {
                        cursor = next;
                    }
                    full = claims.len() == room.min(CLAIM_BATCH);
                    shared.in_flight.fetch_add(claims.len(), Ordering::AcqRel);
                    for claim in claims {
                        if shared.jobs.send(Job::Prepare(claim)).is_err() {
                            return;
                        }
                    }
                }
                Err(error) => tracing::error!(%error, "cannot read the due index"),
            }
        }
        if full {
            continue;
        }
        // Due mail that is not claimed now is in flight (or waits for room): a finishing
        // message wakes the scheduler, so only future due times shorten the wait.
        let now = shared.state.store().now();
        let wait = match spool.next_due() {
            Ok(Some(due)) if due > now => due.saturating_since(now).clamp(Duration::from_millis(5), POLL_MAX),
            _ => POLL_MAX,
        };
        let _ = wake.recv_timeout(wait);
    }
}

/// A worker thread: prepares claimed messages and writes finished ones.
///
/// Outcomes come first: each one ends a transaction that is done at the receiver, and
/// until it is written a crash would send that message again. Under load, preparing new
/// mail must not hold them back.
fn work(shared: &Arc<Shared>, receiver: &Receiver<Job>, finished: &Receiver<Job>) {
    loop {
        let received = finished.try_recv().or_else(|_| {
            crossbeam_channel::select_biased! {
                recv(finished) -> job => job,
                recv(receiver) -> job => job,
            }
        });
        let Ok(job) = received else { return };
        match job {
            Job::Prepare(claim) => prepare::prepare(shared, claim),
            Job::Finish(job) => {
                outcome::write(
                    shared.state.store(),
                    shared.state.spool(),
                    &shared.state.config().delivery,
                    &job,
                );
                // Wake the scheduler: room in flight, and a retry may be due soon.
                shared.state.wake_delivery();
            }
            Job::Stop => return,
        }
    }
}
