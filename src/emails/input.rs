//! The JSON of `POST /emails` as clients send it. Every field is optional here so that
//! validation can say precisely which one is missing or wrong.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One email to send.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SendEmail {
    /// Sender: `addr` or `Name <addr>`.
    pub from: Option<String>,
    /// Recipients.
    pub to: Option<OneOrMany>,
    /// Carbon copies.
    pub cc: Option<OneOrMany>,
    /// Blind carbon copies.
    pub bcc: Option<OneOrMany>,
    /// Reply-To addresses.
    pub reply_to: Option<OneOrMany>,
    /// Subject.
    pub subject: Option<String>,
    /// HTML body.
    pub html: Option<String>,
    /// Plain-text body.
    pub text: Option<String>,
    /// Custom headers: name to string value.
    pub headers: Option<BTreeMap<String, Value>>,
    /// Attachments.
    pub attachments: Option<Vec<AttachmentInput>>,
    /// Tags.
    pub tags: Option<Vec<TagInput>>,
    /// When to send.
    pub scheduled_at: Option<String>,
    /// A stored template to render instead of `html` and `text`.
    pub template: Option<TemplateInput>,
    /// The topic the email is sent on: recipients opted out of it are not sent to, and
    /// the email carries a link to unsubscribe from it.
    pub topic_id: Option<String>,
}

/// `template` on a send: the template's id or alias, and the values of its variables.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TemplateInput {
    /// The template's id or alias.
    pub id: Option<String>,
    /// Variable values: strings or numbers.
    pub variables: Option<serde_json::Map<String, Value>>,
}

/// A string or an array of strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One value.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The values as a list.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

/// An attachment: inline `content`, or a `path` (URL) to fetch.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AttachmentInput {
    /// The bytes.
    pub content: Option<Content>,
    /// An http(s) URL to fetch the bytes from.
    pub path: Option<String>,
    /// File name. `false`, which the Node SDK's types allow, counts as absent.
    #[serde(default, deserialize_with = "string_or_false")]
    pub filename: Option<String>,
    /// MIME type; guessed from the file name when absent.
    pub content_type: Option<String>,
    /// Content-ID: makes the attachment inline, referenced as `cid:<id>`. Older Python
    /// SDKs name it `inline_content_id`.
    #[serde(alias = "inline_content_id")]
    pub content_id: Option<String>,
}

/// A string, or `null` or `false` for none.
fn string_or_false<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum StringOrFalse {
        Text(String),
        Flag(bool),
    }
    match Option::<StringOrFalse>::deserialize(deserializer)? {
        None | Some(StringOrFalse::Flag(false)) => Ok(None),
        Some(StringOrFalse::Text(text)) => Ok(Some(text)),
        Some(StringOrFalse::Flag(true)) => Err(serde::de::Error::custom("expected a file name or false, got true")),
    }
}

/// Attachment bytes in the encodings SDKs send: base64 text (Node), an array of byte
/// values (Python), or a serialised Node `Buffer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Base64 text.
    Base64(String),
    /// Byte values.
    Bytes(Vec<u8>),
    /// `{"type": "Buffer", "data": [...]}`.
    Buffer {
        /// Always `Buffer`.
        #[serde(rename = "type")]
        kind: String,
        /// Byte values.
        data: Vec<u8>,
    },
}

/// A tag.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TagInput {
    /// Name.
    pub name: Option<String>,
    /// Value.
    pub value: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attachment_filename_of_false_is_no_filename() {
        let parse = |json: &str| serde_json::from_str::<AttachmentInput>(json);
        let absent = parse(r#"{"content":"aGk=","filename":false}"#).expect("false is allowed");
        assert_eq!(absent.filename, None);
        let named = parse(r#"{"content":"aGk=","filename":"a.txt"}"#).expect("a name");
        assert_eq!(named.filename.as_deref(), Some("a.txt"));
        assert_eq!(parse(r#"{"filename":null}"#).expect("null").filename, None);
        assert!(parse(r#"{"filename":true}"#).is_err(), "true names no file");
    }
}
