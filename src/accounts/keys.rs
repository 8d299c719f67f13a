//! The API keys service: create (the token is returned once), list, rename, delete.
//! Rules live here, for every adapter; storage is [`super::AccountStore`]'s.

use herald_queue::{Id, Timestamp};

use super::{ApiKey, Caller, Permission, Token};
use crate::services::{Error, RecordName, Services, required_text};
use crate::storage::page::PageRequest;

/// Longest key name.
const NAME_MAX: usize = 50;

/// A key to create, as a caller asks for it.
#[derive(Debug, Clone, Default)]
pub struct NewKey {
    /// The display name (required).
    pub name: Option<String>,
    /// `"full_access"` (the default) or `"sending_access"`.
    pub permission: Option<String>,
    /// For a sending key, the one domain it may send from.
    pub domain_id: Option<Id>,
}

/// A key as listed: the record and when it last authenticated a request.
#[derive(Debug, Clone)]
pub struct ListedKey {
    /// The key.
    pub key: ApiKey,
    /// When it was last used, if ever.
    pub last_used_at: Option<Timestamp>,
}

/// Parses a permission; Resend's `invalid_access` names the accepted values.
fn permission(text: Option<&str>) -> Result<Permission, Error> {
    match text {
        None | Some("full_access") => Ok(Permission::FullAccess),
        Some("sending_access") => Ok(Permission::SendingAccess),
        Some(other) => Err(Error::Invalid {
            name: "invalid_access",
            message: format!("Access must be \"full_access\" or \"sending_access\", got {other:?}"),
        }),
    }
}

/// Creates a key of the caller's team; returns it with its token, which is not stored
/// and cannot be shown again.
pub fn create(services: &Services, caller: &Caller, new: NewKey) -> Result<(ApiKey, Token), Error> {
    caller.require_full_access()?;
    let name = required_text(new.name, "name", NAME_MAX)?;
    let permission = permission(new.permission.as_deref())?;
    let domain_id = match (permission, new.domain_id) {
        (_, None) => None,
        (Permission::FullAccess, Some(_)) => {
            return Err(Error::invalid(
                "`domain_id` can only be set with `sending_access` permission",
            ));
        }
        (Permission::SendingAccess, Some(id)) => {
            if services.domains().get(caller.team_id, id)?.is_none() {
                return Err(Error::NotFound("Domain not found"));
            }
            Some(id)
        }
    };
    issue(services, caller.team_id, name, permission, domain_id)
}

/// Creates a key for `team_id` without asking who for: a new team's first key.
pub(super) fn issue(
    services: &Services,
    team_id: Id,
    name: String,
    permission: Permission,
    domain_id: Option<Id>,
) -> Result<(ApiKey, Token), Error> {
    let token = Token::generate();
    let key = ApiKey {
        id: services.next_id(),
        team_id,
        name,
        permission,
        domain_id,
        digest: token.digest_hex(),
        created_at: services.now(),
        last_used_at: None,
    };
    services.accounts().insert_key(&key, token.digest())?;
    Ok((key, token))
}

/// One page of the caller's team's keys, newest first, and whether more lie beyond it.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<ListedKey>, bool), Error> {
    caller.require_full_access()?;
    let accounts = services.accounts();
    let (keys, has_more) = accounts.keys(caller.team_id, page)?;
    let listed = keys
        .into_iter()
        .map(|key| {
            let used = accounts.last_used(key.id)?;
            Ok(ListedKey {
                last_used_at: used.or(key.last_used_at),
                key,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((listed, has_more))
}

/// Locks the caller's key `id` for a change.
fn lock<'a>(services: &'a Services, caller: &Caller, id: Id) -> crate::services::Held<'a> {
    let name = [caller.team_id.as_bytes().as_slice(), id.as_bytes()].concat();
    services.lock_record(RecordName {
        table: "api_keys",
        key: &name,
    })
}

/// Renames the caller's key `id`.
pub fn rename(services: &Services, caller: &Caller, id: Id, name: Option<String>) -> Result<(), Error> {
    caller.require_full_access()?;
    let name = required_text(name, "name", NAME_MAX)?;
    let _guard = lock(services, caller, id);
    let mut key = services
        .accounts()
        .key(caller.team_id, id)?
        .ok_or(Error::NotFound("API key not found"))?;
    key.name = name;
    services.accounts().put_key(&key)?;
    Ok(())
}

/// Deletes the caller's key `id`: its token stops working at once.
pub fn delete(services: &Services, caller: &Caller, id: Id) -> Result<(), Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller, id);
    let key = services
        .accounts()
        .key(caller.team_id, id)?
        .ok_or(Error::NotFound("API key not found"))?;
    services.accounts().delete_key(&key)?;
    Ok(())
}
