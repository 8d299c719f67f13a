//! `scheduled_at`: ISO 8601 or simple natural language, at most 30 days ahead.

use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use herald_queue::Timestamp;

/// How far ahead an email may be scheduled.
pub const AHEAD_MAX: Duration = Duration::from_secs(30 * 24 * 3600);

/// How far in the past a time may be and still count as "now": clocks differ a little
/// between the client and herald.
const SKEW: Duration = Duration::from_secs(60);

/// Parses `text` relative to `now` (UTC unless the text carries an offset): ISO 8601
/// (`2026-11-22T09:00:00Z`, `2026-11-22 09:00:00+02:00`), or natural language (`in 10 min`,
/// `in 2 hours`, `tomorrow at 9am`).
pub fn parse(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("`scheduled_at` is empty".to_owned());
    }
    let now_utc = utc(now);
    let at = iso8601(text)
        .or_else(|| {
            let phrase = natural(text);
            parseable(&phrase)
                .then(|| interim::parse_date_string(&phrase, now_utc, interim::Dialect::Us).ok())
                .flatten()
        })
        .ok_or_else(|| {
            format!("`scheduled_at` {text:?} is neither an ISO 8601 date nor a phrase like \"in 10 min\" or \"tomorrow at 9am\"")
        })?;
    let at = Timestamp::from_millis(
        u64::try_from(at.timestamp_millis()).map_err(|_| "`scheduled_at` is before 1970".to_owned())?,
    );
    if at.saturating_add(SKEW) < now {
        return Err(format!("`scheduled_at` {text:?} is in the past"));
    }
    if at > now.saturating_add(AHEAD_MAX) {
        return Err(format!("`scheduled_at` {text:?} is more than 30 days ahead"));
    }
    Ok(at.max(now))
}

/// The longest phrase handed to the date parser: "next tuesday at 10:30am" is 23.
const PHRASE_MAX: usize = 64;

/// Whether the date parser may see `phrase`. interim 0.2 panics on a word of 16 letters
/// or more (found by fuzzing `scheduled_at`); no date phrase has one.
fn parseable(phrase: &str) -> bool {
    phrase.len() <= PHRASE_MAX
        && phrase
            .split(|c: char| !c.is_ascii_alphabetic())
            .all(|word| word.len() < 16)
}

/// Rewrites the phrasing people use ("in 10 min", "tomorrow at 9am", "2 hours from now")
/// into the forms the date parser knows ("10 min", "tomorrow 9am", "2 hours").
fn natural(text: &str) -> String {
    let lower = text.to_lowercase();
    let trimmed = lower.trim();
    let trimmed = trimmed.strip_prefix("in ").unwrap_or(trimmed);
    let trimmed = trimmed.strip_suffix(" from now").unwrap_or(trimmed);
    trimmed.replace(" at ", " ")
}

fn iso8601(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.f%#z"] {
        if let Ok(at) = DateTime::parse_from_str(text, format) {
            return Some(at.with_timezone(&Utc));
        }
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(Utc.from_utc_datetime(&at));
        }
    }
    None
}

fn utc(at: Timestamp) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_millis(i64::try_from(at.as_millis()).unwrap_or(i64::MAX)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22T08:00:00Z, a Sunday.
    const NOW: Timestamp = Timestamp::from_millis(1_795_334_400_000);

    #[test]
    fn iso_dates_with_and_without_offsets() {
        assert_eq!(
            parse("2026-11-22T10:00:00Z", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(7200)))
        );
        assert_eq!(
            parse("2026-11-22T12:00:00+02:00", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(7200)))
        );
        assert_eq!(
            parse("2026-11-22 10:00:00", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(7200)))
        );
        assert_eq!(
            parse("2026-11-22T10:00:00.500Z", NOW),
            Ok(NOW.saturating_add(Duration::from_millis(7_200_500)))
        );
    }

    #[test]
    fn long_words_are_refused_before_the_date_parser_sees_them() {
        // Found by fuzzing: interim panics on a word of 16 letters or more.
        for text in [
            "h3tttttttttttttttttttttt",
            "H0HHHHHHHHHHHHHHHHHHHHHHHHHH",
            "in 10 abcdefghijklmnopq",
        ] {
            assert!(parse(text, NOW).is_err(), "{text}");
        }
        assert!(parse(&format!("in 10 min{}", " ".repeat(100)), NOW).is_ok(), "trimmed");
        assert!(parse(&format!("in {} min", "1".repeat(100)), NOW).is_err(), "too long");
    }

    #[test]
    fn natural_language() {
        assert_eq!(
            parse("in 10 min", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(600)))
        );
        assert_eq!(
            parse("in 2 hours", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(7200)))
        );
        assert_eq!(
            parse("tomorrow at 9am", NOW),
            Ok(NOW.saturating_add(Duration::from_secs(25 * 3600)))
        );
    }

    #[test]
    fn past_far_and_garbage_are_refused() {
        assert!(parse("2026-11-21T10:00:00Z", NOW).expect_err("past").contains("past"));
        assert!(parse("in 31 days", NOW).expect_err("far").contains("30 days"));
        assert!(parse("whenever", NOW).expect_err("garbage").contains("ISO 8601"));
        assert!(parse("", NOW).is_err());
        assert_eq!(
            parse("2026-11-22T07:59:30Z", NOW),
            Ok(NOW),
            "a few seconds of skew is now"
        );
    }
}
