//! Contact properties: the custom fields a team defines (`plan`, `age`), each a string or
//! a number with an optional fallback, that every contact's `properties` are checked
//! against and that templates and broadcasts fill in.

use std::collections::BTreeMap;

use herald_queue::Id;
use serde_json::{Map, Value};

use crate::accounts::Caller;
use crate::services::{Error, Services};
use crate::storage::page::PageRequest;

pub use super::model::{ContactProperty, PropertyType, text};

/// Longest key, in characters.
pub const KEY_MAX: usize = 50;

/// Keys that name a contact's own fields or the variables every message has, which a
/// custom property would shadow (compared without case).
const RESERVED: &[&str] = &[
    "email",
    "first_name",
    "last_name",
    "unsubscribed",
    "unsubscribe_url",
    "resend_unsubscribe_url",
    "contact",
    "this",
];

/// Checks `given` (a request's `properties`, by key) against the team's `definitions`:
/// each key defined, each value of its type and at most `value_max` bytes. The result is
/// by property id; a `null` removes the value (`None`).
pub fn check(
    definitions: &[ContactProperty],
    given: &Map<String, Value>,
    value_max: u64,
) -> Result<BTreeMap<Id, Option<Value>>, Error> {
    let mut checked = BTreeMap::new();
    for (key, value) in given {
        let Some(definition) = definitions.iter().find(|d| d.key == *key) else {
            return Err(Error::invalid(format!(
                "Invalid `properties` field: {key:?} is not a contact property of this team (create it with POST /contact-properties)"
            )));
        };
        if value.is_null() {
            checked.insert(definition.id, None);
            continue;
        }
        check_value(&definition.key, definition.kind, value, value_max)?;
        checked.insert(definition.id, Some(value.clone()));
    }
    Ok(checked)
}

/// Checks one value against its definition.
pub fn check_value(key: &str, kind: PropertyType, value: &Value, value_max: u64) -> Result<(), Error> {
    if !kind.admits(value) {
        return Err(Error::invalid(format!(
            "Invalid `properties.{key}` field: the property is a {}, got {value}",
            kind.name()
        )));
    }
    if text(value).len() as u64 > value_max {
        return Err(Error::invalid(format!(
            "Invalid `properties.{key}` field: longer than {value_max} bytes ([contacts] property_value_max)"
        )));
    }
    Ok(())
}

/// Applies checked values to a contact's: `None` removes.
pub fn apply(values: &mut BTreeMap<Id, Value>, checked: BTreeMap<Id, Option<Value>>) {
    for (id, value) in checked {
        match value {
            Some(value) => values.insert(id, value),
            None => values.remove(&id),
        };
    }
}

/// Drops the values of properties that are gone (deleted since the contact's last write).
pub fn retain_defined(values: &mut BTreeMap<Id, Value>, definitions: &[ContactProperty]) {
    values.retain(|id, _| definitions.iter().any(|d| d.id == *id));
}

/// A property to create, as a caller gives it.
#[derive(Debug, Clone, Default)]
pub struct NewProperty {
    /// The key (required).
    pub key: Option<String>,
    /// The type (required).
    pub kind: Option<PropertyType>,
    /// The fallback: of the type, or null.
    pub fallback_value: Option<Value>,
}

fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() || key.chars().count() > KEY_MAX || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::invalid(format!(
            "Invalid `key` field: {key:?} must be 1 to {KEY_MAX} letters, digits and underscores"
        )));
    }
    if RESERVED.iter().any(|reserved| reserved.eq_ignore_ascii_case(key)) {
        return Err(Error::invalid(format!(
            "Invalid `key` field: {key:?} is reserved (it names a contact field or a message variable)"
        )));
    }
    Ok(())
}

fn fallback(services: &Services, key: &str, kind: PropertyType, value: Option<Value>) -> Result<Option<Value>, Error> {
    let Some(value) = value.filter(|value| !value.is_null()) else {
        return Ok(None);
    };
    check_value(key, kind, &value, services.config().contacts.property_value_max).map_err(|_| {
        Error::invalid(format!(
            "Invalid `fallback_value` field: the property is a {}, of at most [contacts] property_value_max bytes",
            kind.name()
        ))
    })?;
    Ok(Some(value))
}

