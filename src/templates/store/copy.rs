//! The node's templates with their versions and variables, copied into PostgreSQL by
//! `herald store copy` ([`crate::storage::copy`]), row for row as
//! [`super::PostgresTemplates`] writes them. Their aliases and list items are not copied:
//! there they are columns of the template's row, and its list is the table itself.

use super::postgres::{INSERT_VARIABLE, INSERT_VERSION, PUT_TEMPLATE, values, version_values};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;
use crate::templates::model::Template;

/// Copies every template, each with its versions and their variables.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("templates");
    copy.each::<Template>(|copy, _, template| {
        let rows = version_values(&template)?;
        copy.write("templates", Statement::new(copy.to(), PUT_TEMPLATE, values(&template)))?;
        for version in rows.versions {
            copy.also(Statement::new(copy.to(), INSERT_VERSION, version))?;
        }
        for variable in rows.variables {
            copy.also(Statement::new(copy.to(), INSERT_VARIABLE, variable))?;
        }
        Ok(())
    })
}
