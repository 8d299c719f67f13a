//! An email's bodies (`html`, `text`) as its record shows them. An email that holds only
//! its bodies and sends them unchanged (no tracking or unsubscribe link rewrote them)
//! keeps them only in the message the spool retains ([`herald_queue::NewMessage::retain`]),
//! removed by retention with [`Spool::forget`]: storing them in the record too wrote every
//! such message twice, which at 100 KB cost 10-20 % of its CPU. An SMTP submission
//! qualifies by its structure; an API one when [`holds`] finds its bodies in the built
//! message exactly as given.

use crate::storage::Error;
use herald_queue::Spool;
use mail_parser::{MessageParser, PartType};

use super::record::EmailRecord;

/// Fills in `record`'s `html` and `text` from its retained message, when it keeps them
/// there and retention has not removed them. A record that holds a body already was read
/// from its message once, when `herald store copy` moved it into a shared database
/// ([`crate::emails::store::copy`]): it is shown as it is, on any node, the message
/// being this node's alone.
pub fn fill(spool: &Spool, record: &mut EmailRecord) -> Result<(), Error> {
    if !record.content_in_message || record.content_expired || record.html.is_some() || record.text.is_some() {
        return Ok(());
    }
    let Some(raw) = spool.retained(record.id)? else {
        // Gone with retention: the bodies expired, whether or not the record says so yet.
        record.content_expired = true;
        return Ok(());
    };
    let reading = Reading {
        text_derived: record.text_derived,
        line_feeds: record.line_feeds,
    };
    if let Some((html, text)) = read(&raw, reading) {
        record.html = html;
        record.text = text;
    }
    Ok(())
}

/// The html and text a record reads from its message `raw`.
fn read(raw: &[u8], reading: Reading) -> Option<(Option<String>, Option<String>)> {
    let parsed = MessageParser::default().parse(raw)?;
    let (html, text) = bodies(&parsed, reading);
    let read = |body: &str| {
        if reading.line_feeds {
            body.replace("\r\n", "\n")
        } else {
            body.to_owned()
        }
    };
    Some((html.map(read), text.map(read)))
}

/// How a record reads its bodies from its message (its `text_derived` and
/// `line_feeds`). The default reads them as the message has them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// The message's text part was made from its html (the sender gave no text): the
    /// text reads as none.
    pub text_derived: bool,
    /// The bodies were given with bare line feeds, which the message carries as CRLF:
    /// they read with line feeds again.
    pub line_feeds: bool,
}

/// The html and text parts [`fill`] reads from a message, as the message has them. Only
/// parts the sender wrote: mail-parser would make an html part up from a text-only
/// message, and the record keeps what was written, not a conversion of it (which cost as
/// much to store as the message itself).
pub fn bodies<'x>(message: &'x mail_parser::Message<'_>, reading: Reading) -> (Option<&'x str>, Option<&'x str>) {
    let html = match message.html_part(0).map(|part| &part.body) {
        Some(PartType::Html(html)) => Some(html.as_ref()),
        _ => None,
    };
    let text = match message.text_part(0).map(|part| &part.body) {
        Some(PartType::Text(text)) if !reading.text_derived => Some(text.as_ref()),
        _ => None,
    };
    (html, text)
}

/// How [`fill`] reads back from `raw` exactly the `html` and `text` an email was given;
/// `None` when it cannot.
pub fn holds(raw: &[u8], html: Option<&str>, text: Option<&str>) -> Option<Reading> {
    let reading = Reading {
        text_derived: text.is_none() && html.is_some(),
        line_feeds: [html, text]
            .iter()
            .flatten()
            .all(|body| memchr::memchr(b'\r', body.as_bytes()).is_none()),
    };
    let parsed = MessageParser::default().parse(raw)?;
    let (read_html, read_text) = bodies(&parsed, reading);
    let same = |read: Option<&str>, given: Option<&str>| match (read, given) {
        (Some(read), Some(given)) if reading.line_feeds => same_with_line_feeds(read, given),
        (read, given) => read == given,
    };
    (same(read_html, html) && same(read_text, text)).then_some(reading)
}

