//! PostgreSQL, the shared backend: a pool of connections (TLS as `sslmode` asks, see
//! [`connect`]), the schema and its migrations ([`schema`]), and the way the stores, whose
//! traits are synchronous like RocksDB's, wait for a query.
//!
//! The pool and its connections live on a small runtime of their own. A store's method
//! enters that runtime and waits on the calling thread for its query, as a RocksDB store
//! waits for its synced write: nothing of the database's I/O runs on the server's
//! runtime, so a slow database holds the threads that wait for it and no other work.

mod connect;
pub mod due;
mod error;
pub mod schema;
mod statement;

use std::future::Future;
use std::sync::Arc;

pub use connect::verification;
pub use error::from_driver;
pub use schema::{SchemaStatus, Version};
pub(crate) use statement::commit as commit_statements;
pub use statement::{Statement, Value};

use herald_queue::Timestamp;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::Error;
use super::page::{Cursor, PageRequest};
use crate::config::PostgresConfig;

/// A pooled connection, as the stores use it.
pub type Client = deadpool_postgres::Client;

/// Threads of the database's runtime: it only moves bytes between sockets and waiting
/// callers, so two are plenty.
const RUNTIME_THREADS: usize = 2;

/// The database every record of the cluster is kept in. Cheap to clone: every clone
/// shares one pool.
#[derive(Clone)]
pub struct Postgres {
    inner: Arc<Inner>,
}

struct Inner {
    pool: deadpool_postgres::Pool,
    /// Always `Some` until dropped; taken to shut down without waiting.
    runtime: Option<tokio::runtime::Runtime>,
    redacted: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which a runtime's own thread may not
        // do: the last clone can go anywhere, so the runtime is let go in the background.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("url", &self.inner.redacted).finish()
    }
}

impl Postgres {
    /// A pool for `config`, and one connection made at once: an unreachable database, a
    /// refused password or a certificate that does not verify fails here, named, rather
    /// than at the first request.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when no connection can be made; [`Error::Failed`] when the
    /// configuration cannot be used (a root certificate that does not load).
    pub fn connect(config: &PostgresConfig) -> Result<Postgres, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("herald-postgres")
            .enable_all()
            .build()
            .map_err(|error| Error::Failed(format!("cannot start the database's runtime: {error}")))?;
        let pool = {
            let _entered = runtime.enter();
            connect::pool(config)?
        };
        let postgres = Postgres {
            inner: Arc::new(Inner {
                pool,
                runtime: Some(runtime),
                redacted: config.redacted.clone(),
            }),
        };
        postgres.run(async |client| {
            client.simple_query("SELECT 1").await.map_err(from_driver)?;
            Ok(())
        })?;
        Ok(postgres)
    }

    /// Runs `work` on a connection from the pool and waits for its answer. `work` may
    /// borrow from the caller: it runs on the calling thread, its I/O on the database's
    /// runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when no connection is to be had; else what `work` answers.
    pub fn run<T>(&self, work: impl AsyncFnOnce(&mut Client) -> Result<T, Error>) -> Result<T, Error> {
        let inner = &*self.inner;
        let Some(runtime) = &inner.runtime else {
            return Err(Error::Failed("the database's runtime is gone".into()));
        };
        let wait = move || {
            let _entered = runtime.enter();
            futures_executor::block_on(async {
                let mut client = inner.pool.get().await.map_err(error::from_pool)?;
                work(&mut client).await
            })
        };
        // On a worker of a multi-threaded runtime (the server's), the worker's other tasks
        // move to another thread while this one waits, so that a request waiting for the
        // database holds no others up; elsewhere (a blocking thread, a test's
        // single-threaded runtime, no runtime) the thread just waits.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }

    /// Runs one statement and answers how many rows it touched. This helper and the two
    /// below prepare `sql` once per connection (the pool's statement cache): a call is one
    /// round trip, not two.
    ///
    /// # Errors
    ///
    /// As [`Postgres::run`].
    pub fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        self.run(async |client| {
            let statement = client.prepare_cached(sql).await.map_err(from_driver)?;
            client.execute(&statement, params).await.map_err(from_driver)
        })
    }

    /// The row `sql` finds with `params`, if any, read with `read`.
    ///
    /// # Errors
    ///
    /// As [`Postgres::run`], and what `read` answers.
    pub fn one<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        read: impl Fn(&Row) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        self.run(async |client| {
            let statement = client.prepare_cached(sql).await.map_err(from_driver)?;
            let row = client.query_opt(&statement, params).await.map_err(from_driver)?;
            row.as_ref().map(read).transpose()
        })
    }

    /// Every row `sql` finds with `params`, in its order, each read with `read`.
    ///
    /// # Errors
    ///
    /// As [`Postgres::run`], and what `read` answers.
    pub fn all<T>(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        read: impl Fn(&Row) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        self.run(async |client| {
            let statement = client.prepare_cached(sql).await.map_err(from_driver)?;
            let rows = client.query(&statement, params).await.map_err(from_driver)?;
            rows.iter().map(read).collect()
        })
    }

    /// Runs `work` on a connection from the pool in the background, for a write nobody
    /// waits for (a key's last use); a failure is logged at debug level and dropped.
    pub fn detach<Fut>(&self, work: impl FnOnce(Client) -> Fut + Send + 'static)
    where
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let done = self.submit(work);
        if let Some(runtime) = &self.inner.runtime {
            runtime.spawn(async move {
                if let Err(error) = done.await {
                    tracing::debug!(%error, "a background write to the database failed");
                }
            });
        }
    }

    /// Starts `work` on a connection from the pool, on the database's runtime, and
    /// answers a future of its outcome that any runtime (or none) may wait on: for the
    /// traits that hand out a future ([`crate::storage::Committing`]).
    pub fn submit<T, Fut>(
        &self,
        work: impl FnOnce(Client) -> Fut + Send + 'static,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let Some(runtime) = &self.inner.runtime else {
            return Box::pin(async { Err(Error::Failed("the database's runtime is gone".into())) });
        };
        let pool = self.inner.pool.clone();
        let task = runtime.spawn(async move {
            match pool.get().await {
                Ok(client) => work(client).await,
                Err(error) => Err(error::from_pool(error)),
            }
        });
        Box::pin(async move {
            task.await
                .map_err(|error| Error::Failed(format!("a database task failed: {error}")))?
        })
    }

    /// The URL, its password redacted: what a log line or an error may name.
    pub fn url(&self) -> &str {
        &self.inner.redacted
    }

    /// Brings the schema to this build's version, migrating under an advisory lock so
    /// that nodes starting together migrate once; refuses a database whose schema is
    /// newer than this build's.
    ///
    /// # Errors
    ///
    /// [`Error::Failed`] naming both versions when the database is newer; any error of
    /// the database.
    pub fn migrate(&self) -> Result<SchemaStatus, Error> {
        self.run(async |client| schema::migrate(client).await)
    }

    /// The schema's version in the database beside this build's, changing nothing.
    ///
    /// # Errors
    ///
    /// Any error of the database.
    pub fn status(&self) -> Result<SchemaStatus, Error> {
        self.run(async |client| schema::status(client).await)
    }
}

