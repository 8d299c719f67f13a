//! The users service without sockets: sign-in, the second factor, recovery codes,
//! password changes, TOTP enrolment and invitations, on a real store in a temp
//! directory, with requests at once where a race would show.

mod util;

use std::sync::Barrier;

use herald::users::account::{self, Enrolment, PasswordChange, SecondFactor};
use herald::users::{self, Role, User, sessions, totp};
use util::world::World;

const PASSWORD: &str = "correct horse battery";

/// A user of the world's team with `PASSWORD`, TOTP on and `recovery` as its recovery
/// codes' digests.
fn user_with_mfa(world: &World, email: &str, hash: &str, recovery: Vec<String>) -> User {
    let store = world.services.node().store();
    let user = User {
        id: store.next_id(),
        team_id: world.team,
        email: email.into(),
        role: Role::Owner,
        password_hash: Some(hash.into()),
        totp_secret: Some(totp::secret()),
        recovery_codes: recovery,
        created_at: store.now(),
    };
    assert!(world.services.users().insert(&user, None).expect("add the user"));
    user
}

/// A member of the world's team without TOTP, not yet stored; `password_hash` `None`
/// for one invited.
fn member(world: &World, email: &str, password_hash: Option<String>) -> User {
    let store = world.services.node().store();
    User {
        id: store.next_id(),
        team_id: world.team,
        email: email.into(),
        role: Role::Member,
        password_hash,
        totp_secret: None,
        recovery_codes: Vec::new(),
        created_at: store.now(),
    }
}

fn stored(world: &World, user: &User) -> User {
    world
        .services
        .users()
        .get(user.team_id, user.id)
        .expect("read")
        .expect("the user")
}

