//! The contacts service: create, read, list, change and delete a team's contacts by id
//! or address, and move them in and out of segments and topics. Rules live here, for
//! every adapter (and for imports); storage is [`super::ContactStore`]'s.

use herald_queue::Id;
use serde_json::{Map, Value, json};

use super::{
    Contact, ContactProperty, Segment, Subscription, Topic, TopicChoice, normalize, properties, segments, topics,
};
use crate::accounts::Caller;
use crate::emails::Mailbox;
use crate::events::{Event, EventKind};
use crate::services::{Error, Services};
use crate::storage::Change;
use crate::storage::page::PageRequest;

pub use super::lock;

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
    /// Custom property values, checked against the team's definitions.
    pub properties: Option<Map<String, Value>>,
    /// Segments to add it to.
    pub segments: Vec<Id>,
    /// Topic choices.
    pub topics: Vec<TopicChoice>,
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
    /// Property values to set (`null` removes one).
    pub properties: Option<Map<String, Value>>,
}

/// A bare address, as written, or why it is refused.
pub fn address(text: &str, field: &str) -> Result<String, Error> {
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
pub fn name(text: Option<String>, field: &str) -> Result<Option<String>, Error> {
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

/// Refuses a new contact when the team is at `[contacts] contacts_max`.
pub fn check_room(services: &Services, team_id: Id, adding: u64) -> Result<(), Error> {
    let max = services.config().contacts.contacts_max;
    if services.contacts().count(team_id)?.saturating_add(adding) > max {
        return Err(Error::invalid(format!(
            "This team has {max} contacts, the most it may have ([contacts] contacts_max); delete some first"
        )));
    }
    Ok(())
}

/// The event of a change to `contact`, for a team with webhooks: `contact.topics.updated`
/// also carries the contact's topic choices.
fn event(services: &Services, contact: &Contact, kind: EventKind) -> Result<Option<Event>, Error> {
    Ok(crate::services::outbox::new(services, contact.team_id, kind, || {
        let mut data = contact.event_json();
        if let (EventKind::ContactTopicsUpdated, Value::Object(map)) = (kind, &mut data) {
            map.insert("topics".into(), choices_json(&contact.topics));
        }
        data
    })?)
}

/// Each segment of `ids` exists for the team; the ids without repeats. Checked under the
/// team's contact lock, which a segment's deletion also takes, so no membership is
/// written for a segment deleted meanwhile.
pub fn existing_segments(services: &Services, team_id: Id, ids: &[Id]) -> Result<Vec<Id>, Error> {
    let mut kept: Vec<Id> = Vec::with_capacity(ids.len());
    for id in ids {
        segments::find(services, team_id, *id)?;
        if !kept.contains(id) {
            kept.push(*id);
        }
    }
    Ok(kept)
}

/// Each topic of `choices` exists for the team; the choices, the last for each topic.
pub fn existing_topics(services: &Services, team_id: Id, choices: &[TopicChoice]) -> Result<Vec<TopicChoice>, Error> {
    let mut kept: Vec<TopicChoice> = Vec::with_capacity(choices.len());
    for choice in choices {
        topics::find(services, team_id, choice.id)?;
        kept.retain(|c| c.id != choice.id);
        kept.push(*choice);
    }
    Ok(kept)
}

/// Creates a contact; its id. An address the team already has is a conflict.
pub fn create(services: &Services, caller: &Caller, new: NewContact) -> Result<Id, Error> {
    create_with(services, caller, new, Change::new())
}

/// [`create`], with what `with` stages in the same write.
fn create_with(services: &Services, caller: &Caller, new: NewContact, with: Change) -> Result<Id, Error> {
    caller.require_full_access()?;
    let Some(text) = new.email.filter(|text| !text.trim().is_empty()) else {
        return Err(Error::MissingField("email"));
    };
    let email = address(&text, "email")?;
    let first_name = name(new.first_name, "first_name")?;
    let last_name = name(new.last_name, "last_name")?;
    let team = caller.team_id;
    let definitions = services.audience().properties(team)?;
    let value_max = services.config().contacts.property_value_max;
    let checked = properties::check(&definitions, &new.properties.unwrap_or_default(), value_max)?;
    let _guard = lock(services, team);
    let segments = existing_segments(services, team, &new.segments)?;
    let topics = existing_topics(services, team, &new.topics)?;
    if services.contacts().by_email(team, &email)?.is_some() {
        return Err(Error::Conflict(format!(
            "A contact with the email {email} already exists"
        )));
    }
    check_room(services, team, 1)?;
    let now = services.now();
    let mut contact = Contact {
        id: services.next_id(),
        team_id: team,
        email,
        first_name,
        last_name,
        unsubscribed: new.unsubscribed.unwrap_or(false),
        created_at: now,
        updated_at: now,
        segments,
        topics,
        properties: Default::default(),
    };
    properties::apply(&mut contact.properties, checked);
    let events: Vec<Event> = event(services, &contact, EventKind::ContactCreated)?
        .into_iter()
        .collect();
    services.contacts().put(&contact, None, &events, with)?;
    Ok(contact.id)
}

/// Creates a contact in segment `segment` (Resend's legacy `POST /audiences/{id}/contacts`):
/// an address the team already has joins the segment instead, taking the names given.
pub fn create_in_segment(
    services: &Services,
    caller: &Caller,
    segment: &str,
    mut new: NewContact,
) -> Result<Id, Error> {
    caller.require_full_access()?;
    let segment = segments::get(services, caller, segment)?;
    new.segments.push(segment.id);
    let (email, first_name, last_name, unsubscribed, properties) = (
        new.email.clone(),
        new.first_name.clone(),
        new.last_name.clone(),
        new.unsubscribed,
        new.properties.clone(),
    );
    match create(services, caller, new) {
        Err(Error::Conflict(_)) => {
            let target = email.unwrap_or_default();
            let change = ContactChange {
                first_name: first_name.map(Some),
                last_name: last_name.map(Some),
                unsubscribed,
                properties,
                ..ContactChange::default()
            };
            update(services, caller, &target, change)?;
            let (contact, _) = add_to_segment(services, caller, &target, &segment.id.to_string())?;
            Ok(contact)
        }
        other => other,
    }
}

/// The caller's contact named `target`: a UUID is an id, anything with an `@` an address.
pub fn get(services: &Services, caller: &Caller, target: &str) -> Result<Contact, Error> {
    caller.require_full_access()?;
    find(services, caller.team_id, target)?.ok_or(Error::NotFound("Contact not found"))
}

/// Refuses, as not found, a contact named `target` that exists but is not in segment
/// `segment` (which must exist): the legacy audience routes name a contact by audience.
pub fn check_member(services: &Services, caller: &Caller, segment: &str, target: &str) -> Result<(), Error> {
    let segment = segments::get(services, caller, segment)?;
    match find(services, caller.team_id, target)? {
        Some(contact) if !contact.segments.contains(&segment.id) => {
            Err(Error::NotFound("Contact not found in this audience"))
        }
        _ => Ok(()),
    }
}

/// The caller's contact named `target` as `GET /contacts/{id-or-email}` answers it.
pub fn describe(services: &Services, caller: &Caller, target: &str) -> Result<Value, Error> {
    let contact = get(services, caller, target)?;
    let definitions: Vec<ContactProperty> = services.audience().properties(caller.team_id)?;
    Ok(contact.to_json(&definitions))
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

/// One page of the caller's team's contacts (or of those in `segment`), newest first.
pub fn list(
    services: &Services,
    caller: &Caller,
    page: &PageRequest,
    segment: Option<&str>,
) -> Result<(Vec<Contact>, bool), Error> {
    caller.require_full_access()?;
    match segment {
        None => Ok(services.contacts().page(caller.team_id, page)?),
        Some(segment) => {
            let segment = segments::get(services, caller, segment)?;
            Ok(services.contacts().segment_page(caller.team_id, segment.id, page)?)
        }
    }
}

/// Changes the caller's contact named `target`; its id. A change that changes nothing
/// writes nothing and fires no event.
pub fn update(services: &Services, caller: &Caller, target: &str, change: ContactChange) -> Result<Id, Error> {
    caller.require_full_access()?;
    let new_email = change.email.as_deref().map(|text| address(text, "email")).transpose()?;
    let first_name = change.first_name.map(|n| name(n, "first_name")).transpose()?;
    let last_name = change.last_name.map(|n| name(n, "last_name")).transpose()?;
    let checked = match &change.properties {
        Some(given) => {
            let definitions = services.audience().properties(caller.team_id)?;
            Some(properties::check(
                &definitions,
                given,
                services.config().contacts.property_value_max,
            )?)
        }
        None => None,
    };
    let _guard = lock(services, caller.team_id);
    let previous = get(services, caller, target)?;
    let mut contact = previous.clone();
    if let Some(email) = new_email.filter(|e| *e != contact.email) {
        if normalize(&email) != normalize(&contact.email)
            && services.contacts().by_email(caller.team_id, &email)?.is_some()
        {
            return Err(Error::Conflict(format!(
                "A contact with the email {email} already exists"
            )));
        }
        contact.email = email;
    }
    if let Some(first_name) = first_name {
        contact.first_name = first_name;
    }
    if let Some(last_name) = last_name {
        contact.last_name = last_name;
    }
    if let Some(unsubscribed) = change.unsubscribed {
        contact.unsubscribed = unsubscribed;
    }
    if let Some(checked) = checked {
        properties::apply(&mut contact.properties, checked);
    }
    save(services, contact, &previous, &[EventKind::ContactUpdated])
}

/// Writes `contact`, changed from `previous`, with an event of each of `kinds`; nothing
/// when nothing changed. What it says of segments, topics and properties deleted since
/// it was last written goes with the write.
fn save(services: &Services, contact: Contact, previous: &Contact, kinds: &[EventKind]) -> Result<Id, Error> {
    save_with(services, contact, previous, kinds, Change::new())
}

/// [`save`], with what `with` stages in the same write; `with` goes unwritten when
/// nothing changed.
fn save_with(
    services: &Services,
    mut contact: Contact,
    previous: &Contact,
    kinds: &[EventKind],
    with: Change,
) -> Result<Id, Error> {
    if contact == *previous {
        return Ok(contact.id);
    }
    let (team, audience) = (contact.team_id, services.audience());
    let mut live = Vec::with_capacity(contact.segments.len());
    for id in &contact.segments {
        if audience.segment(team, *id)?.is_some() {
            live.push(*id);
        }
    }
    contact.segments = live;
    let mut live = Vec::with_capacity(contact.topics.len());
    for choice in &contact.topics {
        if audience.topic(team, choice.id)?.is_some() {
            live.push(*choice);
        }
    }
    contact.topics = live;
    properties::retain_defined(&mut contact.properties, &audience.properties(team)?);
    contact.updated_at = services.now();
    let mut events = Vec::new();
    for kind in kinds {
        events.extend(event(services, &contact, *kind)?);
    }
    services.contacts().put(&contact, Some(previous), &events, with)?;
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
    let events: Vec<Event> = event(services, &contact, EventKind::ContactDeleted)?
        .into_iter()
        .collect();
    services.contacts().delete(&contact, &events)?;
    Ok(Some(contact.id))
}

/// One page of the segments the caller's contact `target` is in, newest first.
pub fn segments_of(
    services: &Services,
    caller: &Caller,
    target: &str,
    page: &PageRequest,
) -> Result<(Vec<Segment>, bool), Error> {
    let contact = get(services, caller, target)?;
    let mut found = Vec::with_capacity(contact.segments.len());
    for id in &contact.segments {
        // A segment deleted since is ignored (see the module's page).
        found.extend(services.audience().segment(caller.team_id, *id)?);
    }
    Ok(page.slice(found, |segment| segment.id))
}

/// Adds the caller's contact `target` to segment `segment`; the contact's and segment's
/// ids. Adding a member again changes nothing.
pub fn add_to_segment(services: &Services, caller: &Caller, target: &str, segment: &str) -> Result<(Id, Id), Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id);
    let segment = segments::get(services, caller, segment)?;
    let previous = get(services, caller, target)?;
    let mut contact = previous.clone();
    if !contact.segments.contains(&segment.id) {
        contact.segments.push(segment.id);
    }
    let id = save(services, contact, &previous, &[EventKind::ContactUpdated])?;
    Ok((id, segment.id))
}

/// Takes the caller's contact `target` out of segment `segment`; the contact's and
/// segment's ids. A contact not in it is out already.
pub fn remove_from_segment(
    services: &Services,
    caller: &Caller,
    target: &str,
    segment: &str,
) -> Result<(Id, Id), Error> {
    caller.require_full_access()?;
    let segment_id = segments::parse_id(segment)?;
    let _guard = lock(services, caller.team_id);
    let previous = get(services, caller, target)?;
    let mut contact = previous.clone();
    contact.segments.retain(|id| *id != segment_id);
    let id = save(services, contact, &previous, &[EventKind::ContactUpdated])?;
    Ok((id, segment_id))
}

/// One page of the team's topics with the caller's contact `target`'s subscription to
/// each (its own choice, else the topic's default).
pub fn topics_of(
    services: &Services,
    caller: &Caller,
    target: &str,
    page: &PageRequest,
) -> Result<(Vec<(Topic, Subscription)>, bool), Error> {
    let contact = get(services, caller, target)?;
    let (topics, has_more) = services.audience().topic_page(caller.team_id, page)?;
    let subscribed = topics
        .into_iter()
        .map(|topic| {
            let subscription = contact.subscription(&topic);
            (topic, subscription)
        })
        .collect();
    Ok((subscribed, has_more))
}

/// Sets the caller's contact `target`'s choices for the topics named in `choices` (the
/// others keep theirs); the contact's id and its choices now. Fires
/// `contact.topics.updated`, and `contact.updated` too when it opts out of one.
pub fn set_topics(
    services: &Services,
    caller: &Caller,
    target: &str,
    choices: &[TopicChoice],
) -> Result<(Id, Vec<TopicChoice>), Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id);
    let choices = existing_topics(services, caller.team_id, choices)?;
    let previous = get(services, caller, target)?;
    let mut contact = previous.clone();
    let opted_out = make_choices(&mut contact, &choices);
    let kinds: &[EventKind] = if opted_out {
        &[EventKind::ContactTopicsUpdated, EventKind::ContactUpdated]
    } else {
        &[EventKind::ContactTopicsUpdated]
    };
    let now = contact.topics.clone();
    let id = save(services, contact, &previous, kinds)?;
    Ok((id, now))
}

