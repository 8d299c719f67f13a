//! Users with their invitations and dashboard sessions in PostgreSQL (`users`,
//! `user_invitations`, `user_sessions`; see the schema's second migration): shared by
//! every node, so a user added through one signs in on all, and a session begun on one
//! is found by whichever node takes the next request.
//!
//! A sign-in address is unique across the database by a unique constraint on the
//! address as compared ([`normalize`]), so that two nodes adding one address at once
//! cannot both succeed.

use herald_queue::{Id, Timestamp};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::UserStore;
use crate::storage::Error;
use crate::storage::postgres::{Postgres, Value, from_driver, time, timestamp};
use crate::users::model::{Role, Session, User, digest, normalize};

/// The columns of `users`, in the order [`user`] reads them.
const USER_COLUMNS: &str = "id, team_id, email, role, password_hash, totp_secret, recovery_codes, created_at";

/// The columns of `user_sessions` but its key, in the order [`session`] reads them.
const SESSION_COLUMNS: &str = "team_id, user_id, created_at, last_seen, mfa_passed, csrf, pending_totp";

/// Writes a new user unless its address is taken, in which case it writes nothing and
/// answers no row.
pub(super) const INSERT_USER: &str =
    "INSERT INTO users (id, team_id, email, email_key, role, password_hash, totp_secret, recovery_codes, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (email_key) DO NOTHING";

/// Rewrites a user that exists, its parameters numbered as [`INSERT_USER`]'s.
const UPDATE_USER: &str = "UPDATE users SET email = $3, email_key = $4, role = $5, password_hash = $6,
        totp_secret = $7, recovery_codes = $8, created_at = $9
    WHERE id = $1 AND team_id = $2";

/// Writes an invitation of a user written before.
pub(super) const INSERT_INVITATION: &str =
    "INSERT INTO user_invitations (digest, user_id, expires_at) VALUES ($1, $2, $3)";

/// Writes a session, new or changed.
pub(super) const PUT_SESSION: &str = "INSERT INTO user_sessions (digest, team_id, user_id, created_at, last_seen,
        mfa_passed, csrf, pending_totp)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (digest) DO UPDATE SET team_id = EXCLUDED.team_id, user_id = EXCLUDED.user_id,
        created_at = EXCLUDED.created_at, last_seen = EXCLUDED.last_seen, mfa_passed = EXCLUDED.mfa_passed,
        csrf = EXCLUDED.csrf, pending_totp = EXCLUDED.pending_totp";

/// Users, invitations and sessions in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresUsers {
    db: Postgres,
}

impl PostgresUsers {
    /// Users in `db`, whose schema is migrated.
    pub fn new(db: Postgres) -> PostgresUsers {
        PostgresUsers { db }
    }
}

fn user(row: &Row) -> Result<User, Error> {
    let role = row.get::<_, &str>(3);
    let Some(role) = Role::parse(role) else {
        return Err(Error::Corrupt {
            table: "users",
            reason: format!("unknown role {role:?}"),
        });
    };
    Ok(User {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        email: row.get(2),
        role,
        password_hash: row.get(4),
        totp_secret: row.get(5),
        recovery_codes: row.get(6),
        created_at: timestamp(row.get(7)),
    })
}

fn session(row: &Row) -> Session {
    Session {
        team_id: Id::from(row.get::<_, uuid::Uuid>(0)),
        user_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        created_at: timestamp(row.get(2)),
        last_seen: timestamp(row.get(3)),
        mfa_passed: row.get(4),
        csrf: row.get(5),
        pending_totp: row.get(6),
    }
}

/// The values of [`INSERT_USER`] (and [`UPDATE_USER`]) for `user`.
pub(super) fn values(user: &User) -> Vec<Value> {
    vec![
        Box::new(user.id.uuid()),
        Box::new(user.team_id.uuid()),
        Box::new(user.email.clone()),
        Box::new(normalize(&user.email)),
        Box::new(user.role.name()),
        Box::new(user.password_hash.clone()),
        Box::new(user.totp_secret.clone()),
        Box::new(user.recovery_codes.clone()),
        Box::new(time(user.created_at)),
    ]
}

/// The values of [`INSERT_INVITATION`] for the invitation whose token's digest is
/// `digest`, of `user_id`, valid until `expires_at` (for ever without).
pub(super) fn invitation_values(digest: Vec<u8>, user_id: Id, expires_at: Option<Timestamp>) -> Vec<Value> {
    vec![
        Box::new(digest),
        Box::new(user_id.uuid()),
        Box::new(expires_at.map(time)),
    ]
}

