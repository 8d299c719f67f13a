//! `Idempotency-Key`: the same key with the same body within 24 hours returns the first
//! response and sends nothing; with another body it is refused; while the first request
//! is still in flight a second one is refused. Exactly one email per key, even under
//! concurrent requests: the in-flight set admits one request per key at a time, and the
//! record is written in the same batch as the email.
//!
//! Records expire on the [due-time runner](crate::runner): each has an entry in
//! [`Table::IDEMPOTENCY_EXPIRY`], keyed by the time it was written, that falls due
//! [`RETENTION`] later.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_queue::{Batch, Due, DueIndex, Id, RawEntry, Record, Scan, Store, Table, Timestamp};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::runner::{self, Claimed, Handler, Runner, Wake};
use crate::services::Services;
use crate::storage::{Change, Error};

/// How long a key is remembered.
pub const RETENTION: Duration = Duration::from_secs(24 * 3600);
/// Longest key accepted.
pub const KEY_MAX: usize = 256;
/// Records examined per sweep batch.
const SWEEP_BATCH: usize = 1_000;
/// Longest the expiry runner sleeps. A new record falls due after every one armed
/// before it, so nothing needs to wake the runner; this bounds the wait should the wall
/// clock jump (it was also the interval of the sweep this replaced).
const EXPIRY_IDLE_MAX: Duration = Duration::from_secs(600);
/// Records by the time they were written, then team and key: a due index whose entries
/// fall due [`RETENTION`] after their time (a runner delay), so the table reads as it
/// did before it was one.
const EXPIRY: DueIndex = DueIndex::new(Table::IDEMPOTENCY_EXPIRY);

/// What was answered for a key, under team id and SHA-256 of the key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IdempotencyRecord {
    /// SHA-256 of the canonical JSON of the first request's body (of the message's bytes
    /// over SMTP), hex.
    pub body_sha256: String,
    /// What was answered, to answer again.
    #[serde(flatten)]
    pub answer: Answer,
    /// When.
    pub created_at: Timestamp,
}

/// What an idempotency key remembers of the request it first came with: its answer, in
/// the terms of the door it came through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Answer {
    /// An SMTP submission's: the email accepted (answered `250 2.0.0 OK <id>`).
    Smtp {
        /// The email.
        email_id: Id,
    },
    /// A REST request's: the status and the JSON body. Older builds also stored SMTP
    /// answers this way (status 250, body `{"id": ...}`).
    Http {
        /// The status.
        status: u16,
        /// The body.
        response: String,
    },
}

impl Answer {
    /// The email an SMTP submission was answered with, also from a record of an older
    /// build.
    pub fn email_id(&self) -> Option<Id> {
        match self {
            Answer::Smtp { email_id } => Some(*email_id),
            Answer::Http { response, .. } => serde_json::from_str::<Value>(response)
                .ok()
                .and_then(|v| v["id"].as_str().and_then(|id| id.parse().ok())),
        }
    }
}

impl IdempotencyRecord {
    /// The key in [`Table::IDEMPOTENCY`].
    pub fn key(team_id: Id, idempotency_key: &str) -> Vec<u8> {
        let digest: [u8; 32] = Sha256::digest(idempotency_key.as_bytes()).into();
        [team_id.as_bytes().as_slice(), digest.as_slice()].concat()
    }
}

impl Record for IdempotencyRecord {
    const TABLE: Table = Table::IDEMPOTENCY;
}

/// What a key says about a request.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// First use (or the old one expired): go ahead; the guard holds the key until the
    /// request finishes.
    Fresh(InFlight<'a>),
    /// Seen with the same body: answer this again.
    Replay(Answer),
    /// Seen with another body.
    Mismatch,
    /// A request with this key is still being processed.
    Concurrent,
}

