//! A claimed message on its way out, and the pieces it is split into: one per
//! destination, each carrying the recipients that go there in one transaction.
//!
//! The outcomes of all pieces are gathered on the message; when the last piece is done
//! (delivered, failed, or dropped at shutdown), the message is handed to a worker thread
//! that writes every outcome in one spool update. One update per attempt keeps the claim
//! until then, so no recipient is attempted twice at once.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::Sender;
use herald_queue::{Claim, Id, Spool, Timestamp};

use super::reply::Reply;
use crate::runner::Claimed;
use crate::suppressions::Origin;

/// A message taken from the spool for delivery, with the runner's claim on it.
pub struct Held {
    /// The spool's claim.
    pub claim: Claim,
    /// The runner's claim: dropped when the message is done with, which makes room.
    pub entry: Claimed,
}

/// Where an attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    /// Which SMTP transaction it was, unique in this process: two pieces of one message
    /// sent over the same host and address are two transactions, and each counts
    /// against its source address's day.
    pub transaction: u64,
    /// The MX host (or relay).
    pub host: String,
    /// The address connected to.
    pub ip: Option<IpAddr>,
    /// The source address connected from, when the region binds one.
    pub source: Option<IpAddr>,
    /// The TLS version, when encrypted.
    pub tls: Option<String>,
}

/// What happened to one recipient in this attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The receiving side answered (or herald answered for it: a connection failure, a
    /// missing route); the code decides delivered, deferred or bounced.
    Replied {
        /// The reply.
        reply: Reply,
        /// Where, when a connection was made.
        via: Option<Via>,
    },
    /// herald held it back until `until` (its region's addresses have all sent their
    /// day's warm-up limit): a deferral with its own time, nothing was attempted.
    Held {
        /// What the recipient is recorded with.
        reply: Reply,
        /// When it may be tried again.
        until: Timestamp,
    },
    /// The address is on the team's suppression list; nothing was attempted.
    Suppressed(Origin),
    /// The message cannot be sent at all (its domain is gone, its key unusable).
    Failed(String),
}

/// Work for the delivery worker threads.
pub enum Job {
    /// Load, check, sign and route a claimed message.
    Prepare(Held),
    /// Stop the thread.
    Stop,
}

/// Work for the outcome thread.
pub enum Finished {
    /// Write the outcomes of a message whose pieces are all done.
    Message(Arc<MessageJob>),
    /// Stop the thread, after what was sent before.
    Stop,
}

/// Where a job reports back: the worker queue, the spool that holds its claim, and the
/// scheduler's claim, which makes room in flight when the job is dropped.
pub struct Links {
    /// The outcome thread's queue.
    pub finished: Sender<Finished>,
    /// The spool.
    pub spool: Spool,
    /// The scheduler's claim.
    pub entry: Claimed,
}

/// A message as sent: its `DKIM-Signature` field, then the message as stored, kept
/// apart so that neither is copied to join them.
#[derive(Debug, Default)]
pub struct Outgoing {
    /// The `DKIM-Signature` field with its CRLF (empty when unsigned).
    pub header: Vec<u8>,
    /// The message as stored.
    pub body: Vec<u8>,
}

impl Outgoing {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.header.len() + self.body.len()
    }

    /// Whether every byte is ASCII (else it needs `8BITMIME`).
    pub fn is_ascii(&self) -> bool {
        self.header.is_ascii() && self.body.is_ascii()
    }
}

/// A claimed message in delivery.
pub struct MessageJob {
    /// The spool id (also the email id).
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The envelope sender.
    pub sender: String,
    /// Every recipient address, by envelope index.
    pub recipients: Vec<String>,
    /// The message as sent (DKIM-signed).
    pub message: Arc<Outgoing>,
    results: Mutex<Vec<Option<Outcome>>>,
    pieces: AtomicUsize,
    finished: AtomicBool,
    outcomes: Sender<Finished>,
    spool: Spool,
    /// Dropped after the spool claim is released (fields drop after [`Drop::drop`]).
    _entry: Claimed,
}

impl MessageJob {
    /// A job holding one guard piece, released by [`MessageJob::release_guard`] once
    /// every real piece is handed out.
    pub fn new(
        id: Id,
        team_id: Id,
        sender: String,
        recipients: Vec<String>,
        message: Arc<Outgoing>,
        links: Links,
    ) -> Arc<MessageJob> {
        let Links { finished, spool, entry } = links;
        let count = recipients.len();
        Arc::new(MessageJob {
            id,
            team_id,
            sender,
            recipients,
            message,
            results: Mutex::new(vec![None; count]),
            pieces: AtomicUsize::new(1),
            finished: AtomicBool::new(false),
            outcomes: finished,
            spool,
            _entry: entry,
        })
    }

    /// Records `outcome` for the recipient at `index`.
    pub fn record(&self, index: usize, outcome: Outcome) {
        if let Some(slot) = self.lock_results().get_mut(index) {
            *slot = Some(outcome);
        }
    }

    /// A piece carrying `indexes` to one destination.
    pub fn piece(self: &Arc<Self>, indexes: Vec<usize>) -> Piece {
        self.pieces.fetch_add(1, Ordering::AcqRel);
        Piece {
            job: Arc::clone(self),
            indexes,
        }
    }

    /// Releases the guard taken at creation.
    pub fn release_guard(self: &Arc<Self>) {
        self.piece_done();
    }

    /// Takes the gathered outcomes, by envelope index; marks the job finished.
    pub fn take_results(&self) -> Vec<Option<Outcome>> {
        self.finished.store(true, Ordering::Release);
        std::mem::take(&mut *self.lock_results())
    }

    fn piece_done(self: &Arc<Self>) {
        if self.pieces.fetch_sub(1, Ordering::AcqRel) == 1 {
            // When the outcome thread is gone (shutdown), the job drops here and its
            // claim is released; the spool still holds every recipient as it was.
            let _ = self.outcomes.send(Finished::Message(Arc::clone(self)));
        }
    }

    fn lock_results(&self) -> std::sync::MutexGuard<'_, Vec<Option<Outcome>>> {
        self.results.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for MessageJob {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::Acquire) {
            self.spool.release(self.id);
        }
    }
}

/// The recipients of one message that go to one destination. Dropping a piece counts it
/// done; recipients without an outcome stay as they were in the spool.
pub struct Piece {
    job: Arc<MessageJob>,
    indexes: Vec<usize>,
}

impl Piece {
    /// The message.
    pub fn job(&self) -> &MessageJob {
        &self.job
    }

    /// The recipient addresses, in order.
    pub fn addresses(&self) -> Vec<String> {
        self.indexes
            .iter()
            .filter_map(|&i| self.job.recipients.get(i).cloned())
            .collect()
    }

    /// Records one reply per recipient, in the order of [`Piece::addresses`].
    pub fn complete(self, replies: Vec<Reply>, via: Option<&Via>) {
        for (&index, reply) in self.indexes.iter().zip(replies) {
            self.job.record(
                index,
                Outcome::Replied {
                    reply,
                    via: via.cloned(),
                },
            );
        }
    }

    /// Records the same reply for every recipient.
    pub fn complete_all(self, reply: &Reply, via: Option<&Via>) {
        let replies = vec![reply.clone(); self.indexes.len()];
        self.complete(replies, via);
    }

    /// Holds every recipient back until `until`, recorded with `reply`.
    pub fn hold_all(self, reply: &Reply, until: Timestamp) {
        for &index in &self.indexes {
            self.job.record(
                index,
                Outcome::Held {
                    reply: reply.clone(),
                    until,
                },
            );
        }
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        self.job.piece_done();
    }
}
