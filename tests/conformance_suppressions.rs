//! [`SuppressionStore`] as a contract: the suite any implementation must pass, run here
//! against the RocksDB one on a real store in a temp directory. A team's suppressed
//! addresses by address (what delivery checks before connecting) and by id, pages of
//! them with and without a filter by origin, and the `suppression.*` events written with
//! each change.

#[path = "util/conformance.rs"]
mod conformance;

use conformance::{ids_of, in_outbox, page, pages_go_newest_first, rocksdb};
use herald::events::{Event, EventKind};
use herald::storage::page::{Cursor, PageRequest};
use herald::suppressions::{Origin, RocksSuppressions, Suppression, SuppressionStore};
use herald_queue::{Id, Store};

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
    assert_eq!(
        suppressions.page(team, &start, None).expect("page"),
        (Vec::new(), false)
    );
    assert_eq!(
        suppressions.page(team, &start, Some(Origin::Bounce)).expect("page"),
        (Vec::new(), false)
    );
    suppressions.apply(&[], &[], &[]).expect("nothing to do");
}

/// The origin of the `n`th entry made: bounces and complaints in turn, one manual.
fn origin_of(n: usize) -> Origin {
    match n {
        3 => Origin::Manual,
        n if n % 2 == 0 => Origin::Bounce,
        _ => Origin::Complaint,
    }
}

/// Six entries of `team`, added in two changes with their events, and one of `other`
/// for an address `team` has too: each is found by its address (trimmed, in any case)
/// and by its id, in its own team only. Returns `team`'s, oldest first.
fn entries_are_found_by_address_and_by_id_in_their_team(
    suppressions: &dyn SuppressionStore,
    ids: &Store,
    team: Id,
    other: Id,
) -> Vec<Suppression> {
    let made: Vec<Suppression> = (0..6)
        .map(|n| {
            let source = (origin_of(n) != Origin::Manual).then(|| ids.next_id());
            Suppression::new(
                (ids.next_id(), ids.now()),
                team,
                &format!("user{n}@example.com"),
                origin_of(n),
                source,
            )
        })
        .collect();
    let (early, late) = made.split_at(2);
    suppressions.apply(early, &[], &[]).expect("add");
    let added: Vec<Event> = late
        .iter()
        .map(|s| event(ids, s, EventKind::SuppressionAdded))
        .collect();
    suppressions.apply(late, &[], &added).expect("add");
    assert!(
        added.iter().all(|e| in_outbox(ids, e)),
        "the events land with the entries"
    );
    let stranger = Suppression::new(
        (ids.next_id(), ids.now()),
        other,
        "user2@example.com",
        Origin::Manual,
        None,
    );
    suppressions
        .apply(std::slice::from_ref(&stranger), &[], &[])
        .expect("add");

    let wanted = &made[2];
    assert_eq!(
        suppressions.find(team, "user2@example.com").expect("find").as_ref(),
        Some(wanted)
    );
    assert_eq!(
        suppressions.find(team, " User2@EXAMPLE.com ").expect("find").as_ref(),
        Some(wanted),
        "addresses compare trimmed and in any case"
    );
    assert_eq!(
        suppressions.find_by_id(team, wanted.id).expect("find by id").as_ref(),
        Some(wanted)
    );
    assert_eq!(
        suppressions.find(other, "user2@example.com").expect("find"),
        Some(stranger.clone()),
        "an address is suppressed per team"
    );
    assert!(suppressions.find_by_id(other, wanted.id).expect("find by id").is_none());
    assert!(
        suppressions
            .find_by_id(team, stranger.id)
            .expect("find by id")
            .is_none()
    );
    let start = page(10, Cursor::Start);
    assert_eq!(
        suppressions.page(other, &start, None).expect("page"),
        (vec![stranger], false)
    );
    made
}

/// Pages of entries keep the cursor cases of [`pages_go_newest_first`], and a page of
/// all of them holds them whole.
fn entries_page_newest_first(suppressions: &dyn SuppressionStore, team: Id, made: &[Suppression]) {
    let listed = |request: &PageRequest| {
        let (page, more) = suppressions.page(team, request, None).expect("page");
        (ids_of(&page, |s| s.id), more)
    };
    pages_go_newest_first(listed, &ids_of(made, |s| s.id));
    let (whole, _) = suppressions.page(team, &page(6, Cursor::Start), None).expect("page");
    assert_eq!(whole, made.iter().rev().cloned().collect::<Vec<_>>(), "whole entries");
}

