//! Where users, their email index and invitations are kept. Users are keyed by team
//! and id (so erasing a team erases them); the email index and invitations point at a
//! user and are ignored once it is gone.

use herald_queue::{Batch, Error, Id, Record, Scan, Store, Table, Timestamp};

use super::{User, normalize};
use crate::services::Error as ServiceError;

impl Record for User {
    const TABLE: Table = Table::USERS;
}

/// What the email index and an invitation point at.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pointer {
    /// The user's team.
    pub team_id: Id,
    /// The user.
    pub user_id: Id,
    /// Until when it works (invitations).
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
}

/// Where [`Pointer`]s of the email index are kept.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct EmailEntry(Pointer);

impl Record for EmailEntry {
    const TABLE: Table = Table::USER_EMAILS;
}

/// Where invitations are kept.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Invitation(Pointer);

impl Record for Invitation {
    const TABLE: Table = Table::INVITATIONS;
}

fn key(team_id: Id, id: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), id.as_bytes()].concat()
}

/// The user `id` of `team_id`.
pub fn get(store: &Store, team_id: Id, id: Id) -> Result<Option<User>, Error> {
    store.get::<User>(key(team_id, id))
}

/// The user signing in as `email`, if any.
pub fn by_email(store: &Store, email: &str) -> Result<Option<User>, Error> {
    let Some(EmailEntry(pointer)) = store.get::<EmailEntry>(normalize(email).as_bytes())? else {
        return Ok(None);
    };
    get(store, pointer.team_id, pointer.user_id)
}

/// Writes a new user, its email entry and `invitation` (a token), durably; a conflict
/// when the email is taken.
pub fn insert(store: &Store, user: &User, invitation: Option<&str>) -> Result<(), ServiceError> {
    if by_email(store, &user.email)?.is_some() {
        return Err(ServiceError::Conflict(format!(
            "A user with the email {} already exists",
            user.email
        )));
    }
    let mut batch = Batch::new();
    batch.put(key(user.team_id, user.id), user)?;
    let pointer = Pointer {
        team_id: user.team_id,
        user_id: user.id,
        expires_at: None,
    };
    batch.put(normalize(&user.email).as_bytes(), &EmailEntry(pointer.clone()))?;
    if let Some(token) = invitation {
        let expires_at = Some(store.now().saturating_add(super::INVITATION_VALID));
        batch.put(
            super::sessions::digest(token),
            &Invitation(Pointer { expires_at, ..pointer }),
        )?;
    }
    store.commit(batch).wait()?;
    Ok(())
}

/// Rewrites a user, durably.
pub fn put(store: &Store, user: &User) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.put(key(user.team_id, user.id), user)?;
    store.commit(batch).wait()
}

/// The user an unexpired invitation `token` is for.
pub fn invited(store: &Store, token: &str) -> Result<Option<User>, Error> {
    let Some(Invitation(pointer)) = store.get::<Invitation>(super::sessions::digest(token))? else {
        return Ok(None);
    };
    if pointer.expires_at.is_some_and(|at| at <= store.now()) {
        return Ok(None);
    }
    Ok(get(store, pointer.team_id, pointer.user_id)?.filter(|u| u.password_hash.is_none()))
}

/// Sets the password of an invited user and spends the invitation, in one write.
pub fn accept_invitation(store: &Store, token: &str, user: &User) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.put(key(user.team_id, user.id), user)?;
    batch.delete::<Invitation>(super::sessions::digest(token));
    store.commit(batch).wait()
}

/// The users of `team_id`, oldest first.
pub fn team_users(store: &Store, team_id: Id) -> Result<Vec<User>, Error> {
    Ok(store
        .scan::<User>(Scan::prefix(team_id.as_bytes()))?
        .into_iter()
        .map(|(_, user)| user)
        .collect())
}
