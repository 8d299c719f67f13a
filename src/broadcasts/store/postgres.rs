//! Broadcasts in PostgreSQL (`broadcasts`, `broadcast_recipients`,
//! `broadcast_email_counts`; see the schema's seventh migration): any node's worker can
//! take up a broadcast, and its outcomes show on every node. The worker's queue is the
//! broadcasts scheduled or sending (a partial index); each broadcast's emails are counted
//! by status as they move ([`stage_count`], staged by the email store in the change that
//! moves them), and the emails a cancel took back under [`TAKEN_BACK`].

use std::collections::BTreeMap;

use herald_queue::{Id, Store};
use tokio_postgres::Row;

use super::BroadcastStore;
use crate::broadcasts::model::{Broadcast, Counts, Recipient};
use crate::emails::state::EmailState;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{
    Postgres, Statement, Value, enum_text, from_driver, page_of, page_params, page_sql, text_enum, time, timestamp,
};
use crate::storage::{Change, Error};

/// The count, among a broadcast's email counts, of the emails a cancel took back (not an
/// email state).
pub(super) const TAKEN_BACK: &str = "taken_back";

/// The table's name, for corrupt-record errors.
const TABLE: &str = "broadcasts";

/// The columns of `broadcasts`, in the order [`broadcast`] reads them and [`WRITE`]
/// writes them.
const COLUMNS: &str = "id, team_id, name, segment_id, from_address, subject, reply_to, html, text_body, mjml, \
     preview_text, topic_id, status, created_at, scheduled_at, sent_at, finished_at, cursor_contact, total, sent, \
     unsubscribed, suppressed, failed, canceled, counted";

/// Writes a broadcast, new or changed ([`values`]).
pub(super) const WRITE: &str =
    "INSERT INTO broadcasts (id, team_id, name, segment_id, from_address, subject, reply_to, html,
        text_body, mjml, preview_text, topic_id, status, created_at, scheduled_at, sent_at, finished_at,
        cursor_contact, total, sent, unsubscribed, suppressed, failed, canceled, counted)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
        $23, $24, $25)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, segment_id = EXCLUDED.segment_id,
        from_address = EXCLUDED.from_address, subject = EXCLUDED.subject, reply_to = EXCLUDED.reply_to,
        html = EXCLUDED.html, text_body = EXCLUDED.text_body, mjml = EXCLUDED.mjml,
        preview_text = EXCLUDED.preview_text, topic_id = EXCLUDED.topic_id, status = EXCLUDED.status,
        created_at = EXCLUDED.created_at, scheduled_at = EXCLUDED.scheduled_at, sent_at = EXCLUDED.sent_at,
        finished_at = EXCLUDED.finished_at, cursor_contact = EXCLUDED.cursor_contact, total = EXCLUDED.total,
        sent = EXCLUDED.sent, unsubscribed = EXCLUDED.unsubscribed, suppressed = EXCLUDED.suppressed,
        failed = EXCLUDED.failed, canceled = EXCLUDED.canceled, counted = EXCLUDED.counted";

/// Adds to a broadcast's count ([`count_values`]).
pub(super) const COUNT: &str =
    "INSERT INTO broadcast_email_counts (broadcast_id, state, team_id, n) VALUES ($1, $2, $3, $4)
    ON CONFLICT (broadcast_id, state) DO UPDATE SET n = broadcast_email_counts.n + EXCLUDED.n";

/// Broadcasts in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresBroadcasts {
    db: Postgres,
    node: Store,
}

impl PostgresBroadcasts {
    /// Broadcasts in `db`, whose schema is migrated; `node` is the node's own store, which
    /// commits the changes staged here.
    pub fn new(db: Postgres, node: Store) -> PostgresBroadcasts {
        PostgresBroadcasts { db, node }
    }
}

/// Writes the marker of one contact of a broadcast, new or changed
/// ([`recipient_values`]); nothing when the broadcast is gone.
pub(super) const WRITE_RECIPIENT: &str = "INSERT INTO broadcast_recipients (broadcast_id, contact_id, team_id, email,
        outcome, email_id, reason)
    SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM broadcasts WHERE id = $1)
    ON CONFLICT (broadcast_id, contact_id) DO UPDATE SET email = EXCLUDED.email,
        outcome = EXCLUDED.outcome, email_id = EXCLUDED.email_id, reason = EXCLUDED.reason";

