//! From request JSON to a validated [`Email`], with an error that names the field.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use herald_queue::{Id, Timestamp};

use super::address::Mailbox;
use super::input::{AttachmentInput, Content, OneOrMany, SendEmail};
use super::schedule;

/// Recipients in `to` at most (Resend's limit); `cc` and `bcc` have the same each.
pub const RECIPIENTS_MAX: usize = 50;
/// Decoded content (bodies and attachments) per email at most.
pub const CONTENT_MAX: usize = 40 * 1024 * 1024;
/// Custom headers at most.
pub const HEADERS_MAX: usize = 50;
/// Longest custom header value.
pub const HEADER_VALUE_MAX: usize = 2_000;
/// Tags at most.
pub const TAGS_MAX: usize = 50;
/// Longest tag name or value.
pub const TAG_MAX: usize = 256;
/// Attachments at most.
pub const ATTACHMENTS_MAX: usize = 100;
/// Longest subject.
pub const SUBJECT_MAX: usize = 998;

/// Headers herald writes itself; a custom header may not replace them.
const RESERVED_HEADERS: &[&str] = &[
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "reply-to",
    "sender",
    "return-path",
    "dkim-signature",
    "received",
];

/// Why an email is invalid: the field, and the message for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// A required field is missing.
    Missing(&'static str),
    /// A field has a bad value.
    Field(String),
    /// An attachment has neither content nor path, or bad content.
    Attachment(String),
}

/// An attachment, with its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// File name.
    pub filename: String,
    /// MIME type.
    pub content_type: String,
    /// Content-ID for inline parts.
    pub content_id: Option<String>,
    /// The bytes.
    pub content: Vec<u8>,
}

pub use super::record::Tag;

/// A validated email, ready to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    /// Sender.
    pub from: Mailbox,
    /// Recipients.
    pub to: Vec<Mailbox>,
    /// Carbon copies.
    pub cc: Vec<Mailbox>,
    /// Blind carbon copies (never written into the message).
    pub bcc: Vec<Mailbox>,
    /// Reply-To.
    pub reply_to: Vec<Mailbox>,
    /// Subject.
    pub subject: String,
    /// HTML body.
    pub html: Option<String>,
    /// Text body.
    pub text: Option<String>,
    /// Custom headers, in name order.
    pub headers: Vec<(String, String)>,
    /// Attachments.
    pub attachments: Vec<Attachment>,
    /// Tags.
    pub tags: Vec<Tag>,
    /// When to send; `None` is now.
    pub scheduled_at: Option<Timestamp>,
    /// The template it was rendered from.
    pub template: Option<crate::templates::TemplateRef>,
    /// The topic it is sent on.
    pub topic_id: Option<Id>,
    /// Whether it carries an unsubscribe link even without a topic or the merge tag (a
    /// broadcast's emails always do).
    pub unsubscribe: bool,
    /// The broadcast it is one of.
    pub broadcast_id: Option<Id>,
}

impl Email {
    /// Every envelope recipient, without duplicates (compared case-insensitively).
    pub fn recipients(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.to
            .iter()
            .chain(&self.cc)
            .chain(&self.bcc)
            .filter(|m| seen.insert(m.address.to_lowercase()))
            .map(|m| m.address.clone())
            .collect()
    }
}

/// Fetches an attachment's `path`: returns the bytes and the served content type.
pub type Fetch<'a> = dyn FnMut(&str) -> Result<(Vec<u8>, Option<String>), String> + 'a;

