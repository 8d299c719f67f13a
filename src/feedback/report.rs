//! Parses what arrives at a return-path address: delivery status notifications (RFC 3464
//! DSNs, including RFC 6533 `message/global-delivery-status`) and complaint reports (RFC 5965
//! ARF), from the raw message. Anything else (auto-replies, out-of-office notes, junk) is
//! [`Report::Other`].
//!
//! mail-parser splits the MIME structure; the machine-readable parts (`message/delivery-status`,
//! `message/feedback-report`) are header blocks separated by blank lines, which this module
//! reads itself: mail-parser hands them over as opaque bodies. Choices made:
//!
//! - Detection trusts the parts more than the label. A `message/delivery-status` part makes a
//!   DSN and a `message/feedback-report` part an ARF even without `multipart/report` or its
//!   `report-type` (older Yahoo and Outlook shapes); `report-type` only decides between them
//!   when both are present, and, when neither is, names the kind of the report's second part
//!   (the machine-readable one, by RFC 6522) whatever its label.
//! - Lenient on shape, strict on values: a missing blank line or an unknown field is tolerated,
//!   but a recipient needs an address and a known `Action`, and a `Status` that is not an
//!   RFC 3463 code (`2|4|5 . 1-3 digits . 1-3 digits`) is replaced by the action's generic one.
//! - Bounded, since anyone can send anything to a return path: inputs over 10 MiB are not
//!   parsed, at most 1,000 recipients are read, values keep at most 1,000 characters (folded
//!   lines stop growing well before that would matter) and a block keeps at most 100 fields.
//! - The returned original (`message/rfc822` or `text/rfc822-headers`) gives
//!   `original_message_id`, to match a report to its email when the VERP address is unusable.
//!
//! Pure and self-contained (std and mail-parser only) so that the fuzz target can compile it
//! in by path; [`parse`] never panics.

use mail_parser::{HeaderName, Message, MessageParser, MessagePart, MimeHeaders, PartType};

/// Larger inputs are [`Report::Other`] without being parsed.
const MAX_INPUT_BYTES: usize = 10 * 1024 * 1024;

/// Recipients read from one DSN; the rest are ignored.
const MAX_RECIPIENTS: usize = 1_000;

/// Longest value kept, in characters.
const MAX_VALUE_CHARS: usize = 1_000;

/// A folded value stops growing at this many bytes: it then holds at least
/// [`MAX_VALUE_CHARS`] characters, which is all that is kept.
const MAX_FIELD_BYTES: usize = 4 * MAX_VALUE_CHARS;

/// Fields kept per header block; real ones have about ten.
const MAX_FIELDS: usize = 100;

/// Types of the part returning the original message, or its headers.
const ORIGINAL_TYPES: &[(&str, &str)] = &[
    ("message", "rfc822"),
    ("message", "global"),
    ("text", "rfc822-headers"),
    ("message", "global-headers"),
];

/// What a message sent to a return-path address says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A delivery status notification (RFC 3464, multipart/report; report-type=delivery-status).
    Delivery(Dsn),
    /// An abuse / feedback report (RFC 5965 ARF, multipart/report; report-type=feedback-report).
    Feedback(Arf),
    /// Anything else: auto-replies, out-of-office, junk.
    Other,
}

/// A delivery status notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dsn {
    /// The per-recipient reports, in order (at most 1,000); empty when the status part has
    /// none that is usable.
    pub recipients: Vec<DsnRecipient>,
    /// Message-ID (without angle brackets) of the returned original message or its headers.
    pub original_message_id: Option<String>,
    /// `Original-Envelope-Id`: the ENVID given when the message was sent.
    pub envelope_id: Option<String>,
}

/// What a DSN says about one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsnRecipient {
    /// The address from `Final-Recipient` (or `Original-Recipient`), without its type prefix.
    pub recipient: String,
    /// What the reporting MTA did.
    pub action: Action,
    /// The RFC 3463 status code, e.g. `5.1.1`; derived from the action when missing or invalid.
    pub status: String,
    /// `Diagnostic-Code` without its type prefix (`smtp;`), unfolded.
    pub diagnostic: Option<String>,
    /// `Remote-MTA` without its type prefix (`dns;`).
    pub remote_mta: Option<String>,
}

