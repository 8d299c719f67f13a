//! What a node keeps of its activity (idempotency records, counters, request logs, the
//! webhook log) copied and read back through the PostgreSQL stores as the RocksDB ones
//! show it, with its retention and its due work still due.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Duration;

use herald::counters::{CounterStore, Metric, QuotaCounter, bucket_of, start_of};
use herald::emails::idempotency::{Answer, IdempotencyKey, IdempotencyRecord, RETENTION};
use herald::events::{Event, EventKind};
use herald::logs::RequestLog;
use herald::storage::Change;
use herald::storage::page::{Cursor, PageRequest};
use herald::webhooks::{MessageState, WebhookAttempt, WebhookMessage};
use herald_queue::{Batch, Due, Id, Timestamp};
use serde_json::json;

use crate::{Copying, count};

/// Every item in one page.
fn all() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

/// A UTC day's length.
const DAY_MS: u64 = 24 * 3600 * 1000;

/// An hour.
const HOUR: Duration = Duration::from_secs(3600);

/// The entries of `queue` due by `horizon`.
fn due(queue: &dyn herald::storage::due::DueQueue, horizon: Timestamp) -> Vec<Due> {
    queue.due(horizon, None, 100).expect("due")
}

/// Idempotency records (an SMTP answer and a REST one, one of them past its retention)
/// answer on the database as on the node, and the one past its retention is due there.
#[test]
fn idempotency_records_are_copied_and_expire_when_they_did() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let team = ids.next_id();
    let now = ids.now();
    let key = |name: &str| IdempotencyKey::of(team, name);
    let fresh = IdempotencyRecord {
        body_sha256: "ab".repeat(32),
        answer: Answer::Http {
            status: 200,
            response: json!({ "id": ids.next_id() }).to_string(),
        },
        created_at: now,
    };
    let smtp = IdempotencyRecord {
        body_sha256: "cd".repeat(32),
        answer: Answer::Smtp {
            email_id: ids.next_id(),
        },
        created_at: now,
    };
    let old = IdempotencyRecord {
        created_at: Timestamp::from_millis(now.as_millis() - (RETENTION + HOUR).as_millis() as u64),
        ..fresh.clone()
    };
    let mut change = Change::new();
    for (name, record) in [("fresh", &fresh), ("smtp", &smtp), ("old", &old)] {
        local.idempotency.stage(&mut change, &key(name), record).expect("stage");
    }
    copying.node.commit(change).expect("commit");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "idempotency keys"), 3);
    for (name, record) in [("fresh", &fresh), ("smtp", &smtp), ("old", &old)] {
        assert_eq!(
            shared.idempotency.get(&key(name)).expect("get").as_ref(),
            Some(record),
            "{name}"
        );
    }
    assert_eq!(
        shared.idempotency.sweep(ids.now()).expect("sweep"),
        1,
        "the old one alone"
    );
    assert_eq!(shared.idempotency.get(&key("old")).expect("get"), None);
    assert_eq!(shared.idempotency.get(&key("fresh")).expect("get"), Some(fresh));
}

