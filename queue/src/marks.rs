//! The marks ([`Batch::mark`](crate::Batch::mark)) the commit thread has written: an
//! entry that every batch of a day repeats (the day's counters expire by it) is written
//! once, and its repeats are skipped while it is known to be in the store.
//!
//! A mark is remembered only once the write that put it is durable, and every mark of a
//! table is forgotten as soon as anything other than a mark writes to that table (a
//! delete, above all: the sweep that removes expired entries), so a skipped mark is
//! always one the store holds. The commit thread is the store's only writer, so nothing
//! changes a table behind its back. A restart starts with nothing remembered.

use std::collections::HashSet;

use crate::table::Table;

/// Marks remembered at most; past it, all are forgotten and each is written once more.
const MARKS_MAX: usize = 4_096;

/// The marks known to be in the store.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    /// By table: a few tables at most, and every write of the group looks its own up.
    written: Vec<(Table, HashSet<Vec<u8>>)>,
    len: usize,
}

impl Marks {
    /// Whether the mark `key` of `table` is known to be in the store.
    pub(crate) fn written(&self, table: Table, key: &[u8]) -> bool {
        self.written
            .iter()
            .any(|(written, keys)| *written == table && keys.contains(key))
    }

    /// Forgets `table`'s marks: something else wrote to it.
    pub(crate) fn forget(&mut self, table: Table) {
        if let Some(at) = self.written.iter().position(|(written, _)| *written == table) {
            let (_, keys) = self.written.swap_remove(at);
            self.len -= keys.len();
        }
    }

    /// Remembers the mark `key` of `table`, now durable.
    pub(crate) fn remember(&mut self, table: Table, key: Vec<u8>) {
        if self.len >= MARKS_MAX {
            self.written.clear();
            self.len = 0;
        }
        let at = match self.written.iter().position(|(written, _)| *written == table) {
            Some(at) => at,
            None => {
                self.written.push((table, HashSet::new()));
                self.written.len() - 1
            }
        };
        if self.written[at].1.insert(key) {
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_forgotten_by_table_and_past_the_limit() {
        let mut marks = Marks::default();
        marks.remember(Table::COUNTER_EXPIRY, b"day".to_vec());
        marks.remember(Table::COUNTER_EXPIRY, b"day".to_vec());
        marks.remember(Table::DUE, b"other".to_vec());
        assert_eq!(marks.len, 2);
        assert!(marks.written(Table::COUNTER_EXPIRY, b"day"));
        assert!(!marks.written(Table::DUE, b"day"));
        marks.forget(Table::COUNTER_EXPIRY);
        assert!(!marks.written(Table::COUNTER_EXPIRY, b"day"));
        assert!(marks.written(Table::DUE, b"other"));
        assert_eq!(marks.len, 1);
        for n in 0..MARKS_MAX - 1 {
            marks.remember(Table::DUE, n.to_be_bytes().to_vec());
        }
        assert_eq!(marks.len, MARKS_MAX);
        marks.remember(Table::DUE, b"one more".to_vec());
        assert_eq!(marks.len, 1);
        assert!(!marks.written(Table::DUE, b"other"));
        assert!(marks.written(Table::DUE, b"one more"));
    }
}
