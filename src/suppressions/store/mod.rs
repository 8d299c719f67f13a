//! Where suppressed addresses are kept. [`SuppressionStore`] is the narrow interface the
//! suppressions service uses; [`RocksSuppressions`] keeps them in the node's RocksDB. A
//! cluster keeps them in a shared database behind the same trait, so an address that
//! bounced through one node is suppressed on all.
//!
//! Each entry is stored twice in the same batch: by team and lower-cased address in
//! [`Table::SUPPRESSIONS`] (what delivery checks before connecting) and by team and id
//! in [`Table::SUPPRESSION_IDS`] (what a lookup by id finds, and the time order of
//! lists). Those keys and encodings are this module's alone.

mod copy;
mod postgres;

pub use copy::copy;
pub use postgres::PostgresSuppressions;

use crate::storage::{Change, Error};
use herald_queue::{Batch, Id, Record, Scan, Store, Table};

use super::{Origin, Suppression, normalize};
use crate::events::Event;
use crate::storage::page::{Cursor, PageRequest};

/// Id index entries read at a time when a list is filtered by origin. Unfiltered lists
/// read one page's worth; a filter may skip many entries, so it reads in larger steps.
const FILTERED_SCAN_STEP: usize = 500;

/// A team's suppressed addresses.
pub trait SuppressionStore: Send + Sync + std::fmt::Debug {
    /// The team's entry for `email` (any case), if it is suppressed.
    fn find(&self, team_id: Id, email: &str) -> Result<Option<Suppression>, Error>;
    /// The team's entry with id `id`.
    fn find_by_id(&self, team_id: Id, id: Id) -> Result<Option<Suppression>, Error>;
    /// One page of the team's entries (of `origin`, when given), newest first, and
    /// whether more lie beyond it in the direction of travel.
    fn page(&self, team_id: Id, page: &PageRequest, origin: Option<Origin>) -> Result<(Vec<Suppression>, bool), Error>;
    /// Adds `added` and removes `removed`, with `events`, at once, durably.
    fn apply(&self, added: &[Suppression], removed: &[Suppression], events: &[Event]) -> Result<(), Error>;
    /// Stages the addition of `suppression` into `change`, to land with the change that
    /// causes it (a bounce's outcome, a complaint).
    fn stage(&self, change: &mut Change, suppression: &Suppression) -> Result<(), Error>;
}

/// Suppressions in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksSuppressions {
    store: Store,
}

impl RocksSuppressions {
    /// Suppressions in `store`.
    pub fn new(store: Store) -> RocksSuppressions {
        RocksSuppressions { store }
    }
}

impl Record for Suppression {
    const TABLE: Table = Table::SUPPRESSIONS;
}

/// The id index entry: points at the address.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct SuppressionId {
    email: String,
}

impl Record for SuppressionId {
    const TABLE: Table = Table::SUPPRESSION_IDS;
}

/// The key by address: team id then the lower-cased address.
fn address_key(team_id: Id, email: &str) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), normalize(email).as_bytes()].concat()
}

/// The key by id: team id then the entry's id.
fn id_key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// Adds both entries of `suppression` to `batch`: delivery suppresses a bounced address
/// in the same write as the outcome that caused it.
fn stage(batch: &mut Batch, suppression: &Suppression) -> Result<(), Error> {
    batch.put(address_key(suppression.team_id, &suppression.email), suppression)?;
    Ok(batch.put(
        id_key(suppression.team_id, suppression.id),
        &SuppressionId {
            email: suppression.email.clone(),
        },
    )?)
}

impl SuppressionStore for RocksSuppressions {
    fn stage(&self, change: &mut Change, suppression: &Suppression) -> Result<(), Error> {
        stage(change.batch(), suppression)
    }

    fn find(&self, team_id: Id, email: &str) -> Result<Option<Suppression>, Error> {
        Ok(self.store.get::<Suppression>(address_key(team_id, email))?)
    }

    fn find_by_id(&self, team_id: Id, id: Id) -> Result<Option<Suppression>, Error> {
        let Some(index) = self.store.get::<SuppressionId>(id_key(team_id, id))? else {
            return Ok(None);
        };
        // The two reads are not one snapshot: between them the address may have been
        // removed and added again under a new id. Only the entry with this id answers.
        Ok(self.find(team_id, &index.email)?.filter(|found| found.id == id))
    }

    /// [`PageRequest::load`] cannot serve here: the records are keyed by address, and only
    /// the id index is in time order; and a filter must skip entries without shortening
    /// the page. So this walks the id index the same way, looking each entry up by
    /// address, until it has one more match than the page holds or the team's entries
    /// run out. A filter that matches little therefore reads much of the list: there is
    /// no index by origin, since lists are rare next to the lookups delivery makes.
    fn page(&self, team_id: Id, page: &PageRequest, origin: Option<Origin>) -> Result<(Vec<Suppression>, bool), Error> {
        let prefix = team_id.as_bytes().as_slice();
        let (mut after, reverse) = match page.cursor {
            Cursor::Start => (None, true),
            Cursor::After(id) => (Some(id_key(team_id, id)), true),
            Cursor::Before(id) => (Some(id_key(team_id, id)), false),
        };
        let wanted = page.limit.saturating_add(1);
        let step = if origin.is_some() { FILTERED_SCAN_STEP } else { wanted };
        let mut found = Vec::new();
        'scan: loop {
            let entries = self.store.scan::<SuppressionId>(Scan {
                prefix,
                after: after.as_deref(),
                reverse,
                limit: step,
            })?;
            for (key, index) in &entries {
                let id = key
                    .get(prefix.len()..)
                    .and_then(Id::from_slice)
                    .ok_or_else(|| Error::Corrupt {
                        table: Table::SUPPRESSION_IDS.name(),
                        reason: "a key is shorter than team and id".to_owned(),
                    })?;
                // An entry removed (or removed and added again) since the scan is skipped.
                let Some(entry) = self.find(team_id, &index.email)?.filter(|s| s.id == id) else {
                    continue;
                };
                if origin.is_none_or(|filter| entry.origin == filter) {
                    found.push(entry);
                    if found.len() == wanted {
                        break 'scan;
                    }
                }
            }
            if entries.len() < step {
                break;
            }
            after = entries.last().map(|(key, _)| key.clone());
        }
        let has_more = found.len() > page.limit;
        found.truncate(page.limit);
        if !reverse {
            found.reverse();
        }
        Ok((found, has_more))
    }

    fn apply(&self, added: &[Suppression], removed: &[Suppression], events: &[Event]) -> Result<(), Error> {
        let mut batch = Batch::new();
        // Removals first: an address removed and added again in one change shares its
        // key with the new entry, and the later write in a batch wins.
        for suppression in removed {
            batch.delete::<Suppression>(address_key(suppression.team_id, &suppression.email));
            batch.delete::<SuppressionId>(id_key(suppression.team_id, suppression.id));
        }
        for suppression in added {
            stage(&mut batch, suppression)?;
        }
        for event in events {
            crate::webhooks::log::stage_event(&mut batch, event)?;
        }
        if batch.is_empty() {
            return Ok(());
        }
        Ok(self.store.commit(batch).wait()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case() {
        let team = Id::from_bytes([7; 16]);
        assert_eq!(
            address_key(team, "Bob@Example.ORG"),
            address_key(team, "bob@example.org")
        );
    }
}
