//! The import worker: reads the oldest unfinished import a chunk of rows at a time and
//! writes each chunk's contacts with the import's progress in one batch (see the
//! module's page). One import at a time, in the order they came: a chunk holds the
//! team's contact lock for one read of its addresses and one commit, so API writes to the
//! same team interleave with an import instead of waiting for all of it.
//!
//! Memory is bounded by the chunk, never by the file: at most [`CHUNK`] rows and
//! [`CHUNK_BYTES`] of them, and a row longer than [`ROW_MAX`] (an unclosed quote makes
//! the rest of a file one row) stops the import instead of being read whole.

use std::collections::HashMap;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herald_queue::{Id, Timestamp};

use super::columns::Row;
use super::{ContactImport, ImportError, ImportStatus, OnConflict, directory, file};
use crate::contacts::service::{self, address, name};
use crate::contacts::{Contact, properties};
use crate::events::{Event, EventKind};
use crate::services::{Error, Services};
use crate::shutdown::Shutdown;

/// Rows per chunk: each chunk is one batch.
const CHUNK: usize = 1_000;

/// Bytes of rows per chunk, whatever their number: long rows make smaller chunks.
const CHUNK_BYTES: u64 = 4 * 1024 * 1024;

/// Longest row, in bytes. A contact's fields fit in a few kilobytes; a longer row is
/// almost always an unclosed quote, past which the file cannot be read as meant.
pub const ROW_MAX: u64 = 1024 * 1024;

/// Longest sleep with nothing to import (a new import wakes the worker).
const IDLE: Duration = Duration::from_secs(60);

/// Longest reason kept for a refused row, in characters.
const REASON_MAX: usize = 300;

/// A file in the imports directory that has not changed for this long while no import
/// is unfinished is left over (an upload a restart cut short, a deleted team's import)
/// and is removed. The wait spares an upload still being written, and an import whose
/// file is in place a moment before its record.
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// Runs until shutdown, importing whatever was uploaded, resuming what a restart
/// interrupted.
pub async fn run(services: Arc<Services>, mut shutdown: Shutdown) {
    let wake = services.import_wake().clone();
    let current: Arc<Mutex<Option<(Id, Id)>>> = Arc::default();
    while !shutdown.is_triggered() {
        let (state, current) = (Arc::clone(&services), Arc::clone(&current));
        let pass = tokio::task::spawn_blocking(move || {
            let mut current = current.lock().unwrap_or_else(PoisonError::into_inner);
            step(&state, &mut current)
        });
        let more = match pass.await {
            Ok(Ok(more)) => more,
            Ok(Err(error)) => {
                tracing::warn!(%error, "a contact import chunk failed; retrying");
                false
            }
            Err(error) => {
                tracing::error!(%error, "a contact import task failed");
                false
            }
        };
        if more {
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(IDLE) => {}
            () = wake.woken() => {}
            () = shutdown.triggered() => return,
        }
    }
}

