//! A page of a list: `limit` items from a cursor. Lists are newest first. Records are
//! keyed `<team id><item id>` with UUIDv7 item ids, so newest first is a reverse scan of
//! the team's prefix; `after=X` continues with items older than X, `before=X` returns
//! the items just newer than X. The adapters parse a page from their own input (REST
//! query parameters); the resources' storage modules load it.

use herald_queue::{Id, Record, Scan, Store};

/// Largest page.
pub const LIMIT_MAX: usize = 100;

/// A page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// Items per page.
    pub limit: usize,
    /// Where to start.
    pub cursor: Cursor,
}

/// A position in a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// From the newest item.
    Start,
    /// Items older than this one.
    After(Id),
    /// Items newer than this one.
    Before(Id),
}

impl PageRequest {
    /// One page of the records of type `R` under `prefix` (16 bytes of team id), whose
    /// keys are `prefix + item id`. Returns the page, newest first, and whether more items
    /// lie beyond it in the direction of travel.
    pub fn load<R: Record>(&self, store: &Store, prefix: &[u8]) -> Result<(Vec<R>, bool), herald_queue::Error> {
        let fetch = self.limit.saturating_add(1);
        let cursor_key = |id: Id| [prefix, id.as_bytes().as_slice()].concat();
        let (mut items, reversed) = match self.cursor {
            Cursor::Start => (
                store.scan::<R>(Scan {
                    prefix,
                    after: None,
                    reverse: true,
                    limit: fetch,
                })?,
                false,
            ),
            Cursor::After(id) => {
                let key = cursor_key(id);
                (
                    store.scan::<R>(Scan {
                        prefix,
                        after: Some(&key),
                        reverse: true,
                        limit: fetch,
                    })?,
                    false,
                )
            }
            Cursor::Before(id) => {
                let key = cursor_key(id);
                (
                    store.scan::<R>(Scan {
                        prefix,
                        after: Some(&key),
                        reverse: false,
                        limit: fetch,
                    })?,
                    true,
                )
            }
        };
        let has_more = items.len() > self.limit;
        items.truncate(self.limit);
        if reversed {
            items.reverse();
        }
        Ok((items.into_iter().map(|(_, record)| record).collect(), has_more))
    }
}
