//! The node's sending domains with their DKIM keys, copied into PostgreSQL by
//! `herald store copy` ([`crate::storage::copy`]), row for row as [`super::PostgresDomains`]
//! writes them (each with its next check armed, as there).

use super::postgres::{WRITE, values};
use crate::domains::model::Domain;
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// Copies every sending domain (their lookup by name is the table's own index there).
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("domains");
    copy.each::<Domain>(|copy, _, domain| {
        let statement = Statement::new(copy.to(), WRITE, values(&domain));
        copy.write("domains", statement)
    })
}
