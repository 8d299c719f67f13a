//! Broadcasts: a marketing email to a segment, personalised per contact, sent now or at a
//! time, cancellable.
//!
//! A broadcast is a draft until sent. Sending queues it ([`Table::BROADCAST_QUEUE`]); a
//! background worker ([`worker`]) expands the segment a page of contacts at a time into
//! one ordinary email per contact (tagged `broadcast_id`, with the unsubscribe headers,
//! tracked where the domain tracks), and writes each page's emails, a marker per contact
//! ([`Recipient`], in [`Table::BROADCAST_RECIPIENTS`]) and the broadcast's progress in one
//! synced write: a crash resumes after the last page written, and no contact is sent
//! twice. Unsubscribed contacts, contacts out of the topic and suppressed addresses are
//! skipped (the last with `email.suppressed`); a contact missing a value its
//! personalisation needs is skipped with `email.failed` and the reason.
//!
//! The worker keeps at most a window of the broadcast's emails waiting in the spool
//! (twice `[delivery] in_flight_max`): delivery takes due mail oldest first, so a
//! transactional email sent during a million-contact broadcast waits behind that window,
//! never behind the whole broadcast.
//!
//! [`Table::BROADCAST_QUEUE`]: herald_queue::Table::BROADCAST_QUEUE
//! [`Table::BROADCAST_RECIPIENTS`]: herald_queue::Table::BROADCAST_RECIPIENTS

pub mod model;
pub mod personalise;
pub mod service;
pub mod store;
pub mod worker;

pub use model::{Broadcast, Counts, Outcome, Recipient, Status};
pub use store::{BroadcastStore, PostgresBroadcasts, RocksBroadcasts};
