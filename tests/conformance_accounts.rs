//! [`AccountStore`] as a contract: the suite any implementation must pass, run here
//! against the RocksDB one on a real store in a temp directory. Teams, their API keys,
//! the lookup of a key by its token's digest (what every request authenticates with),
//! and when each key was last used.

// The suite does not read the outbox, so that helper goes unused here.
#[allow(dead_code)]
#[path = "util/conformance.rs"]
mod conformance;

use std::time::{Duration, Instant};

use conformance::{ids_of, page, pages_go_newest_first, rocksdb};
use herald::accounts::{AccountStore, ApiKey, Permission, RocksAccounts, Team, Token};
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store, Timestamp};

/// How long a recorded use may take to become readable: it is written without anyone
/// waiting for it, so the suite waits for it on a condition, never for a fixed time.
const USE_RECORDED_WITHIN: Duration = Duration::from_secs(10);

/// A team named `name`, not the operator's.
fn team(ids: &Store, name: &str) -> Team {
    Team {
        id: ids.next_id(),
        name: name.into(),
        operator: false,
        created_at: ids.now(),
        rate_limit: None,
        plan: None,
        deleted_at: None,
    }
}

/// A full-access key of `team_id` and the token it answers to.
fn key(ids: &Store, team_id: Id, name: &str) -> (ApiKey, Token) {
    let token = Token::generate();
    let key = ApiKey {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        permission: Permission::FullAccess,
        domain_id: None,
        digest: token.digest_hex(),
        created_at: ids.now(),
        last_used_at: None,
    };
    (key, token)
}

/// What every [`AccountStore`] does: `ids` is where ids and times come from.
fn account_store_conformance(accounts: &dyn AccountStore, ids: &Store) {
    let (first, second) = teams_are_kept_oldest_first(accounts, ids);
    let made = keys_are_found_by_id_and_by_digest(accounts, ids, first.id, second.id);
    keys_page_newest_first(accounts, first.id, &made);
    a_renamed_key_reads_renamed_both_ways(accounts, &made[1]);
    uses_are_recorded_per_key(accounts, ids, &made);
    a_deleted_key_stops_working_alone(accounts, &made);
    a_deleted_team_is_gone_alone(accounts, &first, &second);
}

/// Teams read back as written, by id and all together oldest first; a change replaces.
fn teams_are_kept_oldest_first(accounts: &dyn AccountStore, ids: &Store) -> (Team, Team) {
    assert!(accounts.teams().expect("teams").is_empty());
    let first = team(ids, "First");
    assert!(accounts.team(first.id).expect("team").is_none());
    let second = team(ids, "Second");
    accounts.put_team(&second).expect("put team");
    accounts.put_team(&first).expect("put team");
    assert_eq!(accounts.team(first.id).expect("team"), Some(first.clone()));
    assert_eq!(
        accounts.teams().expect("teams"),
        vec![first.clone(), second.clone()],
        "oldest first, whatever the order written"
    );
    let changed = Team {
        name: "First, renamed".into(),
        rate_limit: Some("10/s".into()),
        plan: Some("pro".into()),
        ..first
    };
    accounts.put_team(&changed).expect("put team");
    assert_eq!(
        accounts.team(changed.id).expect("team"),
        Some(changed.clone()),
        "a read after a change sees the change"
    );
    assert_eq!(accounts.teams().expect("teams"), vec![changed.clone(), second.clone()]);
    (changed, second)
}

/// Five keys of `team` and one of `other`: each is found by its id in its own team only,
/// and by its token's digest; a digest never issued finds nothing. Returns `team`'s,
/// oldest first, with their tokens.
fn keys_are_found_by_id_and_by_digest(
    accounts: &dyn AccountStore,
    ids: &Store,
    team: Id,
    other: Id,
) -> Vec<(ApiKey, Token)> {
    assert!(accounts.key(team, ids.next_id()).expect("key").is_none());
    assert!(
        accounts
            .key_by_digest(&Token::generate().digest())
            .expect("by digest")
            .is_none()
    );
    let start = page(10, Cursor::Start);
    assert_eq!(accounts.keys(team, &start).expect("keys"), (Vec::new(), false));
    let made: Vec<(ApiKey, Token)> = (0..5).map(|n| key(ids, team, &format!("key {n}"))).collect();
    for (key, token) in &made {
        accounts.insert_key(key, token.digest()).expect("insert key");
    }
    let (stranger, stranger_token) = key(ids, other, "stranger");
    accounts
        .insert_key(&stranger, stranger_token.digest())
        .expect("insert key");
    let (key, token) = &made[2];
    assert_eq!(accounts.key(team, key.id).expect("key"), Some(key.clone()));
    assert!(
        accounts.key(other, key.id).expect("key").is_none(),
        "a team sees its own only"
    );
    assert_eq!(
        accounts.key_by_digest(&token.digest()).expect("by digest").as_deref(),
        Some(key)
    );
    assert_eq!(
        accounts
            .key_by_digest(&stranger_token.digest())
            .expect("by digest")
            .as_deref(),
        Some(&stranger)
    );
    assert_eq!(accounts.keys(other, &start).expect("keys"), (vec![stranger], false));
    made
}

