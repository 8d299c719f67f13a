//! Emails: validation, MIME building, records and events, idempotency, and the one path
//! that spools them ([`submit`]), shared by the REST API and SMTP submission.

pub mod accept;
pub mod address;
pub mod browse;
pub mod content;
pub mod idempotency;
pub mod input;
pub mod mime;
pub mod raw;
pub mod record;
pub mod schedule;
pub mod service;
pub mod state;
pub mod store;
pub mod submit;
pub mod validate;

pub use address::Mailbox;
pub use record::{EmailEvent, EmailRecord, Source};
pub use state::EmailState;
pub use store::{EmailStore, PostgresEmails, RocksEmails};
pub use submit::{Prepared, SendError, Sender};
pub use validate::{Email, Invalid, validate};

use crate::services::Services;

/// Locks the email `id` of `team_id` for a read-modify-write of its record and status.
/// Every such change takes it: the API's, opens and clicks, bounces and complaints by
/// mail, the queue's operator actions, a broadcast's cancel, and delivery outcomes
/// ([`lock_many`]), so none of them writes over another's `last_event` (or counts its
/// move twice).
pub fn lock(services: &Services, team_id: herald_queue::Id, id: herald_queue::Id) -> crate::services::Held<'_> {
    services.lock_email(&EmailRecord::key(team_id, id))
}

/// Locks many emails at once, as [`lock`] does each (see [`Services::lock_emails`]).
pub fn lock_many(
    services: &Services,
    emails: impl IntoIterator<Item = (herald_queue::Id, herald_queue::Id)>,
) -> crate::services::Held<'_> {
    let keys: Vec<Vec<u8>> = emails
        .into_iter()
        .map(|(team_id, id)| EmailRecord::key(team_id, id))
        .collect();
    services.lock_emails(keys.iter().map(Vec::as_slice))
}
