//! The webhook dispatcher: drains the event outbox into one message per subscribed
//! endpoint, posts each message signed, retries failures on `[webhooks] retry_intervals`,
//! and logs every attempt.
//!
//! Fan-out deletes an outbox entry in the same write that creates its messages, so an
//! event is never lost between the two nor fanned out twice. A message's body is fixed
//! when it is created and its id (`msg_<event id>`) never changes, so retries are the
//! same request and receivers can deduplicate. One request at a time per endpoint: a slow
//! or dead endpoint holds only its own messages, and a healthy endpoint gets an email's
//! events in the order they happened.
//!
//! Two loops: fan-out polls the outbox; the [due-time runner](crate::runner) hands out
//! pending messages as their attempts fall due, and each endpoint's task sends its
//! messages one after another.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use herald_queue::{Batch, DueIndex, Id, Record, Scan, Store, Table, Timestamp};
use hyper::Method;

use super::Webhook;
use super::signature;
use crate::events::{Event, EventKind};
use crate::outbound::Limits;
use crate::runner::{self, Claimed, Handler, Runner, Wake};
use crate::services::Services;
use crate::shutdown::Shutdown;
use crate::wire;

/// Outbox events fanned out per write.
const FAN_OUT_BATCH: usize = 256;
/// How long fan-out leaves the outbox alone after a scan that found less than a batch:
/// every part of herald pushes events without a wake, so the outbox is polled.
const OUTBOX_POLL: Duration = Duration::from_millis(100);
/// Longest the due runner sleeps without looking at the index. Everything that arms a
/// message earlier than the runner sleeps wakes it (fan-out, replays, released claims);
/// this bounds the wait should the clock jump.
const DUE_IDLE_MAX: Duration = Duration::from_secs(1);
/// Pending messages by their next attempt: big-endian due time, then team, webhook and
/// event ids (the message's key).
const DUE: DueIndex = DueIndex::new(Table::WEBHOOK_DUE);
/// Attempts of one message that its record lists: more than the default retry schedule
/// makes, with room for replays.
pub const ATTEMPT_IDS_MAX: usize = 50;
/// Response bytes kept in the request log.
const EXCERPT_MAX: usize = 1024;

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageState {
    /// Waiting for its next attempt.
    Pending,
    /// An attempt got a 2xx.
    Delivered,
    /// The last retry failed.
    Failed,
}

/// One event for one webhook.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookMessage {
    /// The event's id (the message id is `msg_<event id>`).
    pub event_id: Id,
    /// The webhook.
    pub webhook_id: Id,
    /// The team.
    pub team_id: Id,
    /// The event type.
    pub kind: EventKind,
    /// The JSON body, as sent on every attempt.
    pub body: String,
    /// Attempts made.
    pub attempts: u32,
    /// Where it stands.
    pub state: MessageState,
    /// When it is next due, while pending.
    pub next_attempt: Timestamp,
    /// Its attempts in the request log, oldest first (the latest [`ATTEMPT_IDS_MAX`]).
    #[serde(default)]
    pub attempt_ids: Vec<Id>,
    /// When it became final (delivered or failed): what its retention counts from.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
}

impl Record for WebhookMessage {
    const TABLE: Table = Table::WEBHOOK_MESSAGES;
}

impl WebhookMessage {
    /// Its key: team, webhook, event.
    pub fn key(&self) -> Vec<u8> {
        Self::key_of(self.team_id, self.webhook_id, self.event_id)
    }

    /// The key of the message of event `event_id` for webhook `webhook_id` of `team_id`.
    pub fn key_of(team_id: Id, webhook_id: Id, event_id: Id) -> Vec<u8> {
        [
            team_id.as_bytes().as_slice(),
            webhook_id.as_bytes(),
            event_id.as_bytes(),
        ]
        .concat()
    }

    /// The id receivers see in `webhook-id` / `svix-id`.
    pub fn message_id(&self) -> String {
        format!("msg_{}", self.event_id)
    }

    /// The webhook of the message under `key` (see [`WebhookMessage::key_of`]).
    fn webhook_of(key: &[u8]) -> Option<Id> {
        key.get(16..32).filter(|_| key.len() == 48).and_then(Id::from_slice)
    }
}

