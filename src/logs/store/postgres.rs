//! Request logs in PostgreSQL (`request_logs`; see the schema's third migration): any node
//! shows any node's logs. Written in the background, as on RocksDB; `[retention]
//! request_logs` deletes them by their time in batches ([`DeleteRows`]).

use std::sync::Arc;

use herald_queue::{Id, SharedClock};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::RequestLogStore;
use crate::logs::model::RequestLog;
use crate::storage::Error;
use crate::storage::expiry::Sweep;
use crate::storage::page::PageRequest;
use crate::storage::postgres::due::{DeleteRows, RowQueue};
use crate::storage::postgres::{Postgres, Value, from_driver, page_of, page_params, page_sql, time, timestamp};

/// The columns of `request_logs`, in the order [`log`] reads them.
const COLUMNS: &str = "id, team_id, api_key_id, method, path, query, status, user_agent, duration_ms, \
     request_body, response_body, created_at";

/// Request logs in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresRequestLogs {
    db: Postgres,
    clock: SharedClock,
}

impl PostgresRequestLogs {
    /// Request logs in `db`, whose schema is migrated; retention goes by `clock`.
    pub fn new(db: Postgres, clock: SharedClock) -> PostgresRequestLogs {
        PostgresRequestLogs { db, clock }
    }
}

/// Writes a log ([`values`]); run again, nothing more.
pub(super) const INSERT: &str = "INSERT INTO request_logs (id, team_id, api_key_id, method, path, query, status,
        user_agent, duration_ms, request_body, response_body, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
    ON CONFLICT (id) DO NOTHING";

/// The values of [`INSERT`] for `log`.
pub(super) fn values(log: &RequestLog) -> Vec<Value> {
    vec![
        Box::new(log.id.uuid()),
        Box::new(log.team_id.uuid()),
        Box::new(log.api_key_id.uuid()),
        Box::new(log.method.clone()),
        Box::new(log.path.clone()),
        Box::new(log.query.clone()),
        Box::new(i32::from(log.status)),
        Box::new(log.user_agent.clone()),
        Box::new(i64::try_from(log.duration_ms).unwrap_or(i64::MAX)),
        Box::new(log.request_body.clone()),
        Box::new(log.response_body.clone()),
        Box::new(time(log.created_at)),
    ]
}

fn log(row: &Row) -> RequestLog {
    RequestLog {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        api_key_id: Id::from(row.get::<_, uuid::Uuid>(2)),
        method: row.get(3),
        path: row.get(4),
        query: row.get(5),
        status: u16::try_from(row.get::<_, i32>(6)).unwrap_or(0),
        user_agent: row.get(7),
        duration_ms: u64::try_from(row.get::<_, i64>(8)).unwrap_or(0),
        request_body: row.get(9),
        response_body: row.get(10),
        created_at: timestamp(row.get(11)),
    }
}

impl RequestLogStore for PostgresRequestLogs {
    fn record(&self, log: &RequestLog) {
        let values = values(log);
        self.db.detach(move |client| async move {
            let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
            client.execute(INSERT, &params).await.map_err(from_driver)?;
            Ok(())
        });
    }

    fn get(&self, team_id: Id, id: Id) -> Result<Option<RequestLog>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM request_logs WHERE team_id = $1 AND id = $2");
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
                .await
                .map_err(from_driver)?;
            Ok(row.as_ref().map(log))
        })
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<RequestLog>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM request_logs WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            Ok(page_of(rows.iter().map(log).collect(), page))
        })
    }

    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<RequestLog>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM request_logs WHERE team_id = $1 ORDER BY id DESC LIMIT $2");
            let rows = client
                .query(&sql, &[&team_id.uuid(), &limit])
                .await
                .map_err(from_driver)?;
            Ok(rows.iter().map(log).collect())
        })
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            client
                .execute("DELETE FROM request_logs WHERE team_id = $1", &[&team_id.uuid()])
                .await
                .map_err(from_driver)?;
            Ok(false)
        })
    }

    fn expiry(&self) -> Arc<dyn Sweep> {
        let queue = RowQueue::new(&self.db, self.clock.clone(), "request_logs", "created_at");
        Arc::new(DeleteRows::new("request_logs", queue))
    }
}
