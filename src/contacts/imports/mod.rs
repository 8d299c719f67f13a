//! Contact imports: a CSV file of contacts, uploaded once (streamed to the data
//! directory, never held in memory), then read by a background worker a chunk of rows at
//! a time. Each chunk's contacts, its refused rows and the import's progress (the byte
//! offset and line of the next row, the counts) are written in one batch, so a restart
//! resumes at the first row not yet written, and no row is counted twice or lost. A row
//! that cannot become a contact is counted as failed, with its line and the reason kept.

mod columns;
pub mod store;
pub mod worker;

use std::path::{Path, PathBuf};

use herald_queue::Id;
use serde_json::Value;

pub use columns::{ColumnMap, Columns, PropertyColumn};

use super::TopicChoice;
use super::segments;
use super::service::{existing_segments, existing_topics};
use crate::accounts::Caller;
use crate::services::{Error, Services};
use crate::storage::page::{Cursor, PageRequest};

pub use super::model::{ContactImport, ImportCounts, ImportError, ImportStatus, OnConflict};

/// Refused rows shown with an import (`GET /contacts/imports/{id}`); the first
/// `[contacts] import_errors_max` are kept, and `?errors_after=<row>` shows the next ones.
pub const ERRORS_SHOWN: usize = 100;

/// The directory uploads wait in: `imports/` in the data directory.
pub fn directory(data_dir: &Path) -> PathBuf {
    data_dir.join("imports")
}

/// The file of import `id`.
pub fn file(data_dir: &Path, id: Id) -> PathBuf {
    directory(data_dir).join(format!("{id}.csv"))
}

/// An import as a caller asks for it, the CSV already written to `upload`.
#[derive(Debug, Clone, Default)]
pub struct NewImport {
    /// `column_map`, as JSON text.
    pub column_map: Option<String>,
    /// `on_conflict`: `upsert` or `skip`.
    pub on_conflict: Option<String>,
    /// `segments`, as JSON text: `[{"id": ...}]` or `["..."]`.
    pub segments: Option<String>,
    /// `topics`, as JSON text: `[{"id": ..., "subscription": ...}]`.
    pub topics: Option<String>,
}

/// Creates an import of the CSV at `upload` (moved into place when accepted) and wakes
/// the worker; its id.
pub fn create(services: &Services, caller: &Caller, upload: &Path, new: &NewImport) -> Result<Id, Error> {
    caller.require_full_access()?;
    let team = caller.team_id;
    let on_conflict = match new.on_conflict.as_deref().map(str::trim) {
        None | Some("") | Some("upsert") => OnConflict::Upsert,
        Some("skip") => OnConflict::Skip,
        Some(other) => {
            return Err(Error::invalid(format!(
                "Invalid `on_conflict` field: {other:?}; it is upsert or skip"
            )));
        }
    };
    let segments = existing_segments(services, team, &parse_segments(new.segments.as_deref())?)?;
    let topics: Vec<TopicChoice> = parse_json(new.topics.as_deref(), "topics")?.unwrap_or_default();
    let topics = existing_topics(services, team, &topics)?;
    let map: Option<ColumnMap> = parse_json(new.column_map.as_deref(), "column_map")?;
    let definitions = services.audience().properties(team)?;
    let (columns, offset) = columns::resolve(upload, map.as_ref(), &definitions)?;
    let import = ContactImport {
        id: services.next_id(),
        team_id: team,
        status: ImportStatus::Queued,
        created_at: services.now(),
        completed_at: None,
        counts: ImportCounts::default(),
        columns,
        on_conflict,
        segments,
        topics,
        offset,
        line: 2,
        failure: None,
    };
    let data_dir = &services.config().server.data_dir;
    std::fs::rename(upload, file(data_dir, import.id)).map_err(|error| {
        tracing::error!(%error, "cannot move an import's upload into place");
        Error::Internal("cannot keep the uploaded file")
    })?;
    // The rename must outlive a crash as the record will: sync the directory, or
    // acknowledge nothing.
    std::fs::File::open(directory(data_dir))
        .and_then(|dir| dir.sync_all())
        .map_err(|error| {
            tracing::error!(%error, "cannot sync the imports directory");
            Error::Internal("cannot keep the uploaded file")
        })?;
    services.audience().put_import(&import)?;
    services.import_wake().wake();
    Ok(import.id)
}

