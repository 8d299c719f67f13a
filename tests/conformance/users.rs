//! What every [`UserStore`] does, run on the RocksDB one and the PostgreSQL one: users are
//! found by team and id and by their sign-in address (trimmed, in any case), unique across
//! the node, and each team lists its own oldest first; a rewrite replaces a user; an
//! invitation finds its user until it expires, is taken (which sets the password and spends
//! it in one write) or the user has a password; sessions are kept by their token until
//! ended; and erasing a team leaves none of its users nor their addresses (their
//! invitations then find no one), and every other team's users as they were.

use std::time::Duration;

use herald::users::model::Session;
use herald::users::store::{PostgresUsers, RocksUsers, UserStore};
use herald::users::{Role, User};
use herald_queue::{Id, Store};

use crate::conformance::{postgres, rocksdb};

/// Passes of `erase_team` a team of a few users may take, at most.
const ERASE_PASSES_MAX: usize = 1_000;

/// How long the suite's invitations are valid.
const INVITATION_VALID: Duration = Duration::from_secs(3600);

/// A user of `team_id` signing in as `email`, invited (no password yet) or not; `ids` is
/// where ids and times come from.
fn user(ids: &Store, team_id: Id, email: &str, invited: bool) -> User {
    User {
        id: ids.next_id(),
        team_id,
        email: email.into(),
        role: Role::Member,
        password_hash: (!invited).then(|| "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
        totp_secret: None,
        recovery_codes: Vec::new(),
        created_at: ids.now(),
    }
}

/// A fresh session of `user`, its second factor not yet given.
fn session(ids: &Store, user: &User) -> Session {
    Session {
        team_id: user.team_id,
        user_id: user.id,
        created_at: ids.now(),
        last_seen: ids.now(),
        mfa_passed: false,
        csrf: format!("csrf-{}", ids.next_id()),
        pending_totp: None,
    }
}

/// What every [`UserStore`] does: `ids` is where ids and times come from.
fn user_store_conformance(users: &dyn UserStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    absent_users_read_as_none(users, ids, team);
    let made = users_are_written_with_their_email_entry(users, ids, team, other);
    a_taken_email_writes_nothing(users, ids, &made);
    a_rewrite_replaces_the_user_and_keeps_its_email(users, &made[1]);
    invitations_work_once_and_until_they_expire(users, ids, team);
    sessions_are_kept_by_token_until_ended(users, ids, &made[0]);
    an_erased_team_keeps_no_user_nor_address(users, ids);
}

/// Nothing is found where nothing was written, and a team with nothing has nothing to
/// erase.
fn absent_users_read_as_none(users: &dyn UserStore, ids: &Store, team: Id) {
    assert!(users.get(team, ids.next_id()).expect("get").is_none());
    assert!(users.by_email("nobody@example.com").expect("by email").is_none());
    assert!(users.team_users(team).expect("team users").is_empty());
    assert!(users.invited("no such token", ids.now()).expect("invited").is_none());
    assert!(users.session("no such token").expect("session").is_none());
    assert!(!users.erase_team(team).expect("erase"), "nothing is left");
}

/// Three users of `team` and one of `other`: each reads back by id and by email (in any
/// case, trimmed), and each team lists its own, oldest first. Returns `team`'s.
fn users_are_written_with_their_email_entry(users: &dyn UserStore, ids: &Store, team: Id, other: Id) -> Vec<User> {
    let made: Vec<User> = (0..3)
        .map(|n| user(ids, team, &format!("user{n}@example.com"), false))
        .collect();
    // Written out of order: the list is oldest first all the same.
    for one in made.iter().rev() {
        assert!(users.insert(one, None).expect("insert"), "a new email is free");
    }
    let stranger = user(ids, other, "Stranger@Example.org", false);
    assert!(users.insert(&stranger, None).expect("insert"));
    for one in &made {
        assert_eq!(users.get(team, one.id).expect("get"), Some(one.clone()));
        assert_eq!(users.by_email(&one.email).expect("by email"), Some(one.clone()));
    }
    assert!(
        users.get(other, made[1].id).expect("get").is_none(),
        "a team sees its own only"
    );
    assert!(users.get(team, stranger.id).expect("get").is_none());
    assert_eq!(
        users.by_email("  User2@EXAMPLE.com ").expect("by email"),
        Some(made[2].clone()),
        "emails compare trimmed and in any case"
    );
    assert_eq!(
        users.by_email("stranger@example.org").expect("by email"),
        Some(stranger.clone()),
        "kept as given, found in any case"
    );
    assert_eq!(users.team_users(team).expect("team users"), made, "oldest first");
    assert_eq!(users.team_users(other).expect("team users"), vec![stranger]);
    made
}

/// An email taken in any team, in any case, refuses a second user and writes none of it:
/// neither the user nor its invitation.
fn a_taken_email_writes_nothing(users: &dyn UserStore, ids: &Store, made: &[User]) {
    let elsewhere = ids.next_id();
    let twin = user(ids, elsewhere, " USER0@example.com", true);
    let expires = ids.now().saturating_add(INVITATION_VALID);
    let taken = users.insert(&twin, Some(("twin-token", expires))).expect("insert");
    assert!(!taken, "emails are unique across the node");
    assert!(users.get(elsewhere, twin.id).expect("get").is_none());
    assert!(users.team_users(elsewhere).expect("team users").is_empty());
    assert!(users.invited("twin-token", ids.now()).expect("invited").is_none());
    assert_eq!(
        users.by_email("user0@example.com").expect("by email"),
        Some(made[0].clone())
    );
    let same_team = user(ids, made[0].team_id, "user0@example.com", false);
    assert!(!users.insert(&same_team, None).expect("insert"), "in its own team too");
    assert_eq!(users.team_users(made[0].team_id).expect("team users"), made);
}

/// A rewrite (a new role, a second factor) replaces the user, found again by email.
fn a_rewrite_replaces_the_user_and_keeps_its_email(users: &dyn UserStore, before: &User) {
    let changed = User {
        role: Role::Admin,
        totp_secret: Some(vec![1, 2, 3]),
        recovery_codes: vec!["digest".into()],
        ..before.clone()
    };
    users.put(&changed).expect("put");
    assert_eq!(
        users.get(before.team_id, before.id).expect("get"),
        Some(changed.clone())
    );
    assert_eq!(users.by_email(&before.email).expect("by email"), Some(changed.clone()));
    let listed = users.team_users(before.team_id).expect("team users");
    assert_eq!(
        listed.iter().find(|u| u.id == before.id),
        Some(&changed),
        "listed changed"
    );
    assert_eq!(listed.len(), 3, "a rewrite is not another user");
}

/// An invitation finds its user until it expires or is taken; taking it sets the
/// password and spends the token, so it does not work again even for a user who has no
/// password again.
fn invitations_work_once_and_until_they_expire(users: &dyn UserStore, ids: &Store, team: Id) {
    let now = ids.now();
    let expires = now.saturating_add(INVITATION_VALID);
    let invited = user(ids, team, "invited@example.com", true);
    assert!(users.insert(&invited, Some(("the-token", expires))).expect("insert"));
    assert_eq!(users.invited("the-token", now).expect("invited"), Some(invited.clone()));
    assert_eq!(
        users.by_email("invited@example.com").expect("by email"),
        Some(invited.clone()),
        "an invited user signs in as its address too"
    );
    assert!(
        users.invited("the-token", expires).expect("invited").is_none(),
        "expired at its expiry"
    );
    assert!(users.invited("another-token", now).expect("invited").is_none());
    assert!(
        users.invited("THE-TOKEN", now).expect("invited").is_none(),
        "the exact token"
    );

    let accepted = User {
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$bmV3".into()),
        ..invited.clone()
    };
    users.accept_invitation("the-token", &accepted).expect("accept");
    assert_eq!(users.get(team, invited.id).expect("get"), Some(accepted.clone()));
    assert_eq!(users.by_email("invited@example.com").expect("by email"), Some(accepted));
    assert!(users.invited("the-token", now).expect("invited").is_none(), "spent");
    users.put(&invited).expect("put");
    assert!(
        users.invited("the-token", now).expect("invited").is_none(),
        "spent, not merely answered by the password"
    );

    // A user given a password some other way is no longer invited either.
    let later = user(ids, team, "later@example.com", true);
    assert!(users.insert(&later, Some(("later-token", expires))).expect("insert"));
    assert_eq!(users.invited("later-token", now).expect("invited"), Some(later.clone()));
    let with_password = User {
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$b3du".into()),
        ..later
    };
    users.put(&with_password).expect("put");
    assert!(users.invited("later-token", now).expect("invited").is_none());
}

/// Sessions are found by their token as stored, rewritten in place, and gone once ended;
/// ending one leaves the others.
fn sessions_are_kept_by_token_until_ended(users: &dyn UserStore, ids: &Store, user: &User) {
    let first = session(ids, user);
    let second = session(ids, user);
    users.put_session("token-one", &first).expect("put session");
    users.put_session("token-two", &second).expect("put session");
    assert_eq!(users.session("token-one").expect("session"), Some(first.clone()));
    assert_eq!(users.session("token-two").expect("session"), Some(second.clone()));
    assert!(
        users.session("token-one ").expect("session").is_none(),
        "the exact token"
    );
    let passed = Session {
        mfa_passed: true,
        pending_totp: Some(vec![9; 20]),
        last_seen: ids.now().saturating_add(Duration::from_secs(60)),
        ..first
    };
    users.put_session("token-one", &passed).expect("put session");
    assert_eq!(users.session("token-one").expect("session"), Some(passed));
    users.end_session("token-one").expect("end session");
    assert!(users.session("token-one").expect("session").is_none());
    assert_eq!(users.session("token-two").expect("session"), Some(second));
    users
        .end_session("token-one")
        .expect("ending an ended session is no error");
    assert!(users.session("token-one").expect("session").is_none());
}

/// Erasing a team, pass by pass until it answers that none is left, leaves none of its
/// users nor their sign-in addresses (another team may take one), nor an invitation
/// that finds one of them; every other team's users stay as they were.
fn an_erased_team_keeps_no_user_nor_address(users: &dyn UserStore, ids: &Store) {
    let (leaving, staying) = (ids.next_id(), ids.next_id());
    let gone = user(ids, leaving, "gone@example.com", false);
    let invited = user(ids, leaving, "invited-gone@example.com", true);
    let kept = user(ids, staying, "kept@example.com", false);
    let kept_invited = user(ids, staying, "kept-invited@example.com", true);
    let expires = ids.now().saturating_add(INVITATION_VALID);
    assert!(users.insert(&gone, None).expect("insert"));
    assert!(users.insert(&invited, Some(("gone-token", expires))).expect("insert"));
    assert!(users.insert(&kept, None).expect("insert"));
    assert!(
        users
            .insert(&kept_invited, Some(("kept-token", expires)))
            .expect("insert")
    );
    assert_eq!(
        users.invited("gone-token", ids.now()).expect("invited"),
        Some(invited.clone())
    );

    let mut passes = 0;
    while users.erase_team(leaving).expect("erase") {
        passes += 1;
        assert!(passes < ERASE_PASSES_MAX, "erasing never ends");
    }
    assert!(!users.erase_team(leaving).expect("erase"), "none is left");
    for one in [&gone, &invited] {
        assert!(
            users.get(leaving, one.id).expect("get").is_none(),
            "{} erased",
            one.email
        );
        assert!(users.by_email(&one.email).expect("by email").is_none(), "{}", one.email);
    }
    assert!(users.team_users(leaving).expect("team users").is_empty());
    assert!(
        users.invited("gone-token", ids.now()).expect("invited").is_none(),
        "its invitation finds no one"
    );

    assert_eq!(
        users.team_users(staying).expect("team users"),
        vec![kept.clone(), kept_invited.clone()]
    );
    assert_eq!(users.by_email("kept@example.com").expect("by email"), Some(kept));
    assert_eq!(
        users.invited("kept-token", ids.now()).expect("invited"),
        Some(kept_invited),
        "another team's invitation still works"
    );
    let again = user(ids, staying, "gone@example.com", false);
    assert!(users.insert(&again, None).expect("insert"), "the address is free again");
    assert_eq!(users.by_email("gone@example.com").expect("by email"), Some(again));
}

#[test]
fn rocksdb_users_keep_the_contract() {
    let (_dir, store) = rocksdb();
    user_store_conformance(&RocksUsers::new(store.clone()), &store);
}

#[test]
fn postgres_users_keep_the_contract() {
    let (_dir, store) = rocksdb();
    user_store_conformance(&PostgresUsers::new(postgres()), &store);
}
