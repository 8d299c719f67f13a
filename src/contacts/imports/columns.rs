//! Which CSV column holds which contact field: the caller's `column_map` (or the header's
//! own names) resolved against the file's header row once, when the import is created,
//! and each row read through that resolution.

use std::collections::BTreeMap;
use std::path::Path;

use herald_queue::Id;
use serde_json::Value;

use crate::contacts::ContactProperty;
use crate::contacts::properties::{self, PropertyType};
use crate::services::Error;

pub use crate::contacts::model::{Columns, PropertyColumn};

/// Longest header row, in bytes: a header is a few names, so anything longer is not one.
const HEADER_MAX: u64 = 64 * 1024;

/// `column_map` as the SDKs send it: field to column name.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ColumnMap {
    /// The address column (required, unless a column is named `email`).
    pub email: Option<String>,
    /// The first-name column.
    pub first_name: Option<String>,
    /// The last-name column.
    pub last_name: Option<String>,
    /// The column saying whether the contact unsubscribed.
    pub unsubscribed: Option<String>,
    /// Property key to column.
    #[serde(default)]
    pub properties: BTreeMap<String, MappedProperty>,
}

/// A property's column in `column_map`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct MappedProperty {
    /// The column name.
    pub column: String,
    /// `string`, `number` or `boolean` (a boolean goes into a string property as
    /// `true` or `false`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// One row, read: the cells given (an empty cell gives nothing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// The address, as written.
    pub email: String,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Unsubscribed.
    pub unsubscribed: Option<bool>,
    /// Property values, by property id.
    pub properties: BTreeMap<Id, Value>,
}

/// Reads the header row of the CSV at `path` and resolves `map` (or the header's own
/// names) against it and the team's property `definitions`; the columns, and the byte
/// offset of the first row.
pub fn resolve(path: &Path, map: Option<&ColumnMap>, definitions: &[ContactProperty]) -> Result<(Columns, u64), Error> {
    let file = std::fs::File::open(path).map_err(|error| {
        tracing::error!(%error, "cannot open an uploaded import");
        Error::Internal("cannot read the uploaded file")
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(std::io::Read::take(file, HEADER_MAX));
    let mut header = csv::StringRecord::new();
    let read = reader
        .read_record(&mut header)
        .map_err(|e| Error::invalid(format!("Invalid `file` field: the header row is not CSV ({e})")))?;
    if !read || header.iter().all(|cell| cell.trim().is_empty()) {
        return Err(Error::invalid(
            "Invalid `file` field: the CSV file is empty; its first row names the columns",
        ));
    }
    let offset = reader.position().byte();
    if offset >= HEADER_MAX {
        return Err(Error::invalid(format!(
            "Invalid `file` field: the header row is longer than {HEADER_MAX} bytes; its first row must name the columns"
        )));
    }
    let names: Vec<String> = header
        .iter()
        .map(|n| n.trim().trim_start_matches('\u{feff}').to_owned())
        .collect();
    let position = |column: &str, field: &str| -> Result<usize, Error> {
        names
            .iter()
            .position(|name| name.eq_ignore_ascii_case(column.trim()))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "Invalid `column_map` field: `{field}` names the column {column:?}, which the CSV header lacks (it has {})",
                    names.join(", ")
                ))
            })
    };
    let default = ColumnMap::default();
    let map = map.unwrap_or(&default);
    let named = |given: &Option<String>, field: &str| -> Result<Option<usize>, Error> {
        match given {
            Some(column) => position(column, field).map(Some),
            None => Ok(names.iter().position(|name| name.eq_ignore_ascii_case(field))),
        }
    };
    let email = named(&map.email, "email")?.ok_or_else(|| {
        Error::invalid(format!(
            "Invalid `column_map` field: no column holds the email address; name it in `column_map.email` or call a column `email` (the header has {})",
            names.join(", ")
        ))
    })?;
    let mut property_columns = Vec::new();
    for (key, mapped) in &map.properties {
        let Some(definition) = definitions.iter().find(|d| d.key == *key) else {
            return Err(Error::invalid(format!(
                "Invalid `column_map` field: {key:?} is not a contact property of this team (create it with POST /contact-properties)"
            )));
        };
        let boolean = match (mapped.kind.as_deref(), definition.kind) {
            (None, _) => false,
            (Some("boolean"), PropertyType::String) => true,
            (Some(kind), defined) if kind == defined.name() => false,
            (Some(kind), defined) => {
                return Err(Error::invalid(format!(
                    "Invalid `column_map` field: the property {key:?} is a {}, not a {kind}",
                    defined.name()
                )));
            }
        };
        property_columns.push(PropertyColumn {
            id: definition.id,
            key: key.clone(),
            index: position(&mapped.column, &format!("properties.{key}"))?,
            kind: definition.kind,
            boolean,
        });
    }
    if map.properties.is_empty() {
        // Without a map, a column named as a property fills it.
        for definition in definitions {
            if let Some(index) = names.iter().position(|name| *name == definition.key) {
                property_columns.push(PropertyColumn {
                    id: definition.id,
                    key: definition.key.clone(),
                    index,
                    kind: definition.kind,
                    boolean: false,
                });
            }
        }
    }
    let columns = Columns {
        email,
        first_name: named(&map.first_name, "first_name")?,
        last_name: named(&map.last_name, "last_name")?,
        unsubscribed: named(&map.unsubscribed, "unsubscribed")?,
        properties: property_columns,
    };
    Ok((columns, offset))
}

