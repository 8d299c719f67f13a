//! Where contacts are kept. [`ContactStore`] is the narrow interface the contacts service
//! uses; [`RocksContacts`] keeps them in the node's RocksDB (a cluster keeps them in a
//! shared database behind the same trait).
//!
//! A contact is stored by team and id in [`Table::CONTACTS`] (ids are time-ordered, so a
//! team's contacts list newest first with one reverse prefix scan), and its address
//! points at it by team and normalised address in [`Table::CONTACT_EMAILS`], written in
//! the same batch. Those keys and encodings are this module's alone.

use herald_queue::{Batch, Error, Id, Record, Store, Table};

use super::{Contact, normalize};
use crate::events::{self, Event};
use crate::services::page::PageRequest;

/// A team's contacts.
pub trait ContactStore: Send + Sync + std::fmt::Debug {
    /// The team's contact `id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Contact>, Error>;
    /// The team's contact with address `email` (the domain part in any case).
    fn by_email(&self, team_id: Id, email: &str) -> Result<Option<Contact>, Error>;
    /// One page of the team's contacts, newest first, and whether more lie beyond it.
    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error>;
    /// Writes `contact`, new or changed, with `event`, durably. `old_email`: the address
    /// it had before a change of address, whose lookup goes.
    fn put(&self, contact: &Contact, old_email: Option<&str>, event: Option<&Event>) -> Result<(), Error>;
    /// Deletes `contact` with its lookup, and writes `event`, durably.
    fn delete(&self, contact: &Contact, event: Option<&Event>) -> Result<(), Error>;
}

/// Contacts in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksContacts {
    store: Store,
}

impl RocksContacts {
    /// Contacts in `store`.
    pub fn new(store: Store) -> RocksContacts {
        RocksContacts { store }
    }

    fn commit(&self, mut batch: Batch, event: Option<&Event>) -> Result<(), Error> {
        if let Some(event) = event {
            events::stage(&mut batch, event)?;
        }
        self.store.commit(batch).wait()
    }
}

impl Record for Contact {
    const TABLE: Table = Table::CONTACTS;
}

/// The lookup entry: points at the contact.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct ContactEmail {
    id: Id,
}

impl Record for ContactEmail {
    const TABLE: Table = Table::CONTACT_EMAILS;
}

fn id_key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

fn email_key(team_id: Id, email: &str) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), normalize(email).as_bytes()].concat()
}

impl ContactStore for RocksContacts {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Contact>, Error> {
        self.store.get::<Contact>(id_key(team_id, id))
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
        page.load::<Contact>(&self.store, team_id.as_bytes())
    }

    fn put(&self, contact: &Contact, old_email: Option<&str>, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        if let Some(old) = old_email.filter(|old| normalize(old) != normalize(&contact.email)) {
            batch.delete::<ContactEmail>(email_key(contact.team_id, old));
        }
        batch.put(id_key(contact.team_id, contact.id), contact)?;
        batch.put(
            email_key(contact.team_id, &contact.email),
            &ContactEmail { id: contact.id },
        )?;
        self.commit(batch, event)
    }

    fn delete(&self, contact: &Contact, event: Option<&Event>) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Contact>(id_key(contact.team_id, contact.id));
        batch.delete::<ContactEmail>(email_key(contact.team_id, &contact.email));
        self.commit(batch, event)
    }
}