/// The `Action` of a DSN recipient (RFC 3464 section 2.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Not delivered and no more attempts will be made.
    Failed,
    /// Not delivered yet; attempts continue.
    Delayed,
    /// Delivered to the recipient's mailbox.
    Delivered,
    /// Handed to a system that does not send DSNs.
    Relayed,
    /// Delivered and forwarded on to several addresses.
    Expanded,
}

/// A complaint (feedback) report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arf {
    /// `Feedback-Type`, lowercase, e.g. `abuse`; `abuse` when the report omits it.
    pub feedback_type: String,
    /// `Original-Rcpt-To`, without angle brackets: who complained.
    pub original_rcpt_to: Option<String>,
    /// `Original-Mail-From`, without angle brackets: the return path the email was sent with.
    pub original_mail_from: Option<String>,
    /// `User-Agent` of the reporting system.
    pub user_agent: Option<String>,
    /// `Arrival-Date` of the original email, as written.
    pub arrival_date: Option<String>,
    /// Message-ID (without angle brackets) of the enclosed original message or its headers.
    pub original_message_id: Option<String>,
}

impl Dsn {
    /// The recipients whose delivery failed for good: action `failed` with a 5.x.x status.
    pub fn permanent_failures(&self) -> impl Iterator<Item = &DsnRecipient> {
        self.recipients.iter().filter(|recipient| recipient.is_permanent())
    }

    /// Whether a failed recipient's status class is permanent (5.x.x).
    pub fn has_permanent_failure(&self) -> bool {
        self.permanent_failures().next().is_some()
    }
}

impl DsnRecipient {
    /// Whether delivery failed for good: action `failed` with a 5.x.x status.
    pub fn is_permanent(&self) -> bool {
        self.action == Action::Failed && self.status.starts_with('5')
    }

    /// Whether delivery failed for now: action `delayed`, or `failed` with a 4.x.x status
    /// (typically a sender that gave up retrying).
    pub fn is_transient(&self) -> bool {
        self.action == Action::Delayed || (self.action == Action::Failed && self.status.starts_with('4'))
    }
}

impl Action {
    /// The action named by an `Action` value (case-insensitive; a trailing comment is ignored).
    fn parse(value: &str) -> Option<Self> {
        let word = value
            .split(|c: char| c.is_whitespace() || c == '(' || c == ';')
            .next()?;
        match word.to_ascii_lowercase().as_str() {
            "failed" => Some(Self::Failed),
            "delayed" => Some(Self::Delayed),
            "delivered" => Some(Self::Delivered),
            "relayed" => Some(Self::Relayed),
            "expanded" => Some(Self::Expanded),
            _ => None,
        }
    }

    /// The generic status of this action, for a recipient without a valid `Status`.
    fn default_status(self) -> &'static str {
        match self {
            Self::Failed => "5.0.0",
            Self::Delayed => "4.0.0",
            Self::Delivered | Self::Relayed | Self::Expanded => "2.0.0",
        }
    }
}

/// Parses `raw` (a whole message as received, headers and body). Never panics on any input.
pub fn parse(raw: &[u8]) -> Report {
    if raw.len() > MAX_INPUT_BYTES {
        return Report::Other;
    }
    let Some(message) = MessageParser::new().parse(raw) else {
        return Report::Other;
    };
    let Some((kind, part)) = report_part(&message) else {
        return Report::Other;
    };
    let text = String::from_utf8_lossy(part_bytes(&message, part));
    let original_message_id = returned_message_id(&message);
    match kind {
        Kind::Delivery => Report::Delivery(parse_dsn(&text, original_message_id)),
        Kind::Feedback => Report::Feedback(parse_arf(&text, original_message_id)),
    }
}

/// For the fuzz target: parse anything, never panic, and keep the bounds (asserted, so that
/// the fuzzer reports a list or a folded value that escaped its bound).
#[doc(hidden)]
pub fn fuzz(data: &[u8]) {
    let Report::Delivery(dsn) = parse(data) else {
        return;
    };
    assert!(dsn.recipients.len() <= MAX_RECIPIENTS, "too many recipients");
    for recipient in &dsn.recipients {
        assert!(status_code(&recipient.status).is_some(), "invalid status");
        let diagnostic = recipient.diagnostic.as_deref().unwrap_or_default();
        assert!(diagnostic.chars().count() <= MAX_VALUE_CHARS, "unbounded diagnostic");
    }
}