/// One attempt, as the request log lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookAttempt {
    /// Its id (time-ordered).
    pub id: Id,
    /// The message's event id.
    pub event_id: Id,
    /// The event type.
    pub kind: EventKind,
    /// 1 for the first try.
    pub attempt: u32,
    /// The response status, when there was a response.
    pub status: Option<u16>,
    /// Why there was no (successful) response.
    pub error: Option<String>,
    /// The start of the response body.
    pub response: String,
    /// How long the request took.
    pub latency_ms: u64,
    /// When it was made.
    pub at: Timestamp,
}

impl Record for WebhookAttempt {
    const TABLE: Table = Table::WEBHOOK_ATTEMPTS;
}

impl WebhookAttempt {
    /// Its key: team, webhook, attempt id.
    pub fn key(team_id: Id, webhook_id: Id, id: Id) -> Vec<u8> {
        [team_id.as_bytes().as_slice(), webhook_id.as_bytes(), id.as_bytes()].concat()
    }

    /// The API object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "object": "webhook_delivery",
            "id": self.id,
            "message_id": format!("msg_{}", self.event_id),
            "event_type": self.kind,
            "attempt": self.attempt,
            "response_status": self.status,
            "error": self.error,
            "response_body": self.response,
            "latency_ms": self.latency_ms,
            "created_at": wire::timestamp(self.at),
        })
    }
}

/// Makes `message` due now with no attempts counted, in one write (`POST
/// /webhooks/{id}/events/{event_id}/replay` and the deliveries' replay). The caller holds
/// the team's webhooks lock.
pub fn replay(state: &Services, mut message: WebhookMessage) -> Result<WebhookMessage, crate::storage::Error> {
    let store = state.store();
    let mut batch = Batch::new();
    let key = message.key();
    if message.state == MessageState::Pending {
        DUE.disarm(&mut batch, message.next_attempt, &key);
    }
    message.state = MessageState::Pending;
    message.finished_at = None;
    message.attempts = 0;
    message.next_attempt = store.now();
    DUE.arm(&mut batch, message.next_attempt, &key);
    batch.put(key, &message)?;
    store.commit(batch).wait()?;
    state.webhook_wake().wake();
    Ok(message)
}

/// Runs the dispatcher until shutdown: fan-out and the due messages' runner.
pub async fn run(state: Arc<Services>, shutdown: Shutdown) {
    let runner = Runner::new(
        "webhooks",
        state.store().clone(),
        DUE,
        runner::Limits::new(DUE_IDLE_MAX),
        state.webhook_wake().clone(),
    );
    let wake = runner.waker();
    let senders = Senders {
        state: Arc::clone(&state),
        queues: Arc::default(),
        tasks: tokio::task::JoinSet::new(),
    };
    // When the runner returns, `senders` is dropped with its tasks: requests in flight
    // are cut off, an unfinished attempt leaves its message pending, and it is sent
    // again after the restart.
    tokio::join!(
        runner.run(senders, shutdown.clone()),
        fan_out_loop(state, wake, shutdown)
    );
}

/// Fans the outbox out until shutdown, waking the due runner when messages were made.
async fn fan_out_loop(state: Arc<Services>, due: Wake, mut shutdown: Shutdown) {
    let cursor = Arc::new(Mutex::new(FanOutCursor::new()));
    while !shutdown.is_triggered() {
        let (fan_state, fan_cursor) = (Arc::clone(&state), Arc::clone(&cursor));
        let fanned = tokio::task::spawn_blocking(move || {
            let mut cursor = fan_cursor.lock().unwrap_or_else(PoisonError::into_inner);
            fan_out(&fan_state, &mut cursor)
        })
        .await
        .unwrap_or(Ok(0))
        .unwrap_or_else(|error| {
            tracing::error!(%error, "cannot fan out webhook events");
            0
        });
        if fanned > 0 {
            due.wake();
        }
        if fanned < FAN_OUT_BATCH {
            tokio::select! {
                () = shutdown.triggered() => {}
                () = tokio::time::sleep(OUTBOX_POLL) => {}
            }
        }
    }
}

