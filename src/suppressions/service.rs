//! The suppressions service: add an address by hand (one or a batch), list the list (all
//! of it, or one origin), read and remove entries by id or address (one or a batch).
//! Rules live here, for every adapter; storage is [`super::SuppressionStore`]'s.

use std::collections::HashSet;

use herald_queue::Id;

use super::{Origin, Suppression, normalize};
use crate::accounts::Caller;
use crate::emails::Mailbox;
use crate::events::{Event, EventKind};
use crate::services::{Error, RecordName, Services};
use crate::storage::page::PageRequest;

/// Most addresses or ids in one batch request, as Resend documents. It bounds the work
/// one request does under the list's lock and the size of its commit.
pub const BATCH_MAX: usize = 100;

/// What a batch removal names its entries by, as a caller gives them.
#[derive(Debug, Clone, Default)]
pub struct RemoveTargets {
    /// Addresses.
    pub emails: Option<Vec<String>>,
    /// Entry ids (UUIDs).
    pub ids: Option<Vec<String>>,
}

/// What a change of the team's suppression list locks: the whole list, since an address
/// is looked up before it is added and batches change up to a hundred at once.
fn lock<'a>(services: &'a Services, caller: &Caller) -> crate::services::Held<'a> {
    services.lock_record(RecordName {
        table: "suppressions",
        key: caller.team_id.as_bytes(),
    })
}

/// A bare address, lower case, or why it is refused. A display name (`Bob
/// <bob@example.com>`) is refused: a suppression names a mailbox, not a person.
fn address(text: &str) -> Result<String, String> {
    let mailbox = Mailbox::parse(text)?;
    if mailbox.name.is_some() {
        return Err(format!(
            "{text:?} has a display name; give the address alone, as bob@example.com"
        ));
    }
    Ok(normalize(&mailbox.address))
}

/// Suppresses `email` by hand. An address already suppressed keeps its entry (and
/// origin), and its id is the answer.
pub fn add(services: &Services, caller: &Caller, email: Option<String>) -> Result<Id, Error> {
    caller.require_full_access()?;
    let Some(text) = email.filter(|text| !text.trim().is_empty()) else {
        return Err(Error::MissingField("email"));
    };
    let email = address(&text).map_err(|why| Error::invalid(format!("Invalid `email` field: {why}")))?;
    let ids = add_addresses(services, caller, &[email])?;
    Ok(ids[0])
}

/// Suppresses every address of `emails` in one write: the ids, one per distinct address
/// in the order first given. Every address is checked before anything is written.
pub fn add_many(services: &Services, caller: &Caller, emails: Option<Vec<String>>) -> Result<Vec<Id>, Error> {
    caller.require_full_access()?;
    let emails = bounded(emails, "emails")?;
    let mut addresses = Vec::with_capacity(emails.len());
    for (at, text) in emails.iter().enumerate() {
        let email = address(text).map_err(|why| Error::invalid(format!("Invalid `emails[{at}]` field: {why}")))?;
        if !addresses.contains(&email) {
            addresses.push(email);
        }
    }
    add_addresses(services, caller, &addresses)
}

/// The entry ids of `addresses` (distinct, lower case): existing entries, and new
/// `manual` ones written at once with their `suppression.added` events.
fn add_addresses(services: &Services, caller: &Caller, addresses: &[String]) -> Result<Vec<Id>, Error> {
    let team_id = caller.team_id;
    let _guard = lock(services, caller);
    let mut ids = Vec::with_capacity(addresses.len());
    let mut added = Vec::new();
    let mut added_events: Vec<Event> = Vec::new();
    for email in addresses {
        if let Some(existing) = services.suppressions().find(team_id, email)? {
            ids.push(existing.id);
            continue;
        }
        let suppression = Suppression::new(
            (services.next_id(), services.now()),
            team_id,
            email,
            Origin::Manual,
            None,
        );
        added_events.extend(crate::services::outbox::new(
            services,
            team_id,
            EventKind::SuppressionAdded,
            || suppression.event_json(),
        )?);
        ids.push(suppression.id);
        added.push(suppression);
    }
    services.suppressions().apply(&added, &[], &added_events)?;
    Ok(ids)
}

/// Parses an `origin` filter.
pub fn origin(text: &str) -> Result<Origin, Error> {
    match text {
        "bounce" => Ok(Origin::Bounce),
        "complaint" => Ok(Origin::Complaint),
        "manual" => Ok(Origin::Manual),
        other => Err(Error::invalid(format!(
            "The `origin` parameter must be \"bounce\", \"complaint\" or \"manual\", got {other:?}"
        ))),
    }
}

