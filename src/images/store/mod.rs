//! Where images are kept. [`ImageStore`] is what the images service uploads, lists and
//! removes through and the public address reads; [`RocksImages`] keeps them in the
//! node's RocksDB: the listed record in [`Table::IMAGES`] keyed by team then image id,
//! and the bytes apart in [`Table::IMAGE_BYTES`] keyed by team then secret (the token of
//! the address), behind one byte naming the format, so that serving an image is one read.
//!
//! The keys and encodings of both tables are this module's alone.
//!
//! [`PostgresImages`] keeps them in PostgreSQL, for a cluster.

mod copy;
mod postgres;

use herald_queue::{Batch, Id, Record, Scan, Store, Table};

use super::model::{Format, Image};
use crate::storage::Error;
pub use copy::copy;
pub use postgres::PostgresImages;

/// Images by team.
pub trait ImageStore: Send + Sync + std::fmt::Debug {
    /// Keeps `image` with its `bytes`, durably and together.
    fn put(&self, image: &Image, bytes: &[u8]) -> Result<(), Error>;
    /// How many images `team_id` keeps, counted up to `at_most` (no further).
    fn count(&self, team_id: Id, at_most: usize) -> Result<usize, Error>;
    /// Up to `limit` of `team_id`'s newest images, newest first.
    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<Image>, Error>;
    /// The format and bytes of `team_id`'s image whose secret is `secret`, as served.
    fn served(&self, team_id: Id, secret: &[u8; 16]) -> Result<Option<(Format, bytes::Bytes)>, Error>;
    /// Removes `team_id`'s image whose secret is `secret`, record and bytes together,
    /// durably: `false` when the team has no such image.
    fn delete(&self, team_id: Id, secret: &[u8; 16]) -> Result<bool, Error>;
    /// Erases the deleted team `team_id`'s images, durably: `true` while more is left.
    fn erase_team(&self, team_id: Id) -> Result<bool, Error>;
}

impl Record for Image {
    const TABLE: Table = Table::IMAGES;
}

/// The key of `image`'s record.
fn key(image: &Image) -> Vec<u8> {
    [image.team_id.as_bytes().as_slice(), image.id.as_bytes()].concat()
}

/// The key of the bytes of `team_id`'s image whose secret is `secret`.
fn bytes_key(team_id: Id, secret: &[u8; 16]) -> Vec<u8> {
    [team_id.as_bytes().as_slice(), secret].concat()
}

/// The byte the stored bytes of an image in `format` begin with.
fn code(format: Format) -> u8 {
    match format {
        Format::Png => 1,
        Format::Jpeg => 2,
        Format::Gif => 3,
        Format::Webp => 4,
    }
}

/// The format whose byte is `code`.
fn format_of(code_byte: u8) -> Option<Format> {
    Format::ALL.into_iter().find(|&f| code(f) == code_byte)
}

/// Images in the node's RocksDB.
#[derive(Debug, Clone)]
pub struct RocksImages {
    store: Store,
}

impl RocksImages {
    /// Images in `store`.
    pub fn new(store: Store) -> RocksImages {
        RocksImages { store }
    }

    /// Up to `limit` of `team_id`'s image records, oldest first or newest first.
    fn scan(&self, team_id: Id, reverse: bool, limit: usize) -> Result<Vec<Image>, Error> {
        let found = self.store.scan::<Image>(Scan {
            prefix: team_id.as_bytes(),
            after: None,
            reverse,
            limit,
        })?;
        Ok(found.into_iter().map(|(_, image)| image).collect())
    }
}

impl ImageStore for RocksImages {
    fn put(&self, image: &Image, bytes: &[u8]) -> Result<(), Error> {
        let mut stored = Vec::with_capacity(bytes.len() + 1);
        stored.push(code(image.format));
        stored.extend_from_slice(bytes);
        let mut batch = Batch::new();
        batch.put(key(image), image)?;
        batch.put_raw(Table::IMAGE_BYTES, bytes_key(image.team_id, &image.secret), stored);
        Ok(self.store.commit(batch).wait()?)
    }

    fn count(&self, team_id: Id, at_most: usize) -> Result<usize, Error> {
        // Raw: the records are counted, not read.
        let kept = self.store.scan_raw(
            Table::IMAGES,
            Scan {
                limit: at_most,
                ..Scan::prefix(team_id.as_bytes())
            },
        )?;
        Ok(kept.len())
    }

    fn newest(&self, team_id: Id, limit: usize) -> Result<Vec<Image>, Error> {
        self.scan(team_id, true, limit)
    }

    fn served(&self, team_id: Id, secret: &[u8; 16]) -> Result<Option<(Format, bytes::Bytes)>, Error> {
        let Some(stored) = self.store.get_raw(Table::IMAGE_BYTES, &bytes_key(team_id, secret))? else {
            return Ok(None);
        };
        // Bytes behind a format this build does not know are not served, as if absent.
        let Some(format) = stored.first().copied().and_then(format_of) else {
            return Ok(None);
        };
        Ok(Some((format, bytes::Bytes::from(stored).slice(1..))))
    }

    fn delete(&self, team_id: Id, secret: &[u8; 16]) -> Result<bool, Error> {
        // The record is keyed by id, not secret: the team's few are read to find it.
        // A plain comparison: whoever may delete may list every one of these secrets.
        let Some(image) = self
            .scan(team_id, false, usize::MAX)?
            .into_iter()
            .find(|image| image.secret == *secret)
        else {
            return Ok(false);
        };
        let mut batch = Batch::new();
        batch.delete::<Image>(key(&image));
        batch.delete_raw(Table::IMAGE_BYTES, bytes_key(team_id, secret));
        self.store.commit(batch).wait()?;
        Ok(true)
    }

    fn erase_team(&self, team_id: Id) -> Result<bool, Error> {
        // Both tables are keyed by team first: one range tombstone each, however many.
        let mut batch = Batch::new();
        batch.delete_prefix(Table::IMAGES, team_id.as_bytes());
        batch.delete_prefix(Table::IMAGE_BYTES, team_id.as_bytes());
        self.store.commit(batch).wait()?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_its_own_byte() {
        for format in Format::ALL {
            assert_eq!(format_of(code(format)), Some(format));
        }
        assert_eq!(format_of(0), None);
    }
}
