//! Daily counters per team: how many emails reached each state each day, which the
//! dashboard's Metrics page charts. Counting never reads (each event adds 1 through the
//! store's merge operator), and a day's counters leave together after `[retention]
//! metrics`, counted from the day's start, as one range delete.

use std::collections::BTreeMap;

use herald_queue::{Batch, Due, DueIndex, Error, Id, Scan, Store, Table, Timestamp, decode_counter};

use crate::emails::EmailState;
use crate::retention::Expiry;

const DAY_MS: u64 = 86_400_000;

/// Each team's days with counters, by the day's start.
const EXPIRY: DueIndex = DueIndex::new(Table::COUNTER_EXPIRY);

/// The key prefix of `team_id`'s counters of the day `day` (days since the epoch, UTC).
fn day_key(team_id: Id, day: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(20 + 24);
    key.extend_from_slice(team_id.as_bytes());
    key.extend_from_slice(&day.to_be_bytes());
    key
}

fn day_of(at: Timestamp) -> u32 {
    u32::try_from(at.as_millis() / DAY_MS).unwrap_or(u32::MAX)
}

fn start_of(day: u32) -> Timestamp {
    Timestamp::from_millis(u64::from(day) * DAY_MS)
}

/// Counts, in `batch`, one email of `team_id` reaching `state` at `at`.
pub fn count(batch: &mut Batch, team_id: Id, at: Timestamp, state: EmailState) {
    let day = day_of(at);
    let prefix = day_key(team_id, day);
    // The same entry every time that day: a put of an empty value over itself.
    EXPIRY.arm(batch, start_of(day), &prefix);
    let mut key = prefix;
    key.extend_from_slice(state.name().as_bytes());
    batch.add(key, 1);
}

/// `team_id`'s counts from the day of `from` to the day of `to`, both included: per day
/// (its start) and state, the states that happened.
pub fn daily(
    store: &Store,
    team_id: Id,
    from: Timestamp,
    to: Timestamp,
) -> Result<BTreeMap<(Timestamp, EmailState), u64>, Error> {
    let mut counts = BTreeMap::new();
    for day in day_of(from)..=day_of(to) {
        for (key, value) in store.scan_raw(Table::COUNTERS, Scan::prefix(&day_key(team_id, day)))? {
            let state = std::str::from_utf8(&key[20..])
                .ok()
                .and_then(|name| serde_json::from_value(serde_json::Value::from(name)).ok());
            if let Some(state) = state {
                counts.insert((start_of(day), state), decode_counter(&value));
            }
        }
    }
    Ok(counts)
}

/// Adds to `batch` the deletion of every counter of `team_id`.
pub fn erase_team(batch: &mut Batch, team_id: Id) {
    batch.delete_prefix(Table::COUNTERS, team_id.as_bytes());
}

/// `[retention] metrics`: a team's day of counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Days;

impl Expiry for Days {
    const KIND: &'static str = "metrics";
    const INDEX: DueIndex = EXPIRY;

    fn expire(&self, _: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        batch.delete_prefix(Table::COUNTERS, &due.key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn counts_add_up_per_day_and_state_and_a_day_expires_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 08:00 UTC.
        let (store, clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
        let (team, other) = (store.next_id(), store.next_id());
        let mut batch = Batch::new();
        count(&mut batch, team, store.now(), EmailState::Sent);
        count(&mut batch, team, store.now(), EmailState::Sent);
        count(&mut batch, other, store.now(), EmailState::Sent);
        store.commit(batch).wait().expect("commit");
        clock.advance(Duration::from_secs(20 * 3600));
        let mut batch = Batch::new();
        count(&mut batch, team, store.now(), EmailState::Delivered);
        store.commit(batch).wait().expect("commit");

        let today = start_of(day_of(store.now()));
        let yesterday = start_of(day_of(store.now()) - 1);
        let counts = daily(&store, team, yesterday, today).expect("daily");
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            vec![((yesterday, EmailState::Sent), 2), ((today, EmailState::Delivered), 1)]
        );

        // A day's counters are due a retention after the day's start: yesterday's now.
        let horizon = Timestamp::from_millis(store.now().as_millis() - 24 * 3600 * 1000);
        let due = EXPIRY.due(&store, horizon, None, 10).expect("due");
        assert_eq!(due.len(), 2, "yesterday, for both teams");
        let entries: Vec<&Due> = due.iter().collect();
        crate::retention::expire_now(&store, &Days, &entries).expect("expire");
        let counts = daily(&store, team, yesterday, today).expect("daily");
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            vec![((today, EmailState::Delivered), 1)]
        );
        assert!(daily(&store, other, yesterday, today).expect("daily").is_empty());
    }
}
