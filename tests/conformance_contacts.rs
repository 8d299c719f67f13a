//! [`ContactStore`] and [`AudienceStore`] as contracts: the suites any implementation
//! must pass, run here against the RocksDB one (one [`RocksContacts`] keeps both) on a
//! real store in a temp directory. Contacts by id and by address, pages of a team's and
//! of a segment's, their count and import chunks; segments, topics, property
//! definitions, imports and the rows an import refused. A third suite covers what one
//! trait writes and the other reads: an import chunk's progress and refused rows, and a
//! deleted segment's membership.

#[path = "util/conformance.rs"]
mod conformance;

use std::collections::BTreeMap;

use conformance::{ids_of, in_outbox, page, pages_go_newest_first, rocksdb};
use herald::contacts::imports::{Columns, ContactImport, ImportCounts, ImportError, ImportStatus, OnConflict};
use herald::contacts::properties::PropertyType;
use herald::contacts::topics::Visibility;
use herald::contacts::{
    AudienceStore, Contact, ContactProperty, ContactStore, RocksContacts, Segment, Subscription, Topic, TopicChoice,
};
use herald::events::{Event, EventKind};
use herald::storage::Change;
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store};

/// A new contact of `team_id` at `email`, in `segments`.
fn contact(ids: &Store, team_id: Id, email: &str, segments: &[Id]) -> Contact {
    Contact {
        id: ids.next_id(),
        team_id,
        email: email.into(),
        first_name: Some("Ada".into()),
        last_name: None,
        unsubscribed: false,
        created_at: ids.now(),
        updated_at: ids.now(),
        segments: segments.to_vec(),
        topics: Vec::new(),
        properties: BTreeMap::new(),
    }
}

/// An event of `kind` about `contact`.
fn event(ids: &Store, contact: &Contact, kind: EventKind) -> Event {
    Event {
        id: ids.next_id(),
        team_id: contact.team_id,
        kind,
        created_at: ids.now(),
        data: contact.event_json(),
    }
}

/// A new import of `team_id`, waiting for the worker.
fn import(ids: &Store, team_id: Id) -> ContactImport {
    ContactImport {
        id: ids.next_id(),
        team_id,
        status: ImportStatus::Queued,
        created_at: ids.now(),
        completed_at: None,
        counts: ImportCounts::default(),
        columns: Columns {
            email: 0,
            first_name: Some(1),
            last_name: None,
            unsubscribed: None,
            properties: Vec::new(),
        },
        on_conflict: OnConflict::Upsert,
        segments: Vec::new(),
        topics: Vec::new(),
        offset: 32,
        line: 2,
        failure: None,
    }
}

/// The row `row` refused, on the line after it (the header is line 1).
fn refused(row: u64) -> ImportError {
    ImportError {
        row,
        line: row + 1,
        reason: format!("row {row} has no address"),
    }
}

/// What every [`ContactStore`] does: `ids` is where ids and times come from, and holds
/// the outbox.
fn contact_store_conformance(contacts: &dyn ContactStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let (odd, even) = (ids.next_id(), ids.next_id());
    absent_contacts_read_as_none(contacts, ids, team, odd);
    let made = contacts_are_found_by_id_and_by_address_in_their_team(contacts, ids, team, other, [odd, even]);
    contacts_page_newest_first(contacts, team, &made);
    segment_members_page_newest_first(contacts, team, odd, &made);
    a_changed_contact_is_found_at_its_new_address_and_segments(contacts, ids, &made[1], [odd, even]);
    a_deleted_contact_is_gone_every_way_alone(contacts, ids, &made, other, odd);
    an_import_chunk_writes_its_contacts_and_counts_the_new(contacts, ids, team);
    an_erased_team_keeps_no_contact_and_others_keep_theirs(contacts, ids);
}

