//! Write generations: one counter per table, advanced by the commit thread after each
//! write that touches the table. What is derived from a table's records (a decoded
//! sending domain, whether a team has a webhook) can then be kept and trusted for as long
//! as the table's generation stays where it was when it was read, without asking the store
//! again on every message.
//!
//! The order makes it safe: the commit thread advances a generation only after the write
//! is visible, and a reader loads the generation before it reads. A reader whose read
//! missed a write therefore loaded a generation older than the one the write leaves, and
//! its next look sees the change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::batch::Op;
use crate::table::Table;

/// The write generation of every table.
#[derive(Debug)]
pub(crate) struct Generations {
    /// One per table of [`Table::ALL`], then one shared by tables this build does not
    /// know (a newer build's, opened so the store opens).
    slots: Vec<AtomicU64>,
    index: HashMap<&'static str, usize>,
}

impl Generations {
    pub(crate) fn new() -> Self {
        Generations {
            slots: (0..=Table::ALL.len()).map(|_| AtomicU64::new(0)).collect(),
            index: Table::ALL
                .iter()
                .enumerate()
                .map(|(i, table)| (table.name(), i))
                .collect(),
        }
    }

    fn slot(&self, table: Table) -> usize {
        self.index.get(table.name()).copied().unwrap_or(Table::ALL.len())
    }

    /// `table`'s generation now.
    pub(crate) fn of(&self, table: Table) -> u64 {
        self.slots[self.slot(table)].load(Ordering::Acquire)
    }

    /// Advances the generation of every table `ops` touch, once each. Called after the
    /// write is visible, failed writes too (a failed write may have been applied in part).
    pub(crate) fn advance<'a>(&self, ops: impl Iterator<Item = &'a Op>) {
        let mut touched = vec![false; self.slots.len()];
        let mut last: Option<(&'static str, usize)> = None;
        for op in ops {
            let table = op.table();
            // Ops come in runs of one table; skip the lookup for a run's repeats.
            let slot = match last {
                Some((name, slot)) if std::ptr::eq(name, table.name()) => slot,
                _ => self.slot(table),
            };
            last = Some((table.name(), slot));
            touched[slot] = true;
        }
        for (slot, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
            self.slots[slot].fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;

    #[test]
    fn a_write_advances_the_tables_it_touches_once_and_no_other() {
        let generations = Generations::new();
        let mut batch = Batch::new();
        batch.put_raw(Table::DOMAINS, b"a".to_vec(), b"1".to_vec());
        batch.put_raw(Table::DOMAINS, b"b".to_vec(), b"2".to_vec());
        batch.delete_raw(Table::WEBHOOKS, b"c".to_vec());
        generations.advance(batch.ops.iter());
        assert_eq!(generations.of(Table::DOMAINS), 1);
        assert_eq!(generations.of(Table::WEBHOOKS), 1);
        assert_eq!(generations.of(Table::TEAMS), 0);
        generations.advance(batch.ops.iter());
        assert_eq!(generations.of(Table::DOMAINS), 2);
    }
}
