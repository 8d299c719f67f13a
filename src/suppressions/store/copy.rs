//! The node's suppressed addresses, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresSuppressions`] writes them.

use super::postgres::{UPSERT, values};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;
use crate::suppressions::Suppression;

/// Copies every suppressed address (their lookup by id is the table's own index there).
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("suppressions");
    copy.each::<Suppression>(|copy, _, suppression| {
        let statement = Statement::new(copy.to(), UPSERT, values(&suppression));
        copy.write("suppressions", statement)
    })
}
