//! What every [`SuppressionStore`] does, run on the RocksDB one and the PostgreSQL one: a team's suppressed
//! addresses are found by address (trimmed, in any case: what delivery checks before
//! connecting) and by id, in their own team only; they page newest first, with and
//! without a filter by origin; a change adds and removes at once with its
//! `suppression.*` events in the outbox, an address replaced in one change staying
//! suppressed under its new entry; a removed entry is gone every way; and an addition
//! staged into a change lands only with that change.

use herald::events::{Event, EventKind};
use herald::storage::page::{Cursor, PageRequest};
use herald::storage::{Change, Node};
use herald::suppressions::{Origin, PostgresSuppressions, RocksSuppressions, Suppression, SuppressionStore};
use herald_queue::{Id, Store};

use crate::conformance::{ids_of, in_outbox, page, pages_go_newest_first, postgres, rocksdb};

/// An entry of `team_id` for `email`; `ids` is where ids and times come from.
fn entry(ids: &Store, team_id: Id, email: &str, origin: Origin) -> Suppression {
    let source = (origin != Origin::Manual).then(|| ids.next_id());
    Suppression::new((ids.next_id(), ids.now()), team_id, email, origin, source)
}

/// An event of `kind` about `suppression`.
fn event(ids: &Store, suppression: &Suppression, kind: EventKind) -> Event {
    Event {
        id: ids.next_id(),
        team_id: suppression.team_id,
        kind,
        created_at: ids.now(),
        data: suppression.event_json(),
    }
}

/// The ids of `team_id`'s page from `request` (of `origin`, when given), and whether
/// more lie beyond it; every entry on it is of `origin`.
fn listed(
    suppressions: &dyn SuppressionStore,
    team_id: Id,
    request: &PageRequest,
    origin: Option<Origin>,
) -> (Vec<Id>, bool) {
    let (page, more) = suppressions.page(team_id, request, origin).expect("page");
    assert!(
        page.iter()
            .all(|s| origin.is_none_or(|o| s.origin == o) && s.team_id == team_id),
        "{origin:?} of {team_id} alone: {page:?}"
    );
    (ids_of(&page, |s| s.id), more)
}

/// What every [`SuppressionStore`] does: `ids` is where ids and times come from, and
/// holds the outbox.
fn suppression_store_conformance(suppressions: &dyn SuppressionStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    absent_entries_read_as_none(suppressions, ids, team);
    let made = entries_are_found_by_address_and_by_id_in_their_team(suppressions, ids, team, other);
    entries_page_newest_first(suppressions, team, &made);
    a_filter_by_origin_pages_its_matches_alone(suppressions, team, &made);
    a_removal_removes_those_entries_alone(suppressions, ids, &made, other);
    an_address_removed_and_added_again_answers_with_its_new_entry(suppressions, ids, team);
    an_address_replaced_in_one_change_stays_suppressed(suppressions, ids, team);
    a_staged_entry_lands_with_its_change(suppressions, ids, team);
}

/// Nothing is found where nothing was written, and an empty change is no error.
fn absent_entries_read_as_none(suppressions: &dyn SuppressionStore, ids: &Store, team: Id) {
    assert!(suppressions.find(team, "nobody@example.com").expect("find").is_none());
    assert!(
        suppressions
            .find_by_id(team, ids.next_id())
            .expect("find by id")
            .is_none()
    );
    let start = page(10, Cursor::Start);
    assert_eq!(listed(suppressions, team, &start, None), (Vec::new(), false));
    assert_eq!(
        listed(suppressions, team, &start, Some(Origin::Bounce)),
        (Vec::new(), false)
    );
    suppressions.apply(&[], &[], &[]).expect("nothing to do");
    assert_eq!(listed(suppressions, team, &start, None), (Vec::new(), false));
}

/// The origin of the `n`th entry made: bounces (0, 2, 4, 6) and complaints (1, 5) in
/// turn, one manual (3).
fn origin_of(n: usize) -> Origin {
    match n {
        3 => Origin::Manual,
        n if n % 2 == 0 => Origin::Bounce,
        _ => Origin::Complaint,
    }
}

