//! Topics: the kinds of mail a team sends (a newsletter, product updates), which each
//! contact may opt into or out of; a contact that never chose follows the topic's
//! default. Creating, changing and deleting one fires `topic.*`.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::accounts::Caller;
use crate::events::EventKind;
use crate::services::{Error, Services, required_text};
use crate::storage::page::PageRequest;
use crate::wire;

/// Longest topic name, in characters.
const NAME_MAX: usize = 256;
/// Longest description, in characters.
const DESCRIPTION_MAX: usize = 1_024;

/// A contact's subscription to a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subscription {
    /// Receives the topic's mail.
    OptIn,
    /// Does not.
    OptOut,
}

impl Subscription {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Subscription::OptIn => "opt_in",
            Subscription::OptOut => "opt_out",
        }
    }
}

/// Who sees a topic on the preferences page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Every contact.
    Public,
    /// Only contacts subscribed to it.
    #[default]
    Private,
}

/// One contact's choice for one topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopicChoice {
    /// The topic.
    pub id: Id,
    /// The choice.
    pub subscription: Subscription,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Topic {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Its name.
    pub name: String,
    /// What it is about.
    pub description: Option<String>,
    /// The subscription of contacts that never chose.
    pub default_subscription: Subscription,
    /// Who sees it.
    pub visibility: Visibility,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Topic {
    /// The answer to `GET /topics/{id}` (with `object`) or a list item (without).
    pub fn to_json(&self, object: bool) -> Value {
        let mut value = json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "default_subscription": self.default_subscription.name(),
            "visibility": self.visibility,
            "created_at": wire::timestamp(self.created_at),
        });
        if let (true, Value::Object(map)) = (object, &mut value) {
            map.shift_insert(0, "object".into(), json!("topic"));
        }
        value
    }

    /// The `data` of `topic.*` events, as Resend sends it.
    fn event_json(&self, deleted: bool) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "default_subscription": self.default_subscription.name(),
            "visibility": self.visibility,
            "deleted": deleted,
            "created_at": wire::iso8601(self.created_at),
            "updated_at": wire::iso8601(self.updated_at),
        })
    }
}

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
    let _guard = super::service::lock(services, caller.team_id);
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
    let _guard = super::service::lock(services, caller.team_id);
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
    let _guard = super::service::lock(services, caller.team_id);
    let topic = get(services, caller, id)?;
    let event = crate::services::outbox::new(services, caller.team_id, EventKind::TopicDeleted, || {
        topic.event_json(true)
    })?;
    services.audience().delete_topic(&topic, event.as_ref())?;
    Ok(topic.id)
}
