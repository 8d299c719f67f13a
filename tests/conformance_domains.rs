//! [`DomainStore`] as a contract: the suite any implementation must pass, run here
//! against the RocksDB one on a real store in a temp directory. Sending domains by team
//! and id, by team and name (what submission resolves a sender with), as decoded once
//! and shared, every team's for the verifier, and the `domain.*` events written with
//! each change.

#[path = "util/conformance.rs"]
mod conformance;

use conformance::{ids_of, in_outbox, page, pages_go_newest_first, rocksdb};
use herald::config::DkimAlgorithm;
use herald::domains::{
    Domain, DomainStatus, DomainStore, RecordChecks, RecordStatus, RocksDomains, TlsPolicy, generate_dkim_key,
};
use herald::events::{Event, EventKind};
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store};

/// A new domain of `team_id` named `name`, as the domains service makes one.
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
}

/// Nothing is found where nothing was written.
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

    let wanted = &made[2];
    assert_eq!(domains.get(team, wanted.id).expect("get").as_ref(), Some(wanted));
    assert_eq!(
        domains.cached(team, wanted.id).expect("cached").as_deref(),
        Some(wanted)
    );
    assert_eq!(
        domains.by_name(team, &wanted.name).expect("by name").as_deref(),
        Some(wanted)
    );
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
    assert!(
        domains
            .by_name(team, "elsewhere.example.com")
            .expect("by name")
            .is_none()
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

/// A rewritten domain reads rewritten by id, as cached and by its name, with its event
/// in the outbox; rewritten twice, the second wins.
fn a_changed_domain_reads_changed_every_way(domains: &dyn DomainStore, ids: &Store, before: &Domain) {
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
    assert!(in_outbox(ids, &updated));
    let team = before.team_id;
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
    let enforced = Domain {
        tls: TlsPolicy::Enforced,
        next_check_at: None,
        ..verified
    };
    domains.put(&enforced, None).expect("put");
    assert_eq!(
        domains.cached(team, before.id).expect("cached").as_deref(),
        Some(&enforced)
    );
    assert_eq!(
        domains.by_name(team, &before.name).expect("by name").as_deref(),
        Some(&enforced)
    );
}

/// A deleted domain is gone by id, as cached, by name, from the list and from `all`,
/// with its event in the outbox; the team's others and another team's namesake stay.
fn a_deleted_domain_is_gone_every_way_alone(domains: &dyn DomainStore, ids: &Store, made: &[Domain], other: Id) {
    let gone = domains
        .get(made[2].team_id, made[2].id)
        .expect("get")
        .expect("still there");
    let deleted = event(ids, &gone, EventKind::DomainDeleted);
    domains.delete(&gone, Some(&deleted)).expect("delete");
    assert!(in_outbox(ids, &deleted));
    let team = gone.team_id;
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
    assert_eq!(
        domains.all().expect("all").len(),
        made.len(),
        "four of the team's and one other"
    );

    // The name is free again: a new domain under it is found by it.
    let again = domain(ids, team, &gone.name);
    domains.insert(&again, None).expect("insert");
    assert_eq!(
        domains.by_name(team, &gone.name).expect("by name").as_deref(),
        Some(&again)
    );
    domains.delete(&made[0], None).expect("delete");
    assert_eq!(
        domains.by_name(team, &gone.name).expect("by name").as_deref(),
        Some(&again)
    );
    assert!(domains.by_name(team, &made[0].name).expect("by name").is_none());
}

/// The RocksDB domains pass the suite.
#[test]
fn rocksdb_domains_keep_the_contract() {
    let (_dir, store) = rocksdb();
    domain_store_conformance(&RocksDomains::new(store.clone()), &store);
}
