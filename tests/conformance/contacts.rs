//! What every [`ContactStore`] and [`AudienceStore`] does, run on the RocksDB and the
//! PostgreSQL ones (one [`RocksContacts`], or one [`PostgresContacts`], keeps both). A
//! contact is found by id and by address (its domain in any case, its local part as
//! written) in its own team alone, is counted, pages newest first among the team's and
//! among each segment's, lands with its events and with what its change staged, moves
//! address and segments, is deleted every way at once, and comes in by import chunks
//! that count the new alone. Segments, topics (with their events), property definitions
//! and imports are kept per team, paged newest first and listed whole; unfinished
//! imports are every team's, oldest first. An import chunk's progress and refused rows
//! are read back through the audience, a deleted segment takes its membership, a
//! finished import expires with its refused rows, and erasing a team, through either
//! trait, leaves every other team's.

use std::collections::BTreeMap;

use herald::contacts::model::{
    Columns, ContactImport, ImportCounts, ImportError, ImportStatus, OnConflict, PropertyType, Visibility,
};
use herald::contacts::{
    AudienceStore, Contact, ContactProperty, ContactStore, PostgresContacts, RocksContacts, Segment, Subscription,
    Topic, TopicChoice,
};
use herald::counters::{CounterStore, PostgresCounters, QuotaCounter, RocksCounters};
use herald::events::{Event, EventKind};
use herald::storage::Change;
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store};

use crate::conformance::{ids_of, in_outbox, page, pages_go_newest_first, postgres, rocksdb};

/// A new contact of `team_id` at `email`, in `segments`; `ids` is where ids and times
/// come from.
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
fn contact_event(ids: &Store, contact: &Contact, kind: EventKind) -> Event {
    Event {
        id: ids.next_id(),
        team_id: contact.team_id,
        kind,
        created_at: ids.now(),
        data: contact.event_json(),
    }
}

/// A segment of `team_id` named `name`.
fn segment(ids: &Store, team_id: Id, name: &str) -> Segment {
    Segment {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        created_at: ids.now(),
    }
}

/// A topic of `team_id` named `name`, contacts in by default.
fn topic(ids: &Store, team_id: Id, name: &str) -> Topic {
    Topic {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        description: Some(format!("All about {name}")),
        default_subscription: Subscription::OptIn,
        visibility: Visibility::Public,
        created_at: ids.now(),
        updated_at: ids.now(),
    }
}

/// An event of `kind` about `topic`.
fn topic_event(ids: &Store, topic: &Topic, kind: EventKind) -> Event {
    Event {
        id: ids.next_id(),
        team_id: topic.team_id,
        kind,
        created_at: ids.now(),
        data: topic.to_json(false),
    }
}

