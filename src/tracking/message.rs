//! Tracking for messages submitted whole (SMTP): each `text/html` part is decoded, has
//! its links and the open pixel rewritten ([`super::rewrite`]), and is put back in
//! base64 with its own `Content-Transfer-Encoding`; a message without an HTML part gets
//! its plain-text parts' URLs rewritten. A part in another charset that mail-parser
//! decodes (ISO-8859-x, Windows-125x, Shift_JIS, ...) goes back as UTF-8, its
//! `Content-Type` saying `charset=utf-8`; a part in a charset it does not know is left
//! as it is.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mail_parser::{Message, MessagePart, MimeHeaders, PartType};

use super::rewrite::{self, Click};

/// `raw` (parsed as `parsed`) with its body parts rewritten through `click` and `pixel`;
/// `None` when nothing was rewritten.
pub fn rewrite(raw: &[u8], parsed: &Message<'_>, click: Option<Click<'_>>, pixel: Option<&str>) -> Option<Vec<u8>> {
    let has_html = parsed.parts.iter().any(MessagePart::is_text_html);
    let mut edits: Vec<(usize, usize, usize, Vec<u8>)> = Vec::new();
    // The parts (by header offset) whose charset changes to UTF-8.
    let mut recharsets: Vec<usize> = Vec::new();
    for part in &parsed.parts {
        let Some(recharset) = charset(raw, part) else {
            continue;
        };
        let rewritten = match &part.body {
            PartType::Html(html) => match rewrite::html(html, click, pixel) {
                Ok(out) => out,
                Err(error) => {
                    tracing::warn!(%error, "a submitted HTML part is sent untracked");
                    continue;
                }
            },
            PartType::Text(text) if !has_html && part.content_disposition().is_none_or(|d| !d.is_attachment()) => {
                match click {
                    Some(click) => rewrite::text(text, click),
                    None => continue,
                }
            }
            _ => continue,
        };
        if rewritten.as_str() == part.text_contents().unwrap_or_default() {
            continue;
        }
        if recharset {
            recharsets.push(part.offset_header as usize);
        }
        edits.push((
            part.offset_header as usize,
            part.offset_body as usize,
            part.offset_end as usize,
            base64_lines(rewritten.as_bytes()),
        ));
    }
    if edits.is_empty() {
        return None;
    }
    // From the end, so the offsets of the parts before stay true.
    edits.sort_by_key(|(header, ..)| std::cmp::Reverse(*header));
    let mut out = raw.to_vec();
    for (header, body, end, encoded) in edits {
        let (Some(head), Some(_)) = (out.get(header..body), out.get(body..end)) else {
            continue;
        };
        let Some(mut replacement) = headers_with_base64(head, recharsets.contains(&header)) else {
            continue;
        };
        replacement.extend_from_slice(&encoded);
        out.splice(header..end, replacement);
    }
    Some(out)
}

/// Whether `part`'s text can be rewritten: `Some(false)` when it is UTF-8 (or ASCII, or
/// says no charset), `Some(true)` when mail-parser decoded it from another charset (it
/// goes back as UTF-8), `None` for a charset mail-parser does not know.
fn charset(raw: &[u8], part: &MessagePart<'_>) -> Option<bool> {
    // RFC 2231's `charset*=` is not rewritten: such a part is left as it is.
    let extended = part
        .headers
        .iter()
        .filter(|h| h.name == mail_parser::HeaderName::ContentType)
        .filter_map(|h| raw.get(h.offset_start as usize..h.offset_end as usize))
        .any(|value| value.to_ascii_lowercase().windows(8).any(|w| w == b"charset*"));
    if extended {
        return None;
    }
    match part.content_type().and_then(|ct| ct.attribute("charset")) {
        None => Some(false),
        Some(cs) if cs.eq_ignore_ascii_case("utf-8") || cs.eq_ignore_ascii_case("us-ascii") => Some(false),
        Some(cs) => mail_parser::decoders::charsets::map::charset_decoder(cs.as_bytes()).map(|_| true),
    }
}

