//! Sending with a template: `POST /emails {"template": {"id", "variables"}}` (and each
//! item of a batch). The published version's parts are rendered with the variables into
//! the email's `from`, `subject`, `reply_to` (each unless the send gives its own), `html`
//! and `text`, which then go through the same validation as any email: a variable can
//! never put a CR or LF into a header, and one that has neither a value nor a fallback is
//! refused by name, never sent as a hole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use herald_queue::Id;
use serde_json::{Map, Value};

use super::merge::{self, Escape, Parsed};
use super::service::{ALIAS_MAX, RESERVED, VALUE_MAX, VARIABLES_MAX, find};
use super::{TemplateRef, Version};
use crate::emails::input::{OneOrMany, SendEmail};
use crate::services::{Error, Services};

/// The names of the unsubscribe link: in `html` and `text` they render to
/// [`crate::unsubscribe::MARKER`], which acceptance replaces with the recipient's signed
/// link (it needs the email's id); in headers they are refused.
const UNSUBSCRIBE: &[&str] = &["UNSUBSCRIBE_URL", "RESEND_UNSUBSCRIBE_URL"];

/// The templates a request has sent with, each found and parsed once however many of
/// its emails (a batch of a hundred) use it.
#[derive(Debug, Default)]
pub struct Cache {
    found: HashMap<String, Arc<Prepared>>,
}

/// A published version, parsed.
#[derive(Debug)]
struct Prepared {
    reference: TemplateRef,
    version: Version,
    from: Option<Parsed>,
    subject: Option<Parsed>,
    reply_to: Vec<Parsed>,
    html: Parsed,
    text: Option<Parsed>,
}

/// Fills `input` from the template it names, if any; the template and version used.
pub fn apply(
    services: &Services,
    team_id: Id,
    input: &mut SendEmail,
    cache: &mut Cache,
) -> Result<Option<TemplateRef>, Error> {
    let Some(given) = input.template.take() else {
        return Ok(None);
    };
    if input.html.as_deref().is_some_and(|h| !h.is_empty()) || input.text.as_deref().is_some_and(|t| !t.is_empty()) {
        return Err(Error::invalid(
            "`html` and `text` cannot be sent with `template`: the template's own are rendered (leave them out)",
        ));
    }
    let target = given
        .id
        .filter(|id| !id.trim().is_empty())
        .ok_or(Error::MissingField("template.id"))?;
    if target.len() > ALIAS_MAX.max(36) {
        return Err(Error::invalid(
            "Invalid `template.id` field: not a template id or alias",
        ));
    }
    let prepared = match cache.found.get(&target) {
        Some(prepared) => Arc::clone(prepared),
        None => {
            let prepared = Arc::new(prepare(services, team_id, &target)?);
            cache.found.insert(target, Arc::clone(&prepared));
            prepared
        }
    };
    let variables = given.variables.unwrap_or_default();
    check_variables(&prepared.version, &variables)?;
    let rendered = render(&prepared, &variables, input)?;
    input.html = Some(rendered.html);
    input.text = rendered.text;
    if input.subject.as_deref().is_none_or(str::is_empty) {
        input.subject = rendered.subject;
    }
    if input.from.as_deref().is_none_or(str::is_empty) {
        input.from = rendered.from;
    }
    if input.reply_to.is_none() && !rendered.reply_to.is_empty() {
        input.reply_to = Some(OneOrMany::Many(rendered.reply_to));
    }
    Ok(Some(prepared.reference))
}

/// The published version of the team's template `target`, parsed.
fn prepare(services: &Services, team_id: Id, target: &str) -> Result<Prepared, Error> {
    let template = find(services, team_id, target)?.ok_or(Error::NotFound("Template not found"))?;
    let Some(version) = template.published else {
        return Err(Error::invalid(format!(
            "The template {target} is not published; publish it (POST /templates/{}/publish) to send with it",
            template.id
        )));
    };
    let part = |field: &str, source: &str| -> Result<Parsed, Error> {
        let parsed = parse(field, source)?;
        if let Some(name) = parsed.names().into_iter().find(|n| UNSUBSCRIBE.contains(n))
            && !matches!(field, "html" | "text")
        {
            return Err(Error::invalid(format!(
                "The template's `{field}` uses {{{{{{{name}}}}}}}: the unsubscribe link goes in `html` or `text` only"
            )));
        }
        Ok(parsed)
    };
    Ok(Prepared {
        reference: TemplateRef {
            id: template.id,
            version_id: version.id,
        },
        from: version.from.as_deref().map(|f| part("from", f)).transpose()?,
        subject: version.subject.as_deref().map(|s| part("subject", s)).transpose()?,
        reply_to: version
            .reply_to
            .iter()
            .map(|r| part("reply_to", r))
            .collect::<Result<_, _>>()?,
        html: part("html", &version.html)?,
        text: version.text.as_deref().map(|t| part("text", t)).transpose()?,
        version,
    })
}