/// Which kind of report a machine-readable part holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Delivery,
    Feedback,
}

impl Kind {
    /// The `message/` subtypes of this kind's machine-readable part.
    fn subtypes(self) -> &'static [&'static str] {
        match self {
            Self::Delivery => &["delivery-status", "global-delivery-status"],
            Self::Feedback => &["feedback-report"],
        }
    }
}

/// The machine-readable part of a report, and its kind: see the module doc for the order.
fn report_part<'a>(message: &'a Message<'a>) -> Option<(Kind, &'a MessagePart<'a>)> {
    let declared = match report_type(message).as_deref() {
        Some("delivery-status" | "global-delivery-status") => Some(Kind::Delivery),
        Some("feedback-report") => Some(Kind::Feedback),
        _ => None,
    };
    let typed = |kind: Kind| find_part(message, kind.subtypes()).map(|part| (kind, part));
    let (first, second) = match declared {
        Some(Kind::Feedback) => (Kind::Feedback, Kind::Delivery),
        _ => (Kind::Delivery, Kind::Feedback),
    };
    typed(first)
        .or_else(|| typed(second))
        .or_else(|| Some((declared?, second_subpart(message)?)))
}

/// The lowercase `report-type` of a top-level `multipart/report`.
fn report_type(message: &Message<'_>) -> Option<String> {
    let root = message.parts.first()?;
    if !root.is_content_type("multipart", "report") {
        return None;
    }
    let report_type = root.content_type()?.attribute("report-type")?;
    Some(report_type.trim().to_ascii_lowercase())
}

/// The first part (outside any enclosed message) of type `message/` one of `subtypes`.
fn find_part<'a>(message: &'a Message<'a>, subtypes: &[&str]) -> Option<&'a MessagePart<'a>> {
    message
        .parts
        .iter()
        .find(|part| subtypes.iter().any(|subtype| part.is_content_type("message", subtype)))
}

/// The second part of the top-level `multipart/report`, if it is a leaf.
fn second_subpart<'a>(message: &'a Message<'a>) -> Option<&'a MessagePart<'a>> {
    let id = *message.parts.first()?.sub_parts()?.get(1)?;
    let part = message.parts.get(usize::try_from(id).ok()?)?;
    (!part.is_multipart() && !part.is_message()).then_some(part)
}

/// The body of `part`: decoded when mail-parser decoded it, else the raw bytes.
fn part_bytes<'a>(message: &'a Message<'a>, part: &'a MessagePart<'a>) -> &'a [u8] {
    match &part.body {
        PartType::Text(text) | PartType::Html(text) => text.as_bytes(),
        PartType::Binary(bytes) | PartType::InlineBinary(bytes) => bytes.as_ref(),
        PartType::Message(_) | PartType::Multipart(_) => {
            let range = part.offset_body as usize..part.offset_end as usize;
            message.raw_message.get(range).unwrap_or_default()
        }
    }
}

/// The Message-ID of the original that a report returns, whole or as headers.
fn returned_message_id(message: &Message<'_>) -> Option<String> {
    // The first part is the report's own root: its Message-ID is the report's.
    message.parts.iter().skip(1).find_map(|part| match &part.body {
        PartType::Message(original) => {
            let root = original.parts.first()?;
            let header = root.headers.iter().find(|h| h.name == HeaderName::MessageId)?;
            message_id(header.value.as_text_list()?.first()?)
        }
        _ if ORIGINAL_TYPES
            .iter()
            .any(|(ctype, sub)| part.is_content_type(ctype, sub)) =>
        {
            let text = String::from_utf8_lossy(part_bytes(message, part));
            let headers = Blocks::new(&text).next()?;
            message_id(lookup(&headers, "Message-ID")?)
        }
        _ => None,
    })
}

/// Reads a delivery-status body: per-message fields, then a block per recipient.
fn parse_dsn(text: &str, original_message_id: Option<String>) -> Dsn {
    let mut blocks = Blocks::new(text);
    let per_message = blocks.next().unwrap_or_default();
    let envelope_id = lookup(&per_message, "Original-Envelope-Id").and_then(owned);
    // The per-message block is read for recipients too: a status part without its blank
    // line has them all in one block (a well-formed one has no recipient there).
    let recipients = std::iter::once(per_message)
        .chain(blocks)
        .filter_map(|block| recipient(&block))
        .take(MAX_RECIPIENTS)
        .collect();
    Dsn {
        recipients,
        original_message_id,
        envelope_id,
    }
}

