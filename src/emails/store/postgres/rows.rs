//! An email's row: the statements that write it, the columns that read it, and its
//! attempt log.

use std::collections::HashMap;

use herald_queue::Id;
use tokio_postgres::Row;

use crate::emails::record::{AttemptLog, EmailRecord, EmailStatus, Tag, TemplateRef};
use crate::storage::Error;
use crate::storage::postgres::{Value, enum_text, from_driver, text_enum, time, timestamp};

/// The table's name, for corrupt-record errors.
const TABLE: &str = "emails";

/// The columns an email is read from, in the order [`record`] reads them: the record's
/// (as [`record_values`] writes them), then the status's.
pub(super) const COLUMNS: &str = "id, team_id, api_key_id, from_address, to_addresses, cc, bcc, reply_to, subject, \
     html, text_body, tag_names, tag_values, created_at, scheduled_at, message_id, size, source, template_id, \
     template_version_id, topic_id, content_expired, content_in_message, text_derived, line_feeds, broadcast_id, \
     request_log_id, last_event, opened, clicked";

/// Writes a new email: [`record_values`], then its `last_event`. Run again, it changes
/// nothing.
pub(super) const INSERT: &str = "INSERT INTO emails (id, team_id, api_key_id, from_address, to_addresses, cc, bcc,
        reply_to, subject, html, text_body, tag_names, tag_values, created_at, scheduled_at, message_id, size, source,
        template_id, template_version_id, topic_id, content_expired, content_in_message, text_derived, line_feeds,
        broadcast_id, request_log_id, last_event)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
        $24, $25, $26, $27, $28)
    ON CONFLICT (id) DO NOTHING";

/// Rewrites what the record holds of an email (not its status): [`record_values`].
pub(super) const UPDATE_RECORD: &str = "UPDATE emails SET api_key_id = $3, from_address = $4, to_addresses = $5,
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
pub(super) fn record_values(record: &EmailRecord) -> Vec<Value> {
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
