//! What every [`BroadcastStore`] does, run on the RocksDB one and the PostgreSQL one: broadcasts are kept and
//! paged by team, the worker's queue holds exactly those scheduled or sending, a draft is
//! deleted, contacts' markers are staged with the change that commits them and read back
//! in contact order, cancels are counted, and erasing a team leaves others' broadcasts;
//! with the email store of the same backend, a broadcast's emails are counted in the
//! status they are in now.

use herald::broadcasts::{
    Broadcast, BroadcastStore, Counts, Outcome, PostgresBroadcasts, Recipient, RocksBroadcasts, Status,
};
use herald::storage::Change;
use herald_queue::{Id, Store};

use crate::conformance::{ids_of, pages_go_newest_first, rocksdb};

/// A draft of `team_id`; `ids` is where ids and times come from.
fn draft(ids: &Store, team_id: Id, name: &str) -> Broadcast {
    Broadcast {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        segment_id: ids.next_id(),
        from: "news@example.com".into(),
        subject: format!("About {name}"),
        reply_to: Vec::new(),
        html: Some("<p>Hello</p>".into()),
        text: None,
        mjml: None,
        preview_text: None,
        topic_id: None,
        status: Status::Draft,
        created_at: ids.now(),
        scheduled_at: None,
        sent_at: None,
        finished_at: None,
        cursor: None,
        counts: Counts::default(),
        counted: true,
    }
}

/// The marker of `contact_id`, whose email was `email_id`.
fn marker(contact_id: Id, email_id: Option<Id>) -> Recipient {
    Recipient {
        contact_id,
        email: format!("{contact_id}@example.org"),
        outcome: if email_id.is_some() {
            Outcome::Sent
        } else {
            Outcome::Unsubscribed
        },
        email_id,
        reason: None,
    }
}

/// The ids of the queued broadcasts of `team_id`, in the queue's order.
fn queued(broadcasts: &dyn BroadcastStore, team_id: Id) -> Vec<Id> {
    let all = broadcasts.queued().expect("queued");
    all.iter().filter(|b| b.team_id == team_id).map(|b| b.id).collect()
}

