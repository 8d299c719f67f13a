//! Sending domains in PostgreSQL (`domains`; see the schema's third migration): shared by
//! every node, so a domain verified through one sends from all. What each message reads
//! ([`DomainStore::cached`], [`DomainStore::by_name`]) is kept in memory for at most
//! [`CACHE_FOR`]: a change made through another node reaches this one within that time,
//! one made through this node at once. Events go to the node's outbox after the domain
//! is committed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use herald_queue::{Id, SharedClock, Store};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::DomainStore;
use crate::domains::dkim::DkimKey;
use crate::domains::model::{Domain, RecordChecks};
use crate::events::Event;
use crate::storage::Error;
use crate::storage::due::DueQueue;
use crate::storage::page::PageRequest;
use crate::storage::postgres::due::{RowQueue, row_id};
use crate::storage::postgres::{
    Postgres, Value, enum_text, from_driver, page_of, page_params, page_sql, text_enum, time, timestamp,
};

/// How long a domain read for a message is trusted: the storage map's "changes reach
/// every node within a second".
const CACHE_FOR: Duration = Duration::from_secs(1);

/// Cached domains at most; the cache starts over when full.
const CACHE_MAX: usize = 4096;

/// The table's name, for corrupt-record errors.
const TABLE: &str = "domains";

/// The columns of `domains`, in the order [`domain`] reads them and [`WRITE`] writes them.
const COLUMNS: &str = "id, team_id, name, region, custom_return_path, open_tracking, click_tracking, tls, \
     tracking_subdomain, dkim_selector, dkim_algorithm, dkim_private_pkcs8, dkim_public, check_dkim, check_spf_txt, \
     check_spf_mx, check_dmarc, check_tracking, status, dns_verification_skipped, created_at, \
     verification_started_at, last_checked_at, next_check_at, failed_checks";

/// Writes a domain, new or changed, and arms its check at its next check time.
pub(super) const WRITE: &str = "INSERT INTO domains (id, team_id, name, region, custom_return_path, open_tracking,
        click_tracking, tls, tracking_subdomain, dkim_selector, dkim_algorithm, dkim_private_pkcs8, dkim_public,
        check_dkim, check_spf_txt, check_spf_mx, check_dmarc, check_tracking, status, dns_verification_skipped,
        created_at, verification_started_at, last_checked_at, next_check_at, failed_checks, check_due_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
        $23, $24, $25, $24)
    ON CONFLICT (id) DO UPDATE SET region = EXCLUDED.region, custom_return_path = EXCLUDED.custom_return_path,
        open_tracking = EXCLUDED.open_tracking, click_tracking = EXCLUDED.click_tracking, tls = EXCLUDED.tls,
        tracking_subdomain = EXCLUDED.tracking_subdomain, dkim_selector = EXCLUDED.dkim_selector,
        dkim_algorithm = EXCLUDED.dkim_algorithm, dkim_private_pkcs8 = EXCLUDED.dkim_private_pkcs8,
        dkim_public = EXCLUDED.dkim_public, check_dkim = EXCLUDED.check_dkim, check_spf_txt = EXCLUDED.check_spf_txt,
        check_spf_mx = EXCLUDED.check_spf_mx, check_dmarc = EXCLUDED.check_dmarc,
        check_tracking = EXCLUDED.check_tracking, status = EXCLUDED.status,
        dns_verification_skipped = EXCLUDED.dns_verification_skipped, created_at = EXCLUDED.created_at,
        verification_started_at = EXCLUDED.verification_started_at, last_checked_at = EXCLUDED.last_checked_at,
        next_check_at = EXCLUDED.next_check_at, failed_checks = EXCLUDED.failed_checks,
        check_due_at = EXCLUDED.check_due_at";

/// Domains recently read for messages, by team and id, and names to ids.
#[derive(Debug, Default)]
struct Cache {
    domains: HashMap<(Id, Id), (Instant, Arc<Domain>)>,
    names: HashMap<(Id, String), (Instant, Id)>,
}