/// Erasing a team leaves none of its contacts, by id, by address or in a page, and
/// every other team's as they were.
fn an_erased_team_keeps_no_contact_and_others_keep_theirs(contacts: &dyn ContactStore, ids: &Store) {
    let (leaving, staying) = (ids.next_id(), ids.next_id());
    let gone = contact(ids, leaving, "gone@example.com", &[]);
    let kept = contact(ids, staying, "gone@example.com", &[]);
    for one in [&gone, &kept] {
        contacts.put(one, None, &[], Change::new()).expect("put");
    }
    while contacts.erase_team(leaving).expect("erase") {}
    assert!(contacts.get(leaving, gone.id).expect("get").is_none());
    assert!(
        contacts
            .by_email(leaving, "gone@example.com")
            .expect("by email")
            .is_none()
    );
    assert_eq!(
        contacts.page(leaving, &page(10, Cursor::Start)).expect("page"),
        (Vec::new(), false)
    );
    assert_eq!(contacts.get(staying, kept.id).expect("get").as_ref(), Some(&kept));
    assert_eq!(
        contacts
            .by_email(staying, "gone@example.com")
            .expect("by email")
            .map(|c| c.id),
        Some(kept.id)
    );
}

/// Nothing is found where nothing was written.
fn absent_contacts_read_as_none(contacts: &dyn ContactStore, ids: &Store, team: Id, segment: Id) {
    let start = page(10, Cursor::Start);
    assert!(contacts.get(team, ids.next_id()).expect("get").is_none());
    assert!(
        contacts
            .by_email(team, "nobody@example.com")
            .expect("by email")
            .is_none()
    );
    assert_eq!(contacts.page(team, &start).expect("page"), (Vec::new(), false));
    assert_eq!(
        contacts.segment_page(team, segment, &start).expect("segment page"),
        (Vec::new(), false)
    );
    assert_eq!(contacts.count(team).expect("count"), 0);
}