/// Seven entries of `team`, added in two changes (the second with its events), and one of
/// `other` for an address `team` has too: each is found by its address (trimmed, in any
/// case) and by its id, in its own team only. Returns `team`'s, oldest first.
fn entries_are_found_by_address_and_by_id_in_their_team(
    suppressions: &dyn SuppressionStore,
    ids: &Store,
    team: Id,
    other: Id,
) -> Vec<Suppression> {
    let made: Vec<Suppression> = (0..7)
        .map(|n| entry(ids, team, &format!("User{n}@Example.com"), origin_of(n)))
        .collect();
    let (early, late) = made.split_at(2);
    suppressions.apply(early, &[], &[]).expect("add");
    let added: Vec<Event> = late
        .iter()
        .map(|s| event(ids, s, EventKind::SuppressionAdded))
        .collect();
    suppressions.apply(late, &[], &added).expect("add");
    for one in &added {
        assert!(in_outbox(ids, one), "the events land with the entries");
    }
    let stranger = entry(ids, other, "user2@example.com", Origin::Manual);
    suppressions
        .apply(std::slice::from_ref(&stranger), &[], &[])
        .expect("add");

    for (n, one) in made.iter().enumerate() {
        assert_eq!(one.email, format!("user{n}@example.com"), "kept lower case");
        assert_eq!(suppressions.find(team, &one.email).expect("find").as_ref(), Some(one));
        assert_eq!(
            suppressions.find_by_id(team, one.id).expect("find by id").as_ref(),
            Some(one)
        );
    }
    let wanted = &made[2];
    assert_eq!(
        suppressions.find(team, " User2@EXAMPLE.com ").expect("find").as_ref(),
        Some(wanted),
        "addresses compare trimmed and in any case"
    );
    assert_eq!(
        suppressions.find(other, "user2@example.com").expect("find"),
        Some(stranger.clone()),
        "an address is suppressed per team"
    );
    assert!(suppressions.find(other, "user3@example.com").expect("find").is_none());
    assert!(suppressions.find_by_id(other, wanted.id).expect("find by id").is_none());
    assert!(
        suppressions
            .find_by_id(team, stranger.id)
            .expect("find by id")
            .is_none()
    );
    let (theirs, more) = suppressions.page(other, &page(10, Cursor::Start), None).expect("page");
    assert_eq!((theirs, more), (vec![stranger], false));
    made
}

/// Pages of entries keep the cursor cases of [`pages_go_newest_first`], and a page of
/// all of them holds them whole.
fn entries_page_newest_first(suppressions: &dyn SuppressionStore, team: Id, made: &[Suppression]) {
    pages_go_newest_first(
        |request| listed(suppressions, team, request, None),
        &ids_of(made, |s| s.id),
    );
    let (whole, more) = suppressions.page(team, &page(7, Cursor::Start), None).expect("page");
    assert!(!more);
    assert_eq!(whole, made.iter().rev().cloned().collect::<Vec<_>>(), "whole entries");
}

