//! Messages that arrive whole (SMTP submission): checked with mail-parser, completed with
//! the headers herald adds, and recorded like any email from the API.

use std::borrow::Cow;
use std::collections::BTreeMap;

use herald_queue::NewMessage;

use crate::storage::Change;
use mail_parser::{Address, MessageParser, MimeHeaders};

use super::address::Mailbox;
use super::content::{Reading, bodies};
use super::mime;
use super::record::{EmailRecord, Source};
use super::state::EmailState;
use super::submit::{Prepared, SendError, Sender, authorize_domain, stage_new};
use crate::events::EventKind;
use crate::services::Services;

/// Why a submitted message is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// Not a message: unparseable, or no `From:`.
    #[error("{0}")]
    NotAMessage(String),
    /// Sending refused (domain, storage).
    #[error(transparent)]
    Send(#[from] SendError),
}

/// Prepares a message submitted whole by `sender`, with the envelope `from` and
/// `recipients`, received from `client` over `protocol`.
pub fn prepare(
    state: &Services,
    sender: &Sender,
    from: &str,
    recipients: &[String],
    raw: &[u8],
    received: &str,
) -> Result<Prepared, RawError> {
    check_headers(raw).map_err(RawError::NotAMessage)?;
    // The header section of what the client sent (the headers herald adds below are
    // known); the whole message is parsed only when its bodies are needed here.
    let parser = MessageParser::default();
    let not_a_message = || RawError::NotAMessage("the data is not a message (no headers)".to_owned());
    let parsed = parser.parse_headers(raw).ok_or_else(not_a_message)?;
    let header_from = first_address(parsed.from())
        .ok_or_else(|| RawError::NotAMessage("the message has no From: header".to_owned()))?;
    let header_from = Mailbox::parse(&header_from).map_err(|e| RawError::NotAMessage(format!("From: {e}")))?;
    let envelope_from = Mailbox::parse(from).map_err(|e| RawError::NotAMessage(format!("MAIL FROM: {e}")))?;
    let domain = authorize_domain(state, sender, header_from.domain())?;
    if envelope_from.domain() != header_from.domain() {
        authorize_domain(state, sender, envelope_from.domain())?;
    }
    let now = state.now();
    let id = state.next_id();
    let hostname = &state.config().server.hostname;
    // The email's id in the trace, as MTAs put their queue id there: a message found in a
    // mailbox leads straight to its record and events.
    let mut added = format!("Received: {received} id {id};\r\n\t{}\r\n", rfc2822(now));
    if parsed.message_id().is_none() {
        added.push_str(&format!("Message-ID: <{}>\r\n", mime::message_id(id, hostname)));
    }
    if parsed.date().is_none() {
        added.push_str(&format!("Date: {}\r\n", rfc2822(now)));
    }
    // Bodies sent as they came, in a message that holds nothing else, are read back
    // from the spooled message, kept for that. Rewritten ones (links and the open pixel
    // are rewritten in what is sent) differ from what the record shows, and a message with
    // attachments would keep them too: the record keeps its own copy of those bodies.
    let plain = bodies_only(&parsed);
    // Bodies stay in the node's message only where the records are the node's too.
    let in_spool = state.emails().content_in_spool();
    let whole = if plain && in_spool && !crate::tracking::rewrites_message(state, &domain) {
        None
    } else {
        Some(parser.parse(raw).ok_or_else(not_a_message)?)
    };
    let tracked = whole
        .as_ref()
        .and_then(|whole| crate::tracking::apply_to_message(state, &domain, id, raw, whole));
    let content_in_message = plain && in_spool && tracked.is_none();
    // The idempotency key is for herald, not for the recipients.
    let raw = without_field(tracked.as_deref().unwrap_or(raw), IDEMPOTENCY_HEADER);
    let mut message = Vec::with_capacity(added.len() + raw.len());
    message.extend_from_slice(added.as_bytes());
    message.extend_from_slice(&raw);
    let list = |address: Option<&Address<'_>>| -> Vec<String> {
        address
            .map(|a| a.iter().filter_map(|addr| addr.address().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let to = list(parsed.to());
    let cc = list(parsed.cc());
    let bcc = recipients
        .iter()
        .filter(|r| !to.contains(r) && !cc.contains(r))
        .cloned()
        .collect();
    // The bodies the record keeps: none when the kept message holds them.
    let kept = whole
        .as_ref()
        .filter(|_| !content_in_message)
        .map_or((None, None), |whole| bodies(whole, Reading::default()));
    let record = EmailRecord {
        id,
        team_id: sender.team_id,
        api_key_id: sender.api_key_id,
        from: header_from.display(),
        to,
        cc,
        bcc,
        reply_to: list(parsed.reply_to()),
        subject: parsed.subject().unwrap_or_default().to_owned(),
        html: kept.0.map(str::to_owned),
        text: kept.1.map(str::to_owned),
        tags: Vec::new(),
        created_at: now,
        scheduled_at: None,
        message_id: parsed
            .message_id()
            .map_or_else(|| format!("<{}>", mime::message_id(id, hostname)), |m| format!("<{m}>")),
        last_event: EmailState::Sent,
        size: message.len() as u64,
        source: Source::Smtp,
        template: None,
        topic_id: None,
        attempts: Vec::new(),
        content_expired: false,
        content_in_message,
        text_derived: false,
        line_feeds: false,
        broadcast_id: None,
        request_log_id: None,
    };
    let mut records = Change::new();
    stage_new(&mut records, state, &record, now).map_err(SendError::from)?;
    crate::services::outbox::push(&mut records, state, sender.team_id, EventKind::EmailSent, || {
        record.event_data(now)
    })
    .map_err(SendError::from)?;
    Ok(Prepared {
        id,
        message: NewMessage {
            id,
            team: sender.team_id.to_string(),
            sender: format!("{id}@{}", domain.return_path_host()),
            recipients: recipients.to_vec(),
            metadata: BTreeMap::from([("domain_id".to_owned(), domain.id.to_string())]),
            not_before: None,
            raw: message,
            retain: content_in_message,
        },
        records,
    })
}

/// Whether a message's top-level type says it holds only its bodies: text, or
/// alternatives (`multipart/alternative`), nothing attached.
fn bodies_only(message: &mail_parser::Message<'_>) -> bool {
    message.content_type().is_none_or(|kind| {
        kind.ctype().eq_ignore_ascii_case("text")
            || (kind.ctype().eq_ignore_ascii_case("multipart")
                && kind
                    .subtype()
                    .is_some_and(|sub| sub.eq_ignore_ascii_case("alternative")))
    })
}

/// The header that makes an SMTP submission idempotent, as the API's `Idempotency-Key`.
pub const IDEMPOTENCY_HEADER: &str = "Resend-Idempotency-Key";

/// `raw` without its header fields named `name` (in any case), folded lines included.
/// The body is not looked at; nothing is copied when there is no such field.
fn without_field<'a>(raw: &'a [u8], name: &str) -> Cow<'a, [u8]> {
    let mut kept: Option<Vec<u8>> = None;
    let mut dropping = false;
    let mut start = 0;
    while start < raw.len() {
        let end = memchr::memchr(b'\n', &raw[start..]).map_or(raw.len(), |at| start + at + 1);
        let line = &raw[start..end];
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            // The blank line before the body: the rest goes as it is.
            if let Some(kept) = kept.as_mut() {
                kept.extend_from_slice(&raw[start..]);
            }
            break;
        }
        if !matches!(text[0], b' ' | b'\t') {
            dropping = text.get(name.len()) == Some(&b':') && text[..name.len()].eq_ignore_ascii_case(name.as_bytes());
            if dropping && kept.is_none() {
                kept = Some(raw[..start].to_vec());
            }
        }
        if let Some(kept) = kept.as_mut()
            && !dropping
        {
            kept.extend_from_slice(line);
        }
        start = end;
    }
    kept.map_or(Cow::Borrowed(raw), Cow::Owned)
}

