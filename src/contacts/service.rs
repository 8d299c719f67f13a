//! The contacts service: create, read, list, change and delete a team's contacts by id
//! or address. Rules live here, for every adapter; storage is [`super::ContactStore`]'s.

use herald_queue::Id;

use super::{Contact, normalize};
use crate::accounts::Caller;
use crate::emails::Mailbox;
use crate::events::{self, EventKind};
use crate::services::page::PageRequest;
use crate::services::{Error, RecordName, Services};

/// Longest first or last name, in characters.
const NAME_MAX: usize = 256;

/// A contact to create, as a caller gives it.
#[derive(Debug, Clone, Default)]
pub struct NewContact {
    /// The address (required).
    pub email: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Opted out of broadcasts.
    pub unsubscribed: Option<bool>,
    /// Custom properties: none can be defined yet, so only an empty object passes.
    pub properties: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A change to a contact: `None` leaves a field as it is; `Some(None)` clears a name.
#[derive(Debug, Clone, Default)]
pub struct ContactChange {
    /// A new address.
    pub email: Option<String>,
    /// A new first name, or `Some(None)` to clear it.
    pub first_name: Option<Option<String>>,
    /// A new last name, or `Some(None)` to clear it.
    pub last_name: Option<Option<String>>,
    /// Opt out of (or back into) broadcasts.
    pub unsubscribed: Option<bool>,
    /// Custom properties, as on create.
    pub properties: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Serialises changes to a team's contacts: an address is looked up before it is taken,
/// and a change of address takes one while freeing another. One lock per team keeps that
/// simple and deadlock-free; each change holds it for one read and one commit.
fn lock(services: &Services, team_id: Id) -> std::sync::MutexGuard<'_, ()> {
    services.lock_record(RecordName {
        table: "contacts",
        key: team_id.as_bytes(),
    })
}

/// A bare address, as written, or why it is refused.
fn address(text: &str, field: &str) -> Result<String, Error> {
    let text = text.trim();
    let mailbox = Mailbox::parse(text).map_err(|why| Error::invalid(format!("Invalid `{field}` field: {why}")))?;
    if mailbox.name.is_some() {
        return Err(Error::invalid(format!(
            "Invalid `{field}` field: {text:?} has a display name; give the address alone, as bob@example.com"
        )));
    }
    // The parser lower-cases the domain; the contact keeps the address as written.
    Ok(if mailbox.address.eq_ignore_ascii_case(text) {
        text.to_owned()
    } else {
        mailbox.address
    })
}

/// A first or last name: trimmed, empty as none, at most [`NAME_MAX`] characters.
fn name(text: Option<String>, field: &str) -> Result<Option<String>, Error> {
    let Some(text) = text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > NAME_MAX || text.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "Invalid `{field}` field: at most {NAME_MAX} characters, without control characters"
        )));
    }
    Ok(Some(text))
}

fn no_properties(properties: Option<&serde_json::Map<String, serde_json::Value>>) -> Result<(), Error> {
    match properties {
        Some(map) if !map.is_empty() => Err(Error::invalid(
            "Invalid `properties` field: contact properties are not available yet on this server",
        )),
        _ => Ok(()),
    }
}

/// Creates a contact; its id. An address the team already has is a conflict.
pub fn create(services: &Services, caller: &Caller, new: NewContact) -> Result<Id, Error> {
    caller.require_full_access()?;
    let Some(text) = new.email.filter(|text| !text.trim().is_empty()) else {
        return Err(Error::MissingField("email"));
    };
    let email = address(&text, "email")?;
    let first_name = name(new.first_name, "first_name")?;
    let last_name = name(new.last_name, "last_name")?;
    no_properties(new.properties.as_ref())?;
    let store = services.store();
    let _guard = lock(services, caller.team_id);
    if services.contacts().by_email(caller.team_id, &email)?.is_some() {
        return Err(Error::Conflict(format!(
            "A contact with the email {email} already exists"
        )));
    }
    let now = store.now();
    let contact = Contact {
        id: store.next_id(),
        team_id: caller.team_id,
        email,
        first_name,
        last_name,
        unsubscribed: new.unsubscribed.unwrap_or(false),
        created_at: now,
        updated_at: now,
    };
    let event = events::new(store, caller.team_id, EventKind::ContactCreated, || {
        contact.event_json()
    })?;
    services.contacts().put(&contact, None, event.as_ref())?;
    Ok(contact.id)
}

