//! Emails (records, statuses, timelines, attempts, retention, and bodies kept only in
//! the spooled message) and broadcasts (markers and their emails' counts) copied and read
//! back through the PostgreSQL stores as the RocksDB ones show them.

use std::collections::BTreeMap;
use std::time::Duration;

use herald::broadcasts::{Broadcast, Counts, Outcome, Recipient, Status};
use herald::emails::record::{AttemptLog, Tag};
use herald::emails::{Email, EmailRecord, EmailState, EmailStore, Mailbox, Source};
use herald::storage::page::{Cursor, PageRequest};
use herald::storage::{Change, Node, NodeOptions};
use herald_queue::{Batch, Id, NewMessage, Store, Timestamp};
use serde_json::json;

use crate::{Copying, count};

/// Every item in one page.
fn all() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

/// A new email of `team_id` at `state`, its bodies in the record.
fn email(ids: &Store, team_id: Id, state: EmailState, subject: &str) -> EmailRecord {
    EmailRecord {
        id: ids.next_id(),
        team_id,
        api_key_id: Some(ids.next_id()),
        from: "Shop <news@shop.example.com>".into(),
        to: vec!["ann@example.org".into()],
        cc: vec!["bob@example.org".into()],
        bcc: Vec::new(),
        reply_to: vec!["help@shop.example.com".into()],
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
        topic_id: Some(ids.next_id()),
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: false,
        text_derived: false,
        line_feeds: false,
        broadcast_id: None,
        request_log_id: Some(ids.next_id()),
    }
}

/// An attempt to deliver, ended at `at`.
fn attempt(at: Timestamp, reply: &str) -> AttemptLog {
    AttemptLog {
        at,
        recipients: vec!["ann@example.org".into()],
        host: Some("mx.example.org".into()),
        ip: Some("192.0.2.1".into()),
        source: Some("198.51.100.7".into()),
        tls: Some("TLSv1.3".into()),
        reply: reply.into(),
    }
}

/// Records `events` on the email `id` of `team_id`, and `attempts` and an open on its
/// status, in one change, as delivery and tracking do.
fn happened(emails: &dyn EmailStore, team_id: Id, id: Id, events: &[EmailState], attempts: Vec<AttemptLog>) {
    let mut change = Change::new();
    let mut status = emails.status(team_id, id).expect("status").expect("an email");
    for (n, kind) in events.iter().enumerate() {
        let data = json!({ "step": n, "kind": kind.name() });
        let at = status
            .id
            .timestamp()
            .expect("time")
            .saturating_add(Duration::from_secs(n as u64 + 1));
        emails
            .record_event(&mut change, &mut status, *kind, data, at)
            .expect("record event");
    }
    status.attempts = attempts;
    status.opened = events.contains(&EmailState::Opened);
    emails.put_status(&mut change, &status).expect("put status");
    emails.commit(change).expect("commit");
}

/// An email whose html and text are kept only in the message its node's spool retains,
/// as submission keeps them: the record, and the message spooled with it.
fn kept_in_the_spool(copying: &Copying, team_id: Id) -> (EmailRecord, String, String) {
    let ids = copying.ids();
    let html = "<p>Hello <a href=\"https://shop.example.com/a?b=1&c=2\">there</a></p>\n".to_owned();
    let text = "Hello there\nGrüße, 10 €\n".to_owned();
    let given = Email {
        from: Mailbox::parse("Shop <news@shop.example.com>").expect("from"),
        to: vec![Mailbox::parse("ann@example.org").expect("to")],
        cc: Vec::new(),
        bcc: Vec::new(),
        reply_to: Vec::new(),
        subject: "kept".into(),
        html: Some(html.clone()),
        text: Some(text.clone()),
        headers: Vec::new(),
        attachments: Vec::new(),
        tags: Vec::new(),
        scheduled_at: None,
        template: None,
        topic_id: None,
        unsubscribe: false,
        broadcast_id: None,
    };
    let mut record = email(ids, team_id, EmailState::Sent, "kept");
    let raw = herald::emails::mime::build(&given, record.id, "mx.shop.example.com", ids.now()).expect("built");
    let reading = herald::emails::content::holds(&raw, Some(&html), Some(&text)).expect("the message holds them");
    record.html = None;
    record.text = None;
    record.content_in_message = true;
    record.text_derived = reading.text_derived;
    record.line_feeds = reading.line_feeds;
    record.size = raw.len() as u64;
    let mut change = Change::new();
    copying
        .local
        .emails
        .create(&mut change, &record, record.created_at)
        .expect("create");
    copying.local.emails.commit(change).expect("commit");
    let message = NewMessage {
        id: record.id,
        team: team_id.to_string(),
        sender: "bounces@shop.example.com".into(),
        recipients: record.to.clone(),
        metadata: BTreeMap::new(),
        not_before: None,
        raw,
        retain: true,
    };
    copying.spool.enqueue(message, Batch::new()).wait().expect("spooled");
    (record, html, text)
}

