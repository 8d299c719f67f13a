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
use herald_queue::{Id, Timestamp};
use hyper::Method;

use super::Webhook;
use super::log::webhook_of;
use super::message::{MessageState, WebhookAttempt, WebhookMessage};
use super::signature;
use crate::outbound::Limits;
use crate::runner::{self, Claimed, Handler, Runner, Wake};
use crate::services::Services;
use crate::shutdown::Shutdown;
use crate::storage::Change;
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
/// Attempts of one message that its record lists: more than the default retry schedule
/// makes, with room for replays.
pub const ATTEMPT_IDS_MAX: usize = 50;
/// Response bytes kept in the request log.
const EXCERPT_MAX: usize = 1024;

/// Runs the dispatcher until shutdown: fan-out and the due messages' runner.
pub async fn run(state: Arc<Services>, shutdown: Shutdown) {
    let runner = Runner::new(
        "webhooks",
        state.webhook_log().due_queue(),
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
            let Some(webhook) = webhook_of(claimed.key()) else {
                tracing::warn!(key_len = claimed.key().len(), "removing a malformed webhook due entry");
                disarm(&self.state, &claimed).await;
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
    match state.webhook_log().due(claimed.key()) {
        Ok(Some(message)) if message.state == MessageState::Pending && message.next_attempt == claimed.at() => {
            deliver(state, message).await;
        }
        Ok(_) => disarm(state, &claimed).await,
        // The claim is given back with the entry still due: it is tried again.
        Err(error) => tracing::error!(%error, "cannot read a webhook message"),
    }
}

async fn disarm(state: &Services, claimed: &Claimed) {
    if let Err(error) = state.webhook_log().due_queue().disarm(claimed.due()).await {
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
    let log = services.webhook_log();
    let start = cursor.start();
    let events = log.outbox(start, FAN_OUT_BATCH)?;
    cursor.scanned(start.is_none(), events.last().map(|event| event.id));
    if events.is_empty() {
        return Ok(0);
    }
    let now = services.now();
    let mut messages = Vec::new();
    let mut webhooks: std::collections::HashMap<Id, Vec<Webhook>> = std::collections::HashMap::new();
    for event in &events {
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
            messages.push(WebhookMessage {
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
            });
        }
    }
    log.fan_out(&events, &messages)?;
    Ok(events.len())
}

/// Where the next outbox scan starts. Outbox keys are time-ordered event ids, and
/// events are committed moments after their ids are made, so an event can appear behind
/// one already taken, but not by more than [`STRAGGLER_WINDOW`]: scans start that far
/// before the last key taken, and a full pass every [`FULL_PASS_INTERVAL`] catches
/// anything later still.
#[derive(Debug)]
struct FanOutCursor {
    last: Option<Id>,
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

    /// The id to scan after, or `None` for a full pass.
    fn start(&self) -> Option<Id> {
        if Instant::now() >= self.full_pass_at {
            return None;
        }
        let millis = self.last?.timestamp()?.as_millis();
        let window = u64::try_from(STRAGGLER_WINDOW.as_millis()).unwrap_or(u64::MAX);
        // A v7 id starts with its 48-bit millisecond time; zeros after it sort first.
        let from = millis.saturating_sub(window).to_be_bytes();
        let mut bound = [0_u8; 16];
        bound[..6].copy_from_slice(&from[2..]);
        Some(Id::from_bytes(bound))
    }

    /// Records a scan: whether it was a full pass, and the last event it returned.
    fn scanned(&mut self, full: bool, last: Option<Id>) {
        if full {
            self.full_pass_at = Instant::now() + FULL_PASS_INTERVAL;
        }
        if let Some(last) = last
            && self.last.is_none_or(|previous| last.as_bytes() > previous.as_bytes())
        {
            self.last = Some(last);
        }
    }
}

/// One attempt at `message`, pending and due, and its outcome written.
async fn deliver(state: &Services, mut message: WebhookMessage) {
    let log = state.webhook_log();
    let config = &state.config().webhooks;
    let old_due = message.next_attempt;
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
        let mut change = Change::new();
        log.stage_removal(&mut change, &message, old_due);
        let _ = log.commit_async(change).await;
        return;
    };
    let Some(keys) = webhook
        .signing_keys(state.now())
        .into_iter()
        .map(super::SigningSecret::key)
        .collect::<Option<Vec<_>>>()
    else {
        // Only a damaged record gets here: the message cannot be signed, so it fails
        // rather than coming due again on every pass.
        tracing::error!(webhook_id = %webhook.id, "the webhook's signing secret cannot be decoded");
        finish(&mut message, MessageState::Failed, state.now());
        let mut change = Change::new();
        if log.stage_message(&mut change, &message, Some(old_due), None).is_ok() {
            let _ = log.commit_async(change).await;
        }
        return;
    };
    let timestamp = state.now().as_millis() / 1000;
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
    let now = state.now();
    let attempt = WebhookAttempt {
        id: state.next_id(),
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
    if ok {
        finish(&mut message, MessageState::Delivered, now);
    } else if let Some(wait) = config.retry_intervals.get(message.attempts as usize - 1) {
        message.next_attempt = now.saturating_add(*wait);
    } else {
        finish(&mut message, MessageState::Failed, now);
    }
    let mut change = Change::new();
    if let Err(error) = log.stage_message(&mut change, &message, Some(old_due), Some(&attempt)) {
        tracing::error!(%error, "cannot record a webhook attempt");
        return;
    }
    if let Err(error) = log.commit_async(change).await {
        tracing::error!(%error, "cannot record a webhook attempt");
    }
}

/// Marks `message` final at `at`: its retention counts from then.
fn finish(message: &mut WebhookMessage, state: MessageState, at: Timestamp) {
    message.state = state;
    message.finished_at = Some(at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use crate::webhooks::log::{DUE, key_of};
    use crate::webhooks::{SigningSecret, WebhookStatus};
    use herald_queue::{Scan, Store};

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
        let services = Services::new(config, crate::storage::Node::new(store.clone()), spool, team, outbound);
        let add_webhook = |store: &Store| -> Id {
            let webhook = enabled_webhook(store, team);
            services.webhooks().put(&webhook).expect("put");
            webhook.id
        };
        let push = || {
            let mut batch = crate::storage::Change::new();
            crate::services::outbox::push(&mut batch, &services, team, EventKind::EmailSent, || {
                serde_json::json!({})
            })
            .expect("push");
            services.commit(batch).expect("commit");
        };
        let first = add_webhook(&store);
        push();
        clock.advance(Duration::from_secs(1));
        // Created while the first event still waits in the outbox.
        let second = add_webhook(&store);
        push();
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
        let node = crate::storage::Node::new(store.clone());
        let mut backends = crate::services::Backends::rocksdb(&node);
        backends.webhooks = Box::new(Flaky {
            inner: crate::webhooks::RocksWebhooks::new(store.clone()),
            failing: failing.clone(),
        });
        let team = store.next_id();
        let config = crate::config::Config::defaults();
        let services = Services::assemble(config, backends, node, spool, team, outbound);
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
        let key = key_of(&message);
        let mut change = Change::new();
        let log = services.webhook_log();
        log.stage_message(&mut change, &message, None, None).expect("stage");
        log.commit(change).expect("commit");

        failing.store(true, std::sync::atomic::Ordering::SeqCst);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(deliver(&services, message.clone()));
        failing.store(false, std::sync::atomic::Ordering::SeqCst);

        assert_eq!(log.due(&key).expect("read"), Some(message.clone()));
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
        cursor.scanned(true, Some(taken));
        let start = cursor.start().expect("a cursor after a full pass");
        let mut millis = [0_u8; 8];
        millis[2..].copy_from_slice(&start.as_bytes()[..6]);
        let start_ms = u64::from_be_bytes(millis);
        let taken_ms = taken.timestamp().expect("v7").as_millis();
        assert_eq!(taken_ms - start_ms, 2_000);
        assert!(start.as_bytes() < taken.as_bytes());
        // An older event never moves the cursor back.
        cursor.scanned(false, Some(Id::from_bytes([0_u8; 16])));
        assert_eq!(cursor.start(), Some(start));
        cursor.full_pass_at = Instant::now();
        assert_eq!(cursor.start(), None, "a full pass when one is due");
    }
}
