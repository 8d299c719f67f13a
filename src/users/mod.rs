//! The people who sign in to the dashboard: each a member of one team with a role,
//! signing in with an email address and a password (Argon2id), with optional TOTP.
//!
//! A user is added by an operator or a team's full-access key (`POST /users`, which
//! `herald users add` calls) with a password, or with a one-time invitation link valid
//! for seven days where the person sets one. Emails are unique across the node,
//! compared case-insensitively. Sessions are in [`sessions`].

pub mod account;
pub mod model;
pub mod sessions;
pub mod store;
pub mod totp;

pub use model::{Role, User, normalize};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use herald_queue::Id;

use crate::accounts::Caller;
use crate::services::{Error, Services};

/// Shortest password, in characters.
pub const PASSWORD_MIN: usize = 12;

/// Longest password, in bytes: Argon2 takes any length, a limit keeps hashing bounded.
pub const PASSWORD_MAX: usize = 1024;

/// How long an invitation link works.
pub const INVITATION_VALID: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The Argon2id hash of `password`, after checking its length.
pub fn hash_password(password: &str) -> Result<String, Error> {
    if password.chars().count() < PASSWORD_MIN {
        return Err(Error::invalid(format!(
            "The password must be at least {PASSWORD_MIN} characters"
        )));
    }
    if password.len() > PASSWORD_MAX {
        return Err(Error::invalid(format!(
            "The password must be at most {PASSWORD_MAX} bytes"
        )));
    }
    let mut random = [0u8; 16];
    aws_lc_rs::rand::fill(&mut random).map_err(|_| Error::Internal("no randomness"))?;
    let salt = SaltString::encode_b64(&random).map_err(|_| Error::Internal("cannot make a salt"))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|_| Error::Internal("cannot hash a password"))
}

/// Whether `password` is `user`'s. A user without a password (an invitation not yet
/// taken) never matches; a password is hashed either way, so the time taken does not
/// tell which.
pub fn check_password(user: Option<&User>, password: &str) -> bool {
    /// Verified when there is no user, so a miss costs what a hit costs.
    const DUMMY: &str =
        "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$5kOJb7O0/iFcyGSQ0fm4+TtXuqWdyU5nE6UBJYe2c4Y";
    let stored = user.and_then(|u| u.password_hash.as_deref());
    let Ok(parsed) = PasswordHash::new(stored.unwrap_or(DUMMY)) else {
        return false;
    };
    let verified =
        password.len() <= PASSWORD_MAX && Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
    verified && stored.is_some()
}

/// A user to add, as the caller gives it.
#[derive(Debug, Clone, Default)]
pub struct NewUser {
    /// The address.
    pub email: Option<String>,
    /// The team (the operator's key may name another than its own).
    pub team_id: Option<Id>,
    /// The role [member].
    pub role: Option<Role>,
    /// A password to sign in with at once; without, an invitation link.
    pub password: Option<String>,
}

/// Adds a user; the user and, without a password, its invitation token.
pub fn add(services: &Services, caller: &Caller, new: NewUser) -> Result<(User, Option<String>), Error> {
    caller.require_full_access()?;
    let team_id = match new.team_id {
        Some(team) if team != caller.team_id && !caller.operator => {
            return Err(Error::Forbidden(
                "Only the operator's key may add users to another team".into(),
            ));
        }
        Some(team) => team,
        None => caller.team_id,
    };
    if services
        .accounts()
        .team(team_id)?
        .is_none_or(|t| t.deleted_at.is_some())
    {
        return Err(Error::NotFound("Team not found"));
    }
    let email = new
        .email
        .filter(|e| !e.trim().is_empty())
        .ok_or(Error::MissingField("email"))?;
    let email = email.trim().to_owned();
    if !email_address::EmailAddress::is_valid(&email) {
        return Err(Error::invalid(format!(
            "Invalid `email` field: {email:?} is not an email address"
        )));
    }
    let password_hash = new.password.as_deref().map(hash_password).transpose()?;
    let user = User {
        id: services.next_id(),
        team_id,
        email,
        role: new.role.unwrap_or(Role::Member),
        password_hash,
        totp_secret: None,
        recovery_codes: Vec::new(),
        created_at: services.now(),
    };
    let invitation = user.password_hash.is_none().then(sessions::token);
    let expires_at = services.now().saturating_add(INVITATION_VALID);
    // One address, one user: two adds of it at once find each other under this lock.
    let address = normalize(&user.email);
    let _lock = services.lock_record(crate::services::RecordName {
        table: "user_emails",
        key: address.as_bytes(),
    });
    let invited = invitation.as_deref().map(|token| (token, expires_at));
    if !services.users().insert(&user, invited)? {
        return Err(Error::Conflict(format!(
            "A user with the email {} already exists",
            user.email
        )));
    }
    Ok((user, invitation))
}

/// The caller's team's users.
pub fn list(services: &Services, caller: &Caller) -> Result<Vec<User>, Error> {
    caller.require_full_access()?;
    Ok(services.users().team_users(caller.team_id)?)
}