/// What every [`BroadcastStore`] does: `ids` is where ids and times come from.
fn broadcast_store_conformance(broadcasts: &dyn BroadcastStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    assert_eq!(broadcasts.get(team, ids.next_id()).expect("get"), None);
    assert!(queued(broadcasts, team).is_empty());

    // Kept as written, read by its own team only, paged newest first.
    let made: Vec<Broadcast> = (0..5).map(|n| draft(ids, team, &format!("b{n}"))).collect();
    for one in &made {
        broadcasts.put(one).expect("put");
    }
    let theirs = draft(ids, other, "theirs");
    broadcasts.put(&theirs).expect("put");
    assert_eq!(broadcasts.get(team, made[0].id).expect("get"), Some(made[0].clone()));
    assert_eq!(
        broadcasts.get(other, made[0].id).expect("get"),
        None,
        "not another team's"
    );
    pages_go_newest_first(
        |request| {
            let (page, more) = broadcasts.page(team, request).expect("page");
            (ids_of(&page, |b| b.id), more)
        },
        &ids_of(&made, |b| b.id),
    );

    // The queue holds the scheduled and the sending, oldest first, and lets go of one
    // that is sent or canceled.
    assert!(queued(broadcasts, team).is_empty(), "drafts are not queued");
    let mut sending = made[1].clone();
    sending.status = Status::Sending;
    broadcasts.put(&sending).expect("put");
    let mut scheduled = made[3].clone();
    scheduled.status = Status::Scheduled;
    scheduled.scheduled_at = Some(ids.now());
    let mut change = Change::new();
    broadcasts.stage(&mut change, &scheduled).expect("stage");
    assert_eq!(queued(broadcasts, team), vec![sending.id], "staged is not written");
    broadcasts.commit(change).expect("commit");
    assert_eq!(queued(broadcasts, team), vec![sending.id, scheduled.id]);
    let found = broadcasts.queued().expect("queued");
    assert!(found.contains(&scheduled), "read whole: {found:?}");
    sending.status = Status::Sent;
    broadcasts.put(&sending).expect("put");
    scheduled.status = Status::Canceled;
    broadcasts.put(&scheduled).expect("put");
    assert!(queued(broadcasts, team).is_empty(), "sent and canceled leave the queue");

    // Markers: staged with a change, read one by one and in contact order after a contact.
    let contacts: Vec<Id> = (0..5).map(|_| ids.next_id()).collect();
    let markers: Vec<Recipient> = contacts
        .iter()
        .enumerate()
        .map(|(n, &c)| marker(c, (n % 2 == 0).then(|| ids.next_id())))
        .collect();
    let mut change = Change::new();
    for one in &markers {
        broadcasts.stage_recipient(&mut change, &sending, one).expect("stage");
    }
    assert_eq!(broadcasts.recipient(&sending, contacts[0]).expect("read"), None);
    broadcasts.commit(change).expect("commit");
    assert_eq!(
        broadcasts.recipient(&sending, contacts[2]).expect("read"),
        Some(markers[2].clone())
    );
    assert_eq!(
        broadcasts.recipient(&made[0], contacts[2]).expect("read"),
        None,
        "another broadcast's contact"
    );
    assert_eq!(broadcasts.recipients(&sending, None, 10).expect("list"), markers);
    assert_eq!(
        broadcasts.recipients(&sending, None, 2).expect("list"),
        markers[..2].to_vec()
    );
    assert_eq!(
        broadcasts.recipients(&sending, Some(contacts[1]), 10).expect("list"),
        markers[2..].to_vec()
    );
    assert!(broadcasts.recipients(&made[0], None, 10).expect("list").is_empty());

    // Cancels are counted per broadcast once committed.
    assert_eq!(broadcasts.canceled(team, scheduled.id).expect("count"), 0);
    let mut change = Change::new();
    for _ in 0..3 {
        broadcasts.count_canceled(&mut change, team, scheduled.id);
    }
    broadcasts.commit(change).expect("commit");
    assert_eq!(broadcasts.canceled(team, scheduled.id).expect("count"), 3);
    assert_eq!(broadcasts.canceled(team, sending.id).expect("count"), 0);
    assert!(broadcasts.states(team, sending.id).expect("states").is_empty());

    // A draft is deleted; a queued one's deletion takes it out of the queue too.
    broadcasts.delete(&made[0]).expect("delete");
    assert_eq!(broadcasts.get(team, made[0].id).expect("get"), None);
    let mut queued_then_deleted = made[4].clone();
    queued_then_deleted.status = Status::Sending;
    broadcasts.put(&queued_then_deleted).expect("put");
    broadcasts.delete(&queued_then_deleted).expect("delete");
    assert!(queued(broadcasts, team).is_empty());

    // Erasing the team takes its broadcasts, markers and counts, and none of another's.
    let mut their_sending = theirs.clone();
    their_sending.status = Status::Sending;
    broadcasts.put(&their_sending).expect("put");
    let mut change = Change::new();
    broadcasts
        .stage_recipient(&mut change, &their_sending, &marker(contacts[0], None))
        .expect("stage");
    broadcasts.count_canceled(&mut change, other, their_sending.id);
    broadcasts.commit(change).expect("commit");
    let mut queued_at_erasure = made[2].clone();
    queued_at_erasure.status = Status::Sending;
    broadcasts.put(&queued_at_erasure).expect("put");
    while broadcasts.erase_team(team).expect("erase") {}
    let (page, more) = broadcasts
        .page(
            team,
            &crate::conformance::page(10, herald::storage::page::Cursor::Start),
        )
        .expect("page");
    assert!(page.is_empty() && !more, "{page:?}");
    assert!(broadcasts.recipients(&sending, None, 10).expect("list").is_empty());
    assert_eq!(broadcasts.canceled(team, scheduled.id).expect("count"), 0);
    assert!(
        queued(broadcasts, team).is_empty(),
        "an erased team's broadcast is not worked"
    );
    assert_eq!(
        broadcasts.get(other, theirs.id).expect("get"),
        Some(their_sending.clone())
    );
    assert_eq!(queued(broadcasts, other), vec![their_sending.id]);
    assert_eq!(broadcasts.recipients(&their_sending, None, 10).expect("list").len(), 1);
    assert_eq!(broadcasts.canceled(other, their_sending.id).expect("count"), 1);
}

