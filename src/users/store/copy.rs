//! The node's users with their invitations and dashboard sessions, copied into
//! PostgreSQL by `herald store copy` ([`crate::storage::copy`]), row for row as
//! [`super::PostgresUsers`] writes them. The email index is not copied: there it is the
//! `users` table's own unique column.

use herald_queue::Table;

use super::postgres::{INSERT_INVITATION, INSERT_USER, PUT_SESSION, invitation_values, session_values, values};
use super::{Invitation, key};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;
use crate::users::model::{Session, User};

/// The length of the SHA-256 digest invitations and sessions are kept under.
const DIGEST_LEN: usize = 32;

/// Copies every user, invitation and session. An invitation whose user is gone (erased
/// with its team: RocksDB leaves its invitations to find no one) is not copied, as
/// PostgreSQL keeps invitations only with their user; a session is copied either way, as
/// both stores keep a session outliving its user until it is next used.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("users");
    copy.expect("invitations");
    copy.expect("sessions");
    copy.each::<User>(|copy, _, user| {
        let statement = Statement::new(copy.to(), INSERT_USER, values(&user));
        copy.write("users", statement)
    })?;
    copy.each::<Invitation>(|copy, digest, Invitation(pointer)| {
        let digest = digest_of(Table::INVITATIONS, digest)?;
        if copy
            .from()
            .get_raw(Table::USERS, &key(pointer.team_id, pointer.user_id))?
            .is_none()
        {
            return Ok(());
        }
        let values = invitation_values(digest, pointer.user_id, pointer.expires_at);
        let statement = Statement::new(copy.to(), INSERT_INVITATION, values);
        copy.write("invitations", statement)
    })?;
    copy.each::<Session>(|copy, digest, session| {
        let digest = digest_of(Table::SESSIONS, digest)?;
        let statement = Statement::new(copy.to(), PUT_SESSION, session_values(digest, &session));
        copy.write("sessions", statement)
    })
}

/// The key of a record of `table` kept by its token's digest, checked to be one.
fn digest_of(table: Table, key: &[u8]) -> Result<Vec<u8>, Error> {
    if key.len() != DIGEST_LEN {
        return Err(Error::Corrupt {
            table: table.name(),
            reason: format!("a key of {} bytes where a token's digest belongs", key.len()),
        });
    }
    Ok(key.to_vec())
}