/// A filter by origin pages through its matches only, with the cursor cases of
/// [`pages_go_newest_first`], skipping the others without shortening a page; a cursor
/// naming an entry of another origin places the page all the same.
fn a_filter_by_origin_pages_its_matches_alone(suppressions: &dyn SuppressionStore, team: Id, made: &[Suppression]) {
    let bounces: Vec<Id> = made
        .iter()
        .filter(|s| s.origin == Origin::Bounce)
        .map(|s| s.id)
        .collect();
    assert_eq!(bounces.len(), 4);
    pages_go_newest_first(
        |request| listed(suppressions, team, request, Some(Origin::Bounce)),
        &bounces,
    );
    let filtered = |request: PageRequest, origin: Origin| listed(suppressions, team, &request, Some(origin));
    // Bounces are entries 0, 2, 4 and 6; complaints 1 and 5; entry 3 is manual.
    let bounce = Origin::Bounce;
    assert_eq!(
        filtered(page(1, Cursor::After(made[5].id)), bounce),
        (vec![made[4].id], true)
    );
    assert_eq!(
        filtered(page(2, Cursor::After(made[3].id)), bounce),
        (vec![made[2].id, made[0].id], false)
    );
    assert_eq!(
        filtered(page(2, Cursor::Before(made[1].id)), bounce),
        (vec![made[4].id, made[2].id], true)
    );
    assert_eq!(
        filtered(page(2, Cursor::Before(made[3].id)), bounce),
        (vec![made[6].id, made[4].id], false)
    );
    assert_eq!(
        filtered(page(10, Cursor::Start), Origin::Complaint),
        (vec![made[5].id, made[1].id], false)
    );
    assert_eq!(
        filtered(page(1, Cursor::Start), Origin::Complaint),
        (vec![made[5].id], true)
    );
    assert_eq!(
        filtered(page(10, Cursor::Start), Origin::Manual),
        (vec![made[3].id], false)
    );
}

/// A removal takes out the entries named, by address and by id and from pages, with its
/// events; the team's others and another team's entry for the same address stay.
fn a_removal_removes_those_entries_alone(
    suppressions: &dyn SuppressionStore,
    ids: &Store,
    made: &[Suppression],
    other: Id,
) {
    let team = made[0].team_id;
    let gone = [made[2].clone(), made[3].clone()];
    let removed: Vec<Event> = gone
        .iter()
        .map(|s| event(ids, s, EventKind::SuppressionRemoved))
        .collect();
    suppressions.apply(&[], &gone, &removed).expect("remove");
    for one in &removed {
        assert!(in_outbox(ids, one), "the events land with the removal");
    }
    for one in &gone {
        assert!(suppressions.find(team, &one.email).expect("find").is_none());
        assert!(suppressions.find_by_id(team, one.id).expect("find by id").is_none());
    }
    let left: Vec<Id> = [6, 5, 4, 1, 0].iter().map(|&n| made[n].id).collect();
    assert_eq!(
        listed(suppressions, team, &page(10, Cursor::Start), None),
        (left, false)
    );
    assert_eq!(
        listed(suppressions, team, &page(10, Cursor::Start), Some(Origin::Manual)),
        (Vec::new(), false),
        "the only manual entry went"
    );
    for n in [0, 1, 4, 5, 6] {
        assert_eq!(
            suppressions.find(team, &made[n].email).expect("find").as_ref(),
            Some(&made[n]),
            "the others stay"
        );
    }
    assert!(
        suppressions.find(other, &made[2].email).expect("find").is_some(),
        "another team's entry for the address stays"
    );
    // A cursor naming a removed entry still places a page.
    let after_gone = listed(suppressions, team, &page(10, Cursor::After(made[3].id)), None);
    assert_eq!(after_gone, (vec![made[1].id, made[0].id], false));
    let before_gone = listed(suppressions, team, &page(10, Cursor::Before(made[2].id)), None);
    assert_eq!(before_gone, (vec![made[6].id, made[5].id, made[4].id], false));
}

/// An address removed and suppressed again answers with its new entry only: the old id
/// finds nothing, and pages list the address once, in its new place.
fn an_address_removed_and_added_again_answers_with_its_new_entry(
    suppressions: &dyn SuppressionStore,
    ids: &Store,
    team: Id,
) {
    let first = entry(ids, team, "again@example.com", Origin::Manual);
    suppressions.apply(std::slice::from_ref(&first), &[], &[]).expect("add");
    assert_eq!(
        suppressions.find(team, "again@example.com").expect("find").as_ref(),
        Some(&first)
    );
    suppressions
        .apply(&[], std::slice::from_ref(&first), &[])
        .expect("remove");
    assert!(suppressions.find(team, "again@example.com").expect("find").is_none());
    let second = entry(ids, team, "again@example.com", Origin::Bounce);
    suppressions
        .apply(std::slice::from_ref(&second), &[], &[])
        .expect("add");
    assert_eq!(
        suppressions.find(team, "again@example.com").expect("find").as_ref(),
        Some(&second)
    );
    assert!(suppressions.find_by_id(team, first.id).expect("find by id").is_none());
    assert_eq!(
        suppressions.find_by_id(team, second.id).expect("find by id").as_ref(),
        Some(&second)
    );
    let (all, _) = suppressions.page(team, &page(100, Cursor::Start), None).expect("page");
    let again: Vec<Id> = all
        .iter()
        .filter(|s| s.email == "again@example.com")
        .map(|s| s.id)
        .collect();
    assert_eq!(again, vec![second.id]);
    assert_eq!(all.first().map(|s| s.id), Some(second.id), "the newest");
}