/// A filter by origin pages through its matches only, in the same order and with the
/// same cursors, skipping the others without shortening a page.
fn a_filter_by_origin_pages_its_matches_alone(suppressions: &dyn SuppressionStore, team: Id, made: &[Suppression]) {
    let listed = |request: PageRequest, origin: Origin| {
        let (page, more) = suppressions.page(team, &request, Some(origin)).expect("page");
        assert!(page.iter().all(|s| s.origin == origin), "{origin:?} alone");
        (ids_of(&page, |s| s.id), more)
    };
    // Bounces are entries 0, 2 and 4; complaints 1 and 5; entry 3 is manual.
    let bounces = Origin::Bounce;
    assert_eq!(
        listed(page(2, Cursor::Start), bounces),
        (vec![made[4].id, made[2].id], true)
    );
    assert_eq!(
        listed(page(2, Cursor::After(made[2].id)), bounces),
        (vec![made[0].id], false)
    );
    assert_eq!(
        listed(page(1, Cursor::After(made[5].id)), bounces),
        (vec![made[4].id], true)
    );
    assert_eq!(
        listed(page(2, Cursor::Before(made[0].id)), bounces),
        (vec![made[4].id, made[2].id], false)
    );
    assert_eq!(
        listed(page(1, Cursor::Before(made[0].id)), bounces),
        (vec![made[2].id], true)
    );
    let complaints = Origin::Complaint;
    assert_eq!(
        listed(page(10, Cursor::Start), complaints),
        (vec![made[5].id, made[1].id], false)
    );
    assert_eq!(
        listed(page(10, Cursor::Start), Origin::Manual),
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
    assert!(removed.iter().all(|e| in_outbox(ids, e)));
    for one in &gone {
        assert!(suppressions.find(team, &one.email).expect("find").is_none());
        assert!(suppressions.find_by_id(team, one.id).expect("find by id").is_none());
    }
    let (left, more) = suppressions.page(team, &page(10, Cursor::Start), None).expect("page");
    assert_eq!(
        ids_of(&left, |s| s.id),
        vec![made[5].id, made[4].id, made[1].id, made[0].id]
    );
    assert!(!more);
    assert!(
        suppressions.find(other, &made[2].email).expect("find").is_some(),
        "another team's entry for the address stays"
    );
    // A cursor naming a removed entry still places a page.
    let (after_gone, _) = suppressions
        .page(team, &page(10, Cursor::After(made[3].id)), None)
        .expect("page");
    assert_eq!(ids_of(&after_gone, |s| s.id), vec![made[1].id, made[0].id]);
    let (before_gone, _) = suppressions
        .page(team, &page(10, Cursor::Before(made[2].id)), None)
        .expect("page");
    assert_eq!(ids_of(&before_gone, |s| s.id), vec![made[5].id, made[4].id]);
}

/// An address removed and suppressed again answers with its new entry only: the old id
/// finds nothing, and pages list the address once, in its new place.
fn an_address_removed_and_added_again_answers_with_its_new_entry(
    suppressions: &dyn SuppressionStore,
    ids: &Store,
    team: Id,
) {
    let first = Suppression::new(
        (ids.next_id(), ids.now()),
        team,
        "again@example.com",
        Origin::Manual,
        None,
    );
    suppressions.apply(std::slice::from_ref(&first), &[], &[]).expect("add");
    suppressions
        .apply(&[], std::slice::from_ref(&first), &[])
        .expect("remove");
    let second = Suppression::new(
        (ids.next_id(), ids.now()),
        team,
        "again@example.com",
        Origin::Bounce,
        Some(ids.next_id()),
    );
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
    let (listed, _) = suppressions.page(team, &page(100, Cursor::Start), None).expect("page");
    let again: Vec<Id> = listed
        .iter()
        .filter(|s| s.email == "again@example.com")
        .map(|s| s.id)
        .collect();
    assert_eq!(again, vec![second.id]);
    assert_eq!(listed.first().map(|s| s.id), Some(second.id), "the newest");
}

/// The RocksDB suppressions pass the suite.
#[test]
fn rocksdb_suppressions_keep_the_contract() {
    let (_dir, store) = rocksdb();
    suppression_store_conformance(&RocksSuppressions::new(store.clone()), &store);
}

/// An address whose entry is replaced in one change (a manual entry becoming a bounce,
/// say) stays suppressed, under its new entry. The trait promises the additions and the
/// removals "at once", so a change holding both must leave what it added.
///
/// (`RocksSuppressions::apply` once staged the additions before the removals; an
/// entry's address key is the same for the old entry and the new, so the removal
/// deleted the new entry and left its id index pointing at nothing.)
#[test]
fn an_address_replaced_in_one_change_stays_suppressed() {
    let (_dir, store) = rocksdb();
    let suppressions = RocksSuppressions::new(store.clone());
    let team = store.next_id();
    let manual = Suppression::new(
        (store.next_id(), store.now()),
        team,
        "x@example.com",
        Origin::Manual,
        None,
    );
    suppressions
        .apply(std::slice::from_ref(&manual), &[], &[])
        .expect("add");
    let bounce = Suppression::new(
        (store.next_id(), store.now()),
        team,
        "x@example.com",
        Origin::Bounce,
        Some(store.next_id()),
    );
    let (added, removed) = (std::slice::from_ref(&bounce), std::slice::from_ref(&manual));
    suppressions.apply(added, removed, &[]).expect("replace");
    assert_eq!(
        suppressions.find(team, "x@example.com").expect("find").as_ref(),
        Some(&bounce)
    );
    assert_eq!(
        suppressions.find_by_id(team, bounce.id).expect("find by id").as_ref(),
        Some(&bounce)
    );
    assert!(suppressions.find_by_id(team, manual.id).expect("find by id").is_none());
}