/// A recipient's own choice, from an unsubscribe link: whether the address is
/// unsubscribed from everything (`None` leaves it) and its choices for some topics,
/// made on the team's contact for the address (a new one when it has none) in one
/// write with what `stage` stages. Nothing is written, and `stage` not called, when
/// the choice changes nothing. Whether anything was written.
pub fn choose(
    services: &Services,
    caller: &Caller,
    address: &str,
    unsubscribed: Option<bool>,
    choices: &[TopicChoice],
    stage: impl Fn(&mut Change),
) -> Result<bool, Error> {
    caller.require_full_access()?;
    let team = caller.team_id;
    // A contact made meanwhile by another request is found on the second pass.
    for _ in 0..2 {
        let guard = lock(services, team);
        let choices = existing_topics(services, team, choices)?;
        let Some(previous) = services.contacts().by_email(team, address)? else {
            drop(guard);
            let new = NewContact {
                email: Some(address.to_owned()),
                unsubscribed: Some(unsubscribed.unwrap_or(false)),
                topics: choices.clone(),
                ..NewContact::default()
            };
            let mut with = Change::new();
            stage(&mut with);
            match create_with(services, caller, new, with) {
                Err(Error::Conflict(_)) => continue,
                made => return made.map(|_| true),
            }
        };
        let mut contact = previous.clone();
        let mut kinds = Vec::new();
        let opted_out = make_choices(&mut contact, &choices);
        if contact.topics != previous.topics {
            kinds.push(EventKind::ContactTopicsUpdated);
        }
        if let Some(unsubscribed) = unsubscribed {
            contact.unsubscribed = unsubscribed;
        }
        if opted_out || contact.unsubscribed != previous.unsubscribed {
            kinds.push(EventKind::ContactUpdated);
        }
        if contact == previous {
            return Ok(false);
        }
        let mut with = Change::new();
        stage(&mut with);
        save_with(services, contact, &previous, &kinds, with)?;
        return Ok(true);
    }
    Err(Error::Internal(
        "a contact was made and deleted while an unsubscribe was applied",
    ))
}

/// Sets `contact`'s choices for the topics in `choices` (the others keep theirs);
/// whether it opted out of one it was not out of.
fn make_choices(contact: &mut Contact, choices: &[TopicChoice]) -> bool {
    let mut opted_out = false;
    for choice in choices {
        let before = contact
            .topics
            .iter()
            .find(|c| c.id == choice.id)
            .map(|c| c.subscription);
        opted_out |= choice.subscription == Subscription::OptOut && before != Some(Subscription::OptOut);
        contact.topics.retain(|c| c.id != choice.id);
        contact.topics.push(*choice);
    }
    opted_out
}

/// The answer's list of topic choices.
pub fn choices_json(choices: &[TopicChoice]) -> Value {
    Value::Array(
        choices
            .iter()
            .map(|c| json!({ "id": c.id, "subscription": c.subscription.name() }))
            .collect(),
    )
}
