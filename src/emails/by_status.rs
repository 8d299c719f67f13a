//! The Emails page's index by current status: one empty entry per email under (team,
//! status, email id), moved in the same batch as every change of the email's last event,
//! so a filtered page reads only the emails it shows, newest first, however many the
//! team has. A build's first start gives the emails stored before the index theirs.

use crate::storage::Error;
use herald_queue::{Batch, Id, Scan, Store, Table};

use super::EmailState;

/// The index.
const TABLE: Table = Table::EMAILS_BY_STATUS;

/// The key in [`Table::META`] that says every email has its entry.
const INDEXED: &[u8] = b"emails_by_status_indexed";

/// Every status, in code order (the code is one byte of the key).
const STATES: [EmailState; 11] = [
    EmailState::Scheduled,
    EmailState::Sent,
    EmailState::Delivered,
    EmailState::DeliveryDelayed,
    EmailState::Bounced,
    EmailState::Complained,
    EmailState::Opened,
    EmailState::Clicked,
    EmailState::Failed,
    EmailState::Suppressed,
    EmailState::Canceled,
];

/// The one-byte code of `state` in keys.
pub(crate) fn code(state: EmailState) -> u8 {
    STATES
        .iter()
        .position(|s| *s == state)
        .and_then(|p| u8::try_from(p).ok())
        .unwrap_or(u8::MAX)
}

/// The status of a key's code.
pub(crate) fn state_of(code: u8) -> Option<EmailState> {
    STATES.get(usize::from(code)).copied()
}

fn prefix(team_id: Id, state: EmailState) -> Vec<u8> {
    let mut key = Vec::with_capacity(33);
    key.extend_from_slice(team_id.as_bytes());
    key.push(code(state));
    key
}

fn key(team_id: Id, state: EmailState, id: Id) -> Vec<u8> {
    let mut key = prefix(team_id, state);
    key.extend_from_slice(id.as_bytes());
    key
}

/// Adds, in `batch`, the entry of a new email, one of `broadcast`'s when given (which
/// counts it, [`crate::broadcasts::counts`]).
pub fn put(batch: &mut Batch, team_id: Id, id: Id, broadcast: Option<Id>, state: EmailState) {
    batch.put_raw(TABLE, key(team_id, state, id), Vec::new());
    if let Some(broadcast) = broadcast {
        crate::broadcasts::counts::entered(batch, team_id, broadcast, state);
    }
}

/// Records an event of kind `kind` on the email `id` of `team_id` (one of `broadcast`'s
/// when given) whose `last_event` is `*last_event`: moves it as the one rule says
/// ([`EmailState::after`]), with the email's entry here and its broadcast's count, in
/// `batch`. The one writer of an email's `last_event`; whether it moved.
pub fn advance(
    batch: &mut Batch,
    team_id: Id,
    id: Id,
    broadcast: Option<Id>,
    last_event: &mut EmailState,
    kind: EmailState,
) -> bool {
    let next = last_event.after(kind);
    moved(batch, team_id, id, broadcast, *last_event, next);
    let changed = next != *last_event;
    *last_event = next;
    changed
}

/// Moves, in `batch`, an email's entry from `from` to `to` (and its broadcast's count).
fn moved(batch: &mut Batch, team_id: Id, id: Id, broadcast: Option<Id>, from: EmailState, to: EmailState) {
    if from != to {
        batch.delete_raw(TABLE, key(team_id, from, id));
        batch.put_raw(TABLE, key(team_id, to, id), Vec::new());
        if let Some(broadcast) = broadcast {
            crate::broadcasts::counts::moved(batch, team_id, broadcast, from, to);
        }
    }
}

/// Deletes, in `batch`, whatever entry an email has.
pub fn erase(batch: &mut Batch, team_id: Id, id: Id) {
    for state in STATES {
        batch.delete_raw(TABLE, key(team_id, state, id));
    }
}

/// Deletes, in `batch`, every entry of a team.
pub fn erase_team(batch: &mut Batch, team_id: Id) {
    batch.delete_prefix(TABLE, team_id.as_bytes());
}