/// One recipient's report, if the block names an address and a known action.
fn recipient(block: &[Field<'_>]) -> Option<DsnRecipient> {
    let recipient = ["Final-Recipient", "Original-Recipient"]
        .into_iter()
        .find_map(|name| lookup(block, name).and_then(|found| owned(address(strip_type(found)))))?;
    let action = Action::parse(lookup(block, "Action")?)?;
    let status = lookup(block, "Status").and_then(status_code);
    let status = status.unwrap_or(action.default_status()).to_owned();
    Some(DsnRecipient {
        recipient,
        action,
        status,
        diagnostic: lookup(block, "Diagnostic-Code").map(strip_type).and_then(owned),
        remote_mta: lookup(block, "Remote-MTA").map(strip_type).and_then(owned),
    })
}

/// Reads a feedback-report body: one block of fields.
fn parse_arf(text: &str, original_message_id: Option<String>) -> Arf {
    let fields = Blocks::new(text).next().unwrap_or_default();
    let get = |name: &str| lookup(&fields, name).and_then(owned);
    Arf {
        feedback_type: get("Feedback-Type").map_or_else(|| "abuse".to_owned(), |kind| kind.to_ascii_lowercase()),
        original_rcpt_to: lookup(&fields, "Original-Rcpt-To").map(address).and_then(owned),
        original_mail_from: lookup(&fields, "Original-Mail-From").map(address).and_then(owned),
        user_agent: get("User-Agent"),
        arrival_date: get("Arrival-Date"),
        original_message_id,
    }
}

/// The first token of a `Status` value, if it is an RFC 3463 code.
fn status_code(value: &str) -> Option<&str> {
    let code = value.split_whitespace().next()?;
    let mut parts = code.split('.');
    let (class, subject, detail) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |part: &str| (1..=3).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
    let valid = matches!(class, "2" | "4" | "5") && digits(subject) && digits(detail) && parts.next().is_none();
    valid.then_some(code)
}

/// `value` without a leading type token (`rfc822;`, `dns;`, `smtp;`, `X-Postfix;`...).
fn strip_type(value: &str) -> &str {
    let Some((kind, rest)) = value.split_once(';') else {
        return value.trim();
    };
    let kind = kind.trim();
    let is_token = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
    let is_type = !kind.is_empty() && kind.len() <= 32 && kind.bytes().all(is_token);
    if is_type { rest.trim() } else { value.trim() }
}

/// An address without surrounding angle brackets.
fn address(value: &str) -> &str {
    let value = value.trim();
    let inner = value.strip_prefix('<').and_then(|inner| inner.strip_suffix('>'));
    inner.unwrap_or(value).trim()
}

/// The id inside the first angle brackets of a Message-ID value (the whole value if none).
fn message_id(value: &str) -> Option<String> {
    let id = match value.split_once('<') {
        Some((_, rest)) => rest.split_once('>').map_or(rest, |(id, _)| id),
        None => value,
    };
    owned(id)
}

/// `value` trimmed and cut to [`MAX_VALUE_CHARS`], if anything is left.
fn owned(value: &str) -> Option<String> {
    let value = truncate(value.trim()).trim_end();
    (!value.is_empty()).then(|| value.to_owned())
}

/// The first [`MAX_VALUE_CHARS`] characters of `value`.
fn truncate(value: &str) -> &str {
    let end = value.char_indices().nth(MAX_VALUE_CHARS);
    end.and_then(|(end, _)| value.get(..end)).unwrap_or(value)
}

/// The first non-empty value of the field `name` (case-insensitive) in `block`.
fn lookup<'b>(block: &'b [Field<'_>], name: &str) -> Option<&'b str> {
    let field = block
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name) && !f.value.is_empty())?;
    Some(field.value.as_str())
}

/// A field of a header block: its name as written, its value unfolded (continuation lines
/// joined with one space) and trimmed.
struct Field<'a> {
    name: &'a str,
    value: String,
}

impl<'a> Field<'a> {
    /// The field that `line` starts, if it is `name: value`.
    fn parse(line: &'a str) -> Option<Self> {
        let (name, value) = line.split_once(':')?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let mut field = Self {
            name,
            value: String::new(),
        };
        field.unfold(value);
        Some(field)
    }

