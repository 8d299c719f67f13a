//! The store traits as contracts: one suite per trait that any implementation must pass
//! (a module per store in `tests/conformance/`, and the webhooks' here), run against the
//! RocksDB one on a real store in a temp directory, against the PostgreSQL one (where
//! there is one yet) on a private server (`util/postgres.rs`) with a database per test,
//! and against an in-memory one kept here; the record locks' too. The in-memory store then carries a service (the webhooks
//! service, assembled with [`Services::assemble`]) to show that the services reach their
//! records through the trait alone.

#[path = "conformance/accounts.rs"]
mod accounts;
#[path = "conformance/broadcasts.rs"]
mod broadcasts;
#[path = "util/conformance.rs"]
mod conformance;
#[path = "conformance/contacts.rs"]
mod contacts;
#[path = "conformance/counters.rs"]
mod counters;
#[path = "conformance/domains.rs"]
mod domains;
#[path = "conformance/emails.rs"]
mod emails;
#[path = "conformance/idempotency.rs"]
mod idempotency;
#[path = "conformance/images.rs"]
mod images;
#[path = "conformance/locks.rs"]
mod locks;
#[path = "util/postgres.rs"]
mod postgres;
#[path = "conformance/suppressions.rs"]
mod suppressions;
#[path = "conformance/templates.rs"]
mod templates;
#[path = "conformance/users.rs"]
mod users;
#[path = "conformance/webhook_log.rs"]
mod webhook_log;

use std::collections::BTreeMap;
use std::sync::Mutex;

use conformance::{ids_of, page, pages_go_newest_first, rocksdb};
use herald::accounts::{Caller, Permission};
use herald::logs::RequestLog;
use herald::services::{Backends, Held, LocalLocks, Locks, RecordName, Services};
use herald::storage::Error;
use herald::storage::page::{Cursor, PageRequest};
use herald::webhooks::{PostgresWebhooks, RocksWebhooks, SigningSecret, Webhook, WebhookStatus, WebhookStore};
use herald_queue::{Id, Scan, Spool, Store};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Webhooks in a map: what a test (or another backend) can put behind the trait.
#[derive(Debug, Default)]
struct MemoryWebhooks {
    webhooks: Mutex<BTreeMap<(Id, Id), Webhook>>,
}

impl MemoryWebhooks {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Id, Id), Webhook>> {
        self.webhooks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl WebhookStore for MemoryWebhooks {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Webhook>, Error> {
        Ok(self.map().get(&(team_id, id)).cloned())
    }

    fn for_team(&self, team_id: Id) -> Result<Vec<Webhook>, Error> {
        Ok(self.map().values().filter(|w| w.team_id == team_id).cloned().collect())
    }

    fn any(&self, team_id: Id) -> Result<bool, Error> {
        Ok(self.map().keys().any(|(team, _)| *team == team_id))
    }

    fn list(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<Webhook>, bool), Error> {
        Ok(page.slice(self.for_team(team_id)?, |w| w.id))
    }

    fn put(&self, webhook: &Webhook) -> Result<(), Error> {
        self.map().insert((webhook.team_id, webhook.id), webhook.clone());
        Ok(())
    }

    fn delete(&self, webhook: &Webhook) -> Result<(), Error> {
        self.map().remove(&(webhook.team_id, webhook.id));
        Ok(())
    }
}

/// A webhook as stored, secret and all: what two reads of one webhook agree on.
fn json(webhook: Option<&Webhook>) -> serde_json::Value {
    serde_json::to_value(webhook).expect("encode")
}

fn webhook(store: &Store, team_id: Id, endpoint: &str) -> Webhook {
    Webhook {
        id: store.next_id(),
        team_id,
        endpoint: endpoint.into(),
        events: vec!["email.sent".into()],
        status: WebhookStatus::Enabled,
        signing_secret: SigningSecret::generate().expect("random"),
        previous_secret: None,
        created_at: store.now(),
    }
}

/// What every [`WebhookStore`] does: `ids` is where ids and times come from.
fn webhook_store_conformance(webhooks: &dyn WebhookStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    assert!(webhooks.get(team, ids.next_id()).expect("get").is_none());
    assert!(!webhooks.any(team).expect("any"));
    let made: Vec<Webhook> = (0..5)
        .map(|n| webhook(ids, team, &format!("https://hooks.example.com/{n}")))
        .collect();
    for one in &made {
        webhooks.put(one).expect("put");
    }
    let stranger = webhook(ids, other, "https://hooks.example.org/x");
    webhooks.put(&stranger).expect("put");
    assert!(webhooks.any(team).expect("any") && webhooks.any(other).expect("any"));
    assert_eq!(
        json(webhooks.get(team, made[2].id).expect("get").as_ref()),
        json(Some(&made[2]))
    );
    assert!(
        webhooks.get(other, made[2].id).expect("get").is_none(),
        "a team sees its own only"
    );
    let mut all = webhooks.for_team(team).expect("for team");
    all.sort_by_key(|w| w.id);
    assert_eq!(
        all.iter().map(|w| json(Some(w))).collect::<Vec<_>>(),
        made.iter().map(|w| json(Some(w))).collect::<Vec<_>>()
    );

    let listed = |request: &PageRequest| {
        let (page, more) = webhooks.list(team, request).expect("list");
        (ids_of(&page, |w| w.id), more)
    };
    pages_go_newest_first(listed, &ids_of(&made, |w| w.id));

    // A change replaces; a delete removes that one alone.
    let changed = Webhook {
        status: WebhookStatus::Disabled,
        ..made[1].clone()
    };
    webhooks.put(&changed).expect("put");
    assert_eq!(
        json(webhooks.get(team, changed.id).expect("get").as_ref()),
        json(Some(&changed))
    );
    webhooks.delete(&changed).expect("delete");
    assert!(webhooks.get(team, changed.id).expect("get").is_none());
    assert_eq!(webhooks.for_team(team).expect("for team").len(), 4);
    for one in made.iter().filter(|w| w.id != changed.id) {
        webhooks.delete(one).expect("delete");
    }
    assert!(!webhooks.any(team).expect("any"), "none left");
    assert!(webhooks.any(other).expect("any"), "the other team's stays");
}

#[test]
fn rocksdb_webhooks_keep_the_contract() {
    let (_dir, store) = rocksdb();
    webhook_store_conformance(&RocksWebhooks::new(store.clone()), &store);
}

#[test]
fn postgres_webhooks_keep_the_contract() {
    let (_dir, store) = rocksdb();
    webhook_store_conformance(&PostgresWebhooks::new(conformance::postgres()), &store);
}

#[test]
fn memory_webhooks_keep_the_contract() {
    let (_dir, store) = rocksdb();
    webhook_store_conformance(&MemoryWebhooks::default(), &store);
}

/// Locks that count what they are asked for, over the local ones.
#[derive(Debug, Default)]
struct CountingLocks {
    inner: LocalLocks,
    taken: AtomicUsize,
}

impl CountingLocks {
    fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }
}

