//! Running a copy: the order of the kinds, the database's state, the command.

use herald_queue::{Id, Spool, Timestamp};

use super::frame::Copy;
use crate::storage::Error;
use crate::storage::node::Node;
use crate::storage::postgres::{Postgres, from_driver, time};

/// The name of the `herald_meta` row a copy in progress keeps.
const COPYING: &str = "copying";

/// One kind of record's copy: a store module's `copy` function.
type CopyKind = fn(&mut Copy<'_>) -> Result<(), Error>;

/// Every store's copy, parents before the rows that refer to them.
const KINDS: &[CopyKind] = &[
    crate::accounts::store::copy,
    crate::domains::store::copy,
    crate::webhooks::store::copy,
    crate::suppressions::store::copy,
    crate::users::store::copy,
    crate::templates::store::copy,
    crate::images::store::copy,
    crate::contacts::store::copy,
    crate::emails::store::copy,
    crate::broadcasts::store::copy,
    crate::emails::idempotency::store::copy,
    crate::counters::store::copy,
    crate::logs::store::copy,
    crate::webhooks::log::copy,
];

/// What a copy did: records per kind, in the order they were copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// Records per kind.
    pub counts: Vec<(&'static str, u64)>,
    /// Whether an earlier copy that failed part way was cleared first.
    pub restarted: bool,
}

/// Why a copy did not start.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The data directory's records were moved already.
    #[error(
        "this data directory's records were moved to PostgreSQL already ({0}); start herald with [cluster] postgres"
    )]
    Moved(String),
    /// The database holds records that are not an unfinished copy of this node's.
    #[error("the database is not empty ({0}): herald store copy fills an empty database only")]
    NotEmpty(String),
    /// The node's own records are not in the database it was started on.
    #[error(
        "this data directory holds records of its own that are not in the database: copy them with \
         `herald store copy --to <url>` first, or start on an empty data directory to join the database"
    )]
    Unmoved,
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] Error),
}

/// `herald store copy`: opens the node's store as `config` names it (the node must be
/// stopped: its directory is locked while it runs), connects to `target` and brings its
/// schema to this build's, then copies ([`run`]).
pub fn copy_node(config: &crate::config::Config, target: &crate::config::PostgresConfig) -> anyhow::Result<Copied> {
    use anyhow::Context as _;
    let path = config.server.data_dir.join("spool");
    let options = crate::storage::NodeOptions {
        path: path.clone(),
        clock: std::sync::Arc::new(herald_queue::SystemClock),
        min_free_space: 0,
        commit_queue_max: config.spool.commit_queue_max,
    };
    let (node, spool) = Node::open(options).with_context(|| {
        format!(
            "cannot open the node's store at {} (is herald still running on it? stop it first)",
            path.display()
        )
    })?;
    let db = Postgres::connect(target).with_context(|| format!("--to {}", target.redacted))?;
    db.migrate().with_context(|| format!("--to {}", target.redacted))?;
    Ok(run(&node, &spool, &db)?)
}

/// Copies every record of `node` (stopped: its directory is locked by this process) into
/// `db` (its schema migrated), then marks the node's directory as moved to `db`.
pub fn run(node: &Node, spool: &Spool, db: &Postgres) -> Result<Copied, Refused> {
    if let Some(url) = node.records_shared()? {
        return Err(Refused::Moved(url));
    }
    let operator = crate::accounts::store::initialised_locally(node.store())?;
    let restarted = claim(db, operator.map(|(team, _)| team))?;
    let mut copy = Copy::new(node.store(), spool, db);
    for kind in KINDS {
        kind(&mut copy)?;
    }
    copy.flush()?;
    finish(db, operator)?;
    node.mark_records_shared(db.url())?;
    Ok(Copied {
        counts: copy.into_counts(),
        restarted,
    })
}

/// Whether `node` may start with its records in `db`: a node that never kept records of
/// its own may (it joins), and so may one whose records were copied there (the directory
/// is marked, or the copy finished just before the mark: the database was initialised with
/// the node's operator team, which this then marks). A node with records of its own that
/// the database lacks is refused: starting would leave them behind.
pub fn check_join(node: &Node, db: &Postgres) -> Result<(), Refused> {
    if node.records_shared()?.is_some() {
        return Ok(());
    }
    let Some((team, _)) = crate::accounts::store::initialised_locally(node.store())? else {
        return Ok(());
    };
    let theirs = db.one(
        "SELECT team_id FROM herald_meta WHERE name = 'initialised'",
        &[],
        |row| Ok(row.get::<_, Option<uuid::Uuid>>(0)),
    )?;
    if theirs.flatten() == Some(team.uuid()) {
        node.mark_records_shared(db.url())?;
        return Ok(());
    }
    Err(Refused::Unmoved)
}

/// Stamps an empty `db` as being filled by the node whose operator team is `team`, or
/// clears what that node's earlier, unfinished copy left; whether it did the latter.
fn claim(db: &Postgres, team: Option<Id>) -> Result<bool, Refused> {
    let team = team.map(|team| team.uuid());
    let state = db.run(async |client| {
        let meta = client
            .query("SELECT name, team_id FROM herald_meta", &[])
            .await
            .map_err(from_driver)?;
        let tables: Vec<String> = client
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()
                    AND tablename NOT IN ('herald_meta', 'herald_schema') ORDER BY tablename",
                &[],
            )
            .await
            .map_err(from_driver)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let mut holding = Vec::new();
        for table in &tables {
            let sql = format!("SELECT EXISTS (SELECT 1 FROM {table})");
            if client.query_one(&sql, &[]).await.map_err(from_driver)?.get(0) {
                holding.push(table.clone());
            }
        }
        let meta: Vec<(String, Option<uuid::Uuid>)> = meta.iter().map(|row| (row.get(0), row.get(1))).collect();
        Ok((meta, tables, holding))
    })?;
    let (meta, tables, holding) = state;
    let copying = meta.iter().find(|(name, _)| name == COPYING);
    match copying {
        Some((_, by)) if *by == team => {
            db.run(async |client| {
                let sql = format!("TRUNCATE {} CASCADE", tables.join(", "));
                client.batch_execute(&sql).await.map_err(from_driver)
            })?;
            Ok(true)
        }
        Some(_) => Err(Refused::NotEmpty("another node's copy is in it".to_owned())),
        None if !meta.is_empty() || !holding.is_empty() => {
            let mut what: Vec<String> = meta.iter().map(|(name, _)| format!("herald_meta {name}")).collect();
            what.extend(holding);
            Err(Refused::NotEmpty(format!("it holds {}", what.join(", "))))
        }
        None => {
            db.execute(
                "INSERT INTO herald_meta (name, team_id, at) VALUES ($1, $2, now())",
                &[&COPYING, &team],
            )?;
            Ok(false)
        }
    }
}

/// Ends a copy: the database is initialised as the node was (with its operator team, when
/// it had one), in the same transaction that removes the `copying` stamp.
fn finish(db: &Postgres, operator: Option<(Id, Timestamp)>) -> Result<(), Error> {
    db.run(async |client| {
        let transaction = client.transaction().await.map_err(from_driver)?;
        if let Some((team, at)) = operator {
            transaction
                .execute(
                    "INSERT INTO herald_meta (name, team_id, at) VALUES ('initialised', $1, $2)",
                    &[&team.uuid(), &time(at)],
                )
                .await
                .map_err(from_driver)?;
        }
        transaction
            .execute("DELETE FROM herald_meta WHERE name = $1", &[&COPYING])
            .await
            .map_err(from_driver)?;
        transaction.commit().await.map_err(from_driver)
    })
}
