//! `[retention] emails` and `content` on PostgreSQL, counted from each email's final
//! outcome (`records_due_at` and `content_due_at`, set together by
//! [`super::PostgresEmails`]'s `arm_final`): records are deleted with their timeline and
//! attempts; contents are cleared from their rows, which say so. Bodies the accepting
//! node's spool kept for the content are forgotten there, after the rows change.

use std::sync::Arc;
use std::time::Duration;

use herald_queue::{Batch, Due, Id, Spool, Store};

use crate::storage::Error;
use crate::storage::due::DueQueue;
use crate::storage::expiry::Sweep;
use crate::storage::postgres::due::{RowQueue, row_id};
use crate::storage::postgres::{Postgres, from_driver};

/// The sweeps of `[retention] emails` (`emails`) and `content`: records first.
pub(super) fn sweeps(
    db: &Postgres,
    node: &Store,
    emails: Option<Duration>,
    content: Option<Duration>,
) -> [Arc<dyn Sweep>; 2] {
    let clock = node.clock().clone();
    [
        Arc::new(Records {
            queue: Arc::new(RowQueue::clearing(db, clock.clone(), "emails", "records_due_at")),
            db: db.clone(),
            node: node.clone(),
            content_outlives: content.is_none_or(|content| emails.is_some_and(|emails| content > emails)),
        }),
        Arc::new(Content {
            queue: Arc::new(RowQueue::clearing(db, clock, "emails", "content_due_at")),
            db: db.clone(),
            node: node.clone(),
            emails,
        }),
    ]
}

/// Arms an email's `[retention] emails` at `$2` unless it is armed already: for the copy
/// of a node's index ([`super::super::copy`]), read earliest first, where an email's
/// earliest entry is the one that takes it (as RocksDB's runner would).
pub(in crate::emails::store) const ARM_RECORDS: &str =
    "UPDATE emails SET records_due_at = $2 WHERE id = $1 AND records_due_at IS NULL";

/// Arms an email's `[retention] content` at `$2` unless it is armed already, as
/// [`ARM_RECORDS`] does its record's.
pub(in crate::emails::store) const ARM_CONTENT: &str =
    "UPDATE emails SET content_due_at = $2 WHERE id = $1 AND content_due_at IS NULL";

/// The email ids of `due`.
fn ids(due: &[&Due]) -> Vec<uuid::Uuid> {
    due.iter().filter_map(|due| row_id(&due.key)).collect()
}

/// Forgets in the node's spool the bodies kept for `ids` (nothing for a message still
/// queued, or one this node never had).
fn forget(node: &Store, ids: &[uuid::Uuid]) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut batch = Batch::new();
    for id in ids {
        Spool::forget(node, Id::from(*id), &mut batch)?;
    }
    Ok(node.commit(batch).wait()?)
}

/// `[retention] emails`: rows go whole.
struct Records {
    queue: Arc<RowQueue>,
    db: Postgres,
    node: Store,
    /// Whether content may outlive the record: then bodies kept for it go now.
    content_outlives: bool,
}

impl Sweep for Records {
    fn kind(&self) -> &'static str {
        "emails"
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        self.queue.clone()
    }

    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        let ids = ids(due);
        self.db.run(async |client| {
            client
                .execute("DELETE FROM emails WHERE id = ANY($1)", &[&ids])
                .await
                .map_err(from_driver)?;
            Ok(())
        })?;
        if self.content_outlives {
            forget(&self.node, &ids)?;
        }
        metrics::counter!("herald_expired_total", "kind" => "emails").increment(due.len() as u64);
        Ok(due.len())
    }
}

/// `[retention] content`: `html` and `text` leave the row, which says so.
struct Content {
    queue: Arc<RowQueue>,
    db: Postgres,
    node: Store,
    /// `[retention] emails`: a row whose own time is up as well is left to [`Records`].
    emails: Option<Duration>,
}

impl Sweep for Content {
    fn kind(&self) -> &'static str {
        "content"
    }

    fn queue(&self) -> Arc<dyn DueQueue> {
        self.queue.clone()
    }

    fn expire(&self, due: &[&Due]) -> Result<usize, Error> {
        let now = self.node.now();
        let (late, timely): (Vec<&Due>, Vec<&Due>) = due
            .iter()
            .copied()
            .partition(|due| self.emails.is_some_and(|emails| due.at.saturating_add(emails) <= now));
        let (late, timely) = (ids(&late), ids(&timely));
        let kept: Vec<uuid::Uuid> = self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // Late (a backlog): the row goes whole with the records; only its entry here.
            transaction
                .execute("UPDATE emails SET content_due_at = NULL WHERE id = ANY($1)", &[&late])
                .await
                .map_err(from_driver)?;
            let kept = transaction
                .query(
                    "SELECT id FROM emails WHERE id = ANY($1) AND content_in_message AND NOT content_expired",
                    &[&timely],
                )
                .await
                .map_err(from_driver)?;
            transaction
                .execute(
                    "UPDATE emails SET html = NULL, text_body = NULL, content_expired = true,
                        content_in_message = false, text_derived = false, line_feeds = false, content_due_at = NULL
                     WHERE id = ANY($1)",
                    &[&timely],
                )
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)?;
            Ok(kept.iter().map(|row| row.get(0)).collect())
        })?;
        forget(&self.node, &[late, kept].concat())?;
        metrics::counter!("herald_expired_total", "kind" => "content").increment(due.len() as u64);
        Ok(due.len())
    }
}
