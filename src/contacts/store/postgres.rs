//! Contacts and their team's segments, topics, property definitions and imports in
//! PostgreSQL (see the schema's fourth migration): shared by every node, so a contact
//! made through one is found, counted and mailed through all.
//!
//! A contact is a row of `contacts` (its address as compared unique in its team by a
//! constraint) with its topic choices and property values in rows of their own beside
//! it, and an entry in `segment_members` for each segment it is in: the index a segment
//! pages by, which deleting the segment deletes while the contacts keep naming it until
//! their next write, as on RocksDB. The team's count is a row of `contact_counts`, moved
//! in the transaction that inserts or deletes contacts. A write of contacts (one, or an
//! import's chunk with its progress and refused rows) is staged into a [`Change`] and
//! commits in one transaction with what the caller staged there; events go to the
//! node's outbox after it.

pub(super) mod audience;
pub(super) mod imports;
pub(super) mod rows;

use herald_queue::{Batch, Id, SharedClock, Store};

use super::ContactStore;
use crate::contacts::model::{Contact, ContactImport, ImportError, normalize};
use crate::events::Event;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{Postgres, from_driver, page_of, page_params, page_sql};
use crate::storage::{Change, Error};

/// Contacts deleted per pass of `erase_team`, each with its topic choices, property
/// values and segments' entries: a pass stays a transaction of bounded size however
/// large the team.
const ERASE_BATCH: i64 = 1_000;

/// Contacts and their audiences in PostgreSQL, their events in the node's outbox.
#[derive(Debug, Clone)]
pub struct PostgresContacts {
    db: Postgres,
    node: Store,
    clock: SharedClock,
}

impl PostgresContacts {
    /// Contacts in `db`, whose schema is migrated; their events go to the outbox in
    /// `node`, the node's own store, and finished imports expire by `node`'s clock.
    pub fn new(db: Postgres, node: Store) -> PostgresContacts {
        PostgresContacts {
            clock: node.clock().clone(),
            db,
            node,
        }
    }

    /// Commits `change`'s statements in one transaction, then its node's writes with
    /// `events` in the outbox.
    fn commit(&self, change: Change, events: &[Event]) -> Result<(), Error> {
        let mut batch = change.into_local()?;
        outbox(&mut batch, events)?;
        if batch.is_empty() {
            return Ok(());
        }
        Ok(self.node.commit(batch).wait()?)
    }

    /// The contact [`rows::SELECT_CONTACT`] finds under `condition` with `params`.
    fn find(
        &self,
        condition: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Contact>, Error> {
        self.db.run(async |client| {
            let sql = format!("{} WHERE {condition}", rows::SELECT_CONTACT);
            let row = client.query_opt(&sql, params).await.map_err(from_driver)?;
            row.as_ref().map(rows::contact).transpose()
        })
    }
}

/// Stages `events` into `batch`, for the node's outbox.
fn outbox<'a>(batch: &mut Batch, events: impl IntoIterator<Item = &'a Event>) -> Result<(), Error> {
    for event in events {
        crate::webhooks::log::stage_event(batch, event)?;
    }
    Ok(())
}

impl ContactStore for PostgresContacts {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Contact>, Error> {
        self.find("c.team_id = $1 AND c.id = $2", &[&team_id.uuid(), &id.uuid()])
    }