/// The SQL that selects one page of rows ordered by their `id` column (UUIDv7, so
/// creation order), newest first: a condition on the cursor, bound as the parameter
/// numbered `cursor` (a `uuid`, null for the first page), then the order and a limit of
/// one more row than the page holds, bound as `limit`. [`page_of`] makes the page of the
/// rows it returns.
pub fn page_sql(page: &PageRequest, cursor: usize, limit: usize) -> String {
    match page.cursor {
        Cursor::Start => format!("${cursor}::uuid IS NULL ORDER BY id DESC LIMIT ${limit}"),
        Cursor::After(_) => format!("id < ${cursor} ORDER BY id DESC LIMIT ${limit}"),
        Cursor::Before(_) => format!("id > ${cursor} ORDER BY id ASC LIMIT ${limit}"),
    }
}

/// The values of [`page_sql`]'s two parameters for `page`.
pub fn page_params(page: &PageRequest) -> (Option<uuid::Uuid>, i64) {
    let cursor = match page.cursor {
        Cursor::Start => None,
        Cursor::After(id) | Cursor::Before(id) => Some(id.uuid()),
    };
    (cursor, i64::try_from(page.limit.saturating_add(1)).unwrap_or(i64::MAX))
}

/// The page among `rows`, as [`page_sql`] selected them, newest first, and whether more
/// lie beyond it.
pub fn page_of<T>(mut rows: Vec<T>, page: &PageRequest) -> (Vec<T>, bool) {
    let more = rows.len() > page.limit;
    rows.truncate(page.limit);
    if matches!(page.cursor, Cursor::Before(_)) {
        rows.reverse();
    }
    (rows, more)
}

/// A time as the database keeps it.
pub fn time(at: Timestamp) -> std::time::SystemTime {
    at.to_system_time()
}

/// A time the database kept.
pub fn timestamp(at: std::time::SystemTime) -> Timestamp {
    Timestamp::from_system_time(at)
}

/// A unit-variant enum as the text column that keeps it: its serde name (`snake_case`
/// throughout herald's records), so both backends and the API spell it alike.
pub fn enum_text<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        other => format!("{other:?}"),
    }
}

/// The enum a text column keeps ([`enum_text`]); a value this build does not know is a
/// corrupt record of `table`.
pub fn text_enum<T: serde::de::DeserializeOwned>(table: &'static str, text: &str) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| Error::Corrupt {
        table,
        reason: format!("unknown value {text:?}"),
    })
}
