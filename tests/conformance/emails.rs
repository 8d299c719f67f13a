//! What every [`EmailStore`] does, run on the RocksDB one and the PostgreSQL one: emails created in a change
//! are there once it is committed and not before, each with its status and the first
//! event of its timeline; they list newest first by team, their statuses and the ids of
//! those in one state come newest first before an id or a time; an event recorded lands
//! on the timeline (oldest first) and moves `last_event` by the one precedence rule
//! ([`EmailState::after`]), an event of lower precedence leaving it where it was; a
//! status or a record rewritten is read back; and erasing a team a batch at a time
//! answers each of its emails once, then none, and leaves others' emails; retention
//! counts from the final outcome, content first.

use std::time::Duration;

use herald::emails::record::{AttemptLog, Tag};
use herald::emails::{EmailEvent, EmailRecord, EmailState, EmailStore, PostgresEmails, RocksEmails, Source};
use herald::storage::Change;
use herald::storage::page::Cursor;
use herald_queue::{Id, ManualClock, Store, Timestamp};
use serde_json::{Value, json};

use crate::conformance::{ids_of, page, pages_go_newest_first, postgres, rocksdb_on_clock};

/// A new email of `team_id` at `state`; `ids` is where ids and times come from.
fn email(ids: &Store, team_id: Id, state: EmailState, subject: &str) -> EmailRecord {
    EmailRecord {
        id: ids.next_id(),
        team_id,
        api_key_id: Some(ids.next_id()),
        from: "Shop <news@shop.example.com>".into(),
        to: vec!["ann@example.org".into()],
        cc: vec!["bob@example.org".into()],
        bcc: Vec::new(),
        reply_to: Vec::new(),
        subject: subject.into(),
        html: Some(format!("<p>{subject}</p>")),
        text: Some(subject.into()),
        tags: vec![Tag {
            name: "kind".into(),
            value: "news".into(),
        }],
        created_at: ids.now(),
        scheduled_at: (state == EmailState::Scheduled).then(|| ids.now().saturating_add(Duration::from_secs(3600))),
        message_id: format!("<{subject}@shop.example.com>"),
        last_event: state,
        size: 1_024,
        source: Source::Api,
        template: None,
        topic_id: None,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: false,
        text_derived: false,
        line_feeds: false,
        broadcast_id: None,
        request_log_id: None,
    }
}

/// The first six bytes of the ids made at `at` (UUIDv7's milliseconds): a time bound.
fn time_bound(at: Timestamp) -> Vec<u8> {
    at.as_millis().to_be_bytes()[2..].to_vec()
}

/// What a timeline says of each event: its email, kind and time.
fn kinds(timeline: &[EmailEvent]) -> Vec<(Id, EmailState, Timestamp)> {
    timeline.iter().map(|e| (e.email_id, e.kind, e.created_at)).collect()
}

/// The ids `emails` lists for `team_id` in `state` whose status still says so: an id
/// listed may be of an email that moved on since (the trait allows it), which reading
/// its status tells.
fn now_in(emails: &dyn EmailStore, team_id: Id, state: EmailState) -> Vec<Id> {
    let listed = emails.ids_in_state(team_id, state, None, 100).expect("ids in state");
    listed
        .into_iter()
        .filter(|id| {
            let status = emails.status(team_id, *id).expect("status");
            status.is_some_and(|s| s.last_event == state)
        })
        .collect()
}

