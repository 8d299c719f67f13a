//! Where contacts and their team's segments, topics, property definitions and imports are
//! kept. [`ContactStore`] and [`AudienceStore`] are the narrow interfaces the services
//! use; [`RocksContacts`] keeps everything in the node's RocksDB, and
//! [`PostgresContacts`] in PostgreSQL, for a cluster, behind the same traits.
//!
//! In RocksDB, a contact is stored by team and id in [`Table::CONTACTS`] (ids are
//! time-ordered, so a team's contacts list newest first with one reverse prefix scan);
//! its address points at it by team and normalised address in [`Table::CONTACT_EMAILS`];
//! each segment it is in holds an empty entry keyed by team, segment and contact in
//! [`Table::SEGMENT_MEMBERS`]; and the team's count is in [`Table::CONTACT_COUNTS`]. All
//! of them change in the batch that writes the contact. Segments, topics, properties and
//! imports are records keyed by team and id. Those keys and encodings are this module's
//! alone.
//!
//! Writers of a team's contacts hold the team's contact lock (see the service), which
//! makes the count's read-modify-write here safe.

mod copy;
mod postgres;

use crate::storage::Error;
use herald_queue::{Batch, Id, Record, Scan, Store, Table};

use super::model::{Contact, ContactImport, ContactProperty, ImportError, Segment, Topic, normalize};
use crate::events::Event;
use crate::storage::Change;
use crate::storage::page::PageRequest;
pub use copy::copy;
pub use postgres::PostgresContacts;

/// A team's contacts.
pub trait ContactStore: Send + Sync + std::fmt::Debug {
    /// The team's contact `id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Contact>, Error>;
    /// The team's contact with address `email` (the domain part in any case).
    fn by_email(&self, team_id: Id, email: &str) -> Result<Option<Contact>, Error>;
    /// One page of the team's contacts, newest first, and whether more lie beyond it.
    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error>;
    /// One page of the contacts in segment `segment_id`, newest first.
    fn segment_page(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error>;
    /// One page of the ids of the contacts in segment `segment_id`, newest first: an id
    /// may be of a contact that left the segment since (read the contact to be sure).
    fn segment_ids(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Id>, bool), Error>;
    /// How many contacts the team has.
    fn count(&self, team_id: Id) -> Result<u64, Error>;
    /// Writes `contact`, new (`previous` is `None`) or changed from `previous`, with
    /// `events` and what `with` stages, in one durable write.
    fn put(&self, contact: &Contact, previous: Option<&Contact>, events: &[Event], with: Change) -> Result<(), Error>;
    /// Deletes `contact` with its lookups, and writes `events`, durably.
    fn delete(&self, contact: &Contact, events: &[Event]) -> Result<(), Error>;
    /// Writes a chunk of an import in one batch: each contact new or changed from the
    /// previous version given, their events, the rows refused, and the import's progress.
    fn commit_import(
        &self,
        writes: &[(Contact, Option<Contact>)],
        events: &[Event],
        errors: &[ImportError],
        import: &ContactImport,
    ) -> Result<(), Error>;
    /// Erases what this store keeps of the deleted team `team_id`, durably, a batch at a
    /// time: `true` while more is left (call again), `false` once none is.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

/// A team's segments, topics, contact property definitions and imports: small
/// collections, each bounded by a `[contacts]` limit, so "all of them" is a bounded read.
pub trait AudienceStore: Send + Sync + std::fmt::Debug {
    /// The team's segment `id`.
    fn segment(&self, team_id: Id, id: Id) -> Result<Option<Segment>, Error>;
    /// One page of the team's segments.
    fn segment_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Segment>, bool), Error>;
    /// All the team's segments.
    fn segments(&self, team_id: Id) -> Result<Vec<Segment>, Error>;
    /// Writes a segment.
    fn put_segment(&self, segment: &Segment) -> Result<(), Error>;
    /// Deletes a segment and its membership index (contacts stay).
    fn delete_segment(&self, segment: &Segment) -> Result<(), Error>;
    /// The team's topic `id`.
    fn topic(&self, team_id: Id, id: Id) -> Result<Option<Topic>, Error>;
    /// One page of the team's topics.
    fn topic_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Topic>, bool), Error>;
    /// All the team's topics.
    fn topics(&self, team_id: Id) -> Result<Vec<Topic>, Error>;
    /// Writes a topic with its event.
    fn put_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error>;
    /// Deletes a topic with its event.
    fn delete_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error>;
    /// The team's property `id`.
    fn property(&self, team_id: Id, id: Id) -> Result<Option<ContactProperty>, Error>;
    /// One page of the team's properties.
    fn property_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ContactProperty>, bool), Error>;
    /// All the team's properties.
    fn properties(&self, team_id: Id) -> Result<Vec<ContactProperty>, Error>;
    /// Writes a property.
    fn put_property(&self, property: &ContactProperty) -> Result<(), Error>;
    /// Deletes a property.
    fn delete_property(&self, property: &ContactProperty) -> Result<(), Error>;
    /// The team's import `id`.
    fn import(&self, team_id: Id, id: Id) -> Result<Option<ContactImport>, Error>;
    /// One page of the team's imports.
    fn import_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ContactImport>, bool), Error>;
    /// Every team's imports not yet finished, oldest first.
    fn unfinished_imports(&self) -> Result<Vec<ContactImport>, Error>;
    /// Writes an import.
    fn put_import(&self, import: &ContactImport) -> Result<(), Error>;
    /// Up to `limit` rows import `import` refused, in file order, after row `after`.
    fn import_errors(&self, import: &ContactImport, after: u64, limit: usize) -> Result<Vec<ImportError>, Error>;
    /// Erases what this store keeps of the deleted team `team_id`, durably, a batch at a
    /// time: `true` while more is left (call again), `false` once none is.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
    /// Finished imports' retention (`[retention] imports`), for the retention engine.
    fn import_expiry(&self) -> std::sync::Arc<dyn crate::storage::expiry::Sweep>;
}

