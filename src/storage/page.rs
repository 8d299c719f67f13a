//! A page of a list: `limit` items from a cursor. Lists are newest first. Records are
//! keyed `<team id><item id>` with UUIDv7 item ids, so newest first is a reverse scan of
//! the team's prefix; `after=X` continues with items older than X, `before=X` returns
//! the items just newer than X. The adapters parse a page from their own input (REST
//! query parameters); the resources' storage modules load it.

use herald_queue::{Id, Record, Scan, Store, Table};

/// Keyed items of a page, and whether more lie beyond it.
type Entries<T> = (Vec<(Vec<u8>, T)>, bool);

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
        let (entries, has_more) = self.entries(prefix, |scan| store.scan::<R>(scan))?;
        Ok((entries.into_iter().map(|(_, record)| record).collect(), has_more))
    }

    /// One page of the ids ending the keys under `prefix` in `table`, an index whose keys
    /// are `prefix + item id` (values ignored): newest first, and whether more lie beyond.
    pub fn load_ids(&self, store: &Store, table: Table, prefix: &[u8]) -> Result<(Vec<Id>, bool), herald_queue::Error> {
        let (entries, has_more) = self.entries(prefix, |scan| store.scan_raw(table, scan))?;
        let ids = entries
            .into_iter()
            .filter_map(|(key, _)| key.len().checked_sub(16).and_then(|at| Id::from_slice(&key[at..])))
            .collect();
        Ok((ids, has_more))
    }

    /// This page of `items`, a small collection read whole: newest (largest id) first.
    pub fn slice<T>(&self, mut items: Vec<T>, id: impl Fn(&T) -> Id) -> (Vec<T>, bool) {
        items.sort_by_key(|item| std::cmp::Reverse(id(item)));
        let (mut page, has_more) = match self.cursor {
            Cursor::Start => {
                let has_more = items.len() > self.limit;
                items.truncate(self.limit);
                (items, has_more)
            }
            Cursor::After(after) => {
                let mut older: Vec<T> = items.into_iter().filter(|item| id(item) < after).collect();
                let has_more = older.len() > self.limit;
                older.truncate(self.limit);
                (older, has_more)
            }
            Cursor::Before(before) => {
                let mut newer: Vec<T> = items.into_iter().filter(|item| id(item) > before).collect();
                let has_more = newer.len() > self.limit;
                newer.drain(..newer.len().saturating_sub(self.limit));
                (newer, has_more)
            }
        };
        page.shrink_to_fit();
        (page, has_more)
    }

    fn entries<T>(
        &self,
        prefix: &[u8],
        scan: impl Fn(Scan<'_>) -> Result<Vec<(Vec<u8>, T)>, herald_queue::Error>,
    ) -> Result<Entries<T>, herald_queue::Error> {
        let fetch = self.limit.saturating_add(1);
        let cursor_key = |id: Id| [prefix, id.as_bytes().as_slice()].concat();
        let (mut items, reversed) = match self.cursor {
            Cursor::Start => (
                scan(Scan {
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
                    scan(Scan {
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
                    scan(Scan {
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
        Ok((items, has_more))
    }
}
