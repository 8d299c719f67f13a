//! Webhook endpoints in PostgreSQL (`webhooks`; see the schema's first migration): shared
//! by every node, so an endpoint made through one receives the events of all.

use herald_queue::Id;
use tokio_postgres::Row;

use super::WebhookStore;
use crate::storage::Error;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{Postgres, Value, from_driver, page_of, page_params, page_sql, time, timestamp};
use crate::webhooks::model::{PreviousSecret, Webhook, WebhookStatus};
use crate::webhooks::secret::SigningSecret;

/// The columns of `webhooks`, in the order [`webhook`] reads them.
const COLUMNS: &str =
    "id, team_id, endpoint, events, enabled, signing_secret, previous_secret, previous_secret_until, created_at";

/// Writes an endpoint, new or changed.
pub(super) const PUT: &str = "INSERT INTO webhooks (id, team_id, endpoint, events, enabled, signing_secret,
        previous_secret, previous_secret_until, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (id) DO UPDATE SET endpoint = EXCLUDED.endpoint, events = EXCLUDED.events,
        enabled = EXCLUDED.enabled, signing_secret = EXCLUDED.signing_secret,
        previous_secret = EXCLUDED.previous_secret, previous_secret_until = EXCLUDED.previous_secret_until";

/// The values of [`PUT`] for `webhook`.
pub(super) fn values(webhook: &Webhook) -> Vec<Value> {
    let previous = webhook.previous_secret.as_ref();
    vec![
        Box::new(webhook.id.uuid()),
        Box::new(webhook.team_id.uuid()),
        Box::new(webhook.endpoint.clone()),
        Box::new(webhook.events.clone()),
        Box::new(webhook.status == WebhookStatus::Enabled),
        Box::new(webhook.signing_secret.expose().to_owned()),
        Box::new(previous.map(|previous| previous.secret.expose().to_owned())),
        Box::new(previous.map(|previous| time(previous.until))),
        Box::new(time(webhook.created_at)),
    ]
}

/// Webhook endpoints in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresWebhooks {
    db: Postgres,
}

impl PostgresWebhooks {
    /// Webhooks in `db`, whose schema is migrated.
    pub fn new(db: Postgres) -> PostgresWebhooks {
        PostgresWebhooks { db }
    }
}

fn webhook(row: &Row) -> Webhook {
    let previous_secret = match (
        row.get::<_, Option<String>>(6),
        row.get::<_, Option<std::time::SystemTime>>(7),
    ) {
        (Some(secret), Some(until)) => Some(PreviousSecret {
            secret: SigningSecret::from_stored(secret),
            until: timestamp(until),
        }),
        _ => None,
    };
    Webhook {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        endpoint: row.get(2),
        events: row.get(3),
        status: if row.get(4) {
            WebhookStatus::Enabled
        } else {
            WebhookStatus::Disabled
        },
        signing_secret: SigningSecret::from_stored(row.get(5)),
        previous_secret,
        created_at: timestamp(row.get(8)),
    }
}

impl WebhookStore for PostgresWebhooks {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Webhook>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE team_id = $1 AND id = $2");
        self.db
            .one(&sql, &[&team_id.uuid(), &id.uuid()], |row| Ok(webhook(row)))
    }

    fn for_team(&self, team_id: Id) -> Result<Vec<Webhook>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE team_id = $1 ORDER BY id");
        self.db.all(&sql, &[&team_id.uuid()], |row| Ok(webhook(row)))
    }

    fn any(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM webhooks WHERE team_id = $1)",
                    &[&team_id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get(0))
        })
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Webhook>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM webhooks WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            Ok(page_of(rows.iter().map(webhook).collect(), page))
        })
    }

    fn put(&self, webhook: &Webhook) -> Result<(), Error> {
        let values = values(webhook);
        let values: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            values.iter().map(|value| &**value as _).collect();
        self.db.execute(PUT, &values)?;
        Ok(())
    }

    fn delete(&self, webhook: &Webhook) -> Result<(), Error> {
        self.db.execute(
            "DELETE FROM webhooks WHERE team_id = $1 AND id = $2",
            &[&webhook.team_id.uuid(), &webhook.id.uuid()],
        )?;
        Ok(())
    }
}