/// The longest header line accepted, CRLF excluded (RFC 5322 2.1.1).
pub const LINE_MAX: usize = 998;

/// Refuses a header section that is not RFC 5322: every line before the first empty one
/// is a `Name: value` field (printable ASCII name, no spaces) or a folded continuation.
/// mail-parser reads nearly anything; a message that other software would read
/// differently is refused here instead of being signed and sent.
///
/// Anywhere in the message, a NUL is refused: 8BITMIME allows any octet but NUL, and
/// herald does not offer BINARYMIME. A header line longer than [`LINE_MAX`] is refused
/// too (RFC 5322 2.1.1): it would be signed, then rewrapped or refused further on.
pub fn check_headers(raw: &[u8]) -> Result<(), String> {
    if raw.is_empty() {
        return Err("the message is empty".to_owned());
    }
    if memchr::memchr(0, raw).is_some() {
        return Err("the message contains a NUL byte, which SMTP does not carry".to_owned());
    }
    for (index, line) in raw.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(());
        }
        if line.len() > LINE_MAX {
            return Err(format!(
                "header line {} of the message is longer than {LINE_MAX} characters; fold it",
                index + 1
            ));
        }
        if index > 0 && (line[0] == b' ' || line[0] == b'\t') {
            continue;
        }
        let name = line.split(|b| *b == b':').next().unwrap_or_default();
        let valid = name.len() < line.len() && !name.is_empty() && name.iter().all(|b| (33..=126).contains(b));
        if !valid {
            return Err(format!("malformed header on line {} of the message", index + 1));
        }
    }
    Ok(())
}

