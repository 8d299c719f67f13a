//! The node's contacts and their team's segments, topics, property definitions and
//! imports, copied into PostgreSQL by `herald store copy` ([`crate::storage::copy`]), row
//! for row as [`super::PostgresContacts`] writes them.
//!
//! What RocksDB keeps only to find records is not copied: the email lookup (there, a
//! unique column of the contact's row), the import queue (a partial index) and imports'
//! expiry (a column of the import's row). The teams' counts are not copied either: each
//! contact is written as a new one, which counts it, so that the counts there are those
//! of the contacts that are there. Segments' indexes are copied entry by entry from the
//! RocksDB index, not rebuilt from the contacts, which still name segments deleted since.

use herald_queue::{Id, Table};

use super::postgres::audience::{PUT_PROPERTY, PUT_SEGMENT, PUT_TOPIC, property_values, segment_values, topic_values};
use super::postgres::imports::{PUT_ERRORS, error_values, statements};
use super::postgres::rows::{JOIN_SEGMENTS, copied, member_values};
use super::{id_key, member_key};
use crate::contacts::model::{Contact, ContactImport, ContactProperty, ImportError, Segment, Topic};
use crate::storage::Error;
use crate::storage::copy::Copy;
use crate::storage::postgres::Statement;

/// The length of an id in a key.
const ID_LEN: usize = 16;

/// Copies every segment, topic, property definition, contact (with its topic choices
/// and property values), segment index entry and import (with its property columns and
/// refused rows).
pub fn copy(copy: &mut Copy<'_>) -> Result<(), Error> {
    for kind in [
        "segments",
        "topics",
        "contact properties",
        "contacts",
        "segment memberships",
        "contact imports",
        "import errors",
    ] {
        copy.expect(kind);
    }
    copy.each::<Segment>(|copy, _, segment| {
        let statement = Statement::new(copy.to(), PUT_SEGMENT, segment_values(&segment));
        copy.write("segments", statement)
    })?;
    copy.each::<Topic>(|copy, _, topic| {
        let statement = Statement::new(copy.to(), PUT_TOPIC, topic_values(&topic));
        copy.write("topics", statement)
    })?;
    copy.each::<ContactProperty>(|copy, _, property| {
        let statement = Statement::new(copy.to(), PUT_PROPERTY, property_values(&property));
        copy.write("contact properties", statement)
    })?;
    copy.each::<Contact>(|copy, _, contact| {
        let mut statements = copied(copy.to(), &contact).into_iter();
        if let Some(first) = statements.next() {
            copy.write("contacts", first)?;
        }
        statements.try_for_each(|statement| copy.also(statement))
    })?;
    copy_memberships(copy)?;
    copy.each::<ContactImport>(|copy, _, import| {
        let mut statements = statements(copy.to(), &import)?.into_iter();
        if let Some(first) = statements.next() {
            copy.write("contact imports", first)?;
        }
        statements.try_for_each(|statement| copy.also(statement))
    })?;
    copy_import_errors(copy)
}

/// Copies every entry of the segments' indexes whose contact is there. An entry whose
/// contact is gone (its team erased, the index not yet) has nothing to point at there.
fn copy_memberships(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.each_raw(Table::SEGMENT_MEMBERS, |copy, key, _| {
        let [team, segment, contact] = ids::<3>(Table::SEGMENT_MEMBERS, key)?;
        debug_assert_eq!(key, member_key(team, segment, contact).as_slice());
        if copy.from().get_raw(Table::CONTACTS, &id_key(team, contact))?.is_none() {
            return Ok(());
        }
        let statement = Statement::new(copy.to(), JOIN_SEGMENTS, member_values(team, segment, contact));
        copy.write("segment memberships", statement)
    })
}

/// Copies every row an import refused whose import is there. One whose import is gone
/// (erased with its team, or expired part way) would be shown by no one.
fn copy_import_errors(copy: &mut Copy<'_>) -> Result<(), Error> {
    copy.each::<ImportError>(|copy, key, error| {
        let import = key.get(..2 * ID_LEN).unwrap_or_default();
        let [_, import_id] = ids::<2>(Table::IMPORT_ERRORS, import)?;
        if copy.from().get_raw(Table::CONTACT_IMPORTS, import)?.is_none() {
            return Ok(());
        }
        let values = error_values(import_id, std::slice::from_ref(&error));
        copy.write("import errors", Statement::new(copy.to(), PUT_ERRORS, values))
    })
}

/// The `N` ids `key` of `table` is made of.
fn ids<const N: usize>(table: Table, key: &[u8]) -> Result<[Id; N], Error> {
    let ids: Vec<Id> = key.chunks_exact(ID_LEN).filter_map(Id::from_slice).collect();
    match <[Id; N]>::try_from(ids) {
        Ok(ids) if key.len() == N * ID_LEN => Ok(ids),
        _ => Err(Error::Corrupt {
            table: table.name(),
            reason: format!("a key of {} bytes where {N} ids belong", key.len()),
        }),
    }
}
