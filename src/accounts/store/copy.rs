//! The node's teams, API keys and their last uses, copied into PostgreSQL by
//! `herald store copy` ([`crate::storage::copy`]), row for row as [`super::PostgresAccounts`]
//! writes them.

use herald_queue::{Id, Store, Timestamp};

use super::postgres::{INSERT_KEY, PUT_TEAM, permission};
use super::{INITIALISED, Initialised, hex_decode};
use crate::accounts::api_key::{ApiKey, ApiKeyUsage};
use crate::accounts::team::Team;
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::{Statement, time};

/// Writes a key's last use (its key is copied before it; a use left behind by a key
/// deleted as it was used is not).
const PUT_USE: &str = "INSERT INTO api_key_uses (key_id, last_used_at) SELECT id, $2 FROM api_keys WHERE id = $1
    ON CONFLICT (key_id) DO UPDATE SET last_used_at = EXCLUDED.last_used_at";

/// Copies every team, API key and key use.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("teams");
    copy.expect("API keys");
    copy.each::<Team>(|copy, _, team| {
        let statement = Statement::new(
            copy.to(),
            PUT_TEAM,
            vec![
                Box::new(team.id.uuid()),
                Box::new(team.name),
                Box::new(team.operator),
                Box::new(time(team.created_at)),
                Box::new(team.rate_limit),
                Box::new(team.plan),
                Box::new(team.deleted_at.map(time)),
            ],
        );
        copy.write("teams", statement)
    })?;
    copy.each::<ApiKey>(|copy, _, key| {
        let digest = hex_decode(&key.digest).ok_or_else(|| Error::Corrupt {
            table: herald_queue::Table::API_KEYS.name(),
            reason: format!("key {} has a digest that is not hex", key.id),
        })?;
        let statement = Statement::new(
            copy.to(),
            INSERT_KEY,
            vec![
                Box::new(key.id.uuid()),
                Box::new(key.team_id.uuid()),
                Box::new(key.name),
                Box::new(permission(key.permission)),
                Box::new(key.domain_id.map(|id| id.uuid())),
                Box::new(digest),
                Box::new(time(key.created_at)),
                Box::new(key.last_used_at.map(time)),
            ],
        );
        copy.write("API keys", statement)
    })?;
    copy.each::<ApiKeyUsage>(|copy, key, usage| {
        let key_id = Id::from_slice(key).ok_or_else(|| Error::Corrupt {
            table: herald_queue::Table::API_KEY_USAGE.name(),
            reason: "a key's use is not under the key's id".to_owned(),
        })?;
        let statement = Statement::new(
            copy.to(),
            PUT_USE,
            vec![Box::new(key_id.uuid()), Box::new(time(usage.last_used_at))],
        );
        copy.also(statement)
    })
}

/// The operator's team of the node's own records and when they were initialised, if they
/// were.
pub fn initialised_locally(store: &Store) -> Result<Option<(Id, Timestamp)>, Error> {
    Ok(store
        .get::<Initialised>(INITIALISED)?
        .map(|done| (done.team_id, done.at)))
}
