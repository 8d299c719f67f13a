//! The templates service: create, read, list, change, publish, duplicate and delete a
//! team's templates by id or alias. Rules live here; storage is [`super::TemplateStore`]'s.

use herald_queue::{Id, Timestamp};
use serde_json::Value;

use super::merge::{self, check_name};
use super::{Template, Variable, VariableType, Version};
use crate::accounts::Caller;
use crate::emails::Mailbox;
use crate::services::{Error, RecordName, Services, required_text};
use crate::storage::page::PageRequest;

/// Longest template name, in characters.
const NAME_MAX: usize = 256;
/// Longest alias, in bytes.
pub const ALIAS_MAX: usize = 64;
/// Largest HTML or text part of a template, in bytes.
pub const CONTENT_MAX: usize = 1024 * 1024;
/// Longest subject, in characters (a header line's limit).
pub const SUBJECT_MAX: usize = 998;
/// Most templates a team keeps: each may hold a megabyte or two of content.
pub const TEMPLATES_MAX: usize = 1_000;
/// Most variables a template declares (Resend's limit).
pub const VARIABLES_MAX: usize = 50;
/// Longest string fallback or sent value of a variable, in bytes.
pub const VALUE_MAX: usize = 10_000;

/// Names a template may use without declaring them, and may not declare: a contact's
/// fields and the unsubscribe link, which herald fills in (from the send's variables in
/// a transactional send, from the contact in a broadcast).
pub const RESERVED: &[&str] = &[
    "FIRST_NAME",
    "LAST_NAME",
    "EMAIL",
    "UNSUBSCRIBE_URL",
    "RESEND_UNSUBSCRIBE_URL",
    "contact",
    "this",
];

/// Whether `name` is reserved (`contact.first_name` is, through `contact`).
pub fn is_reserved(name: &str) -> bool {
    let head = name.split('.').next().unwrap_or(name);
    RESERVED.contains(&head)
}

/// A declared variable as a caller gives it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct VariableInput {
    /// Its name.
    pub key: Option<String>,
    /// `string` or `number`.
    #[serde(rename = "type")]
    pub kind: Option<VariableType>,
    /// Its fallback.
    pub fallback_value: Option<Value>,
}

/// A template to create.
#[derive(Debug, Clone, Default)]
pub struct NewTemplate {
    /// Required.
    pub name: Option<String>,
    /// Another name to send it by.
    pub alias: Option<String>,
    /// The sender.
    pub from: Option<String>,
    /// The subject.
    pub subject: Option<String>,
    /// Reply-To.
    pub reply_to: Option<Vec<String>>,
    /// Required.
    pub html: Option<String>,
    /// The text part.
    pub text: Option<String>,
    /// Declared variables.
    pub variables: Option<Vec<VariableInput>>,
}

/// A change: `None` leaves a field; `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default)]
pub struct TemplateChange {
    /// A new name.
    pub name: Option<String>,
    /// A new alias, or none.
    pub alias: Option<Option<String>>,
    /// A new sender, or none.
    pub from: Option<Option<String>>,
    /// A new subject, or none.
    pub subject: Option<Option<String>>,
    /// New Reply-To addresses, or none.
    pub reply_to: Option<Option<Vec<String>>>,
    /// New HTML.
    pub html: Option<String>,
    /// A new text part, or none.
    pub text: Option<Option<String>>,
    /// The variables, all of them.
    pub variables: Option<Vec<VariableInput>>,
    /// A design from the editor: its compiled HTML replaces the HTML, and the MJML is
    /// kept beside it.
    pub design: Option<crate::design::Compiled>,
}

fn lock(services: &Services, team_id: Id) -> crate::services::Held<'_> {
    services.lock_record(RecordName {
        table: "templates",
        key: team_id.as_bytes(),
    })
}

/// Checks a part of a template: it parses, and is at most `max` bytes.
fn part(field: &str, text: &str, max: usize) -> Result<(), Error> {
    if text.len() > max {
        return Err(Error::invalid(format!(
            "Invalid `{field}` field: longer than {max} bytes"
        )));
    }
    merge::parse(text).map_err(|e| Error::invalid(format!("Invalid `{field}` field: {e}")))?;
    Ok(())
}