/// Validates `input` at time `now`; `fetch` downloads attachments given by `path`.
pub fn validate(input: SendEmail, now: Timestamp, fetch: &mut Fetch<'_>) -> Result<Email, Invalid> {
    let from = Mailbox::parse(&input.from.ok_or(Invalid::Missing("from"))?).map_err(|e| field("from", &e))?;
    let to = mailboxes("to", input.to)?;
    if to.is_empty() {
        return Err(Invalid::Missing("to"));
    }
    let subject = input.subject.ok_or(Invalid::Missing("subject"))?;
    if subject.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(field("subject", "must not contain CR, LF or NUL"));
    }
    if subject.chars().count() > SUBJECT_MAX {
        return Err(field("subject", &format!("must be at most {SUBJECT_MAX} characters")));
    }
    let html = input.html.filter(|h| !h.is_empty());
    // `text: ""` beside an html body opts out of the text part derived from it, as
    // Resend's API documents; alone it is no body at all.
    let text = input.text.filter(|t| !t.is_empty() || html.is_some());
    if html.is_none() && text.is_none() {
        return Err(Invalid::Missing("html` or `text"));
    }
    let attachments = attachments(input.attachments.unwrap_or_default(), fetch)?;
    let size = html.as_ref().map_or(0, String::len)
        + text.as_ref().map_or(0, String::len)
        + attachments.iter().map(|a| a.content.len()).sum::<usize>();
    if size > CONTENT_MAX {
        return Err(Invalid::Field(format!(
            "The email's content is {size} bytes; at most {CONTENT_MAX} bytes (40 MB) of bodies and attachments are allowed"
        )));
    }
    Ok(Email {
        from,
        to,
        cc: mailboxes("cc", input.cc)?,
        bcc: mailboxes("bcc", input.bcc)?,
        reply_to: mailboxes("reply_to", input.reply_to)?,
        subject,
        html,
        text,
        headers: headers(input.headers.unwrap_or_default())?,
        attachments,
        tags: tags(input.tags.unwrap_or_default())?,
        scheduled_at: input
            .scheduled_at
            .map(|s| schedule::parse(&s, now))
            .transpose()
            .map_err(Invalid::Field)?
            .filter(|at| *at > now),
        template: None,
        topic_id: input
            .topic_id
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.trim().parse().map_err(|_| field("topic_id", "not a topic id")))
            .transpose()?,
        unsubscribe: false,
        broadcast_id: None,
    })
}

fn field(name: &str, message: &str) -> Invalid {
    Invalid::Field(format!("Invalid `{name}` field: {message}"))
}

fn mailboxes(name: &'static str, value: Option<OneOrMany>) -> Result<Vec<Mailbox>, Invalid> {
    let values = value.map(OneOrMany::into_vec).unwrap_or_default();
    if values.len() > RECIPIENTS_MAX {
        return Err(field(
            name,
            &format!("at most {RECIPIENTS_MAX} addresses are allowed, got {}", values.len()),
        ));
    }
    values
        .iter()
        .map(|v| Mailbox::parse(v).map_err(|e| field(name, &e)))
        .collect()
}

fn headers(input: std::collections::BTreeMap<String, serde_json::Value>) -> Result<Vec<(String, String)>, Invalid> {
    if input.len() > HEADERS_MAX {
        return Err(field("headers", &format!("at most {HEADERS_MAX} headers are allowed")));
    }
    input
        .into_iter()
        .map(|(name, value)| {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                return Err(field("headers", &format!("{name:?} is not a valid header name")));
            }
            if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(field(
                    "headers",
                    &format!("{name} is set by herald from the email's fields"),
                ));
            }
            let value = match value {
                serde_json::Value::String(text) => text,
                serde_json::Value::Number(number) => number.to_string(),
                serde_json::Value::Bool(flag) => flag.to_string(),
                _ => return Err(field("headers", &format!("the value of {name} must be a string"))),
            };
            if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
                return Err(field(
                    "headers",
                    &format!("the value of {name} must not contain CR, LF or NUL"),
                ));
            }
            if value.chars().count() > HEADER_VALUE_MAX {
                return Err(field(
                    "headers",
                    &format!("the value of {name} is longer than {HEADER_VALUE_MAX} characters"),
                ));
            }
            Ok((name, value))
        })
        .collect()
}

