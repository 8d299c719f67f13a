//! A template as every layer speaks of it: its versions, their variables, and the
//! summary lists show.

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::wire;

/// Versions a template keeps besides its published one and its draft.
pub const HISTORY_MAX: usize = 10;

/// A variable's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VariableType {
    /// Text.
    String,
    /// A JSON number.
    Number,
}

impl VariableType {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            VariableType::String => "string",
            VariableType::Number => "number",
        }
    }

    /// Whether `value` is of this type.
    pub fn admits(self, value: &Value) -> bool {
        match self {
            VariableType::String => value.is_string(),
            VariableType::Number => value.is_number(),
        }
    }
}

/// A variable a template declares.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Variable {
    /// Its id.
    pub id: Id,
    /// Its name in `{{{KEY}}}`.
    pub key: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: VariableType,
    /// Its value when a send gives none.
    pub fallback_value: Option<Value>,
    /// When it was declared.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// One version of a template's content.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Version {
    /// Its id (the `current_version_id` of the answers, recorded by the emails it sends).
    pub id: Id,
    /// The sender, unless a send gives one.
    pub from: Option<String>,
    /// The subject, unless a send gives one.
    pub subject: Option<String>,
    /// Reply-To addresses, unless a send gives them.
    pub reply_to: Vec<String>,
    /// The HTML.
    pub html: String,
    /// The text part; derived from the HTML when absent.
    pub text: Option<String>,
    /// Declared variables.
    pub variables: Vec<Variable>,
    /// The editor's design the HTML was compiled from, when it was made in the editor
    /// (see [`crate::design`]); dropped when the HTML is edited as HTML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mjml: Option<String>,
    /// When it was made.
    pub created_at: Timestamp,
}

impl Version {
    /// Whether `other` says the same: every part but the version's own id and time.
    pub fn same_content(&self, other: &Version) -> bool {
        self.from == other.from
            && self.subject == other.subject
            && self.reply_to == other.reply_to
            && self.html == other.html
            && self.text == other.text
            && self.variables == other.variables
            && self.mjml == other.mjml
    }
}

/// A template.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Template {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// Its name.
    pub name: String,
    /// Another name to send it by, unique in the team.
    pub alias: Option<String>,
    /// The version that sends, once published.
    pub published: Option<Version>,
    /// When it was last published.
    pub published_at: Option<Timestamp>,
    /// Changes not yet published (a new template's first version is one).
    pub draft: Option<Version>,
    /// Versions published before the current one, newest first, at most
    /// [`HISTORY_MAX`]: the dashboard shows them and restores one as the draft.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Version>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Template {
    /// The version the answers show and edits start from: the draft, else the published.
    pub fn current(&self) -> &Version {
        match (&self.draft, &self.published) {
            (Some(draft), _) => draft,
            (None, Some(published)) => published,
            // Invariant: every write keeps a draft or a published version (see service).
            (None, None) => unreachable!("a template always has a version"),
        }
    }

    /// `draft` until first published, then `published`.
    pub fn status(&self) -> &'static str {
        if self.published.is_some() { "published" } else { "draft" }
    }

    /// Its list item.
    pub fn summary(&self) -> TemplateSummary {
        TemplateSummary {
            id: self.id,
            name: self.name.clone(),
            alias: self.alias.clone(),
            published: self.published.is_some(),
            published_at: self.published_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }

    /// The answer to `GET /templates/{id-or-alias}`: the current version's content.
    pub fn to_json(&self) -> Value {
        let version = self.current();
        let variables: Vec<Value> = version
            .variables
            .iter()
            .map(|v| {
                json!({
                    "id": v.id,
                    "key": v.key,
                    "type": v.kind.name(),
                    "fallback_value": v.fallback_value,
                    "created_at": wire::timestamp(v.created_at),
                    "updated_at": wire::timestamp(v.updated_at),
                })
            })
            .collect();
        json!({
            "object": "template",
            "id": self.id,
            "current_version_id": version.id,
            "name": self.name,
            "alias": self.alias,
            "from": version.from,
            "subject": version.subject,
            "reply_to": (!version.reply_to.is_empty()).then_some(&version.reply_to),
            "html": version.html,
            "text": version.text,
            "variables": variables,
            "status": self.status(),
            "published_at": self.published_at.map(wire::timestamp),
            "created_at": wire::timestamp(self.created_at),
            "updated_at": wire::timestamp(self.updated_at),
            "has_unpublished_versions": self.published.is_some() && self.draft.is_some(),
        })
    }
}

/// A template as lists show it, without its content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TemplateSummary {
    /// Its id.
    pub id: Id,
    /// Its name.
    pub name: String,
    /// Its alias.
    pub alias: Option<String>,
    /// Whether a version was ever published.
    pub published: bool,
    /// When it was last published.
    pub published_at: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl TemplateSummary {
    /// The list item (`GET /templates`).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "status": if self.published { "published" } else { "draft" },
            "published_at": self.published_at.map(wire::timestamp),
            "created_at": wire::timestamp(self.created_at),
            "updated_at": wire::timestamp(self.updated_at),
            "alias": self.alias,
        })
    }
}
