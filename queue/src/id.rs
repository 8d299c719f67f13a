//! Time-ordered ids: UUIDv7, which are also the email ids the REST API returns.
//!
//! The 16 bytes of a UUIDv7 sort by creation time (48-bit millisecond prefix), so ids used
//! as RocksDB keys keep insertion order and lists read newest-first by iterating backwards.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use uuid::{ContextV7, Uuid};

use crate::clock::Timestamp;

/// A UUIDv7 id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Id(Uuid);

impl Id {
    /// The id's 16 bytes, in their sort order.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }

    /// The id of 16 bytes read back from a key.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Id(Uuid::from_bytes(bytes))
    }

    /// The id of a key's first 16 bytes, if it has that many.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        let array: [u8; 16] = bytes.get(..16)?.try_into().ok()?;
        Some(Id::from_bytes(array))
    }

    /// The creation time embedded in the id.
    pub fn timestamp(&self) -> Option<Timestamp> {
        let (seconds, nanos) = self.0.get_timestamp()?.to_unix();
        Some(Timestamp::from_millis(seconds * 1_000 + u64::from(nanos / 1_000_000)))
    }

    /// The underlying UUID.
    pub fn uuid(&self) -> Uuid {
        self.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for Id {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Id)
    }
}

impl From<Uuid> for Id {
    fn from(uuid: Uuid) -> Self {
        Id(uuid)
    }
}

/// Makes ids that are strictly increasing even within one millisecond (the UUIDv7
/// monotonic counter), from the injected clock's time.
#[derive(Debug)]
pub struct IdGenerator {
    context: Mutex<ContextV7>,
}

impl Default for IdGenerator {
    fn default() -> Self {
        IdGenerator {
            context: Mutex::new(ContextV7::new()),
        }
    }
}

impl IdGenerator {
    /// A new id stamped with `now`.
    pub fn next(&self, now: Timestamp) -> Id {
        let millis = now.as_millis();
        // A poisoned lock only means another thread panicked while holding the counter;
        // the counter itself is still usable.
        let context = self.context.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ts = uuid::Timestamp::from_unix(
            &*context,
            millis / 1_000,
            u32::try_from(millis % 1_000).unwrap_or(0) * 1_000_000,
        );
        Id(Uuid::new_v7(ts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_within_one_millisecond() {
        let generator = IdGenerator::default();
        let now = Timestamp::from_millis(1_700_000_000_000);
        let ids: Vec<Id> = (0..1_000).map(|_| generator.next(now)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
        assert_eq!(ids[0].timestamp(), Some(now));
    }

    #[test]
    fn id_round_trips_through_text_and_bytes() {
        let id = IdGenerator::default().next(Timestamp::from_millis(42));
        assert_eq!(id.to_string().parse::<Id>().ok(), Some(id));
        assert_eq!(Id::from_slice(id.as_bytes()), Some(id));
        assert_eq!(id.uuid().get_version_num(), 7);
    }
}