/// Checks an address field: it parses as a template, and, when it has no variable, as
/// a mailbox now rather than at the first send.
fn address(field: &str, text: &str) -> Result<(), Error> {
    part(field, text, SUBJECT_MAX)?;
    if text.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "Invalid `{field}` field: must not contain control characters"
        )));
    }
    if !text.contains("{{{") {
        Mailbox::parse(text).map_err(|why| Error::invalid(format!("Invalid `{field}` field: {why}")))?;
    }
    Ok(())
}

fn alias(text: Option<String>) -> Result<Option<String>, Error> {
    let Some(text) = text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let valid = text.len() <= ALIAS_MAX
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))
        && text.parse::<Id>().is_err()
        && !text.chars().all(|c| c == '.');
    if !valid {
        return Err(Error::invalid(format!(
            "Invalid `alias` field: {text:?} must be 1 to {ALIAS_MAX} letters, digits, spaces, '-', '_' and '.', and not a UUID"
        )));
    }
    Ok(Some(text))
}

fn variables(
    services: &Services,
    given: Vec<VariableInput>,
    before: &[Variable],
    now: Timestamp,
) -> Result<Vec<Variable>, Error> {
    if given.len() > VARIABLES_MAX {
        return Err(Error::invalid(format!(
            "Invalid `variables` field: at most {VARIABLES_MAX} variables, got {}",
            given.len()
        )));
    }
    let mut out: Vec<Variable> = Vec::with_capacity(given.len());
    for (index, input) in given.into_iter().enumerate() {
        let field = format!("variables[{index}]");
        let key = input.key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
        let key = key.ok_or_else(|| Error::invalid(format!("Invalid `{field}` field: missing `key`")))?;
        check_name(&key).map_err(|why| Error::invalid(format!("Invalid `{field}.key` field: {why}")))?;
        if is_reserved(&key) {
            return Err(Error::invalid(format!(
                "Invalid `{field}.key` field: {key} is reserved; herald fills it in"
            )));
        }
        if out.iter().any(|v| v.key == key) {
            return Err(Error::invalid(format!(
                "Invalid `{field}.key` field: {key} is declared twice"
            )));
        }
        let kind = input
            .kind
            .ok_or_else(|| Error::invalid(format!("Invalid `{field}` field: missing `type` (string or number)")))?;
        let fallback_value = input.fallback_value.filter(|v| !v.is_null());
        if let Some(value) = &fallback_value
            && (!kind.admits(value) || value.as_str().is_some_and(|s| s.len() > VALUE_MAX))
        {
            return Err(Error::invalid(format!(
                "Invalid `{field}.fallback_value` field: the variable is a {}, of at most {VALUE_MAX} bytes",
                kind.name()
            )));
        }
        let previous = before.iter().find(|v| v.key == key);
        let unchanged = previous.filter(|v| v.kind == kind && v.fallback_value == fallback_value);
        out.push(match (unchanged, previous) {
            (Some(same), _) => same.clone(),
            (None, Some(changed)) => Variable {
                kind,
                fallback_value,
                updated_at: now,
                ..changed.clone()
            },
            (None, None) => Variable {
                id: services.next_id(),
                key,
                kind,
                fallback_value,
                created_at: now,
                updated_at: now,
            },
        });
    }
    Ok(out)
}

/// Checks a version's parts.
fn check_version(version: &Version) -> Result<(), Error> {
    if version.html.trim().is_empty() {
        return Err(Error::MissingField("html"));
    }
    part("html", &version.html, CONTENT_MAX)?;
    merge::check_html(&version.html).map_err(|e| Error::invalid(format!("Invalid `html` field: {e}")))?;
    if let Some(text) = &version.text {
        part("text", text, CONTENT_MAX)?;
    }
    if let Some(subject) = &version.subject {
        if subject.chars().any(|c| matches!(c, '\r' | '\n' | '\0')) {
            return Err(Error::invalid(
                "Invalid `subject` field: must not contain CR, LF or NUL",
            ));
        }
        part("subject", subject, SUBJECT_MAX)?;
    }
    if let Some(from) = &version.from {
        address("from", from)?;
    }
    if version.reply_to.len() > crate::emails::validate::RECIPIENTS_MAX {
        return Err(Error::invalid(format!(
            "Invalid `reply_to` field: at most {} addresses",
            crate::emails::validate::RECIPIENTS_MAX
        )));
    }
    for reply_to in &version.reply_to {
        address("reply_to", reply_to)?;
    }
    Ok(())
}