/// The values of [`COUNT`]: `delta` on the count of `broadcast`'s emails in `state` (an
/// email state's name, or [`TAKEN_BACK`]).
pub(super) fn count_values(team_id: Id, broadcast: Id, state: &str, delta: i64) -> Vec<Value> {
    vec![
        Box::new(broadcast.uuid()),
        Box::new(state.to_owned()),
        Box::new(team_id.uuid()),
        Box::new(delta),
    ]
}

/// The values of [`WRITE_RECIPIENT`] for `recipient`, a contact of `team_id`'s broadcast
/// `broadcast`.
pub(super) fn recipient_values(team_id: Id, broadcast: Id, recipient: &Recipient) -> Vec<Value> {
    vec![
        Box::new(broadcast.uuid()),
        Box::new(recipient.contact_id.uuid()),
        Box::new(team_id.uuid()),
        Box::new(recipient.email.clone()),
        Box::new(enum_text(&recipient.outcome)),
        Box::new(recipient.email_id.map(|id| id.uuid())),
        Box::new(recipient.reason.clone()),
    ]
}

/// Stages `delta` on the count of `broadcast`'s emails in `state`: for the email store,
/// in the change that moves an email of a broadcast. Not safe to run twice (a count);
/// issue 43's outbox must apply it once.
pub(crate) fn stage_count(
    change: &mut Change,
    db: &Postgres,
    team_id: Id,
    broadcast: Id,
    state: EmailState,
    delta: i64,
) {
    change.stage_shared(Statement::new(
        db,
        COUNT,
        count_values(team_id, broadcast, &enum_text(&state), delta),
    ));
}

