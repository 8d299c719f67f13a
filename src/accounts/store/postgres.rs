//! Teams and API keys in PostgreSQL (`teams`, `api_keys`, `api_key_uses`, and the
//! `initialised` row of `herald_meta`; see the schema's first migration): shared by every
//! node, so a key made through one authenticates on all.

use std::sync::Arc;

use herald_queue::{Id, Timestamp};
use tokio_postgres::Row;

use super::{AccountStore, hex_decode};
use crate::accounts::api_key::{ApiKey, Permission};
use crate::accounts::team::Team;
use crate::storage::Error;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{Postgres, from_driver, page_of, page_params, page_sql, time, timestamp};

/// The columns of `teams`, in the order [`team`] reads them.
const TEAM_COLUMNS: &str = "id, name, operator, created_at, rate_limit, plan, deleted_at";

/// The columns of `api_keys`, in the order [`key`] reads them.
const KEY_COLUMNS: &str = "id, team_id, name, permission, domain_id, digest, created_at, last_used_at";

/// Writes a team, new or changed.
pub(super) const PUT_TEAM: &str = "INSERT INTO teams (id, name, operator, created_at, rate_limit, plan, deleted_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, operator = EXCLUDED.operator,
        created_at = EXCLUDED.created_at, rate_limit = EXCLUDED.rate_limit, plan = EXCLUDED.plan,
        deleted_at = EXCLUDED.deleted_at";

/// Writes a new key.
pub(super) const INSERT_KEY: &str =
    "INSERT INTO api_keys (id, team_id, name, permission, domain_id, digest, created_at, last_used_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Teams and keys in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresAccounts {
    db: Postgres,
}

impl PostgresAccounts {
    /// Teams and keys in `db`, whose schema is migrated.
    pub fn new(db: Postgres) -> PostgresAccounts {
        PostgresAccounts { db }
    }
}

fn team(row: &Row) -> Team {
    Team {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        name: row.get(1),
        operator: row.get(2),
        created_at: timestamp(row.get(3)),
        rate_limit: row.get(4),
        plan: row.get(5),
        deleted_at: row.get::<_, Option<std::time::SystemTime>>(6).map(timestamp),
    }
}

fn key(row: &Row) -> Result<ApiKey, Error> {
    let permission = match row.get::<_, &str>(3) {
        "full_access" => Permission::FullAccess,
        "sending_access" => Permission::SendingAccess,
        other => {
            return Err(Error::Corrupt {
                table: "api_keys",
                reason: format!("unknown permission {other:?}"),
            });
        }
    };
    let digest: &[u8] = row.get(5);
    Ok(ApiKey {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        name: row.get(2),
        permission,
        domain_id: row.get::<_, Option<uuid::Uuid>>(4).map(Id::from),
        digest: digest.iter().map(|byte| format!("{byte:02x}")).collect(),
        created_at: timestamp(row.get(6)),
        last_used_at: row.get::<_, Option<std::time::SystemTime>>(7).map(timestamp),
    })
}

pub(super) fn permission(permission: Permission) -> &'static str {
    match permission {
        Permission::FullAccess => "full_access",
        Permission::SendingAccess => "sending_access",
    }
}

/// Writes `team` through `client` (a connection or a transaction).
async fn put_team(client: &impl tokio_postgres::GenericClient, team: &Team) -> Result<(), Error> {
    client
        .execute(
            PUT_TEAM,
            &[
                &team.id.uuid(),
                &team.name,
                &team.operator,
                &time(team.created_at),
                &team.rate_limit,
                &team.plan,
                &team.deleted_at.map(time),
            ],
        )
        .await
        .map_err(from_driver)?;
    Ok(())
}

/// Writes the new `key` under `digest` through `client`.
async fn insert_key(client: &impl tokio_postgres::GenericClient, key: &ApiKey, digest: &[u8; 32]) -> Result<(), Error> {
    client
        .execute(
            INSERT_KEY,
            &[
                &key.id.uuid(),
                &key.team_id.uuid(),
                &key.name,
                &permission(key.permission),
                &key.domain_id.map(|id| id.uuid()),
                &digest.as_slice(),
                &time(key.created_at),
                &key.last_used_at.map(time),
            ],
        )
        .await
        .map_err(from_driver)?;
    Ok(())
}

impl AccountStore for PostgresAccounts {
    fn teams(&self) -> Result<Vec<Team>, Error> {
        let sql = format!("SELECT {TEAM_COLUMNS} FROM teams ORDER BY id");
        self.db.all(&sql, &[], |row| Ok(team(row)))
    }