/// Whether `read` with its CRLFs made line feeds (as [`fill`] reads it) is `given`,
/// which has no CR. A body sent as `7bit` or quoted-printable comes back with CRLF, one
/// sent as base64 as it was.
fn same_with_line_feeds(read: &str, given: &str) -> bool {
    let (mut read, mut given) = (read.as_bytes(), given.as_bytes());
    while let Some(at) = memchr::memchr(b'\n', given) {
        let Some(rest) = read
            .strip_prefix(&given[..at])
            .and_then(|rest| rest.strip_prefix(b"\r\n").or_else(|| rest.strip_prefix(b"\n")))
        else {
            return false;
        };
        read = rest;
        given = &given[at + 1..];
    }
    read == given
}

#[cfg(test)]
mod tests {
    use herald_queue::{Id, Timestamp};
    use proptest::prelude::*;

    use super::*;
    use crate::emails::address::Mailbox;
    use crate::emails::mime;
    use crate::emails::validate::Email;

    fn email(html: Option<&str>, text: Option<&str>) -> Email {
        Email {
            from: Mailbox::parse("App <app@example.test>").expect("from"),
            to: vec![Mailbox::parse("user@example.net").expect("to")],
            cc: Vec::new(),
            bcc: Vec::new(),
            reply_to: Vec::new(),
            subject: "Hello".into(),
            html: html.map(str::to_owned),
            text: text.map(str::to_owned),
            headers: Vec::new(),
            attachments: Vec::new(),
            tags: Vec::new(),
            scheduled_at: None,
            template: None,
            topic_id: None,
            unsubscribe: false,
            broadcast_id: None,
        }
    }

    /// Whether the built message holds `html` and `text`, and if so what [`fill`] reads
    /// back from it.
    fn round_trip(html: Option<&str>, text: Option<&str>) -> Option<(Option<String>, Option<String>)> {
        let raw = mime::build(
            &email(html, text),
            Id::from_bytes([7; 16]),
            "mx.example.test",
            Timestamp::from_millis(1_700_000_000_000),
        )
        .expect("built");
        read(&raw, holds(&raw, html, text)?)
    }

    fn given(html: Option<&str>, text: Option<&str>) -> Option<(Option<String>, Option<String>)> {
        Some((html.map(str::to_owned), text.map(str::to_owned)))
    }

    #[test]
    fn the_usual_bodies_are_held_by_the_message_exactly() {
        let html = "<p>Hello <a href=\"https://example.test/a?b=1&c=2\">there</a></p>\n<p>Bye</p>\n";
        let cases = [
            (Some(html), None),
            (Some(html), Some("Hello there\nBye\n")),
            (Some(&html.replace('\n', "\r\n")), Some("Hello there\r\nBye\r\n")),
            (None, Some("Just text, no newline at the end")),
            (None, Some("Grüße aus Köln, 10 € — “quoted” 🎉\nSecond line\n")),
            (Some("<p>Grüße, 10 €</p>"), Some("Grüße, 10 €")),
        ];
        for (html, text) in cases {
            assert_eq!(round_trip(html, text), given(html, text), "{html:?} {text:?}");
        }
        // Line feeds in one body and CRLF in the other cannot both be read back: the
        // record keeps those.
        assert_eq!(round_trip(Some(html), Some("Hello there\r\nBye\r\n")), None);
        let long = format!("{}\n{}", "x".repeat(3000), "y".repeat(10));
        assert_eq!(
            round_trip(None, Some(&long)),
            given(None, Some(&long)),
            "a line longer than 998"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Whatever the bodies, a message said to hold them gives them back exactly.
        #[test]
        fn a_message_said_to_hold_the_bodies_gives_them_back(
            html in proptest::option::of("(?s).{0,300}"),
            text in proptest::option::of("[a-zA-Zé€ \r\n\t.=-]{0,300}"),
        ) {
            if let Some(read) = round_trip(html.as_deref(), text.as_deref()) {
                prop_assert_eq!(read, given(html.as_deref(), text.as_deref()).expect("given"));
            }
        }
    }
}