/// The due runner's handler: queues each endpoint's due messages, in due order, for one
/// task per endpoint; an endpoint already being served gets them appended to its queue.
struct Senders {
    state: Arc<Services>,
    /// The claimed messages of each endpoint with a task, not yet sent.
    queues: Arc<Mutex<HashMap<Id, VecDeque<Claimed>>>>,
    tasks: tokio::task::JoinSet<()>,
}

impl Handler for Senders {
    async fn handle(&mut self, due: Vec<Claimed>) {
        while self.tasks.try_join_next().is_some() {}
        for claimed in due {
            let Some(webhook) = WebhookMessage::webhook_of(claimed.key()) else {
                tracing::warn!(key_len = claimed.key().len(), "removing a malformed webhook due entry");
                disarm(self.state.store(), &claimed).await;
                continue;
            };
            match lock(&self.queues).entry(webhook) {
                Entry::Occupied(queue) => {
                    queue.into_mut().push_back(claimed);
                    continue;
                }
                Entry::Vacant(slot) => {
                    slot.insert(VecDeque::from([claimed]));
                }
            }
            let (state, queues) = (Arc::clone(&self.state), Arc::clone(&self.queues));
            self.tasks.spawn(async move {
                loop {
                    // Taking the last message and leaving the map happen under one lock,
                    // so a message queued meanwhile is never left without a task.
                    let next = {
                        let mut queues = lock(&queues);
                        let next = queues.get_mut(&webhook).and_then(VecDeque::pop_front);
                        if next.is_none() {
                            queues.remove(&webhook);
                        }
                        next
                    };
                    let Some(claimed) = next else { break };
                    send(&state, claimed).await;
                }
            });
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each change of the queues is one map operation: whole after a panic elsewhere.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sends the message of a due entry, or removes the entry when it is stale: its message
/// was sent, replayed or deleted since the entry was written (each of those writes the
/// message's own entry, under its own time). The claim is released once the outcome is
/// written.
async fn send(state: &Services, claimed: Claimed) {
    let store = state.store();
    match store.get::<WebhookMessage>(claimed.key()) {
        Ok(Some(message)) if message.state == MessageState::Pending && message.next_attempt == claimed.at() => {
            deliver(state, message).await;
        }
        Ok(_) => disarm(store, &claimed).await,
        // The claim is given back with the entry still due: it is tried again.
        Err(error) => tracing::error!(%error, "cannot read a webhook message"),
    }
}

async fn disarm(store: &Store, claimed: &Claimed) {
    let mut batch = Batch::new();
    DUE.disarm(&mut batch, claimed.at(), claimed.key());
    if let Err(error) = store.commit(batch).await {
        tracing::error!(%error, "cannot remove a stale webhook due entry");
    }
}

/// Moves up to a batch of outbox events into webhook messages, in one write. Returns
/// how many events it took.
///
/// The outbox is a queue in an LSM tree: every event taken leaves a tombstone until
/// compaction, and a scan from the start walks them all. So a scan starts from `cursor`
/// (see [`FanOutCursor`]) unless a full pass is due.
fn fan_out(services: &Services, cursor: &mut FanOutCursor) -> Result<usize, crate::storage::Error> {
    let store = services.store();
    let start = cursor.start();
    let events = store.scan::<Event>(Scan {
        prefix: b"",
        after: start.as_deref(),
        reverse: false,
        limit: FAN_OUT_BATCH,
    })?;
    cursor.scanned(start.is_none(), events.last().map(|(key, _)| key.as_slice()));
    if events.is_empty() {
        return Ok(0);
    }
    let now = store.now();
    let mut batch = Batch::new();
    let mut webhooks: std::collections::HashMap<Id, Vec<Webhook>> = std::collections::HashMap::new();
    for (key, event) in &events {
        let team_hooks = match webhooks.entry(event.team_id) {
            std::collections::hash_map::Entry::Occupied(found) => found.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(services.webhooks().for_team(event.team_id)?)
            }
        };
        let body = serde_json::json!({
            "type": event.kind,
            "created_at": wire::iso8601(event.created_at),
            "data": event.data,
        })
        .to_string();
        // A webhook hears of what happens once it exists: an event still in the outbox
        // when a webhook is created is not the new webhook's (the SDKs' event log of a new
        // webhook starts empty).
        let hears = |w: &&Webhook| w.receives(event.kind) && w.created_at <= event.created_at;
        for webhook in team_hooks.iter().filter(hears) {
            let message = WebhookMessage {
                event_id: event.id,
                webhook_id: webhook.id,
                team_id: event.team_id,
                kind: event.kind,
                body: body.clone(),
                attempts: 0,
                state: MessageState::Pending,
                next_attempt: now,
                attempt_ids: Vec::new(),
                finished_at: None,
            };
            let key = message.key();
            DUE.arm(&mut batch, message.next_attempt, &key);
            batch.put(key, &message)?;
        }
        batch.delete::<Event>(key);
    }
    store.commit(batch).wait()?;
    Ok(events.len())
}

/// Where the next outbox scan starts. Outbox keys are time-ordered event ids, and
/// events are committed moments after their ids are made, so an event can appear behind
/// one already taken, but not by more than [`STRAGGLER_WINDOW`]: scans start that far
/// before the last key taken, and a full pass every [`FULL_PASS_INTERVAL`] catches
/// anything later still.
#[derive(Debug)]
struct FanOutCursor {
    last: Option<Vec<u8>>,
    full_pass_at: Instant,
}

/// How far behind the last event taken an outbox scan starts.
const STRAGGLER_WINDOW: Duration = Duration::from_secs(2);
/// How often the outbox is scanned from the start.
const FULL_PASS_INTERVAL: Duration = Duration::from_secs(10);

impl FanOutCursor {
    fn new() -> Self {
        FanOutCursor {
            last: None,
            full_pass_at: Instant::now(),
        }
    }

    /// The key to scan after, or `None` for a full pass.
    fn start(&self) -> Option<Vec<u8>> {
        if Instant::now() >= self.full_pass_at {
            return None;
        }
        let last = self.last.as_deref()?;
        let id = Id::from_slice(last)?;
        let millis = id.timestamp()?.as_millis();
        let window = u64::try_from(STRAGGLER_WINDOW.as_millis()).unwrap_or(u64::MAX);
        // A v7 id starts with its 48-bit millisecond time; zeros after it sort first.
        let from = millis.saturating_sub(window).to_be_bytes();
        let mut key = vec![0_u8; 16];
        key[..6].copy_from_slice(&from[2..]);
        Some(key)
    }

    /// Records a scan: whether it was a full pass, and the last key it returned.
    fn scanned(&mut self, full: bool, last: Option<&[u8]>) {
        if full {
            self.full_pass_at = Instant::now() + FULL_PASS_INTERVAL;
        }
        if let Some(last) = last
            && self.last.as_deref().is_none_or(|previous| last > previous)
        {
            self.last = Some(last.to_vec());
        }
    }
}

/// One attempt at `message`, pending and due, and its outcome written.
async fn deliver(state: &Services, mut message: WebhookMessage) {
    let store = state.store();
    let config = &state.config().webhooks;
    let (key, old_due) = (message.key(), message.next_attempt);
    let webhook = match state.webhooks().get(message.team_id, message.webhook_id) {
        Ok(webhook) => webhook,
        Err(error) => {
            // A read that failed says nothing of the endpoint: the message stays armed
            // and the claim goes back, so it is tried again.
            tracing::error!(%error, webhook_id = %message.webhook_id, "cannot read a webhook message's endpoint");
            return;
        }
    };
    let Some(webhook) = webhook.filter(|w| w.status == super::WebhookStatus::Enabled) else {
        // Deleted or disabled: the message goes with it.
        let mut batch = Batch::new();
        batch.delete::<WebhookMessage>(&key);
        DUE.disarm(&mut batch, old_due, &key);
        let _ = store.commit(batch).await;
        return;
    };
    let Some(keys) = webhook
        .signing_keys(store.now())
        .into_iter()
        .map(super::SigningSecret::key)
        .collect::<Option<Vec<_>>>()
    else {
        // Only a damaged record gets here: the message cannot be signed, so it fails
        // rather than coming due again on every pass.
        tracing::error!(webhook_id = %webhook.id, "the webhook's signing secret cannot be decoded");
        let mut batch = Batch::new();
        super::retention::finish(&mut batch, &mut message, MessageState::Failed, store.now());
        DUE.disarm(&mut batch, old_due, &key);
        if batch.put(&key, &message).is_ok() {
            let _ = store.commit(batch).await;
        }
        return;
    };
    let timestamp = store.now().as_millis() / 1000;
    let id = message.message_id();
    // One `v1,...` per secret, space-separated, as the Standard Webhooks scheme allows:
    // during a rotation receivers holding either secret verify the request.
    let signature = keys
        .iter()
        .map(|key| signature::sign(key, &id, timestamp, message.body.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut headers: Vec<(String, String)> = signature::headers(&id, timestamp, &signature)
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
    headers.push(("content-type".into(), "application/json".into()));
    headers.push((
        "user-agent".into(),
        concat!("herald-webhooks/", env!("CARGO_PKG_VERSION")).into(),
    ));
    let started = Instant::now();
    let result = state
        .outbound()
        .send(
            Method::POST,
            &webhook.endpoint,
            headers,
            Bytes::from(message.body.clone()),
            Limits {
                timeout: config.timeout,
                body_max: EXCERPT_MAX,
            },
        )
        .await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    message.attempts += 1;
    let (status, error, response, ok) = match result {
        Ok(response) => {
            let ok = response.status.is_success();
            let excerpt = String::from_utf8_lossy(&response.body[..response.body.len().min(EXCERPT_MAX)]).into_owned();
            let error = (!ok).then(|| format!("the endpoint answered {}", response.status));
            (Some(response.status.as_u16()), error, excerpt, ok)
        }
        Err(error) => (None, Some(error.to_string()), String::new(), false),
    };
    metrics::counter!("herald_webhook_attempts_total", "outcome" => if ok { "ok" } else { "failed" }).increment(1);
    if tracing::enabled!(tracing::Level::DEBUG) {
        // An email's events name it: with this line an email can be followed in the log
        // from its acceptance through its delivery to the webhook that reported it.
        let email_id = serde_json::from_str::<serde_json::Value>(&message.body)
            .ok()
            .and_then(|body| body["data"]["email_id"].as_str().map(str::to_owned));
        tracing::debug!(
            webhook_id = %webhook.id,
            message_id = %id,
            event = %message.kind,
            email_id = email_id.as_deref().unwrap_or("-"),
            attempt = message.attempts,
            status = ?status,
            ok,
            "webhook request"
        );
    }
    let now = store.now();
    let attempt = WebhookAttempt {
        id: store.next_id(),
        event_id: message.event_id,
        kind: message.kind,
        attempt: message.attempts,
        status,
        error,
        response,
        latency_ms,
        at: now,
    };
    message.attempt_ids.push(attempt.id);
    if message.attempt_ids.len() > ATTEMPT_IDS_MAX {
        message.attempt_ids.remove(0);
    }
    let mut batch = Batch::new();
    DUE.disarm(&mut batch, old_due, &key);
    if ok {
        super::retention::finish(&mut batch, &mut message, MessageState::Delivered, now);
    } else if let Some(wait) = config.retry_intervals.get(message.attempts as usize - 1) {
        message.next_attempt = now.saturating_add(*wait);
        DUE.arm(&mut batch, message.next_attempt, &key);
    } else {
        super::retention::finish(&mut batch, &mut message, MessageState::Failed, now);
    }
    let attempt_key = WebhookAttempt::key(message.team_id, message.webhook_id, attempt.id);
    super::retention::arm_attempt(&mut batch, &attempt_key, now);
    let written = batch
        .put(&key, &message)
        .and_then(|()| batch.put(attempt_key, &attempt));
    if let Err(error) = written {
        tracing::error!(%error, "cannot record a webhook attempt");
        return;
    }
    if let Err(error) = store.commit(batch).await {
        tracing::error!(%error, "cannot record a webhook attempt");
    }
}

/// One page of the messages of `team_id`'s webhook `webhook_id`, newest first.
pub fn messages(
    store: &Store,
    team_id: Id,
    webhook_id: Id,
    page: &crate::storage::page::PageRequest,
) -> Result<(Vec<WebhookMessage>, bool), crate::storage::Error> {
    let prefix = [team_id.as_bytes().as_slice(), webhook_id.as_bytes()].concat();
    Ok(page.load::<WebhookMessage>(store, &prefix)?)
}

/// The message of event `event_id` for `team_id`'s webhook `webhook_id`.
pub fn message(
    store: &Store,
    team_id: Id,
    webhook_id: Id,
    event_id: Id,
) -> Result<Option<WebhookMessage>, crate::storage::Error> {
    Ok(store.get::<WebhookMessage>(WebhookMessage::key_of(team_id, webhook_id, event_id))?)
}

/// One page of the attempts of `team_id`'s webhook `webhook_id`, newest first.
pub fn attempts(
    store: &Store,
    team_id: Id,
    webhook_id: Id,
    page: &crate::storage::page::PageRequest,
) -> Result<(Vec<WebhookAttempt>, bool), crate::storage::Error> {
    let prefix = [team_id.as_bytes().as_slice(), webhook_id.as_bytes()].concat();
    Ok(page.load::<WebhookAttempt>(store, &prefix)?)
}

/// The attempt `id` of `team_id`'s webhook `webhook_id`.
pub fn attempt(
    store: &Store,
    team_id: Id,
    webhook_id: Id,
    id: Id,
) -> Result<Option<WebhookAttempt>, crate::storage::Error> {
    Ok(store.get::<WebhookAttempt>(WebhookAttempt::key(team_id, webhook_id, id))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use crate::webhooks::{SigningSecret, WebhookStatus};

    /// An enabled webhook of `team` hearing of `email.sent`.
    fn enabled_webhook(store: &Store, team: Id) -> Webhook {
        Webhook {
            id: store.next_id(),
            team_id: team,
            endpoint: "https://hooks.example.com/h".into(),
            events: vec!["email.sent".into()],
            status: WebhookStatus::Enabled,
            signing_secret: SigningSecret::generate().expect("random"),
            previous_secret: None,
            created_at: store.now(),
        }
    }

    #[test]
    fn a_webhook_hears_only_of_events_after_it_was_created() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let (spool, _) = herald_queue::Spool::open(store.clone()).expect("spool");
        let outbound = crate::outbound::Outbound::new(false, Vec::new()).expect("outbound");
        let team = store.next_id();
        let config = crate::config::Config::defaults();
        let services = Services::new(config, store.clone(), spool, team, outbound);
        let add_webhook = |store: &Store| -> Id {
            let webhook = enabled_webhook(store, team);
            services.webhooks().put(&webhook).expect("put");
            webhook.id
        };
        let push = |store: &Store| {
            let mut batch = crate::storage::Change::new();
            crate::services::outbox::push(&mut batch, &services, team, EventKind::EmailSent, || {
                serde_json::json!({})
            })
            .expect("push");
            store.commit(batch.into_batch()).wait().expect("commit");
        };
        let first = add_webhook(&store);
        push(&store);
        clock.advance(Duration::from_secs(1));
        // Created while the first event still waits in the outbox.
        let second = add_webhook(&store);
        push(&store);
        assert_eq!(fan_out(&services, &mut FanOutCursor::new()).expect("fan out"), 2);
        let messages = store.scan::<WebhookMessage>(Scan::prefix(b"")).expect("scan");
        let count = |webhook: Id| messages.iter().filter(|(_, m)| m.webhook_id == webhook).count();
        assert_eq!((count(first), count(second)), (2, 1));
    }

    /// Webhooks in RocksDB whose reads fail while `failing` is set: a storage fault
    /// that passes.
    #[derive(Debug)]
    struct Flaky {
        inner: crate::webhooks::RocksWebhooks,
        failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl crate::webhooks::WebhookStore for Flaky {
        fn get(&self, team_id: Id, id: Id) -> Result<Option<Webhook>, crate::storage::Error> {
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(crate::storage::Error::Unavailable(herald_queue::Refusal::Storage(
                    "injected".into(),
                )));
            }
            self.inner.get(team_id, id)
        }
        fn for_team(&self, team_id: Id) -> Result<Vec<Webhook>, crate::storage::Error> {
            self.inner.for_team(team_id)
        }
        fn any(&self, team_id: Id) -> Result<bool, crate::storage::Error> {
            self.inner.any(team_id)
        }
        fn list(
            &self,
            team_id: Id,
            page: &crate::storage::page::PageRequest,
        ) -> Result<(Vec<Webhook>, bool), crate::storage::Error> {
            self.inner.list(team_id, page)
        }
        fn put(&self, webhook: &Webhook) -> Result<(), crate::storage::Error> {
            self.inner.put(webhook)
        }
        fn delete(&self, webhook: &Webhook) -> Result<(), crate::storage::Error> {
            self.inner.delete(webhook)
        }
    }

    /// A failed read of the endpoint is not a deleted endpoint: the message and its due
    /// entry stay, and once the store reads again the endpoint and its message are there.
    #[test]
    fn a_failed_read_of_the_endpoint_leaves_the_message_armed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let (spool, _) = herald_queue::Spool::open(store.clone()).expect("spool");
        let outbound = crate::outbound::Outbound::new(false, Vec::new()).expect("outbound");
        let failing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut backends = crate::services::Backends::rocksdb(&store);
        backends.webhooks = Box::new(Flaky {
            inner: crate::webhooks::RocksWebhooks::new(store.clone()),
            failing: failing.clone(),
        });
        let team = store.next_id();
        let config = crate::config::Config::defaults();
        let services = Services::assemble(config, backends, store.clone(), spool, team, outbound);
        let webhook = enabled_webhook(&store, team);
        services.webhooks().put(&webhook).expect("put the webhook");
        let message = WebhookMessage {
            event_id: store.next_id(),
            webhook_id: webhook.id,
            team_id: team,
            kind: EventKind::EmailSent,
            body: "{}".into(),
            attempts: 0,
            state: MessageState::Pending,
            next_attempt: store.now(),
            attempt_ids: Vec::new(),
            finished_at: None,
        };
        let key = message.key();
        let mut batch = Batch::new();
        batch.put(&key, &message).expect("encode");
        DUE.arm(&mut batch, message.next_attempt, &key);
        store.commit(batch).wait().expect("commit");

        failing.store(true, std::sync::atomic::Ordering::SeqCst);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(deliver(&services, message.clone()));
        failing.store(false, std::sync::atomic::Ordering::SeqCst);

        assert_eq!(store.get::<WebhookMessage>(&key).expect("read"), Some(message.clone()));
        assert!(
            DUE.contains(&store, message.next_attempt, &key)
                .expect("read the index"),
            "still due"
        );
        let read = services
            .webhooks()
            .get(team, webhook.id)
            .expect("read")
            .expect("the webhook");
        assert_eq!(read.signing_secret.expose(), webhook.signing_secret.expose());
    }

    #[test]
    fn outbox_scans_start_a_window_behind_the_last_event_taken_except_full_passes() {
        let mut cursor = FanOutCursor::new();
        assert_eq!(cursor.start(), None, "the first scan is a full pass");
        let ids = herald_queue::IdGenerator::default();
        let taken = ids.next(Timestamp::from_millis(1_700_000_000_000));
        cursor.scanned(true, Some(taken.as_bytes().as_slice()));
        let start = cursor.start().expect("a cursor after a full pass");
        let mut millis = [0_u8; 8];
        millis[2..].copy_from_slice(&start[..6]);
        let start_ms = u64::from_be_bytes(millis);
        let taken_ms = taken.timestamp().expect("v7").as_millis();
        assert_eq!(taken_ms - start_ms, 2_000);
        assert!(start.as_slice() < taken.as_bytes().as_slice());
        // An older key never moves the cursor back.
        cursor.scanned(false, Some([0_u8; 16].as_slice()));
        assert_eq!(cursor.start(), Some(start));
        cursor.full_pass_at = Instant::now();
        assert_eq!(cursor.start(), None, "a full pass when one is due");
    }
}