/// One page of the caller's team's entries (of `origin`, when given), newest first.
pub fn list(
    services: &Services,
    caller: &Caller,
    page: &PageRequest,
    origin: Option<Origin>,
) -> Result<(Vec<Suppression>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.suppressions().page(caller.team_id, page, origin)?)
}

/// The caller's entry named `target`: a UUID is an id, anything with an `@` an address.
pub fn get(services: &Services, caller: &Caller, target: &str) -> Result<Suppression, Error> {
    caller.require_full_access()?;
    let found = if let Ok(id) = target.parse::<Id>() {
        services.suppressions().find_by_id(caller.team_id, id)?
    } else if target.contains('@') {
        services.suppressions().find(caller.team_id, target)?
    } else {
        return Err(Error::Invalid {
            name: "invalid_parameter",
            message: format!("A suppression is named by its id (a UUID) or its email address, got {target:?}"),
        });
    };
    found.ok_or(Error::NotFound("Suppression not found"))
}

/// Removes the caller's entry named `target`: mail to the address is sent again.
pub fn remove(services: &Services, caller: &Caller, target: &str) -> Result<Suppression, Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller);
    let suppression = get(services, caller, target)?;
    remove_entries(services, std::slice::from_ref(&suppression))?;
    Ok(suppression)
}

/// Removes the entries named by `targets` (addresses or ids, not both) in one write; the
/// entries that existed, each once. Every target is checked before anything is written.
pub fn remove_many(services: &Services, caller: &Caller, targets: RemoveTargets) -> Result<Vec<Suppression>, Error> {
    caller.require_full_access()?;
    let found = match (targets.emails, targets.ids) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid("The `emails` and `ids` fields cannot be used together"));
        }
        (None, None) => return Err(Error::MissingField("emails")),
        (emails @ Some(_), None) => {
            // Removal looks addresses up rather than validating them: an address that
            // delivery suppressed in a form the API would refuse must still come off.
            let emails = bounded(emails, "emails")?
                .iter()
                .enumerate()
                .map(|(at, text)| match normalize(text) {
                    email if email.is_empty() => Err(Error::invalid(format!(
                        "Invalid `emails[{at}]` field: an address is empty"
                    ))),
                    email => Ok(email),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let _guard = lock(services, caller);
            let found = emails
                .iter()
                .map(|email| services.suppressions().find(caller.team_id, email))
                .collect::<Result<Vec<_>, _>>()?;
            return remove_found(services, found);
        }
        (None, ids @ Some(_)) => bounded(ids, "ids")?
            .iter()
            .enumerate()
            .map(|(at, text)| {
                text.parse::<Id>().map_err(|_| {
                    Error::invalid(format!(
                        "Invalid `ids[{at}]` field: a suppression id is a UUID, got {text:?}"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let _guard = lock(services, caller);
    let found = found
        .iter()
        .map(|id| services.suppressions().find_by_id(caller.team_id, *id))
        .collect::<Result<Vec<_>, _>>()?;
    remove_found(services, found)
}

/// Removes the entries found, each once (the same entry may be named twice, by two
/// spellings of one address or one id twice). The caller holds the list's lock.
fn remove_found(services: &Services, found: Vec<Option<Suppression>>) -> Result<Vec<Suppression>, Error> {
    let mut seen = HashSet::new();
    let removed: Vec<Suppression> = found.into_iter().flatten().filter(|s| seen.insert(s.id)).collect();
    remove_entries(services, &removed)?;
    Ok(removed)
}

/// Removes `entries` with their `suppression.removed` events in one write.
fn remove_entries(services: &Services, entries: &[Suppression]) -> Result<(), Error> {
    let mut removed_events = Vec::new();
    for suppression in entries {
        removed_events.extend(crate::services::outbox::new(
            services,
            suppression.team_id,
            EventKind::SuppressionRemoved,
            || suppression.event_json(),
        )?);
    }
    services.suppressions().apply(&[], entries, &removed_events)?;
    Ok(())
}

/// The list in `field`: present, with 1 to [`BATCH_MAX`] items.
fn bounded(list: Option<Vec<String>>, field: &'static str) -> Result<Vec<String>, Error> {
    let Some(list) = list else {
        return Err(Error::MissingField(field));
    };
    if list.is_empty() || list.len() > BATCH_MAX {
        return Err(Error::invalid(format!(
            "The `{field}` field must list 1 to {BATCH_MAX} items, got {}",
            list.len()
        )));
    }
    Ok(list)
}