/// A property definition of `team_id` keyed `key`.
fn property(ids: &Store, team_id: Id, key: &str, kind: PropertyType) -> ContactProperty {
    ContactProperty {
        id: ids.next_id(),
        team_id,
        key: key.into(),
        kind,
        fallback_value: None,
        created_at: ids.now(),
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

/// The row `row` an import refused, on the line after it (the header is line 1).
fn refused(row: u64) -> ImportError {
    ImportError {
        row,
        line: row + 1,
        reason: format!("row {row} has no address"),
    }
}

/// `items` ordered by `key`: for the reads whose order the traits leave open.
fn sorted<T>(mut items: Vec<T>, key: impl Fn(&T) -> Id) -> Vec<T> {
    items.sort_by_key(key);
    items
}

/// The first page of ten from the start.
fn first() -> PageRequest {
    page(10, Cursor::Start)
}

/// What every [`ContactStore`] does: `ids` is where ids and times come from, and holds
/// the outbox; `counters`, of the same backend, stages the writes a contact's change
/// carries with it (as the unsubscribe page stages its count).
fn contact_store_conformance(contacts: &dyn ContactStore, counters: &dyn CounterStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    let (all, odd) = (ids.next_id(), ids.next_id());
    assert!(contacts.get(team, ids.next_id()).expect("get").is_none());
    assert!(
        contacts
            .by_email(team, "nobody@example.com")
            .expect("by email")
            .is_none()
    );
    assert_eq!(contacts.page(team, &first()).expect("page"), (Vec::new(), false));
    assert_eq!(
        contacts.segment_page(team, all, &first()).expect("segment page"),
        (Vec::new(), false)
    );
    assert_eq!(
        contacts.segment_ids(team, all, &first()).expect("segment ids"),
        (Vec::new(), false)
    );
    assert_eq!(contacts.count(team).expect("count"), 0);

    // Five contacts, all in `all` and every other one in `odd`, each with its event; the
    // first with a write its change staged, which lands with it and not before.
    let made: Vec<Contact> = (0..5)
        .map(|n| {
            let segments = if n % 2 == 1 { vec![all, odd] } else { vec![all] };
            contact(ids, team, &format!("User{n}@example.com"), &segments)
        })
        .collect();
    let quota = QuotaCounter::Day(20_000);
    let mut with = Change::new();
    let period_ends = ids.now().saturating_add(std::time::Duration::from_secs(3600));
    counters.add_quota(&mut with, team, quota, 1, period_ends);
    assert_eq!(counters.quota(team, quota).expect("quota"), 0, "staged is not written");
    for (n, one) in made.iter().enumerate() {
        let created = contact_event(ids, one, EventKind::ContactCreated);
        let staged = if n == 0 {
            std::mem::take(&mut with)
        } else {
            Change::new()
        };
        contacts
            .put(one, None, std::slice::from_ref(&created), staged)
            .expect("put");
        assert!(in_outbox(ids, &created), "the event lands with the contact");
    }
    assert_eq!(
        counters.quota(team, quota).expect("quota"),
        1,
        "what the change staged lands with the contact"
    );
    let namesake = contact(ids, other, "User2@example.com", &[all]);
    contacts.put(&namesake, None, &[], Change::new()).expect("put");

    // Read back whole, by id and by address, in its own team alone.
    for one in &made {
        assert_eq!(contacts.get(team, one.id).expect("get").as_ref(), Some(one));
        assert_eq!(
            contacts.by_email(team, &one.email).expect("by email").as_ref(),
            Some(one)
        );
    }
    let wanted = &made[2];
    assert!(
        contacts.get(other, wanted.id).expect("get").is_none(),
        "a team sees its own only"
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
        contacts
            .by_email(other, "User2@example.com")
            .expect("by email")
            .as_ref(),
        Some(&namesake),
        "an address is a team's own"
    );
    assert_eq!(contacts.count(team).expect("count"), 5);
    assert_eq!(contacts.count(other).expect("count"), 1);

    // The team's contacts, and a segment's, page newest first; the ids alone too.
    let made_ids = ids_of(&made, |c| c.id);
    pages_go_newest_first(
        |request| {
            let (found, more) = contacts.page(team, request).expect("page");
            (ids_of(&found, |c| c.id), more)
        },
        &made_ids,
    );
    pages_go_newest_first(
        |request| {
            let (found, more) = contacts.segment_page(team, all, request).expect("segment page");
            (ids_of(&found, |c| c.id), more)
        },
        &made_ids,
    );
    pages_go_newest_first(
        |request| contacts.segment_ids(team, all, request).expect("segment ids"),
        &made_ids,
    );
    let newest_first: Vec<Contact> = made.iter().rev().cloned().collect();
    assert_eq!(contacts.page(team, &first()).expect("page"), (newest_first, false));
    assert_eq!(
        contacts.segment_page(team, odd, &first()).expect("segment page"),
        (vec![made[3].clone(), made[1].clone()], false),
        "whole records, the segment's members alone"
    );
    assert_eq!(
        contacts.segment_ids(team, odd, &first()).expect("segment ids"),
        (vec![made[3].id, made[1].id], false)
    );
    assert_eq!(
        contacts.segment_page(other, all, &first()).expect("segment page"),
        (vec![namesake.clone()], false),
        "another team's members of a segment of that id are its own"
    );

    // A change moves the contact to its new address and segments, with its event; it is
    // not another contact. A change of the domain's case keeps it found.
    let before = &made[1];
    let moved = Contact {
        email: "moved@example.org".into(),
        segments: vec![all],
        topics: vec![TopicChoice {
            id: ids.next_id(),
            subscription: Subscription::OptOut,
        }],
        properties: BTreeMap::from([(ids.next_id(), serde_json::json!("gold"))]),
        unsubscribed: true,
        updated_at: ids.now(),
        ..before.clone()
    };
    let updated = contact_event(ids, &moved, EventKind::ContactUpdated);
    contacts
        .put(&moved, Some(before), std::slice::from_ref(&updated), Change::new())
        .expect("put");
    assert!(in_outbox(ids, &updated));
    assert_eq!(contacts.get(team, moved.id).expect("get").as_ref(), Some(&moved));
    assert_eq!(
        contacts.by_email(team, "moved@example.org").expect("by email").as_ref(),
        Some(&moved)
    );
    assert!(
        contacts.by_email(team, &before.email).expect("by email").is_none(),
        "the old address goes"
    );
    assert_eq!(
        contacts.segment_page(team, odd, &first()).expect("segment page"),
        (vec![made[3].clone()], false),
        "it left the segment"
    );
    let (members, _) = contacts.segment_page(team, all, &first()).expect("segment page");
    assert!(members.contains(&moved), "and stays in the other, as changed");
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
    assert_eq!(contacts.count(team).expect("count"), 5);

    // A deleted contact is gone by id, by address, from pages, its segments and the
    // count, with its event; another team's at the same address stays.
    let gone = &made[2];
    let deleted = contact_event(ids, gone, EventKind::ContactDeleted);
    contacts.delete(gone, std::slice::from_ref(&deleted)).expect("delete");
    assert!(in_outbox(ids, &deleted));
    assert!(contacts.get(team, gone.id).expect("get").is_none());
    assert!(contacts.by_email(team, &gone.email).expect("by email").is_none());
    assert_eq!(contacts.count(team).expect("count"), 4);
    let left = vec![made[4].id, made[3].id, made[1].id, made[0].id];
    let (listed, more) = contacts.page(team, &first()).expect("page");
    assert_eq!((ids_of(&listed, |c| c.id), more), (left.clone(), false));
    let (members, more) = contacts.segment_page(team, all, &first()).expect("segment page");
    assert_eq!((ids_of(&members, |c| c.id), more), (left, false));
    assert_eq!(
        contacts.by_email(other, &gone.email).expect("by email").as_ref(),
        Some(&namesake),
        "another team's contact at the address stays"
    );
    assert_eq!(contacts.count(other).expect("count"), 1);

    // An import chunk writes its new and changed contacts with their events at once,
    // and the count grows by the new ones alone.
    let previous = contacts
        .get(team, made[0].id)
        .expect("get")
        .expect("a contact to change");
    let changed = Contact {
        first_name: Some("Imported".into()),
        updated_at: ids.now(),
        ..previous.clone()
    };
    let new: Vec<Contact> = (0..2)
        .map(|n| contact(ids, team, &format!("imported{n}@example.net"), &[all]))
        .collect();
    let writes = vec![
        (new[0].clone(), None),
        (changed.clone(), Some(previous)),
        (new[1].clone(), None),
    ];
    let events: Vec<Event> = new
        .iter()
        .map(|c| contact_event(ids, c, EventKind::ContactCreated))
        .collect();
    let progress = ContactImport {
        status: ImportStatus::InProgress,
        ..import(ids, team)
    };
    contacts
        .commit_import(&writes, &events, &[refused(1)], &progress)
        .expect("commit import");
    assert!(events.iter().all(|e| in_outbox(ids, e)), "the chunk's events land");
    for one in new.iter().chain([&changed]) {
        assert_eq!(contacts.get(team, one.id).expect("get").as_ref(), Some(one));
        assert_eq!(
            contacts.by_email(team, &one.email).expect("by email").as_ref(),
            Some(one)
        );
    }
    assert_eq!(contacts.count(team).expect("count"), 6, "the new ones alone");
    let (listed, more) = contacts.page(team, &page(2, Cursor::Start)).expect("page");
    assert_eq!((ids_of(&listed, |c| c.id), more), (vec![new[1].id, new[0].id], true));
    let (members, _) = contacts
        .segment_page(team, all, &page(2, Cursor::Start))
        .expect("segment page");
    assert_eq!(ids_of(&members, |c| c.id), vec![new[1].id, new[0].id], "they joined");

    // Erasing the team leaves none of its contacts, any way they are read, and every
    // other team's as they were.
    while contacts.erase_team(team).expect("erase") {}
    for one in made.iter().chain(&new) {
        assert!(
            contacts.get(team, one.id).expect("get").is_none(),
            "{} erased",
            one.email
        );
        assert!(contacts.by_email(team, &one.email).expect("by email").is_none());
    }
    assert!(
        contacts
            .by_email(team, "moved@example.org")
            .expect("by email")
            .is_none()
    );
    assert_eq!(contacts.page(team, &first()).expect("page"), (Vec::new(), false));
    let (members, _) = contacts.segment_page(team, all, &first()).expect("segment page");
    assert!(members.is_empty(), "{members:?}");
    assert_eq!(contacts.count(team).expect("count"), 0);
    assert_eq!(contacts.get(other, namesake.id).expect("get").as_ref(), Some(&namesake));
    assert_eq!(
        contacts.by_email(other, &namesake.email).expect("by email").as_ref(),
        Some(&namesake)
    );
    assert_eq!(
        contacts.segment_page(other, all, &first()).expect("segment page"),
        (vec![namesake], false)
    );
    assert_eq!(contacts.count(other).expect("count"), 1);
}

/// What every [`AudienceStore`] does: `ids` is where ids and times come from, and holds
/// the outbox.
fn audience_store_conformance(audience: &dyn AudienceStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());

    // Segments: nothing where nothing was written; kept as written, read by their own
    // team alone, paged newest first, listed whole, changed and deleted one at a time.
    assert!(audience.segment(team, ids.next_id()).expect("segment").is_none());
    assert_eq!(
        audience.segment_page(team, &first()).expect("segment page"),
        (Vec::new(), false)
    );
    assert!(audience.segments(team).expect("segments").is_empty());
    let segments: Vec<Segment> = (0..3).map(|n| segment(ids, team, &format!("Segment {n}"))).collect();
    for one in &segments {
        audience.put_segment(one).expect("put segment");
    }
    let their_segment = segment(ids, other, "Theirs");
    audience.put_segment(&their_segment).expect("put segment");
    assert_eq!(
        audience.segment(team, segments[1].id).expect("segment").as_ref(),
        Some(&segments[1])
    );
    assert!(
        audience.segment(other, segments[1].id).expect("segment").is_none(),
        "a team sees its own only"
    );
    pages_go_newest_first(
        |request| {
            let (found, more) = audience.segment_page(team, request).expect("segment page");
            (ids_of(&found, |s| s.id), more)
        },
        &ids_of(&segments, |s| s.id),
    );
    assert_eq!(
        audience.segment_page(team, &first()).expect("segment page"),
        (segments.iter().rev().cloned().collect::<Vec<_>>(), false),
        "whole records"
    );
    assert_eq!(sorted(audience.segments(team).expect("segments"), |s| s.id), segments);
    assert_eq!(audience.segments(other).expect("segments"), vec![their_segment.clone()]);
    let renamed = Segment {
        name: "Renamed".into(),
        ..segments[1].clone()
    };
    audience.put_segment(&renamed).expect("put segment");
    assert_eq!(
        audience.segment(team, renamed.id).expect("segment"),
        Some(renamed.clone())
    );
    assert_eq!(audience.segments(team).expect("segments").len(), 3, "a change replaces");
    audience.delete_segment(&renamed).expect("delete segment");
    assert!(audience.segment(team, renamed.id).expect("segment").is_none());
    assert_eq!(
        sorted(audience.segments(team).expect("segments"), |s| s.id),
        vec![segments[0].clone(), segments[2].clone()]
    );

    // Topics: as segments, each write's event landing with it.
    assert!(audience.topic(team, ids.next_id()).expect("topic").is_none());
    assert_eq!(
        audience.topic_page(team, &first()).expect("topic page"),
        (Vec::new(), false)
    );
    assert!(audience.topics(team).expect("topics").is_empty());
    let topics: Vec<Topic> = (0..3).map(|n| topic(ids, team, &format!("Topic {n}"))).collect();
    for one in &topics {
        let created = topic_event(ids, one, EventKind::TopicCreated);
        audience.put_topic(one, Some(&created)).expect("put topic");
        assert!(in_outbox(ids, &created), "the event lands with the topic");
    }
    let their_topic = topic(ids, other, "Theirs");
    audience.put_topic(&their_topic, None).expect("put topic");
    assert_eq!(
        audience.topic(team, topics[1].id).expect("topic").as_ref(),
        Some(&topics[1])
    );
    assert!(
        audience.topic(other, topics[1].id).expect("topic").is_none(),
        "a team sees its own only"
    );
    pages_go_newest_first(
        |request| {
            let (found, more) = audience.topic_page(team, request).expect("topic page");
            (ids_of(&found, |t| t.id), more)
        },
        &ids_of(&topics, |t| t.id),
    );
    assert_eq!(
        audience.topic_page(team, &first()).expect("topic page"),
        (topics.iter().rev().cloned().collect::<Vec<_>>(), false),
        "whole records"
    );
    assert_eq!(sorted(audience.topics(team).expect("topics"), |t| t.id), topics);
    assert_eq!(audience.topics(other).expect("topics"), vec![their_topic.clone()]);
    let private = Topic {
        default_subscription: Subscription::OptOut,
        visibility: Visibility::Private,
        updated_at: ids.now(),
        ..topics[1].clone()
    };
    let updated = topic_event(ids, &private, EventKind::TopicUpdated);
    audience.put_topic(&private, Some(&updated)).expect("put topic");
    assert!(in_outbox(ids, &updated));
    assert_eq!(audience.topic(team, private.id).expect("topic"), Some(private.clone()));
    let deleted = topic_event(ids, &private, EventKind::TopicDeleted);
    audience.delete_topic(&private, Some(&deleted)).expect("delete topic");
    assert!(in_outbox(ids, &deleted));
    assert!(audience.topic(team, private.id).expect("topic").is_none());
    audience.delete_topic(&topics[0], None).expect("delete topic");
    assert_eq!(audience.topics(team).expect("topics"), vec![topics[2].clone()]);

    // Property definitions: as segments.
    assert!(audience.property(team, ids.next_id()).expect("property").is_none());
    assert_eq!(
        audience.property_page(team, &first()).expect("property page"),
        (Vec::new(), false)
    );
    assert!(audience.properties(team).expect("properties").is_empty());
    let properties = vec![
        property(ids, team, "plan", PropertyType::String),
        property(ids, team, "age", PropertyType::Number),
        property(ids, team, "city", PropertyType::String),
    ];
    for one in &properties {
        audience.put_property(one).expect("put property");
    }
    let their_property = property(ids, other, "plan", PropertyType::Number);
    audience.put_property(&their_property).expect("put property");
    assert_eq!(
        audience.property(team, properties[1].id).expect("property").as_ref(),
        Some(&properties[1])
    );
    assert!(
        audience.property(other, properties[1].id).expect("property").is_none(),
        "a team sees its own only"
    );
    pages_go_newest_first(
        |request| {
            let (found, more) = audience.property_page(team, request).expect("property page");
            (ids_of(&found, |p| p.id), more)
        },
        &ids_of(&properties, |p| p.id),
    );
    assert_eq!(
        audience.property_page(team, &first()).expect("property page"),
        (properties.iter().rev().cloned().collect::<Vec<_>>(), false),
        "whole records"
    );
    assert_eq!(
        sorted(audience.properties(team).expect("properties"), |p| p.id),
        properties
    );
    assert_eq!(
        audience.properties(other).expect("properties"),
        vec![their_property.clone()]
    );
    let with_fallback = ContactProperty {
        fallback_value: Some(serde_json::json!(18)),
        ..properties[1].clone()
    };
    audience.put_property(&with_fallback).expect("put property");
    assert_eq!(
        audience.property(team, with_fallback.id).expect("property"),
        Some(with_fallback.clone())
    );
    audience.delete_property(&with_fallback).expect("delete property");
    assert!(audience.property(team, with_fallback.id).expect("property").is_none());
    assert_eq!(
        sorted(audience.properties(team).expect("properties"), |p| p.id),
        vec![properties[0].clone(), properties[2].clone()]
    );

    // Imports: kept per team, paged newest first, and among every team's unfinished
    // ones, oldest first, until they finish or fail. One with no refused rows has none.
    assert!(audience.import(team, ids.next_id()).expect("import").is_none());
    assert_eq!(
        audience.import_page(team, &first()).expect("import page"),
        (Vec::new(), false)
    );
    assert!(audience.unfinished_imports().expect("unfinished").is_empty());
    let imports = [
        import(ids, team),
        import(ids, other),
        import(ids, team),
        import(ids, team),
    ];
    for one in &imports {
        audience.put_import(one).expect("put import");
    }
    let [running, theirs, finishing, waiting] = imports.clone();
    assert_eq!(
        audience.import(team, finishing.id).expect("import").as_ref(),
        Some(&finishing)
    );
    assert!(
        audience.import(other, finishing.id).expect("import").is_none(),
        "a team sees its own only"
    );
    assert!(
        audience
            .import_errors(&finishing, 0, 10)
            .expect("import errors")
            .is_empty()
    );
    pages_go_newest_first(
        |request| {
            let (found, more) = audience.import_page(team, request).expect("import page");
            (ids_of(&found, |i| i.id), more)
        },
        &[running.id, finishing.id, waiting.id],
    );
    assert_eq!(
        audience.import_page(other, &first()).expect("import page"),
        (vec![theirs.clone()], false)
    );
    assert_eq!(
        audience.unfinished_imports().expect("unfinished"),
        imports.to_vec(),
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
        ..running
    };
    let completed = ContactImport {
        status: ImportStatus::Completed,
        completed_at: Some(ids.now()),
        ..finishing
    };
    let failed = ContactImport {
        status: ImportStatus::Failed,
        completed_at: Some(ids.now()),
        failure: Some("the file is gone".into()),
        ..theirs
    };
    for one in [&running, &completed, &failed] {
        audience.put_import(one).expect("put import");
        assert_eq!(
            audience.import(one.team_id, one.id).expect("import").as_ref(),
            Some(one)
        );
    }
    assert_eq!(
        audience.unfinished_imports().expect("unfinished"),
        vec![running.clone(), waiting],
        "the finished and the failed leave"
    );

    // Erasing the team takes its segments, topics, properties and imports (unfinished
    // ones leave the worker's list too), and none of another team's.
    let their_waiting = import(ids, other);
    audience.put_import(&their_waiting).expect("put import");
    while audience.erase_team(team).expect("erase") {}
    assert!(audience.segments(team).expect("segments").is_empty());
    assert!(audience.segment(team, segments[0].id).expect("segment").is_none());
    assert_eq!(
        audience.segment_page(team, &first()).expect("segment page"),
        (Vec::new(), false)
    );
    assert!(audience.topics(team).expect("topics").is_empty());
    assert!(audience.topic(team, topics[2].id).expect("topic").is_none());
    assert_eq!(
        audience.topic_page(team, &first()).expect("topic page"),
        (Vec::new(), false)
    );
    assert!(audience.properties(team).expect("properties").is_empty());
    assert!(audience.property(team, properties[0].id).expect("property").is_none());
    assert_eq!(
        audience.property_page(team, &first()).expect("property page"),
        (Vec::new(), false)
    );
    assert!(audience.import(team, running.id).expect("import").is_none());
    assert_eq!(
        audience.import_page(team, &first()).expect("import page"),
        (Vec::new(), false)
    );
    assert_eq!(
        audience.unfinished_imports().expect("unfinished"),
        vec![their_waiting.clone()],
        "an erased team's imports are not worked"
    );
    assert_eq!(audience.segments(other).expect("segments"), vec![their_segment]);
    assert_eq!(audience.topics(other).expect("topics"), vec![their_topic]);
    assert_eq!(audience.properties(other).expect("properties"), vec![their_property]);
    assert_eq!(
        audience.import_page(other, &first()).expect("import page"),
        (vec![their_waiting, failed], false)
    );
}

/// What the two traits of one backend do together: an import chunk written through the
/// contacts is read back through the audience (its progress and refused rows, in file
/// order), a segment deleted through the audience takes its membership with it, a
/// finished import expires with its refused rows, and erasing a team through both leaves
/// none of its membership or refused rows.
fn contact_and_audience_stores_agree(contacts: &dyn ContactStore, audience: &dyn AudienceStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
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
    assert!(
        audience
            .import_errors(&import(ids, team), 0, 10)
            .expect("import errors")
            .is_empty(),
        "an import's own"
    );

    // A deleted segment takes its membership; its contacts stay, naming it until their
    // next write.
    let (going, staying) = (segment(ids, team, "Going"), segment(ids, team, "Staying"));
    audience.put_segment(&going).expect("put segment");
    audience.put_segment(&staying).expect("put segment");
    let members: Vec<Contact> = (0..3)
        .map(|n| contact(ids, team, &format!("member{n}@example.com"), &[going.id, staying.id]))
        .collect();
    for one in &members {
        contacts.put(one, None, &[], Change::new()).expect("put");
    }
    let newest_first: Vec<Id> = members.iter().rev().map(|c| c.id).collect();
    assert_eq!(
        contacts.segment_ids(team, going.id, &first()).expect("segment ids"),
        (newest_first.clone(), false)
    );
    audience.delete_segment(&going).expect("delete segment");
    assert_eq!(
        contacts.segment_ids(team, going.id, &first()).expect("segment ids"),
        (Vec::new(), false),
        "the membership goes with the segment"
    );
    assert_eq!(
        contacts.segment_page(team, going.id, &first()).expect("segment page"),
        (Vec::new(), false)
    );
    for one in &members {
        assert_eq!(
            contacts.get(team, one.id).expect("get").as_ref(),
            Some(one),
            "contacts stay"
        );
    }
    assert_eq!(
        contacts.segment_ids(team, staying.id, &first()).expect("segment ids"),
        (newest_first, false),
        "another segment's membership stays"
    );

    // `[retention] imports`: a finished import is due from its finishing, a running one
    // never; expiring one takes its refused rows and leaves the other finished one.
    let finished = ContactImport {
        status: ImportStatus::Completed,
        completed_at: Some(ids.now()),
        ..import(ids, team)
    };
    contacts
        .commit_import(&[], &[], &[refused(1)], &finished)
        .expect("commit import");
    let sweep = audience.import_expiry();
    let horizon = ids.now().saturating_add(std::time::Duration::from_secs(1));
    let due = sweep.queue().due(horizon, None, 10).expect("due");
    let entry = |one: &ContactImport| {
        (
            one.completed_at,
            [team.as_bytes().as_slice(), one.id.as_bytes()].concat(),
        )
    };
    assert_eq!(
        due.iter().map(|d| (Some(d.at), d.key.clone())).collect::<Vec<_>>(),
        vec![entry(&done), entry(&finished)],
        "the finished ones, by the time they finished"
    );
    assert_eq!(sweep.expire(&[&due[1]]).expect("expire"), 1);
    assert!(audience.import(team, finished.id).expect("import").is_none(), "expired");
    assert!(
        audience
            .import_errors(&finished, 0, 10)
            .expect("import errors")
            .is_empty()
    );
    assert_eq!(audience.import(team, done.id).expect("import"), Some(done.clone()));
    assert_eq!(rows(0, 10), vec![1, 2, 3, 4, 5], "not expired yet");

    // Erasing the team through both traits leaves nothing of it; another team's stays.
    let their_segment = segment(ids, other, "Theirs");
    audience.put_segment(&their_segment).expect("put segment");
    let theirs = contact(ids, other, "member0@example.com", &[their_segment.id]);
    contacts.put(&theirs, None, &[], Change::new()).expect("put");
    let their_import = import(ids, other);
    audience.put_import(&their_import).expect("put import");
    contacts
        .commit_import(&[], &[], &[refused(7)], &their_import)
        .expect("commit import");
    while contacts.erase_team(team).expect("erase") {}
    while audience.erase_team(team).expect("erase") {}
    assert_eq!(
        contacts.segment_ids(team, staying.id, &first()).expect("segment ids"),
        (Vec::new(), false),
        "no membership is left"
    );
    assert!(audience.import_errors(&done, 0, 10).expect("import errors").is_empty());
    assert_eq!(contacts.count(team).expect("count"), 0);
    assert_eq!(
        contacts
            .segment_ids(other, their_segment.id, &first())
            .expect("segment ids"),
        (vec![theirs.id], false)
    );
    assert_eq!(
        contacts
            .segment_page(other, their_segment.id, &first())
            .expect("segment page"),
        (vec![theirs], false)
    );
    assert_eq!(
        audience.import_errors(&their_import, 0, 10).expect("import errors"),
        vec![refused(7)]
    );
}

#[test]
fn rocksdb_contacts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    contact_store_conformance(
        &RocksContacts::new(store.clone()),
        &RocksCounters::new(store.clone()),
        &store,
    );
}

#[test]
fn rocksdb_audiences_keep_the_contract() {
    let (_dir, store) = rocksdb();
    audience_store_conformance(&RocksContacts::new(store.clone()), &store);
}

#[test]
fn rocksdb_contacts_and_audiences_keep_the_contract_together() {
    let (_dir, store) = rocksdb();
    let backend = RocksContacts::new(store.clone());
    contact_and_audience_stores_agree(&backend, &backend, &store);
}

#[test]
fn postgres_contacts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    // One database for both: what the counters stage runs in the contact's transaction.
    let db = postgres();
    contact_store_conformance(
        &PostgresContacts::new(db.clone(), store.clone()),
        &PostgresCounters::new(db, store.clock().clone()),
        &store,
    );
}

#[test]
fn postgres_audiences_keep_the_contract() {
    let (_dir, store) = rocksdb();
    audience_store_conformance(&PostgresContacts::new(postgres(), store.clone()), &store);
}

#[test]
fn postgres_contacts_and_audiences_keep_the_contract_together() {
    let (_dir, store) = rocksdb();
    let backend = PostgresContacts::new(postgres(), store.clone());
    contact_and_audience_stores_agree(&backend, &backend, &store);
}