/// Five contacts of `team`, in the `odd` or `even` segment by their place, and one of
/// `other` at an address `team` has too: each is found by id and by address (its domain
/// in any case, its local part as written) in its own team only, each team counts its
/// own, and events land with the writes. Returns `team`'s, oldest first.
fn contacts_are_found_by_id_and_by_address_in_their_team(
    contacts: &dyn ContactStore,
    ids: &Store,
    team: Id,
    other: Id,
    [odd, even]: [Id; 2],
) -> Vec<Contact> {
    let made: Vec<Contact> = (0..5)
        .map(|n| {
            contact(
                ids,
                team,
                &format!("User{n}@example.com"),
                &[if n % 2 == 1 { odd } else { even }],
            )
        })
        .collect();
    for one in &made {
        let created = event(ids, one, EventKind::ContactCreated);
        contacts
            .put(one, None, std::slice::from_ref(&created), Change::new())
            .expect("put");
        assert!(in_outbox(ids, &created), "the event lands with the contact");
    }
    let namesake = contact(ids, other, "User2@example.com", &[]);
    contacts.put(&namesake, None, &[], Change::new()).expect("put");

    let wanted = &made[2];
    assert_eq!(contacts.get(team, wanted.id).expect("get").as_ref(), Some(wanted));
    assert!(
        contacts.get(other, wanted.id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert_eq!(
        contacts.by_email(team, "User2@example.com").expect("by email").as_ref(),
        Some(wanted)
    );
    assert_eq!(
        contacts.by_email(team, "User2@EXAMPLE.Com").expect("by email").as_ref(),
        Some(wanted),
        "the domain in any case"
    );
    assert!(
        contacts
            .by_email(team, "user2@example.com")
            .expect("by email")
            .is_none(),
        "the local part as written"
    );
    assert_eq!(
        contacts.by_email(other, "User2@example.com").expect("by email"),
        Some(namesake),
        "an address is a team's own"
    );
    assert_eq!(contacts.count(team).expect("count"), 5);
    assert_eq!(contacts.count(other).expect("count"), 1);
    made
}

/// Pages of contacts keep the cursor cases of [`pages_go_newest_first`], and a page of
/// all of them holds them whole.
fn contacts_page_newest_first(contacts: &dyn ContactStore, team: Id, made: &[Contact]) {
    let listed = |request: &PageRequest| {
        let (page, more) = contacts.page(team, request).expect("page");
        (ids_of(&page, |c| c.id), more)
    };
    pages_go_newest_first(listed, &ids_of(made, |c| c.id));
    let (whole, _) = contacts.page(team, &page(5, Cursor::Start)).expect("page");
    assert_eq!(whole, made.iter().rev().cloned().collect::<Vec<_>>(), "whole records");
}

/// A segment's members page like the team's contacts, and hold no one else.
fn segment_members_page_newest_first(contacts: &dyn ContactStore, team: Id, odd: Id, made: &[Contact]) {
    let listed = |request: PageRequest| {
        let (page, more) = contacts.segment_page(team, odd, &request).expect("segment page");
        (ids_of(&page, |c| c.id), more)
    };
    assert_eq!(listed(page(10, Cursor::Start)), (vec![made[3].id, made[1].id], false));
    assert_eq!(listed(page(1, Cursor::Start)), (vec![made[3].id], true));
    assert_eq!(listed(page(1, Cursor::After(made[3].id))), (vec![made[1].id], false));
    assert_eq!(listed(page(1, Cursor::Before(made[1].id))), (vec![made[3].id], false));
    let (whole, _) = contacts
        .segment_page(team, odd, &page(10, Cursor::Start))
        .expect("segment page");
    assert_eq!(whole, vec![made[3].clone(), made[1].clone()], "whole records");
    let elsewhere = contacts.segment_page(made[0].team_id, made[0].id, &page(10, Cursor::Start));
    assert_eq!(elsewhere.expect("segment page"), (Vec::new(), false), "no such segment");
}

/// A contact moved to a new address and from one segment to the other is found at the
/// new address alone and listed in its new segment alone; a change of the domain's case
/// keeps it found; neither is another contact.
fn a_changed_contact_is_found_at_its_new_address_and_segments(
    contacts: &dyn ContactStore,
    ids: &Store,
    before: &Contact,
    [odd, even]: [Id; 2],
) {
    let team = before.team_id;
    let moved = Contact {
        email: "moved@example.org".into(),
        segments: vec![even],
        topics: vec![TopicChoice {
            id: ids.next_id(),
            subscription: Subscription::OptOut,
        }],
        unsubscribed: true,
        updated_at: ids.now(),
        ..before.clone()
    };
    let updated = event(ids, &moved, EventKind::ContactUpdated);
    contacts
        .put(&moved, Some(before), std::slice::from_ref(&updated), Change::new())
        .expect("put");
    assert!(in_outbox(ids, &updated));
    assert_eq!(contacts.get(team, before.id).expect("get").as_ref(), Some(&moved));
    assert_eq!(
        contacts.by_email(team, "moved@example.org").expect("by email").as_ref(),
        Some(&moved)
    );
    assert!(
        contacts.by_email(team, &before.email).expect("by email").is_none(),
        "the old address goes"
    );
    let members = |segment| {
        let (page, _) = contacts
            .segment_page(team, segment, &page(10, Cursor::Start))
            .expect("segment page");
        ids_of(&page, |c| c.id)
    };
    assert!(!members(odd).contains(&before.id), "it left the segment");
    assert!(members(even).contains(&before.id), "it joined the other");
    assert_eq!(
        contacts.count(team).expect("count"),
        5,
        "a change is not another contact"
    );

    let recased = Contact {
        email: "moved@EXAMPLE.org".into(),
        ..moved.clone()
    };
    contacts.put(&recased, Some(&moved), &[], Change::new()).expect("put");
    assert_eq!(
        contacts.by_email(team, "moved@example.org").expect("by email").as_ref(),
        Some(&recased)
    );
    assert_eq!(
        contacts.by_email(team, "moved@EXAMPLE.org").expect("by email").as_ref(),
        Some(&recased)
    );
    assert_eq!(contacts.count(team).expect("count"), 5);
}

/// A deleted contact is gone by id, by address, from pages, from its segment and from
/// the count, with its event; the team's others and another team's contact at the
/// same address stay.
fn a_deleted_contact_is_gone_every_way_alone(
    contacts: &dyn ContactStore,
    ids: &Store,
    made: &[Contact],
    other: Id,
    odd: Id,
) {
    let gone = &made[3];
    let team = gone.team_id;
    let deleted = event(ids, gone, EventKind::ContactDeleted);
    contacts.delete(gone, std::slice::from_ref(&deleted)).expect("delete");
    assert!(in_outbox(ids, &deleted));
    assert!(contacts.get(team, gone.id).expect("get").is_none());
    assert!(contacts.by_email(team, &gone.email).expect("by email").is_none());
    assert_eq!(contacts.count(team).expect("count"), 4);
    let (left, more) = contacts.page(team, &page(10, Cursor::Start)).expect("page");
    assert_eq!(
        ids_of(&left, |c| c.id),
        vec![made[4].id, made[2].id, made[1].id, made[0].id]
    );
    assert!(!more);
    let (members, _) = contacts
        .segment_page(team, odd, &page(10, Cursor::Start))
        .expect("segment page");
    assert!(members.is_empty(), "its one member left, the other was deleted");

    contacts.delete(&made[2], &[]).expect("delete");
    assert!(contacts.by_email(team, &made[2].email).expect("by email").is_none());
    assert!(
        contacts.by_email(other, &made[2].email).expect("by email").is_some(),
        "another team's contact at the address stays"
    );
    assert_eq!(contacts.count(team).expect("count"), 3);
    assert_eq!(contacts.count(other).expect("count"), 1);
}

/// An import chunk writes its new contacts and its changed ones with their events in
/// one go, and the count grows by the new ones alone.
fn an_import_chunk_writes_its_contacts_and_counts_the_new(contacts: &dyn ContactStore, ids: &Store, team: Id) {
    let counted = contacts.count(team).expect("count");
    let (existing, _) = contacts.page(team, &page(1, Cursor::Start)).expect("page");
    let previous = existing.into_iter().next().expect("a contact to change");
    let changed = Contact {
        first_name: Some("Imported".into()),
        updated_at: ids.now(),
        ..previous.clone()
    };
    let new: Vec<Contact> = (0..2)
        .map(|n| contact(ids, team, &format!("imported{n}@example.net"), &[]))
        .collect();
    let writes = vec![
        (new[0].clone(), None),
        (changed.clone(), Some(previous)),
        (new[1].clone(), None),
    ];
    let events: Vec<Event> = new.iter().map(|c| event(ids, c, EventKind::ContactCreated)).collect();
    let progress = ContactImport {
        status: ImportStatus::InProgress,
        ..import(ids, team)
    };
    contacts
        .commit_import(&writes, &events, &[refused(1)], &progress)
        .expect("commit import");
    assert!(events.iter().all(|e| in_outbox(ids, e)));
    for one in new.iter().chain([&changed]) {
        assert_eq!(contacts.get(team, one.id).expect("get").as_ref(), Some(one));
        assert_eq!(
            contacts.by_email(team, &one.email).expect("by email").as_ref(),
            Some(one)
        );
    }
    assert_eq!(contacts.count(team).expect("count"), counted + 2, "the new ones alone");
    let (listed, _) = contacts.page(team, &page(2, Cursor::Start)).expect("page");
    assert_eq!(ids_of(&listed, |c| c.id), vec![new[1].id, new[0].id], "newest first");
}

/// What every [`AudienceStore`] does: `ids` is where ids and times come from, and holds
/// the outbox.
fn audience_store_conformance(audience: &dyn AudienceStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    segments_are_kept_per_team(audience, ids, team, other);
    topics_are_kept_per_team_with_their_events(audience, ids, team, other);
    properties_are_kept_per_team(audience, ids, team, other);
    imports_are_kept_per_team_and_queued_until_finished(audience, ids, team, other);
    an_erased_team_keeps_no_audience_and_others_keep_theirs(audience, ids);
}

/// Erasing a team leaves none of its segments, and every other team's as they were.
fn an_erased_team_keeps_no_audience_and_others_keep_theirs(audience: &dyn AudienceStore, ids: &Store) {
    let (leaving, staying) = (ids.next_id(), ids.next_id());
    let segment = |team_id| Segment {
        id: ids.next_id(),
        team_id,
        name: "All".into(),
        created_at: ids.now(),
    };
    let (gone, kept) = (segment(leaving), segment(staying));
    audience.put_segment(&gone).expect("put segment");
    audience.put_segment(&kept).expect("put segment");
    while audience.erase_team(leaving).expect("erase") {}
    assert!(audience.segments(leaving).expect("segments").is_empty());
    assert!(audience.segment(leaving, gone.id).expect("segment").is_none());
    assert_eq!(audience.segments(staying).expect("segments"), vec![kept]);
}

/// Segments: found by id in their own team, paged newest first, listed whole, changed,
/// and deleted one at a time.
fn segments_are_kept_per_team(audience: &dyn AudienceStore, ids: &Store, team: Id, other: Id) {
    let start = page(10, Cursor::Start);
    assert!(audience.segment(team, ids.next_id()).expect("segment").is_none());
    assert_eq!(
        audience.segment_page(team, &start).expect("segment page"),
        (Vec::new(), false)
    );
    assert!(audience.segments(team).expect("segments").is_empty());
    let segment = |team_id, name: &str| Segment {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        created_at: ids.now(),
    };
    let made: Vec<Segment> = (0..3).map(|n| segment(team, &format!("Segment {n}"))).collect();
    for one in &made {
        audience.put_segment(one).expect("put segment");
    }
    let stranger = segment(other, "Theirs");
    audience.put_segment(&stranger).expect("put segment");
    assert_eq!(
        audience.segment(team, made[1].id).expect("segment").as_ref(),
        Some(&made[1])
    );
    assert!(
        audience.segment(other, made[1].id).expect("segment").is_none(),
        "a team sees its own only"
    );
    let listed = |request: &PageRequest| {
        let (page, more) = audience.segment_page(team, request).expect("segment page");
        (ids_of(&page, |s| s.id), more)
    };
    pages_go_newest_first(listed, &ids_of(&made, |one| one.id));
    assert_eq!(listed(&page(1, Cursor::Before(made[0].id))), (vec![made[1].id], true));
    assert_eq!(sorted(audience.segments(team).expect("segments"), |s| s.id), made);
    assert_eq!(audience.segments(other).expect("segments"), vec![stranger.clone()]);

    let renamed = Segment {
        name: "Renamed".into(),
        ..made[1].clone()
    };
    audience.put_segment(&renamed).expect("put segment");
    assert_eq!(
        audience.segment(team, renamed.id).expect("segment"),
        Some(renamed.clone())
    );
    audience.delete_segment(&renamed).expect("delete segment");
    assert!(audience.segment(team, renamed.id).expect("segment").is_none());
    assert_eq!(
        sorted(audience.segments(team).expect("segments"), |s| s.id),
        vec![made[0].clone(), made[2].clone()]
    );
    assert_eq!(listed(&page(10, Cursor::Start)), (vec![made[2].id, made[0].id], false));
    assert_eq!(audience.segments(other).expect("segments"), vec![stranger]);
}

/// Topics: as segments, with each write's event landing with it.
fn topics_are_kept_per_team_with_their_events(audience: &dyn AudienceStore, ids: &Store, team: Id, other: Id) {
    let start = page(10, Cursor::Start);
    assert!(audience.topic(team, ids.next_id()).expect("topic").is_none());
    assert_eq!(
        audience.topic_page(team, &start).expect("topic page"),
        (Vec::new(), false)
    );
    assert!(audience.topics(team).expect("topics").is_empty());
    let topic = |team_id, name: &str| Topic {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        description: Some(format!("All about {name}")),
        default_subscription: Subscription::OptIn,
        visibility: Visibility::Public,
        created_at: ids.now(),
        updated_at: ids.now(),
    };
    let topic_event = |topic: &Topic, kind| Event {
        id: ids.next_id(),
        team_id: topic.team_id,
        kind,
        created_at: ids.now(),
        data: topic.to_json(false),
    };
    let made: Vec<Topic> = (0..3).map(|n| topic(team, &format!("Topic {n}"))).collect();
    for one in &made {
        let created = topic_event(one, EventKind::TopicCreated);
        audience.put_topic(one, Some(&created)).expect("put topic");
        assert!(in_outbox(ids, &created), "the event lands with the topic");
    }
    let stranger = topic(other, "Theirs");
    audience.put_topic(&stranger, None).expect("put topic");
    assert_eq!(
        audience.topic(team, made[1].id).expect("topic").as_ref(),
        Some(&made[1])
    );
    assert!(
        audience.topic(other, made[1].id).expect("topic").is_none(),
        "a team sees its own only"
    );
    let listed = |request: &PageRequest| {
        let (page, more) = audience.topic_page(team, request).expect("topic page");
        (ids_of(&page, |t| t.id), more)
    };
    pages_go_newest_first(listed, &ids_of(&made, |one| one.id));
    assert_eq!(listed(&page(1, Cursor::Before(made[0].id))), (vec![made[1].id], true));
    assert_eq!(sorted(audience.topics(team).expect("topics"), |t| t.id), made);
    assert_eq!(audience.topics(other).expect("topics"), vec![stranger.clone()]);

    let private = Topic {
        default_subscription: Subscription::OptOut,
        visibility: Visibility::Private,
        updated_at: ids.now(),
        ..made[1].clone()
    };
    let updated = topic_event(&private, EventKind::TopicUpdated);
    audience.put_topic(&private, Some(&updated)).expect("put topic");
    assert!(in_outbox(ids, &updated));
    assert_eq!(audience.topic(team, private.id).expect("topic"), Some(private.clone()));
    let deleted = topic_event(&private, EventKind::TopicDeleted);
    audience.delete_topic(&private, Some(&deleted)).expect("delete topic");
    assert!(in_outbox(ids, &deleted));
    assert!(audience.topic(team, private.id).expect("topic").is_none());
    assert_eq!(listed(&page(10, Cursor::Start)), (vec![made[2].id, made[0].id], false));
    audience.delete_topic(&made[0], None).expect("delete topic");
    assert_eq!(audience.topics(team).expect("topics"), vec![made[2].clone()]);
    assert_eq!(audience.topics(other).expect("topics"), vec![stranger]);
}

/// Property definitions: as segments.
fn properties_are_kept_per_team(audience: &dyn AudienceStore, ids: &Store, team: Id, other: Id) {
    let start = page(10, Cursor::Start);
    assert!(audience.property(team, ids.next_id()).expect("property").is_none());
    assert_eq!(
        audience.property_page(team, &start).expect("property page"),
        (Vec::new(), false)
    );
    assert!(audience.properties(team).expect("properties").is_empty());
    let property = |team_id, key: &str, kind| ContactProperty {
        id: ids.next_id(),
        team_id,
        key: key.into(),
        kind,
        fallback_value: None,
        created_at: ids.now(),
    };
    let made = vec![
        property(team, "plan", PropertyType::String),
        property(team, "age", PropertyType::Number),
        property(team, "city", PropertyType::String),
    ];
    for one in &made {
        audience.put_property(one).expect("put property");
    }
    let stranger = property(other, "plan", PropertyType::Number);
    audience.put_property(&stranger).expect("put property");
    assert_eq!(
        audience.property(team, made[1].id).expect("property").as_ref(),
        Some(&made[1])
    );
    assert!(
        audience.property(other, made[1].id).expect("property").is_none(),
        "a team sees its own only"
    );
    let listed = |request: &PageRequest| {
        let (page, more) = audience.property_page(team, request).expect("property page");
        (ids_of(&page, |p| p.id), more)
    };
    pages_go_newest_first(listed, &ids_of(&made, |one| one.id));
    assert_eq!(listed(&page(1, Cursor::Before(made[0].id))), (vec![made[1].id], true));
    assert_eq!(sorted(audience.properties(team).expect("properties"), |p| p.id), made);
    assert_eq!(audience.properties(other).expect("properties"), vec![stranger.clone()]);

    let with_fallback = ContactProperty {
        fallback_value: Some(serde_json::json!(18)),
        ..made[1].clone()
    };
    audience.put_property(&with_fallback).expect("put property");
    assert_eq!(
        audience.property(team, with_fallback.id).expect("property"),
        Some(with_fallback.clone())
    );
    audience.delete_property(&with_fallback).expect("delete property");
    assert!(audience.property(team, with_fallback.id).expect("property").is_none());
    assert_eq!(listed(&page(10, Cursor::Start)), (vec![made[2].id, made[0].id], false));
    assert_eq!(audience.properties(other).expect("properties"), vec![stranger]);
}

/// Imports: found by id in their own team, paged newest first, and among every team's
/// unfinished ones (oldest first) until they finish or fail. An import with no refused
/// rows has none to page.
fn imports_are_kept_per_team_and_queued_until_finished(audience: &dyn AudienceStore, ids: &Store, team: Id, other: Id) {
    let start = page(10, Cursor::Start);
    assert!(audience.import(team, ids.next_id()).expect("import").is_none());
    assert_eq!(
        audience.import_page(team, &start).expect("import page"),
        (Vec::new(), false)
    );
    assert!(audience.unfinished_imports().expect("unfinished").is_empty());
    let first = import(ids, team);
    let theirs = import(ids, other);
    let second = import(ids, team);
    let third = import(ids, team);
    for one in [&first, &theirs, &second, &third] {
        audience.put_import(one).expect("put import");
    }
    assert_eq!(
        audience.import(team, second.id).expect("import").as_ref(),
        Some(&second)
    );
    assert!(
        audience.import(other, second.id).expect("import").is_none(),
        "a team sees its own only"
    );
    assert!(
        audience
            .import_errors(&second, 0, 10)
            .expect("import errors")
            .is_empty()
    );
    let listed = |request: &PageRequest| {
        let (page, more) = audience.import_page(team, request).expect("import page");
        (ids_of(&page, |i| i.id), more)
    };
    pages_go_newest_first(listed, &[first.id, second.id, third.id]);
    assert_eq!(listed(&page(1, Cursor::Before(first.id))), (vec![second.id], true));
    let (theirs_listed, _) = audience.import_page(other, &start).expect("import page");
    assert_eq!(theirs_listed, vec![theirs.clone()]);
    assert_eq!(
        audience.unfinished_imports().expect("unfinished"),
        vec![first.clone(), theirs.clone(), second.clone(), third.clone()],
        "every team's, oldest first"
    );

    let running = ContactImport {
        status: ImportStatus::InProgress,
        offset: 4096,
        line: 120,
        counts: ImportCounts {
            total: 118,
            created: 117,
            failed: 1,
            ..ImportCounts::default()
        },
        ..first.clone()
    };
    audience.put_import(&running).expect("put import");
    let completed = ContactImport {
        status: ImportStatus::Completed,
        completed_at: Some(ids.now()),
        ..second.clone()
    };
    audience.put_import(&completed).expect("put import");
    let failed = ContactImport {
        status: ImportStatus::Failed,
        completed_at: Some(ids.now()),
        failure: Some("the file is gone".into()),
        ..theirs
    };
    audience.put_import(&failed).expect("put import");
    assert_eq!(audience.import(team, first.id).expect("import"), Some(running.clone()));
    assert_eq!(audience.import(team, second.id).expect("import"), Some(completed));
    assert_eq!(audience.import(other, failed.id).expect("import"), Some(failed));
    assert_eq!(
        audience.unfinished_imports().expect("unfinished"),
        vec![running, third],
        "finished and failed ones leave"
    );
}

/// `items` ordered by `key`: for the reads whose order the trait leaves open.
fn sorted<T>(mut items: Vec<T>, key: impl Fn(&T) -> Id) -> Vec<T> {
    items.sort_by_key(key);
    items
}

/// What the two traits of one backend do together: an import chunk written through the
/// contacts is read back through the audience (its progress and refused rows), and a
/// segment deleted through the audience leaves no members to page through the contacts.
fn contact_and_audience_stores_agree(contacts: &dyn ContactStore, audience: &dyn AudienceStore, ids: &Store) {
    let team = ids.next_id();
    let queued = import(ids, team);
    audience.put_import(&queued).expect("put import");
    let chunk = |rows: std::ops::RangeInclusive<u64>, status, completed_at| {
        let progress = ContactImport {
            status,
            completed_at,
            line: rows.end() + 2,
            ..queued.clone()
        };
        let errors: Vec<ImportError> = rows.map(refused).collect();
        contacts
            .commit_import(&[], &[], &errors, &progress)
            .expect("commit import");
        progress
    };
    let running = chunk(1..=3, ImportStatus::InProgress, None);
    assert_eq!(audience.import(team, queued.id).expect("import"), Some(running.clone()));
    assert_eq!(audience.unfinished_imports().expect("unfinished"), vec![running]);
    let done = chunk(4..=5, ImportStatus::Completed, Some(ids.now()));
    assert_eq!(audience.import(team, queued.id).expect("import"), Some(done.clone()));
    assert!(
        audience.unfinished_imports().expect("unfinished").is_empty(),
        "finished"
    );
    let rows = |after, limit| -> Vec<u64> {
        let errors = audience.import_errors(&done, after, limit).expect("import errors");
        errors.iter().map(|e| e.row).collect()
    };
    assert_eq!(rows(0, 10), vec![1, 2, 3, 4, 5], "in file order");
    assert_eq!(rows(2, 2), vec![3, 4], "after a row, at most the limit");
    assert_eq!(rows(5, 10), Vec::<u64>::new());
    assert_eq!(
        audience.import_errors(&done, 0, 1).expect("import errors"),
        vec![refused(1)]
    );
    let another = import(ids, team);
    assert!(
        audience
            .import_errors(&another, 0, 10)
            .expect("import errors")
            .is_empty(),
        "an import's own"
    );

    let segment = Segment {
        id: ids.next_id(),
        team_id: team,
        name: "Going".into(),
        created_at: ids.now(),
    };
    audience.put_segment(&segment).expect("put segment");
    let member = contact(ids, team, "member@example.com", &[segment.id]);
    contacts.put(&member, None, &[], Change::new()).expect("put");
    let start = page(10, Cursor::Start);
    let (members, _) = contacts.segment_page(team, segment.id, &start).expect("segment page");
    assert_eq!(members, vec![member.clone()]);
    audience.delete_segment(&segment).expect("delete segment");
    assert_eq!(
        contacts.segment_page(team, segment.id, &start).expect("segment page"),
        (Vec::new(), false)
    );
    assert_eq!(
        contacts.get(team, member.id).expect("get"),
        Some(member),
        "contacts stay, naming the segment until their next write"
    );
}

/// The RocksDB contacts pass the contacts' suite.
#[test]
fn rocksdb_contacts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    contact_store_conformance(&RocksContacts::new(store.clone()), &store);
}

/// The RocksDB audiences (segments, topics, properties, imports) pass their suite.
#[test]
fn rocksdb_audiences_keep_the_contract() {
    let (_dir, store) = rocksdb();
    audience_store_conformance(&RocksContacts::new(store.clone()), &store);
}

/// One RocksDB backend's contacts and audiences agree on what each writes for the
/// other.
#[test]
fn rocksdb_contacts_and_audiences_keep_the_contract_together() {
    let (_dir, store) = rocksdb();
    let backend = RocksContacts::new(store.clone());
    contact_and_audience_stores_agree(&backend, &backend, &store);
}
