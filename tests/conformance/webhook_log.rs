//! What every [`WebhookLog`] does, run on the RocksDB one and the PostgreSQL one: events
//! staged into the outbox are read back oldest first, fanning out takes them out and
//! writes their messages in one step, a message moves through its attempts with each
//! attempt kept beside it, a removed message is gone, and erasing a team (however large)
//! takes its log and leaves others'. The dispatcher's queue holds each pending message at
//! its next attempt and follows it; retention's holds final messages and attempts, and
//! spares a message replayed.

use std::time::Duration;

use herald::events::{Event, EventKind};
use herald::storage::Change;
use herald::storage::due::DueQueue;
use herald::storage::page::Cursor;
use herald::webhooks::{MessageState, PostgresWebhookLog, RocksWebhookLog, WebhookAttempt, WebhookLog, WebhookMessage};
use herald_queue::{Due, Id, Store, Timestamp};
use serde_json::json;

use crate::conformance::{ids_of, page, pages_go_newest_first, postgres, rocksdb};

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

/// Waits for a commit handed out as a future.
fn wait(commit: herald::storage::Committing) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(commit).expect("commit");
}

/// The entries of `queue` due by `horizon`, all of them.
fn entries(queue: &dyn DueQueue, horizon: Timestamp) -> Vec<Due> {
    queue.due(horizon, None, 100).expect("due")
}

/// The messages the entries of the dispatcher's queue name, in the queue's order, each
/// checked to be due at its next attempt.
fn due_messages(log: &dyn WebhookLog, horizon: Timestamp) -> Vec<WebhookMessage> {
    entries(&*log.due_queue(), horizon)
        .iter()
        .map(|entry| {
            let message = log.due(&entry.key).expect("read").expect("an entry names its message");
            assert_eq!(entry.at, message.next_attempt, "{message:?}");
            message
        })
        .collect()
}