/// The due times of a sweep's queue up to `horizon`, with the email each names.
fn due(sweep: &dyn herald::storage::expiry::Sweep, horizon: Timestamp) -> Vec<(Timestamp, Vec<u8>)> {
    let queue = sweep.queue();
    let found = queue.due(horizon, None, 100).expect("due");
    found.into_iter().map(|due| (due.at, due.key)).collect()
}

/// Emails in every shape a node keeps them (delivered and opened with attempts and a
/// timeline, scheduled, bounced, content expired, bodies only in the spooled message)
/// come out of PostgreSQL as the node showed them, with their bodies for any node, and
/// with the retention they were armed with still due when it was.
#[test]
fn emails_are_copied_with_statuses_timelines_attempts_bodies_and_retention() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, other) = (ids.next_id(), ids.next_id());
    let delivered = email(ids, team, EmailState::Sent, "delivered");
    let scheduled = email(ids, team, EmailState::Scheduled, "scheduled");
    let bounced = email(ids, team, EmailState::Sent, "bounced");
    let theirs = email(ids, other, EmailState::Sent, "theirs");
    let mut change = Change::new();
    for one in [&delivered, &scheduled, &bounced, &theirs] {
        local.emails.create(&mut change, one, one.created_at).expect("create");
    }
    local.emails.commit(change).expect("commit");
    let (kept, html, text) = kept_in_the_spool(&copying, team);
    let now = ids.now();
    happened(
        &*local.emails,
        team,
        delivered.id,
        &[EmailState::DeliveryDelayed, EmailState::Delivered, EmailState::Opened],
        vec![attempt(now, "451 try later"), attempt(now, "250 2.0.0 queued")],
    );
    happened(
        &*local.emails,
        team,
        bounced.id,
        &[EmailState::Bounced],
        vec![attempt(now, "550 5.1.1 no such user")],
    );
    // Both final: armed, the delivered one's content expired already on the node.
    let (delivered_final, bounced_final) = (Timestamp::from_millis(1_000), Timestamp::from_millis(2_000));
    let mut change = Change::new();
    local.emails.arm_final(&mut change, team, delivered.id, delivered_final);
    local.emails.arm_final(&mut change, team, bounced.id, bounced_final);
    local.emails.commit(change).expect("commit");
    let [_, content] = local.emails.expiries(None, Some(Duration::from_millis(1)));
    let first = content
        .queue()
        .due(Timestamp::from_millis(1_500), None, 10)
        .expect("due");
    assert_eq!(first.len(), 1, "the delivered one's content");
    content.expire(&first.iter().collect::<Vec<_>>()).expect("expire");
    let expired = local.emails.get(team, delivered.id).expect("get").expect("an email");
    assert!(expired.content_expired && expired.html.is_none(), "{expired:?}");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "emails"), 5);
    assert_eq!(count(&copied, "delivery attempts"), 3);
    assert_eq!(
        count(&copied, "email events"),
        5 + 3 + 1,
        "a first event each, then those recorded"
    );

    // Each email reads as the node read it, status, attempts, timeline and all; the one
    // whose bodies were in the message has them in its row.
    let mut with_bodies = local.emails.get(team, kept.id).expect("get").expect("an email");
    assert_eq!((with_bodies.html.as_ref(), with_bodies.text.as_ref()), (None, None));
    with_bodies.html = Some(html);
    with_bodies.text = Some(text);
    for (team_id, id) in [
        (team, delivered.id),
        (team, scheduled.id),
        (team, bounced.id),
        (other, theirs.id),
    ] {
        assert_eq!(
            shared.emails.get(team_id, id).expect("get"),
            local.emails.get(team_id, id).expect("get"),
        );
    }
    assert_eq!(
        shared.emails.get(team, kept.id).expect("get"),
        Some(with_bodies.clone())
    );
    for (team_id, id) in [
        (team, delivered.id),
        (team, scheduled.id),
        (team, bounced.id),
        (team, kept.id),
        (other, theirs.id),
    ] {
        let status = shared.emails.status(team_id, id).expect("status");
        assert_eq!(status, local.emails.status(team_id, id).expect("status"), "{id}");
        let timeline = shared.emails.timeline(id).expect("timeline");
        assert_eq!(timeline, local.emails.timeline(id).expect("timeline"), "{id}");
    }
    let opened = shared
        .emails
        .status(team, delivered.id)
        .expect("status")
        .expect("an email");
    assert!(opened.opened && opened.last_event == EmailState::Opened && opened.attempts.len() == 2);
    let (listed, more) = shared.emails.list(team, &all()).expect("list");
    let (mut expected, _) = local.emails.list(team, &all()).expect("list");
    for one in &mut expected {
        if one.id == kept.id {
            *one = with_bodies.clone();
        }
    }
    assert_eq!((listed, more), (expected, false));
    for state in EmailState::ALL {
        assert_eq!(
            shared.emails.ids_in_state(team, state, None, 10).expect("ids in state"),
            local.emails.ids_in_state(team, state, None, 10).expect("ids in state"),
            "{state}"
        );
    }
    assert_eq!(
        shared.emails.statuses(team, None, 10).expect("statuses"),
        local.emails.statuses(team, None, 10).expect("statuses")
    );

    // Another node shows the bodies too, though the message is not in its spool.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let (_node, their_spool) = Node::open(NodeOptions {
        path: elsewhere.path().join("spool"),
        clock: std::sync::Arc::new(herald_queue::SystemClock),
        min_free_space: 0,
        commit_queue_max: 16,
    })
    .expect("another node");
    let mut shown = shared.emails.get(team, kept.id).expect("get").expect("an email");
    herald::emails::content::fill(&their_spool, &mut shown).expect("fill");
    assert_eq!(shown, with_bodies, "shown whole, not as expired");

    // Retention: both records due at their outcomes; only the bounced one's content (the
    // delivered one's went on the node); the others not at all.
    let [records, content] = shared.emails.expiries(None, Some(Duration::from_millis(1)));
    let key = |id: Id| [team.as_bytes().as_slice(), id.as_bytes()].concat();
    assert_eq!(
        due(&*records, ids.now()),
        vec![(delivered_final, key(delivered.id)), (bounced_final, key(bounced.id))]
    );
    assert_eq!(due(&*content, ids.now()), vec![(bounced_final, key(bounced.id))]);
    let gone = content.queue().due(ids.now(), None, 10).expect("due");
    content.expire(&gone.iter().collect::<Vec<_>>()).expect("expire");
    let read = shared.emails.get(team, bounced.id).expect("get").expect("an email");
    assert!(read.content_expired && read.html.is_none() && read.text.is_none());
}