/// Pages of keys keep the cursor cases of [`pages_go_newest_first`], and a page larger
/// than the list holds every key whole, newest first.
fn keys_page_newest_first(accounts: &dyn AccountStore, team: Id, made: &[(ApiKey, Token)]) {
    let keys: Vec<ApiKey> = made.iter().map(|(key, _)| key.clone()).collect();
    let listed = |request: &PageRequest| {
        let (page, more) = accounts.keys(team, request).expect("keys");
        (ids_of(&page, |k| k.id), more)
    };
    pages_go_newest_first(listed, &ids_of(&keys, |k| k.id));
    let (whole, more) = accounts.keys(team, &page(10, Cursor::Start)).expect("keys");
    assert!(!more);
    assert_eq!(whole, keys.into_iter().rev().collect::<Vec<_>>(), "whole records");
}

/// A rewritten key reads rewritten by id and by its unchanged digest.
fn a_renamed_key_reads_renamed_both_ways(accounts: &dyn AccountStore, (key, token): &(ApiKey, Token)) {
    let renamed = ApiKey {
        name: "renamed".into(),
        ..key.clone()
    };
    accounts.put_key(&renamed).expect("put key");
    assert_eq!(accounts.key(key.team_id, key.id).expect("key"), Some(renamed.clone()));
    assert_eq!(
        accounts.key_by_digest(&token.digest()).expect("by digest").as_deref(),
        Some(&renamed),
        "a read after a change sees the change"
    );
}

/// A recorded use is read back for its key alone, and a later one replaces it.
fn uses_are_recorded_per_key(accounts: &dyn AccountStore, ids: &Store, made: &[(ApiKey, Token)]) {
    let (used, unused) = (&made[0].0, &made[1].0);
    assert!(accounts.last_used(used.id).expect("last used").is_none());
    let at = ids.now();
    accounts.record_use(used.id, at);
    wait_until_used_at(accounts, used.id, at);
    let later = at.saturating_add(Duration::from_secs(30));
    accounts.record_use(used.id, later);
    wait_until_used_at(accounts, used.id, later);
    assert!(accounts.last_used(unused.id).expect("last used").is_none());
}

/// Waits until `key_id`'s last recorded use is `at`, failing after
/// [`USE_RECORDED_WITHIN`].
fn wait_until_used_at(accounts: &dyn AccountStore, key_id: Id, at: Timestamp) {
    let end = Instant::now() + USE_RECORDED_WITHIN;
    while accounts.last_used(key_id).expect("last used") != Some(at) {
        assert!(Instant::now() < end, "the use at {at:?} was never recorded");
        std::thread::park_timeout(Duration::from_millis(5));
    }
}

/// A deleted key is gone by id, by digest, from the list and from the record of uses;
/// the team's other keys still work.
fn a_deleted_key_stops_working_alone(accounts: &dyn AccountStore, made: &[(ApiKey, Token)]) {
    let (gone, token) = &made[0];
    accounts.delete_key(gone).expect("delete key");
    assert!(accounts.key(gone.team_id, gone.id).expect("key").is_none());
    assert!(
        accounts.key_by_digest(&token.digest()).expect("by digest").is_none(),
        "its token stops working"
    );
    assert!(
        accounts.last_used(gone.id).expect("last used").is_none(),
        "its use goes with it"
    );
    let (left, more) = accounts.keys(gone.team_id, &page(10, Cursor::Start)).expect("keys");
    assert_eq!(left.len(), made.len() - 1);
    assert!(!more && left.iter().all(|k| k.id != gone.id));
    let (kept, kept_token) = &made[2];
    assert_eq!(
        accounts
            .key_by_digest(&kept_token.digest())
            .expect("by digest")
            .as_deref(),
        Some(kept)
    );
}

/// Deleting a team's record removes that team alone (its keys are erased by other
/// steps of erasing a team, not by this one).
fn a_deleted_team_is_gone_alone(accounts: &dyn AccountStore, first: &Team, second: &Team) {
    accounts.delete_team(first.id).expect("delete team");
    assert!(accounts.team(first.id).expect("team").is_none());
    assert_eq!(accounts.teams().expect("teams"), vec![second.clone()]);
    assert_eq!(accounts.team(second.id).expect("team"), Some(second.clone()));
    accounts
        .delete_team(first.id)
        .expect("deleting a deleted team is no error");
}

/// The RocksDB accounts pass the suite.
#[test]
fn rocksdb_accounts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    account_store_conformance(&RocksAccounts::new(store.clone()), &store);
}
