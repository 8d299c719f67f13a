//! Where users, their email index, invitations and sessions are kept. [`UserStore`] is
//! what the users service speaks to; [`RocksUsers`] keeps them in the node's RocksDB.
//! Users are keyed by team and id (so erasing a team erases them); the email index and
//! invitations point at a user and are ignored once it is gone; sessions are kept by the
//! SHA-256 of their token.
//!
//! [`PostgresUsers`] keeps them in PostgreSQL, for a cluster.

mod copy;
mod postgres;

use crate::storage::Error;
use herald_queue::{Batch, Id, Record, Scan, Store, Table, Timestamp};

use super::model::{Session, User, digest, normalize};
pub use copy::copy;
pub use postgres::PostgresUsers;

/// Users, their invitations and their dashboard sessions.
pub trait UserStore: Send + Sync + std::fmt::Debug {
    /// The user `id` of `team_id`.
    fn get(&self, team_id: Id, id: Id) -> Result<Option<User>, Error>;
    /// The user signing in as `email`, if any.
    fn by_email(&self, email: &str) -> Result<Option<User>, Error>;
    /// Writes a new user, its email entry and an invitation (a token, valid until a
    /// time), durably; `false`, with nothing written, when the email is taken.
    fn insert(&self, user: &User, invitation: Option<(&str, Timestamp)>) -> Result<bool, Error>;
    /// Rewrites a user, durably.
    fn put(&self, user: &User) -> Result<(), Error>;
    /// The user an invitation `token` unexpired at `now` is for, while it has no
    /// password.
    fn invited(&self, token: &str, now: Timestamp) -> Result<Option<User>, Error>;
    /// Sets the password of an invited user and spends the invitation, in one write.
    fn accept_invitation(&self, token: &str, user: &User) -> Result<(), Error>;
    /// The users of `team_id`, oldest first.
    fn team_users(&self, team_id: Id) -> Result<Vec<User>, Error>;
    /// The session of `token`, as stored (expired or not).
    fn session(&self, token: &str) -> Result<Option<Session>, Error>;
    /// Writes the session of `token`, durably.
    fn put_session(&self, token: &str, session: &Session) -> Result<(), Error>;
    /// Deletes the session of `token`, durably.
    fn end_session(&self, token: &str) -> Result<(), Error>;
    /// Erases the deleted team `team_id`'s users with their sign-in addresses, durably
    /// (their sessions and invitations then find no one): `true` while more is left.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

/// Users in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksUsers {
    store: Store,
}

impl RocksUsers {
    /// Users in `store`.
    pub fn new(store: Store) -> RocksUsers {
        RocksUsers { store }
    }
}

impl Record for Session {
    const TABLE: Table = Table::SESSIONS;
}

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

impl UserStore for RocksUsers {
    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // A team has a handful of users: one batch.
        let mut batch = Batch::new();
        for user in self.team_users(team_id)? {
            batch.delete::<EmailEntry>(normalize(&user.email).as_bytes());
        }
        batch.delete_prefix(Table::USERS, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
    fn get(&self, team_id: Id, id: Id) -> Result<Option<User>, Error> {
        Ok(self.store.get::<User>(key(team_id, id))?)
    }

    fn by_email(&self, email: &str) -> Result<Option<User>, Error> {
        let Some(EmailEntry(pointer)) = self.store.get::<EmailEntry>(normalize(email).as_bytes())? else {
            return Ok(None);
        };
        self.get(pointer.team_id, pointer.user_id)
    }

    fn insert(&self, user: &User, invitation: Option<(&str, Timestamp)>) -> Result<bool, Error> {
        if self.by_email(&user.email)?.is_some() {
            return Ok(false);
        }
        let mut batch = Batch::new();
        batch.put(key(user.team_id, user.id), user)?;
        let pointer = Pointer {
            team_id: user.team_id,
            user_id: user.id,
            expires_at: None,
        };
        batch.put(normalize(&user.email).as_bytes(), &EmailEntry(pointer.clone()))?;
        if let Some((token, expires_at)) = invitation {
            let expires_at = Some(expires_at);
            batch.put(digest(token), &Invitation(Pointer { expires_at, ..pointer }))?;
        }
        self.store.commit(batch).wait()?;
        Ok(true)
    }

    fn put(&self, user: &User) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(key(user.team_id, user.id), user)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn invited(&self, token: &str, now: Timestamp) -> Result<Option<User>, Error> {
        let Some(Invitation(pointer)) = self.store.get::<Invitation>(digest(token))? else {
            return Ok(None);
        };
        if pointer.expires_at.is_some_and(|at| at <= now) {
            return Ok(None);
        }
        Ok(self
            .get(pointer.team_id, pointer.user_id)?
            .filter(|u| u.password_hash.is_none()))
    }

    fn accept_invitation(&self, token: &str, user: &User) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(key(user.team_id, user.id), user)?;
        batch.delete::<Invitation>(digest(token));
        Ok(self.store.commit(batch).wait()?)
    }

    fn team_users(&self, team_id: Id) -> Result<Vec<User>, Error> {
        Ok(self
            .store
            .scan::<User>(Scan::prefix(team_id.as_bytes()))?
            .into_iter()
            .map(|(_, user)| user)
            .collect())
    }

    fn session(&self, token: &str) -> Result<Option<Session>, Error> {
        Ok(self.store.get::<Session>(digest(token))?)
    }

    fn put_session(&self, token: &str, session: &Session) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.put(digest(token), session)?;
        Ok(self.store.commit(batch).wait()?)
    }

    fn end_session(&self, token: &str) -> Result<(), Error> {
        let mut batch = Batch::new();
        batch.delete::<Session>(digest(token));
        Ok(self.store.commit(batch).wait()?)
    }
}
