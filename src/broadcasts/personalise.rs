//! A broadcast's parts, parsed once, rendered per contact with the merge language of
//! templates: `{{{FIRST_NAME|there}}}`, `{{{LAST_NAME}}}`, `{{{EMAIL}}}`,
//! `{{{contact.first_name}}}` (and `contact.last_name`, `contact.email`), a custom
//! property by key (`{{{plan}}}` or `{{{contact.plan}}}`), and the unsubscribe link
//! (`{{{RESEND_UNSUBSCRIBE_URL}}}`). A value missing on a contact takes the inline
//! fallback, else the property's `fallback_value`; a contact still missing one is
//! skipped with the reason. A name that is none of these, used without an inline
//! fallback, is refused when the broadcast is written or sent.

use std::borrow::Cow;

use crate::contacts::Contact;
use crate::contacts::properties::{self, ContactProperty};
use crate::emails::Email;
use crate::emails::address::Mailbox;
use crate::emails::validate::Tag;
use crate::services::Error;
use crate::templates::merge::{self, Escape, Parsed};

use super::Broadcast;

/// The names of the unsubscribe link.
const UNSUBSCRIBE: &[&str] = &["UNSUBSCRIBE_URL", "RESEND_UNSUBSCRIBE_URL"];

/// The contact's own fields, by the names the merge language gives them.
const FIELDS: &[(&str, Field)] = &[
    ("FIRST_NAME", Field::FirstName),
    ("LAST_NAME", Field::LastName),
    ("EMAIL", Field::Email),
    ("contact.first_name", Field::FirstName),
    ("contact.last_name", Field::LastName),
    ("contact.email", Field::Email),
];

#[derive(Debug, Clone, Copy)]
enum Field {
    FirstName,
    LastName,
    Email,
}

/// A broadcast ready to render.
#[derive(Debug)]
pub struct Prepared {
    from: Mailbox,
    reply_to: Vec<Mailbox>,
    subject: Parsed,
    html: Option<Parsed>,
    text: Option<Parsed>,
    preview: Option<String>,
    properties: Vec<ContactProperty>,
    tag: Tag,
}

/// Parses `source` (the broadcast's `field`), refusing what does not parse and names
/// nothing it could take a value from.
fn part(field: &str, source: &str, properties: &[ContactProperty], html: bool) -> Result<Parsed, Error> {
    if source.len() > merge::RENDERED_MAX {
        return Err(Error::invalid(format!(
            "Invalid `{field}` field: longer than {} bytes",
            merge::RENDERED_MAX
        )));
    }
    let parsed = merge::parse(source).map_err(|e| Error::invalid(format!("Invalid `{field}` field: {e}")))?;
    if html {
        merge::check_html(source).map_err(|e| Error::invalid(format!("Invalid `{field}` field: {e}")))?;
    }
    if field == "subject"
        && let Some(name) = parsed.names().into_iter().find(|n| UNSUBSCRIBE.contains(n))
    {
        return Err(Error::invalid(format!(
            "Invalid `subject` field: {{{{{{{name}}}}}}} goes in `html` or `text` only"
        )));
    }
    for name in parsed.required() {
        let known = UNSUBSCRIBE.contains(&name)
            || FIELDS.iter().any(|(n, _)| *n == name)
            || properties.iter().any(|p| p.key == property_key(name));
        if !known {
            return Err(Error::invalid(format!(
                "Invalid `{field}` field: {{{{{{{name}}}}}}} is not a contact field or property of this team; define the property (POST /contact-properties) or give a fallback, as in {{{{{{{name}|there}}}}}}"
            )));
        }
    }
    Ok(parsed)
}

/// A custom property's key as a merge name gives it (`plan` or `contact.plan`).
fn property_key(name: &str) -> &str {
    name.strip_prefix("contact.").unwrap_or(name)
}

/// Checks `broadcast`'s parts and sender, with the team's `properties`; ready to render.
pub fn prepare(broadcast: &Broadcast, properties: Vec<ContactProperty>) -> Result<Prepared, Error> {
    let from = Mailbox::parse(&broadcast.from).map_err(|e| Error::invalid(format!("Invalid `from` field: {e}")))?;
    let reply_to = broadcast
        .reply_to
        .iter()
        .map(|r| Mailbox::parse(r).map_err(|e| Error::invalid(format!("Invalid `reply_to` field: {e}"))))
        .collect::<Result<_, _>>()?;
    if broadcast.html.is_none() && broadcast.text.is_none() {
        return Err(Error::MissingField("html` or `text"));
    }
    Ok(Prepared {
        subject: part("subject", &broadcast.subject, &properties, false)?,
        html: broadcast
            .html
            .as_deref()
            .map(|h| part("html", h, &properties, true))
            .transpose()?,
        text: broadcast
            .text
            .as_deref()
            .map(|t| part("text", t, &properties, false))
            .transpose()?,
        preview: broadcast.preview_text.clone().filter(|p| !p.trim().is_empty()),
        from,
        reply_to,
        properties,
        tag: Tag {
            name: "broadcast_id".into(),
            value: broadcast.id.to_string(),
        },
    })
}