#[test]
fn rocksdb_broadcasts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    broadcast_store_conformance(&RocksBroadcasts::new(store.clone()), &store);
}

#[test]
fn postgres_broadcasts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    broadcast_store_conformance(
        &PostgresBroadcasts::new(crate::conformance::postgres(), store.clone()),
        &store,
    );
}

/// A broadcast's emails, made and moved through `emails`, are counted by `broadcasts` in
/// the status each is in now; another broadcast's are not.
fn emails_are_counted_in_their_status_now(
    broadcasts: &dyn BroadcastStore,
    emails: &dyn herald::emails::EmailStore,
    ids: &Store,
) {
    use herald::emails::{EmailRecord, EmailState, Source};
    let team = ids.next_id();
    let (one, other) = (draft(ids, team, "one"), draft(ids, team, "other"));
    broadcasts.put(&one).expect("put");
    broadcasts.put(&other).expect("put");
    let email = |broadcast: Id| EmailRecord {
        id: ids.next_id(),
        team_id: team,
        api_key_id: None,
        from: "news@shop.example.com".into(),
        to: vec!["ann@example.org".into()],
        cc: Vec::new(),
        bcc: Vec::new(),
        reply_to: Vec::new(),
        subject: "News".into(),
        html: Some("<p>News</p>".into()),
        text: None,
        tags: Vec::new(),
        created_at: ids.now(),
        scheduled_at: None,
        message_id: "<news@shop.example.com>".into(),
        last_event: EmailState::Sent,
        size: 100,
        source: Source::Broadcast,
        template: None,
        topic_id: None,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: false,
        text_derived: false,
        line_feeds: false,
        broadcast_id: Some(broadcast),
        request_log_id: None,
    };
    let made: Vec<EmailRecord> = (0..3).map(|_| email(one.id)).collect();
    let theirs = email(other.id);
    let mut change = Change::new();
    for record in made.iter().chain([&theirs]) {
        emails.create(&mut change, record, record.created_at).expect("create");
    }
    emails.commit(change).expect("commit");
    let counted = |broadcast: Id| broadcasts.states(team, broadcast).expect("states");
    assert_eq!(counted(one.id), [(EmailState::Sent, 3)].into());
    let mut change = Change::new();
    for (record, kind) in made.iter().zip([EmailState::Delivered, EmailState::Bounced]) {
        let mut status = emails.status(team, record.id).expect("status").expect("an email");
        emails
            .record_event(&mut change, &mut status, kind, serde_json::Value::Null, ids.now())
            .expect("record");
        emails.put_status(&mut change, &status).expect("put status");
    }
    emails.commit(change).expect("commit");
    assert_eq!(
        counted(one.id),
        [
            (EmailState::Sent, 1),
            (EmailState::Delivered, 1),
            (EmailState::Bounced, 1)
        ]
        .into(),
        "each in the status it is in now, none left where it was"
    );
    assert_eq!(counted(other.id), [(EmailState::Sent, 1)].into());
}

#[test]
fn rocksdb_broadcast_emails_are_counted() {
    let (_dir, store) = rocksdb();
    emails_are_counted_in_their_status_now(
        &RocksBroadcasts::new(store.clone()),
        &herald::emails::RocksEmails::new(store.clone()),
        &store,
    );
}

#[test]
fn postgres_broadcast_emails_are_counted() {
    let (_dir, store) = rocksdb();
    let db = crate::conformance::postgres();
    emails_are_counted_in_their_status_now(
        &PostgresBroadcasts::new(db.clone(), store.clone()),
        &herald::emails::PostgresEmails::new(db, store.clone()),
        &store,
    );
}
