//! The spool's key layouts: its due index is a [`DueIndex`](crate::DueIndex) whose item
//! keys are message ids.

use crate::clock::Timestamp;
use crate::due::Due;
use crate::id::Id;

/// Length of a due-index key: 8 bytes of due time and 16 of id.
pub(crate) const DUE_KEY_LEN: usize = 24;

/// The due-index key of message `id` due at `due`.
pub(crate) fn due_key(due: Timestamp, id: Id) -> Vec<u8> {
    Due::new(due, id.as_bytes().as_slice()).encode()
}

/// Reads back what [`due_key`] wrote; `None` for a key of another shape.
pub(crate) fn parse_due_key(key: &[u8]) -> Option<(Timestamp, Id)> {
    if key.len() != DUE_KEY_LEN {
        return None;
    }
    let due = Due::decode(key)?;
    Some((due.at, Id::from_slice(&due.key)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::IdGenerator;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn due_keys_round_trip_and_sort_by_time_then_id(a in any::<u64>(), b in any::<u64>(), ida in any::<[u8; 16]>(), idb in any::<[u8; 16]>()) {
            let (ta, tb) = (Timestamp::from_millis(a), Timestamp::from_millis(b));
            let (ia, ib) = (Id::from_bytes(ida), Id::from_bytes(idb));
            let (ka, kb) = (due_key(ta, ia), due_key(tb, ib));
            prop_assert_eq!(parse_due_key(&ka), Some((ta, ia)));
            prop_assert_eq!(ka.cmp(&kb), (a, ida).cmp(&(b, idb)));
        }
    }

    #[test]
    fn malformed_due_keys_are_rejected() {
        let id = IdGenerator::default().next(Timestamp::from_millis(1));
        let key = due_key(Timestamp::from_millis(7), id);
        assert!(parse_due_key(&key[..23]).is_none());
        assert!(parse_due_key(&[key.as_slice(), b"x"].concat()).is_none());
    }
}