/// Up to `limit` ids of `team_id`'s emails now in `state`, newest first, before `before`
/// when given (an id, or the first bytes of one: a time bound).
pub fn page(
    store: &Store,
    team_id: Id,
    state: EmailState,
    before: Option<&[u8]>,
    limit: usize,
) -> Result<Vec<Id>, Error> {
    let prefix = prefix(team_id, state);
    let after = before.map(|bound| [prefix.as_slice(), bound].concat());
    let entries = store.scan_raw(
        TABLE,
        Scan {
            prefix: &prefix,
            after: after.as_deref(),
            reverse: true,
            limit,
        },
    )?;
    Ok(entries
        .iter()
        .filter_map(|(key, _)| Id::from_slice(&key[17..]))
        .collect())
}

/// Gives every email stored before the index its entry, once (the first start of a
/// build with the index, before anything is served); answers how many.
pub fn build(store: &Store) -> Result<usize, Error> {
    super::record::once_over_statuses(store, INDEXED, |batch, status| {
        put(batch, status.team_id, status.id, None, status.last_event);
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_is_found_under_its_current_status_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
        let team = store.next_id();
        let (a, b) = (store.next_id(), store.next_id());
        let mut batch = Batch::new();
        put(&mut batch, team, a, None, EmailState::Sent);
        put(&mut batch, team, b, None, EmailState::Sent);
        moved(&mut batch, team, a, None, EmailState::Sent, EmailState::Delivered);
        moved(&mut batch, team, a, None, EmailState::Delivered, EmailState::Opened);
        store.commit(batch).wait().expect("commit");
        assert_eq!(page(&store, team, EmailState::Sent, None, 10).expect("page"), vec![b]);
        assert_eq!(page(&store, team, EmailState::Opened, None, 10).expect("page"), vec![a]);
        assert!(
            page(&store, team, EmailState::Delivered, None, 10)
                .expect("page")
                .is_empty()
        );
        let mut batch = Batch::new();
        put(&mut batch, team, store.next_id(), None, EmailState::Sent);
        store.commit(batch).wait().expect("commit");
        let newest_first = page(&store, team, EmailState::Sent, None, 10).expect("page");
        assert_eq!(newest_first.len(), 2);
        let before = newest_first[0];
        assert_eq!(
            page(&store, team, EmailState::Sent, Some(before.as_bytes()), 10).expect("page"),
            vec![b]
        );
        let mut batch = Batch::new();
        erase(&mut batch, team, a);
        store.commit(batch).wait().expect("commit");
        assert!(
            page(&store, team, EmailState::Opened, None, 10)
                .expect("page")
                .is_empty()
        );
    }

    /// Every state, for the generators.
    fn any_state() -> impl proptest::strategy::Strategy<Value = EmailState> {
        proptest::sample::select(STATES.to_vec())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Whatever events arrive, in whatever order and however split across writes,
        /// the status index holds the email under its `last_event` alone, and its
        /// broadcast counts it once, in that status.
        #[test]
        fn the_index_and_the_broadcast_counts_follow_last_event(
            first in any_state(),
            events in proptest::collection::vec((any_state(), proptest::bool::ANY), 0..24),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let (store, _clock) = crate::testing::store(dir.path(), 1_795_334_400_000);
            let (team, email, broadcast) = (store.next_id(), store.next_id(), store.next_id());
            let mut last_event = first;
            let mut batch = Batch::new();
            put(&mut batch, team, email, Some(broadcast), first);
            for (kind, commit_now) in events {
                let before = last_event;
                let moved = advance(&mut batch, team, email, Some(broadcast), &mut last_event, kind);
                proptest::prop_assert_eq!(last_event, before.after(kind));
                proptest::prop_assert_eq!(moved, before != last_event);
                if commit_now && !batch.is_empty() {
                    store.commit(std::mem::take(&mut batch)).wait().expect("commit");
                }
            }
            store.commit(batch).wait().expect("commit");
            for state in STATES {
                let listed = page(&store, team, state, None, 10).expect("page");
                let expected = if state == last_event { vec![email] } else { Vec::new() };
                proptest::prop_assert_eq!(listed, expected, "{:?}", state);
            }
            let counts = crate::broadcasts::counts::read(&store, team, broadcast).expect("counts");
            proptest::prop_assert_eq!(counts.into_iter().collect::<Vec<_>>(), vec![(last_event, 1)]);
        }
    }
}
