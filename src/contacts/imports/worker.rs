//! The import worker: reads the oldest unfinished import a chunk of rows at a time and
//! writes each chunk's contacts with the import's progress in one batch (see the
//! module's page). One import at a time, in the order they came: a chunk holds the
//! team's contact lock for one read of its addresses and one commit, so API writes to the
//! same team interleave with an import instead of waiting for all of it.

use std::collections::HashMap;
use std::io::{BufReader, Seek, SeekFrom};
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

/// Rows per chunk: each is one batch, and the most rows held in memory.
const CHUNK: usize = 1_000;

/// Longest sleep with nothing to import (a new import wakes the worker).
const IDLE: Duration = Duration::from_secs(60);

/// Longest reason kept for a refused row, in characters.
const REASON_MAX: usize = 300;

/// A file in the imports directory that no unfinished import reads and that has not
/// changed for this long is left over (an upload a restart cut short, a deleted team's
/// import) and is removed. The wait spares an upload still being written, and an import
/// whose file is in place a moment before its record.
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// Runs until shutdown, importing whatever was uploaded, resuming what a restart
/// interrupted.
pub async fn run(services: Arc<Services>, mut shutdown: Shutdown) {
    sweep_orphans(&services);
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

/// Removes the imports directory's left-over files (see [`ORPHAN_AGE`]); called when no
/// import is unfinished, so no file there is in use but an upload's.
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

/// Reads up to [`CHUNK`] rows of `import` from its offset and writes them.
fn chunk(services: &Services, mut import: ContactImport) -> Result<(), Error> {
    let path = file(&services.config().server.data_dir, import.id);
    let opened = std::fs::File::open(&path).and_then(|mut f| f.seek(SeekFrom::Start(import.offset)).map(|_| f));
    let source = match opened {
        Ok(source) => source,
        Err(error) => {
            import.status = ImportStatus::Failed;
            import.completed_at = Some(services.store().now());
            import.failure = Some(format!("the uploaded file cannot be read: {error}"));
            services.audience().put_import(&import)?;
            return Ok(());
        }
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(BufReader::with_capacity(64 * 1024, source));
    let mut rows: Vec<(u64, Result<csv::StringRecord, String>)> = Vec::with_capacity(CHUNK);
    let mut record = csv::ByteRecord::new();
    let mut finished = false;
    while rows.len() < CHUNK {
        let read = reader.read_byte_record(&mut record).map_err(|error| {
            tracing::error!(%error, import = %import.id, "cannot read an import's file");
            Error::Internal("cannot read an import's file")
        })?;
        if !read {
            finished = true;
            break;
        }
        let line = import.line + record.position().map_or(1, |p| p.line()) - 1;
        let row =
            csv::StringRecord::from_byte_record(record.clone()).map_err(|_| "the row is not valid UTF-8".to_owned());
        rows.push((line, row));
    }
    let position = reader.position().clone();
    drop(reader);
    // The progress goes into the batch that writes the chunk's rows.
    import.offset += position.byte();
    import.line += position.line() - 1;
    if finished {
        import.status = ImportStatus::Completed;
        import.completed_at = Some(services.store().now());
    } else {
        import.status = ImportStatus::InProgress;
    }
    write(services, &mut import, rows)?;
    if finished {
        let _ = std::fs::remove_file(&path);
        tracing::info!(import = %import.id, team_id = %import.team_id, counts = ?import.counts, "contact import completed");
    }
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

fn write(
    services: &Services,
    import: &mut ContactImport,
    rows: Vec<(u64, Result<csv::StringRecord, String>)>,
) -> Result<(), Error> {
    let store = services.store();
    let team = import.team_id;
    let limits = services.config().contacts;
    let hooks = crate::webhooks::any_webhook(store, team)?;
    let _guard = service::lock(services, team);
    let mut room = limits.contacts_max.saturating_sub(services.contacts().count(team)?);
    let now = store.now();
    let mut writes = Writes::default();
    for (line, record) in rows {
        import.counts.total += 1;
        let outcome = record.and_then(|record| import.columns.read(&record, limits.property_value_max));
        let outcome =
            outcome.and_then(|row| one(services, import, row, now, &mut room, &mut writes).map_err(|e| e.to_string()));
        match outcome {
            Ok(Outcome::Created) => import.counts.created += 1,
            Ok(Outcome::Updated) => import.counts.updated += 1,
            Ok(Outcome::Skipped) => import.counts.skipped += 1,
            Err(reason) => {
                import.counts.failed += 1;
                writes.errors.push(ImportError {
                    line,
                    reason: reason.chars().take(REASON_MAX).collect(),
                });
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
                id: store.next_id(),
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
    Ok(())
}

enum Outcome {
    Created,
    Updated,
    Skipped,
}

fn one(
    services: &Services,
    import: &ContactImport,
    row: Row,
    now: Timestamp,
    room: &mut u64,
    writes: &mut Writes,
) -> Result<Outcome, Error> {
    let email = address(&row.email, "email")?;
    let first_name = name(row.first_name, "first_name")?;
    let last_name = name(row.last_name, "last_name")?;
    let key = crate::contacts::normalize(&email);
    let pending = writes.by_address.get(&key).copied();
    let existing = match pending {
        Some(at) => Some(writes.contacts[at].0.clone()),
        None => services.contacts().by_email(import.team_id, &email)?,
    };
    let Some(existing) = existing else {
        if *room == 0 {
            return Err(Error::invalid(format!(
                "the team has {} contacts, the most it may have ([contacts] contacts_max)",
                services.config().contacts.contacts_max
            )));
        }
        *room -= 1;
        let mut contact = Contact {
            id: services.store().next_id(),
            team_id: import.team_id,
            email,
            first_name,
            last_name,
            unsubscribed: row.unsubscribed.unwrap_or(false),
            created_at: now,
            updated_at: now,
            segments: import.segments.clone(),
            topics: import.topics.clone(),
            properties: Default::default(),
        };
        contact.properties = row.properties;
        writes.by_address.insert(key, writes.contacts.len());
        writes.contacts.push((contact, None));
        return Ok(Outcome::Created);
    };
    if import.on_conflict == OnConflict::Skip {
        return Ok(Outcome::Skipped);
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
    for segment in &import.segments {
        if !contact.segments.contains(segment) {
            contact.segments.push(*segment);
        }
    }
    for choice in &import.topics {
        contact.topics.retain(|c| c.id != choice.id);
        contact.topics.push(*choice);
    }
    properties::apply(
        &mut contact.properties,
        row.properties.into_iter().map(|(k, v)| (k, Some(v))).collect(),
    );
    if contact == existing {
        return Ok(Outcome::Skipped);
    }
    contact.updated_at = now;
    match pending {
        Some(at) => writes.contacts[at].0 = contact,
        None => {
            writes.by_address.insert(key, writes.contacts.len());
            writes.contacts.push((contact, Some(existing)));
        }
    }
    Ok(Outcome::Updated)
}
