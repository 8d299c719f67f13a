//! Writes to the database staged into a [`crate::storage::Change`]: a statement and its
//! values, owned, to run when the change commits.

use tokio_postgres::types::ToSql;

use super::{Postgres, from_driver};
use crate::storage::Error;

/// One value of a staged statement.
pub type Value = Box<dyn ToSql + Send + Sync>;

/// A statement staged to run in the transaction of the change it is staged into. It must
/// be safe to run again (an upsert, a delete): issue 43's outbox may replay it.
pub struct Statement {
    db: Postgres,
    sql: &'static str,
    values: Vec<Value>,
}

impl std::fmt::Debug for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statement")
            .field("sql", &self.sql)
            .finish_non_exhaustive()
    }
}

impl Statement {
    /// `sql` with `values`, to run on `db`.
    pub fn new(db: &Postgres, sql: &'static str, values: Vec<Value>) -> Statement {
        Statement {
            db: db.clone(),
            sql,
            values,
        }
    }
}

/// Runs `statements` in one transaction, in order, and waits for it to commit.
///
/// Each distinct statement is prepared once per connection (the pool's statement cache),
/// and the statements are sent without waiting for each other's answers: the driver
/// pipelines requests issued together on one connection, in the order issued, so a change
/// of many rows costs a few round trips, not two per row.
pub(crate) fn commit(statements: &[Statement]) -> Result<(), Error> {
    let Some(db) = statements.first().map(|first| first.db.clone()) else {
        return Ok(());
    };
    db.run(async |client| {
        let mut prepared = Vec::with_capacity(statements.len());
        for statement in statements {
            prepared.push(client.prepare_cached(statement.sql).await.map_err(from_driver)?);
        }
        let transaction = client.transaction().await.map_err(from_driver)?;
        let runs = statements.iter().zip(&prepared).map(|(statement, prepared)| {
            let values: Vec<&(dyn ToSql + Sync)> = statement
                .values
                .iter()
                .map(|value| &**value as &(dyn ToSql + Sync))
                .collect();
            let transaction = &transaction;
            async move { transaction.execute(prepared, &values).await }
        });
        futures_util::future::try_join_all(runs).await.map_err(from_driver)?;
        transaction.commit().await.map_err(from_driver)
    })
}