impl Locks for &'static CountingLocks {
    fn lock(&self, record: RecordName<'_>) -> Held<'_> {
        self.taken.fetch_add(1, Ordering::SeqCst);
        self.inner.lock(record)
    }

    fn lock_many(&self, table: &'static str, keys: &mut dyn Iterator<Item = &[u8]>) -> Held<'_> {
        self.taken.fetch_add(1, Ordering::SeqCst);
        self.inner.lock_many(table, keys)
    }
}

/// The webhooks service on webhooks kept in memory: every change lands there, and none
/// in RocksDB's table, so the service reaches its records through the trait alone.
#[test]
fn the_webhooks_service_runs_on_an_in_memory_store() {
    let (_dir, store) = rocksdb();
    let (spool, _) = Spool::open(store.clone()).expect("open the spool");
    let team = store.next_id();
    let outbound = herald::outbound::Outbound::new(false, Vec::new()).expect("outbound");
    let node = herald::storage::Node::new(store.clone());
    let mut backends = Backends::rocksdb(&node);
    backends.webhooks = Box::new(MemoryWebhooks::default());
    // The clock and the locks are the services' own too: a clock a day ahead of the
    // store's, and locks that count what is asked of them.
    let ahead = store.now().saturating_add(std::time::Duration::from_secs(86_400));
    backends.clock = std::sync::Arc::new(herald_queue::ManualClock::new(ahead));
    let locks: &'static CountingLocks = Box::leak(Box::default());
    backends.locks = Box::new(locks);
    let config = herald::config::Config::defaults();
    let services = Services::assemble(config, backends, node, spool, team, outbound);
    let caller = Caller {
        team_id: team,
        key_id: store.next_id(),
        permission: Permission::FullAccess,
        domain_id: None,
        operator: true,
    };
    // The service checks an endpoint's addresses on the runtime, as on the blocking pool.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let _context = runtime.enter();
    let made = herald::webhooks::service::create(
        &services,
        &caller,
        herald::webhooks::service::NewWebhook {
            endpoint: Some("https://hooks.example.com/in-memory".into()),
            events: Some(vec!["email.delivered".into()]),
        },
    )
    .expect("create");
    assert_eq!(
        json(services.webhooks().get(team, made.id).expect("get").as_ref()),
        json(Some(&made))
    );
    assert_eq!(made.created_at, ahead, "made at the injected clock's time");
    assert!(made.id.timestamp() >= Some(ahead), "its id is of that time too");
    assert!(locks.taken() > 0, "the change locked through the injected locks");
    let (listed, _) = herald::webhooks::service::list(&services, &caller, &page(10, Cursor::Start)).expect("list");
    assert_eq!(
        listed.iter().map(|w| json(Some(w))).collect::<Vec<_>>(),
        vec![json(Some(&made))]
    );
    let in_rocksdb = store.scan::<Webhook>(Scan::prefix(b"")).expect("scan");
    assert!(in_rocksdb.is_empty(), "nothing reached RocksDB: {in_rocksdb:?}");
    herald::webhooks::service::delete(&services, &caller, made.id).expect("delete");
    assert!(services.webhooks().get(team, made.id).expect("get").is_none());
}

/// A logged request of `team_id`.
fn request_log(ids: &Store, team_id: Id, path: &str) -> RequestLog {
    RequestLog {
        id: ids.next_id(),
        team_id,
        api_key_id: ids.next_id(),
        method: "GET".into(),
        path: path.into(),
        query: None,
        status: 200,
        user_agent: None,
        duration_ms: 1,
        request_body: None,
        response_body: Some("{}".into()),
        created_at: ids.now(),
    }
}

/// What every request log store does: a log written is found by its team alone, pages
/// and the newest come newest first, the retention finds every log by its time and
/// deletes those due, and erasing a team leaves others' logs. `flush` waits until the
/// logs recorded so far are written (`record` does not wait).
fn request_log_store_conformance(
    logs: &dyn herald::logs::RequestLogStore,
    ids: &Store,
    flush: impl Fn(&[&RequestLog]),
) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let made: Vec<_> = (0..3).map(|n| request_log(ids, team, &format!("/p{n}"))).collect();
    for log in &made {
        logs.record(log);
    }
    let theirs = request_log(ids, other, "/theirs");
    logs.record(&theirs);
    flush(&[&made[0], &made[1], &made[2], &theirs]);
    assert_eq!(logs.get(team, made[1].id).expect("get").as_ref(), Some(&made[1]));
    assert!(
        logs.get(other, made[1].id).expect("get").is_none(),
        "a team sees its own only"
    );
    let newest: Vec<Id> = logs.newest(team, 2).expect("newest").iter().map(|l| l.id).collect();
    assert_eq!(newest, vec![made[2].id, made[1].id]);
    pages_go_newest_first(
        |request| {
            let (page, more) = logs.page(team, request).expect("page");
            (ids_of(&page, |l| l.id), more)
        },
        &made.iter().map(|l| l.id).collect::<Vec<_>>(),
    );

    // The retention: every log is due at its time, earliest first; the first expires.
    let sweep = logs.expiry();
    let queue = sweep.queue();
    let horizon = theirs.created_at;
    let due = queue.due(horizon, None, 10).expect("due");
    assert_eq!(due.len(), 4, "every log by its time: {due:?}");
    assert!(due.windows(2).all(|pair| pair[0].at <= pair[1].at), "earliest first");
    assert_eq!(due[0].at, made[0].created_at);
    let rest = queue.due(horizon, Some(&due[0]), 10).expect("due after the first");
    assert_eq!(rest, due[1..].to_vec(), "after an entry comes the rest");
    assert_eq!(sweep.expire(&[&due[0]]).expect("expire"), 1);
    assert!(logs.get(team, made[0].id).expect("get").is_none(), "expired");
    assert_eq!(
        logs.get(team, made[1].id).expect("get").as_ref(),
        Some(&made[1]),
        "not due yet"
    );

    while logs.erase_team(team).expect("erase") {}
    assert!(logs.newest(team, 10).expect("newest").is_empty());
    assert_eq!(logs.get(other, theirs.id).expect("get").as_ref(), Some(&theirs));
}

#[test]
fn rocksdb_request_logs_keep_the_contract() {
    use herald::logs::RocksRequestLogs;
    let (_dir, store) = rocksdb();
    let logs = RocksRequestLogs::new(store.clone());
    // A synced commit after `record` flushes the queue in order.
    let flush = |_: &[&RequestLog]| store.commit(herald_queue::Batch::new()).wait().expect("flush");
    request_log_store_conformance(&logs, &store, flush);
}

#[test]
fn postgres_request_logs_keep_the_contract() {
    use herald::logs::{PostgresRequestLogs, RequestLogStore};
    let (_dir, store) = rocksdb();
    let logs = PostgresRequestLogs::new(conformance::postgres(), store.clock().clone());
    let flush = |written: &[&RequestLog]| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !written
            .iter()
            .all(|log| logs.get(log.team_id, log.id).expect("get").is_some())
        {
            assert!(std::time::Instant::now() < end, "the logs were never written");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    request_log_store_conformance(&logs, &store, flush);
}
