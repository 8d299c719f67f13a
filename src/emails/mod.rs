//! Emails: validation, MIME building, records and events, idempotency, and the one path
//! that spools them ([`submit`]), shared by the REST API and SMTP submission.

pub mod accept;
pub mod address;
pub mod browse;
pub mod by_status;
pub mod content;
pub mod idempotency;
pub mod input;
pub mod mime;
pub mod raw;
pub mod record;
pub mod retention;
pub mod schedule;
pub mod service;
pub mod state;
pub mod submit;
pub mod validate;

pub use address::Mailbox;
pub use record::{EmailEvent, EmailRecord, Source};
pub use state::EmailState;
pub use submit::{Prepared, SendError, Sender};
pub use validate::{Email, Invalid, validate};