/// Defines a property.
pub fn create(services: &Services, caller: &Caller, new: NewProperty) -> Result<Id, Error> {
    caller.require_full_access()?;
    let key = new.key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
    let key = key.ok_or(Error::MissingField("key"))?;
    check_key(&key)?;
    let kind = new.kind.ok_or(Error::MissingField("type"))?;
    let fallback_value = fallback(services, &key, kind, new.fallback_value)?;
    let max = services.config().contacts.properties_max;
    let _guard = super::lock(services, caller.team_id);
    let existing = services.audience().properties(caller.team_id)?;
    if existing.iter().any(|p| p.key == key) {
        return Err(Error::Conflict(format!(
            "A contact property with the key {key} already exists"
        )));
    }
    if existing.len() as u64 >= max {
        return Err(Error::invalid(format!(
            "This team has {max} contact properties, the most it may have ([contacts] properties_max); delete one first"
        )));
    }
    let property = ContactProperty {
        id: services.next_id(),
        team_id: caller.team_id,
        key,
        kind,
        fallback_value,
        created_at: services.now(),
    };
    services.audience().put_property(&property)?;
    Ok(property.id)
}

/// The caller's property `id` (as written in a path).
pub fn get(services: &Services, caller: &Caller, id: &str) -> Result<ContactProperty, Error> {
    caller.require_full_access()?;
    let id = crate::services::parse_id(id, "contact property")?;
    services
        .audience()
        .property(caller.team_id, id)?
        .ok_or(Error::NotFound("Contact property not found"))
}

/// One page of the caller's properties, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<ContactProperty>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.audience().property_page(caller.team_id, page)?)
}

/// A change to a property: only the fallback may change (`Some(None)` clears it); a key
/// or type given must be the property's own.
#[derive(Debug, Clone, Default)]
pub struct PropertyChange {
    /// The key, if given.
    pub key: Option<String>,
    /// The type, if given.
    pub kind: Option<PropertyType>,
    /// A new fallback, or none.
    pub fallback_value: Option<Option<Value>>,
}

/// Changes the caller's property `id`.
pub fn update(services: &Services, caller: &Caller, id: &str, change: PropertyChange) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = super::lock(services, caller.team_id);
    let mut property = get(services, caller, id)?;
    if change.key.is_some_and(|key| key != property.key) || change.kind.is_some_and(|kind| kind != property.kind) {
        return Err(Error::invalid(
            "A contact property's `key` and `type` cannot change: contacts' values are stored under them (create another property)",
        ));
    }
    if let Some(value) = change.fallback_value {
        let value = fallback(services, &property.key, property.kind, value)?;
        if value != property.fallback_value {
            property.fallback_value = value;
            services.audience().put_property(&property)?;
        }
    }
    Ok(property.id)
}

/// Deletes the caller's property `id`; contacts' values for it are ignored from now on.
pub fn delete(services: &Services, caller: &Caller, id: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = super::lock(services, caller.team_id);
    let property = get(services, caller, id)?;
    services.audience().delete_property(&property)?;
    Ok(property.id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_letters_digits_and_underscores_and_not_reserved() {
        assert!(check_key("plan_2").is_ok());
        assert!(check_key(&"k".repeat(KEY_MAX)).is_ok());
        assert!(check_key(&"k".repeat(KEY_MAX + 1)).is_err());
        assert!(check_key("a-b").is_err());
        assert!(check_key("").is_err());
        assert!(check_key("FIRST_NAME").is_err());
    }

    #[test]
    fn values_are_checked_by_type_and_shown_as_text() {
        assert_eq!(PropertyType::Number.parse("42"), Ok(json!(42)));
        assert!(PropertyType::Number.parse("forty").is_err());
        assert_eq!(text(&json!(1.5)), "1.5");
        assert_eq!(text(&json!("pro")), "pro");
    }
}