/// What idempotency shares between the nodes that answer one team: which keys are in
/// flight (so that two requests with one key never both send), and the records of what
/// was answered. [`LocalIdempotency`] keeps them on this node (a set in memory, records
/// in RocksDB); a cluster keeps them in a shared store (a `SET NX` with expiry and a
/// table) behind the same trait.
///
/// A record is written in the same batch as the email it answers with
/// ([`InFlight::record`]), as the durability contract asks; a shared store also
/// publishes it once that batch is committed.
pub trait IdempotencyStore: Send + Sync + std::fmt::Debug {
    /// Holds `record_key` as in flight; `false` when it already is.
    fn hold(&self, record_key: &[u8]) -> bool;
    /// Releases `record_key`.
    fn release(&self, record_key: &[u8]);
    /// The record under `record_key`.
    fn get(&self, record_key: &[u8]) -> Result<Option<IdempotencyRecord>, crate::storage::Error>;
}

/// Idempotency on one node: keys in flight in memory, records in the node's RocksDB.
#[derive(Debug)]
pub struct LocalIdempotency {
    store: Store,
    in_flight: Mutex<HashSet<Vec<u8>>>,
}

impl LocalIdempotency {
    /// Idempotency over `store`.
    pub fn new(store: Store) -> LocalIdempotency {
        LocalIdempotency {
            store,
            in_flight: Mutex::new(HashSet::new()),
        }
    }
}

impl IdempotencyStore for LocalIdempotency {
    fn hold(&self, record_key: &[u8]) -> bool {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(record_key.to_vec())
    }

    fn release(&self, record_key: &[u8]) {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(record_key);
    }

    fn get(&self, record_key: &[u8]) -> Result<Option<IdempotencyRecord>, crate::storage::Error> {
        Ok(self.store.get::<IdempotencyRecord>(record_key)?)
    }
}

/// Idempotency keys: the requests in flight and the answers remembered.
#[derive(Debug)]
pub struct Idempotency {
    keys: Box<dyn IdempotencyStore>,
}

/// Holds a key as in flight; releases it when dropped.
#[derive(Debug)]
pub struct InFlight<'a> {
    keys: &'a Idempotency,
    key: Vec<u8>,
    /// The record key to write the answer under.
    pub record_key: Vec<u8>,
    /// The body's hash.
    pub body_sha256: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.keys.keys.release(&self.key);
    }
}

impl InFlight<'_> {
    /// Adds the record of the answer to the batch that sends the email.
    pub fn record(&self, change: &mut Change, answer: Answer, now: Timestamp) -> Result<(), crate::storage::Error> {
        let batch = change.batch();
        batch.put(
            &self.record_key,
            &IdempotencyRecord {
                body_sha256: self.body_sha256.clone(),
                answer,
                created_at: now,
            },
        )?;
        EXPIRY.arm(batch, now, &self.record_key);
        Ok(())
    }
}

impl Idempotency {
    /// Idempotency on this node, over `store`.
    pub fn new(store: Store) -> Idempotency {
        Idempotency::with_store(Box::new(LocalIdempotency::new(store)))
    }

    /// Idempotency kept by `keys`.
    pub fn with_store(keys: Box<dyn IdempotencyStore>) -> Idempotency {
        Idempotency { keys }
    }

    /// Holds the record key `record_key` as in flight, or `None` when it already is.
    fn claim(&self, record_key: Vec<u8>) -> Option<InFlight<'_>> {
        let fresh = self.keys.hold(&record_key);
        fresh.then(|| InFlight {
            keys: self,
            key: record_key.clone(),
            record_key,
            body_sha256: String::new(),
        })
    }

    /// Looks `key` up for `team_id` and a request whose body hashes to `body_sha256`.
    pub fn begin(
        &self,
        store: &Store,
        team_id: Id,
        key: &str,
        body_sha256: String,
    ) -> Result<Outcome<'_>, crate::storage::Error> {
        let Some(mut guard) = self.claim(IdempotencyRecord::key(team_id, key)) else {
            return Ok(Outcome::Concurrent);
        };
        guard.body_sha256 = body_sha256;
        let now = store.now();
        match self.keys.get(&guard.record_key)? {
            Some(record) if now.saturating_since(record.created_at) < RETENTION => {
                if record.body_sha256 == guard.body_sha256 {
                    Ok(Outcome::Replay(record.answer))
                } else {
                    Ok(Outcome::Mismatch)
                }
            }
            _ => Ok(Outcome::Fresh(guard)),
        }
    }
}

