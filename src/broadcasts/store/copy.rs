//! The node's broadcasts, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresBroadcasts`] writes them:
//! each broadcast with the counts of its emails by status and of those a cancel took
//! back, then its contacts' markers.
//!
//! The counts are copied as the node counted them, not counted again from the emails
//! copied before: retention takes emails away, not their broadcast's outcomes. The
//! worker's queue is not copied: it is the `broadcasts` table's own index there.

use herald_queue::{Id, Table};

use super::counts;
use super::postgres::{COUNT, TAKEN_BACK, WRITE, WRITE_RECIPIENT, count_values, recipient_values, values};
use crate::broadcasts::model::{Broadcast, Recipient};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::{Statement, enum_text};

/// Copies every broadcast with its counts, then every contact's marker.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("broadcasts");
    copy.expect("broadcast recipients");
    copy.each::<Broadcast>(|copy, _, broadcast| {
        copy.write("broadcasts", Statement::new(copy.to(), WRITE, values(&broadcast)))?;
        let (team_id, id) = (broadcast.team_id, broadcast.id);
        for (state, n) in counts::read(copy.from(), team_id, id)? {
            let values = count_values(team_id, id, &enum_text(&state), bigint(n));
            copy.also(Statement::new(copy.to(), COUNT, values))?;
        }
        let canceled = counts::canceled(copy.from(), team_id, id)?;
        if canceled > 0 {
            let values = count_values(team_id, id, TAKEN_BACK, bigint(canceled));
            copy.also(Statement::new(copy.to(), COUNT, values))?;
        }
        Ok(())
    })?;
    copy.each::<Recipient>(|copy, key, recipient| {
        let (Some(team_id), Some(broadcast)) = (
            key.get(..16).and_then(Id::from_slice),
            key.get(16..32).and_then(Id::from_slice),
        ) else {
            return Err(Error::Corrupt {
                table: Table::BROADCAST_RECIPIENTS.name(),
                reason: "a marker not under its team and broadcast".to_owned(),
            });
        };
        let statement = Statement::new(
            copy.to(),
            WRITE_RECIPIENT,
            recipient_values(team_id, broadcast, &recipient),
        );
        copy.write("broadcast recipients", statement)
    })
}

/// A count as a `bigint`; no count comes near its end.
fn bigint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
