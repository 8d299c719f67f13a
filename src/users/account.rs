//! What a person does with their own account: sign in, give the second factor (a TOTP
//! code or a recovery code, each recovery code once), change the password, turn on
//! TOTP, take an invitation. Each change of a user reads the user afresh under its
//! record lock ([`Services::lock_record`]), so two requests at once cannot both spend
//! one recovery code or undo each other's change. The dashboard calls these; its
//! guard against guessing stays in the dashboard.

use herald_queue::Id;

use super::sessions::{self, Session};
use super::{User, check_password, hash_password, totp};
use crate::services::{Error, RecordName, Services};

/// The record lock of the user `user_id` of `team_id`.
fn lock(services: &Services, team_id: Id, user_id: Id) -> crate::services::Held<'_> {
    let key = [team_id.as_bytes().as_slice(), user_id.as_bytes()].concat();
    services.lock_record(RecordName {
        table: "users",
        key: &key,
    })
}

/// A sign-in that matched: the user and the new session's token.
#[derive(Debug)]
pub struct SignedIn {
    /// Who signed in.
    pub user: User,
    /// The session's token, for the cookie.
    pub token: String,
}

/// Signs in as `email` with `password`: `None` when they do not match (the password is
/// hashed either way, so the time taken does not tell whether the address is known).
pub fn sign_in(services: &Services, email: &str, password: &str) -> Result<Option<SignedIn>, Error> {
    let user = services.users().by_email(email)?;
    if !check_password(user.as_ref(), password) {
        return Ok(None);
    }
    let Some(user) = user else { return Ok(None) };
    let token = sessions::start(services, &user)?;
    Ok(Some(SignedIn { user, token }))
}

/// Signs in the user with the first of `addresses` (an identity provider's, verified)
/// that one has; `None` when none has.
pub fn sign_in_as(services: &Services, addresses: &[String]) -> Result<Option<SignedIn>, Error> {
    for address in addresses {
        if let Some(user) = services.users().by_email(address)? {
            let token = sessions::start(services, &user)?;
            return Ok(Some(SignedIn { user, token }));
        }
    }
    Ok(None)
}

/// How a second factor went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondFactor {
    /// The code was right: the session is past its second factor.
    Passed,
    /// The code was not right (or the recovery code was spent already).
    Wrong,
    /// The session was past it already.
    AlreadyPassed,
    /// No live session has that token.
    NoSession,
}

/// Checks `code`, a TOTP code or a recovery code, for the session of `token`, and on a
/// match marks the session past its second factor; a recovery code is spent in the same
/// step, under the user's lock, so it works once however many requests carry it.
pub fn pass_second_factor(services: &Services, token: &str, code: &str) -> Result<SecondFactor, Error> {
    let Some((session, user)) = sessions::find(services, token)? else {
        return Ok(SecondFactor::NoSession);
    };
    if session.mfa_passed {
        return Ok(SecondFactor::AlreadyPassed);
    }
    let _lock = lock(services, user.team_id, user.id);
    let Some(mut user) = services.users().get(user.team_id, user.id)? else {
        return Ok(SecondFactor::NoSession);
    };
    let now = services.now().as_millis() / 1000;
    let by_totp = user.totp_secret.as_deref().is_some_and(|s| totp::check(s, code, now));
    let recovery = totp::recovery_digest(code);
    let by_recovery = !by_totp && user.recovery_codes.contains(&recovery);
    if !(by_totp || by_recovery) {
        return Ok(SecondFactor::Wrong);
    }
    if by_recovery {
        user.recovery_codes.retain(|c| *c != recovery);
        services.users().put(&user)?;
    }
    sessions::pass_mfa(services, token, &session)?;
    Ok(SecondFactor::Passed)
}

/// How a password change went.
#[derive(Debug)]
pub enum PasswordChange {
    /// Changed: the user as now stored.
    Changed(User),
    /// The current password was not right.
    WrongPassword,
}