/// SHA-256 (hex) of the canonical form of a JSON body: object keys sorted at every level,
/// no insignificant whitespace. Bodies that differ only in key order or spacing are the
/// same request.
pub fn body_hash(body: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(body, &mut canonical);
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SHA-256 (hex) of raw bytes: "the same message" for SMTP's `Resend-Idempotency-Key`
/// is the same bytes as submitted, before herald adds its headers.
pub fn bytes_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The key in [`Table::META`] that says every record has its entry in
/// [`Table::IDEMPOTENCY_EXPIRY`]: set once records written before the index existed have
/// been given theirs. (Records a downgraded build writes after that get no entry: they
/// still expire for [`Idempotency::begin`], but stay on disk.)
const INDEXED: &[u8] = b"idempotency_expiry_indexed";

/// Deletes records older than [`RETENTION`], oldest first, reading only those that are
/// due; returns how many. (The server expires them on the runner, [`expire`]; this walks
/// everything due at once.)
pub fn sweep(store: &Store, keys: &Idempotency) -> Result<usize, crate::storage::Error> {
    let horizon = Timestamp::from_millis(
        store
            .now()
            .as_millis()
            .saturating_sub(u64::try_from(RETENTION.as_millis()).unwrap_or(u64::MAX)),
    );
    let mut deleted = 0;
    let mut after: Option<Due> = None;
    loop {
        let page = EXPIRY.due(store, horizon, after.as_ref(), SWEEP_BATCH)?;
        deleted += expire_entries(store, keys, &page)?;
        if page.len() < SWEEP_BATCH {
            return Ok(deleted);
        }
        after = page.last().cloned();
    }
}

/// Deletes the records of due expiry `entries`, and the entries, in one write; returns
/// how many records it deleted. Each record is claimed in `keys` from its read until the
/// delete is committed, so a request answering under the same key meanwhile is told it
/// is in flight instead of having its new record deleted; a key in flight is left for
/// later. A record written again after its entry was made is newer than the entry and
/// stays, for its own entry to remove. A record that cannot be decoded is deleted: no
/// request could be answered from it.
fn expire_entries<'a>(
    store: &Store,
    keys: &Idempotency,
    entries: impl IntoIterator<Item = &'a Due>,
) -> Result<usize, crate::storage::Error> {
    let mut batch = Batch::new();
    let mut claims = Vec::new();
    let mut deleted = 0;
    for entry in entries {
        let Some(claim) = keys.claim(entry.key.clone()) else {
            continue;
        };
        let expired = match store.get::<IdempotencyRecord>(&entry.key).map_err(Error::from) {
            Ok(record) => record.is_some_and(|r| r.created_at <= entry.at),
            Err(error @ Error::Corrupt { .. }) => {
                tracing::warn!(%error, "deleting an idempotency record that cannot be read");
                true
            }
            Err(error) => return Err(error),
        };
        if expired {
            batch.delete::<IdempotencyRecord>(&entry.key);
            deleted += 1;
        }
        EXPIRY.disarm(&mut batch, entry.at, &entry.key);
        claims.push(claim);
    }
    if !batch.is_empty() {
        store.commit(batch).wait()?;
    }
    drop(claims);
    Ok(deleted)
}

/// Gives every record written before [`Table::IDEMPOTENCY_EXPIRY`] existed its entry
/// there (deleting instead the expired ones and any that cannot be decoded, claimed in
/// `keys` as [`sweep`] does), then marks the work done so later starts skip it; returns
/// how many records it deleted. Reads the whole table, once.
pub fn index_unindexed(store: &Store, keys: &Idempotency) -> Result<usize, crate::storage::Error> {
    if store.get_raw(Table::META, INDEXED)?.is_some() {
        return Ok(0);
    }
    let now = store.now();
    let mut deleted = 0;
    in_pages(store, Table::IDEMPOTENCY, |page, batch, claims| {
        for (key, bytes) in page {
            let Some(claim) = keys.claim(key.clone()) else {
                // Being answered: the record it writes comes with its entry.
                continue;
            };
            match herald_queue::decode_record::<IdempotencyRecord>(bytes) {
                Ok(record) if now.saturating_since(record.created_at) < RETENTION => {
                    EXPIRY.arm(batch, record.created_at, key);
                }
                Ok(_) => {
                    batch.delete::<IdempotencyRecord>(key);
                    deleted += 1;
                }
                Err(error) => {
                    tracing::warn!(%error, "deleting an idempotency record that cannot be read");
                    batch.delete::<IdempotencyRecord>(key);
                    deleted += 1;
                }
            }
            claims.push(claim);
        }
        if page.len() < SWEEP_BATCH {
            batch.put_raw(Table::META, INDEXED.to_vec(), b"1".to_vec());
        }
        Ok(())
    })?;
    Ok(deleted)
}

