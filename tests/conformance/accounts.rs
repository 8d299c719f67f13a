//! What every [`AccountStore`] does, run on the RocksDB one and the PostgreSQL one: teams are kept and read
//! back oldest first; API keys are found by team and id and by their token's digest (what
//! every request authenticates with), paged newest first, and a key's lookup follows it
//! through a change and goes with it on delete; uses are recorded per key; the data
//! directory is initialised (the operator's team, its first key and its lookup) in one
//! write, and reads as initialised only after it; and no read serves a record from before
//! the latest write or delete of it.

use std::time::{Duration, Instant};

use herald::accounts::{AccountStore, ApiKey, Permission, PostgresAccounts, RocksAccounts, Team, Token};
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store, Timestamp};

use crate::conformance::{ids_of, page, pages_go_newest_first, postgres, rocksdb};

/// How long a recorded use may take to become readable: it is written without anyone
/// waiting for it, so the suite waits for it on a condition, never for a fixed time.
const USE_RECORDED_WITHIN: Duration = Duration::from_secs(10);

/// A team named `name`, not the operator's; `ids` is where ids and times come from.
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

/// The key `token` authenticates as, if any.
fn by_token(accounts: &dyn AccountStore, token: &Token) -> Option<ApiKey> {
    accounts
        .key_by_digest(&token.digest())
        .expect("by digest")
        .map(|key| ApiKey::clone(&key))
}

/// What every [`AccountStore`] does: `ids` is where ids and times come from.
fn account_store_conformance(accounts: &dyn AccountStore, ids: &Store) {
    assert_eq!(accounts.initialised().expect("initialised"), None, "a new store");
    let (first, second) = teams_are_kept_oldest_first(accounts, ids);
    let made = keys_are_found_by_id_and_by_digest(accounts, ids, first.id, second.id);
    keys_page_newest_first(accounts, first.id, &made);
    a_changed_key_reads_changed_both_ways(accounts, &made[1]);
    uses_are_recorded_per_key(accounts, ids, &made);
    a_deleted_key_stops_working_alone(accounts, &made);
    a_deleted_team_is_gone_alone(accounts, &first, &second);
    assert_eq!(
        accounts.initialised().expect("initialised"),
        None,
        "teams and keys written one by one do not initialise"
    );
    initialising_writes_the_operator_team_and_its_key_at_once(accounts, ids, &second);
}

