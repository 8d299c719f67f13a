//! Builds the RFC 5322 message with mail-builder: `multipart/alternative` for html and
//! text (a text part derived from the html when only html is given), attachments and
//! inline parts, RFC 2047/2231 encoding of non-ASCII, folded headers.

use std::borrow::Cow;

use herald_queue::{Id, Timestamp};
use mail_send::mail_builder::MessageBuilder;
use mail_send::mail_builder::headers::address::Address;
use mail_send::mail_builder::headers::date::Date;
use mail_send::mail_builder::headers::raw::Raw;
use mail_send::mail_builder::headers::text::Text;

/// Longest custom header value written as it is, within RFC 5322's 998-byte line.
const RAW_HEADER_MAX: usize = 900;
use mail_send::mail_builder::mime::{BodyPart, MimePart};

use super::address::Mailbox;
use super::validate::Email;

/// The message's `Message-ID` without angle brackets: `<email id>@<hostname>`.
pub fn message_id(id: Id, hostname: &str) -> String {
    format!("{id}@{hostname}")
}

/// Builds the message for `email`.
pub fn build(email: &Email, id: Id, hostname: &str, now: Timestamp) -> std::io::Result<Vec<u8>> {
    let mut builder = MessageBuilder::new()
        .from(address(&email.from))
        .to(list(&email.to))
        .subject(Text::new(email.subject.as_str()))
        .message_id(message_id(id, hostname))
        .date(Date::new(i64::try_from(now.as_millis() / 1000).unwrap_or(i64::MAX)));
    if !email.cc.is_empty() {
        builder = builder.cc(list(&email.cc));
    }
    if !email.reply_to.is_empty() {
        builder = builder.reply_to(list(&email.reply_to));
    }
    for (name, value) in &email.headers {
        // Printable ASCII goes as written (folded at spaces): a URL header such as
        // `List-Unsubscribe` must stay readable to mailbox providers, never RFC 2047
        // encoded. Anything else (or a value too long to fit a line unfolded) is encoded.
        builder = if value.len() <= RAW_HEADER_MAX && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
            builder.header(name.as_str(), Raw::new(value.as_str()))
        } else {
            builder.header(name.as_str(), Text::new(value.as_str()))
        };
    }
    if let Some(html) = &email.html {
        builder.html_body = Some(text_part("text/html", Cow::Borrowed(html.as_str())));
    }
    match (&email.text, &email.html) {
        // An empty text beside html: no text part at all (the sender opted out).
        (Some(text), Some(_)) if text.is_empty() => {}
        (Some(text), _) => builder.text_body = Some(text_part("text/plain", Cow::Borrowed(text.as_str()))),
        (None, Some(html)) => builder.text_body = Some(text_part("text/plain", Cow::Owned(html_to_text(html)))),
        (None, None) => {}
    }
    for attachment in &email.attachments {
        let content = attachment.content.as_slice();
        builder = match &attachment.content_id {
            Some(cid) => builder.inline(attachment.content_type.as_str(), cid.as_str(), content),
            None => builder.attachment(attachment.content_type.as_str(), attachment.filename.as_str(), content),
        };
    }
    builder.write_to_vec()
}

/// A text body part. Text that needs no transfer encoding (ASCII without NUL, lines of at
/// most [`LINE_MAX`] octets, CR only before LF) is sent as `7bit`, its bare LFs made CRLF,
/// checked and copied in bulk. Anything else is left to mail-builder, which picks
/// quoted-printable or base64; its check looks at the text a byte at a time and its
/// `7bit` output is written a byte at a time, which at 100 KB cost as much as building
/// the rest of the message.
fn text_part<'x>(content_type: &'x str, text: Cow<'x, str>) -> MimePart<'x> {
    match seven_bit(&text) {
        Some(SevenBit::AsIs) => MimePart::new(content_type, BodyPart::Text(text)).transfer_encoding("7bit"),
        Some(SevenBit::Crlf(normalised)) => {
            MimePart::new(content_type, BodyPart::Text(Cow::Owned(normalised))).transfer_encoding("7bit")
        }
        None => MimePart::new(content_type, BodyPart::Text(text)),
    }
}

/// The longest line a `7bit` body may have, CRLF excluded (RFC 5322 2.1.1).
const LINE_MAX: usize = 998;

/// How a text can go out as `7bit`.
#[derive(Debug, PartialEq, Eq)]
enum SevenBit {
    /// As it is: every line ends in CRLF already.
    AsIs,
    /// With its bare LFs made CRLF.
    Crlf(String),
}