/// Changes the password of `user` from `current` to `new`; an [`Error::Invalid`] when the
/// new one is too short or too long.
pub fn change_password(services: &Services, user: &User, current: &str, new: &str) -> Result<PasswordChange, Error> {
    let _lock = lock(services, user.team_id, user.id);
    let user = services.users().get(user.team_id, user.id)?;
    if !check_password(user.as_ref(), current) {
        return Ok(PasswordChange::WrongPassword);
    }
    let Some(user) = user else {
        return Ok(PasswordChange::WrongPassword);
    };
    let user = User {
        password_hash: Some(hash_password(new)?),
        ..user
    };
    services.users().put(&user)?;
    Ok(PasswordChange::Changed(user))
}

/// The TOTP secret the session of `token` is enrolling, made and kept in the session
/// on first use; `None` when the user has TOTP already.
pub fn pending_totp(
    services: &Services,
    token: &str,
    session: &Session,
    user: &User,
) -> Result<Option<Vec<u8>>, Error> {
    if user.totp_secret.is_some() {
        return Ok(None);
    }
    if let Some(secret) = &session.pending_totp {
        return Ok(Some(secret.clone()));
    }
    let secret = totp::secret();
    let session = Session {
        pending_totp: Some(secret.clone()),
        ..session.clone()
    };
    sessions::save(services, token, &session)?;
    Ok(Some(secret))
}

/// TOTP turned on: the user and session as now stored, and the recovery codes to show
/// once.
#[derive(Debug)]
pub struct Enrolled {
    /// The user, with its secret and the recovery codes' digests.
    pub user: User,
    /// The session, its pending secret gone.
    pub session: Session,
    /// The recovery codes, in clear, shown this once.
    pub recovery_codes: Vec<String>,
}

/// How turning on TOTP went.
#[derive(Debug)]
pub enum Enrolment {
    /// On.
    Enrolled(Box<Enrolled>),
    /// The code does not match the pending secret.
    WrongCode,
    /// Nothing to confirm: no secret pending, or TOTP on already.
    NothingPending,
}

/// Turns on TOTP for the user of the session of `token` when `code` matches the secret
/// the session is enrolling; new recovery codes come with it.
pub fn enrol_totp(services: &Services, token: &str, session: &Session, code: &str) -> Result<Enrolment, Error> {
    let _lock = lock(services, session.team_id, session.user_id);
    let Some(user) = services.users().get(session.team_id, session.user_id)? else {
        return Ok(Enrolment::NothingPending);
    };
    let Some(secret) = session.pending_totp.clone().filter(|_| user.totp_secret.is_none()) else {
        return Ok(Enrolment::NothingPending);
    };
    let now = services.now().as_millis() / 1000;
    if !totp::check(&secret, code, now) {
        return Ok(Enrolment::WrongCode);
    }
    let (codes, digests) = totp::recovery_codes();
    let user = User {
        totp_secret: Some(secret),
        recovery_codes: digests,
        ..user
    };
    let session = Session {
        pending_totp: None,
        ..session.clone()
    };
    services.users().put(&user)?;
    sessions::save(services, token, &session)?;
    Ok(Enrolment::Enrolled(Box::new(Enrolled {
        user,
        session,
        recovery_codes: codes,
    })))
}

/// The user an unexpired invitation `token` is for.
pub fn invited(services: &Services, token: &str) -> Result<Option<User>, Error> {
    Ok(services.users().invited(token, services.now())?)
}

/// Takes the invitation `token`, setting the password it was for; `None` when the
/// invitation is not valid (used, expired, or never made). An [`Error::Invalid`] when
/// the password is too short or too long.
pub fn accept_invitation(services: &Services, token: &str, password: &str) -> Result<Option<User>, Error> {
    let Some(user) = invited(services, token)? else {
        return Ok(None);
    };
    let hash = hash_password(password)?;
    let _lock = lock(services, user.team_id, user.id);
    // Read again under the lock: the same link taken twice at once sets one password.
    let Some(user) = invited(services, token)? else {
        return Ok(None);
    };
    let user = User {
        password_hash: Some(hash),
        ..user
    };
    services.users().accept_invitation(token, &user)?;
    Ok(Some(user))
}
