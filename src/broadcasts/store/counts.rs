//! Each broadcast's emails by their current status, counted as they move: the email
//! store's status index ([`crate::emails::store`]) adds one to the status an email enters and one to
//! the one it leaves, in the batch that moves it, so the broadcast's outcomes are a few
//! counters to read instead of a pass over every recipient. Retention does not take
//! them back: a broadcast's outcomes outlive its emails' records. They leave with the
//! team.
//!
//! Keys in [`Table::COUNTERS`]: the team id, a mark of their own (teams' metrics are 1,
//! quotas 2, source addresses 3), the broadcast id, whether entered (0) or left (1), and
//! the status's code. The emails a cancel took back are counted apart, under the team id
//! and [`CANCELED`].

use std::collections::BTreeMap;

use herald_queue::{Batch, Id, Scan, Store, Table, decode_counter};

use crate::emails::state::EmailState;
use crate::storage::Error;

/// The byte after the team id that marks these keys.
const MARK: u8 = 4;

fn prefix(team_id: Id, broadcast: Id) -> Vec<u8> {
    let mut key = Vec::with_capacity(35);
    key.extend_from_slice(team_id.as_bytes());
    key.push(MARK);
    key.extend_from_slice(broadcast.as_bytes());
    key
}

fn key(team_id: Id, broadcast: Id, left: bool, state: EmailState) -> Vec<u8> {
    let mut key = prefix(team_id, broadcast);
    key.push(u8::from(left));
    key.push(state.code());
    key
}

/// What follows the team id in the key of a broadcast's count of emails taken back.
const CANCELED: &[u8] = b"broadcast-canceled:";

/// Counts, in `batch`, a new email of `broadcast` in `state`.
pub(crate) fn entered(batch: &mut Batch, team_id: Id, broadcast: Id, state: EmailState) {
    batch.add(key(team_id, broadcast, false, state), 1);
}

/// Counts, in `batch`, an email of `broadcast` moving from `from` to `to`.
pub(crate) fn moved(batch: &mut Batch, team_id: Id, broadcast: Id, from: EmailState, to: EmailState) {
    if from != to {
        batch.add(key(team_id, broadcast, true, from), 1);
        entered(batch, team_id, broadcast, to);
    }
}

/// How many of `broadcast`'s emails are in each status now (statuses with none left out).
pub(crate) fn read(store: &Store, team_id: Id, broadcast: Id) -> Result<BTreeMap<EmailState, u64>, Error> {
    let prefix = prefix(team_id, broadcast);
    let mut entered = BTreeMap::new();
    let mut left = BTreeMap::new();
    for (key, value) in store.scan_raw(Table::COUNTERS, Scan::prefix(&prefix))? {
        let (Some(&direction), Some(&code)) = (key.get(prefix.len()), key.get(prefix.len() + 1)) else {
            continue;
        };
        let Some(state) = EmailState::from_code(code) else {
            continue;
        };
        let counts = if direction == 0 { &mut entered } else { &mut left };
        *counts.entry(state).or_insert(0) += decode_counter(&value);
    }
    Ok(entered
        .into_iter()
        .map(|(state, n)| (state, n.saturating_sub(left.get(&state).copied().unwrap_or(0))))
        .filter(|(_, n)| *n > 0)
        .collect())
}

fn canceled_key(team_id: Id, broadcast: Id) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), CANCELED, broadcast.as_bytes()].concat()
}

/// Counts, in `batch`, one more email of `broadcast` taken back from the queue.
pub(super) fn count_canceled(batch: &mut Batch, team_id: Id, broadcast: Id) {
    batch.add(canceled_key(team_id, broadcast), 1);
}

/// How many of `broadcast`'s emails were taken back from the queue.
pub(super) fn canceled(store: &Store, team_id: Id, broadcast: Id) -> Result<u64, Error> {
    let value = store.get_raw(Table::COUNTERS, &canceled_key(team_id, broadcast))?;
    Ok(value
        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
        .map_or(0, u64::from_le_bytes))
}

/// Stages the deletion of every broadcast count of `team_id`.
pub(super) fn erase_team(batch: &mut Batch, team_id: Id) {
    batch.delete_prefix(Table::COUNTERS, &[team_id.as_bytes().as_slice(), &[MARK]].concat());
    batch.delete_prefix(Table::COUNTERS, &[team_id.as_bytes().as_slice(), CANCELED].concat());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_counted_in_the_status_they_are_in_now() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let (team, broadcast, other) = (store.next_id(), store.next_id(), store.next_id());
        let mut batch = Batch::new();
        for _ in 0..3 {
            entered(&mut batch, team, broadcast, EmailState::Sent);
        }
        entered(&mut batch, team, other, EmailState::Sent);
        moved(&mut batch, team, broadcast, EmailState::Sent, EmailState::Delivered);
        moved(&mut batch, team, broadcast, EmailState::Sent, EmailState::Delivered);
        moved(&mut batch, team, broadcast, EmailState::Delivered, EmailState::Opened);
        moved(&mut batch, team, broadcast, EmailState::Opened, EmailState::Opened);
        store.commit(batch).wait().expect("written");
        assert_eq!(
            read(&store, team, broadcast).expect("read"),
            BTreeMap::from([
                (EmailState::Sent, 1),
                (EmailState::Delivered, 1),
                (EmailState::Opened, 1)
            ])
        );
        assert_eq!(
            read(&store, team, other).expect("read"),
            BTreeMap::from([(EmailState::Sent, 1)])
        );
    }
}
