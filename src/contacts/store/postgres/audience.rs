//! A team's segments, topics, property definitions and imports in PostgreSQL: a row each
//! in `segments`, `topics`, `contact_properties` and `contact_imports` (see [`imports`]).
//! A topic's event goes to the node's outbox after the topic is committed.

use std::sync::Arc;

use herald_queue::{Batch, Id};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{PostgresContacts, imports, outbox};
use crate::contacts::model::{ContactImport, ContactProperty, ImportError, Segment, Topic};
use crate::contacts::store::AudienceStore;
use crate::events::Event;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;
use crate::storage::postgres::due::{DeleteRows, RowQueue};
use crate::storage::postgres::{
    Postgres, Value, enum_text, from_driver, page_of, page_params, page_sql, text_enum, time, timestamp,
};
use crate::storage::{Change, Error};

/// Segments' entries, or import's refused rows, deleted per pass of `erase_team`: a
/// team's segments may index millions of contacts, and an import refuse a million rows.
const ERASE_BATCH: i64 = 10_000;

const SEGMENT_COLUMNS: &str = "id, team_id, name, created_at";

const TOPIC_COLUMNS: &str = "id, team_id, name, description, default_subscription, visibility, created_at, updated_at";

const PROPERTY_COLUMNS: &str = "id, team_id, key, kind, fallback_value, created_at";

/// Writes a segment, new or changed.
pub(in crate::contacts::store) const PUT_SEGMENT: &str =
    "INSERT INTO segments (id, team_id, name, created_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, created_at = EXCLUDED.created_at";

/// Writes a topic, new or changed.
pub(in crate::contacts::store) const PUT_TOPIC: &str =
    "INSERT INTO topics (id, team_id, name, description, default_subscription, visibility,
        created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description,
        default_subscription = EXCLUDED.default_subscription, visibility = EXCLUDED.visibility,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at";

/// Writes a property definition, new or changed.
pub(in crate::contacts::store) const PUT_PROPERTY: &str =
    "INSERT INTO contact_properties (id, team_id, key, kind, fallback_value, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (id) DO UPDATE SET key = EXCLUDED.key, kind = EXCLUDED.kind,
        fallback_value = EXCLUDED.fallback_value, created_at = EXCLUDED.created_at";

/// The values of [`PUT_SEGMENT`] for `segment`.
pub(in crate::contacts::store) fn segment_values(segment: &Segment) -> Vec<Value> {
    vec![
        Box::new(segment.id.uuid()),
        Box::new(segment.team_id.uuid()),
        Box::new(segment.name.clone()),
        Box::new(time(segment.created_at)),
    ]
}

/// The values of [`PUT_TOPIC`] for `topic`.
pub(in crate::contacts::store) fn topic_values(topic: &Topic) -> Vec<Value> {
    vec![
        Box::new(topic.id.uuid()),
        Box::new(topic.team_id.uuid()),
        Box::new(topic.name.clone()),
        Box::new(topic.description.clone()),
        Box::new(enum_text(&topic.default_subscription)),
        Box::new(enum_text(&topic.visibility)),
        Box::new(time(topic.created_at)),
        Box::new(time(topic.updated_at)),
    ]
}

/// The values of [`PUT_PROPERTY`] for `property`.
pub(in crate::contacts::store) fn property_values(property: &ContactProperty) -> Vec<Value> {
    vec![
        Box::new(property.id.uuid()),
        Box::new(property.team_id.uuid()),
        Box::new(property.key.clone()),
        Box::new(enum_text(&property.kind)),
        Box::new(property.fallback_value.clone()),
        Box::new(time(property.created_at)),
    ]
}

fn segment(row: &Row) -> Result<Segment, Error> {
    Ok(Segment {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        name: row.get(2),
        created_at: timestamp(row.get(3)),
    })
}

fn topic(row: &Row) -> Result<Topic, Error> {
    Ok(Topic {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        name: row.get(2),
        description: row.get(3),
        default_subscription: text_enum("topics", row.get(4))?,
        visibility: text_enum("topics", row.get(5))?,
        created_at: timestamp(row.get(6)),
        updated_at: timestamp(row.get(7)),
    })
}

fn property(row: &Row) -> Result<ContactProperty, Error> {
    Ok(ContactProperty {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        key: row.get(2),
        kind: text_enum("contact_properties", row.get(3))?,
        fallback_value: row.get(4),
        created_at: timestamp(row.get(5)),
    })
}