fn parse_json<T: serde::de::DeserializeOwned>(text: Option<&str>, field: &str) -> Result<Option<T>, Error> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::invalid(format!("Invalid `{field}` field: not JSON ({e})")))?;
    serde_path_to_error::deserialize(value).map(Some).map_err(|e| {
        let path = e.path().to_string();
        Error::invalid(format!("Invalid `{field}` field: at {path}: {}", e.into_inner()))
    })
}

/// Segment ids given as `[{"id": ...}]` (the SDKs) or `["..."]`.
pub fn parse_segments(text: Option<&str>) -> Result<Vec<Id>, Error> {
    let given: Vec<Value> = parse_json(text, "segments")?.unwrap_or_default();
    given.iter().map(segment_id).collect()
}

/// One segment named as `{"id": ...}` or a bare id.
pub fn segment_id(value: &Value) -> Result<Id, Error> {
    let text = match value {
        Value::String(text) => text.as_str(),
        Value::Object(map) => map.get("id").and_then(Value::as_str).unwrap_or_default(),
        _ => "",
    };
    segments::parse_id(text)
}

/// The caller's import `id`, with up to [`ERRORS_SHOWN`] of its refused rows after row
/// `errors_after` (0 for the first), and whether more follow.
pub fn get(
    services: &Services,
    caller: &Caller,
    id: &str,
    errors_after: u64,
) -> Result<(ContactImport, Vec<ImportError>, bool), Error> {
    caller.require_full_access()?;
    let id = crate::services::parse_id(id, "import")?;
    let import = services
        .audience()
        .import(caller.team_id, id)?
        .ok_or(Error::NotFound("Contact import not found"))?;
    let mut errors = services
        .audience()
        .import_errors(&import, errors_after, ERRORS_SHOWN + 1)?;
    let more = errors.len() > ERRORS_SHOWN;
    errors.truncate(ERRORS_SHOWN);
    Ok((import, errors, more))
}

/// One page of the caller's imports, newest first; with `status`, only those in it.
pub fn list(
    services: &Services,
    caller: &Caller,
    page: &PageRequest,
    status: Option<&str>,
) -> Result<(Vec<ContactImport>, bool), Error> {
    caller.require_full_access()?;
    let status = status
        .map(|name| {
            ImportStatus::parse(name).ok_or_else(|| {
                Error::invalid(format!(
                    "The `status` parameter is queued, in_progress, completed or failed, got {name:?}"
                ))
            })
        })
        .transpose()?;
    let Some(status) = status else {
        return Ok(services.audience().import_page(caller.team_id, page)?);
    };
    // Filtered as they are read, page after page, so a page is never short while more
    // match beyond it.
    let mut found = Vec::new();
    let mut cursor = *page;
    loop {
        let (imports, more) = services.audience().import_page(caller.team_id, &cursor)?;
        let last = match cursor.cursor {
            Cursor::Before(_) => imports.first().map(|i| i.id),
            _ => imports.last().map(|i| i.id),
        };
        let matching = imports.into_iter().filter(|import| import.status == status);
        match cursor.cursor {
            // Each page is newer than the last: it goes in front, newest first.
            Cursor::Before(_) => {
                found.splice(0..0, matching);
            }
            _ => found.extend(matching),
        }
        let Some(last) = last.filter(|_| more && found.len() <= page.limit) else {
            break;
        };
        cursor.cursor = match cursor.cursor {
            Cursor::Before(_) => Cursor::Before(last),
            _ => Cursor::After(last),
        };
    }
    let has_more = found.len() > page.limit;
    match page.cursor {
        // The ones just newer than the cursor: the end of the list.
        Cursor::Before(_) => {
            found.drain(..found.len().saturating_sub(page.limit));
        }
        _ => found.truncate(page.limit),
    }
    Ok((found, has_more))
}
