//! The properties the email fuzz targets check, shared with the corpus replay test
//! (`tests/fuzz_corpus.rs`). The including crate provides herald's `emails` module
//! (`input`, `validate`, `schedule`, `mime`) and `herald_queue::{Id, Timestamp}`.

use herald_queue::{Id, Timestamp};

use super::emails::{input::SendEmail, mime, schedule, validate};

/// A fixed "now" (2026-01-01T00:00:00Z), so that replays mean the same thing every day.
const NOW: u64 = 1_767_225_600_000;

/// `POST /emails` bodies: JSON parsing, validation and MIME building. Nothing panics;
/// an email that validates builds into a message that parses, with one `From`, the
/// `To` addresses it was given, CRLF line endings and no line over 998 octets.
pub fn request(data: &[u8]) {
    let Ok(input) = serde_json::from_slice::<SendEmail>(data) else {
        return;
    };
    let now = Timestamp::from_millis(NOW);
    let mut no_fetch = |_: &str| -> Result<(Vec<u8>, Option<String>), String> { Err("no fetching".to_owned()) };
    let Ok(email) = validate::validate(input, now, &mut no_fetch) else {
        return;
    };
    let id = Id::from_slice(&[7; 16]).expect("16 bytes");
    let message = mime::build(&email, id, "fuzz.test", now).expect("a valid email builds");
    for (i, byte) in message.iter().enumerate() {
        match byte {
            b'\r' => assert_eq!(message.get(i + 1), Some(&b'\n'), "bare CR at {i}"),
            b'\n' => assert_eq!(i.checked_sub(1).map(|p| message[p]), Some(b'\r'), "bare LF at {i}"),
            _ => {}
        }
    }
    for line in message.split(|b| *b == b'\n') {
        assert!(line.len() <= 1000, "a line of {} octets", line.len());
    }
    let parsed = mail_parser::MessageParser::default()
        .parse(&message)
        .expect("the built message parses");
    let from = parsed.from().and_then(|a| a.first()).and_then(|a| a.address());
    assert_eq!(from, Some(email.from.address.as_str()));
    let to: Vec<&str> = parsed
        .to()
        .map(|a| a.iter().filter_map(|a| a.address()).collect())
        .unwrap_or_default();
    let expected: Vec<&str> = email.to.iter().map(|m| m.address.as_str()).collect();
    assert_eq!(to, expected);
}

/// `scheduled_at`: nothing panics, and an accepted time lies between now and 30 days
/// ahead.
pub fn scheduled_at(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let now = Timestamp::from_millis(NOW);
    if let Ok(at) = schedule::parse(text, now) {
        assert!(at >= now && at <= now.saturating_add(schedule::AHEAD_MAX), "{text:?}");
    }
}
