//! Wire forms of time shared by the records' JSON and every adapter: Resend writes
//! resource timestamps one way and webhook payloads another.

use chrono::{DateTime, Utc};
use herald_queue::Timestamp;

/// A timestamp as Resend writes it in resource bodies: `2023-04-03 22:13:42.674981+00`.
pub fn timestamp(at: Timestamp) -> String {
    let millis = i64::try_from(at.as_millis()).unwrap_or(i64::MAX);
    let time = DateTime::<Utc>::from_timestamp_millis(millis).unwrap_or_default();
    time.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string()
}

/// A timestamp as webhook payloads write it: ISO 8601 with `Z`.
pub fn iso8601(at: Timestamp) -> String {
    let millis = i64::try_from(at.as_millis()).unwrap_or(i64::MAX);
    let time = DateTime::<Utc>::from_timestamp_millis(millis).unwrap_or_default();
    time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_use_resends_formats() {
        let at = Timestamp::from_millis(1_680_560_022_674);
        assert_eq!(timestamp(at), "2023-04-03 22:13:42.674000+00");
        assert_eq!(iso8601(at), "2023-04-03T22:13:42.674Z");
    }
}
