//! Where templates are kept. [`TemplateStore`] is the narrow interface the service uses;
//! [`RocksTemplates`] keeps them in the node's RocksDB: a template by team and id in
//! [`Table::TEMPLATES`] (both its versions in the one record), and its alias, lower-cased,
//! pointing at it by team in [`Table::TEMPLATE_ALIASES`], written in the same batch.
//!
//! [`PostgresTemplates`] keeps them in PostgreSQL, for a cluster.

mod copy;
mod postgres;

use crate::storage::Error;
use herald_queue::{Batch, Id, Record, Store, Table};

use super::{Template, TemplateSummary};
use crate::storage::page::PageRequest;
pub use copy::copy;
pub use postgres::PostgresTemplates;

/// A team's templates.
pub trait TemplateStore: Send + Sync + std::fmt::Debug {
    /// The team's template `id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Template>, Error>;
    /// The team's template with alias `alias` (in any case).
    fn by_alias(&self, team_id: Id, alias: &str) -> Result<Option<Template>, Error>;
    /// One page of the team's templates' list items, newest first.
    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<TemplateSummary>, bool), Error>;
    /// How many templates the team has.
    fn count(&self, team_id: Id) -> Result<usize, Error>;
    /// Writes `template`, new or changed from `previous` (whose alias may go).
    fn put(&self, template: &Template, previous: Option<&Template>) -> Result<(), Error>;
    /// Deletes `template` with its alias.
    fn delete(&self, template: &Template) -> Result<(), Error>;
    /// Erases what this store keeps of the deleted team `team_id`, durably, a batch at a
    /// time: `true` while more is left (call again), `false` once none is.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

/// Templates in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksTemplates {
    store: Store,
}

impl RocksTemplates {
    /// Templates in `store`.
    pub fn new(store: Store) -> RocksTemplates {
        RocksTemplates { store }
    }
}

impl Record for Template {
    const TABLE: Table = Table::TEMPLATES;
}

impl Record for TemplateSummary {
    const TABLE: Table = Table::TEMPLATE_SUMMARIES;
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Alias {
    id: Id,
}

impl Record for Alias {
    const TABLE: Table = Table::TEMPLATE_ALIASES;
}

fn id_key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

fn alias_key(team_id: Id, alias: &str) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), alias.to_ascii_lowercase().as_bytes()].concat()
}

impl TemplateStore for RocksTemplates {
    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Keyed by team first: one range tombstone per table, however many there are.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::TEMPLATES, team_id.as_bytes());
        batch.delete_prefix(Table::TEMPLATE_ALIASES, team_id.as_bytes());
        batch.delete_prefix(Table::TEMPLATE_SUMMARIES, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Template>, Error> {
        Ok(self.store.get(id_key(team_id, id))?)
    }

    fn by_alias(&self, team_id: Id, alias: &str) -> Result<Option<Template>, Error> {
        let Some(entry) = self.store.get::<Alias>(alias_key(team_id, alias))? else {
            return Ok(None);
        };
        Ok(self
            .get(team_id, entry.id)?
            .filter(|t| t.alias.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(alias))))
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<TemplateSummary>, bool), Error> {
        Ok(page.load(&self.store, team_id.as_bytes())?)
    }

    fn count(&self, team_id: Id) -> Result<usize, Error> {
        Ok(self
            .store
            .scan_raw(
                Table::TEMPLATE_SUMMARIES,
                herald_queue::Scan::prefix(team_id.as_bytes()),
            )?
            .len())
    }

    fn put(&self, template: &Template, previous: Option<&Template>) -> Result<(), Error> {
        let mut batch = Batch::new();
        if let Some(old) = previous.and_then(|p| p.alias.as_deref())
            && template
                .alias
                .as_deref()
                .is_none_or(|new| !new.eq_ignore_ascii_case(old))
        {
            batch.delete::<Alias>(alias_key(template.team_id, old));
        }
        if let Some(alias) = &template.alias {
            batch.put(alias_key(template.team_id, alias), &Alias { id: template.id })?;
        }
        batch.put(id_key(template.team_id, template.id), template)?;
        batch.put(id_key(template.team_id, template.id), &template.summary())?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn delete(&self, template: &Template) -> Result<(), Error> {
        let mut batch = Batch::new();
        if let Some(alias) = &template.alias {
            batch.delete::<Alias>(alias_key(template.team_id, alias));
        }
        batch.delete::<Template>(id_key(template.team_id, template.id));
        batch.delete::<TemplateSummary>(id_key(template.team_id, template.id));
        Ok(self.store.commit(batch).wait()?)
    }
}
