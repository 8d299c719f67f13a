//! The store's format: each build leaves in the store the newest format it writes, and
//! refuses to open a store a newer build has written, which it would misread. A build
//! from before a format change sees data it does not understand as missing: a record
//! whose bodies live in its kept message would show none, and the kept message would
//! never be removed.

use anyhow::bail;
use herald_queue::{Batch, Store, Table};

/// Where the format is kept, in [`Table::META`].
const KEY: &[u8] = b"store.format";

/// The format this build writes and the newest it reads.
///
/// 1. Emails may keep their bodies only in the message the spool retains after delivery
///    (`content_in_message`, `text_derived` and `line_feeds` on the record,
///    `retain` on the envelope).
/// 2. Broadcasts count their emails by status as they move (`counted` on the broadcast,
///    [`crate::broadcasts::store`]): a build that does not would leave them wrong.
/// 3. Messages of 4 KiB or more live in body files, their places in the spool's
///    `body_places` table: a build before would find them missing.
pub const FORMAT: u32 = 3;

/// Refuses a store written by a newer build (naming both formats), and otherwise records
/// [`FORMAT`] in it, durably, before anything else writes.
pub fn check(store: &Store) -> anyhow::Result<()> {
    let found = match store.get_raw(Table::META, KEY)? {
        None => 0,
        Some(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.parse::<u32>().ok())
            .ok_or_else(|| anyhow::anyhow!("the store's format marker is not a number: {bytes:?}"))?,
    };
    if found > FORMAT {
        bail!(
            "the store in {} was written by a newer herald (store format {found}; this build reads formats \
             up to {FORMAT}): run that version or a later one, or restore a backup taken before the upgrade",
            store.path().display()
        );
    }
    if found < FORMAT {
        let mut batch = Batch::new();
        batch.put_raw(Table::META, KEY.to_vec(), FORMAT.to_string().into_bytes());
        store.commit(batch).wait()?;
        tracing::info!(from = found, to = FORMAT, "store format recorded");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_marked_with_this_format_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        check(&store).expect("an unmarked store opens");
        assert_eq!(
            store.get_raw(Table::META, KEY).expect("read"),
            Some(FORMAT.to_string().into_bytes())
        );
        check(&store).expect("its own format opens");

        let mut batch = Batch::new();
        batch.put_raw(Table::META, KEY.to_vec(), (FORMAT + 1).to_string().into_bytes());
        store.commit(batch).wait().expect("written");
        let refused = check(&store).expect_err("a newer format is refused").to_string();
        assert!(
            refused.contains(&format!("store format {}", FORMAT + 1)) && refused.contains("a newer herald"),
            "{refused}"
        );
    }
}