/// Walks `table` from its first key, [`SWEEP_BATCH`] entries at a time. `visit` stages a
/// page's writes and keeps the claims it makes; the writes are committed before
/// the claims are released, and the walk ends at the table's end.
fn in_pages<'k>(
    store: &Store,
    table: Table,
    mut visit: impl FnMut(&[RawEntry], &mut Batch, &mut Vec<InFlight<'k>>) -> Result<(), crate::storage::Error>,
) -> Result<(), crate::storage::Error> {
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = store.scan_raw(
            table,
            Scan {
                after: after.as_deref(),
                limit: SWEEP_BATCH,
                ..Scan::prefix(b"")
            },
        )?;
        let mut batch = Batch::new();
        let mut claims = Vec::new();
        visit(&page, &mut batch, &mut claims)?;
        if !batch.is_empty() {
            store.commit(batch).wait()?;
        }
        drop(claims);
        if page.len() < SWEEP_BATCH {
            return Ok(());
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

/// Expires records on the due-time runner until shutdown; first indexes records from
/// builds without the expiry index (once: a failed backfill is tried at the next start,
/// and the index still expires everything written since).
pub async fn expire(state: Arc<Services>, shutdown: crate::shutdown::Shutdown) {
    let backfill = Arc::clone(&state);
    match tokio::task::spawn_blocking(move || index_unindexed(backfill.store(), backfill.idempotency())).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "idempotency expiry failed"),
        Err(error) => tracing::warn!(%error, "idempotency expiry task failed"),
    }
    let limits = runner::Limits {
        claims_max: SWEEP_BATCH,
        page: SWEEP_BATCH,
        delay: RETENTION,
        ..runner::Limits::new(EXPIRY_IDLE_MAX)
    };
    let runner = Runner::new("idempotency", state.store().clone(), EXPIRY, limits, Wake::default());
    runner.run(Expirer { state }, shutdown).await;
}

/// The runner's handler: deletes the due records, a batch per pass.
struct Expirer {
    state: Arc<Services>,
}

