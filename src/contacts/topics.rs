//! Topics: the kinds of mail a team sends (a newsletter, product updates), which each
//! contact may opt into or out of; a contact that never chose follows the topic's
//! default. Creating, changing and deleting one fires `topic.*`.

use herald_queue::Id;

use crate::accounts::Caller;
use crate::events::EventKind;
use crate::services::{Error, Services, required_text};
use crate::storage::page::PageRequest;

pub use super::model::{Subscription, Topic, TopicChoice, Visibility};

/// Longest topic name, in characters.
const NAME_MAX: usize = 256;
/// Longest description, in characters.
const DESCRIPTION_MAX: usize = 1_024;

/// A topic to create, as a caller gives it.
#[derive(Debug, Clone, Default)]
pub struct NewTopic {
    /// Its name (required).
    pub name: Option<String>,
    /// What it is about.
    pub description: Option<String>,
    /// Required.
    pub default_subscription: Option<Subscription>,
    /// Private unless given.
    pub visibility: Option<Visibility>,
}

/// A change to a topic; `None` leaves a field as it is, `description: Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct TopicChange {
    /// A new name.
    pub name: Option<String>,
    /// A new description, or none.
    pub description: Option<Option<String>>,
    /// Must be the topic's own: a default cannot change once contacts may rely on it.
    pub default_subscription: Option<Subscription>,
    /// A new visibility.
    pub visibility: Option<Visibility>,
}

fn description(text: Option<String>) -> Result<Option<String>, Error> {
    let Some(text) = text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > DESCRIPTION_MAX {
        return Err(Error::invalid(format!(
            "The `description` field must be at most {DESCRIPTION_MAX} characters"
        )));
    }
    Ok(Some(text))
}

/// Creates a topic; fires `topic.created`.
pub fn create(services: &Services, caller: &Caller, new: NewTopic) -> Result<Id, Error> {
    caller.require_full_access()?;
    let name = required_text(new.name, "name", NAME_MAX)?;
    let default_subscription = new
        .default_subscription
        .ok_or(Error::MissingField("default_subscription"))?;
    let description = description(new.description)?;
    let max = services.config().contacts.topics_max;
    let _guard = super::lock(services, caller.team_id);
    if services.audience().topics(caller.team_id)?.len() as u64 >= max {
        return Err(Error::invalid(format!(
            "This team has {max} topics, the most it may have ([contacts] topics_max); delete one first"
        )));
    }
    let now = services.now();
    let topic = Topic {
        id: services.next_id(),
        team_id: caller.team_id,
        name,
        description,
        default_subscription,
        visibility: new.visibility.unwrap_or_default(),
        created_at: now,
        updated_at: now,
    };
    let event = crate::services::outbox::new(services, caller.team_id, EventKind::TopicCreated, || {
        topic.event_json(false)
    })?;
    services.audience().put_topic(&topic, event.as_ref())?;
    Ok(topic.id)
}

/// The caller's topic `id` (as written in a path).
pub fn get(services: &Services, caller: &Caller, id: &str) -> Result<Topic, Error> {
    caller.require_full_access()?;
    find(services, caller.team_id, parse_id(id)?)
}

/// The team's topic `id`, or not found.
pub fn find(services: &Services, team_id: Id, id: Id) -> Result<Topic, Error> {
    services
        .audience()
        .topic(team_id, id)?
        .ok_or(Error::NotFound("Topic not found"))
}

/// A topic id from a path or body.
pub fn parse_id(text: &str) -> Result<Id, Error> {
    crate::services::parse_id(text, "topic")
}

/// One page of the caller's topics, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Topic>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.audience().topic_page(caller.team_id, page)?)
}

/// Changes the caller's topic `id`; fires `topic.updated` when something changed.
pub fn update(services: &Services, caller: &Caller, id: &str, change: TopicChange) -> Result<Id, Error> {
    caller.require_full_access()?;
    let name = change
        .name
        .map(|name| required_text(Some(name), "name", NAME_MAX))
        .transpose()?;
    let new_description = change.description.map(description).transpose()?;
    let _guard = super::lock(services, caller.team_id);
    let mut topic = get(services, caller, id)?;
    if change
        .default_subscription
        .is_some_and(|given| given != topic.default_subscription)
    {
        return Err(Error::invalid(
            "A topic's `default_subscription` cannot change after it is created: contacts that never chose rely on it",
        ));
    }
    let before = topic.clone();
    if let Some(name) = name {
        topic.name = name;
    }
    if let Some(description) = new_description {
        topic.description = description;
    }
    if let Some(visibility) = change.visibility {
        topic.visibility = visibility;
    }
    if topic != before {
        topic.updated_at = services.now();
        let event = crate::services::outbox::new(services, caller.team_id, EventKind::TopicUpdated, || {
            topic.event_json(false)
        })?;
        services.audience().put_topic(&topic, event.as_ref())?;
    }
    Ok(topic.id)
}

/// Deletes the caller's topic `id`; fires `topic.deleted`. Contacts' choices for it are
/// ignored from now on.
pub fn delete(services: &Services, caller: &Caller, id: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = super::lock(services, caller.team_id);
    let topic = get(services, caller, id)?;
    let event = crate::services::outbox::new(services, caller.team_id, EventKind::TopicDeleted, || {
        topic.event_json(true)
    })?;
    services.audience().delete_topic(&topic, event.as_ref())?;
    Ok(topic.id)
}