/// Whether `text` can go out as `7bit`, and how.
fn seven_bit(text: &str) -> Option<SevenBit> {
    let bytes = text.as_bytes();
    if !bytes.is_ascii() || memchr::memchr(0, bytes).is_some() {
        return None;
    }
    let mut bare_lf = false;
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())) {
        let line = &bytes[start..end];
        let line = match line.strip_suffix(b"\r") {
            Some(content) if end < bytes.len() => content,
            _ => {
                bare_lf |= end < bytes.len();
                line
            }
        };
        if line.len() > LINE_MAX || memchr::memchr(b'\r', line).is_some() {
            return None;
        }
        start = end + 1;
    }
    if !bare_lf {
        return Some(SevenBit::AsIs);
    }
    let mut normalised = String::with_capacity(text.len() + text.len() / 32);
    let mut copied = 0;
    for at in memchr::memchr_iter(b'\n', bytes) {
        if at == 0 || bytes[at - 1] != b'\r' {
            normalised.push_str(&text[copied..at]);
            normalised.push_str("\r\n");
            copied = at + 1;
        }
    }
    normalised.push_str(&text[copied..]);
    Some(SevenBit::Crlf(normalised))
}

/// Plain text for an html body: block elements become lines, links keep their targets,
/// entities are decoded, scripts and styles dropped.
///
/// This used `html2text` first; its layout engine (wrapping, tables) cost a third of the
/// API's throughput in the `emails` benchmark (3,535 against 5,327 emails/s with the text
/// part skipped), so the single-pass `nanohtml2text` replaced it.
pub fn html_to_text(html: &str) -> String {
    nanohtml2text::html2text(html)
}

fn address(mailbox: &Mailbox) -> Address<'_> {
    Address::new_address(mailbox.name.as_deref(), mailbox.address.as_str())
}

fn list(mailboxes: &[Mailbox]) -> Address<'_> {
    Address::new_list(mailboxes.iter().map(address).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ascii_goes_out_as_7bit_with_crlf_and_anything_else_is_encoded() {
        assert_eq!(seven_bit("a\r\nb\r\n"), Some(SevenBit::AsIs));
        assert_eq!(seven_bit(""), Some(SevenBit::AsIs));
        assert_eq!(seven_bit("a\nb\r\nc\n"), Some(SevenBit::Crlf("a\r\nb\r\nc\r\n".into())));
        assert_eq!(seven_bit("\n\n"), Some(SevenBit::Crlf("\r\n\r\n".into())));
        assert_eq!(seven_bit("caf\u{e9}"), None, "not ASCII");
        assert_eq!(seven_bit("a\rb"), None, "bare CR");
        assert_eq!(seven_bit("a\r"), None, "bare CR at the end");
        assert_eq!(seven_bit("a\0b"), None, "NUL");
        assert_eq!(seven_bit(&"x".repeat(LINE_MAX)), Some(SevenBit::AsIs));
        assert_eq!(
            seven_bit(&format!("{}\r\n", "x".repeat(LINE_MAX + 1))),
            None,
            "line too long"
        );

        let email_text = "Hello\nworld\n";
        let part = text_part("text/plain", Cow::Borrowed(email_text));
        let built = MessageBuilder::new()
            .from("a@example.test")
            .to("b@example.test")
            .body(part)
            .write_to_vec()
            .expect("build");
        let built = String::from_utf8(built).expect("ascii");
        assert!(
            built.contains("Content-Transfer-Encoding: 7bit\r\n\r\nHello\r\nworld\r\n"),
            "{built}"
        );
        let long = format!("{}\n", "y".repeat(2000));
        let built = MessageBuilder::new()
            .from("a@example.test")
            .to("b@example.test")
            .body(text_part("text/plain", Cow::Owned(long)))
            .write_to_vec()
            .expect("build");
        let built = String::from_utf8(built).expect("ascii");
        assert!(built.contains("Content-Transfer-Encoding: quoted-printable"), "{built}");
    }

    #[test]
    fn text_from_html_keeps_the_words_links_and_lines() {
        let text = html_to_text(
            "<html><head><style>p { color: red }</style></head><body><h1>Hi&nbsp;Ann</h1><p>Your <b>order</b> &amp; receipt.</p><p><a href=\"https://example.test/r\">View</a></p><script>alert(1)</script></body></html>",
        );
        assert!(text.contains("Hi") && text.contains("Ann"), "{text}");
        assert!(text.contains("Your order & receipt."), "{text}");
        assert!(text.contains("https://example.test/r"), "{text}");
        assert!(!text.contains("color: red") && !text.contains("alert"), "{text}");
        assert!(text.lines().count() >= 3, "block elements become lines: {text:?}");
    }
}