fn first_address(address: Option<&Address<'_>>) -> Option<String> {
    let first = address?.first()?;
    let email = first.address()?;
    Some(match first.name() {
        Some(name) => format!("{name} <{email}>"),
        None => email.to_owned(),
    })
}

fn rfc2822(at: herald_queue::Timestamp) -> String {
    let millis = i64::try_from(at.as_millis()).unwrap_or(i64::MAX);
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc2822()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idempotency_header_is_taken_out_folded_lines_and_all_and_nothing_else() {
        let raw = b"From: a@b.test\r\nresend-IDEMPOTENCY-key: order-7\r\n\tfolded\r\nSubject: hi\r\n\r\nResend-Idempotency-Key: in the body\r\n";
        assert_eq!(
            without_field(raw, IDEMPOTENCY_HEADER).as_ref(),
            b"From: a@b.test\r\nSubject: hi\r\n\r\nResend-Idempotency-Key: in the body\r\n"
        );
        let last = b"From: a@b.test\nResend-Idempotency-Key: k";
        assert_eq!(without_field(last, IDEMPOTENCY_HEADER).as_ref(), b"From: a@b.test\n");
        let similar = b"Resend-Idempotency-Keys: no\r\nX-Resend-Idempotency-Key: no\r\n\r\n";
        assert!(matches!(without_field(similar, IDEMPOTENCY_HEADER), Cow::Borrowed(_)));
    }

    #[test]
    fn header_sections_must_be_fields_or_continuations() {
        assert!(check_headers(b"From: a@b.test\r\nSubject: x\r\n  folded\r\n\r\nbody: not a header\r\n").is_ok());
        assert!(check_headers(b"From: a@b.test\r\n").is_ok(), "headers only");
        assert!(check_headers(b"").is_err());
        assert!(check_headers(b"just some text\r\n\r\n").is_err());
        assert!(check_headers(b" leading continuation: x\r\n").is_err());
        assert!(check_headers(b"From: a@b.test\r\nBad Name: x\r\n").is_err());
        assert!(check_headers(b"From: a@b.test\r\n: empty name\r\n").is_err());
        assert!(check_headers(b"From: a@b.test\r\n\r\nbody\0with a NUL\r\n").is_err());
        let long = format!("From: a@b.test\r\nSubject: {}\r\n\r\n", "x".repeat(LINE_MAX));
        assert!(check_headers(long.as_bytes()).is_err());
        let longest = format!(
            "From: a@b.test\r\nX: {}\r\n\r\n{}\r\n",
            "x".repeat(LINE_MAX - 3),
            "y".repeat(5000)
        );
        assert!(
            check_headers(longest.as_bytes()).is_ok(),
            "998 is allowed; body lines are not checked"
        );
    }
}