    /// Appends a continuation line, unless the value is already long enough.
    fn unfold(&mut self, more: &str) {
        let more = truncate(more.trim());
        if more.is_empty() || self.value.len() >= MAX_FIELD_BYTES {
            return;
        }
        if !self.value.is_empty() {
            self.value.push(' ');
        }
        self.value.push_str(more);
    }
}

/// The header blocks of a text: fields up to each blank line (or whitespace-only line).
/// Lines end with LF or CRLF; lines that start with a space or tab continue a field.
struct Blocks<'a> {
    lines: std::str::Lines<'a>,
}

impl<'a> Blocks<'a> {
    fn new(text: &'a str) -> Self {
        Self { lines: text.lines() }
    }
}

impl<'a> Iterator for Blocks<'a> {
    type Item = Vec<Field<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut block: Vec<Field<'a>> = Vec::new();
        // Whether the last field line was kept, so that its continuations are too.
        let mut continuing = false;
        for line in self.lines.by_ref() {
            if line.trim().is_empty() {
                if block.is_empty() {
                    continue;
                }
                return Some(block);
            }
            if line.starts_with([' ', '\t']) {
                if continuing && let Some(field) = block.last_mut() {
                    field.unfold(line);
                }
            } else {
                let field = Field::parse(line).filter(|_| block.len() < MAX_FIELDS);
                continuing = field.is_some();
                block.extend(field);
            }
        }
        (!block.is_empty()).then_some(block)
    }
}

#[cfg(test)]
mod tests {
    use super::Action::{Delayed, Delivered, Failed};
    use super::*;

    // The samples are the fuzz seeds (CRLF, except `postfix-lf-dsn`): one copy of each shape.
    const GMAIL: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/gmail-dsn");
    const OUTLOOK: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/outlook-dsn");
    const YAHOO: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/yahoo-delayed");
    const ARF: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/arf-abuse");
    const OUT_OF_OFFICE: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/out-of-office");
    const MALFORMED: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/malformed-status");
    const POSTFIX_LF: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/postfix-lf-dsn");
    const GLOBAL: &[u8] = include_bytes!("../../fuzz/corpus/feedback_report/global-dsn");

    /// A recipient; `extra` is the diagnostic and the remote MTA.
    fn rcpt(to: &str, action: Action, status: &str, extra: [Option<&str>; 2]) -> DsnRecipient {
        let [diagnostic, remote_mta] = extra.map(|value| value.map(str::to_owned));
        let (recipient, status) = (to.to_owned(), status.to_owned());
        DsnRecipient {
            recipient,
            action,
            status,
            diagnostic,
            remote_mta,
        }
    }

    /// A DSN; `ids` are the original Message-ID and the envelope id.
    fn delivery(recipients: Vec<DsnRecipient>, ids: [Option<&str>; 2]) -> Report {
        let [original_message_id, envelope_id] = ids.map(|value| value.map(str::to_owned));
        Report::Delivery(Dsn {
            recipients,
            original_message_id,
            envelope_id,
        })
    }

    const DSN: &str = "multipart/report; report-type=delivery-status";

    /// A minimal report around one machine-readable part, with CRLF line endings.
    fn report(content_type: &str, part_type: &str, body: &str) -> Vec<u8> {
        let head = format!("From: postmaster@example.net\nContent-Type: {content_type}; boundary=\"b1\"\n\n");
        let human = "--b1\nContent-Type: text/plain\n\nA report.\n\n";
        let text = format!("{head}{human}--b1\nContent-Type: {part_type}\n\n{body}\n--b1--\n");
        text.replace('\n', "\r\n").into_bytes()
    }

    fn gmail() -> Report {
        let diagnostic = concat!(
            "550-5.1.1 The email account that you tried to reach does not exist. Please try ",
            "550-5.1.1 double-checking the recipient's email address for typos or unnecessary spaces."
        );
        let mta = "mx.example.com. (198.51.100.25, the server for the domain example.com.)";
        let failed = rcpt("nobody@example.com", Failed, "5.1.1", [Some(diagnostic), Some(mta)]);
        let original = Some("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@mail.herald.test");
        delivery(vec![failed], [original, None])
    }