fn tags(input: Vec<super::input::TagInput>) -> Result<Vec<super::validate::Tag>, Invalid> {
    if input.len() > TAGS_MAX {
        return Err(field("tags", &format!("at most {TAGS_MAX} tags are allowed")));
    }
    let valid = |text: &str| {
        !text.is_empty()
            && text.len() <= TAG_MAX
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    input
        .into_iter()
        .map(|tag| {
            let name = tag.name.ok_or_else(|| field("tags", "every tag needs a `name`"))?;
            let value = tag.value.ok_or_else(|| field("tags", &format!("tag {name:?} needs a `value`")))?;
            if !valid(&name) || !valid(&value) {
                return Err(field(
                    "tags",
                    &format!("tag {name:?}={value:?}: names and values may only contain ASCII letters, numbers, underscores and dashes, at most {TAG_MAX} characters"),
                ));
            }
            Ok(Tag { name, value })
        })
        .collect()
}

fn attachments(input: Vec<AttachmentInput>, fetch: &mut Fetch<'_>) -> Result<Vec<Attachment>, Invalid> {
    if input.len() > ATTACHMENTS_MAX {
        return Err(Invalid::Attachment(format!(
            "at most {ATTACHMENTS_MAX} attachments are allowed"
        )));
    }
    let mut total = 0usize;
    input
        .into_iter()
        .enumerate()
        .map(|(index, attachment)| {
            let filename = attachment.filename.clone();
            let (content, served_type) = match (attachment.content, attachment.path.as_deref()) {
                (Some(content), _) => (
                    decode(content).map_err(|e| Invalid::Attachment(format!("attachments[{index}]: {e}")))?,
                    None,
                ),
                (None, Some(path)) => {
                    fetch(path).map_err(|e| Invalid::Attachment(format!("attachments[{index}]: {e}")))?
                }
                (None, None) => {
                    return Err(Invalid::Attachment(format!(
                        "attachments[{index}] needs `content` or `path`"
                    )));
                }
            };
            total += content.len();
            if total > CONTENT_MAX {
                return Err(Invalid::Field(format!(
                    "Attachments exceed {CONTENT_MAX} bytes (40 MB) in all"
                )));
            }
            let filename = filename
                .or_else(|| {
                    attachment
                        .path
                        .as_deref()
                        .and_then(|p| p.rsplit('/').next())
                        .map(str::to_owned)
                })
                .filter(|f| !f.is_empty())
                .unwrap_or_else(|| format!("attachment-{}", index + 1));
            if filename.chars().any(char::is_control) || filename.len() > 255 {
                return Err(Invalid::Attachment(format!("attachments[{index}]: invalid file name")));
            }
            let content_type = attachment.content_type.or(served_type).unwrap_or_else(|| {
                mime_guess::from_path(&filename)
                    .first_or_octet_stream()
                    .essence_str()
                    .to_owned()
            });
            if content_type.chars().any(|c| c.is_control() || c == ';') || !content_type.contains('/') {
                return Err(Invalid::Attachment(format!(
                    "attachments[{index}]: invalid content type {content_type:?}"
                )));
            }
            let content_id = attachment.content_id.map(|cid| cid.trim_matches(['<', '>']).to_owned());
            if content_id
                .as_ref()
                .is_some_and(|c| c.is_empty() || c.chars().any(|ch| ch.is_control() || ch.is_whitespace()))
            {
                return Err(Invalid::Attachment(format!("attachments[{index}]: invalid content_id")));
            }
            Ok(Attachment {
                filename,
                content_type,
                content_id,
                content,
            })
        })
        .collect()
}

fn decode(content: Content) -> Result<Vec<u8>, String> {
    match content {
        Content::Base64(text) => {
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            STANDARD
                .decode(compact.as_bytes())
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(compact.trim_end_matches('=')))
                .map_err(|e| format!("`content` is not valid base64 ({e})"))
        }
        Content::Bytes(bytes) => Ok(bytes),
        Content::Buffer { kind, data } if kind == "Buffer" => Ok(data),
        Content::Buffer { kind, .. } => Err(format!("`content` of type {kind:?} is not a Buffer")),
    }
}