/// Removes the imports directory's left-over files (see [`ORPHAN_AGE`]). Called only
/// while no import is unfinished, so no file there belongs to one.
fn sweep_orphans(services: &Services) {
    let Ok(entries) = std::fs::read_dir(directory(&services.config().server.data_dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let age = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok());
        if age.is_some_and(|age| age > ORPHAN_AGE) {
            tracing::info!(file = %entry.path().display(), "removing a left-over import file");
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Works one chunk of the current import (the oldest unfinished one); whether there may
/// be more to do.
fn step(services: &Services, current: &mut Option<(Id, Id)>) -> Result<bool, Error> {
    let import = match *current {
        Some((team, id)) => services.audience().import(team, id)?,
        None => None,
    };
    let import = match import.filter(|import| !import.status.is_final()) {
        Some(import) => import,
        None => match services.audience().unfinished_imports()?.into_iter().next() {
            Some(import) => import,
            None => {
                *current = None;
                sweep_orphans(services);
                return Ok(false);
            }
        },
    };
    *current = Some((import.team_id, import.id));
    chunk(services, import)?;
    Ok(true)
}

/// The file under the CSV reader, counting what it hands out so that a row can be
/// refused once it passes [`ROW_MAX`] instead of being read whole.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
    /// The byte offset (in what was read) where the current row starts.
    row_start: Arc<AtomicU64>,
}

/// The error [`Counted`] stops a row with.
#[derive(Debug, thiserror::Error)]
#[error("a row longer than {ROW_MAX} bytes")]
struct RowTooLong;

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Read-ahead is bounded by the CSV reader's buffer; allow for it.
        let ahead = self.read.load(Ordering::Relaxed) - self.row_start.load(Ordering::Relaxed);
        if ahead > ROW_MAX + 64 * 1024 {
            return Err(std::io::Error::other(RowTooLong));
        }
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// One row read: its ordinal in the file, its line, and its cells or why not.
type ReadRow = (u64, u64, Result<csv::StringRecord, String>);

/// Reads up to [`CHUNK`] rows of `import` from its offset and writes them.
fn chunk(services: &Services, mut import: ContactImport) -> Result<(), Error> {
    let path = file(&services.config().server.data_dir, import.id);
    let opened = std::fs::File::open(&path).and_then(|mut f| f.seek(SeekFrom::Start(import.offset)).map(|_| f));
    let source = match opened {
        Ok(source) => source,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return fail(services, import, "the uploaded file is gone".to_owned());
        }
        Err(error) => {
            tracing::error!(%error, import = %import.id, "cannot open an import's file");
            return Err(Error::Internal("cannot open an import's file"));
        }
    };
    let (read, row_start) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let counted = Counted {
        inner: BufReader::with_capacity(64 * 1024, source),
        read: Arc::clone(&read),
        row_start: Arc::clone(&row_start),
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(counted);
    let mut rows: Vec<ReadRow> = Vec::with_capacity(CHUNK);
    let mut record = csv::ByteRecord::new();
    let mut finished = false;
    let mut too_long = None;
    let mut ordinal = import.counts.total;
    while rows.len() < CHUNK && reader.position().byte() < CHUNK_BYTES {
        row_start.store(reader.position().byte(), Ordering::Relaxed);
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => {
                finished = true;
                break;
            }
            Err(error) if is_too_long(&error) => {
                too_long = Some(import.line + reader.position().line() - 1);
                break;
            }
            Err(error) => {
                tracing::error!(%error, import = %import.id, "cannot read an import's file");
                return Err(Error::Internal("cannot read an import's file"));
            }
        }
        ordinal += 1;
        let line = import.line + record.position().map_or(1, |p| p.line()) - 1;
        let row = csv::StringRecord::from_byte_record(std::mem::take(&mut record))
            .map_err(|_| "the row is not valid UTF-8".to_owned());
        rows.push((ordinal, line, row));
    }
    let position = reader.position().clone();
    drop(reader);
    // The progress goes into the batch that writes the chunk's rows.
    import.offset += position.byte();
    import.line += position.line() - 1;
    if let Some(line) = too_long {
        import.status = ImportStatus::Failed;
        import.completed_at = Some(services.now());
        import.failure = Some(format!(
            "line {line}: a row longer than {ROW_MAX} bytes (an unclosed quote?); the rows before it were imported"
        ));
    } else if finished {
        import.status = ImportStatus::Completed;
        import.completed_at = Some(services.now());
    } else {
        import.status = ImportStatus::InProgress;
    }
    if !write(services, &mut import, rows)? {
        return Ok(());
    }
    if import.status.is_final() {
        let _ = std::fs::remove_file(&path);
        tracing::info!(import = %import.id, team_id = %import.team_id, status = import.status.name(), counts = ?import.counts, "contact import finished");
    }
    Ok(())
}

fn is_too_long(error: &csv::Error) -> bool {
    match error.kind() {
        csv::ErrorKind::Io(io) => io.get_ref().is_some_and(|inner| inner.is::<RowTooLong>()),
        _ => false,
    }
}

fn fail(services: &Services, mut import: ContactImport, why: String) -> Result<(), Error> {
    import.status = ImportStatus::Failed;
    import.completed_at = Some(services.now());
    import.failure = Some(why);
    services.audience().put_import(&import)?;
    Ok(())
}

/// What a chunk writes.
#[derive(Default)]
struct Writes {
    contacts: Vec<(Contact, Option<Contact>)>,
    /// Normalised address to its place in `contacts`, for a file naming one twice.
    by_address: HashMap<String, usize>,
    errors: Vec<ImportError>,
    events: Vec<Event>,
}

/// The team's audience as a chunk finds it, under the lock.
struct Live {
    segments: Vec<Id>,
    topics: Vec<super::TopicChoice>,
    properties: Vec<crate::contacts::ContactProperty>,
}

/// Writes a chunk's rows with the import's progress; `false` when the import or its team
/// is gone (deleted while it ran), and nothing was written.
fn write(services: &Services, import: &mut ContactImport, rows: Vec<ReadRow>) -> Result<bool, Error> {
    let team = import.team_id;
    let limits = services.config().contacts;
    let hooks = services.webhooks().any(team)?;
    let _guard = service::lock(services, team);
    // A team's erasure marks it deleted, then range-deletes its contacts under this
    // lock: a chunk written after the mark would outlive the erasure.
    let alive = services.accounts().team(team)?.is_some_and(|t| t.deleted_at.is_none());
    if !alive || services.audience().import(team, import.id)?.is_none() {
        return Ok(false);
    }
    let audience = services.audience();
    let segments = audience.segments(team)?;
    let topics = audience.topics(team)?;
    let live = Live {
        segments: import
            .segments
            .iter()
            .copied()
            .filter(|id| segments.iter().any(|s| s.id == *id))
            .collect(),
        topics: import
            .topics
            .iter()
            .copied()
            .filter(|c| topics.iter().any(|t| t.id == c.id))
            .collect(),
        properties: audience.properties(team)?,
    };
    let mut room = limits.contacts_max.saturating_sub(services.contacts().count(team)?);
    let now = services.now();
    let mut writes = Writes::default();
    for (ordinal, line, record) in rows {
        import.counts.total += 1;
        let row = record.and_then(|record| import.columns.read(&record, limits.property_value_max));
        let outcome = match row {
            Ok(row) => one(services, import, &live, row, now, &mut room, &mut writes)?,
            Err(reason) => Err(reason),
        };
        match outcome {
            Ok(Outcome::Created) => import.counts.created += 1,
            Ok(Outcome::Updated) => import.counts.updated += 1,
            Ok(Outcome::Skipped) => import.counts.skipped += 1,
            Err(reason) => {
                import.counts.failed += 1;
                // Every refusal is counted; the first `import_errors_max` keep their reason.
                if import.counts.failed <= limits.import_errors_max {
                    writes.errors.push(ImportError {
                        row: ordinal,
                        line,
                        reason: reason.chars().take(REASON_MAX).collect(),
                    });
                }
            }
        }
    }
    if hooks {
        for (contact, previous) in &writes.contacts {
            let kind = if previous.is_none() {
                EventKind::ContactCreated
            } else {
                EventKind::ContactUpdated
            };
            writes.events.push(Event {
                id: services.next_id(),
                team_id: team,
                kind,
                created_at: now,
                data: contact.event_json(),
            });
        }
    }
    services
        .contacts()
        .commit_import(&writes.contacts, &writes.events, &writes.errors, import)?;
    Ok(true)
}

enum Outcome {
    Created,
    Updated,
    Skipped,
}

/// One row: its outcome, or why it is refused; `Err` only when the store fails.
fn one(
    services: &Services,
    import: &ContactImport,
    live: &Live,
    mut row: Row,
    now: Timestamp,
    room: &mut u64,
    writes: &mut Writes,
) -> Result<Result<Outcome, String>, Error> {
    let fields = address(&row.email, "email").and_then(|email| {
        let first_name = name(row.first_name.take(), "first_name")?;
        let last_name = name(row.last_name.take(), "last_name")?;
        Ok((email, first_name, last_name))
    });
    let (email, first_name, last_name) = match fields {
        Ok(fields) => fields,
        Err(refused) => return Ok(Err(refused.to_string())),
    };
    properties::retain_defined(&mut row.properties, &live.properties);
    let key = crate::contacts::normalize(&email);
    let pending = writes.by_address.get(&key).copied();
    let existing = match pending {
        Some(at) => Some(writes.contacts[at].0.clone()),
        None => services.contacts().by_email(import.team_id, &email)?,
    };
    let Some(existing) = existing else {
        if *room == 0 {
            return Ok(Err(format!(
                "the team has {} contacts, the most it may have ([contacts] contacts_max)",
                services.config().contacts.contacts_max
            )));
        }
        *room -= 1;
        let contact = Contact {
            id: services.next_id(),
            team_id: import.team_id,
            email,
            first_name,
            last_name,
            unsubscribed: row.unsubscribed.unwrap_or(false),
            created_at: now,
            updated_at: now,
            segments: live.segments.clone(),
            topics: live.topics.clone(),
            properties: row.properties,
        };
        writes.by_address.insert(key, writes.contacts.len());
        writes.contacts.push((contact, None));
        return Ok(Ok(Outcome::Created));
    };
    if import.on_conflict == OnConflict::Skip {
        return Ok(Ok(Outcome::Skipped));
    }
    let mut contact = existing.clone();
    if first_name.is_some() {
        contact.first_name = first_name;
    }
    if last_name.is_some() {
        contact.last_name = last_name;
    }
    if let Some(unsubscribed) = row.unsubscribed {
        contact.unsubscribed = unsubscribed;
    }
    for segment in &live.segments {
        if !contact.segments.contains(segment) {
            contact.segments.push(*segment);
        }
    }
    for choice in &live.topics {
        contact.topics.retain(|c| c.id != choice.id);
        contact.topics.push(*choice);
    }
    properties::apply(
        &mut contact.properties,
        row.properties.into_iter().map(|(k, v)| (k, Some(v))).collect(),
    );
    if contact == existing {
        return Ok(Ok(Outcome::Skipped));
    }
    contact.updated_at = now;
    match pending {
        Some(at) => writes.contacts[at].0 = contact,
        None => {
            writes.by_address.insert(key, writes.contacts.len());
            writes.contacts.push((contact, Some(existing)));
        }
    }
    Ok(Ok(Outcome::Updated))
}