fn empty(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

/// Creates a template (a draft); its id.
pub fn create(services: &Services, caller: &Caller, new: NewTemplate) -> Result<Id, Error> {
    caller.require_full_access()?;
    let name = required_text(new.name, "name", NAME_MAX)?;
    let alias = alias(new.alias)?;
    let now = services.now();
    let version = Version {
        id: services.next_id(),
        from: empty(new.from),
        subject: empty(new.subject),
        reply_to: new.reply_to.unwrap_or_default(),
        html: new.html.ok_or(Error::MissingField("html"))?,
        text: empty(new.text),
        variables: variables(services, new.variables.unwrap_or_default(), &[], now)?,
        mjml: None,
        created_at: now,
    };
    check_version(&version)?;
    let template = Template {
        id: services.next_id(),
        team_id: caller.team_id,
        name,
        alias,
        published: None,
        published_at: None,
        draft: Some(version),
        history: Vec::new(),
        created_at: now,
        updated_at: now,
    };
    let _guard = lock(services, caller.team_id);
    check_room(services, caller.team_id)?;
    check_alias_free(services, &template)?;
    services.templates().put(&template, None)?;
    Ok(template.id)
}

fn check_room(services: &Services, team_id: Id) -> Result<(), Error> {
    if services.templates().count(team_id)? >= TEMPLATES_MAX {
        return Err(Error::invalid(format!(
            "This team has {TEMPLATES_MAX} templates, the most it may have; delete one first"
        )));
    }
    Ok(())
}

fn check_alias_free(services: &Services, template: &Template) -> Result<(), Error> {
    if let Some(alias) = &template.alias
        && services
            .templates()
            .by_alias(template.team_id, alias)?
            .is_some_and(|other| other.id != template.id)
    {
        return Err(Error::Conflict(format!(
            "A template with the alias {alias} already exists"
        )));
    }
    Ok(())
}

/// The caller's template named `target`: its id (a UUID) or its alias.
pub fn get(services: &Services, caller: &Caller, target: &str) -> Result<Template, Error> {
    caller.require_full_access()?;
    find(services, caller.team_id, target)?.ok_or(Error::NotFound("Template not found"))
}

/// The team's template named `target`.
pub fn find(services: &Services, team_id: Id, target: &str) -> Result<Option<Template>, Error> {
    let target = target.trim();
    match target.parse::<Id>() {
        Ok(id) => Ok(services.templates().get(team_id, id)?),
        Err(_) => Ok(services.templates().by_alias(team_id, target)?),
    }
}

/// One page of the caller's templates, newest first.
pub fn list(
    services: &Services,
    caller: &Caller,
    page: &PageRequest,
) -> Result<(Vec<super::TemplateSummary>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.templates().page(caller.team_id, page)?)
}