    fn by_email(&self, team_id: Id, email: &str) -> Result<Option<Contact>, Error> {
        self.find(
            "c.team_id = $1 AND c.email_key = $2",
            &[&team_id.uuid(), &normalize(email)],
        )
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error> {
        self.db.run(async |client| {
            // `id` is the contact's: the aggregates beside it have no column of that name.
            let sql = format!(
                "{} WHERE c.team_id = $1 AND {}",
                rows::SELECT_CONTACT,
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let found = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let contacts = found.iter().map(rows::contact).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(contacts, page))
        })
    }

    fn segment_page(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error> {
        let (ids, more) = self.segment_ids(team_id, segment_id, page)?;
        if ids.is_empty() {
            return Ok((Vec::new(), more));
        }
        let uuids: Vec<uuid::Uuid> = ids.iter().map(Id::uuid).collect();
        let found = self.db.run(async |client| {
            let sql = format!("{} WHERE c.team_id = $1 AND c.id = ANY($2)", rows::SELECT_CONTACT);
            let found = client
                .query(&sql, &[&team_id.uuid(), &uuids])
                .await
                .map_err(from_driver)?;
            found.iter().map(rows::contact).collect::<Result<Vec<_>, _>>()
        })?;
        let mut by_id: std::collections::HashMap<Id, Contact> = found.into_iter().map(|c| (c.id, c)).collect();
        // In the page's order; an entry whose contact left the segment in the same
        // instant is skipped, as on RocksDB.
        let contacts = ids
            .iter()
            .filter_map(|id| by_id.remove(id))
            .filter(|contact| contact.segments.contains(&segment_id))
            .collect();
        Ok((contacts, more))
    }

    fn segment_ids(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Id>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT id FROM (
                    SELECT contact_id AS id FROM segment_members WHERE team_id = $1 AND segment_id = $4
                 ) m WHERE {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let found = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit, &segment_id.uuid()])
                .await
                .map_err(from_driver)?;
            let ids = found.iter().map(|row| Id::from(row.get::<_, uuid::Uuid>(0))).collect();
            Ok(page_of(ids, page))
        })
    }

    fn count(&self, team_id: Id) -> Result<u64, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT contacts FROM contact_counts WHERE team_id = $1",
                    &[&team_id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            let count: i64 = row.map_or(0, |row| row.get(0));
            Ok(u64::try_from(count).unwrap_or(0))
        })
    }

    fn put(&self, contact: &Contact, previous: Option<&Contact>, events: &[Event], with: Change) -> Result<(), Error> {
        let mut change = with;
        rows::stage_writes(&self.db, &mut change, [(contact, previous)]);
        self.commit(change, events)
    }

    fn delete(&self, contact: &Contact, events: &[Event]) -> Result<(), Error> {
        self.db.run(async |client| {
            // Its choices, values and segments' entries go with it (ON DELETE CASCADE);
            // the count moves only if it was there to delete.
            client
                .execute(
                    "WITH gone AS (DELETE FROM contacts WHERE team_id = $1 AND id = $2 RETURNING id)
                     UPDATE contact_counts SET contacts = greatest(contacts - (SELECT count(*) FROM gone), 0)
                     WHERE team_id = $1",
                    &[&contact.team_id.uuid(), &contact.id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            Ok(())
        })?;
        self.commit(Change::new(), events)
    }

    fn commit_import(
        &self,
        writes: &[(Contact, Option<Contact>)],
        events: &[Event],
        errors: &[ImportError],
        import: &ContactImport,
    ) -> Result<(), Error> {
        let mut change = Change::new();
        // The import first: its refused rows refer to it.
        imports::stage_import(&self.db, &mut change, import)?;
        imports::stage_errors(&self.db, &mut change, import, errors);
        rows::stage_writes(
            &self.db,
            &mut change,
            writes.iter().map(|(contact, previous)| (contact, previous.as_ref())),
        );
        self.commit(change, events)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // One more is picked than is deleted, to tell whether any is left without
            // another pass. A statement's data-modifying WITH runs whether or not the
            // rest reads it.
            let row = transaction
                .query_one(
                    "WITH picked AS (
                        SELECT id FROM contacts WHERE team_id = $1 ORDER BY id LIMIT $2::bigint + 1
                     ), gone AS (
                        DELETE FROM contacts WHERE id IN (SELECT id FROM picked ORDER BY id LIMIT $2) RETURNING id
                     ), counted AS (
                        UPDATE contact_counts SET contacts = greatest(contacts - (SELECT count(*) FROM gone), 0)
                        WHERE team_id = $1
                     )
                     SELECT count(*) > $2 FROM picked",
                    &[&team_id.uuid(), &ERASE_BATCH],
                )
                .await
                .map_err(from_driver)?;
            let more: bool = row.get(0);
            if !more {
                transaction
                    .execute("DELETE FROM contact_counts WHERE team_id = $1", &[&team_id.uuid()])
                    .await
                    .map_err(from_driver)?;
            }
            transaction.commit().await.map_err(from_driver)?;
            Ok(more)
        })
    }
}
