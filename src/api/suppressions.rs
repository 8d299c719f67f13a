//! `/suppressions`: the team's suppression list through the API. Add an address by hand,
//! list the list (all of it, or one origin), read and remove an entry by its id or its
//! address. The batch forms are in [`super::suppressions_batch`], on the same helpers.

use herald_queue::{Batch, Id, Scan, Store};
use serde_json::json;

use super::{Ctx, Reply};
use crate::emails::Mailbox;
use crate::http::pagination::{Cursor, PageRequest, envelope};
use crate::http::{ApiError, format};
use crate::suppressions::{self, Origin, Suppression, SuppressionId};

/// Items per page when the request names no `limit`, as Resend's newer lists do.
const DEFAULT_LIMIT: usize = 20;

/// Id index entries read at a time when a list is filtered by origin. Unfiltered lists
/// read one page's worth; a filter may skip many entries, so it reads in larger steps.
const FILTERED_SCAN_STEP: usize = 500;

#[derive(Debug, serde::Deserialize)]
struct AddBody {
    email: Option<String>,
}

/// `POST /suppressions`: suppresses an address by hand. An address already suppressed
/// keeps its entry (and origin), and its id is the answer.
pub fn add(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: AddBody = ctx.request.json()?;
    let Some(text) = body.email.filter(|text| !text.trim().is_empty()) else {
        return Err(ApiError::missing_field("email"));
    };
    let email = address(&text).map_err(|why| ApiError::validation(format!("Invalid `email` field: {why}")))?;
    let store = &ctx.state.store;
    let _guard = ctx.state.lock_record(team_suppressions(ctx));
    let mut batch = Batch::new();
    let id = stage_add(store, ctx.caller.team_id, &email, &mut batch)?;
    if !batch.is_empty() {
        store.commit(batch).wait()?;
    }
    // 201 as Resend answers, also when the address was already on the list and keeps
    // its entry: the caller asked for it to be suppressed, and it is.
    Ok(Reply::created(json!({ "object": "suppression", "id": id })))
}

/// `GET /suppressions`, newest first, optionally `?origin=bounce|complaint|manual`.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let page = PageRequest::parse(ctx.request, Some(DEFAULT_LIMIT))?;
    let origin = ctx.request.query("origin").map(origin).transpose()?;
    let (entries, has_more) = load_page(&ctx.state.store, ctx.caller.team_id, page, origin)?;
    Ok(Reply::ok(envelope(
        entries.iter().map(Suppression::summary_json).collect(),
        has_more,
    )))
}

/// `GET /suppressions/{id-or-email}`.
pub fn get(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    Ok(Reply::ok(load(ctx, target)?.to_json()))
}

/// `DELETE /suppressions/{id-or-email}`: mail to the address is sent again.
pub fn delete(ctx: &Ctx<'_>, target: &str) -> Result<Reply, ApiError> {
    let store = &ctx.state.store;
    let _guard = ctx.state.lock_record(team_suppressions(ctx));
    let suppression = load(ctx, target)?;
    let mut batch = Batch::new();
    stage_remove(store, &suppression, &mut batch)?;
    store.commit(batch).wait()?;
    Ok(Reply::ok(removed_json(&suppression)))
}

/// A bare address from the request, lower case, or why it is refused. A display name
/// (`Bob <bob@example.com>`) is refused: a suppression names a mailbox, not a person.
pub(super) fn address(text: &str) -> Result<String, String> {
    let mailbox = Mailbox::parse(text)?;
    if mailbox.name.is_some() {
        return Err(format!(
            "{text:?} has a display name; give the address alone, as bob@example.com"
        ));
    }
    Ok(suppressions::normalize(&mailbox.address))
}

/// The id of `email`'s entry for `team_id`: the existing one, or a new `manual` entry
/// staged in `batch` with its `suppression.added` event. The caller holds the write lock.
pub(super) fn stage_add(store: &Store, team_id: Id, email: &str, batch: &mut Batch) -> Result<Id, ApiError> {
    if let Some(existing) = suppressions::find(store, team_id, email)? {
        return Ok(existing.id);
    }
    let suppression = Suppression::new(store, team_id, email, Origin::Manual, None);
    suppression.put(batch)?;
    crate::events::push(
        batch,
        store,
        team_id,
        crate::events::EventKind::SuppressionAdded,
        || suppression.event_json(),
    )?;
    Ok(suppression.id)
}