impl Handler for Expirer {
    async fn handle(&mut self, due: Vec<Claimed>) {
        let state = Arc::clone(&self.state);
        // The claims are dropped with `due`, after the write.
        let expired = tokio::task::spawn_blocking(move || {
            expire_entries(state.store(), state.idempotency(), due.iter().map(Claimed::due))
        });
        match expired.await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "idempotency expiry failed"),
            Err(error) => tracing::warn!(%error, "idempotency expiry task failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use herald_queue::{ManualClock, StoreOptions};

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    /// The expiry entry of the record under `record_key` written at `at`.
    fn expiry_key(at: Timestamp, record_key: &[u8]) -> Vec<u8> {
        Due::new(at, record_key).encode()
    }

    fn store(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Store {
        Store::open(StoreOptions {
            min_free_space: 0,
            clock: Arc::clone(clock) as herald_queue::SharedClock,
            ..StoreOptions::new(dir)
        })
        .expect("store")
    }

    /// Answers a request with `key` as the API does: the record goes in with the email.
    fn answer(store: &Store, keys: &Idempotency, key: &str) {
        let Outcome::Fresh(in_flight) = keys
            .begin(store, Id::from_bytes([7; 16]), key, format!("hash of {key}"))
            .expect("begin")
        else {
            panic!("{key} is not fresh");
        };
        let mut batch = crate::storage::Change::new();
        in_flight
            .record(
                &mut batch,
                Answer::Http {
                    status: 200,
                    response: r#"{"id":"x"}"#.into(),
                },
                store.now(),
            )
            .expect("record");
        store.commit(batch.into_batch()).wait().expect("commit");
    }

    fn held(store: &Store, key: &str) -> Option<Timestamp> {
        store
            .get::<IdempotencyRecord>(IdempotencyRecord::key(Id::from_bytes([7; 16]), key))
            .expect("get")
            .map(|r| r.created_at)
    }

    #[test]
    fn answers_keep_their_door_and_older_records_still_decode() {
        let id = Id::from_bytes([9; 16]);
        let smtp = IdempotencyRecord {
            body_sha256: "h".into(),
            answer: Answer::Smtp { email_id: id },
            created_at: Timestamp::from_millis(1),
        };
        let json = serde_json::to_string(&smtp).expect("encode");
        assert!(!json.contains("status"), "no HTTP status for SMTP: {json}");
        let back: IdempotencyRecord = serde_json::from_str(&json).expect("decode");
        assert_eq!(back.answer.email_id(), Some(id));
        // As builds before the typed answer stored an SMTP submission's.
        let older = format!(r#"{{"body_sha256":"h","status":250,"response":"{{\"id\":\"{id}\"}}","created_at":1}}"#);
        let older: IdempotencyRecord = serde_json::from_str(&older).expect("decode");
        assert!(matches!(older.answer, Answer::Http { status: 250, .. }));
        assert_eq!(older.answer.email_id(), Some(id));
        let api: IdempotencyRecord =
            serde_json::from_str(r#"{"body_sha256":"h","status":200,"response":"{}","created_at":1}"#).expect("decode");
        assert_eq!(
            api.answer,
            Answer::Http {
                status: 200,
                response: "{}".into()
            }
        );
    }

    /// A record as builds without the expiry index wrote it (alone, no entry).
    fn legacy_record(created_at: Timestamp) -> IdempotencyRecord {
        IdempotencyRecord {
            body_sha256: String::new(),
            answer: Answer::Http {
                status: 200,
                response: "{}".into(),
            },
            created_at,
        }
    }

    fn entries(store: &Store) -> usize {
        store
            .scan_raw(Table::IDEMPOTENCY_EXPIRY, Scan::prefix(b""))
            .expect("scan")
            .len()
    }

    #[test]
    fn expiry_removes_what_is_past_retention_and_keeps_a_key_answered_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let store = store(dir.path(), &clock);
        let keys = Idempotency::new(store.clone());
        answer(&store, &keys, "old");
        answer(&store, &keys, "again");
        clock.advance(12 * HOUR);
        answer(&store, &keys, "young");
        clock.advance(13 * HOUR);
        // "again" expired but was not swept yet: it is answered afresh, a new record
        // under the same key, which its first entry must not remove.
        answer(&store, &keys, "again");
        let again = held(&store, "again").expect("again");
        assert_eq!(sweep(&store, &keys).expect("sweep"), 1);
        assert_eq!(held(&store, "old"), None);
        assert!(held(&store, "young").is_some());
        assert_eq!(held(&store, "again"), Some(again));
        assert_eq!(entries(&store), 2, "the due entries are gone, the others stay");
        clock.advance(25 * HOUR);
        assert_eq!(sweep(&store, &keys).expect("sweep"), 2);
        assert_eq!((held(&store, "young"), held(&store, "again")), (None, None));
        assert_eq!(entries(&store), 0);
    }

    #[test]
    fn records_from_before_the_index_are_indexed_once_and_then_expire() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let store = store(dir.path(), &clock);
        let keys = Idempotency::new(store.clone());
        // Written as builds without the index wrote them: the record alone.
        let unindexed = |key: &str| {
            let mut batch = Batch::new();
            let record = legacy_record(store.now());
            batch
                .put(IdempotencyRecord::key(Id::from_bytes([7; 16]), key), &record)
                .expect("encode");
            store.commit(batch).wait().expect("commit");
        };
        unindexed("old");
        clock.advance(20 * HOUR);
        unindexed("recent");
        clock.advance(5 * HOUR);
        assert_eq!(sweep(&store, &keys).expect("sweep"), 0, "the index knows neither");
        assert_eq!(index_unindexed(&store, &keys).expect("index"), 1);
        assert_eq!(held(&store, "old"), None);
        assert_eq!(entries(&store), 1);
        unindexed("later");
        assert_eq!(index_unindexed(&store, &keys).expect("index"), 0, "done once");
        assert_eq!(entries(&store), 1);
        clock.advance(20 * HOUR);
        assert_eq!(sweep(&store, &keys).expect("sweep"), 1);
        assert_eq!(held(&store, "recent"), None);
    }

    #[test]
    fn expiry_and_indexing_go_page_by_page_through_more_than_a_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let store = store(dir.path(), &clock);
        let keys = Idempotency::new(store.clone());
        let count = 2 * SWEEP_BATCH + 100;
        let mut indexed = crate::storage::Change::new();
        let mut unindexed = Batch::new();
        for n in 0..count {
            let Outcome::Fresh(in_flight) = keys
                .begin(&store, Id::from_bytes([7; 16]), &format!("indexed {n}"), String::new())
                .expect("begin")
            else {
                panic!("fresh");
            };
            let answer = Answer::Http {
                status: 200,
                response: "{}".into(),
            };
            in_flight.record(&mut indexed, answer, store.now()).expect("record");
            let record = legacy_record(store.now());
            let key = IdempotencyRecord::key(Id::from_bytes([8; 16]), &format!("unindexed {n}"));
            unindexed.put(key, &record).expect("encode");
        }
        indexed.extend(crate::storage::Change::of(unindexed));
        store.commit(indexed.into_batch()).wait().expect("commit");
        clock.advance(25 * HOUR);
        assert_eq!(sweep(&store, &keys).expect("sweep"), count);
        assert_eq!(entries(&store), 0);
        assert_eq!(index_unindexed(&store, &keys).expect("index"), count);
        assert!(store.get_raw(Table::META, INDEXED).expect("get").is_some());
        assert!(
            store
                .scan_raw(Table::IDEMPOTENCY, Scan::prefix(b""))
                .expect("scan")
                .is_empty()
        );
    }

    #[test]
    fn a_key_being_answered_is_left_to_the_next_sweep_and_garbage_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let store = store(dir.path(), &clock);
        let keys = Idempotency::new(store.clone());
        answer(&store, &keys, "busy");
        let garbage = IdempotencyRecord::key(Id::from_bytes([7; 16]), "garbage");
        let mut batch = Batch::new();
        batch.put_raw(Table::IDEMPOTENCY, garbage.clone(), b"not a record".to_vec());
        batch.put_raw(Table::IDEMPOTENCY_EXPIRY, expiry_key(store.now(), &garbage), Vec::new());
        store.commit(batch).wait().expect("commit");
        clock.advance(25 * HOUR);
        // A request reusing the expired key holds it while the sweep runs.
        let Outcome::Fresh(in_flight) = keys
            .begin(&store, Id::from_bytes([7; 16]), "busy", "other".into())
            .expect("begin")
        else {
            panic!("an expired key is fresh");
        };
        assert_eq!(sweep(&store, &keys).expect("sweep"), 1, "only the garbage");
        assert_eq!(store.get_raw(Table::IDEMPOTENCY, &garbage).expect("get"), None);
        assert!(held(&store, "busy").is_some());
        assert_eq!(entries(&store), 1);
        drop(in_flight);
        assert_eq!(sweep(&store, &keys).expect("sweep"), 1);
        assert_eq!((held(&store, "busy"), entries(&store)), (None, 0));
        // The sweep's own claims are released: the key can be answered again.
        answer(&store, &keys, "busy");
    }

    #[test]
    fn key_order_and_spacing_do_not_change_the_hash() {
        let a: Value =
            serde_json::from_str(r#"{"to":["a@b.test"],"from":"x@y.test","n":{"b":1,"a":2}}"#).expect("json");
        let b: Value =
            serde_json::from_str(r#"{ "n": {"a":2, "b":1}, "from":"x@y.test", "to":[ "a@b.test" ] }"#).expect("json");
        let c: Value =
            serde_json::from_str(r#"{"to":["a@b.test"],"from":"x@y.test","n":{"b":1,"a":3}}"#).expect("json");
        assert_eq!(body_hash(&a), body_hash(&b));
        assert_ne!(body_hash(&a), body_hash(&c));
    }
}