/// Changes the caller's template `target`: its name and alias at once; its content in a
/// draft (a new one when only the published version exists), which sends once published.
pub fn update(services: &Services, caller: &Caller, target: &str, change: TemplateChange) -> Result<Id, Error> {
    caller.require_full_access()?;
    let name = change
        .name
        .map(|n| required_text(Some(n), "name", NAME_MAX))
        .transpose()?;
    let new_alias = change.alias.map(alias).transpose()?;
    let _guard = lock(services, caller.team_id);
    let previous = get(services, caller, target)?;
    let mut template = previous.clone();
    let now = services.now();
    if let Some(name) = name {
        template.name = name;
    }
    if let Some(alias) = new_alias {
        template.alias = alias;
    }
    let content_changes = change.from.is_some()
        || change.subject.is_some()
        || change.reply_to.is_some()
        || change.html.is_some()
        || change.text.is_some()
        || change.variables.is_some()
        || change.design.is_some();
    if content_changes {
        let mut version = template.current().clone();
        if let Some(from) = change.from {
            version.from = empty(from);
        }
        if let Some(subject) = change.subject {
            version.subject = empty(subject);
        }
        if let Some(reply_to) = change.reply_to {
            version.reply_to = reply_to.unwrap_or_default();
        }
        if let Some(html) = change.html
            && html != version.html
        {
            // Edited as HTML: the design no longer says what sends.
            version.html = html;
            version.mjml = None;
        }
        if let Some(design) = change.design {
            let (mjml, html) = design.into_parts();
            version.html = html;
            version.mjml = Some(mjml);
        }
        if let Some(text) = change.text {
            version.text = empty(text);
        }
        if let Some(given) = change.variables {
            version.variables = variables(services, given, &version.variables, now)?;
        }
        check_version(&version)?;
        // The SDKs resend every field on an update (resend-rs always sends `html`): a
        // "change" to what the current version already says makes no draft.
        let same = version.same_content(template.current());
        let published = template.published.as_ref().is_some_and(|p| version.same_content(p));
        if published {
            // Edited back to what sends: nothing is unpublished any more.
            template.draft = None;
        } else if !same {
            if template.draft.is_none() {
                // The published version stays as it is, sending, until this draft is
                // published.
                version.id = services.next_id();
                version.created_at = now;
            }
            template.draft = Some(version);
        }
    }
    if template != previous {
        template.updated_at = now;
        check_alias_free(services, &template)?;
        services.templates().put(&template, Some(&previous))?;
    }
    Ok(template.id)
}

/// Publishes the caller's template `target`: its draft becomes the version that sends.
pub fn publish(services: &Services, caller: &Caller, target: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id);
    let previous = get(services, caller, target)?;
    let mut template = previous.clone();
    if let Some(draft) = template.draft.take() {
        let now = services.now();
        if let Some(before) = template.published.take() {
            template.history.insert(0, before);
            template.history.truncate(super::HISTORY_MAX);
        }
        template.published = Some(draft);
        template.published_at = Some(now);
        template.updated_at = now;
        services.templates().put(&template, Some(&previous))?;
    }
    Ok(template.id)
}

/// Makes version `version_id` of the caller's template `target` (a published one, an
/// earlier one or the draft) its draft, to be published again; the template's id.
pub fn restore(services: &Services, caller: &Caller, target: &str, version_id: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let version_id = crate::services::parse_id(version_id, "version")?;
    let _guard = lock(services, caller.team_id);
    let previous = get(services, caller, target)?;
    let mut template = previous.clone();
    let Some(mut version) = template
        .history
        .iter()
        .chain(&template.published)
        .chain(&template.draft)
        .find(|v| v.id == version_id)
        .cloned()
    else {
        return Err(Error::NotFound("Template version not found"));
    };
    let now = services.now();
    if template.published.as_ref().is_some_and(|p| p.same_content(&version)) {
        template.draft = None;
    } else if !template.draft.as_ref().is_some_and(|d| d.same_content(&version)) {
        version.id = services.next_id();
        version.created_at = now;
        template.draft = Some(version);
    }
    if template != previous {
        template.updated_at = now;
        services.templates().put(&template, Some(&previous))?;
    }
    Ok(template.id)
}

/// Copies the caller's template `target` (its current version) into a new draft
/// template without an alias; the copy's id.
pub fn duplicate(services: &Services, caller: &Caller, target: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let original = get(services, caller, target)?;
    let now = services.now();
    let mut version = original.current().clone();
    version.id = services.next_id();
    version.created_at = now;
    for variable in &mut version.variables {
        variable.id = services.next_id();
        variable.created_at = now;
        variable.updated_at = now;
    }
    let name: String = format!("{} (copy)", original.name).chars().take(NAME_MAX).collect();
    let copy = Template {
        id: services.next_id(),
        team_id: caller.team_id,
        name,
        alias: None,
        published: None,
        published_at: None,
        draft: Some(version),
        history: Vec::new(),
        created_at: now,
        updated_at: now,
    };
    let _guard = lock(services, caller.team_id);
    check_room(services, caller.team_id)?;
    services.templates().put(&copy, None)?;
    Ok(copy.id)
}

/// Deletes the caller's template `target`; its id. Emails sent from it keep their
/// content.
pub fn delete(services: &Services, caller: &Caller, target: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = lock(services, caller.team_id);
    let template = get(services, caller, target)?;
    services.templates().delete(&template)?;
    Ok(template.id)
}