/// An address whose entry is replaced in one change (a manual entry becoming a bounce)
/// stays suppressed, under its new entry: the change adds and removes "at once", so a
/// change holding both leaves what it added.
fn an_address_replaced_in_one_change_stays_suppressed(suppressions: &dyn SuppressionStore, ids: &Store, team: Id) {
    let manual = entry(ids, team, "x@example.com", Origin::Manual);
    suppressions
        .apply(std::slice::from_ref(&manual), &[], &[])
        .expect("add");
    let bounce = entry(ids, team, "X@example.com", Origin::Bounce);
    let events = [
        event(ids, &manual, EventKind::SuppressionRemoved),
        event(ids, &bounce, EventKind::SuppressionAdded),
    ];
    let (added, removed) = (std::slice::from_ref(&bounce), std::slice::from_ref(&manual));
    suppressions.apply(added, removed, &events).expect("replace");
    for one in &events {
        assert!(in_outbox(ids, one), "the events land with the change");
    }
    assert_eq!(
        suppressions.find(team, "x@example.com").expect("find").as_ref(),
        Some(&bounce)
    );
    assert_eq!(
        suppressions.find_by_id(team, bounce.id).expect("find by id").as_ref(),
        Some(&bounce)
    );
    assert!(suppressions.find_by_id(team, manual.id).expect("find by id").is_none());
    let (newest, _) = suppressions.page(team, &page(1, Cursor::Start), None).expect("page");
    assert_eq!(newest, vec![bounce.clone()], "listed under its new entry");
    assert_eq!(
        listed(suppressions, team, &page(10, Cursor::Start), Some(Origin::Manual)),
        (Vec::new(), false),
        "the old entry is listed no more"
    );
}

/// An addition staged into a change is not written until the change commits, and then
/// is found every way.
fn a_staged_entry_lands_with_its_change(suppressions: &dyn SuppressionStore, ids: &Store, team: Id) {
    let bounced = entry(ids, team, "bounced@example.com", Origin::Bounce);
    let mut change = Change::new();
    suppressions.stage(&mut change, &bounced).expect("stage");
    assert!(!change.is_empty(), "the addition is staged");
    assert!(
        suppressions.find(team, &bounced.email).expect("find").is_none(),
        "staged is not written"
    );
    assert!(suppressions.find_by_id(team, bounced.id).expect("find by id").is_none());
    // The change is the node's: the outcome or the complaint that causes it commits it.
    Node::new(ids.clone()).commit(change).expect("commit");
    assert_eq!(
        suppressions.find(team, "Bounced@Example.com").expect("find").as_ref(),
        Some(&bounced)
    );
    assert_eq!(
        suppressions.find_by_id(team, bounced.id).expect("find by id").as_ref(),
        Some(&bounced)
    );
    let (newest, more) = suppressions.page(team, &page(1, Cursor::Start), None).expect("page");
    assert_eq!((newest, more), (vec![bounced], true), "the newest");
}

#[test]
fn rocksdb_suppressions_keep_the_contract() {
    let (_dir, store) = rocksdb();
    suppression_store_conformance(&RocksSuppressions::new(store.clone()), &store);
}

#[test]
fn postgres_suppressions_keep_the_contract() {
    let (_dir, store) = rocksdb();
    suppression_store_conformance(&PostgresSuppressions::new(postgres(), store.clone()), &store);
}