/// A team's metrics, its quota periods and a source address's day are copied as counted
/// (the broadcasts' counts kept beside them are not counters), each with the time its
/// retention counts from; they add up from there.
#[test]
fn counters_are_copied_with_their_retention() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let team = ids.next_id();
    let at = ids.now();
    let day = u32::try_from(at.as_millis() / DAY_MS).expect("a day");
    let day_ends = Timestamp::from_millis((u64::from(day) + 1) * DAY_MS);
    let month_ends = Timestamp::from_millis(day_ends.as_millis() + 9 * DAY_MS);
    let ip: IpAddr = "198.51.100.7".parse().expect("an address");
    let mut change = Change::new();
    local
        .counters
        .count(&mut change, team, "Shop <news@Shop.example.com>", at, Metric::Sent);
    local
        .counters
        .count(&mut change, team, "news@shop.example.com", at, Metric::Sent);
    local
        .counters
        .count(&mut change, team, "alerts@other.example", at, Metric::Delivered);
    local
        .counters
        .add_quota(&mut change, team, QuotaCounter::Day(day), 3, day_ends);
    local
        .counters
        .add_quota(&mut change, team, QuotaCounter::Month(24_000), 5, month_ends);
    local.counters.add_source(&mut change, ip, day, 7, day_ends);
    local.broadcasts.count_canceled(&mut change, team, ids.next_id());
    copying.node.commit(change).expect("commit");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "metric counters"), 2);
    assert_eq!(count(&copied, "quota counters"), 2);
    assert_eq!(count(&copied, "source address counters"), 1);
    let bucket = bucket_of(at);
    let read = shared.counters.read(team, bucket - 10, bucket + 10).expect("read");
    assert_eq!(read, local.counters.read(team, bucket - 10, bucket + 10).expect("read"));
    assert_eq!(read.len(), 2);
    assert_eq!(shared.counters.quota(team, QuotaCounter::Day(day)).expect("quota"), 3);
    assert_eq!(
        shared.counters.quota(team, QuotaCounter::Month(24_000)).expect("quota"),
        5
    );
    assert_eq!(shared.counters.source(ip, day).expect("source"), 7);

    // Retention counts from the same times: the metrics' day start, the periods' ends.
    let times = |counters: &dyn CounterStore| -> BTreeSet<Timestamp> {
        let horizon = month_ends.saturating_add(HOUR);
        due(&*counters.expiry().queue(), horizon)
            .iter()
            .map(|due| due.at)
            .collect()
    };
    let day_starts = start_of(bucket - bucket % 96);
    assert_eq!(
        times(&*shared.counters),
        BTreeSet::from([day_starts, day_ends, month_ends])
    );
    assert_eq!(times(&*shared.counters), times(&*local.counters));

    let mut change = Change::new();
    shared
        .counters
        .add_quota(&mut change, team, QuotaCounter::Day(day), 1, day_ends);
    copying.node.commit(change).expect("commit");
    assert_eq!(shared.counters.quota(team, QuotaCounter::Day(day)).expect("quota"), 4);
}

/// Request logs are copied whole, paged as on the node, and due for their retention from
/// their time.
#[test]
fn request_logs_are_copied_and_expire_from_their_time() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let team = ids.next_id();
    let logs: Vec<RequestLog> = (0..3)
        .map(|n| RequestLog {
            id: ids.next_id(),
            team_id: team,
            api_key_id: ids.next_id(),
            method: "POST".into(),
            path: "/emails".into(),
            query: (n == 1).then(|| "limit=2".into()),
            status: 200 + n,
            user_agent: Some("curl/8".into()),
            duration_ms: 12,
            request_body: Some(json!({ "n": n }).to_string()),
            response_body: (n != 2).then(|| "{}".into()),
            created_at: ids.now(),
        })
        .collect();
    for log in &logs {
        local.request_logs.record(log);
    }
    // `record` does not wait; a synced commit after it flushes the queue in order.
    ids.commit(Batch::new()).wait().expect("flushed");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "request logs"), 3);
    for log in &logs {
        assert_eq!(shared.request_logs.get(team, log.id).expect("get").as_ref(), Some(log));
    }
    assert_eq!(
        shared.request_logs.page(team, &all()).expect("page"),
        local.request_logs.page(team, &all()).expect("page")
    );
    assert_eq!(shared.request_logs.newest(team, 2).expect("newest").len(), 2);
    let expiry = shared.request_logs.expiry();
    let before = Timestamp::from_millis(logs[0].created_at.as_millis() - 1);
    assert!(due(&*expiry.queue(), before).is_empty());
    assert_eq!(due(&*expiry.queue(), ids.now()).len(), 3);
}

