//! The node's webhook endpoints, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresWebhooks`] writes them.

use super::postgres::{PUT, values};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;
use crate::webhooks::model::Webhook;

/// Copies every webhook endpoint.
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("webhooks");
    copy.each::<Webhook>(|copy, _, webhook| {
        let statement = Statement::new(copy.to(), PUT, values(&webhook));
        copy.write("webhooks", statement)
    })
}
