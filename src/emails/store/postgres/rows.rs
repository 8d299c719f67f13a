//! An email's row: the statements that write it, the columns that read it, its attempt
//! log and its timeline's events. Shared by [`super::PostgresEmails`] and the copy of a
//! node's emails ([`super::super::copy`]), so that both write the same rows.

use std::collections::HashMap;

use herald_queue::Id;
use tokio_postgres::Row;

use crate::emails::record::{AttemptLog, EmailEvent, EmailRecord, EmailStatus, Tag, TemplateRef};
use crate::storage::Error;
use crate::storage::postgres::{Value, enum_text, from_driver, text_enum, time, timestamp};

/// The table's name, for corrupt-record errors.
const TABLE: &str = "emails";

/// The columns an email is read from, in the order [`record`] reads them: the record's
/// (as [`record_values`] writes them), then the status's.
pub(in crate::emails::store) const COLUMNS: &str = "id, team_id, api_key_id, from_address, to_addresses, cc, bcc, reply_to, subject, \
     html, text_body, tag_names, tag_values, created_at, scheduled_at, message_id, size, source, template_id, \
     template_version_id, topic_id, content_expired, content_in_message, text_derived, line_feeds, broadcast_id, \
     request_log_id, last_event, opened, clicked";

/// Writes a new email: [`record_values`], then its `last_event`. Run again, it changes
/// nothing.
pub(in crate::emails::store) const INSERT: &str =
    "INSERT INTO emails (id, team_id, api_key_id, from_address, to_addresses, cc, bcc,
        reply_to, subject, html, text_body, tag_names, tag_values, created_at, scheduled_at, message_id, size, source,
        template_id, template_version_id, topic_id, content_expired, content_in_message, text_derived, line_feeds,
        broadcast_id, request_log_id, last_event)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
        $24, $25, $26, $27, $28)
    ON CONFLICT (id) DO NOTHING";

/// Rewrites what the record holds of an email (not its status): [`record_values`].
pub(in crate::emails::store) const UPDATE_RECORD: &str =
    "UPDATE emails SET api_key_id = $3, from_address = $4, to_addresses = $5,
        cc = $6, bcc = $7, reply_to = $8, subject = $9, html = $10, text_body = $11, tag_names = $12,
        tag_values = $13, created_at = $14, scheduled_at = $15, message_id = $16, size = $17, source = $18,
        template_id = $19, template_version_id = $20, topic_id = $21, content_expired = $22,
        content_in_message = $23, text_derived = $24, line_feeds = $25, broadcast_id = $26, request_log_id = $27
    WHERE id = $1 AND team_id = $2";

/// An email as read: its record (without its attempts, read apart) and what its status
/// adds.
pub(super) struct Stored {
    /// The record, with its status's `last_event`.
    pub(super) record: EmailRecord,
    /// Whether it was opened.
    pub(super) opened: bool,
    /// Whether a link in it was clicked.
    pub(super) clicked: bool,
}

/// The values of the record's columns, `$1` to `$27`.
pub(in crate::emails::store) fn record_values(record: &EmailRecord) -> Vec<Value> {
    vec![
        Box::new(record.id.uuid()),
        Box::new(record.team_id.uuid()),
        Box::new(record.api_key_id.map(|id| id.uuid())),
        Box::new(record.from.clone()),
        Box::new(record.to.clone()),
        Box::new(record.cc.clone()),
        Box::new(record.bcc.clone()),
        Box::new(record.reply_to.clone()),
        Box::new(record.subject.clone()),
        Box::new(record.html.clone()),
        Box::new(record.text.clone()),
        Box::new(record.tags.iter().map(|tag| tag.name.clone()).collect::<Vec<_>>()),
        Box::new(record.tags.iter().map(|tag| tag.value.clone()).collect::<Vec<_>>()),
        Box::new(time(record.created_at)),
        Box::new(record.scheduled_at.map(time)),
        Box::new(record.message_id.clone()),
        Box::new(i64::try_from(record.size).unwrap_or(i64::MAX)),
        Box::new(enum_text(&record.source)),
        Box::new(record.template.map(|template| template.id.uuid())),
        Box::new(record.template.map(|template| template.version_id.uuid())),
        Box::new(record.topic_id.map(|id| id.uuid())),
        Box::new(record.content_expired),
        Box::new(record.content_in_message),
        Box::new(record.text_derived),
        Box::new(record.line_feeds),
        Box::new(record.broadcast_id.map(|id| id.uuid())),
        Box::new(record.request_log_id.map(|id| id.uuid())),
    ]
}

/// The values of [`INSERT`] for a new email: [`record_values`], then its `last_event`.
pub(in crate::emails::store) fn create_values(record: &EmailRecord) -> Vec<Value> {
    let mut values = record_values(record);
    values.push(Box::new(enum_text(&record.last_event)));
    values
}

/// Rewrites what an email's status adds to its row (its attempts apart):
/// [`status_values`].
pub(in crate::emails::store) const UPDATE_STATUS: &str =
    "UPDATE emails SET last_event = $2, opened = $3, clicked = $4 WHERE id = $1";

