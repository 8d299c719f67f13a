//! API request logs as the HTTP adapter writes and shows them: every authenticated
//! request and its response ([`crate::logs`] keeps them for `[retention] request_logs`),
//! listed by `GET /logs`. Bodies are stored with secrets redacted
//! and capped in size.

use serde_json::{Value, json};

use super::format;
use crate::logs::RequestLog;

/// Bytes of a request or response body kept in a log at most.
pub const BODY_MAX: usize = 16 * 1024;

/// Fields whose values are secrets, replaced wherever they appear in a logged body.
const SECRET_FIELDS: &[&str] = &[
    "token",
    "password",
    "secret",
    "signing_secret",
    "api_key",
    "private_key",
    "authorization",
];

/// Fields whose values are bulky payloads (attachment content), replaced by their size.
const BULK_FIELDS: &[&str] = &["content"];

impl RequestLog {
    /// The list item.
    pub fn summary_json(&self) -> Value {
        json!({
            "id": self.id,
            "created_at": format::timestamp(self.created_at),
            "method": self.method,
            "endpoint": self.path,
            "response_status": self.status,
            "user_agent": self.user_agent,
            "api_key_id": self.api_key_id,
            "duration_ms": self.duration_ms,
        })
    }

    /// The full record (`GET /logs/{id}`).
    pub fn to_json(&self) -> Value {
        let mut value = self.summary_json();
        if let Value::Object(map) = &mut value {
            map.shift_insert(0, "object".into(), json!("log"));
            map.insert("query".into(), json!(self.query));
            map.insert("request_body".into(), body_json(self.request_body.as_deref()));
            map.insert("response_body".into(), body_json(self.response_body.as_deref()));
        }
        value
    }
}

/// A body as it is logged: JSON with secrets redacted and bulk replaced, or text; capped
/// at [`BODY_MAX`].
pub fn redact(body: &[u8]) -> Option<String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // Most bodies name no secret and carry no attachment: keep them as they are instead
    // of parsing and re-serialising every request's JSON. Only the first BODY_MAX bytes
    // can be logged, so only they need to be looked at: a field named after them has its
    // value after them too.
    if !mentions_sensitive_field(&body[..body.len().min(BODY_MAX)]) {
        return Some(cap(body));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            scrub(&mut value);
            Some(cap(value.to_string().as_bytes()))
        }
        Err(_) => Some(cap(body)),
    }
}

/// Whether `body` contains, anywhere, the quoted name of a field [`scrub`] rewrites.
/// Field names compare case-insensitively there, so this does too.
fn mentions_sensitive_field(body: &[u8]) -> bool {
    let lower = body.to_ascii_lowercase();
    SECRET_FIELDS.iter().chain(BULK_FIELDS).any(|field| {
        let quoted = format!("\"{field}\"");
        memchr::memmem::find(&lower, quoted.as_bytes()).is_some()
    })
}

fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                let key = key.to_ascii_lowercase();
                if SECRET_FIELDS.contains(&key.as_str()) && !field.is_null() {
                    *field = json!("<redacted>");
                } else if BULK_FIELDS.contains(&key.as_str()) && (field.is_string() || field.is_array()) {
                    let size = field.to_string().len();
                    *field = json!(format!("<{size} bytes omitted>"));
                } else {
                    scrub(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

/// A logged body as `GET /logs/{id}` answers it: the JSON that was sent, or `null`; a
/// body that was not JSON, or was cut at [`BODY_MAX`], as an object that says so
/// (`{"truncated": true, "size": <bytes in all>, "text": "<the kept part>"}`). Resend
/// answers objects here, and the Java SDK fails on a string.
pub fn body_json(logged: Option<&str>) -> Value {
    let Some(logged) = logged else {
        return Value::Null;
    };
    if let Ok(value) = serde_json::from_str::<Value>(logged) {
        return value;
    }
    match cut_marker(logged) {
        Some((kept, size)) => json!({ "truncated": true, "size": size, "text": kept }),
        None => json!({ "truncated": false, "text": logged }),
    }
}

/// The kept text and the full size of a body [`cap`] cut, or `None` when it was not cut.
fn cut_marker(logged: &str) -> Option<(&str, u64)> {
    let (kept, note) = logged.rsplit_once(TRUNCATED_PREFIX)?;
    let size = note.strip_suffix(TRUNCATED_SUFFIX)?.parse().ok()?;
    Some((kept, size))
}

/// What [`cap`] appends to a body it cut, around the body's full size in bytes.
const TRUNCATED_PREFIX: &str = "… (truncated, ";
const TRUNCATED_SUFFIX: &str = " bytes in all)";

/// `body` as text of at most [`BODY_MAX`] bytes and a note of its full length; only the
/// kept part is converted.
fn cap(body: &[u8]) -> String {
    if body.len() <= BODY_MAX {
        return String::from_utf8_lossy(body).into_owned();
    }
    let mut end = BODY_MAX;
    // Back off to the start of a UTF-8 sequence (continuation bytes are 0b10xx_xxxx).
    while end > BODY_MAX - 3 && body[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    let mut text = String::from_utf8_lossy(&body[..end]).into_owned();
    text.push_str(&format!("{TRUNCATED_PREFIX}{}{TRUNCATED_SUFFIX}", body.len()));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_bulk_is_omitted() {
        let body = br#"{"name":"k","token":"re_secret","nested":[{"signing_secret":"whsec_x"}],"attachments":[{"content":"aGVsbG8="}]}"#;
        let logged = redact(body).expect("logged");
        assert!(!logged.contains("re_secret") && !logged.contains("whsec_x"), "{logged}");
        assert!(
            logged.contains("<redacted>") && logged.contains("bytes omitted"),
            "{logged}"
        );
        assert!(logged.contains("\"name\":\"k\""));
        assert_eq!(redact(b"  "), None);
        assert_eq!(redact(b"not json").as_deref(), Some("not json"));
        let plain = br#"{"name":"k","to":"a@b.test"}"#;
        assert_eq!(
            redact(plain).as_deref(),
            Some(r#"{"name":"k","to":"a@b.test"}"#),
            "kept as sent"
        );
        let shouting = redact(br#"{"TOKEN":"re_x"}"#).expect("logged");
        assert!(!shouting.contains("re_x"), "{shouting}");
    }

    #[test]
    fn a_redacted_body_keeps_its_fields_in_the_order_they_were_sent() {
        let body = br#"{"zeta":1,"token":"re_secret","alpha":{"secret":"s","b":2,"a":1}}"#;
        assert_eq!(
            redact(body).as_deref(),
            Some(r#"{"zeta":1,"token":"<redacted>","alpha":{"secret":"<redacted>","b":2,"a":1}}"#)
        );
    }

    #[test]
    fn long_bodies_are_capped_on_a_character_boundary() {
        for prefix in ["", "a"] {
            // With "a" first, BODY_MAX falls inside an "é".
            let long = format!("{prefix}{}", "é".repeat(BODY_MAX));
            let logged = redact(long.as_bytes()).expect("logged");
            assert!(logged.len() < BODY_MAX + 64);
            assert!(logged.contains(&format!("truncated, {} bytes in all", long.len())));
            assert!(!logged.contains('\u{FFFD}'), "no broken character: {prefix:?}");
        }
    }

    #[test]
    fn logged_bodies_are_answered_as_json_and_cut_ones_say_so() {
        assert_eq!(body_json(None), Value::Null);
        let sent = br#"{"name":"k","token":"re_secret"}"#;
        assert_eq!(
            body_json(redact(sent).as_deref()),
            json!({ "name": "k", "token": "<redacted>" })
        );
        assert_eq!(
            body_json(Some("not json")),
            json!({ "truncated": false, "text": "not json" })
        );
        let long = format!(r#"{{"html":"{}"}}"#, "x".repeat(2 * BODY_MAX));
        let answered = body_json(redact(long.as_bytes()).as_deref());
        assert_eq!(answered["truncated"], true);
        assert_eq!(answered["size"], long.len());
        let kept = answered["text"].as_str().expect("text");
        assert_eq!(kept.len(), BODY_MAX);
        assert!(long.starts_with(kept));
    }

    #[test]
    fn a_secret_in_a_long_body_is_redacted_wherever_the_cap_falls() {
        let padding = "x".repeat(2 * BODY_MAX);
        let early = format!(r#"{{"password":"hunter2","html":"{padding}"}}"#);
        let logged = redact(early.as_bytes()).expect("logged");
        assert!(!logged.contains("hunter2"));
        let late = format!(r#"{{"html":"{padding}","password":"hunter2"}}"#);
        let logged = redact(late.as_bytes()).expect("logged");
        assert!(!logged.contains("hunter2") && logged.contains("truncated"));
    }
}