/// The variables a send gives: at most [`VARIABLES_MAX`], named as variables are, each a
/// string (of at most [`VALUE_MAX`] bytes) or a number, of the declared type.
fn check_variables(version: &Version, given: &Map<String, Value>) -> Result<(), Error> {
    // The declared variables, and the reserved names a transactional send fills in.
    let most = VARIABLES_MAX + RESERVED.len();
    if given.len() > most {
        return Err(Error::invalid(format!(
            "Invalid `template.variables` field: at most {most} variables, got {}",
            given.len()
        )));
    }
    // A key the template never uses is ignored, whatever its name: only used ones matter.
    for (key, value) in given {
        if key.len() > merge::KEY_MAX {
            return Err(Error::invalid(format!(
                "Invalid `template.variables` field: a key longer than {} bytes",
                merge::KEY_MAX
            )));
        }
        let field = format!("template.variables.{key}");
        match value {
            Value::String(text) if text.len() > VALUE_MAX => {
                return Err(Error::invalid(format!(
                    "Invalid `{field}` field: longer than {VALUE_MAX} bytes"
                )));
            }
            Value::String(_) | Value::Number(_) => {}
            _ => return Err(Error::invalid(format!("Invalid `{field}` field: a string or a number"))),
        }
        if let Some(declared) = version.variables.iter().find(|v| v.key == *key)
            && !declared.kind.admits(value)
        {
            return Err(Error::invalid(format!(
                "Invalid `{field}` field: the template declares it a {}",
                declared.kind.name()
            )));
        }
    }
    Ok(())
}

/// A version's parts, rendered.
struct Rendered {
    from: Option<String>,
    subject: Option<String>,
    reply_to: Vec<String>,
    html: String,
    text: Option<String>,
}

fn render(prepared: &Prepared, given: &Map<String, Value>, input: &SendEmail) -> Result<Rendered, Error> {
    let version = &prepared.version;
    let lookup = |name: &str| -> Option<Cow<'_, str>> {
        if UNSUBSCRIBE.contains(&name) {
            return Some(Cow::Borrowed(crate::unsubscribe::MARKER));
        }
        let value = given.get(name).or_else(|| {
            version
                .variables
                .iter()
                .find(|v| v.key == name)?
                .fallback_value
                .as_ref()
        })?;
        Some(match value {
            Value::String(text) => Cow::Borrowed(text.as_str()),
            other => Cow::Owned(other.to_string()),
        })
    };
    let one = |field: &str, parsed: &Parsed, escape: Escape| -> Result<String, Error> {
        parsed.render(escape, lookup).map_err(|error| match error {
            merge::RenderError::Missing(name) => Error::invalid(format!(
                "Missing template variable `{name}` (in the template's `{field}`): give it in `template.variables`, or give it a fallback"
            )),
            merge::RenderError::TooLarge => Error::invalid(format!(
                "The template's `{field}` rendered with these variables is longer than {} bytes",
                merge::RENDERED_MAX
            )),
        })
    };
    let wanted = |given: bool, own: Option<&Parsed>, field: &str| -> Result<Option<String>, Error> {
        match own {
            Some(parsed) if !given => one(field, parsed, Escape::None).map(Some),
            _ => Ok(None),
        }
    };
    Ok(Rendered {
        from: wanted(
            input.from.as_deref().is_some_and(|f| !f.is_empty()),
            prepared.from.as_ref(),
            "from",
        )?,
        subject: wanted(
            input.subject.as_deref().is_some_and(|s| !s.is_empty()),
            prepared.subject.as_ref(),
            "subject",
        )?,
        reply_to: if input.reply_to.is_some() {
            Vec::new()
        } else {
            prepared
                .reply_to
                .iter()
                .map(|r| one("reply_to", r, Escape::None))
                .collect::<Result<_, _>>()?
        },
        html: one("html", &prepared.html, Escape::Html)?,
        text: prepared
            .text
            .as_ref()
            .map(|t| one("text", t, Escape::None))
            .transpose()?,
    })
}

/// A stored part, parsed: it parsed when saved, so a failure here is herald's.
fn parse(field: &str, source: &str) -> Result<Parsed, Error> {
    merge::parse(source).map_err(|error| {
        tracing::error!(%error, field, "a stored template part does not parse");
        Error::Internal("a stored template does not parse")
    })
}