impl Prepared {
    /// The tag every email of the broadcast carries (`broadcast_id`).
    pub fn tag(&self) -> &Tag {
        &self.tag
    }

    /// `contact`'s email of `broadcast`, or why it cannot have one.
    pub fn render(&self, broadcast: &Broadcast, contact: &Contact) -> Result<Email, String> {
        let lookup = |name: &str| -> Option<Cow<'_, str>> {
            if UNSUBSCRIBE.contains(&name) {
                return Some(Cow::Borrowed(crate::unsubscribe::MARKER));
            }
            if let Some((_, field)) = FIELDS.iter().find(|(n, _)| *n == name) {
                return match field {
                    Field::FirstName => contact.first_name.as_deref().map(Cow::Borrowed),
                    Field::LastName => contact.last_name.as_deref().map(Cow::Borrowed),
                    Field::Email => Some(Cow::Borrowed(contact.email.as_str())),
                };
            }
            let definition = self.properties.iter().find(|p| p.key == property_key(name))?;
            contact
                .properties
                .get(&definition.id)
                .or(definition.fallback_value.as_ref())
                .map(|value| Cow::Owned(properties::text(value)))
        };
        let render = |field: &str, parsed: &Parsed, escape: Escape| {
            parsed.render(escape, lookup).map_err(|e| match e {
                merge::RenderError::Missing(name) => {
                    format!("the contact has no {name} for the broadcast's `{field}`, and it has no fallback")
                }
                merge::RenderError::TooLarge => format!("the broadcast's `{field}` rendered too large"),
            })
        };
        let subject = render("subject", &self.subject, Escape::None)?.replace(['\r', '\n'], " ");
        let mut html = self
            .html
            .as_ref()
            .map(|h| render("html", h, Escape::Html))
            .transpose()?;
        if let (Some(html), Some(preview)) = (&mut html, &self.preview) {
            *html = with_preview(html, preview);
        }
        let text = self
            .text
            .as_ref()
            .map(|t| render("text", t, Escape::None))
            .transpose()?;
        let to = Mailbox::parse(&contact.email).map_err(|e| format!("the contact's address is not usable: {e}"))?;
        Ok(Email {
            from: self.from.clone(),
            to: vec![to],
            cc: Vec::new(),
            bcc: Vec::new(),
            reply_to: self.reply_to.clone(),
            subject,
            html,
            text,
            headers: Vec::new(),
            attachments: Vec::new(),
            tags: vec![self.tag.clone()],
            scheduled_at: None,
            template: None,
            topic_id: broadcast.topic_id,
            unsubscribe: true,
            broadcast_id: Some(broadcast.id),
        })
    }
}

/// `html` with `preview` as a hidden preheader at the start of its body.
fn with_preview(html: &str, preview: &str) -> String {
    let mut hidden =
        String::from("<div style=\"display:none;max-height:0;overflow:hidden;mso-hide:all\" aria-hidden=\"true\">");
    merge::escape_html(preview, &mut hidden);
    hidden.push_str("</div>");
    let lower = html.to_ascii_lowercase();
    let at = lower
        .find("<body")
        .and_then(|start| lower[start..].find('>').map(|end| start + end + 1))
        .unwrap_or(0);
    let mut out = String::with_capacity(html.len() + hidden.len());
    out.push_str(&html[..at]);
    out.push_str(&hidden);
    out.push_str(&html[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_goes_first_in_the_body() {
        assert!(with_preview("<html><body class=\"x\"><p>Hi</p></body></html>", "Sale <now>").starts_with(
            "<html><body class=\"x\"><div style=\"display:none;max-height:0;overflow:hidden;mso-hide:all\" aria-hidden=\"true\">Sale &lt;now&gt;</div><p>Hi"
        ));
        assert!(with_preview("<p>Hi</p>", "P").starts_with("<div style="));
    }
}