    fn team(&self, id: Id) -> Result<Option<Team>, Error> {
        let sql = format!("SELECT {TEAM_COLUMNS} FROM teams WHERE id = $1");
        self.db.one(&sql, &[&id.uuid()], |row| Ok(team(row)))
    }

    fn put_team(&self, team: &Team) -> Result<(), Error> {
        self.db.run(async |client| put_team(&***client, team).await)
    }

    fn delete_team(&self, id: Id) -> Result<(), Error> {
        self.db.execute("DELETE FROM teams WHERE id = $1", &[&id.uuid()])?;
        Ok(())
    }

    fn key_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Arc<ApiKey>>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE digest = $1");
            let row = client
                .query_opt(&sql, &[&digest.as_slice()])
                .await
                .map_err(from_driver)?;
            Ok(row.as_ref().map(key).transpose()?.map(Arc::new))
        })
    }

    fn key(&self, team_id: Id, id: Id) -> Result<Option<ApiKey>, Error> {
        let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE team_id = $1 AND id = $2");
        self.db.one(&sql, &[&team_id.uuid(), &id.uuid()], key)
    }

    fn keys(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ApiKey>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {KEY_COLUMNS} FROM api_keys WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let keys = rows.iter().map(key).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(keys, page))
        })
    }

    fn insert_key(&self, key: &ApiKey, digest: [u8; 32]) -> Result<(), Error> {
        self.db.run(async |client| insert_key(&***client, key, &digest).await)
    }

    fn put_key(&self, key: &ApiKey) -> Result<(), Error> {
        self.db.run(async |client| {
            client
                .execute(
                    "UPDATE api_keys SET name = $3, permission = $4, domain_id = $5, created_at = $6,
                        last_used_at = $7 WHERE team_id = $1 AND id = $2",
                    &[
                        &key.team_id.uuid(),
                        &key.id.uuid(),
                        &key.name,
                        &permission(key.permission),
                        &key.domain_id.map(|id| id.uuid()),
                        &time(key.created_at),
                        &key.last_used_at.map(time),
                    ],
                )
                .await
                .map_err(from_driver)?;
            Ok(())
        })
    }

    fn delete_key(&self, key: &ApiKey) -> Result<(), Error> {
        if hex_decode(&key.digest).is_none() {
            return Err(Error::Corrupt {
                table: "api_keys",
                reason: format!("key {} has a digest that is not hex", key.id),
            });
        }
        self.db.run(async |client| {
            // Its use goes with it (ON DELETE CASCADE).
            client
                .execute(
                    "DELETE FROM api_keys WHERE team_id = $1 AND id = $2",
                    &[&key.team_id.uuid(), &key.id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            Ok(())
        })
    }

    fn record_use(&self, key_id: Id, at: Timestamp) {
        // Informational and asked on every request: written in the background, never
        // moved back by a write that arrives late, and dropped with a deleted key.
        self.db.detach(move |client| async move {
            client
                .execute(
                    "INSERT INTO api_key_uses (key_id, last_used_at)
                        SELECT id, $2 FROM api_keys WHERE id = $1
                     ON CONFLICT (key_id) DO UPDATE
                        SET last_used_at = greatest(api_key_uses.last_used_at, EXCLUDED.last_used_at)",
                    &[&key_id.uuid(), &time(at)],
                )
                .await
                .map_err(from_driver)?;
            Ok(())
        });
    }

    fn last_used(&self, key_id: Id) -> Result<Option<Timestamp>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT last_used_at FROM api_key_uses WHERE key_id = $1",
                    &[&key_id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.map(|row| timestamp(row.get(0))))
        })
    }

    fn initialised(&self) -> Result<Option<Id>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt("SELECT team_id FROM herald_meta WHERE name = 'initialised'", &[])
                .await
                .map_err(from_driver)?;
            Ok(row.and_then(|row| row.get::<_, Option<uuid::Uuid>>(0)).map(Id::from))
        })
    }

    fn initialise(&self, team: &Team, key: &ApiKey, digest: [u8; 32], at: Timestamp) -> Result<(), Error> {
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            put_team(&*transaction, team).await?;
            insert_key(&*transaction, key, &digest).await?;
            transaction
                .execute(
                    "INSERT INTO herald_meta (name, team_id, at) VALUES ('initialised', $1, $2)",
                    &[&team.id.uuid(), &time(at)],
                )
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)
        })
    }
}