/// Contacts in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksContacts {
    store: Store,
}

impl RocksContacts {
    /// Arms the expiry of every finished import, at start: those finished before this
    /// build armed none (arming one again changes nothing).
    pub fn arm_finished_imports(&self) -> Result<(), Error> {
        let mut batch = Batch::new();
        for (_, import) in self.store.scan::<ContactImport>(Scan::prefix(&[]))? {
            if let (true, Some(finished)) = (import.status.is_final(), import.completed_at) {
                super::imports::store::arm(&mut batch, import.team_id, import.id, finished);
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        Ok(self.store.commit(batch).wait()?)
    }

    /// Contacts in `store`.
    pub fn new(store: Store) -> RocksContacts {
        RocksContacts { store }
    }

    fn commit(&self, mut batch: Batch, events: &[Event]) -> Result<(), Error> {
        for event in events {
            crate::webhooks::log::stage_event(&mut batch, event)?;
        }
        Ok(self.store.commit(batch).wait()?)
    }

    fn commit_one(&self, mut batch: Batch, event: Option<&Event>) -> Result<(), Error> {
        if let Some(event) = event {
            crate::webhooks::log::stage_event(&mut batch, event)?;
        }
        Ok(self.store.commit(batch).wait()?)
    }

    /// Stages `contact` (new, or changed from `previous`) with its lookups.
    fn stage(batch: &mut Batch, contact: &Contact, previous: Option<&Contact>) -> Result<(), Error> {
        let team = contact.team_id;
        if let Some(old) = previous.filter(|old| normalize(&old.email) != normalize(&contact.email)) {
            batch.delete::<ContactEmail>(email_key(team, &old.email));
        }
        let before: &[Id] = previous.map_or(&[], |old| &old.segments);
        for segment in before.iter().filter(|s| !contact.segments.contains(s)) {
            batch.delete_raw(Table::SEGMENT_MEMBERS, member_key(team, *segment, contact.id));
        }
        for segment in contact.segments.iter().filter(|s| !before.contains(s)) {
            batch.put_raw(
                Table::SEGMENT_MEMBERS,
                member_key(team, *segment, contact.id),
                Vec::new(),
            );
        }
        batch.put(id_key(team, contact.id), contact)?;
        Ok(batch.put(email_key(team, &contact.email), &ContactEmail { id: contact.id })?)
    }

    fn stage_count(&self, batch: &mut Batch, team_id: Id, added: u64, removed: u64) -> Result<(), Error> {
        if added == removed {
            return Ok(());
        }
        let count = self.count(team_id)?;
        let contacts = count.saturating_add(added).saturating_sub(removed);
        Ok(batch.put(team_id.as_bytes(), &ContactCount { contacts })?)
    }

    /// Stages `import` with its place in [`Table::IMPORT_QUEUE`]: there while unfinished;
    /// once finished, its expiry (`[retention] imports`) is armed.
    fn stage_import(batch: &mut Batch, import: &ContactImport) -> Result<(), Error> {
        let queued = [import.id.as_bytes().as_slice(), import.team_id.as_bytes()].concat();
        if import.status.is_final() {
            batch.delete_raw(Table::IMPORT_QUEUE, queued);
            if let Some(finished) = import.completed_at {
                super::imports::store::arm(batch, import.team_id, import.id, finished);
            }
        } else {
            batch.put_raw(Table::IMPORT_QUEUE, queued, Vec::new());
        }
        Ok(batch.put(id_key(import.team_id, import.id), import)?)
    }

    fn all<R: Record>(&self, team_id: Id) -> Result<Vec<R>, Error> {
        Ok(self
            .store
            .scan::<R>(Scan::prefix(team_id.as_bytes()))?
            .into_iter()
            .map(|(_, record)| record)
            .collect())
    }
}

impl Record for Contact {
    const TABLE: Table = Table::CONTACTS;
}

impl Record for Segment {
    const TABLE: Table = Table::SEGMENTS;
}

impl Record for Topic {
    const TABLE: Table = Table::TOPICS;
}

impl Record for ContactProperty {
    const TABLE: Table = Table::CONTACT_PROPERTIES;
}

impl Record for ContactImport {
    const TABLE: Table = Table::CONTACT_IMPORTS;
}

impl Record for ImportError {
    const TABLE: Table = Table::IMPORT_ERRORS;
}

/// The lookup entry: points at the contact.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct ContactEmail {
    id: Id,
}

impl Record for ContactEmail {
    const TABLE: Table = Table::CONTACT_EMAILS;
}

/// A team's number of contacts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct ContactCount {
    contacts: u64,
}