/// The values of [`UPDATE_STATUS`] for `status`.
pub(in crate::emails::store) fn status_values(status: &EmailStatus) -> Vec<Value> {
    vec![
        Box::new(status.id.uuid()),
        Box::new(enum_text(&status.last_event)),
        Box::new(status.opened),
        Box::new(status.clicked),
    ]
}

/// Writes one attempt of an email's log, at its position ([`attempt_values`]); nothing
/// when the email's row is gone.
pub(in crate::emails::store) const INSERT_ATTEMPT: &str = "INSERT INTO email_attempts (email_id, position, at,
        recipients, host, ip, source, tls, reply)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM emails WHERE id = $1)";

/// The values of [`INSERT_ATTEMPT`] for the attempt at `position` of the email `email_id`.
pub(in crate::emails::store) fn attempt_values(email_id: Id, position: usize, attempt: &AttemptLog) -> Vec<Value> {
    vec![
        Box::new(email_id.uuid()),
        Box::new(i32::try_from(position).unwrap_or(i32::MAX)),
        Box::new(time(attempt.at)),
        Box::new(attempt.recipients.clone()),
        Box::new(attempt.host.clone()),
        Box::new(attempt.ip.clone()),
        Box::new(attempt.source.clone()),
        Box::new(attempt.tls.clone()),
        Box::new(attempt.reply.clone()),
    ]
}

/// Writes an event of an email's timeline ([`event_values`]); nothing when the email's
/// row is gone, and run again, nothing more.
pub(in crate::emails::store) const INSERT_EVENT: &str =
    "INSERT INTO email_events (id, email_id, kind, created_at, data)
        SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM emails WHERE id = $2)
    ON CONFLICT (id) DO NOTHING";

/// The values of [`INSERT_EVENT`] for `event`.
pub(in crate::emails::store) fn event_values(event: &EmailEvent) -> Vec<Value> {
    vec![
        Box::new(event.id.uuid()),
        Box::new(event.email_id.uuid()),
        Box::new(enum_text(&event.kind)),
        Box::new(time(event.created_at)),
        Box::new(event.data.clone()),
    ]
}

fn id(row: &Row, index: usize) -> Option<Id> {
    row.get::<_, Option<uuid::Uuid>>(index).map(Id::from)
}

/// The email of `row` ([`COLUMNS`]).
pub(super) fn record(row: &Row) -> Result<Stored, Error> {
    let names: Vec<String> = row.get(11);
    let values: Vec<String> = row.get(12);
    let template = match (id(row, 18), id(row, 19)) {
        (Some(id), Some(version_id)) => Some(TemplateRef { id, version_id }),
        _ => None,
    };
    let record = EmailRecord {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        api_key_id: id(row, 2),
        from: row.get(3),
        to: row.get(4),
        cc: row.get(5),
        bcc: row.get(6),
        reply_to: row.get(7),
        subject: row.get(8),
        html: row.get(9),
        text: row.get(10),
        tags: names
            .into_iter()
            .zip(values)
            .map(|(name, value)| Tag { name, value })
            .collect(),
        created_at: timestamp(row.get(13)),
        scheduled_at: row.get::<_, Option<std::time::SystemTime>>(14).map(timestamp),
        message_id: row.get(15),
        size: u64::try_from(row.get::<_, i64>(16)).unwrap_or(0),
        source: text_enum(TABLE, row.get(17))?,
        template,
        topic_id: id(row, 20),
        attempts: Vec::new(),
        content_expired: row.get(21),
        content_in_message: row.get(22),
        text_derived: row.get(23),
        line_feeds: row.get(24),
        broadcast_id: id(row, 25),
        request_log_id: id(row, 26),
        last_event: text_enum(TABLE, row.get(27))?,
    };
    Ok(Stored {
        record,
        opened: row.get(28),
        clicked: row.get(29),
    })
}

/// The status of `stored`.
pub(super) fn status_of(stored: &Stored) -> EmailStatus {
    EmailStatus {
        opened: stored.opened,
        clicked: stored.clicked,
        ..stored.record.status()
    }
}

/// The attempt logs of the emails `ids`, in order, by email.
pub(super) async fn attempts_of(
    client: &tokio_postgres::Client,
    ids: &[uuid::Uuid],
) -> Result<HashMap<Id, Vec<AttemptLog>>, Error> {
    let mut logs: HashMap<Id, Vec<AttemptLog>> = HashMap::new();
    if ids.is_empty() {
        return Ok(logs);
    }
    let rows = client
        .query(
            "SELECT email_id, at, recipients, host, ip, source, tls, reply FROM email_attempts
             WHERE email_id = ANY($1) ORDER BY email_id, position",
            &[&ids],
        )
        .await
        .map_err(from_driver)?;
    for row in &rows {
        logs.entry(Id::from(row.get::<_, uuid::Uuid>(0)))
            .or_default()
            .push(AttemptLog {
                at: timestamp(row.get(1)),
                recipients: row.get(2),
                host: row.get(3),
                ip: row.get(4),
                source: row.get(5),
                tls: row.get(6),
                reply: row.get(7),
            });
    }
    Ok(logs)
}
