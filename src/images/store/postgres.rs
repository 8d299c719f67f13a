//! Images in PostgreSQL (`images`; see the schema's second migration): the listed
//! record and the bytes in one row, so that keeping and removing both together is one
//! statement, and shared by every node, so that any node serves an image uploaded
//! through another. PostgreSQL keeps the bytes out of line, so lists do not read them.

use herald_queue::Id;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::ImageStore;
use crate::images::model::{Format, Image};
use crate::storage::Error;
use crate::storage::postgres::{Postgres, Value, from_driver, time, timestamp};

/// Images deleted per pass of `erase_team`: up to [`crate::images::IMAGE_BYTES_MAX`]
/// each, so a pass stays a transaction of bounded size.
const ERASE_BATCH: i64 = 50;

/// The columns of `images` but the bytes, in the order [`image`] reads them.
const COLUMNS: &str = "id, team_id, secret, name, format, size, created_at";

/// Writes an image with its bytes, new or changed.
pub(super) const PUT: &str = "INSERT INTO images (id, team_id, secret, name, format, size, content, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (id) DO UPDATE SET secret = EXCLUDED.secret, name = EXCLUDED.name, format = EXCLUDED.format,
        size = EXCLUDED.size, content = EXCLUDED.content, created_at = EXCLUDED.created_at";

/// Images in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresImages {
    db: Postgres,
}

impl PostgresImages {
    /// Images in `db`, whose schema is migrated.
    pub fn new(db: Postgres) -> PostgresImages {
        PostgresImages { db }
    }
}

/// The name `format` is kept under.
fn name(format: Format) -> &'static str {
    match format {
        Format::Png => "png",
        Format::Jpeg => "jpeg",
        Format::Gif => "gif",
        Format::Webp => "webp",
    }
}

/// The format kept under `name`.
fn format_named(name_kept: &str) -> Option<Format> {
    Format::ALL.into_iter().find(|&format| name(format) == name_kept)
}

fn corrupt(reason: String) -> Error {
    Error::Corrupt {
        table: "images",
        reason,
    }
}

/// The values of [`PUT`] for `image` with its `bytes`.
pub(super) fn values(image: &Image, bytes: Vec<u8>) -> Result<Vec<Value>, Error> {
    let size = i64::try_from(image.bytes).map_err(|_| Error::Failed(format!("image {} is too large", image.id)))?;
    Ok(vec![
        Box::new(image.id.uuid()),
        Box::new(image.team_id.uuid()),
        Box::new(image.secret.to_vec()),
        Box::new(image.name.clone()),
        Box::new(name(image.format)),
        Box::new(size),
        Box::new(bytes),
        Box::new(time(image.created_at)),
    ])
}

fn image(row: &Row) -> Result<Image, Error> {
    let id = Id::from(row.get::<_, uuid::Uuid>(0));
    let secret: &[u8] = row.get(2);
    let secret = secret
        .try_into()
        .map_err(|_| corrupt(format!("image {id} has a secret of {} bytes", secret.len())))?;
    let format = row.get::<_, &str>(4);
    let format = format_named(format).ok_or_else(|| corrupt(format!("image {id} has the format {format:?}")))?;
    let size: i64 = row.get(5);
    Ok(Image {
        id,
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        secret,
        name: row.get(3),
        format,
        bytes: u64::try_from(size).map_err(|_| corrupt(format!("image {id} has the size {size}")))?,
        created_at: timestamp(row.get(6)),
    })
}

impl ImageStore for PostgresImages {
    fn put(&self, image: &Image, bytes: &[u8]) -> Result<(), Error> {
        let values = values(image, bytes.to_vec())?;
        let values: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| &**value as _).collect();
        self.db.run(async |client| {
            client.execute(PUT, &values).await.map_err(from_driver)?;
            Ok(())
        })
    }

    fn count(&self, team_id: Id, at_most: usize) -> Result<usize, Error> {
        let at_most = i64::try_from(at_most).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            // Counted in the index, and no further than asked.
            let row = client
                .query_one(
                    "SELECT count(*) FROM (SELECT 1 FROM images WHERE team_id = $1 LIMIT $2) AS kept",
                    &[&team_id.uuid(), &at_most],
                )
                .await
                .map_err(from_driver)?;
            let count: i64 = row.get(0);
            Ok(usize::try_from(count).unwrap_or(usize::MAX))
        })
    }

    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<Image>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.run(async |client| {
            let sql = format!("SELECT {COLUMNS} FROM images WHERE team_id = $1 ORDER BY id DESC LIMIT $2");
            let rows = client
                .query(&sql, &[&team_id.uuid(), &limit])
                .await
                .map_err(from_driver)?;
            rows.iter().map(image).collect()
        })
    }

    fn served(&self, team_id: Id, secret: &[u8; 16]) -> Result<Option<(Format, bytes::Bytes)>, Error> {
        self.db.run(async |client| {
            let row = client
                .query_opt(
                    "SELECT format, content FROM images WHERE team_id = $1 AND secret = $2",
                    &[&team_id.uuid(), &secret.as_slice()],
                )
                .await
                .map_err(from_driver)?;
            let Some(row) = row else {
                return Ok(None);
            };
            // Bytes of a format this build does not know are not served, as if absent,
            // as on RocksDB.
            let Some(format) = format_named(row.get(0)) else {
                return Ok(None);
            };
            Ok(Some((format, bytes::Bytes::from(row.get::<_, Vec<u8>>(1)))))
        })
    }

    fn delete(&self, team_id: Id, secret: &[u8; 16]) -> Result<bool, Error> {
        self.db.run(async |client| {
            let deleted = client
                .execute(
                    "DELETE FROM images WHERE team_id = $1 AND secret = $2",
                    &[&team_id.uuid(), &secret.as_slice()],
                )
                .await
                .map_err(from_driver)?;
            Ok(deleted > 0)
        })
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        self.db.run(async |client| {
            // One more is picked than is deleted, to tell whether any is left without
            // another pass. A statement's data-modifying WITH runs whether or not the
            // rest reads it.
            let row = client
                .query_one(
                    "WITH picked AS (
                        SELECT id FROM images WHERE team_id = $1 ORDER BY id LIMIT $2::bigint + 1
                     ), deleted AS (
                        DELETE FROM images WHERE id IN (SELECT id FROM picked ORDER BY id LIMIT $2)
                     )
                     SELECT count(*) > $2 FROM picked",
                    &[&team_id.uuid(), &ERASE_BATCH],
                )
                .await
                .map_err(from_driver)?;
            Ok(row.get(0))
        })
    }
}
