//! The node's webhook messages and their attempts, copied into PostgreSQL by `herald
//! store copy` ([`crate::storage::copy`]), row for row as [`super::PostgresWebhookLog`]
//! writes them: a pending message due at its next attempt (the dispatcher's queue is a
//! column of its row there), a final one counting its retention from when it became
//! final, an attempt from when it was made. The node's due and expiry indexes say
//! nothing more, so they are not copied.
//!
//! The event outbox is not copied: it stays in the node's RocksDB on either backend,
//! and the events in it are fanned out by that node once it runs on the database.

use herald_queue::{Id, Table};

use super::postgres::rows::{INSERT_ATTEMPT, WRITE_MESSAGE, attempt_values, message_values};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;
use crate::webhooks::message::{WebhookAttempt, WebhookMessage};

/// Copies every webhook message, then every attempt.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("webhook messages");
    copy.expect("webhook attempts");
    copy.each::<WebhookMessage>(|copy, _, message| {
        let statement = Statement::new(copy.to(), WRITE_MESSAGE, message_values(&message));
        copy.write("webhook messages", statement)
    })?;
    copy.each::<WebhookAttempt>(|copy, key, attempt| {
        let (Some(team_id), Some(webhook_id)) = (
            key.get(..16).and_then(Id::from_slice),
            key.get(16..32).and_then(Id::from_slice),
        ) else {
            return Err(Error::Corrupt {
                table: Table::WEBHOOK_ATTEMPTS.name(),
                reason: "an attempt not under its team and webhook".to_owned(),
            });
        };
        let statement = Statement::new(copy.to(), INSERT_ATTEMPT, attempt_values(team_id, webhook_id, &attempt));
        copy.write("webhook attempts", statement)
    })
}
