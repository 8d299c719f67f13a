//! The node's emails, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresEmails`] writes them: each
//! record with its status (its `last_event`, opens and clicks), its attempt log and its
//! timeline, then the retention each was armed with.
//!
//! Bodies the node kept only in the message its spool retains (`content_in_message`,
//! [`crate::emails::content`]) are read from there into the row, for every node to show:
//! another node cannot read this one's spool. The row keeps saying where the message is,
//! so that `[retention] content` and `emails` still forget it on this node.
//!
//! The index by status is not copied: it is the `emails` table's own index there. Nor
//! are a broadcast's counts written here, as the PostgreSQL store does when an email is
//! created: they are counted already, and copied with their broadcasts
//! ([`crate::broadcasts::store::copy`]).

use herald_queue::{Due, Scan, Table};

use super::postgres::retention::{ARM_CONTENT, ARM_RECORDS};
use super::postgres::rows::{
    INSERT, INSERT_ATTEMPT, INSERT_EVENT, UPDATE_STATUS, attempt_values, create_values, event_values, status_values,
};
use super::retention::{CONTENT, RECORDS, email_of};
use crate::emails::content;
use crate::emails::record::{EmailEvent, EmailRecord, EmailStatus};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::{Statement, time};

/// Copies every email with its status, attempts and timeline, then its retention.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("emails");
    copy.expect("delivery attempts");
    copy.expect("email events");
    copy.each::<EmailRecord>(|copy, key, mut record| {
        let status = copy.from().get::<EmailStatus>(key)?;
        record.merge(status.clone());
        content::fill(copy.spool(), &mut record)?;
        let statement = Statement::new(copy.to(), INSERT, create_values(&record));
        copy.write("emails", statement)?;
        if let Some(status) = &status {
            copy.also(Statement::new(copy.to(), UPDATE_STATUS, status_values(status)))?;
        }
        for (position, attempt) in record.attempts.iter().enumerate() {
            let statement = Statement::new(copy.to(), INSERT_ATTEMPT, attempt_values(record.id, position, attempt));
            copy.write("delivery attempts", statement)?;
        }
        for (_, event) in copy.from().scan::<EmailEvent>(Scan::prefix(record.id.as_bytes()))? {
            copy.write(
                "email events",
                Statement::new(copy.to(), INSERT_EVENT, event_values(&event)),
            )?;
        }
        Ok(())
    })?;
    arm(copy, RECORDS.table(), ARM_RECORDS)?;
    arm(copy, CONTENT.table(), ARM_CONTENT)
}

/// Arms with `sql` ([`ARM_RECORDS`] or [`ARM_CONTENT`]) the retention of every email the
/// node's due index `table` holds an entry of, earliest first. An entry of an email no
/// longer there arms nothing, and one that names no email is skipped: either would have
/// expired nothing.
fn arm(copy: &mut Copy<'_>, table: Table, sql: &'static str) -> Result<(), Error> {
    copy.each_raw(table, |copy, key, _| {
        let Some((due, id)) = Due::decode(key).and_then(|due| Some((due.at, email_of(&due.key)?))) else {
            return Ok(());
        };
        copy.also(Statement::new(
            copy.to(),
            sql,
            vec![Box::new(id.uuid()), Box::new(time(due))],
        ))
    })
}