/// Every row `select` (a `SELECT` of one table with `team_id` and `id` columns) finds of
/// `team_id`, by id, each read by `read`.
fn all<T>(db: &Postgres, select: &str, team_id: Id, read: fn(&Row) -> Result<T, Error>) -> Result<Vec<T>, Error> {
    db.run(async |client| {
        let sql = format!("{select} WHERE team_id = $1 ORDER BY id");
        let rows = client.query(&sql, &[&team_id.uuid()]).await.map_err(from_driver)?;
        rows.iter().map(read).collect()
    })
}

/// The one row `select` finds of `team_id` with `id`.
fn one<T>(
    db: &Postgres,
    select: &str,
    team_id: Id,
    id: Id,
    read: fn(&Row) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    db.run(async |client| {
        let sql = format!("{select} WHERE team_id = $1 AND id = $2");
        let row = client
            .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
            .await
            .map_err(from_driver)?;
        row.as_ref().map(read).transpose()
    })
}

/// One page of what `select` finds of `team_id`, newest first.
fn page<T>(
    db: &Postgres,
    select: &str,
    team_id: Id,
    page: &PageRequest,
    read: fn(&Row) -> Result<T, Error>,
) -> Result<(Vec<T>, bool), Error> {
    db.run(async |client| {
        let sql = format!("{select} WHERE team_id = $1 AND {}", page_sql(page, 2, 3));
        let (cursor, limit) = page_params(page);
        let rows = client
            .query(&sql, &[&team_id.uuid(), &cursor, &limit])
            .await
            .map_err(from_driver)?;
        let found = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
        Ok(page_of(found, page))
    })
}

/// Runs `sql` with `values` on `db`.
fn execute(db: &Postgres, sql: &str, values: &[&(dyn ToSql + Sync)]) -> Result<(), Error> {
    db.run(async |client| {
        client.execute(sql, values).await.map_err(from_driver)?;
        Ok(())
    })
}

/// `values` as the driver takes them.
fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|value| &**value as _).collect()
}

impl PostgresContacts {
    /// Runs `sql` with `values`, then puts `event` in the node's outbox.
    fn write_with(&self, sql: &str, values: &[&(dyn ToSql + Sync)], event: Option<&Event>) -> Result<(), Error> {
        execute(&self.db, sql, values)?;
        let Some(event) = event else {
            return Ok(());
        };
        let mut batch = Batch::new();
        outbox(&mut batch, [event])?;
        Ok(self.node.commit(batch).wait()?)
    }

    /// Deletes at most [`ERASE_BATCH`] rows of `table` chosen by `picked` (a `SELECT` of
    /// the table's key columns `key`, `$1` the team, `$2` the limit); whether it deleted
    /// that many (so more may be left).
    fn erase_some(&self, table: &str, key: &str, picked: &str, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            let sql = format!("DELETE FROM {table} WHERE ({key}) IN ({picked})");
            let deleted = client
                .execute(&sql, &[&team_id.uuid(), &ERASE_BATCH])
                .await
                .map_err(from_driver)?;
            Ok(deleted >= ERASE_BATCH.unsigned_abs())
        })
    }
}

impl AudienceStore for PostgresContacts {
    fn segment(&self, team_id: Id, id: Id) -> Result<Option<Segment>, Error> {
        let select = format!("SELECT {SEGMENT_COLUMNS} FROM segments");
        one(&self.db, &select, team_id, id, segment)
    }

    fn segment_page(&self, team_id: Id, request: &PageRequest) -> Result<(Vec<Segment>, bool), Error> {
        let select = format!("SELECT {SEGMENT_COLUMNS} FROM segments");
        page(&self.db, &select, team_id, request, segment)
    }

    fn segments(&self, team_id: Id) -> Result<Vec<Segment>, Error> {
        all(
            &self.db,
            &format!("SELECT {SEGMENT_COLUMNS} FROM segments"),
            team_id,
            segment,
        )
    }

    fn put_segment(&self, segment: &Segment) -> Result<(), Error> {
        execute(&self.db, PUT_SEGMENT, &params(&segment_values(segment)))
    }