/// `field` (a whole `Content-Type` field, folded or not) with its `charset` parameter's
/// value replaced by `utf-8`.
fn utf8_charset(field: &str) -> String {
    let lower = field.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("charset") {
        let start = from + found;
        let before = lower[..start].trim_end_matches([' ', '\t', '\r', '\n']);
        let after = lower[start + "charset".len()..].trim_start_matches([' ', '\t']);
        if before.ends_with(';') && after.starts_with('=') {
            let value_start = field.len() - after.len() + 1;
            let rest = &field[value_start..];
            let skipped = rest.len() - rest.trim_start_matches([' ', '\t']).len();
            let value = &rest[skipped..];
            let length = match value.strip_prefix('"') {
                Some(quoted) => quoted.find('"').map_or(value.len(), |end| end + 2),
                None => value.find([';', ' ', '\t', '\r', '\n']).unwrap_or(value.len()),
            };
            let value_start = value_start + skipped;
            return format!("{}utf-8{}", &field[..value_start], &field[value_start + length..]);
        }
        from = start + "charset".len();
    }
    field.to_owned()
}

/// A part's header block (up to and including the blank line) with any
/// `Content-Transfer-Encoding` field replaced by `base64`, and with `recharset`, its
/// `Content-Type` saying `charset=utf-8`.
fn headers_with_base64(head: &[u8], recharset: bool) -> Option<Vec<u8>> {
    // Edited as bytes, line by line: other fields (a Subject with raw 8-bit bytes) pass
    // through untouched.
    let mut out = Vec::with_capacity(head.len() + 40);
    let mut dropping = false;
    let mut content_type: Option<Vec<u8>> = None;
    let mut recharsetted = !recharset;
    let mut lines: Vec<&[u8]> = head.split_inclusive(|b| *b == b'\n').collect();
    // The blank line that ends the block (absent for a part without headers).
    let blank = lines
        .last()
        .is_some_and(|l| l.trim_ascii().is_empty())
        .then(|| lines.pop())
        .flatten();
    let mut flush = |field: Vec<u8>, out: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(&field);
        let changed = utf8_charset(&text);
        recharsetted |= changed != text;
        out.extend_from_slice(changed.as_bytes());
    };
    for line in lines {
        let continuation = line.first().is_some_and(|b| *b == b' ' || *b == b'\t');
        if !continuation {
            if let Some(field) = content_type.take() {
                flush(field, &mut out);
            }
            let name = line
                .iter()
                .position(|b| *b == b':')
                .map(|colon| line[..colon].trim_ascii());
            dropping = name.is_some_and(|name| name.eq_ignore_ascii_case(b"content-transfer-encoding"));
            if recharset && name.is_some_and(|name| name.eq_ignore_ascii_case(b"content-type")) {
                content_type = Some(Vec::new());
            }
        }
        match &mut content_type {
            Some(field) => field.extend_from_slice(line),
            None if !dropping => out.extend_from_slice(line),
            None => {}
        }
    }
    if let Some(field) = content_type.take() {
        flush(field, &mut out);
    }
    // A charset given another way (RFC 2231's `charset*=`) was not changed: the part
    // would say one charset and hold another, so it is left as it was.
    if !recharsetted {
        return None;
    }
    out.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n");
    out.extend_from_slice(blank.unwrap_or(b"\r\n"));
    Some(out)
}