    #[test]
    fn gmail_dsn() {
        let report = parse(GMAIL);
        assert_eq!(report, gmail());
        let Report::Delivery(dsn) = report else { unreachable!() };
        assert!(dsn.has_permanent_failure() && dsn.recipients[0].is_permanent());
    }

    #[test]
    fn outlook_dsn_with_a_failed_and_a_delayed_recipient() {
        let full = concat!(
            "554 5.2.2 mailbox full; ",
            "STOREDRV.Deliver.Exception:QuotaExceededException.MapiExceptionShutoffQuotaExceeded"
        );
        let (mta, delayed) = ("CO6PR04MB7777.namprd04.prod.outlook.com", "400 4.4.7 Message delayed");
        let recipients = vec![
            rcpt("full@contoso.example", Failed, "5.2.2", [Some(full), Some(mta)]),
            rcpt("slow@fabrikam.example", Delayed, "4.4.7", [Some(delayed), None]),
        ];
        let id = "0190c3d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d";
        let report = parse(OUTLOOK);
        let original = format!("{id}@mail.herald.test");
        assert_eq!(report, delivery(recipients, [Some(original.as_str()), Some(id)]));
        let Report::Delivery(dsn) = report else { unreachable!() };
        let permanent: Vec<&str> = dsn.permanent_failures().map(|r| r.recipient.as_str()).collect();
        assert_eq!(permanent, ["full@contoso.example"]);
        assert!(dsn.recipients[1].is_transient() && !dsn.recipients[1].is_permanent());
    }

    #[test]
    fn yahoo_delayed_dsn() {
        let diagnostic = concat!(
            "421 4.7.0 [TSS04] Messages from 203.0.113.7 temporarily deferred due to unexpected volume or user ",
            "complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes"
        );
        let extra = [Some(diagnostic), Some("mta7.am0.yahoodns.net")];
        let delayed = rcpt("someone@yahoo.example", Delayed, "4.7.0", extra);
        let original = Some("0190e5f6-0a1b-7c2d-8e3f-4a5b6c7d8e9f@mail.herald.test");
        let report = parse(YAHOO);
        assert_eq!(report, delivery(vec![delayed], [original, None]));
        let Report::Delivery(dsn) = report else { unreachable!() };
        assert!(!dsn.has_permanent_failure() && dsn.recipients[0].is_transient());
    }

    #[test]
    fn arf_abuse_report() {
        let expected = Report::Feedback(Arf {
            feedback_type: "abuse".into(),
            original_rcpt_to: Some("user@yahoo.example".into()),
            original_mail_from: Some("0190f7a8@bounces.example.com".into()),
            user_agent: Some("Yahoo!-Mail-Feedback/2.0".into()),
            arrival_date: Some("Wed, 15 Jan 2025 09:58:41 +0000".into()),
            original_message_id: Some("0190f7a8-1b2c-7d3e-8f4a-5b6c7d8e9f0a@mail.herald.test".into()),
        });
        assert_eq!(parse(ARF), expected);
    }

    #[test]
    fn auto_replies_are_other() {
        assert_eq!(parse(OUT_OF_OFFICE), Report::Other);
    }

    #[test]
    fn garbage_truncated_empty_and_oversized_inputs() {
        let junk: [&[u8]; 4] = [b"", b"\r\n", b"\0\xff\xfe\xfd junk", b"Content-Type: multipart/report"];
        for input in junk {
            assert_eq!(parse(input), Report::Other);
        }
        for sample in [GMAIL, OUTLOOK, YAHOO, ARF, OUT_OF_OFFICE, MALFORMED, POSTFIX_LF, GLOBAL] {
            for end in (0..sample.len()).step_by(7) {
                fuzz(&sample[..end]);
            }
        }
        let truncated = b"Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n\
            --x\r\nContent-Type: message/delivery-status\r\n\r\nFinal-Rec";
        assert_eq!(parse(truncated), delivery(vec![], [None, None]));
        let mut oversized = GMAIL.to_vec();
        oversized.resize(MAX_INPUT_BYTES + 1, b' ');
        assert_eq!(parse(&oversized), Report::Other);
    }

