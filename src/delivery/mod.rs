//! The delivery engine: drains the spool's due index to recipients' MX hosts.
//!
//! ```text
//! scheduler (due-time ──crossbeam──> worker threads ──> destinations (async, on the
//!   runner, spool index)          load, suppressions,     delivery runtime's threads):
//!                                 DKIM sign once,         MX, connections, throttling
//!                                 split by domain               │
//!                                                               │ last piece done
//!                                 outcome thread <── Finish ────┘
//!                                 every message finished meanwhile in one synced
//!                                 write: states, events, records; claims released
//! ```
//!
//! Worker threads, one per core, do what burns CPU (signing) and the RocksDB reads that
//! come with it, and never wait for a disk; the outcome thread waits for the fsyncs, one
//! per group of finished messages; the runtime's threads only drive sockets, each many
//! sessions.

mod canonical;
mod client;
pub mod decide;
mod destination;
mod job;
mod outcome;
mod prepare;
pub mod reply;
mod route;
mod schedule;
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
use self::job::{Finished, Job};
use self::sign::Signers;
use crate::dns::Dns;
use crate::runner::Runner;
use crate::services::Services;
use crate::shutdown::Controller;

pub use self::decide::retry_wait;

/// What the scheduler, the workers and the connection tasks share.
pub(crate) struct Shared {
    state: Arc<Services>,
    dns: Dns,
    signers: Signers,
    tls: TlsChoice,
    destinations: Destinations,
    runtime: tokio::runtime::Handle,
    jobs: Sender<Job>,
    /// Finished messages, whose outcomes the outcome thread writes.
    finished: Sender<Finished>,
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
    /// Stops the scheduler (the due-time runner, a task on the runtime).
    scheduler: Option<Controller>,
    workers: Vec<JoinHandle<()>>,
    outcomes: Option<JoinHandle<()>>,
}

impl Delivery {
    /// Starts the scheduler, `[delivery] workers` worker threads and the runtime that
    /// drives outbound sessions. The scheduler is woken between looks at the due index by
    /// [`crate::services::Services::wake_delivery`] and by messages finishing.
    pub fn start(state: Arc<Services>) -> anyhow::Result<Delivery> {
        crate::regions::check_binds(state.config());
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
            sessions: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
            state,
        });
        let mut workers = Vec::new();
        for n in 0..shared.state.config().delivery.workers {
            let shared = Arc::clone(&shared);
            let receiver = receiver.clone();
            workers.push(
                std::thread::Builder::new()
                    .name(format!("herald-deliver-{n}"))
                    .spawn(move || work(&shared, &receiver))?,
            );
        }
        let outcomes = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("herald-outcomes".into())
                .spawn(move || write_outcomes(&shared, &finished_receiver))?
        };
        let scheduler = Controller::default();
        let runner = Runner::new(
            "delivery",
            shared.state.node().spool_queue(),
            schedule::limits(shared.state.config().delivery.in_flight_max),
            shared.state.delivery_wake().clone(),
        );
        let handler = schedule::Scheduler {
            shared: Arc::clone(&shared),
        };
        runtime.spawn(runner.run(handler, scheduler.handle()));
        Ok(Delivery {
            shared,
            runtime: Some(runtime),
            scheduler: Some(scheduler),
            workers,
            outcomes: Some(outcomes),
        })
    }

    /// Stops taking due mail, lets transactions in flight finish within `grace`, writes
    /// their outcomes and stops. Whatever did not finish stays in the spool as it was and
    /// is delivered after the next start. Blocks: call it off the async workers.
    pub fn stop(mut self, grace: Duration) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.stop.notify_waiters();
        if let (Some(scheduler), Some(runtime)) = (self.scheduler.take(), &self.runtime) {
            // The runner stops between passes; a pass reads the index and hands out jobs.
            runtime.block_on(scheduler.shutdown(SCHEDULER_STOP));
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
        // After every finished message already queued: the channel keeps its order.
        let _ = self.shared.finished.send(Finished::Stop);
        if let Some(outcomes) = self.outcomes.take() {
            let _ = outcomes.join();
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
        let _ = self.shared.finished.send(Finished::Stop);
    }
}

/// How long stopping waits for the scheduler to finish its pass.
const SCHEDULER_STOP: Duration = Duration::from_secs(5);

/// A worker thread: prepares claimed messages.
fn work(shared: &Arc<Shared>, receiver: &Receiver<Job>) {
    while let Ok(job) = receiver.recv() {
        match job {
            Job::Prepare(held) => prepare::prepare(shared, held),
            Job::Stop => return,
        }
    }
}

/// The outcome thread: writes the outcomes of every message finished since its last
/// write in one durable commit ([`outcome::GROUP_MAX`] at most), then takes the next.
/// While one commit syncs, the next group gathers, so the disk's latency bounds how
/// often outcomes are written, not how many.
fn write_outcomes(shared: &Arc<Shared>, finished: &Receiver<Finished>) {
    let mut stopping = false;
    while !stopping {
        let Ok(first) = finished.recv() else { return };
        let mut group = Vec::new();
        let mut next = Some(first);
        while let Some(received) = next.take() {
            match received {
                Finished::Message(job) => group.push(job),
                Finished::Stop => stopping = true,
            }
            if !stopping && group.len() < outcome::GROUP_MAX {
                next = finished.try_recv().ok();
            }
        }
        if !group.is_empty() {
            outcome::write(&shared.state, group);
            // The jobs dropped with the group released their runner claims, which wakes
            // the scheduler.
        }
    }
}
