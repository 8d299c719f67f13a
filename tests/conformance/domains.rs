//! What every [`DomainStore`] does, run on the RocksDB one and the PostgreSQL one: sending domains are kept by
//! team and id and by team and name (what submission resolves a sender with), as stored
//! and as decoded once and shared, paged newest first, and every team's together for the
//! verifier; each write lands with its `domain.*` event in the outbox; no read serves a
//! domain from before its latest write or delete; and the verifier's queue holds each
//! domain once, at its `next_check_at`, moved with every write and gone with the check or
//! the domain, its entries naming their domain as stored now.

use std::time::Duration;

use herald::config::DkimAlgorithm;
use herald::domains::{
    Domain, DomainStatus, DomainStore, PostgresDomains, RecordChecks, RecordStatus, RocksDomains, TlsPolicy,
    generate_dkim_key,
};
use herald::events::{Event, EventKind};
use herald::storage::due::DueQueue;
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Due, Id, Store, Timestamp};

use crate::conformance::{ids_of, in_outbox, page, pages_go_newest_first, postgres, rocksdb};

/// An hour: the steps between the checks the queue is given.
const HOUR: Duration = Duration::from_secs(3600);

/// Entries read from the queue at most at once: more than the suite ever arms.
const QUEUE_READ: usize = 1_000;

/// A new domain of `team_id` named `name`, as the domains service makes one; `ids` is
/// where ids and times come from.
fn domain(ids: &Store, team_id: Id, name: &str) -> Domain {
    Domain {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        region: "us-east-1".into(),
        custom_return_path: "send".into(),
        open_tracking: false,
        click_tracking: false,
        tls: TlsPolicy::Opportunistic,
        tracking_subdomain: None,
        // Ed25519: an RSA key takes long to make, and the store does not care which.
        dkim: generate_dkim_key(DkimAlgorithm::Ed25519).expect("a DKIM key"),
        checks: RecordChecks::all(RecordStatus::NotStarted),
        status: DomainStatus::NotStarted,
        dns_verification_skipped: false,
        created_at: ids.now(),
        verification_started_at: None,
        last_checked_at: None,
        next_check_at: None,
        failed_checks: 0,
    }
}

/// An event of `kind` about `domain`.
fn event(ids: &Store, domain: &Domain, kind: EventKind) -> Event {
    Event {
        id: ids.next_id(),
        team_id: domain.team_id,
        kind,
        created_at: ids.now(),
        data: serde_json::json!({ "id": domain.id, "name": domain.name }),
    }
}

/// What every [`DomainStore`] does: `ids` is where ids and times come from, and holds the
/// outbox.
fn domain_store_conformance(domains: &dyn DomainStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    absent_domains_read_as_none(domains, ids, team);
    let made = domains_are_found_by_id_and_by_name_in_their_team(domains, ids, team, other);
    domains_page_newest_first(domains, team, &made);
    a_changed_domain_reads_changed_every_way(domains, ids, &made[1]);
    a_deleted_domain_is_gone_every_way_alone(domains, ids, &made, other);
    the_check_queue_holds_each_domain_at_its_next_check(domains, ids);
}

/// Nothing is found where nothing was written, and nothing is due.
fn absent_domains_read_as_none(domains: &dyn DomainStore, ids: &Store, team: Id) {
    let id = ids.next_id();
    assert!(domains.get(team, id).expect("get").is_none());
    assert!(domains.cached(team, id).expect("cached").is_none());
    assert!(domains.by_name(team, "example.com").expect("by name").is_none());
    assert_eq!(
        domains.list(team, &page(10, Cursor::Start)).expect("list"),
        (Vec::new(), false)
    );
    assert!(domains.all().expect("all").is_empty());
    let queue = domains.check_queue();
    let far = ids.now().saturating_add(HOUR * 24 * 365);
    assert!(queue.due(far, None, QUEUE_READ).expect("due").is_empty());
    assert_eq!(queue.next_after(ids.now()).expect("next after"), None);
}