/// Teams read back as written, by id and all together oldest first; a change replaces,
/// and a read after it sees the change.
fn teams_are_kept_oldest_first(accounts: &dyn AccountStore, ids: &Store) -> (Team, Team) {
    assert!(accounts.teams().expect("teams").is_empty());
    let first = team(ids, "First");
    assert!(accounts.team(first.id).expect("team").is_none());
    let second = team(ids, "Second");
    accounts.put_team(&second).expect("put team");
    accounts.put_team(&first).expect("put team");
    assert_eq!(accounts.team(first.id).expect("team"), Some(first.clone()));
    assert_eq!(accounts.team(second.id).expect("team"), Some(second.clone()));
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
    let marked = Team {
        deleted_at: Some(ids.now()),
        ..changed.clone()
    };
    accounts.put_team(&marked).expect("put team");
    assert_eq!(accounts.team(marked.id).expect("team"), Some(marked));
    accounts.put_team(&changed).expect("put team");
    assert_eq!(
        accounts.team(changed.id).expect("team"),
        Some(changed.clone()),
        "the latest write wins"
    );
    assert_eq!(
        accounts.team(second.id).expect("team"),
        Some(second.clone()),
        "untouched"
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
    assert_eq!(by_token(accounts, &Token::generate()), None);
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
    for (key, token) in &made {
        assert_eq!(accounts.key(team, key.id).expect("key"), Some(key.clone()));
        assert_eq!(by_token(accounts, token), Some(key.clone()), "{}", key.name);
    }
    assert!(
        accounts.key(other, made[2].0.id).expect("key").is_none(),
        "a team sees its own only"
    );
    assert!(accounts.key(team, stranger.id).expect("key").is_none());
    assert_eq!(by_token(accounts, &stranger_token), Some(stranger.clone()));
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

/// A rewritten key reads rewritten by id and by its unchanged digest, though it was read
/// by its digest just before.
fn a_changed_key_reads_changed_both_ways(accounts: &dyn AccountStore, (key, token): &(ApiKey, Token)) {
    assert_eq!(by_token(accounts, token), Some(key.clone()), "read before the change");
    let renamed = ApiKey {
        name: "renamed".into(),
        permission: Permission::SendingAccess,
        ..key.clone()
    };
    accounts.put_key(&renamed).expect("put key");
    assert_eq!(accounts.key(key.team_id, key.id).expect("key"), Some(renamed.clone()));
    assert_eq!(
        by_token(accounts, token),
        Some(renamed.clone()),
        "a read after a change sees the change"
    );
    let (listed, _) = accounts.keys(key.team_id, &page(10, Cursor::Start)).expect("keys");
    assert_eq!(listed.iter().find(|k| k.id == key.id), Some(&renamed), "listed changed");
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

/// A deleted key is gone by id, by digest (read just before), from the list and from the
/// record of uses; the team's other keys and another team's still work.
fn a_deleted_key_stops_working_alone(accounts: &dyn AccountStore, made: &[(ApiKey, Token)]) {
    let (gone, token) = &made[0];
    assert_eq!(by_token(accounts, token), Some(gone.clone()), "read before the delete");
    accounts.delete_key(gone).expect("delete key");
    assert!(accounts.key(gone.team_id, gone.id).expect("key").is_none());
    assert_eq!(by_token(accounts, token), None, "its token stops working");
    assert!(
        accounts.last_used(gone.id).expect("last used").is_none(),
        "its use goes with it"
    );
    let (left, more) = accounts.keys(gone.team_id, &page(10, Cursor::Start)).expect("keys");
    assert_eq!(
        ids_of(&left, |k| k.id),
        made[1..].iter().rev().map(|(k, _)| k.id).collect::<Vec<_>>()
    );
    assert!(!more);
    for (kept, kept_token) in &made[2..] {
        assert_eq!(by_token(accounts, kept_token), Some(kept.clone()), "{}", kept.name);
    }
}

/// Deleting a team's record removes that team alone (its keys are erased by other
/// steps of erasing a team, not by this one), though it was read just before.
fn a_deleted_team_is_gone_alone(accounts: &dyn AccountStore, first: &Team, second: &Team) {
    assert_eq!(accounts.team(first.id).expect("team"), Some(first.clone()));
    accounts.delete_team(first.id).expect("delete team");
    assert!(accounts.team(first.id).expect("team").is_none());
    assert_eq!(accounts.teams().expect("teams"), vec![second.clone()]);
    assert_eq!(accounts.team(second.id).expect("team"), Some(second.clone()));
    accounts
        .delete_team(first.id)
        .expect("deleting a deleted team is no error");
    assert_eq!(accounts.teams().expect("teams"), vec![second.clone()]);
}

/// Initialising writes the operator's team, its first key and that key's lookup, and
/// from then on answers the operator's team; the other teams stay as they were.
fn initialising_writes_the_operator_team_and_its_key_at_once(accounts: &dyn AccountStore, ids: &Store, other: &Team) {
    let operator = Team {
        operator: true,
        ..team(ids, "Operator")
    };
    let (first_key, token) = key(ids, operator.id, "bootstrap");
    let at = ids.now();
    accounts
        .initialise(&operator, &first_key, token.digest(), at)
        .expect("initialise");
    assert_eq!(accounts.initialised().expect("initialised"), Some(operator.id));
    assert_eq!(accounts.team(operator.id).expect("team"), Some(operator.clone()));
    assert_eq!(
        accounts.teams().expect("teams"),
        vec![other.clone(), operator.clone()],
        "oldest first"
    );
    assert_eq!(
        accounts.key(operator.id, first_key.id).expect("key"),
        Some(first_key.clone())
    );
    assert_eq!(
        by_token(accounts, &token),
        Some(first_key.clone()),
        "its token authenticates"
    );
    assert_eq!(
        accounts.keys(operator.id, &page(10, Cursor::Start)).expect("keys"),
        (vec![first_key], false)
    );
    assert_eq!(accounts.team(other.id).expect("team"), Some(other.clone()), "untouched");
    assert_eq!(
        accounts.initialised().expect("initialised"),
        Some(operator.id),
        "read again"
    );
}

#[test]
fn rocksdb_accounts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    account_store_conformance(&RocksAccounts::new(store.clone()), &store);
}

#[test]
fn postgres_accounts_keep_the_contract() {
    let (_dir, store) = rocksdb();
    account_store_conformance(&PostgresAccounts::new(postgres()), &store);
}