    fn delete_segment(&self, segment: &Segment) -> Result<(), Error> {
        self.db.run(async |client| {
            // However many members, in one transaction; their contacts still name the
            // segment, and readers ignore segments that are gone.
            let transaction = client.transaction().await.map_err(from_driver)?;
            let (team, id) = (segment.team_id.uuid(), segment.id.uuid());
            transaction
                .execute("DELETE FROM segments WHERE team_id = $1 AND id = $2", &[&team, &id])
                .await
                .map_err(from_driver)?;
            transaction
                .execute(
                    "DELETE FROM segment_members WHERE team_id = $1 AND segment_id = $2",
                    &[&team, &id],
                )
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)
        })
    }

    fn topic(&self, team_id: Id, id: Id) -> Result<Option<Topic>, Error> {
        one(
            &self.db,
            &format!("SELECT {TOPIC_COLUMNS} FROM topics"),
            team_id,
            id,
            topic,
        )
    }

    fn topic_page(&self, team_id: Id, request: &PageRequest) -> Result<(Vec<Topic>, bool), Error> {
        page(
            &self.db,
            &format!("SELECT {TOPIC_COLUMNS} FROM topics"),
            team_id,
            request,
            topic,
        )
    }

    fn topics(&self, team_id: Id) -> Result<Vec<Topic>, Error> {
        all(&self.db, &format!("SELECT {TOPIC_COLUMNS} FROM topics"), team_id, topic)
    }

    fn put_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error> {
        self.write_with(PUT_TOPIC, &params(&topic_values(topic)), event)
    }

    fn delete_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error> {
        self.write_with(
            "DELETE FROM topics WHERE team_id = $1 AND id = $2",
            &[&topic.team_id.uuid(), &topic.id.uuid()],
            event,
        )
    }

    fn property(&self, team_id: Id, id: Id) -> Result<Option<ContactProperty>, Error> {
        let select = format!("SELECT {PROPERTY_COLUMNS} FROM contact_properties");
        one(&self.db, &select, team_id, id, property)
    }

    fn property_page(&self, team_id: Id, request: &PageRequest) -> Result<(Vec<ContactProperty>, bool), Error> {
        let select = format!("SELECT {PROPERTY_COLUMNS} FROM contact_properties");
        page(&self.db, &select, team_id, request, property)
    }

    fn properties(&self, team_id: Id) -> Result<Vec<ContactProperty>, Error> {
        let select = format!("SELECT {PROPERTY_COLUMNS} FROM contact_properties");
        all(&self.db, &select, team_id, property)
    }

    fn put_property(&self, property: &ContactProperty) -> Result<(), Error> {
        execute(&self.db, PUT_PROPERTY, &params(&property_values(property)))
    }

    fn delete_property(&self, property: &ContactProperty) -> Result<(), Error> {
        execute(
            &self.db,
            "DELETE FROM contact_properties WHERE team_id = $1 AND id = $2",
            &[&property.team_id.uuid(), &property.id.uuid()],
        )
    }

    fn import(&self, team_id: Id, id: Id) -> Result<Option<ContactImport>, Error> {
        imports::one(&self.db, team_id, id)
    }

    fn import_page(&self, team_id: Id, request: &PageRequest) -> Result<(Vec<ContactImport>, bool), Error> {
        imports::page(&self.db, team_id, request)
    }

    fn unfinished_imports(&self) -> Result<Vec<ContactImport>, Error> {
        imports::unfinished(&self.db)
    }

    fn put_import(&self, import: &ContactImport) -> Result<(), Error> {
        let mut change = Change::new();
        imports::stage_import(&self.db, &mut change, import)?;
        self.commit(change, &[])
    }

    fn import_errors(&self, import: &ContactImport, after: u64, limit: usize) -> Result<Vec<ImportError>, Error> {
        imports::errors(&self.db, import, after, limit)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // The large ones a batch at a time: segments' entries (those of contacts the
        // contact store has not erased yet) and imports' refused rows.
        let more = self.erase_some(
            "segment_members",
            "team_id, segment_id, contact_id",
            "SELECT team_id, segment_id, contact_id FROM segment_members WHERE team_id = $1 LIMIT $2",
            team_id,
        )? || self.erase_some(
            "contact_import_errors",
            "import_id, row_number",
            "SELECT e.import_id, e.row_number FROM contact_import_errors e
                JOIN contact_imports i ON i.id = e.import_id WHERE i.team_id = $1 LIMIT $2",
            team_id,
        )?;
        if more {
            return Ok(true);
        }
        // The rest is bounded by the `[contacts]` limits: in one transaction.
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            for table in ["segments", "topics", "contact_properties", "contact_imports"] {
                let sql = format!("DELETE FROM {table} WHERE team_id = $1");
                transaction
                    .execute(&sql, &[&team_id.uuid()])
                    .await
                    .map_err(from_driver)?;
            }
            transaction.commit().await.map_err(from_driver)?;
            Ok(false)
        })
    }

    fn import_expiry(&self) -> Arc<dyn Sweep> {
        let queue = RowQueue::new(&self.db, self.clock.clone(), "contact_imports", "expires_from");
        Arc::new(DeleteRows::new("imports", queue))
    }
}