/// A broadcast's draft or sending state, its contacts' markers and its emails' counts by
/// status (counted as they moved on the node, not again) come out of PostgreSQL as the
/// node kept them, with the emails taken back by a cancel.
#[test]
fn broadcasts_are_copied_with_markers_and_their_emails_counts() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let team = ids.next_id();
    let broadcast = |name: &str, status: Status| Broadcast {
        id: ids.next_id(),
        team_id: team,
        name: name.into(),
        segment_id: ids.next_id(),
        from: "news@shop.example.com".into(),
        subject: format!("About {name}"),
        reply_to: vec!["help@shop.example.com".into()],
        html: Some("<p>Hello</p>".into()),
        text: Some("Hello".into()),
        mjml: None,
        preview_text: Some("Hi".into()),
        topic_id: Some(ids.next_id()),
        status,
        created_at: ids.now(),
        scheduled_at: None,
        sent_at: (status == Status::Sending).then(|| ids.now()),
        finished_at: None,
        cursor: (status == Status::Sending).then(|| ids.next_id()),
        counts: Counts {
            total: 4,
            sent: 3,
            unsubscribed: 1,
            suppressed: 0,
            failed: 0,
            canceled: 1,
        },
        counted: status == Status::Sending,
    };
    let sending = broadcast("sending", Status::Sending);
    let draft = broadcast("draft", Status::Draft);
    local.broadcasts.put(&sending).expect("put");
    local.broadcasts.put(&draft).expect("put");
    let emails: Vec<EmailRecord> = (0..3)
        .map(|n| EmailRecord {
            broadcast_id: Some(sending.id),
            source: Source::Broadcast,
            ..email(ids, team, EmailState::Sent, &format!("b{n}"))
        })
        .collect();
    let mut markers: Vec<Recipient> = emails
        .iter()
        .map(|one| Recipient {
            contact_id: ids.next_id(),
            email: one.to[0].clone(),
            outcome: Outcome::Sent,
            email_id: Some(one.id),
            reason: None,
        })
        .collect();
    markers.push(Recipient {
        contact_id: ids.next_id(),
        email: "gone@example.org".into(),
        outcome: Outcome::Unsubscribed,
        email_id: None,
        reason: Some("unsubscribed".into()),
    });
    let mut change = Change::new();
    for one in &emails {
        local.emails.create(&mut change, one, one.created_at).expect("create");
    }
    for marker in &markers {
        local
            .broadcasts
            .stage_recipient(&mut change, &sending, marker)
            .expect("marker");
    }
    local.broadcasts.count_canceled(&mut change, team, sending.id);
    local.emails.commit(change).expect("commit");
    happened(&*local.emails, team, emails[0].id, &[EmailState::Delivered], Vec::new());
    happened(&*local.emails, team, emails[1].id, &[EmailState::Bounced], Vec::new());
    let states = local.broadcasts.states(team, sending.id).expect("states");
    assert_eq!(
        states,
        BTreeMap::from([
            (EmailState::Sent, 1),
            (EmailState::Delivered, 1),
            (EmailState::Bounced, 1)
        ])
    );

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "broadcasts"), 2);
    assert_eq!(count(&copied, "broadcast recipients"), 4);
    assert_eq!(count(&copied, "emails"), 3);

    for one in [&sending, &draft] {
        assert_eq!(shared.broadcasts.get(team, one.id).expect("get").as_ref(), Some(one));
    }
    assert_eq!(
        shared.broadcasts.page(team, &all()).expect("page"),
        local.broadcasts.page(team, &all()).expect("page")
    );
    let queued: Vec<Id> = shared
        .broadcasts
        .queued()
        .expect("queued")
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(queued, vec![sending.id], "the worker takes the sending one up");
    assert_eq!(
        shared.broadcasts.recipients(&sending, None, 10).expect("markers"),
        local.broadcasts.recipients(&sending, None, 10).expect("markers")
    );
    assert_eq!(
        shared.broadcasts.recipients(&sending, None, 10).expect("markers").len(),
        4
    );
    assert_eq!(
        shared
            .broadcasts
            .recipient(&sending, markers[3].contact_id)
            .expect("marker"),
        Some(markers[3].clone())
    );
    assert_eq!(shared.broadcasts.states(team, sending.id).expect("states"), states);
    assert_eq!(shared.broadcasts.canceled(team, sending.id).expect("canceled"), 1);
    assert!(shared.broadcasts.states(team, draft.id).expect("states").is_empty());

    // Counts move on from there as emails do on the database.
    let mut change = Change::new();
    let mut status = shared
        .emails
        .status(team, emails[2].id)
        .expect("status")
        .expect("an email");
    shared
        .emails
        .record_event(&mut change, &mut status, EmailState::Delivered, json!({}), ids.now())
        .expect("record event");
    shared.emails.put_status(&mut change, &status).expect("put status");
    shared.emails.commit(change).expect("commit");
    assert_eq!(
        shared.broadcasts.states(team, sending.id).expect("states"),
        BTreeMap::from([(EmailState::Delivered, 2), (EmailState::Bounced, 1)])
    );
}