/// The caller's contact named `target`: a UUID is an id, anything with an `@` an address.
pub fn get(services: &Services, caller: &Caller, target: &str) -> Result<Contact, Error> {
    caller.require_full_access()?;
    find(services, caller.team_id, target)?.ok_or(Error::NotFound("Contact not found"))
}

fn find(services: &Services, team_id: Id, target: &str) -> Result<Option<Contact>, Error> {
    if let Ok(id) = target.parse::<Id>() {
        Ok(services.contacts().get(team_id, id)?)
    } else if target.contains('@') {
        Ok(services.contacts().by_email(team_id, target.trim())?)
    } else {
        Err(Error::Invalid {
            name: "invalid_parameter",
            message: format!("A contact is named by its id (a UUID) or its email address, got {target:?}"),
        })
    }
}

/// One page of the caller's team's contacts, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Contact>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.contacts().page(caller.team_id, page)?)
}

/// Changes the caller's contact named `target`; its id. A change that changes nothing
/// writes nothing and fires no event.
pub fn update(services: &Services, caller: &Caller, target: &str, change: ContactChange) -> Result<Id, Error> {
    caller.require_full_access()?;
    no_properties(change.properties.as_ref())?;
    let new_email = change.email.as_deref().map(|text| address(text, "email")).transpose()?;
    let first_name = change.first_name.map(|n| name(n, "first_name")).transpose()?;
    let last_name = change.last_name.map(|n| name(n, "last_name")).transpose()?;
    let _guard = lock(services, caller.team_id);
    let mut contact = get(services, caller, target)?;
    let old_email = contact.email.clone();
    let mut changed = false;
    if let Some(email) = new_email.filter(|e| *e != contact.email) {
        if normalize(&email) != normalize(&contact.email)
            && services.contacts().by_email(caller.team_id, &email)?.is_some()
        {
            return Err(Error::Conflict(format!(
                "A contact with the email {email} already exists"
            )));
        }
        contact.email = email;
        changed = true;
    }
    if let Some(first_name) = first_name.filter(|n| *n != contact.first_name) {
        contact.first_name = first_name;
        changed = true;
    }
    if let Some(last_name) = last_name.filter(|n| *n != contact.last_name) {
        contact.last_name = last_name;
        changed = true;
    }
    if let Some(unsubscribed) = change.unsubscribed.filter(|u| *u != contact.unsubscribed) {
        contact.unsubscribed = unsubscribed;
        changed = true;
    }
    if !changed {
        return Ok(contact.id);
    }
    let store = services.store();
    contact.updated_at = store.now();
    let event = events::new(store, caller.team_id, EventKind::ContactUpdated, || {
        contact.event_json()
    })?;
    services.contacts().put(&contact, Some(&old_email), event.as_ref())?;
    Ok(contact.id)
}

/// Deletes the caller's contact named `target`, with everything it holds of the person.
/// As Resend answers, a contact that does not exist is deleted already: `None`.
pub fn delete(services: &Services, caller: &Caller, target: &str) -> Result<Option<Id>, Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id);
    let Some(contact) = find(services, caller.team_id, target)? else {
        return Ok(None);
    };
    let event = events::new(services.store(), caller.team_id, EventKind::ContactDeleted, || {
        contact.event_json()
    })?;
    services.contacts().delete(&contact, event.as_ref())?;
    Ok(Some(contact.id))
}
