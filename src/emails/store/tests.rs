use super::*;
use crate::broadcasts::BroadcastStore;
use crate::emails::record::Source;

/// A new email of `team` at `state`, one of `broadcast`'s when given.
fn email(store: &Store, team: Id, state: EmailState, broadcast: Option<Id>) -> EmailRecord {
    EmailRecord {
        id: store.next_id(),
        team_id: team,
        api_key_id: None,
        from: "a@example.com".into(),
        to: vec!["b@example.org".into()],
        cc: Vec::new(),
        bcc: Vec::new(),
        reply_to: Vec::new(),
        subject: "Hi".into(),
        html: None,
        text: Some("hi".into()),
        tags: Vec::new(),
        created_at: store.now(),
        scheduled_at: None,
        message_id: "<x@example.com>".into(),
        last_event: state,
        size: 10,
        source: Source::Api,
        template: None,
        topic_id: None,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message: false,
        text_derived: false,
        line_feeds: false,
        broadcast_id: broadcast,
        request_log_id: None,
    }
}

fn created(emails: &RocksEmails, record: &EmailRecord) {
    let mut change = Change::new();
    emails.create(&mut change, record, record.created_at).expect("create");
    emails.commit(change).expect("commit");
}

#[test]
fn an_email_is_found_under_its_current_status_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
    let emails = RocksEmails::new(store.clone());
    let team = store.next_id();
    let (a, b) = (
        email(&store, team, EmailState::Sent, None),
        email(&store, team, EmailState::Sent, None),
    );
    created(&emails, &a);
    created(&emails, &b);
    let mut status = emails.status(team, a.id).expect("read").expect("status");
    let mut change = Change::new();
    for kind in [EmailState::Delivered, EmailState::Opened] {
        assert!(
            emails
                .record_event(&mut change, &mut status, kind, Value::Null, store.now())
                .expect("event")
        );
    }
    emails.put_status(&mut change, &status).expect("put");
    emails.commit(change).expect("commit");
    let ids = |state| emails.ids_in_state(team, state, None, 10).expect("page");
    assert_eq!(ids(EmailState::Sent), vec![b.id]);
    assert_eq!(ids(EmailState::Opened), vec![a.id]);
    assert!(ids(EmailState::Delivered).is_empty());
    assert_eq!(
        emails.get(team, a.id).expect("read").expect("email").last_event,
        EmailState::Opened
    );
    let kinds: Vec<_> = emails
        .timeline(a.id)
        .expect("timeline")
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, [EmailState::Sent, EmailState::Delivered, EmailState::Opened]);

    let c = email(&store, team, EmailState::Sent, None);
    created(&emails, &c);
    assert_eq!(ids(EmailState::Sent), vec![c.id, b.id], "newest first");
    let before = c.id;
    assert_eq!(
        emails
            .ids_in_state(team, EmailState::Sent, Some(before.as_bytes()), 10)
            .expect("page"),
        vec![b.id]
    );
    let listed: Vec<_> = emails
        .statuses(team, None, 10)
        .expect("statuses")
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![c.id, b.id, a.id]);
    assert!(
        emails.statuses(store.next_id(), None, 10).expect("statuses").is_empty(),
        "another team's"
    );

    let mut batch = Batch::new();
    erase(&store, &EmailRecord::key(team, a.id), &mut batch).expect("erase");
    store.commit(batch).wait().expect("commit");
    assert!(ids(EmailState::Opened).is_empty());
    assert!(emails.get(team, a.id).expect("read").is_none());
    assert!(emails.timeline(a.id).expect("timeline").is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever events arrive, in whatever order and however split across writes, the
    /// status index holds the email under its `last_event` alone, its broadcast counts it
    /// once, in that status, and the record read back says the same.
    #[test]
    fn the_index_and_the_broadcast_counts_follow_last_event(
        first in proptest::sample::select(EmailState::ALL.to_vec()),
        events in proptest::collection::vec(
            (proptest::sample::select(EmailState::ALL.to_vec()), proptest::bool::ANY),
            0..24,
        ),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
        let emails = RocksEmails::new(store.clone());
        let (team, broadcast) = (store.next_id(), store.next_id());
        let record = email(&store, team, first, Some(broadcast));
        created(&emails, &record);
        let mut status = emails.status(team, record.id).expect("read").expect("status");
        let mut change = Change::new();
        for (kind, commit_now) in events {
            let before = status.last_event;
            let moved = emails.record_event(&mut change, &mut status, kind, Value::Null, store.now()).expect("event");
            proptest::prop_assert_eq!(status.last_event, before.after(kind));
            proptest::prop_assert_eq!(moved, before != status.last_event);
            if commit_now {
                emails.put_status(&mut change, &status).expect("put");
                emails.commit(std::mem::take(&mut change)).expect("commit");
            }
        }
        emails.put_status(&mut change, &status).expect("put");
        emails.commit(change).expect("commit");
        let last_event = status.last_event;
        for state in EmailState::ALL {
            let listed = emails.ids_in_state(team, state, None, 10).expect("page");
            let expected = if state == last_event { vec![record.id] } else { Vec::new() };
            proptest::prop_assert_eq!(listed, expected, "{:?}", state);
        }
        let read = emails.get(team, record.id).expect("read").expect("email");
        proptest::prop_assert_eq!(read.last_event, last_event);
        let counts = crate::broadcasts::RocksBroadcasts::new(store)
            .states(team, broadcast)
            .expect("counts");
        proptest::prop_assert_eq!(counts.into_iter().collect::<Vec<_>>(), vec![(last_event, 1)]);
    }
}