/// Webhook messages (one pending, due at its next attempt; one delivered) and their
/// attempts are copied, listed as on the node, the pending one due in the dispatcher's
/// queue and the rest in the retention's, at the same times and under the same keys as
/// on the node. The outbox stays the node's.
#[test]
fn the_webhook_log_is_copied_with_its_due_messages() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, hook) = (ids.next_id(), ids.next_id());
    let now = ids.now();
    let message = |state: MessageState| WebhookMessage {
        event_id: ids.next_id(),
        webhook_id: hook,
        team_id: team,
        kind: EventKind::EmailDelivered,
        body: json!({ "type": "email.delivered", "data": { "b": 1, "a": 2 } }).to_string(),
        attempts: 0,
        state,
        next_attempt: now,
        attempt_ids: Vec::new(),
        finished_at: None,
    };
    let attempt = |message: &WebhookMessage, status: u16| WebhookAttempt {
        id: ids.next_id(),
        event_id: message.event_id,
        kind: message.kind,
        attempt: 1,
        status: Some(status),
        error: (status >= 500).then(|| "server error".into()),
        response: "answer".into(),
        latency_ms: 40,
        at: ids.now(),
    };
    let (pending, delivered) = (message(MessageState::Pending), message(MessageState::Pending));
    local
        .webhook_log
        .fan_out(&[], &[pending.clone(), delivered.clone()])
        .expect("fan out");
    let failed_once = attempt(&pending, 503);
    let succeeded = attempt(&delivered, 200);
    let retried = WebhookMessage {
        attempts: 1,
        next_attempt: now.saturating_add(HOUR),
        attempt_ids: vec![failed_once.id],
        ..pending
    };
    let done = WebhookMessage {
        attempts: 1,
        state: MessageState::Delivered,
        attempt_ids: vec![succeeded.id],
        finished_at: Some(now.saturating_add(Duration::from_millis(5))),
        ..delivered
    };
    let mut change = Change::new();
    local
        .webhook_log
        .stage_message(&mut change, &retried, Some(now), Some(&failed_once))
        .expect("stage");
    local
        .webhook_log
        .stage_message(&mut change, &done, Some(now), Some(&succeeded))
        .expect("stage");
    let unsent = Event {
        id: ids.next_id(),
        team_id: team,
        kind: EventKind::EmailSent,
        created_at: now,
        data: json!({ "email_id": ids.next_id() }),
    };
    local.webhook_log.stage_event(&mut change, &unsent).expect("event");
    local.webhook_log.commit(change).expect("commit");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "webhook messages"), 2);
    assert_eq!(count(&copied, "webhook attempts"), 2);
    for one in [&retried, &done] {
        assert_eq!(
            shared
                .webhook_log
                .message(team, hook, one.event_id)
                .expect("message")
                .as_ref(),
            Some(one)
        );
    }
    assert_eq!(
        shared.webhook_log.messages(team, hook, &all()).expect("messages"),
        local.webhook_log.messages(team, hook, &all()).expect("messages")
    );
    assert_eq!(
        shared.webhook_log.attempts(team, hook, &all()).expect("attempts"),
        local.webhook_log.attempts(team, hook, &all()).expect("attempts")
    );
    assert_eq!(
        shared.webhook_log.attempt(team, hook, succeeded.id).expect("attempt"),
        Some(succeeded.clone())
    );

    // The pending message is due at its next attempt, not before; final messages and
    // attempts are in the retention's queue as on the node.
    let later = now.saturating_add(HOUR * 2);
    let dispatch = shared.webhook_log.due_queue();
    assert!(due(&*dispatch, now).is_empty(), "not before its next attempt");
    let due_then = due(&*dispatch, later);
    assert_eq!(due_then, due(&*local.webhook_log.due_queue(), later));
    assert_eq!(due_then.len(), 1);
    assert_eq!(due_then[0].at, retried.next_attempt);
    assert_eq!(
        shared.webhook_log.due(&due_then[0].key).expect("due message"),
        Some(retried.clone())
    );
    let retention = due(&*shared.webhook_log.expiry().queue(), later);
    assert_eq!(retention, due(&*local.webhook_log.expiry().queue(), later));
    assert_eq!(retention.len(), 3, "the delivered message and both attempts");

    // The outbox is the node's on either backend: its event is still to be fanned out.
    let outbox: Vec<Id> = shared
        .webhook_log
        .outbox(None, 10)
        .expect("outbox")
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(outbox, vec![unsent.id]);
}