/// `bytes` in base64, in lines of 76 characters, each ending in CRLF.
fn base64_lines(bytes: &[u8]) -> Vec<u8> {
    let encoded = STANDARD.encode(bytes);
    let mut out = Vec::with_capacity(encoded.len() + encoded.len() / 38 + 2);
    for line in encoded.as_bytes().chunks(76) {
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use mail_parser::MessageParser;

    use super::*;

    fn tracked(index: u16, target: &str) -> Option<String> {
        Some(format!("https://t.test/{index}?u={target}"))
    }

    #[test]
    fn quoted_printable_html_is_decoded_rewritten_and_put_back_in_base64() {
        let raw = b"From: a@shop.test\r\nTo: b@example.net\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee https://a.test/x\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<html><body><a href=3D\"https://a.test/x?q=3D1\">x</a></body></html>\r\n--b1--\r\n";
        let parsed = MessageParser::default().parse(raw).expect("parses");
        let out = rewrite(raw, &parsed, Some(&tracked), Some("https://t.test/o")).expect("rewritten");
        let again = MessageParser::default().parse(&out).expect("still a message");
        let html = again.body_html(0).expect("html");
        assert!(
            html.contains("href=\"https://t.test/0?u=https://a.test/x?q=1\""),
            "{html}"
        );
        assert!(html.contains("<img src=\"https://t.test/o\""), "{html}");
        // With an HTML part, the text part is left alone.
        assert_eq!(again.body_text(0).expect("text").trim(), "See https://a.test/x");
        assert_eq!(again.subject(), Some("s"));
    }

    #[test]
    fn a_latin1_part_goes_back_as_utf8_and_an_unknown_charset_is_left() {
        let raw = b"From: a@shop.test\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: text/html;\r\n charset=\"ISO-8859-1\"; format=flowed\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<html><body>Caf=E9 <a href=3D\"https://a.test/x\">x</a></body></html>\r\n";
        let parsed = MessageParser::default().parse(raw).expect("parses");
        let out = rewrite(raw, &parsed, Some(&tracked), Some("https://t.test/o")).expect("rewritten");
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("charset=utf-8; format=flowed"), "{text}");
        let again = MessageParser::default().parse(&out).expect("still a message");
        let html = again.body_html(0).expect("html");
        assert!(html.contains("Café"), "{html}");
        assert!(html.contains("href=\"https://t.test/0?u=https://a.test/x\""), "{html}");

        let unknown = b"From: a@shop.test\r\nContent-Type: text/html; charset=x-unknown-7\r\n\r\n<a href=\"https://a.test/x\">x</a>\r\n";
        let parsed = MessageParser::default().parse(unknown).expect("parses");
        assert!(rewrite(unknown, &parsed, Some(&tracked), None).is_none());
    }

    #[test]
    fn other_fields_keep_their_bytes_and_an_rfc2231_charset_is_left() {
        let mut raw = b"From: a@shop.test\r\nSubject: Caf\xe9\r\nContent-Type: text/html; charset=iso-8859-1\r\n\r\n<a href=\"https://a.test/x\">Caf\xe9</a>\r\n".to_vec();
        let parsed = MessageParser::default().parse(&raw).expect("parses");
        let out = rewrite(&raw, &parsed, Some(&tracked), None).expect("rewritten");
        assert!(
            out.windows(13).any(|w| w == b"Subject: Caf\xe9"),
            "{}",
            String::from_utf8_lossy(&out)
        );
        raw = b"From: a@shop.test\r\nContent-Type: text/html; charset*=iso-8859-1''\r\n\r\n<a href=\"https://a.test/x\">Caf\xe9</a>\r\n".to_vec();
        let parsed = MessageParser::default().parse(&raw).expect("parses");
        let left = rewrite(&raw, &parsed, Some(&tracked), None);
        assert!(left.is_none_or(|out| out == raw), "the part is left as it was");
    }

    #[test]
    fn the_charset_parameter_is_found_wherever_it_is_written() {
        assert_eq!(
            utf8_charset("Content-Type: text/html; charset=koi8-r\r\n"),
            "Content-Type: text/html; charset=utf-8\r\n"
        );
        assert_eq!(
            utf8_charset("Content-Type: text/plain; name=\"charset\"; CHARSET = \"windows-1252\"\r\n"),
            "Content-Type: text/plain; name=\"charset\"; CHARSET = utf-8\r\n"
        );
    }

    #[test]
    fn a_text_only_message_gets_its_urls_rewritten() {
        let raw = b"From: a@shop.test\r\nSubject: s\r\nContent-Type: text/plain\r\n\r\nSee https://a.test/x.\r\n";
        let parsed = MessageParser::default().parse(raw).expect("parses");
        let out = rewrite(raw, &parsed, Some(&tracked), None).expect("rewritten");
        let again = MessageParser::default().parse(&out).expect("still a message");
        assert_eq!(
            again.body_text(0).expect("text").trim(),
            "See https://t.test/0?u=https://a.test/x."
        );
        assert_eq!(again.subject(), Some("s"));
    }
}
