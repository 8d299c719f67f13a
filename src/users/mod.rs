//! The people who sign in to the dashboard: each a member of one team with a role,
//! signing in with an email address and a password (Argon2id), with optional TOTP.
//!
//! A user is added by an operator or a team's full-access key (`POST /users`, which
//! `herald users add` calls) with a password, or with a one-time invitation link valid
//! for seven days where the person sets one. Emails are unique across the node,
//! compared case-insensitively. Sessions are in [`sessions`].

pub mod sessions;
pub mod store;
pub mod totp;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::accounts::Caller;
use crate::services::{Error, Services};
use crate::wire;

/// Shortest password, in characters.
pub const PASSWORD_MIN: usize = 12;

/// Longest password, in bytes: Argon2 takes any length, a limit keeps hashing bounded.
pub const PASSWORD_MAX: usize = 1024;

/// How long an invitation link works.
pub const INVITATION_VALID: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// What a user may do in their team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Sees everything; may not create keys, delete domains or manage members.
    Member,
    /// Manages keys, domains, webhooks and suppressions.
    Admin,
    /// And the team's members.
    Owner,
}

impl Role {
    /// The role named `name`.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "member" => Some(Role::Member),
            "admin" => Some(Role::Admin),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct User {
    /// Its id.
    pub id: Id,
    /// The team it belongs to.
    pub team_id: Id,
    /// The address it signs in with, as given.
    pub email: String,
    /// Its role.
    pub role: Role,
    /// The Argon2id PHC string of its password; `None` until an invitation is taken.
    pub password_hash: Option<String>,
    /// The TOTP secret, once enrolled.
    #[serde(default)]
    pub totp_secret: Option<Vec<u8>>,
    /// SHA-256 digests of the recovery codes not yet used.
    #[serde(default)]
    pub recovery_codes: Vec<String>,
    /// When it was added.
    pub created_at: Timestamp,
}

impl User {
    /// The answer of `POST /users` and the members list.
    pub fn to_json(&self) -> Value {
        json!({
            "object": "user",
            "id": self.id,
            "team_id": self.team_id,
            "email": self.email,
            "role": self.role.name(),
            "mfa": self.totp_secret.is_some(),
            "invited": self.password_hash.is_none(),
            "created_at": wire::timestamp(self.created_at),
        })
    }
}

/// `email` as compared: trimmed, lower-cased.
pub fn normalize(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

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
    let store = services.store();
    let user = User {
        id: store.next_id(),
        team_id,
        email,
        role: new.role.unwrap_or(Role::Member),
        password_hash,
        totp_secret: None,
        recovery_codes: Vec::new(),
        created_at: store.now(),
    };
    let invitation = user.password_hash.is_none().then(sessions::token);
    store::insert(store, &user, invitation.as_deref())?;
    Ok((user, invitation))
}

/// The caller's team's users.
pub fn list(services: &Services, caller: &Caller) -> Result<Vec<User>, Error> {
    caller.require_full_access()?;
    Ok(store::team_users(services.store(), caller.team_id)?)
}
