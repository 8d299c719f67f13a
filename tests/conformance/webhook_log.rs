//! What every [`WebhookLog`] does, run on the RocksDB one: events staged into the
//! outbox are read back oldest first, fanning out takes them out and writes their
//! messages in one step, a message moves through its attempts with each attempt kept
//! beside it, a removed message is gone, and erasing a team leaves others' log.

use herald::events::{Event, EventKind};
use herald::storage::Change;
use herald::webhooks::{MessageState, RocksWebhookLog, WebhookAttempt, WebhookLog, WebhookMessage};
use herald_queue::{Id, Store};
use serde_json::json;

use crate::conformance::{ids_of, page, pages_go_newest_first, rocksdb};
use herald::storage::page::Cursor;

/// An event of `team_id`; `ids` is where ids and times come from.
fn event(ids: &Store, team_id: Id) -> Event {
    Event {
        id: ids.next_id(),
        team_id,
        kind: EventKind::EmailSent,
        created_at: ids.now(),
        data: json!({ "email_id": ids.next_id() }),
    }
}

/// The pending message of `event` for `webhook_id`, due at once.
fn message(event: &Event, webhook_id: Id) -> WebhookMessage {
    WebhookMessage {
        event_id: event.id,
        webhook_id,
        team_id: event.team_id,
        kind: event.kind,
        body: event.data.to_string(),
        attempts: 0,
        state: MessageState::Pending,
        next_attempt: event.created_at,
        attempt_ids: Vec::new(),
        finished_at: None,
    }
}

/// An attempt at `message`, answered with `status`.
fn attempt(ids: &Store, message: &WebhookMessage, status: u16) -> WebhookAttempt {
    WebhookAttempt {
        id: ids.next_id(),
        event_id: message.event_id,
        kind: message.kind,
        attempt: message.attempts,
        status: Some(status),
        error: None,
        response: "ok".into(),
        latency_ms: 3,
        at: ids.now(),
    }
}

/// What every [`WebhookLog`] does: `ids` is where ids and times come from.
fn webhook_log_conformance(log: &dyn WebhookLog, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let (hook, their_hook) = (ids.next_id(), ids.next_id());
    assert!(log.outbox(None, 10).expect("outbox").is_empty());

    // Staged events reach the outbox only with their change, and come back oldest first.
    let events: Vec<Event> = (0..4).map(|_| event(ids, team)).collect();
    let theirs = event(ids, other);
    let mut change = Change::new();
    for one in events.iter().chain([&theirs]) {
        log.stage_event(&mut change, one).expect("stage");
    }
    assert!(
        log.outbox(None, 10).expect("outbox").is_empty(),
        "staged is not written"
    );
    log.commit(change).expect("commit");
    let mut all = events.clone();
    all.push(theirs.clone());
    assert_eq!(log.outbox(None, 10).expect("outbox"), all);
    assert_eq!(log.outbox(None, 2).expect("outbox"), all[..2].to_vec());
    assert_eq!(log.outbox(Some(events[1].id), 10).expect("outbox"), all[2..].to_vec());

    // Fanning out takes the events and writes their messages together.
    let messages: Vec<WebhookMessage> = events.iter().map(|e| message(e, hook)).collect();
    let their_message = message(&theirs, their_hook);
    let mut fanned = messages.clone();
    fanned.push(their_message.clone());
    log.fan_out(&all[..3], &fanned[..3]).expect("fan out");
    assert_eq!(log.outbox(None, 10).expect("outbox"), all[3..].to_vec());
    log.fan_out(&all[3..], &fanned[3..]).expect("fan out");
    assert!(log.outbox(None, 10).expect("outbox").is_empty());
    for one in &fanned {
        assert_eq!(
            log.message(one.team_id, one.webhook_id, one.event_id).expect("read"),
            Some(one.clone())
        );
    }
    assert_eq!(log.message(team, their_hook, theirs.id).expect("read"), None);
    pages_go_newest_first(
        |request| {
            let (found, more) = log.messages(team, hook, request).expect("page");
            (ids_of(&found, |m| m.event_id), more)
        },
        &ids_of(&messages, |m| m.event_id),
    );

    // An attempt that failed leaves the message pending and later; one that succeeded
    // makes it final. Each attempt is kept beside it.
    let mut moving = messages[0].clone();
    moving.attempts = 1;
    let first = attempt(ids, &moving, 500);
    moving.attempt_ids.push(first.id);
    let was_due = moving.next_attempt;
    moving.next_attempt = ids.now().saturating_add(std::time::Duration::from_secs(30));
    let mut change = Change::new();
    log.stage_message(&mut change, &moving, Some(was_due), Some(&first))
        .expect("stage");
    log.commit(change).expect("commit");
    moving.attempts = 2;
    let second = attempt(ids, &moving, 200);
    moving.attempt_ids.push(second.id);
    moving.state = MessageState::Delivered;
    moving.finished_at = Some(ids.now());
    let mut change = Change::new();
    log.stage_message(&mut change, &moving, Some(moving.next_attempt), Some(&second))
        .expect("stage");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(log.commit_async(change)).expect("commit");
    assert_eq!(
        log.message(team, hook, moving.event_id).expect("read"),
        Some(moving.clone())
    );
    assert_eq!(log.attempt(team, hook, first.id).expect("read"), Some(first.clone()));
    assert_eq!(log.attempt(team, their_hook, first.id).expect("read"), None);
    let (found, more) = log.attempts(team, hook, &page(10, Cursor::Start)).expect("page");
    assert_eq!((found, more), (vec![second.clone(), first.clone()], false));

    // A removed message is gone; its neighbours stay.
    let mut change = Change::new();
    log.stage_removal(&mut change, &messages[1], messages[1].next_attempt);
    log.commit(change).expect("commit");
    assert_eq!(log.message(team, hook, messages[1].event_id).expect("read"), None);
    assert!(log.message(team, hook, messages[2].event_id).expect("read").is_some());

    // Erasing the team takes its messages and attempts, and none of another's.
    while log.erase_team(team).expect("erase") {}
    let (found, _) = log.messages(team, hook, &page(10, Cursor::Start)).expect("page");
    assert!(found.is_empty(), "{found:?}");
    let (found, _) = log.attempts(team, hook, &page(10, Cursor::Start)).expect("page");
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(
        log.message(other, their_hook, theirs.id).expect("read"),
        Some(their_message)
    );
}

#[test]
fn rocksdb_webhook_log_keeps_the_contract() {
    let (_dir, store) = rocksdb();
    webhook_log_conformance(&RocksWebhookLog::new(store.clone()), &store);
}