/// What every [`WebhookLog`]'s queues do, on a log of its own (the queues hold every
/// team's entries): `ids` is where ids and times come from.
fn queues_follow_the_messages(log: &dyn WebhookLog, ids: &Store) {
    let (team, hook) = (ids.next_id(), ids.next_id());
    let horizon = ids.now().saturating_add(Duration::from_secs(86_400));
    let events: Vec<Event> = (0..4).map(|_| event(ids, team)).collect();
    let mut messages: Vec<WebhookMessage> = events.iter().map(|e| message(e, hook)).collect();
    log.fan_out(&events, &messages).expect("fan out");

    // Fanned out, each message is due once, at its next attempt, in order; the queue
    // pages from any entry and says when the next one falls due.
    let queue = log.due_queue();
    let due = entries(&*queue, horizon);
    let mut found = due_messages(log, horizon);
    found.sort_by_key(|m| m.event_id);
    assert_eq!(found, messages);
    assert_eq!(queue.due(horizon, None, 2).expect("due"), due[..2].to_vec());
    assert_eq!(queue.due(horizon, Some(&due[1]), 100).expect("due"), due[2..].to_vec());
    let before = Timestamp::from_millis(due[0].at.as_millis() - 1);
    assert!(entries(&*queue, before).is_empty(), "nothing before the first");
    assert_eq!(queue.next_after(before).expect("next"), Some(due[0].at));

    // A failed attempt moves its message's entry to the next attempt.
    let moved = &mut messages[0];
    moved.attempts = 1;
    let failed = attempt(ids, moved, 500);
    moved.attempt_ids.push(failed.id);
    let was_due = moved.next_attempt;
    moved.next_attempt = ids.now().saturating_add(Duration::from_secs(3_600));
    let mut change = Change::new();
    log.stage_message(&mut change, moved, Some(was_due), Some(&failed))
        .expect("stage");
    log.commit(change).expect("commit");
    let found = due_messages(log, horizon);
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(found.last(), Some(&messages[0]), "due last, once");

    // A delivered message, a removed one and a dropped entry leave the queue.
    let delivered = &mut messages[1];
    delivered.attempts = 1;
    let succeeded = attempt(ids, delivered, 200);
    delivered.attempt_ids.push(succeeded.id);
    delivered.state = MessageState::Delivered;
    delivered.finished_at = Some(ids.now());
    let mut change = Change::new();
    log.stage_message(&mut change, delivered, Some(delivered.next_attempt), Some(&succeeded))
        .expect("stage");
    log.stage_removal(&mut change, &messages[2], messages[2].next_attempt);
    log.commit(change).expect("commit");
    let dropped = entries(&*queue, horizon)
        .into_iter()
        .find(|entry| log.due(&entry.key).expect("read").as_ref() == Some(&messages[3]))
        .expect("the last message's entry");
    wait(queue.disarm(&dropped));
    assert_eq!(due_messages(log, horizon), vec![messages[0].clone()]);
    assert_eq!(
        log.message(team, hook, messages[3].event_id).expect("read").as_ref(),
        Some(&messages[3]),
        "a dropped entry leaves its message"
    );

    // Retention holds the final message from its outcome and the attempts from when
    // they were made.
    let sweep = log.expiry();
    assert_eq!(sweep.kind(), "webhook_messages");
    let retention = sweep.queue();
    let expiring = entries(&*retention, horizon);
    let mut times: Vec<Timestamp> = expiring.iter().map(|entry| entry.at).collect();
    times.sort();
    let finished = messages[1].finished_at.expect("final");
    let mut expected = vec![failed.at, succeeded.at, finished];
    expected.sort();
    assert_eq!(times, expected);

    // A message replayed before it expires stays; the attempts go.
    let replayed = &mut messages[1];
    replayed.state = MessageState::Pending;
    replayed.finished_at = None;
    replayed.attempts = 0;
    replayed.next_attempt = ids.now();
    let mut change = Change::new();
    log.stage_message(&mut change, replayed, None, None).expect("stage");
    log.commit(change).expect("commit");
    let all: Vec<&Due> = expiring.iter().collect();
    assert_eq!(sweep.expire(&all).expect("expire"), 3);
    assert_eq!(
        log.message(team, hook, messages[1].event_id).expect("read").as_ref(),
        Some(&messages[1])
    );
    assert_eq!(log.attempt(team, hook, failed.id).expect("read"), None);
    assert_eq!(log.attempt(team, hook, succeeded.id).expect("read"), None);
    assert!(entries(&*retention, horizon).is_empty(), "expired once");
    let found = due_messages(log, horizon);
    assert!(found.contains(&messages[1]), "due again: {found:?}");

    // Final again, it expires from its new outcome.
    let failed_again = &mut messages[1];
    let was_due = failed_again.next_attempt;
    failed_again.state = MessageState::Failed;
    failed_again.finished_at = Some(ids.now());
    let mut change = Change::new();
    log.stage_message(&mut change, failed_again, Some(was_due), None)
        .expect("stage");
    log.commit(change).expect("commit");
    let expiring = entries(&*retention, horizon);
    assert_eq!(expiring.len(), 1, "{expiring:?}");
    assert_eq!(Some(expiring[0].at), messages[1].finished_at);
    assert_eq!(sweep.expire(&[&expiring[0]]).expect("expire"), 1);
    assert_eq!(log.message(team, hook, messages[1].event_id).expect("read"), None);
    assert_eq!(due_messages(log, horizon), vec![messages[0].clone()]);
}

/// Erasing a team with more messages than a store erases at once (PostgreSQL's does a
/// batch a call) takes them all, over as many calls as it asks for.
fn erasing_a_large_team_takes_every_message(log: &dyn WebhookLog, ids: &Store) {
    let (team, hook) = (ids.next_id(), ids.next_id());
    let events: Vec<Event> = (0..1_200).map(|_| event(ids, team)).collect();
    let messages: Vec<WebhookMessage> = events.iter().map(|e| message(e, hook)).collect();
    log.fan_out(&events, &messages).expect("fan out");
    let mut calls = 1;
    while log.erase_team(team).expect("erase") {
        calls += 1;
        assert!(calls < 100, "erasing never ends");
    }
    let (found, _) = log.messages(team, hook, &page(10, Cursor::Start)).expect("page");
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn rocksdb_webhook_log_keeps_the_contract() {
    let (_dir, store) = rocksdb();
    webhook_log_conformance(&RocksWebhookLog::new(store.clone()), &store);
    erasing_a_large_team_takes_every_message(&RocksWebhookLog::new(store.clone()), &store);
    let (_queues_dir, store) = rocksdb();
    queues_follow_the_messages(&RocksWebhookLog::new(store.clone()), &store);
}

#[test]
fn postgres_webhook_log_keeps_the_contract() {
    let (_dir, store) = rocksdb();
    let log = PostgresWebhookLog::new(postgres(), store.clone());
    webhook_log_conformance(&log, &store);
    erasing_a_large_team_takes_every_message(&log, &store);
    let (_queues_dir, store) = rocksdb();
    queues_follow_the_messages(&PostgresWebhookLog::new(postgres(), store.clone()), &store);
}
