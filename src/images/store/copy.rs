//! The node's images with their bytes, copied into PostgreSQL by `herald store copy`
//! ([`crate::storage::copy`]), row for row as [`super::PostgresImages`] writes them: the
//! listed record and the bytes kept apart on RocksDB go into one row there.

use herald_queue::Table;

use super::postgres::{PUT, values};
use super::{bytes_key, code};
use crate::images::model::Image;
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// Copies every image with its bytes. An image is written as it is served: its bytes
/// must be there, behind the byte of its own format (RocksDB writes both in one batch,
/// so anything else is a damaged record, and refusing it is better than serving it
/// wrong).
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.expect("images");
    copy.each::<Image>(|copy, _, image| {
        let stored = copy
            .from()
            .get_raw(Table::IMAGE_BYTES, &bytes_key(image.team_id, &image.secret))?;
        let content = match stored.as_deref() {
            Some([format, content @ ..]) if *format == code(image.format) => content.to_vec(),
            _ => {
                return Err(Error::Corrupt {
                    table: Table::IMAGE_BYTES.name(),
                    reason: format!("image {} has no bytes of its format", image.id),
                });
            }
        };
        let statement = Statement::new(copy.to(), PUT, values(&image, content)?);
        copy.write("images", statement)
    })
}
