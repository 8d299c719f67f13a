//! Suppressed addresses in PostgreSQL (`suppressions`; see the schema's third migration):
//! shared by every node, so an address that bounced through one is suppressed on all.
//! Their `suppression.*` events go to the node's outbox, after the entries are committed.

use herald_queue::{Id, Store};
use tokio_postgres::Row;

use super::SuppressionStore;
use crate::events::Event;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{
    Postgres, Statement, Value, from_driver, page_of, page_params, page_sql, time, timestamp,
};
use crate::storage::{Change, Error};
use crate::suppressions::{Origin, Suppression, normalize};

/// The columns of `suppressions`, in the order [`suppression`] reads them.
const COLUMNS: &str = "id, team_id, email, origin, source_id, created_at";

/// Adds an entry, replacing the address's entry if it has one.
pub(super) const UPSERT: &str = "INSERT INTO suppressions (id, team_id, email, origin, source_id, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (team_id, email) DO UPDATE SET id = EXCLUDED.id, origin = EXCLUDED.origin,
        source_id = EXCLUDED.source_id, created_at = EXCLUDED.created_at";

/// Suppressed addresses in PostgreSQL, their events in the node's outbox.
#[derive(Debug, Clone)]
pub struct PostgresSuppressions {
    db: Postgres,
    node: Store,
}

impl PostgresSuppressions {
    /// Suppressions in `db`, whose schema is migrated; their events go to the outbox in
    /// `node`, the node's own store.
    pub fn new(db: Postgres, node: Store) -> PostgresSuppressions {
        PostgresSuppressions { db, node }
    }
}

fn origin_name(origin: Origin) -> &'static str {
    match origin {
        Origin::Bounce => "bounce",
        Origin::Complaint => "complaint",
        Origin::Manual => "manual",
    }
}

fn suppression(row: &Row) -> Result<Suppression, Error> {
    let origin = match row.get::<_, &str>(3) {
        "bounce" => Origin::Bounce,
        "complaint" => Origin::Complaint,
        "manual" => Origin::Manual,
        other => {
            return Err(Error::Corrupt {
                table: "suppressions",
                reason: format!("unknown origin {other:?}"),
            });
        }
    };
    Ok(Suppression {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        email: row.get(2),
        origin,
        source_id: row.get::<_, Option<uuid::Uuid>>(4).map(Id::from),
        created_at: timestamp(row.get(5)),
    })
}

/// The values of [`UPSERT`] for `suppression`.
pub(super) fn values(suppression: &Suppression) -> Vec<Value> {
    vec![
        Box::new(suppression.id.uuid()),
        Box::new(suppression.team_id.uuid()),
        Box::new(normalize(&suppression.email)),
        Box::new(origin_name(suppression.origin)),
        Box::new(suppression.source_id.map(|id| id.uuid())),
        Box::new(time(suppression.created_at)),
    ]
}

impl SuppressionStore for PostgresSuppressions {
    fn find(&self, team_id: Id, email: &str) -> Result<Option<Suppression>, Error> {
        let email = normalize(email);
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM suppressions WHERE team_id = $1 AND email = $2");
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &email])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(suppression).transpose()
        })
    }

    fn find_by_id(&self, team_id: Id, id: Id) -> Result<Option<Suppression>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM suppressions WHERE team_id = $1 AND id = $2");
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(suppression).transpose()
        })
    }

    fn page(&self, team_id: Id, page: &PageRequest, origin: Option<Origin>) -> Result<(Vec<Suppression>, bool), Error> {
        let origin = origin.map(origin_name);
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM suppressions WHERE team_id = $1 AND ($4::text IS NULL OR origin = $4) AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit, &origin])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(suppression).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(found, page))
        })
    }

    fn apply(&self, added: &[Suppression], removed: &[Suppression], events: &[Event]) -> Result<(), Error> {
        if added.is_empty() && removed.is_empty() && events.is_empty() {
            return Ok(());
        }
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // Removals first: an address removed and added again in one change ends
            // with its new entry.
            for gone in removed {
                transaction
                    .execute(
                        "DELETE FROM suppressions WHERE team_id = $1 AND email = $2",
                        &[&gone.team_id.uuid(), &normalize(&gone.email)],
                    )
                    .await
                    .map_err(from_driver)?;
            }
            for entry in added {
                let values = values(entry);
                let values: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                    values.iter().map(|value| &**value as _).collect();
                transaction.execute(UPSERT, &values).await.map_err(from_driver)?;
            }
            transaction.commit().await.map_err(from_driver)
        })?;
        crate::webhooks::log::commit_events(&self.node, events)
    }

    fn stage(&self, change: &mut Change, suppression: &Suppression) -> Result<(), Error> {
        change.stage_shared(Statement::new(&self.db, UPSERT, values(suppression)));
        Ok(())
    }
}