/// The values of [`PUT_SESSION`] for `session`, kept under `digest` (its token's).
pub(super) fn session_values(digest: Vec<u8>, session: &Session) -> Vec<Value> {
    vec![
        Box::new(digest),
        Box::new(session.team_id.uuid()),
        Box::new(session.user_id.uuid()),
        Box::new(time(session.created_at)),
        Box::new(time(session.last_seen)),
        Box::new(session.mfa_passed),
        Box::new(session.csrf.clone()),
        Box::new(session.pending_totp.clone()),
    ]
}

/// Runs `sql` with `values` through `client` (a connection or a transaction): the rows
/// it wrote.
async fn run(client: &impl tokio_postgres::GenericClient, sql: &str, values: &[Value]) -> Result<u64, Error> {
    let values: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
    client.execute(sql, &values).await.map_err(from_driver)
}

/// Runs `sql` ([`INSERT_USER`] or [`UPDATE_USER`]) for `user` through `client` (a
/// connection or a transaction): the rows it wrote.
async fn write_user(client: &impl tokio_postgres::GenericClient, sql: &str, user: &User) -> Result<u64, Error> {
    run(client, sql, &values(user)).await
}

impl UserStore for PostgresUsers {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<User>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE team_id = $1 AND id = $2");
            let row = client
                .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(user).transpose()
        })
    }

    fn by_email(&self, email: &str) -> Result<Option<User>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE email_key = $1");
            let row = client
                .query_opt(&sql, &[&normalize(email)])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(user).transpose()
        })
    }

    fn insert(&self, user: &User, invitation: Option<(&str, Timestamp)>) -> Result<bool, Error> {
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            // The unique address decides, in the database: no read before the write
            // that another node's insert could slip between.
            if write_user(&*transaction, INSERT_USER, user).await? == 0 {
                transaction.rollback().await.map_err(from_driver)?;
                return Ok(false);
            }
            if let Some((token, expires_at)) = invitation {
                let values = invitation_values(digest(token), user.id, Some(expires_at));
                run(&*transaction, INSERT_INVITATION, &values).await?;
            }
            transaction.commit().await.map_err(from_driver)?;
            Ok(true)
        })
    }

    fn put(&self, user: &User) -> Result<(), Error> {
        // A user that is gone (its team erased meanwhile) stays gone: unlike a RocksDB
        // put, an update does not bring back a user without its address.
        self.db.run(async |client| {
            write_user(&***client, UPDATE_USER, user).await?;
            Ok(())
        })
    }

    fn invited(&self, token: &str, now: Timestamp) -> Result<Option<User>, Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {USER_COLUMNS} FROM users WHERE password_hash IS NULL AND id = (
                    SELECT user_id FROM user_invitations
                    WHERE digest = $1 AND (expires_at IS NULL OR expires_at > $2))"
            );
            let row = client
                .query_opt(&sql, &[&digest(token), &time(now)])
                .await
                .map_err(from_driver)?;
            row.as_ref().map(user).transpose()
        })
    }

    fn accept_invitation(&self, token: &str, user: &User) -> Result<(), Error> {
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            write_user(&*transaction, UPDATE_USER, user).await?;
            transaction
                .execute("DELETE FROM user_invitations WHERE digest = $1", &[&digest(token)])
                .await
                .map_err(from_driver)?;
            transaction.commit().await.map_err(from_driver)
        })
    }

    fn team_users(&self, team_id: Id) -> Result<Vec<User>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE team_id = $1 ORDER BY id");
            let rows = client.query(&sql, &[&team_id.uuid()]).await.map_err(from_driver)?;
            rows.iter().map(user).collect()
        })
    }

    fn session(&self, token: &str) -> Result<Option<Session>, Error> {
        self.db.run(async |client| {
            let sql = format!("SELECT {SESSION_COLUMNS} FROM user_sessions WHERE digest = $1");
            let row = client.query_opt(&sql, &[&digest(token)]).await.map_err(from_driver)?;
            Ok(row.as_ref().map(session))
        })
    }

    fn put_session(&self, token: &str, session: &Session) -> Result<(), Error> {
        self.db.run(async |client| {
            run(&***client, PUT_SESSION, &session_values(digest(token), session)).await?;
            Ok(())
        })
    }

    fn end_session(&self, token: &str) -> Result<(), Error> {
        self.db.run(async |client| {
            client
                .execute("DELETE FROM user_sessions WHERE digest = $1", &[&digest(token)])
                .await
                .map_err(from_driver)?;
            Ok(())
        })
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // A team has a handful of users: one pass. Their invitations go with them (ON
        // DELETE CASCADE); their sessions, which would find no one, go too rather than
        // wait to be used.
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            for sql in [
                "DELETE FROM users WHERE team_id = $1",
                "DELETE FROM user_sessions WHERE team_id = $1",
            ] {
                transaction
                    .execute(sql, &[&team_id.uuid()])
                    .await
                    .map_err(from_driver)?;
            }
            transaction.commit().await.map_err(from_driver)?;
            Ok(false)
        })
    }
}
