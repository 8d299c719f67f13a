//! `/api-keys`: create (the token is shown once), list, rename, delete.

use herald_queue::{Batch, Id};
use serde_json::json;

use super::{Ctx, Reply, required_text};
use crate::accounts::{ApiKey, ApiKeyDigest, ApiKeyUsage, Permission, Token};
use crate::domains::Domain;
use crate::http::pagination::{PageRequest, envelope};
use crate::http::{ApiError, format};

/// Longest key name.
const NAME_MAX: usize = 50;

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    name: Option<String>,
    permission: Option<String>,
    domain_id: Option<String>,
}

/// Parses `permission`; Resend's `invalid_access` names the accepted values.
fn permission(text: Option<&str>) -> Result<Permission, ApiError> {
    match text {
        None | Some("full_access") => Ok(Permission::FullAccess),
        Some("sending_access") => Ok(Permission::SendingAccess),
        Some(other) => Err(ApiError {
            status: hyper::StatusCode::UNPROCESSABLE_ENTITY,
            name: "invalid_access",
            message: format!("Access must be \"full_access\" or \"sending_access\", got {other:?}"),
        }),
    }
}

/// `POST /api-keys`.
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let name = required_text(body.name, "name", NAME_MAX)?;
    let permission = permission(body.permission.as_deref())?;
    let domain_id = match (permission, body.domain_id.as_deref()) {
        (_, None) => None,
        (Permission::FullAccess, Some(_)) => {
            return Err(ApiError::validation(
                "`domain_id` can only be set with `sending_access` permission",
            ));
        }
        (Permission::SendingAccess, Some(text)) => {
            let id = format::id(text, "domain")?;
            let store = &ctx.state.store;
            if store.get::<Domain>(Domain::key(ctx.caller.team_id, id))?.is_none() {
                return Err(ApiError::not_found("Domain not found"));
            }
            Some(id)
        }
    };
    let (key, token) = issue(ctx.state, ctx.caller.team_id, name, permission, domain_id)?;
    Ok(Reply::created(json!({ "id": key.id, "token": token.expose() })))
}

/// Creates a key for `team_id` and commits it with its digest; returns it with the token
/// (which is not stored).
pub fn issue(
    state: &crate::server::AppState,
    team_id: Id,
    name: String,
    permission: Permission,
    domain_id: Option<Id>,
) -> Result<(ApiKey, Token), ApiError> {
    let store = &state.store;
    let token = Token::generate();
    let key = ApiKey {
        id: store.next_id(),
        team_id,
        name,
        permission,
        domain_id,
        digest: token.digest_hex(),
        created_at: store.now(),
        last_used_at: None,
    };
    let mut batch = Batch::new();
    batch.put(ApiKey::key(team_id, key.id), &key)?;
    batch.put(
        token.digest(),
        &ApiKeyDigest {
            team_id,
            key_id: key.id,
        },
    )?;
    store.commit(batch).wait()?;
    Ok((key, token))
}

/// `GET /api-keys`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, None)?;
    let store = &ctx.state.store;
    let (keys, has_more) = page.load::<ApiKey>(store, ctx.caller.team_id.as_bytes())?;
    let data = keys
        .iter()
        .map(|key| {
            let used = store.get::<ApiKeyUsage>(key.id.as_bytes())?.map(|u| u.last_used_at);
            Ok(json!({
                "id": key.id,
                "name": key.name,
                "permission": key.permission,
                "domain_id": key.domain_id,
                "created_at": format::timestamp(key.created_at),
                "last_used_at": used.or(key.last_used_at).map(format::timestamp),
            }))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Reply::ok(envelope(data, has_more)))
}

#[derive(Debug, serde::Deserialize)]
struct UpdateBody {
    name: Option<String>,
}

/// `PATCH /api-keys/{id}`: renames a key.
pub fn update(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "API key")?;
    let body: UpdateBody = ctx.request.json()?;
    let name = required_text(body.name, "name", NAME_MAX)?;
    let store = &ctx.state.store;
    let key_location = ApiKey::key(ctx.caller.team_id, id);
    let _guard = ctx.state.lock_record(crate::services::RecordName {
        table: herald_queue::Table::API_KEYS.name(),
        key: &key_location,
    });
    let Some(mut key) = store.get::<ApiKey>(&key_location)? else {
        return Err(ApiError::not_found("API key not found"));
    };
    key.name = name;
    let mut batch = Batch::new();
    batch.put(&key_location, &key)?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({ "object": "api_key", "id": id })))
}

/// `DELETE /api-keys/{id}`: the key stops working at once.
pub fn delete(ctx: &Ctx<'_>, id: &str) -> Result<Reply, ApiError> {
    let id = format::id(id, "API key")?;
    let store = &ctx.state.store;
    let key_location = ApiKey::key(ctx.caller.team_id, id);
    let _guard = ctx.state.lock_record(crate::services::RecordName {
        table: herald_queue::Table::API_KEYS.name(),
        key: &key_location,
    });
    let Some(key) = store.get::<ApiKey>(&key_location)? else {
        return Err(ApiError::not_found("API key not found"));
    };
    let digest = hex_decode(&key.digest).ok_or_else(|| ApiError::internal(&"stored key digest is not hex"))?;
    let mut batch = Batch::new();
    batch.delete::<ApiKey>(&key_location);
    batch.delete::<ApiKeyDigest>(digest);
    batch.delete::<ApiKeyUsage>(id.as_bytes());
    store.commit(batch).wait()?;
    Ok(Reply::ok(json!({ "object": "api_key", "id": id, "deleted": true })))
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