impl Columns {
    /// The contact fields of `record`, or why the row is refused.
    pub fn read(&self, record: &csv::StringRecord, value_max: u64) -> Result<Row, String> {
        let cell = |index: Option<usize>| {
            index
                .and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
        };
        let email = cell(Some(self.email)).ok_or("no email address")?.to_owned();
        let unsubscribed = cell(self.unsubscribed).map(boolean).transpose()?;
        let mut row = Row {
            email,
            first_name: cell(self.first_name).map(str::to_owned),
            last_name: cell(self.last_name).map(str::to_owned),
            unsubscribed,
            properties: BTreeMap::new(),
        };
        for column in &self.properties {
            let Some(text) = cell(Some(column.index)) else {
                continue;
            };
            let value = if column.boolean {
                Value::String(boolean(text)?.to_string())
            } else {
                column
                    .kind
                    .parse(text)
                    .map_err(|why| format!("property {}: {why}", column.key))?
            };
            properties::check_value(&column.key, column.kind, &value, value_max).map_err(|e| e.to_string())?;
            row.properties.insert(column.id, value);
        }
        Ok(row)
    }
}

/// A CSV boolean: `true`/`false`, `yes`/`no`, `1`/`0`, in any case.
fn boolean(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "y" | "t" => Ok(true),
        "false" | "no" | "0" | "n" | "f" => Ok(false),
        _ => Err(format!("{text:?} is not true or false")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_resolves_by_name_and_rows_read_through_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.csv");
        std::fs::write(
            &path,
            "\u{feff}Email,First_Name,unsubscribed\nann@example.com,Ann,yes\n",
        )
        .expect("write");
        let (columns, offset) = resolve(&path, None, &[]).expect("resolves");
        assert_eq!(
            (columns.email, columns.first_name, columns.unsubscribed),
            (0, Some(1), Some(2))
        );
        assert_eq!(offset, "\u{feff}Email,First_Name,unsubscribed\n".len() as u64);
        let row = columns
            .read(&csv::StringRecord::from(vec!["ann@example.com", "Ann", "yes"]), 100)
            .expect("reads");
        assert_eq!(row.unsubscribed, Some(true));
        let bad = columns.read(&csv::StringRecord::from(vec!["ann@example.com", "Ann", "maybe"]), 100);
        assert!(bad.expect_err("refused").contains("maybe"));
        std::fs::write(&path, "name\nann\n").expect("write");
        let err = resolve(&path, None, &[]).expect_err("no email column");
        assert!(err.to_string().contains("email"), "{err}");
    }
}