impl Record for ContactCount {
    const TABLE: Table = Table::CONTACT_COUNTS;
}

fn id_key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

fn email_key(team_id: Id, email: &str) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), normalize(email).as_bytes()].concat()
}

fn member_key(team_id: Id, segment_id: Id, contact_id: Id) -> Vec<u8> {
    [
        team_id.as_bytes().as_slice(),
        segment_id.as_bytes(),
        contact_id.as_bytes(),
    ]
    .concat()
}

fn error_key(team_id: Id, import_id: Id, row: u64) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), import_id.as_bytes(), &row.to_be_bytes()].concat()
}

impl ContactStore for RocksContacts {
    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone per table, however many there are.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::CONTACTS, team_id.as_bytes());
        batch.delete_prefix(Table::CONTACT_EMAILS, team_id.as_bytes());
        batch.delete_prefix(Table::CONTACT_COUNTS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Contact>, Error> {
        Ok(self.store.get::<Contact>(id_key(team_id, id))?)
    }

    fn by_email(&self, team_id: Id, email: &str) -> Result<Option<Contact>, Error> {
        let Some(entry) = self.store.get::<ContactEmail>(email_key(team_id, email))? else {
            return Ok(None);
        };
        // Only the contact still at that address answers (it may have moved since).
        Ok(self
            .get(team_id, entry.id)?
            .filter(|contact| normalize(&contact.email) == normalize(email)))
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error> {
        Ok(page.load::<Contact>(&self.store, team_id.as_bytes())?)
    }

    fn segment_ids(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Id>, bool), Error> {
        let prefix = id_key(team_id, segment_id);
        Ok(page.load_ids(&self.store, Table::SEGMENT_MEMBERS, &prefix)?)
    }

    fn segment_page(&self, team_id: Id, segment_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error> {
        let (ids, has_more) = self.segment_ids(team_id, segment_id, page)?;
        let mut contacts = Vec::with_capacity(ids.len());
        for id in ids {
            // An entry whose contact left the segment in the same instant is skipped.
            if let Some(contact) = self.get(team_id, id)?.filter(|c| c.segments.contains(&segment_id)) {
                contacts.push(contact);
            }
        }
        Ok((contacts, has_more))
    }

    fn count(&self, team_id: Id) -> Result<u64, Error> {
        if let Some(count) = self.store.get::<ContactCount>(team_id.as_bytes())? {
            return Ok(count.contacts);
        }
        // Contacts written before counts were kept: counted once here, then kept by the
        // next write.
        let keys = self.store.scan_raw(Table::CONTACTS, Scan::prefix(team_id.as_bytes()))?;
        Ok(keys.len() as u64)
    }

    fn put(&self, contact: &Contact, previous: Option<&Contact>, events: &[Event], with: Change) -> Result<(), Error> {
        let mut batch = with.into_local()?;
        Self::stage(&mut batch, contact, previous)?;
        self.stage_count(&mut batch, contact.team_id, u64::from(previous.is_none()), 0)?;
        self.commit(batch, events)
    }

    fn delete(&self, contact: &Contact, events: &[Event]) -> Result<(), Error> {
        let team = contact.team_id;
        let mut batch = Batch::new();
        batch.delete::<Contact>(id_key(team, contact.id));
        batch.delete::<ContactEmail>(email_key(team, &contact.email));
        for segment in &contact.segments {
            batch.delete_raw(Table::SEGMENT_MEMBERS, member_key(team, *segment, contact.id));
        }
        self.stage_count(&mut batch, team, 0, 1)?;
        self.commit(batch, events)
    }

    fn commit_import(
        &self,
        writes: &[(Contact, Option<Contact>)],
        events: &[Event],
        errors: &[ImportError],
        import: &ContactImport,
    ) -> Result<(), Error> {
        let mut batch = Batch::new();
        let mut added = 0;
        for (contact, previous) in writes {
            Self::stage(&mut batch, contact, previous.as_ref())?;
            added += u64::from(previous.is_none());
        }
        self.stage_count(&mut batch, import.team_id, added, 0)?;
        for error in errors {
            batch.put(error_key(import.team_id, import.id, error.row), error)?;
        }
        Self::stage_import(&mut batch, import)?;
        self.commit(batch, events)
    }
}

impl AudienceStore for RocksContacts {
    fn import_expiry(&self) -> std::sync::Arc<dyn crate::storage::expiry::Sweep> {
        crate::storage::expiry::sweep(&self.store, super::imports::store::Imports)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone per table, however many there are.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::SEGMENTS, team_id.as_bytes());
        batch.delete_prefix(Table::SEGMENT_MEMBERS, team_id.as_bytes());
        batch.delete_prefix(Table::TOPICS, team_id.as_bytes());
        batch.delete_prefix(Table::CONTACT_PROPERTIES, team_id.as_bytes());
        batch.delete_prefix(Table::CONTACT_IMPORTS, team_id.as_bytes());
        batch.delete_prefix(Table::IMPORT_ERRORS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
    fn segment(&self, team_id: Id, id: Id) -> Result<Option<Segment>, Error> {
        Ok(self.store.get(id_key(team_id, id))?)
    }

    fn segment_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Segment>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn segments(&self, team_id: Id) -> Result<Vec<Segment>, Error> {
        self.all(team_id)
    }

    fn put_segment(&self, segment: &Segment) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(id_key(segment.team_id, segment.id), segment)?;
        self.commit(batch, &[])
    }

    fn delete_segment(&self, segment: &Segment) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Segment>(id_key(segment.team_id, segment.id));
        // However many members: one range tombstone. Their records still name the
        // segment; readers ignore segments that are gone.
        batch.delete_prefix(Table::SEGMENT_MEMBERS, &id_key(segment.team_id, segment.id));
        self.commit(batch, &[])
    }

    fn topic(&self, team_id: Id, id: Id) -> Result<Option<Topic>, Error> {
        Ok(self.store.get(id_key(team_id, id))?)
    }

    fn topic_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Topic>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn topics(&self, team_id: Id) -> Result<Vec<Topic>, Error> {
        self.all(team_id)
    }

    fn put_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(id_key(topic.team_id, topic.id), topic)?;
        self.commit_one(batch, event)
    }

    fn delete_topic(&self, topic: &Topic, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Topic>(id_key(topic.team_id, topic.id));
        self.commit_one(batch, event)
    }

    fn property(&self, team_id: Id, id: Id) -> Result<Option<ContactProperty>, Error> {
        Ok(self.store.get(id_key(team_id, id))?)
    }

    fn property_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ContactProperty>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn properties(&self, team_id: Id) -> Result<Vec<ContactProperty>, Error> {
        self.all(team_id)
    }

    fn put_property(&self, property: &ContactProperty) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(id_key(property.team_id, property.id), property)?;
        self.commit(batch, &[])
    }

    fn delete_property(&self, property: &ContactProperty) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<ContactProperty>(id_key(property.team_id, property.id));
        self.commit(batch, &[])
    }

    fn import(&self, team_id: Id, id: Id) -> Result<Option<ContactImport>, Error> {
        Ok(self.store.get(id_key(team_id, id))?)
    }

    fn import_page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<ContactImport>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn unfinished_imports(&self) -> Result<Vec<ContactImport>, Error> {
        let mut imports = Vec::new();
        let mut stale = Batch::new();
        for (key, _) in self.store.scan_raw(Table::IMPORT_QUEUE, Scan::prefix(&[]))? {
            let (Some(id), Some(team)) = (
                Id::from_slice(&key[..16.min(key.len())]),
                key.get(16..).and_then(Id::from_slice),
            ) else {
                stale.delete_raw(Table::IMPORT_QUEUE, key);
                continue;
            };
            match self.import(team, id)? {
                Some(import) if !import.status.is_final() => imports.push(import),
                // Finished, or erased with its team: the entry outlived it.
                _ => stale.delete_raw(Table::IMPORT_QUEUE, key),
            }
        }
        if !stale.is_empty() {
            self.store.commit(stale).wait()?;
        }
        Ok(imports)
    }

    fn put_import(&self, import: &ContactImport) -> Result<(), Error> {
        let mut batch = Batch::new();
        Self::stage_import(&mut batch, import)?;
        self.commit(batch, &[])
    }

    fn import_errors(&self, import: &ContactImport, after: u64, limit: usize) -> Result<Vec<ImportError>, Error> {
        let prefix = id_key(import.team_id, import.id);
        let cursor = error_key(import.team_id, import.id, after);
        Ok(self
            .store
            .scan::<ImportError>(Scan {
                after: Some(&cursor),
                limit,
                ..Scan::prefix(&prefix)
            })?
            .into_iter()
            .map(|(_, error)| error)
            .collect())
    }
}