/// Stages the removal of `suppression` and its `suppression.removed` event in `batch`.
pub(super) fn stage_remove(store: &Store, suppression: &Suppression, batch: &mut Batch) -> Result<(), ApiError> {
    suppression.delete(batch);
    crate::events::push(
        batch,
        store,
        suppression.team_id,
        crate::events::EventKind::SuppressionRemoved,
        || suppression.event_json(),
    )?;
    Ok(())
}

/// The answer to a removal.
pub(super) fn removed_json(suppression: &Suppression) -> serde_json::Value {
    json!({ "object": "suppression", "id": suppression.id, "deleted": true })
}

/// The caller's entry named by a path segment: a UUID is an id, anything with an `@` an
/// address (SDKs percent-encode it).
fn load(ctx: &Ctx<'_>, target: &str) -> Result<Suppression, ApiError> {
    let text = format::path_segment(target).ok_or_else(|| {
        ApiError::invalid_parameter(format!(
            "The suppression id or address {target:?} is not validly percent-encoded"
        ))
    })?;
    let (store, team_id) = (&ctx.state.store, ctx.caller.team_id);
    let found = if let Ok(id) = text.parse::<Id>() {
        suppressions::find_by_id(store, team_id, id)?
    } else if text.contains('@') {
        suppressions::find(store, team_id, &text)?
    } else {
        return Err(ApiError::invalid_parameter(format!(
            "A suppression is named by its id (a UUID) or its email address, got {text:?}"
        )));
    };
    found.ok_or_else(|| ApiError::not_found("Suppression not found"))
}

/// Parses the `origin` filter.
fn origin(text: &str) -> Result<Origin, ApiError> {
    match text {
        "bounce" => Ok(Origin::Bounce),
        "complaint" => Ok(Origin::Complaint),
        "manual" => Ok(Origin::Manual),
        other => Err(ApiError::validation(format!(
            "The `origin` parameter must be \"bounce\", \"complaint\" or \"manual\", got {other:?}"
        ))),
    }
}

/// One page of the team's entries (of `origin`, when given), newest first, and whether
/// more lie beyond it in the direction of travel.
///
/// [`PageRequest::load`] cannot serve here: the records are keyed by address, and only
/// the id index is in time order; and a filter must skip entries without shortening the
/// page. So this walks the id index the same way, looking each entry up by address,
/// until it has one more match than the page holds or the team's entries run out. A
/// filter that matches little therefore reads much of the list: there is no index by
/// origin, since lists are rare next to the lookups delivery makes by address.
fn load_page(
    store: &Store,
    team_id: Id,
    page: PageRequest,
    origin: Option<Origin>,
) -> Result<(Vec<Suppression>, bool), ApiError> {
    let prefix = team_id.as_bytes().as_slice();
    let (mut after, reverse) = match page.cursor {
        Cursor::Start => (None, true),
        Cursor::After(id) => (Some(Suppression::id_key(team_id, id)), true),
        Cursor::Before(id) => (Some(Suppression::id_key(team_id, id)), false),
    };
    let wanted = page.limit.saturating_add(1);
    let step = if origin.is_some() { FILTERED_SCAN_STEP } else { wanted };
    let mut found = Vec::new();
    'scan: loop {
        let entries = store.scan::<SuppressionId>(Scan {
            prefix,
            after: after.as_deref(),
            reverse,
            limit: step,
        })?;
        for (key, index) in &entries {
            let id = key
                .get(prefix.len()..)
                .and_then(Id::from_slice)
                .ok_or_else(|| ApiError::internal(&"a suppression id key is shorter than team and id"))?;
            // An entry removed (or removed and added again) since the scan is skipped.
            let Some(entry) = suppressions::find(store, team_id, &index.email)?.filter(|s| s.id == id) else {
                continue;
            };
            if origin.is_none_or(|filter| entry.origin == filter) {
                found.push(entry);
                if found.len() == wanted {
                    break 'scan;
                }
            }
        }
        if entries.len() < step {
            break;
        }
        after = entries.last().map(|(key, _)| key.clone());
    }
    let has_more = found.len() > page.limit;
    found.truncate(page.limit);
    if !reverse {
        found.reverse();
    }
    Ok((found, has_more))
}

/// What a change of the team's suppression list locks: the whole list, since an address
/// is looked up before it is added and batches change up to a hundred at once.
pub(super) fn team_suppressions<'a>(ctx: &Ctx<'a>) -> crate::services::RecordName<'a> {
    crate::services::RecordName {
        table: herald_queue::Table::SUPPRESSIONS.name(),
        key: ctx.caller.team_id.as_bytes(),
    }
}