#[test]
fn one_recovery_code_given_by_two_requests_at_once_lets_one_in() {
    let world = World::new();
    let services = &world.services;
    let hash = users::hash_password(PASSWORD).expect("hash");
    for round in 0..16 {
        let (codes, digests) = totp::recovery_codes();
        let user = user_with_mfa(&world, &format!("p{round}@example.test"), &hash, digests.clone());
        // Two sessions past the password, each waiting for its second factor.
        let tokens: Vec<String> = (0..2)
            .map(|_| {
                let signed_in = account::sign_in(services, &user.email, PASSWORD)
                    .expect("sign in")
                    .expect("matched");
                signed_in.token
            })
            .collect();
        let barrier = Barrier::new(tokens.len());
        let outcomes: Vec<SecondFactor> = std::thread::scope(|scope| {
            let handles: Vec<_> = tokens
                .iter()
                .map(|token| {
                    let (barrier, code) = (&barrier, &codes[0]);
                    scope.spawn(move || {
                        barrier.wait();
                        account::pass_second_factor(services, token, code).expect("check")
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a thread")).collect()
        });
        let passed = outcomes.iter().filter(|o| **o == SecondFactor::Passed).count();
        assert_eq!(passed, 1, "round {round}: {outcomes:?}");
        assert!(outcomes.contains(&SecondFactor::Wrong), "round {round}: {outcomes:?}");
        let left = stored(&world, &user).recovery_codes;
        assert_eq!(left.len(), digests.len() - 1, "the code is spent, the others kept");
        assert!(!left.contains(&totp::recovery_digest(&codes[0])));
        // Another code still works for the session that was refused.
        let refused = &tokens[outcomes
            .iter()
            .position(|o| *o == SecondFactor::Wrong)
            .expect("one refused")];
        assert_eq!(
            account::pass_second_factor(services, refused, &codes[1]).expect("check"),
            SecondFactor::Passed
        );
    }
}

#[test]
fn a_totp_code_passes_the_second_factor_and_a_wrong_one_does_not() {
    let world = World::new();
    let services = &world.services;
    let hash = users::hash_password(PASSWORD).expect("hash");
    let user = user_with_mfa(&world, "totp@example.test", &hash, Vec::new());
    assert!(
        account::sign_in(services, &user.email, "not the password")
            .expect("sign in")
            .is_none()
    );
    assert!(
        account::sign_in(services, "nobody@example.test", PASSWORD)
            .expect("sign in")
            .is_none()
    );
    let token = account::sign_in(services, &user.email, PASSWORD)
        .expect("sign in")
        .expect("matched")
        .token;
    let (session, _) = sessions::find(services, &token).expect("read").expect("live");
    assert!(!session.mfa_passed, "a user with TOTP signs in in two steps");
    assert_eq!(
        account::pass_second_factor(services, &token, "000000x").expect("check"),
        SecondFactor::Wrong
    );
    let now = services.node().store().now().as_millis() / 1000;
    let code = totp::code(user.totp_secret.as_deref().expect("a secret"), now);
    assert_eq!(
        account::pass_second_factor(services, &token, &code).expect("check"),
        SecondFactor::Passed
    );
    assert_eq!(
        account::pass_second_factor(services, &token, &code).expect("check"),
        SecondFactor::AlreadyPassed
    );
    assert_eq!(
        account::pass_second_factor(services, "no such token", &code).expect("check"),
        SecondFactor::NoSession
    );
}

#[test]
fn a_password_change_needs_the_current_one_and_keeps_the_rules() {
    let world = World::new();
    let services = &world.services;
    let hash = users::hash_password(PASSWORD).expect("hash");
    let user = user_with_mfa(&world, "change@example.test", &hash, Vec::new());
    let new = "a different long password";
    assert!(matches!(
        account::change_password(services, &user, "wrong current one", new).expect("change"),
        PasswordChange::WrongPassword
    ));
    assert!(matches!(
        account::change_password(services, &user, PASSWORD, "short"),
        Err(herald::services::Error::Invalid { .. })
    ));
    let PasswordChange::Changed(changed) = account::change_password(services, &user, PASSWORD, new).expect("change")
    else {
        panic!("the current password was right");
    };
    assert_eq!(stored(&world, &user), changed);
    assert!(
        account::sign_in(services, &user.email, PASSWORD)
            .expect("sign in")
            .is_none()
    );
    assert!(account::sign_in(services, &user.email, new).expect("sign in").is_some());
    // A change made with the old password after the first lands is refused: the user is
    // read afresh, not taken from the caller.
    assert!(matches!(
        account::change_password(services, &user, PASSWORD, "yet another long password").expect("change"),
        PasswordChange::WrongPassword
    ));
}

#[test]
fn totp_is_turned_on_with_a_code_for_the_pending_secret_and_gives_recovery_codes() {
    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let user = member(
        &world,
        "enrol@example.test",
        Some(users::hash_password(PASSWORD).expect("hash")),
    );
    assert!(services.users().insert(&user, None).expect("add"));
    let token = account::sign_in(services, &user.email, PASSWORD)
        .expect("sign in")
        .expect("matched")
        .token;
    let (session, user) = sessions::find(services, &token).expect("read").expect("live");
    let secret = account::pending_totp(services, &token, &session, &user)
        .expect("pending")
        .expect("a secret");
    let (session, _) = sessions::find(services, &token).expect("read").expect("live");
    assert_eq!(
        session.pending_totp.as_deref(),
        Some(secret.as_slice()),
        "kept in the session"
    );
    assert_eq!(
        account::pending_totp(services, &token, &session, &user).expect("pending"),
        Some(secret.clone()),
        "the same secret until confirmed"
    );
    assert!(matches!(
        account::enrol_totp(services, &token, &session, "123").expect("enrol"),
        Enrolment::WrongCode
    ));
    let now = store.now().as_millis() / 1000;
    let Enrolment::Enrolled(enrolled) =
        account::enrol_totp(services, &token, &session, &totp::code(&secret, now)).expect("enrol")
    else {
        panic!("the code matches the pending secret");
    };
    assert_eq!(enrolled.recovery_codes.len(), enrolled.user.recovery_codes.len());
    assert_eq!(stored(&world, &user).totp_secret, Some(secret.clone()));
    assert_eq!(enrolled.session.pending_totp, None);
    // Confirmed once: the same form again changes nothing.
    assert!(matches!(
        account::enrol_totp(services, &token, &session, &totp::code(&secret, now)).expect("enrol"),
        Enrolment::NothingPending
    ));
    assert_eq!(stored(&world, &user).recovery_codes, enrolled.user.recovery_codes);
    // A recovery code from the enrolment gets a new session past the second factor.
    let second = account::sign_in(services, &user.email, PASSWORD)
        .expect("sign in")
        .expect("matched")
        .token;
    assert_eq!(
        account::pass_second_factor(services, &second, &enrolled.recovery_codes[0]).expect("check"),
        SecondFactor::Passed
    );
}

#[test]
fn an_invitation_sets_one_password_once() {
    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let user = member(&world, "invited@example.test", None);
    let token = sessions::token();
    let expires = store.now().saturating_add(users::INVITATION_VALID);
    assert!(services.users().insert(&user, Some((&token, expires))).expect("add"));
    assert_eq!(
        account::invited(services, &token).expect("read").map(|u| u.id),
        Some(user.id)
    );
    assert!(matches!(
        account::accept_invitation(services, &token, "short"),
        Err(herald::services::Error::Invalid { .. })
    ));
    let barrier = Barrier::new(2);
    let taken: Vec<bool> = std::thread::scope(|scope| {
        let handles: Vec<_> = ["first long password", "second long password"]
            .into_iter()
            .map(|password| {
                let (barrier, token) = (&barrier, &token);
                scope.spawn(move || {
                    barrier.wait();
                    account::accept_invitation(services, token, password)
                        .expect("accept")
                        .is_some()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a thread")).collect()
    });
    assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
    assert!(account::invited(services, &token).expect("read").is_none(), "spent");
    let winner = if taken[0] {
        "first long password"
    } else {
        "second long password"
    };
    assert!(
        account::sign_in(services, &user.email, winner)
            .expect("sign in")
            .is_some()
    );
}