    #[test]
    fn malformed_status_parts() {
        // No blank line after the per-message fields, an invalid Status, an unknown Action,
        // a block without a recipient.
        let extra = [Some("550 no such user here"), None];
        let first = rcpt("first@example.com", Failed, "5.0.0", extra);
        assert_eq!(parse(MALFORMED), delivery(vec![first], [None, Some("env-1")]));

        let body = "Reporting-MTA: dns; mx.example.net\n\nFinal-Recipient: rfc822; <late@example.com>\n\
            Action: delayed\nStatus: 4.x.1\n\nOriginal-Recipient: rfc822;orig@example.com\nFinal-Recipient: rfc822;\n\
            Action: Delivered\nStatus: 2.0.0 (ok)";
        let recipients = vec![
            rcpt("late@example.com", Delayed, "4.0.0", [None, None]),
            rcpt("orig@example.com", Delivered, "2.0.0", [None, None]),
        ];
        let raw = report(DSN, "message/delivery-status", body);
        assert_eq!(parse(&raw), delivery(recipients, [None, None]));
    }

    #[test]
    fn long_values_and_many_recipients_are_bounded() {
        let folded: String = std::iter::repeat_n("\n éé", 5_000).collect();
        let body = format!("Final-Recipient: rfc822; big@example.com\nAction: failed\nDiagnostic-Code: x; 5{folded}");
        let full = std::iter::once("5")
            .chain(std::iter::repeat_n("éé", 5_000))
            .collect::<Vec<_>>();
        let kept: String = full.join(" ").chars().take(MAX_VALUE_CHARS).collect();
        let big = rcpt("big@example.com", Failed, "5.0.0", [Some(kept.trim_end()), None]);
        let raw = report(DSN, "message/delivery-status", &body);
        assert_eq!(parse(&raw), delivery(vec![big], [None, None]));

        let block = |i: u32| format!("Final-Recipient: rfc822; r{i}@example.com\nAction: failed\n\n");
        let blocks: String = (0..1_500).map(block).collect();
        let raw = report(DSN, "message/delivery-status", &blocks);
        let Report::Delivery(dsn) = parse(&raw) else {
            panic!("not a DSN")
        };
        assert_eq!(dsn.recipients.len(), MAX_RECIPIENTS);
        assert_eq!(dsn.recipients[MAX_RECIPIENTS - 1].recipient, "r999@example.com");
    }

    #[test]
    fn detection_without_report_type_and_by_position() {
        // Older shapes: a status part without multipart/report.
        let body = "Final-Recipient: rfc822; a@example.com\nAction: failed\nStatus: 5.7.1";
        let expected = delivery(vec![rcpt("a@example.com", Failed, "5.7.1", [None, None])], [None, None]);
        let raw = report("multipart/mixed", "message/delivery-status", body);
        assert_eq!(parse(&raw), expected);
        // A declared feedback report whose second part is mislabelled.
        let body = "Feedback-Type: Fraud\nUser-Agent: SomeFBL/1.0\nVersion: 1";
        let expected = Report::Feedback(Arf {
            feedback_type: "fraud".into(),
            original_rcpt_to: None,
            original_mail_from: None,
            user_agent: Some("SomeFBL/1.0".into()),
            arrival_date: None,
            original_message_id: None,
        });
        let raw = report("multipart/report; report-type=feedback-report", "text/plain", body);
        assert_eq!(parse(&raw), expected);
        // RFC 6533: UTF-8 addresses in message/global-delivery-status, original in message/global-headers.
        let extra = [Some("550 5.1.1 用户不存在"), None];
        let failed = rcpt("用户@例子.example", Failed, "5.1.1", extra);
        let original = Some("0190cc00-aaaa-7bbb-8ccc-dddddddddddd@mail.herald.test");
        assert_eq!(parse(GLOBAL), delivery(vec![failed], [original, None]));
    }

    #[test]
    fn lf_only_line_endings() {
        let diagnostic = "550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown";
        let extra = [Some(diagnostic), Some("mx.example.net")];
        let gone = rcpt("gone@example.net", Failed, "5.1.1", extra);
        let id = "0190aa00-1111-7222-8333-444455556666";
        let original = format!("{id}@mail.herald.test");
        let expected = delivery(vec![gone], [Some(original.as_str()), Some(id)]);
        assert_eq!(parse(POSTFIX_LF), expected);
        assert!(!POSTFIX_LF.contains(&b'\r'));
        let gmail_lf: Vec<u8> = GMAIL.iter().copied().filter(|&b| b != b'\r').collect();
        assert_eq!(parse(&gmail_lf), gmail());
    }
}