/// Sending domains in PostgreSQL, their events in the node's outbox.
#[derive(Debug)]
pub struct PostgresDomains {
    db: Postgres,
    node: Store,
    clock: SharedClock,
    cache: Mutex<Cache>,
}

impl PostgresDomains {
    /// Domains in `db`, whose schema is migrated; their events go to the outbox in
    /// `node`, the node's own store, and their checks are due by `node`'s clock.
    pub fn new(db: Postgres, node: Store) -> PostgresDomains {
        PostgresDomains {
            clock: node.clock().clone(),
            db,
            node,
            cache: Mutex::new(Cache::default()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets what this node cached of `domain`.
    fn forget(&self, domain: &Domain) {
        let mut cache = self.cache();
        cache.domains.remove(&(domain.team_id, domain.id));
        cache.names.remove(&(domain.team_id, domain.name.clone()));
    }

    /// Runs `sql` with `domain`'s values, then puts `event` in the node's outbox.
    fn write(
        &self,
        sql: &str,
        values: &[&(dyn ToSql + Sync)],
        domain: &Domain,
        event: Option<&Event>,
    ) -> Result<(), Error> {
        self.db.execute(sql, values)?;
        self.forget(domain);
        crate::webhooks::log::commit_events(&self.node, event)
    }

    fn upsert(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        let values = values(domain);
        let values: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
        self.write(WRITE, &values, domain, event)
    }
}

/// The values of [`WRITE`] for `domain`.
pub(super) fn values(domain: &Domain) -> Vec<Value> {
    let checks = &domain.checks;
    vec![
        Box::new(domain.id.uuid()),
        Box::new(domain.team_id.uuid()),
        Box::new(domain.name.clone()),
        Box::new(domain.region.clone()),
        Box::new(domain.custom_return_path.clone()),
        Box::new(domain.open_tracking),
        Box::new(domain.click_tracking),
        Box::new(enum_text(&domain.tls)),
        Box::new(domain.tracking_subdomain.clone()),
        Box::new(domain.dkim.selector.clone()),
        Box::new(enum_text(&domain.dkim.algorithm)),
        Box::new(domain.dkim.private_pkcs8.clone()),
        Box::new(domain.dkim.public.clone()),
        Box::new(enum_text(&checks.dkim)),
        Box::new(enum_text(&checks.spf_txt)),
        Box::new(enum_text(&checks.spf_mx)),
        Box::new(enum_text(&checks.dmarc)),
        Box::new(enum_text(&checks.tracking)),
        Box::new(enum_text(&domain.status)),
        Box::new(domain.dns_verification_skipped),
        Box::new(time(domain.created_at)),
        Box::new(domain.verification_started_at.map(time)),
        Box::new(domain.last_checked_at.map(time)),
        Box::new(domain.next_check_at.map(time)),
        Box::new(i32::try_from(domain.failed_checks).unwrap_or(i32::MAX)),
    ]
}

fn domain(row: &Row) -> Result<Domain, Error> {
    let text = |index: usize| row.get::<_, &str>(index);
    Ok(Domain {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        name: row.get(2),
        region: row.get(3),
        custom_return_path: row.get(4),
        open_tracking: row.get(5),
        click_tracking: row.get(6),
        tls: text_enum(TABLE, text(7))?,
        tracking_subdomain: row.get(8),
        dkim: DkimKey {
            selector: row.get(9),
            algorithm: text_enum(TABLE, text(10))?,
            private_pkcs8: row.get(11),
            public: row.get(12),
        },
        checks: RecordChecks {
            dkim: text_enum(TABLE, text(13))?,
            spf_txt: text_enum(TABLE, text(14))?,
            spf_mx: text_enum(TABLE, text(15))?,
            dmarc: text_enum(TABLE, text(16))?,
            tracking: text_enum(TABLE, text(17))?,
        },
        status: text_enum(TABLE, text(18))?,
        dns_verification_skipped: row.get(19),
        created_at: timestamp(row.get(20)),
        verification_started_at: row.get::<_, Option<std::time::SystemTime>>(21).map(timestamp),
        last_checked_at: row.get::<_, Option<std::time::SystemTime>>(22).map(timestamp),
        next_check_at: row.get::<_, Option<std::time::SystemTime>>(23).map(timestamp),
        failed_checks: u32::try_from(row.get::<_, i32>(24)).unwrap_or(0),
    })
}

impl DomainStore for PostgresDomains {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Domain>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND id = $2");
        self.db.one(&sql, &[&team_id.uuid(), &id.uuid()], domain)
    }

    fn cached(&self, team_id: Id, id: Id) -> Result<Option<Arc<Domain>>, Error> {
        if let Some((at, domain)) = self.cache().domains.get(&(team_id, id))
            && at.elapsed() < CACHE_FOR
        {
            return Ok(Some(domain.clone()));
        }
        let Some(found) = self.get(team_id, id)? else {
            self.cache().domains.remove(&(team_id, id));
            return Ok(None);
        };
        let found = Arc::new(found);
        let mut cache = self.cache();
        if cache.domains.len() >= CACHE_MAX {
            cache.domains.clear();
        }
        cache.domains.insert((team_id, id), (Instant::now(), found.clone()));
        Ok(Some(found))
    }

    fn by_name(&self, team_id: Id, name: &str) -> Result<Option<Arc<Domain>>, Error> {
        let key = (team_id, name.to_owned());
        let known = self.cache().names.get(&key).copied();
        let id = match known {
            Some((at, id)) if at.elapsed() < CACHE_FOR => id,
            _ => {
                let found = self.db.run(async |client| {
                    let row = client
                        .query_opt(
                            "SELECT id FROM domains WHERE team_id = $1 AND name = $2",
                            &[&team_id.uuid(), &name],
                        )
                        .await
                        .map_err(from_driver)?;
                    Ok(row.map(|row| Id::from(row.get::<_, uuid::Uuid>(0))))
                })?;
                let mut cache = self.cache();
                let Some(id) = found else {
                    cache.names.remove(&key);
                    return Ok(None);
                };
                if cache.names.len() >= CACHE_MAX {
                    cache.names.clear();
                }
                cache.names.insert(key, (Instant::now(), id));
                id
            }
        };
        // The name is the domain's for good (it never changes), but the domain may have
        // gone since: a name whose domain is gone finds nothing.
        self.cached(team_id, id)
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Domain>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            let found = rows.iter().map(domain).collect::<Result<Vec<_>, _>>()?;
            Ok(page_of(found, page))
        })
    }

    fn all(&self) -> Result<Vec<Domain>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM domains ORDER BY team_id, id");
            let rows = client.query(&sql, &[]).await.map_err(from_driver)?;
            rows.iter().map(domain).collect()
        })
    }

    fn insert(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        self.upsert(domain, event)
    }

    fn put(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        self.upsert(domain, event)
    }

    fn delete(&self, domain: &Domain, event: Option<&Event>) -> Result<(), Error> {
        self.write(
            "DELETE FROM domains WHERE team_id = $1 AND id = $2",
            &[&domain.team_id.uuid(), &domain.id.uuid()],
            domain,
            event,
        )
    }

    fn check_queue(&self) -> Arc<dyn DueQueue> {
        Arc::new(RowQueue::clearing(
            &self.db,
            self.clock.clone(),
            "domains",
            "check_due_at",
        ))
    }

    fn at_check(&self, key: &[u8]) -> Result<Option<Domain>, Error> {
        let Some(id) = row_id(key) else {
            return Ok(None);
        };
        let sql = format!("SELECT {COLUMNS} FROM domains WHERE id = $1");
        self.db.one(&sql, &[&id], domain)
    }
}