/// What every [`EmailStore`] does: `ids` is where ids and times come from.
fn email_store_conformance(emails: &dyn EmailStore, ids: &Store, clock: &ManualClock) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let first = page(10, Cursor::Start);
    assert!(emails.get(team, ids.next_id()).expect("get").is_none());
    assert!(emails.status(team, ids.next_id()).expect("status").is_none());
    assert_eq!(emails.list(team, &first).expect("list"), (Vec::new(), false));
    assert!(emails.statuses(team, None, 10).expect("statuses").is_empty());
    for state in EmailState::ALL {
        assert!(
            emails
                .ids_in_state(team, state, None, 10)
                .expect("ids in state")
                .is_empty()
        );
    }
    assert!(emails.timeline(ids.next_id()).expect("timeline").is_empty());

    // Five emails (sent and scheduled by turns), each made a few milliseconds after the
    // last on the store's clock so that their ids' times differ, and another team's, in one change: none is
    // there until it is committed, then each is, whole, with its first event.
    let made: Vec<EmailRecord> = (0..5)
        .map(|n| {
            clock.advance(Duration::from_millis(3));
            let state = if n % 2 == 1 {
                EmailState::Scheduled
            } else {
                EmailState::Sent
            };
            email(ids, team, state, &format!("email-{n}"))
        })
        .collect();
    let theirs = email(ids, other, EmailState::Sent, "theirs");
    let mut change = Change::new();
    for one in made.iter().chain([&theirs]) {
        emails.create(&mut change, one, one.created_at).expect("create");
    }
    for one in &made {
        assert!(
            emails.get(team, one.id).expect("get").is_none(),
            "staged is not written"
        );
        assert!(emails.timeline(one.id).expect("timeline").is_empty());
    }
    assert!(emails.statuses(team, None, 10).expect("statuses").is_empty());
    emails.commit(change).expect("commit");
    for one in made.iter().chain([&theirs]) {
        assert_eq!(emails.get(one.team_id, one.id).expect("get").as_ref(), Some(one));
        assert_eq!(emails.status(one.team_id, one.id).expect("status"), Some(one.status()));
        assert_eq!(
            kinds(&emails.timeline(one.id).expect("timeline")),
            vec![(one.id, one.last_event, one.created_at)],
            "its first event, of its state, at its time"
        );
    }
    assert!(
        emails.get(other, made[0].id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert!(emails.status(other, made[0].id).expect("status").is_none());

    // Listed newest first, each with its status.
    pages_go_newest_first(
        |request| {
            let (found, more) = emails.list(team, request).expect("list");
            (ids_of(&found, |e| e.id), more)
        },
        &ids_of(&made, |e| e.id),
    );
    let newest_first: Vec<EmailRecord> = made.iter().rev().cloned().collect();
    assert_eq!(emails.list(team, &first).expect("list"), (newest_first.clone(), false));
    assert_eq!(emails.list(other, &first).expect("list"), (vec![theirs.clone()], false));

    // Statuses newest first, up to the limit, before an id or a time.
    let statuses = |before: Option<&[u8]>, limit| {
        let found = emails.statuses(team, before, limit).expect("statuses");
        ids_of(&found, |s| s.id)
    };
    let (m0, m1, m2, m3, m4) = (made[0].id, made[1].id, made[2].id, made[3].id, made[4].id);
    let their_id = theirs.id;
    assert_eq!(
        emails.statuses(team, None, 10).expect("statuses"),
        newest_first.iter().map(EmailRecord::status).collect::<Vec<_>>(),
        "whole statuses"
    );
    assert_eq!(statuses(None, 2), vec![m4, m3]);
    assert_eq!(statuses(Some(m3.as_bytes()), 10), vec![m2, m1, m0]);
    assert_eq!(statuses(Some(m3.as_bytes()), 1), vec![m2]);
    assert_eq!(statuses(Some(m0.as_bytes()), 10), Vec::<Id>::new());
    let at_m2 = m2.timestamp().expect("a time-ordered id");
    assert_eq!(
        statuses(Some(&time_bound(at_m2)), 10),
        vec![m1, m0],
        "before a time: made before it"
    );
    assert_eq!(
        emails.statuses(other, None, 10).expect("statuses"),
        vec![theirs.status()],
        "another team's own"
    );

    // The ids in a state, newest first, up to the limit, before an id or a time.
    let in_state =
        |state, before: Option<&[u8]>, limit| emails.ids_in_state(team, state, before, limit).expect("ids in state");
    assert_eq!(in_state(EmailState::Sent, None, 10), vec![m4, m2, m0]);
    assert_eq!(in_state(EmailState::Scheduled, None, 10), vec![m3, m1]);
    assert_eq!(in_state(EmailState::Sent, None, 1), vec![m4]);
    assert_eq!(in_state(EmailState::Sent, Some(m4.as_bytes()), 10), vec![m2, m0]);
    assert_eq!(in_state(EmailState::Sent, Some(&time_bound(at_m2)), 10), vec![m0]);
    assert!(in_state(EmailState::Delivered, None, 10).is_empty());
    assert_eq!(
        emails
            .ids_in_state(other, EmailState::Sent, None, 10)
            .expect("ids in state"),
        vec![their_id]
    );

    // Events, several emails' in one change: each lands on its timeline with its data and
    // time, and `last_event` moves as the one rule says; an event of lower precedence
    // (a late delay, a delivery after an open, a cancel after an outcome, a step back to
    // sent) is kept on the timeline and moves nothing. None of it shows before the commit.
    use EmailState::{Bounced, Canceled, Clicked, Delivered, DeliveryDelayed, Opened, Sent};
    let steps: [(usize, &[(EmailState, bool)]); 3] = [
        (
            0,
            &[
                (Delivered, true),
                (DeliveryDelayed, false),
                (Opened, true),
                (Delivered, false),
                (Clicked, true),
                (Sent, false),
            ],
        ),
        (
            1,
            &[(Sent, true), (DeliveryDelayed, true), (Canceled, true), (Sent, false)],
        ),
        (2, &[(Bounced, true), (Canceled, false), (DeliveryDelayed, false)]),
    ];
    let mut change = Change::new();
    let mut expected = Vec::new();
    for (n, events) in steps {
        let one = &made[n];
        let mut status = emails.status(team, one.id).expect("status").expect("an email");
        let mut timeline = vec![(one.id, one.last_event, one.created_at, Value::Null)];
        for (step, (kind, moves)) in events.iter().enumerate() {
            let before = status.last_event;
            let at = ids.now().saturating_add(Duration::from_millis(step as u64));
            let data = json!({ "step": step, "kind": kind.name() });
            let moved = emails
                .record_event(&mut change, &mut status, *kind, data.clone(), at)
                .expect("record event");
            assert_eq!(moved, *moves, "{before} then {kind}");
            assert_eq!(status.last_event, before.after(*kind), "{before} then {kind}");
            timeline.push((one.id, *kind, at, data));
        }
        emails.put_status(&mut change, &status).expect("put status");
        expected.push((status, timeline));
    }
    assert_eq!(
        expected.iter().map(|(s, _)| s.last_event).collect::<Vec<_>>(),
        vec![Clicked, Canceled, Bounced]
    );
    for (status, _) in &expected {
        let stored = emails.status(team, status.id).expect("status").expect("an email");
        assert_ne!(stored.last_event, status.last_event, "staged is not written");
        assert_eq!(emails.timeline(status.id).expect("timeline").len(), 1);
    }
    emails.commit(change).expect("commit");
    for (status, timeline) in &expected {
        assert_eq!(emails.status(team, status.id).expect("status").as_ref(), Some(status));
        let read = emails.get(team, status.id).expect("get").expect("an email");
        assert_eq!(read.last_event, status.last_event, "the record reads its status's");
        let found = emails.timeline(status.id).expect("timeline");
        assert_eq!(
            kinds(&found),
            timeline.iter().map(|t| (t.0, t.1, t.2)).collect::<Vec<_>>()
        );
        let data: Vec<&Value> = found.iter().skip(1).map(|e| &e.data).collect();
        assert_eq!(
            data,
            timeline.iter().skip(1).map(|t| &t.3).collect::<Vec<_>>(),
            "oldest first"
        );
    }
    assert_eq!(in_state(Clicked, None, 10), vec![m0], "found under its new state");
    assert_eq!(in_state(Canceled, None, 10), vec![m1]);
    assert_eq!(in_state(Bounced, None, 10), vec![m2]);
    assert_eq!(now_in(emails, team, Sent), vec![m4], "and no longer under its old one");
    assert_eq!(now_in(emails, team, EmailState::Scheduled), vec![m3]);
    for state in [Delivered, DeliveryDelayed, Opened] {
        assert!(now_in(emails, team, state).is_empty(), "{state}: passed through");
    }

    // A status rewritten (its attempt log, its opens) and a record rewritten (a new
    // schedule, its content expired) are read back; the record keeps its status's.
    let mut attempted = emails.status(team, m4).expect("status").expect("an email");
    attempted.attempts = vec![AttemptLog {
        at: ids.now(),
        recipients: vec!["ann@example.org".into()],
        host: Some("mx.example.org".into()),
        ip: Some("192.0.2.1".into()),
        source: None,
        tls: Some("TLSv1.3".into()),
        reply: "250 2.0.0 queued".into(),
    }];
    attempted.opened = true;
    let rescheduled = EmailRecord {
        scheduled_at: Some(ids.now().saturating_add(Duration::from_secs(7200))),
        html: None,
        text: None,
        content_expired: true,
        ..made[3].clone()
    };
    let mut change = Change::new();
    emails.put_status(&mut change, &attempted).expect("put status");
    emails.put_record(&mut change, &rescheduled).expect("put record");
    assert_eq!(
        emails.get(team, m3).expect("get").as_ref(),
        Some(&made[3]),
        "staged is not written"
    );
    assert!(
        emails
            .status(team, m4)
            .expect("status")
            .is_some_and(|s| s.attempts.is_empty())
    );
    emails.commit(change).expect("commit");
    assert_eq!(emails.status(team, m4).expect("status").as_ref(), Some(&attempted));
    let read = emails.get(team, m4).expect("get").expect("an email");
    assert_eq!(
        read.attempts, attempted.attempts,
        "the record reads its status's attempts"
    );
    assert_eq!(emails.get(team, m3).expect("get").as_ref(), Some(&rescheduled));
    assert_eq!(
        emails.status(team, m3).expect("status"),
        Some(made[3].status()),
        "its status stays"
    );
    let (listed, more) = emails.list(team, &first).expect("list");
    let each: Vec<EmailRecord> = [m4, m3, m2, m1, m0]
        .iter()
        .map(|id| emails.get(team, *id).expect("get").expect("an email"))
        .collect();
    assert_eq!((listed, more), (each, false), "listed as read, status and all");

    // Erasing the team a batch at a time answers each of its emails once, then none;
    // nothing of them is left, and another team's email stays whole.
    let mut erased = Vec::new();
    loop {
        let mut change = Change::new();
        let batch = emails.erase_team(&mut change, team, 2).expect("erase");
        if erased.is_empty() {
            assert!(emails.get(team, m0).expect("get").is_some(), "staged is not written");
        }
        emails.commit(change).expect("commit");
        assert!(batch.len() <= 2, "at most the limit: {batch:?}");
        if batch.is_empty() {
            break;
        }
        erased.extend(batch);
    }
    erased.sort();
    assert_eq!(erased, vec![m0, m1, m2, m3, m4], "each once");
    let mut change = Change::new();
    assert!(
        emails.erase_team(&mut change, team, 2).expect("erase").is_empty(),
        "none left"
    );
    emails.commit(change).expect("commit");
    for id in [m0, m1, m2, m3, m4] {
        assert!(emails.get(team, id).expect("get").is_none());
        assert!(emails.status(team, id).expect("status").is_none());
        assert!(emails.timeline(id).expect("timeline").is_empty());
    }
    assert_eq!(emails.list(team, &first).expect("list"), (Vec::new(), false));
    assert!(emails.statuses(team, None, 10).expect("statuses").is_empty());
    for state in EmailState::ALL {
        assert!(in_state(state, None, 10).is_empty(), "{state}");
    }
    assert_eq!(emails.get(other, their_id).expect("get").as_ref(), Some(&theirs));
    assert_eq!(emails.timeline(their_id).expect("timeline").len(), 1);
    assert_eq!(
        emails.statuses(other, None, 10).expect("statuses"),
        vec![theirs.status()]
    );
    assert_eq!(
        emails
            .ids_in_state(other, EmailState::Sent, None, 10)
            .expect("ids in state"),
        vec![their_id]
    );
}

/// Retention counts from the final outcome: an email armed at its outcome is due in
/// both queues at that time and not before; its content leaves first (the record says
/// so, its status stays), then the record goes whole with its timeline; another email,
/// not final, is never due.
fn retention_counts_from_the_final_outcome(emails: &dyn EmailStore, ids: &Store, clock: &ManualClock) {
    let team = ids.next_id();
    let done = email(ids, team, EmailState::Delivered, "done");
    let queued = email(ids, team, EmailState::Sent, "queued");
    let mut change = Change::new();
    emails.create(&mut change, &done, done.created_at).expect("create");
    emails.create(&mut change, &queued, queued.created_at).expect("create");
    let final_at = ids.now();
    emails.arm_final(&mut change, team, done.id, final_at);
    emails.commit(change).expect("commit");
    clock.advance(Duration::from_secs(1));

    let [records, content] = emails.expiries(Some(Duration::from_secs(7200)), Some(Duration::from_secs(600)));
    let before = Timestamp::from_millis(final_at.as_millis() - 1);
    for sweep in [&records, &content] {
        let queue = sweep.queue();
        assert!(
            queue.due(before, None, 10).expect("due").is_empty(),
            "{}: not before",
            sweep.kind()
        );
        let due = queue.due(ids.now(), None, 10).expect("due");
        assert_eq!(due.len(), 1, "{}: the final email alone: {due:?}", sweep.kind());
        assert_eq!(due[0].at, final_at, "{}: at its outcome", sweep.kind());
    }

    let due = content.queue().due(ids.now(), None, 10).expect("due");
    assert_eq!(content.expire(&due.iter().collect::<Vec<_>>()).expect("expire"), 1);
    let read = emails.get(team, done.id).expect("get").expect("the record stays");
    assert!(
        read.content_expired && read.html.is_none() && read.text.is_none(),
        "{read:?}"
    );
    assert_eq!(read.subject, done.subject);
    assert!(
        content.queue().due(ids.now(), None, 10).expect("due").is_empty(),
        "expired once"
    );
    assert_eq!(emails.status(team, done.id).expect("status"), Some(done.status()));

    let due = records.queue().due(ids.now(), None, 10).expect("due");
    assert_eq!(records.expire(&due.iter().collect::<Vec<_>>()).expect("expire"), 1);
    assert!(emails.get(team, done.id).expect("get").is_none(), "the record goes");
    assert!(
        emails.timeline(done.id).expect("timeline").is_empty(),
        "with its timeline"
    );
    assert!(records.queue().due(ids.now(), None, 10).expect("due").is_empty());
    assert_eq!(
        emails.get(team, queued.id).expect("get").as_ref(),
        Some(&queued),
        "not final, kept"
    );
}

#[test]
fn rocksdb_emails_keep_the_contract() {
    let (_dir, store, clock) = rocksdb_on_clock(1_700_000_000_000);
    let emails = RocksEmails::new(store.clone());
    email_store_conformance(&emails, &store, &clock);
    retention_counts_from_the_final_outcome(&emails, &store, &clock);
}

#[test]
fn postgres_emails_keep_the_contract() {
    let (_dir, store, clock) = rocksdb_on_clock(1_700_000_000_000);
    let emails = PostgresEmails::new(postgres(), store.clone());
    email_store_conformance(&emails, &store, &clock);
    retention_counts_from_the_final_outcome(&emails, &store, &clock);
}
