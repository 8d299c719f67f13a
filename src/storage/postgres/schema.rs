//! The schema: migrations embedded in the binary, numbered from 1 and never edited once
//! released (a change is a new migration). [`migrate`] applies the missing ones at start
//! in one transaction under an advisory lock, so that two nodes starting at once migrate
//! once and the second finds the work done; a database whose schema is newer than the
//! binary's refuses the start, naming both versions.

use std::fmt;

use super::{Client, from_driver};
use crate::storage::Error;

/// One migration: its number, a name for `herald db status`, and its SQL.
struct Migration {
    version: Version,
    name: &'static str,
    sql: &'static str,
}

/// A schema version: the number of the last migration applied.
pub type Version = i32;

/// The migrations, in order, numbered from 1 without gaps.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "accounts and webhooks",
        sql: include_str!("migrations/0001_accounts_webhooks.sql"),
    },
    Migration {
        version: 2,
        name: "users, templates and images",
        sql: include_str!("migrations/0002_users_templates_images.sql"),
    },
    Migration {
        version: 3,
        name: "suppressions, request logs and domains",
        sql: include_str!("migrations/0003_suppressions_request_logs.sql"),
    },
    Migration {
        version: 4,
        name: "contacts and audiences",
        sql: include_str!("migrations/0004_contacts_audiences.sql"),
    },
    Migration {
        version: 5,
        name: "idempotency keys and counters",
        sql: include_str!("migrations/0005_idempotency_counters.sql"),
    },
    Migration {
        version: 6,
        name: "emails",
        sql: include_str!("migrations/0006_emails.sql"),
    },
    Migration {
        version: 7,
        name: "broadcasts",
        sql: include_str!("migrations/0007_broadcasts.sql"),
    },
    Migration {
        version: 8,
        name: "webhook messages and attempts",
        sql: include_str!("migrations/0008_webhook_log.sql"),
    },
];

/// The advisory lock every migration runs under: the first eight bytes of
/// "herald-schema" (a constant of this schema's own, any value works as long as every
/// node uses the same).
const MIGRATION_LOCK: i64 = 0x6865_7261_6c64_2d73;

/// The schema's version in the database and in this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The last migration applied to the database (0: none).
    pub database: Version,
    /// The last migration this build knows.
    pub binary: Version,
    /// The migrations this build would apply, by number and name.
    pub pending: Vec<(Version, &'static str)>,
}

impl SchemaStatus {
    fn of(database: Version) -> SchemaStatus {
        SchemaStatus {
            database,
            binary: latest(),
            pending: MIGRATIONS
                .iter()
                .filter(|migration| migration.version > database)
                .map(|migration| (migration.version, migration.name))
                .collect(),
        }
    }

    /// Whether the database was written by a newer build than this one.
    pub fn is_newer(&self) -> bool {
        self.database > self.binary
    }
}

impl fmt::Display for SchemaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "schema in the database: {}", self.database)?;
        writeln!(f, "schema of this build:   {}", self.binary)?;
        if self.is_newer() {
            writeln!(
                f,
                "the database is newer than this build: upgrade herald before starting it"
            )?;
        } else if self.pending.is_empty() {
            writeln!(f, "up to date")?;
        } else {
            for (version, name) in &self.pending {
                writeln!(f, "pending: {version} {name} (applied at the next start)")?;
            }
        }
        Ok(())
    }
}

/// The last migration this build knows.
pub fn latest() -> Version {
    MIGRATIONS.last().map_or(0, |migration| migration.version)
}

/// Creates the table of applied migrations if it is missing.
const CREATE_SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS herald_schema (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Brings the schema to [`latest`], or refuses a newer one.
pub(super) async fn migrate(client: &mut Client) -> Result<SchemaStatus, Error> {
    let transaction = client.transaction().await.map_err(from_driver)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(from_driver)?;
    transaction
        .batch_execute(CREATE_SCHEMA_TABLE)
        .await
        .map_err(from_driver)?;
    let database = applied(&transaction).await?;
    let before = SchemaStatus::of(database);
    if before.is_newer() {
        return Err(Error::Failed(format!(
            "the database's schema is version {}, newer than this build's {}: run a herald at least as new as the one that migrated it",
            before.database, before.binary
        )));
    }
    for migration in MIGRATIONS.iter().filter(|migration| migration.version > database) {
        transaction.batch_execute(migration.sql).await.map_err(from_driver)?;
        transaction
            .execute(
                "INSERT INTO herald_schema (version, name) VALUES ($1, $2)",
                &[&migration.version, &migration.name],
            )
            .await
            .map_err(from_driver)?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "migrated the database's schema"
        );
    }
    transaction.commit().await.map_err(from_driver)?;
    Ok(SchemaStatus::of(latest().max(database)))
}

/// The schema's versions, changing nothing.
pub(super) async fn status(client: &mut Client) -> Result<SchemaStatus, Error> {
    let transaction = client.transaction().await.map_err(from_driver)?;
    let database = applied(&transaction).await?;
    transaction.rollback().await.map_err(from_driver)?;
    Ok(SchemaStatus::of(database))
}

/// The last migration applied (0 when the table of migrations does not exist yet).
async fn applied(client: &tokio_postgres::Transaction<'_>) -> Result<Version, Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('herald_schema') IS NOT NULL", &[])
        .await
        .map_err(from_driver)?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_one("SELECT coalesce(max(version), 0) FROM herald_schema", &[])
        .await
        .map_err(from_driver)?;
    Ok(row.get(0))
}

/// Pretends, for the tests of a newer database, that this build knew one more
/// migration: writes its row (and nothing else).
#[doc(hidden)]
pub async fn stamp_newer(client: &tokio_postgres::Client) -> Result<Version, Error> {
    let newer = latest() + 1;
    client
        .execute(
            "INSERT INTO herald_schema (version, name) VALUES ($1, 'from a newer build')",
            &[&newer],
        )
        .await
        .map_err(from_driver)?;
    Ok(newer)
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    #[test]
    fn migrations_are_numbered_from_one_without_gaps() {
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                usize::try_from(migration.version).ok(),
                Some(index + 1),
                "{}",
                migration.name
            );
        }
    }
}
