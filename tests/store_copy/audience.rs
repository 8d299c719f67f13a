//! Contacts with their topic choices, property values and segments, and their teams'
//! segments, topics, property definitions and imports copied and read back equal, every
//! way the stores find them, with each team's count of contacts right.

use std::collections::BTreeMap;

use herald::contacts::model::{
    Columns, ContactImport, ImportCounts, ImportError, ImportStatus, OnConflict, PropertyColumn, PropertyType,
    Visibility,
};
use herald::contacts::{Contact, ContactProperty, Segment, Subscription, Topic, TopicChoice};
use herald::storage::Change;
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store};

use crate::{Copying, count};

/// Every item in one page.
fn all() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

/// A new contact of `team_id` at `email`, in `segments`.
fn contact(ids: &Store, team_id: Id, email: &str, segments: &[Id]) -> Contact {
    Contact {
        id: ids.next_id(),
        team_id,
        email: email.into(),
        first_name: Some("Ada".into()),
        last_name: Some("Lovelace".into()),
        unsubscribed: false,
        created_at: ids.now(),
        updated_at: ids.now(),
        segments: segments.to_vec(),
        topics: Vec::new(),
        properties: BTreeMap::new(),
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

/// A property definition of `team_id` keyed `key`.
fn property(ids: &Store, team_id: Id, key: &str, kind: PropertyType, fallback: serde_json::Value) -> ContactProperty {
    ContactProperty {
        id: ids.next_id(),
        team_id,
        key: key.into(),
        kind,
        fallback_value: Some(fallback),
        created_at: ids.now(),
    }
}

/// An import of `team_id` in `status`.
fn import(ids: &Store, team_id: Id, status: ImportStatus, columns: Columns) -> ContactImport {
    ContactImport {
        id: ids.next_id(),
        team_id,
        status,
        created_at: ids.now(),
        completed_at: status.is_final().then(|| ids.now()),
        counts: ImportCounts::default(),
        columns,
        on_conflict: OnConflict::Skip,
        segments: Vec::new(),
        topics: Vec::new(),
        offset: 32,
        line: 2,
        failure: None,
    }
}

/// The row `row` an import refused.
fn refused(row: u64) -> ImportError {
    ImportError {
        row,
        line: row + 1,
        reason: format!("row {row} has no address"),
    }
}

/// Two teams' audiences on RocksDB (contacts written one by one and by an import, one
/// changed, one deleted, a segment deleted while a contact still names it) come out of
/// PostgreSQL as they went in: contacts by id and by address, paged, by segment and
/// counted; segments, topics and properties listed; imports with their columns and
/// refused rows, the unfinished one still waiting for the worker.
#[test]
fn contacts_and_their_audiences_are_copied_as_they_were() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let (team, other) = (ids.next_id(), ids.next_id());
    let (members, empty, deleted) = (
        segment(ids, team, "Members"),
        segment(ids, team, "Empty"),
        segment(ids, team, "Deleted"),
    );
    for one in [&members, &empty, &deleted] {
        local.audience.put_segment(one).expect("segment");
    }
    let news = Topic {
        id: ids.next_id(),
        team_id: team,
        name: "News".into(),
        description: Some("All the news".into()),
        default_subscription: Subscription::OptIn,
        visibility: Visibility::Private,
        created_at: ids.now(),
        updated_at: ids.now(),
    };
    local.audience.put_topic(&news, None).expect("topic");
    let plan = property(ids, team, "plan", PropertyType::String, serde_json::json!("free"));
    let seats = property(ids, team, "seats", PropertyType::Number, serde_json::json!(1));
    for one in [&plan, &seats] {
        local.audience.put_property(one).expect("property");
    }

    let mut ada = contact(ids, team, "ada@Example.com", &[members.id, deleted.id]);
    ada.topics = vec![TopicChoice {
        id: news.id,
        subscription: Subscription::OptOut,
    }];
    ada.properties = BTreeMap::from([(plan.id, serde_json::json!("gold")), (seats.id, serde_json::json!(42))]);
    let bob = contact(ids, team, "bob@example.com", &[]);
    let gone = contact(ids, team, "gone@example.com", &[members.id]);
    let theirs = contact(ids, other, "ada@example.com", &[]);
    for one in [&ada, &bob, &gone, &theirs] {
        local.contacts.put(one, None, &[], Change::new()).expect("put");
    }
    let moved = Contact {
        email: "bob@example.org".into(),
        segments: vec![members.id],
        unsubscribed: true,
        ..bob.clone()
    };
    local
        .contacts
        .put(&moved, Some(&bob), &[], Change::new())
        .expect("change");
    local.contacts.delete(&gone, &[]).expect("delete");
    local.audience.delete_segment(&deleted).expect("delete segment");

    let columns = Columns {
        email: 0,
        first_name: Some(1),
        last_name: None,
        unsubscribed: Some(2),
        properties: vec![PropertyColumn {
            id: plan.id,
            key: plan.key.clone(),
            index: 3,
            kind: PropertyType::String,
            boolean: false,
        }],
    };
    let mut finished = import(ids, team, ImportStatus::Completed, columns.clone());
    finished.counts = ImportCounts {
        total: 3,
        created: 1,
        updated: 0,
        skipped: 0,
        failed: 2,
    };
    finished.segments = vec![members.id];
    finished.topics = ada.topics.clone();
    let imported = contact(ids, team, "imported@example.com", &[members.id]);
    let errors = vec![refused(2), refused(3)];
    local
        .contacts
        .commit_import(&[(imported.clone(), None)], &[], &errors, &finished)
        .expect("import");
    let waiting = import(ids, other, ImportStatus::Queued, columns);
    local.audience.put_import(&waiting).expect("import");

    let (copied, shared) = copying.copy();
    assert_eq!(count(&copied, "segments"), 2);
    assert_eq!(count(&copied, "topics"), 1);
    assert_eq!(count(&copied, "contact properties"), 2);
    assert_eq!(count(&copied, "contacts"), 4);
    assert_eq!(count(&copied, "segment memberships"), 3);
    assert_eq!(count(&copied, "contact imports"), 2);
    assert_eq!(count(&copied, "import errors"), 2);

    for made in [&ada, &moved, &theirs, &imported] {
        assert_eq!(
            shared.contacts.get(made.team_id, made.id).expect("get").as_ref(),
            Some(made)
        );
        let address = made.email.replace("example", "EXAMPLE");
        let found = shared.contacts.by_email(made.team_id, &address).expect("by email");
        assert_eq!(found.as_ref(), Some(made));
    }
    assert_eq!(shared.contacts.get(team, gone.id).expect("get"), None);
    assert_eq!(
        shared.contacts.by_email(team, "bob@example.com").expect("by email"),
        None
    );
    assert_eq!(
        shared.contacts.page(team, &all()).expect("page"),
        (vec![imported.clone(), moved.clone(), ada.clone()], false)
    );
    assert_eq!(shared.contacts.count(team).expect("count"), 3);
    assert_eq!(shared.contacts.count(other).expect("count"), 1);
    assert_eq!(
        shared
            .contacts
            .segment_page(team, members.id, &all())
            .expect("segment page"),
        (vec![imported, moved, ada], false)
    );
    assert_eq!(
        shared
            .contacts
            .segment_ids(team, deleted.id, &all())
            .expect("segment ids"),
        (Vec::new(), false),
        "a deleted segment's index stays gone though its contact names it"
    );

    assert_eq!(shared.audience.segments(team).expect("segments"), vec![members, empty]);
    assert_eq!(shared.audience.segment(team, deleted.id).expect("segment"), None);
    assert_eq!(shared.audience.topics(team).expect("topics"), vec![news]);
    assert_eq!(shared.audience.properties(team).expect("properties"), vec![plan, seats]);
    assert_eq!(
        shared.audience.import(team, finished.id).expect("import"),
        Some(finished.clone())
    );
    assert_eq!(
        shared.audience.import(other, waiting.id).expect("import"),
        Some(waiting.clone())
    );
    assert_eq!(shared.audience.import_errors(&finished, 0, 10).expect("errors"), errors);
    assert_eq!(shared.audience.unfinished_imports().expect("unfinished"), vec![waiting]);
}