fn count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uncount(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The values of [`WRITE`] for `broadcast`.
pub(super) fn values(broadcast: &Broadcast) -> Vec<Value> {
    vec![
        Box::new(broadcast.id.uuid()),
        Box::new(broadcast.team_id.uuid()),
        Box::new(broadcast.name.clone()),
        Box::new(broadcast.segment_id.uuid()),
        Box::new(broadcast.from.clone()),
        Box::new(broadcast.subject.clone()),
        Box::new(broadcast.reply_to.clone()),
        Box::new(broadcast.html.clone()),
        Box::new(broadcast.text.clone()),
        Box::new(broadcast.mjml.clone()),
        Box::new(broadcast.preview_text.clone()),
        Box::new(broadcast.topic_id.map(|id| id.uuid())),
        Box::new(enum_text(&broadcast.status)),
        Box::new(time(broadcast.created_at)),
        Box::new(broadcast.scheduled_at.map(time)),
        Box::new(broadcast.sent_at.map(time)),
        Box::new(broadcast.finished_at.map(time)),
        Box::new(broadcast.cursor.map(|id| id.uuid())),
        Box::new(count(broadcast.counts.total)),
        Box::new(count(broadcast.counts.sent)),
        Box::new(count(broadcast.counts.unsubscribed)),
        Box::new(count(broadcast.counts.suppressed)),
        Box::new(count(broadcast.counts.failed)),
        Box::new(count(broadcast.counts.canceled)),
        Box::new(broadcast.counted),
    ]
}

fn broadcast(row: &Row) -> Result<Broadcast, Error> {
    let id = |index: usize| row.get::<_, Option<uuid::Uuid>>(index).map(Id::from);
    let at = |index: usize| row.get::<_, Option<std::time::SystemTime>>(index).map(timestamp);
    Ok(Broadcast {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        name: row.get(2),
        segment_id: Id::from(row.get::<_, uuid::Uuid>(3)),
        from: row.get(4),
        subject: row.get(5),
        reply_to: row.get(6),
        html: row.get(7),
        text: row.get(8),
        mjml: row.get(9),
        preview_text: row.get(10),
        topic_id: id(11),
        status: text_enum(TABLE, row.get(12))?,
        created_at: timestamp(row.get(13)),
        scheduled_at: at(14),
        sent_at: at(15),
        finished_at: at(16),
        cursor: id(17),
        counts: Counts {
            total: uncount(row.get(18)),
            sent: uncount(row.get(19)),
            unsubscribed: uncount(row.get(20)),
            suppressed: uncount(row.get(21)),
            failed: uncount(row.get(22)),
            canceled: uncount(row.get(23)),
        },
        counted: row.get(24),
    })
}

fn recipient(row: &Row) -> Result<Recipient, Error> {
    Ok(Recipient {
        contact_id: Id::from(row.get::<_, uuid::Uuid>(0)),
        email: row.get(1),
        outcome: text_enum("broadcast_recipients", row.get(2))?,
        email_id: row.get::<_, Option<uuid::Uuid>>(3).map(Id::from),
        reason: row.get(4),
    })
}

impl BroadcastStore for PostgresBroadcasts {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Broadcast>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM broadcasts WHERE team_id = $1 AND id = $2");
        self.db.one(&sql, &[&team_id.uuid(), &id.uuid()], broadcast)
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Broadcast>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM broadcasts WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(broadcast).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(found, page))
        })
    }

    fn queued(&self) -> Result<Vec<Broadcast>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM broadcasts WHERE status IN ('scheduled', 'sending') ORDER BY id");
        self.db.all(&sql, &[], broadcast)
    }

    fn put(&self, broadcast: &Broadcast) -> Result<(), Error> {
        let mut change = Change::new();
        self.stage(&mut change, broadcast)?;
        self.commit(change)
    }

    fn stage(&self, change: &mut Change, broadcast: &Broadcast) -> Result<(), Error> {
        change.stage_shared(Statement::new(&self.db, WRITE, values(broadcast)));
        Ok(())
    }

    fn delete(&self, broadcast: &Broadcast) -> Result<(), Error> {
        self.db.execute(
            "DELETE FROM broadcasts WHERE team_id = $1 AND id = $2",
            &[&broadcast.team_id.uuid(), &broadcast.id.uuid()],
        )?;
        Ok(())
    }

    fn recipient(&self, broadcast: &Broadcast, contact_id: Id) -> Result<Option<Recipient>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT contact_id, email, outcome, email_id, reason FROM broadcast_recipients
                     WHERE broadcast_id = $1 AND contact_id = $2 AND team_id = $3",
                    &[&broadcast.id.uuid(), &contact_id.uuid(), &broadcast.team_id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            row.as_ref().map(recipient).transpose()
        })
    }

    fn recipients(&self, broadcast: &Broadcast, after: Option<Id>, limit: usize) -> Result<Vec<Recipient>, Error> {
        let after = after.map(|id| id.uuid());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT contact_id, email, outcome, email_id, reason FROM broadcast_recipients
                     WHERE broadcast_id = $1 AND team_id = $2 AND ($3::uuid IS NULL OR contact_id > $3)
                     ORDER BY contact_id LIMIT $4",
                    &[&broadcast.id.uuid(), &broadcast.team_id.uuid(), &after, &limit],
                )
                .await
                .map_err(from_driver)?;
            rows.iter().map(recipient).collect()
        })
    }

    fn stage_recipient(&self, change: &mut Change, broadcast: &Broadcast, recipient: &Recipient) -> Result<(), Error> {
        change.stage_shared(Statement::new(
            &self.db,
            WRITE_RECIPIENT,
            recipient_values(broadcast.team_id, broadcast.id, recipient),
        ));
        Ok(())
    }

    fn states(&self, team_id: Id, broadcast: Id) -> Result<BTreeMap<EmailState, u64>, Error> {
        self.db.run(async |client| {
            let rows = client
                .query(
                    "SELECT state, n FROM broadcast_email_counts
                     WHERE broadcast_id = $1 AND team_id = $2 AND state <> $3 AND n > 0",
                    &[&broadcast.uuid(), &team_id.uuid(), &TAKEN_BACK],
                )
                .await
                .map_err(from_driver)?;
            rows.iter()
                .map(|row| Ok((text_enum("broadcast_email_counts", row.get(0))?, uncount(row.get(1)))))
                .collect()
        })
    }

    fn canceled(&self, team_id: Id, broadcast: Id) -> Result<u64, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT n FROM broadcast_email_counts WHERE broadcast_id = $1 AND team_id = $2 AND state = $3",
                    &[&broadcast.uuid(), &team_id.uuid(), &TAKEN_BACK],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.map_or(0, |row| uncount(row.get(0))))
        })
    }

    fn count_canceled(&self, change: &mut Change, team_id: Id, broadcast: Id) {
        change.stage_shared(Statement::new(
            &self.db,
            COUNT,
            count_values(team_id, broadcast, TAKEN_BACK, 1),
        ));
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // Markers go with their broadcasts (ON DELETE CASCADE).
            transaction
                .execute("DELETE FROM broadcasts WHERE team_id = $1", &[&team_id.uuid()])
                .await
                .map_err(from_driver)?;
            transaction
                .execute(
                    "DELETE FROM broadcast_email_counts WHERE team_id = $1",
                    &[&team_id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)?;
            Ok(false)
        })
    }

    fn commit(&self, change: Change) -> Result<(), Error> {
        Ok(self.node.commit(change.into_local()?).wait()?)
    }
}
