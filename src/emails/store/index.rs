//! The index of emails by current status: one empty entry per email under (team,
//! status, email id), moved in the same batch as every change of the email's last event,
//! so a filtered page reads only the emails it shows, newest first, however many the
//! team has. A build's first start gives the emails stored before the index theirs
//! ([`super::build_index`]).

use herald_queue::{Batch, Id, Scan, Store, Table};

use super::super::record::EmailStatus;
use super::super::state::EmailState;
use crate::storage::Error;

/// The index.
const TABLE: Table = Table::EMAILS_BY_STATUS;

/// The key in [`Table::META`] that says every email has its entry.
pub(super) const INDEXED: &[u8] = b"emails_by_status_indexed";

fn prefix(team_id: Id, state: EmailState) -> Vec<u8> {
    let mut key = Vec::with_capacity(33);
    key.extend_from_slice(team_id.as_bytes());
    key.push(state.code());
    key
}

fn key(team_id: Id, state: EmailState, id: Id) -> Vec<u8> {
    let mut key = prefix(team_id, state);
    key.extend_from_slice(id.as_bytes());
    key
}

/// Adds, in `batch`, the entry of a new email, one of `broadcast`'s when given (which
/// counts it, [`crate::broadcasts::store`]).
pub(super) fn put(batch: &mut Batch, team_id: Id, id: Id, broadcast: Option<Id>, state: EmailState) {
    batch.put_raw(TABLE, key(team_id, state, id), Vec::new());
    if let Some(broadcast) = broadcast {
        crate::broadcasts::store::counts::entered(batch, team_id, broadcast, state);
    }
}

/// Moves `status.last_event` as an event of kind `kind` says ([`EmailState::after`]),
/// with the email's entry here and its broadcast's count, in `batch`; whether it moved.
pub(super) fn advance(batch: &mut Batch, status: &mut EmailStatus, kind: EmailState) -> bool {
    let next = status.last_event.after(kind);
    moved(
        batch,
        status.team_id,
        status.id,
        status.broadcast_id,
        status.last_event,
        next,
    );
    let changed = next != status.last_event;
    status.last_event = next;
    changed
}

/// Moves, in `batch`, an email's entry from `from` to `to` (and its broadcast's count).
fn moved(batch: &mut Batch, team_id: Id, id: Id, broadcast: Option<Id>, from: EmailState, to: EmailState) {
    if from != to {
        batch.delete_raw(TABLE, key(team_id, from, id));
        batch.put_raw(TABLE, key(team_id, to, id), Vec::new());
        if let Some(broadcast) = broadcast {
            crate::broadcasts::store::counts::moved(batch, team_id, broadcast, from, to);
        }
    }
}

/// Deletes, in `batch`, whatever entry an email has.
pub(super) fn erase(batch: &mut Batch, team_id: Id, id: Id) {
    for state in EmailState::ALL {
        batch.delete_raw(TABLE, key(team_id, state, id));
    }
}

/// Deletes, in `batch`, every entry of a team.
pub(super) fn erase_team(batch: &mut Batch, team_id: Id) {
    batch.delete_prefix(TABLE, team_id.as_bytes());
}

/// Up to `limit` ids of `team_id`'s emails now in `state`, newest first, before `before`
/// when given (an id, or the first bytes of one: a time bound).
pub(super) fn page(
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