/// Five domains of `team` and one of `other` with a name `team` also has: each is found
/// by id and by name within its own team only, `all` holds every team's, and each
/// insert's event is in the outbox. Returns `team`'s, oldest first.
fn domains_are_found_by_id_and_by_name_in_their_team(
    domains: &dyn DomainStore,
    ids: &Store,
    team: Id,
    other: Id,
) -> Vec<Domain> {
    let made: Vec<Domain> = (0..5)
        .map(|n| domain(ids, team, &format!("mail{n}.example.com")))
        .collect();
    for (n, one) in made.iter().enumerate() {
        // An insert with no event (a team without webhooks) is as good as one with.
        let created = (n % 2 == 0).then(|| event(ids, one, EventKind::DomainCreated));
        domains.insert(one, created.as_ref()).expect("insert");
        if let Some(created) = &created {
            assert!(in_outbox(ids, created), "the event lands with the domain");
        }
    }
    let namesake = domain(ids, other, &made[2].name);
    domains.insert(&namesake, None).expect("insert");

    for one in &made {
        assert_eq!(domains.get(team, one.id).expect("get").as_ref(), Some(one));
        assert_eq!(domains.cached(team, one.id).expect("cached").as_deref(), Some(one));
        assert_eq!(domains.by_name(team, &one.name).expect("by name").as_deref(), Some(one));
    }
    let wanted = &made[2];
    assert_eq!(
        domains.by_name(other, &wanted.name).expect("by name").as_deref(),
        Some(&namesake),
        "a name is a team's own"
    );
    assert!(
        domains.get(other, wanted.id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert!(domains.cached(other, wanted.id).expect("cached").is_none());
    assert!(domains.get(team, namesake.id).expect("get").is_none());
    assert!(
        domains
            .by_name(team, "elsewhere.example.com")
            .expect("by name")
            .is_none()
    );
    assert_eq!(
        domains.list(other, &page(10, Cursor::Start)).expect("list"),
        (vec![namesake.clone()], false)
    );

    let mut all = domains.all().expect("all");
    all.sort_by_key(|d| d.id);
    let mut expected = made.clone();
    expected.push(namesake);
    assert_eq!(all, expected, "every team's");
    made
}

/// Pages of domains keep the cursor cases of [`pages_go_newest_first`], and a page of
/// all of them holds them whole.
fn domains_page_newest_first(domains: &dyn DomainStore, team: Id, made: &[Domain]) {
    let listed = |request: &PageRequest| {
        let (page, more) = domains.list(team, request).expect("list");
        (ids_of(&page, |d| d.id), more)
    };
    pages_go_newest_first(listed, &ids_of(made, |d| d.id));
    let (whole, _) = domains.list(team, &page(5, Cursor::Start)).expect("list");
    assert_eq!(whole, made.iter().rev().cloned().collect::<Vec<_>>(), "whole records");
}

/// A rewritten domain reads rewritten by id, as cached and by its name (each read just
/// before the change), and in its list, with its event in the outbox; rewritten twice,
/// the second wins.
fn a_changed_domain_reads_changed_every_way(domains: &dyn DomainStore, ids: &Store, before: &Domain) {
    let team = before.team_id;
    assert_eq!(
        domains.cached(team, before.id).expect("cached").as_deref(),
        Some(before)
    );
    assert_eq!(
        domains.by_name(team, &before.name).expect("by name").as_deref(),
        Some(before)
    );
    let verified = Domain {
        status: DomainStatus::Verified,
        checks: RecordChecks::all(RecordStatus::Verified),
        last_checked_at: Some(ids.now()),
        next_check_at: Some(ids.now()),
        open_tracking: true,
        ..before.clone()
    };
    let updated = event(ids, &verified, EventKind::DomainUpdated);
    domains.put(&verified, Some(&updated)).expect("put");
    assert!(in_outbox(ids, &updated), "the event lands with the change");
    assert_eq!(domains.get(team, before.id).expect("get").as_ref(), Some(&verified));
    assert_eq!(
        domains.cached(team, before.id).expect("cached").as_deref(),
        Some(&verified),
        "a read after a change sees the change"
    );
    assert_eq!(
        domains.by_name(team, &before.name).expect("by name").as_deref(),
        Some(&verified)
    );
    let (listed, _) = domains.list(team, &page(10, Cursor::Start)).expect("list");
    assert_eq!(
        listed.iter().find(|d| d.id == before.id),
        Some(&verified),
        "listed changed"
    );
    let enforced = Domain {
        tls: TlsPolicy::Enforced,
        next_check_at: None,
        ..verified
    };
    domains.put(&enforced, None).expect("put");
    assert_eq!(domains.get(team, before.id).expect("get").as_ref(), Some(&enforced));
    assert_eq!(
        domains.cached(team, before.id).expect("cached").as_deref(),
        Some(&enforced)
    );
    assert_eq!(
        domains.by_name(team, &before.name).expect("by name").as_deref(),
        Some(&enforced)
    );
    let all = domains.all().expect("all");
    assert_eq!(
        all.iter().find(|d| d.id == before.id),
        Some(&enforced),
        "all sees it too"
    );
}

/// A deleted domain is gone by id, as cached, by name (each read just before), from the
/// list and from `all`, with its event in the outbox; the team's others and another
/// team's namesake stay, and the name is free again.
fn a_deleted_domain_is_gone_every_way_alone(domains: &dyn DomainStore, ids: &Store, made: &[Domain], other: Id) {
    let team = made[2].team_id;
    let gone = domains.get(team, made[2].id).expect("get").expect("still there");
    assert_eq!(domains.cached(team, gone.id).expect("cached").as_deref(), Some(&gone));
    assert_eq!(
        domains.by_name(team, &gone.name).expect("by name").as_deref(),
        Some(&gone)
    );
    let deleted = event(ids, &gone, EventKind::DomainDeleted);
    domains.delete(&gone, Some(&deleted)).expect("delete");
    assert!(in_outbox(ids, &deleted), "the event lands with the delete");
    assert!(domains.get(team, gone.id).expect("get").is_none());
    assert!(domains.cached(team, gone.id).expect("cached").is_none());
    assert!(domains.by_name(team, &gone.name).expect("by name").is_none());
    let namesake = domains.by_name(other, &gone.name).expect("by name");
    assert!(
        namesake.is_some_and(|d| d.team_id == other),
        "another team's namesake stays"
    );
    let (left, more) = domains.list(team, &page(10, Cursor::Start)).expect("list");
    assert_eq!(
        ids_of(&left, |d| d.id),
        vec![made[4].id, made[3].id, made[1].id, made[0].id]
    );
    assert!(!more);
    let all = domains.all().expect("all");
    assert_eq!(all.len(), made.len(), "four of the team's and one other");
    assert!(all.iter().all(|d| d.id != gone.id));
    assert_eq!(
        domains.by_name(team, &made[4].name).expect("by name").as_deref(),
        Some(&made[4]),
        "the others stay"
    );

    // The name is free again: a new domain under it is found by it.
    let again = domain(ids, team, &gone.name);
    domains.insert(&again, None).expect("insert");
    assert_eq!(
        domains.by_name(team, &gone.name).expect("by name").as_deref(),
        Some(&again)
    );
    domains.delete(&made[0], None).expect("delete");
    assert!(domains.get(team, made[0].id).expect("get").is_none());
    assert_eq!(
        domains.by_name(team, &gone.name).expect("by name").as_deref(),
        Some(&again)
    );
    assert!(domains.by_name(team, &made[0].name).expect("by name").is_none());
}

/// Every entry of `queue` due by `horizon`, earliest first, as the time it is due and the
/// domain its key names now; an entry is at its domain's next check.
fn checks(domains: &dyn DomainStore, queue: &dyn DueQueue, horizon: Timestamp) -> Vec<(Timestamp, Option<Id>)> {
    queue
        .due(horizon, None, QUEUE_READ)
        .expect("due")
        .iter()
        .map(|due| {
            let found = domains.at_check(&due.key).expect("at check");
            if let Some(found) = &found {
                assert_eq!(found.next_check_at, Some(due.at), "{} is due when it says", found.name);
            }
            (due.at, found.map(|d| d.id))
        })
        .collect()
}

/// `domain`'s entry as the queue expects it: when it is due, and the domain.
fn entry(domain: &Domain) -> (Timestamp, Option<Id>) {
    (domain.next_check_at.expect("a next check"), Some(domain.id))
}

/// The entry of `queue` that names `domain`.
fn entry_of(domains: &dyn DomainStore, queue: &dyn DueQueue, horizon: Timestamp, domain: &Domain) -> Due {
    let all = queue.due(horizon, None, QUEUE_READ).expect("due");
    all.into_iter()
        .find(|due| {
            domains
                .at_check(&due.key)
                .expect("at check")
                .is_some_and(|d| d.id == domain.id)
        })
        .unwrap_or_else(|| panic!("{} has an entry", domain.name))
}

/// The queue holds every domain with a next check, at that time and no other, earliest
/// first and in pages; a rescheduled domain's entry moves, a cleared or deleted one's
/// goes, and a disarmed entry goes alone, the domain staying as it was.
fn the_check_queue_holds_each_domain_at_its_next_check(domains: &dyn DomainStore, ids: &Store) {
    let queue = domains.check_queue();
    let queue = queue.as_ref();
    let now = ids.now();
    let far = now.saturating_add(HOUR * 24 * 365);
    assert!(
        checks(domains, queue, far).is_empty(),
        "a check cleared earlier left no entry: {:?}",
        checks(domains, queue, far)
    );

    // Written out of time order, two teams' together, one without a check.
    let (team, other) = (ids.next_id(), ids.next_id());
    let at = |hours: u32| now.saturating_add(HOUR * hours);
    let scheduled = |team_id: Id, name: &str, next_check_at: Option<Timestamp>| {
        let one = Domain {
            next_check_at,
            ..domain(ids, team_id, name)
        };
        domains.insert(&one, None).expect("insert");
        one
    };
    let second = scheduled(team, "second.example.net", Some(at(2)));
    let first = scheduled(team, "first.example.net", Some(at(1)));
    let fourth = scheduled(team, "fourth.example.net", Some(at(4)));
    let unchecked = scheduled(team, "unchecked.example.net", None);
    let theirs = scheduled(other, "theirs.example.net", Some(at(3)));
    let expected = vec![entry(&first), entry(&second), entry(&theirs), entry(&fourth)];
    assert_eq!(checks(domains, queue, far), expected, "earliest first");
    assert!(
        checks(domains, queue, far)
            .iter()
            .all(|(_, id)| *id != Some(unchecked.id))
    );

    // Due at or before the horizon; after it, the next time comes.
    assert!(checks(domains, queue, now).is_empty(), "none due yet");
    assert_eq!(checks(domains, queue, at(1)), vec![entry(&first)]);
    assert_eq!(checks(domains, queue, at(3)), expected[..3].to_vec());
    assert_eq!(queue.next_after(now).expect("next after"), Some(at(1)));
    assert_eq!(queue.next_after(at(1)).expect("next after"), Some(at(2)));
    assert_eq!(queue.next_after(at(4)).expect("next after"), None);

    // In pages, each after the last entry of the one before.
    let whole = queue.due(far, None, QUEUE_READ).expect("due");
    let front = queue.due(far, None, 2).expect("due");
    assert_eq!(front, whole[..2].to_vec());
    let back = queue.due(far, Some(&front[1]), 2).expect("due");
    assert_eq!(back, whole[2..].to_vec());
    assert!(queue.due(far, Some(&back[1]), 2).expect("due").is_empty());

    // A check armed at the time now is due at the queue's now.
    let armed_at = ids.now();
    let due_now = scheduled(team, "now.example.net", Some(armed_at));
    assert!(queue.now() >= armed_at, "the queue's clock is the records' clock");
    assert_eq!(checks(domains, queue, queue.now()), vec![entry(&due_now)]);
    domains.delete(&due_now, None).expect("delete");
    assert_eq!(checks(domains, queue, far), expected, "a deleted domain's entry goes");

    // Rescheduled, an entry moves; cleared, it goes; the domain's key names nothing once
    // the domain is deleted.
    let moved = Domain {
        next_check_at: Some(at(5)),
        ..first
    };
    domains.put(&moved, None).expect("put");
    let cleared = Domain {
        next_check_at: None,
        ..second.clone()
    };
    domains.put(&cleared, None).expect("put");
    assert_eq!(
        checks(domains, queue, far),
        vec![entry(&theirs), entry(&fourth), entry(&moved)],
        "moved, not copied; cleared, gone"
    );
    assert_eq!(queue.next_after(now).expect("next after"), Some(at(3)));
    assert_eq!(
        domains.get(team, second.id).expect("get"),
        Some(cleared),
        "the domain stays"
    );
    let fourth_entry = entry_of(domains, queue, far, &fourth);
    assert_eq!(
        domains.at_check(&fourth_entry.key).expect("at check"),
        Some(fourth.clone())
    );
    domains.delete(&fourth, None).expect("delete");
    assert_eq!(
        domains.at_check(&fourth_entry.key).expect("at check"),
        None,
        "a deleted domain's key names nothing"
    );
    assert_eq!(checks(domains, queue, far), vec![entry(&theirs), entry(&moved)]);

    // Disarming takes the entry alone: the domain stays, and its next write arms it again.
    let their_entry = entry_of(domains, queue, far, &theirs);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(queue.disarm(&their_entry)).expect("disarm");
    assert_eq!(checks(domains, queue, far), vec![entry(&moved)]);
    assert_eq!(domains.get(other, theirs.id).expect("get"), Some(theirs.clone()));
    assert_eq!(
        domains.at_check(&their_entry.key).expect("at check"),
        Some(theirs.clone())
    );
    let rearmed = Domain {
        next_check_at: Some(at(6)),
        ..theirs
    };
    domains.put(&rearmed, None).expect("put");
    assert_eq!(checks(domains, queue, far), vec![entry(&moved), entry(&rearmed)]);
    assert_eq!(queue.next_after(at(5)).expect("next after"), Some(at(6)));
}

#[test]
fn rocksdb_domains_keep_the_contract() {
    let (_dir, store) = rocksdb();
    domain_store_conformance(&RocksDomains::new(store.clone()), &store);
}

#[test]
fn postgres_domains_keep_the_contract() {
    let (_dir, store) = rocksdb();
    domain_store_conformance(&PostgresDomains::new(postgres(), store.clone()), &store);
}
