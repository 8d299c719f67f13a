//! `/suppressions/batch/add` and `/suppressions/batch/remove`: many entries in one
//! request and one commit. Every item is checked before anything is written, so a bad
//! item refuses the whole request and changes nothing.

use std::collections::HashSet;

use herald_queue::{Batch, Id};
use serde_json::{Value, json};

use super::suppressions::{address, removed_json, stage_add, stage_remove};
use super::{Ctx, Reply};
use crate::http::ApiError;
use crate::suppressions::{self, Suppression};

/// Most addresses or ids in one request, as Resend documents. It bounds the work one
/// request does under the write lock and the size of its commit.
const BATCH_MAX: usize = 100;

#[derive(Debug, serde::Deserialize)]
struct AddBody {
    emails: Option<Vec<String>>,
}

/// `POST /suppressions/batch/add` `{"emails": [...]}`: `{"data": [{object, id}]}`, one
/// entry per distinct address in the order first given; addresses already suppressed
/// answer with their existing id.
pub fn add(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: AddBody = ctx.request.json()?;
    let emails = bounded(body.emails, "emails")?;
    let mut addresses = Vec::with_capacity(emails.len());
    for (at, text) in emails.iter().enumerate() {
        let email =
            address(text).map_err(|why| ApiError::validation(format!("Invalid `emails[{at}]` field: {why}")))?;
        if !addresses.contains(&email) {
            addresses.push(email);
        }
    }
    let store = &ctx.state.store;
    let _guard = ctx.state.lock_record(super::suppressions::team_suppressions(ctx));
    let mut batch = Batch::new();
    let data = addresses
        .iter()
        .map(|email| {
            let id = stage_add(store, ctx.caller.team_id, email, &mut batch)?;
            Ok(json!({ "object": "suppression", "id": id }))
        })
        .collect::<Result<Vec<Value>, ApiError>>()?;
    if !batch.is_empty() {
        store.commit(batch).wait()?;
    }
    Ok(Reply::created(json!({ "data": data })))
}

#[derive(Debug, serde::Deserialize)]
struct RemoveBody {
    emails: Option<Vec<String>>,
    ids: Option<Vec<String>>,
}

/// What a batch removal names its entries by.
enum Targets {
    Emails(Vec<String>),
    Ids(Vec<Id>),
}

/// `POST /suppressions/batch/remove` `{"emails": [...]}` or `{"ids": [...]}`:
/// `{"data": [{object, id, deleted}]}` for the entries that existed; the others are
/// left out, as Resend does.
pub fn remove(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: RemoveBody = ctx.request.json()?;
    let targets = targets(body)?;
    let (store, team_id) = (&ctx.state.store, ctx.caller.team_id);
    let _guard = ctx.state.lock_record(super::suppressions::team_suppressions(ctx));
    let found: Vec<Option<Suppression>> = match &targets {
        Targets::Emails(emails) => emails
            .iter()
            .map(|email| suppressions::find(store, team_id, email))
            .collect::<Result<_, _>>()?,
        Targets::Ids(ids) => ids
            .iter()
            .map(|id| suppressions::find_by_id(store, team_id, *id))
            .collect::<Result<_, _>>()?,
    };
    let mut batch = Batch::new();
    let mut removed = HashSet::new();
    let mut data = Vec::new();
    // The same entry may be named twice (by two spellings of one address, or one id
    // twice); it is removed, and answered, once.
    for suppression in found.iter().flatten() {
        if removed.insert(suppression.id) {
            stage_remove(store, suppression, &mut batch)?;
            data.push(removed_json(suppression));
        }
    }
    if !batch.is_empty() {
        store.commit(batch).wait()?;
    }
    Ok(Reply::ok(json!({ "data": data })))
}

/// Checks the body names entries one way, and each of them well.
fn targets(body: RemoveBody) -> Result<Targets, ApiError> {
    match (body.emails, body.ids) {
        (Some(_), Some(_)) => Err(ApiError::validation(
            "The `emails` and `ids` fields cannot be used together",
        )),
        (None, None) => Err(ApiError::missing_field("emails")),
        (emails @ Some(_), None) => {
            let emails = bounded(emails, "emails")?;
            // Removal looks addresses up rather than validating them: an address that
            // delivery suppressed in a form the API would refuse must still come off.
            emails
                .iter()
                .enumerate()
                .map(|(at, text)| match suppressions::normalize(text) {
                    email if email.is_empty() => Err(ApiError::validation(format!(
                        "Invalid `emails[{at}]` field: an address is empty"
                    ))),
                    email => Ok(email),
                })
                .collect::<Result<_, _>>()
                .map(Targets::Emails)
        }
        (None, ids @ Some(_)) => bounded(ids, "ids")?
            .iter()
            .enumerate()
            .map(|(at, text)| {
                text.parse::<Id>().map_err(|_| {
                    ApiError::validation(format!(
                        "Invalid `ids[{at}]` field: a suppression id is a UUID, got {text:?}"
                    ))
                })
            })
            .collect::<Result<_, _>>()
            .map(Targets::Ids),
    }
}

/// The list in `field`: present, with 1 to [`BATCH_MAX`] items.
fn bounded(list: Option<Vec<String>>, field: &str) -> Result<Vec<String>, ApiError> {
    let Some(list) = list else {
        return Err(ApiError::missing_field(field));
    };
    if list.is_empty() || list.len() > BATCH_MAX {
        return Err(ApiError::validation(format!(
            "The `{field}` field must list 1 to {BATCH_MAX} items, got {}",
            list.len()
        )));
    }
    Ok(list)
}
