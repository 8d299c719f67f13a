//! Imports as rows: one of `contact_imports` each (its progress, counts, columns and what
//! every imported contact joins and chooses), its property columns in order in
//! `contact_import_columns` and its refused rows in `contact_import_errors`, both gone
//! with it. An import is read in one statement; its writes are staged into a
//! [`Change`], to commit with the chunk of contacts they report on.

use herald_queue::Id;
use tokio_postgres::Row;

use crate::contacts::model::{
    Columns, ContactImport, ImportCounts, ImportError, PropertyColumn, PropertyType, TopicChoice,
};
use crate::storage::page::PageRequest;
use crate::storage::postgres::{
    Postgres, Statement, Value, enum_text, from_driver, page_of, page_params, page_sql, text_enum, time, timestamp,
};
use crate::storage::{Change, Error};

/// An import with its property columns aggregated beside its row, to be followed by a
/// condition on `i`. Its columns are read by [`import`].
const SELECT_IMPORT: &str = "SELECT i.id, i.team_id, i.status, i.created_at, i.completed_at,
        i.rows_total, i.rows_created, i.rows_updated, i.rows_skipped, i.rows_failed,
        i.email_column, i.first_name_column, i.last_name_column, i.unsubscribed_column, i.on_conflict,
        i.segments, i.topic_ids, i.topic_subscriptions, i.next_offset, i.next_line, i.failure,
        k.property_ids, k.keys, k.positions, k.kinds, k.booleans
    FROM contact_imports i
    LEFT JOIN LATERAL (
        SELECT array_agg(property_id ORDER BY ordinal) AS property_ids, array_agg(key ORDER BY ordinal) AS keys,
            array_agg(position ORDER BY ordinal) AS positions, array_agg(kind ORDER BY ordinal) AS kinds,
            array_agg(booleans ORDER BY ordinal) AS booleans
        FROM contact_import_columns WHERE import_id = i.id
    ) k ON true";

/// Writes an import, new or changed. `expires_from` is when `[retention] imports` counts
/// from: its finishing time once it is finished.
const PUT_IMPORT: &str = "INSERT INTO contact_imports (id, team_id, status, created_at, completed_at,
        rows_total, rows_created, rows_updated, rows_skipped, rows_failed,
        email_column, first_name_column, last_name_column, unsubscribed_column, on_conflict,
        segments, topic_ids, topic_subscriptions, next_offset, next_line, failure, expires_from)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
    ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, created_at = EXCLUDED.created_at,
        completed_at = EXCLUDED.completed_at, rows_total = EXCLUDED.rows_total,
        rows_created = EXCLUDED.rows_created, rows_updated = EXCLUDED.rows_updated,
        rows_skipped = EXCLUDED.rows_skipped, rows_failed = EXCLUDED.rows_failed,
        email_column = EXCLUDED.email_column, first_name_column = EXCLUDED.first_name_column,
        last_name_column = EXCLUDED.last_name_column, unsubscribed_column = EXCLUDED.unsubscribed_column,
        on_conflict = EXCLUDED.on_conflict, segments = EXCLUDED.segments, topic_ids = EXCLUDED.topic_ids,
        topic_subscriptions = EXCLUDED.topic_subscriptions, next_offset = EXCLUDED.next_offset,
        next_line = EXCLUDED.next_line, failure = EXCLUDED.failure, expires_from = EXCLUDED.expires_from";

/// Drops the property columns past an import's last.
const TRIM_COLUMNS: &str = "DELETE FROM contact_import_columns WHERE import_id = $1 AND ordinal >= $2";

/// Writes an import's property columns in order. They do not change once the import is
/// made, and its progress is written every chunk: a column as it was is not rewritten.
const PUT_COLUMNS: &str = "INSERT INTO contact_import_columns (import_id, ordinal, property_id, key, position, kind,
        booleans)
    SELECT $1::uuid, * FROM unnest($2::integer[], $3::uuid[], $4::text[], $5::integer[], $6::text[], $7::boolean[])
    ON CONFLICT (import_id, ordinal) DO UPDATE SET property_id = EXCLUDED.property_id, key = EXCLUDED.key,
        position = EXCLUDED.position, kind = EXCLUDED.kind, booleans = EXCLUDED.booleans
    WHERE (contact_import_columns.property_id, contact_import_columns.key, contact_import_columns.position,
            contact_import_columns.kind, contact_import_columns.booleans)
        IS DISTINCT FROM (EXCLUDED.property_id, EXCLUDED.key, EXCLUDED.position, EXCLUDED.kind, EXCLUDED.booleans)";

/// Writes refused rows, each in its place.
pub(in crate::contacts::store) const PUT_ERRORS: &str =
    "INSERT INTO contact_import_errors (import_id, row_number, line, reason)
    SELECT $1::uuid, * FROM unnest($2::bigint[], $3::bigint[], $4::text[])
    ON CONFLICT (import_id, row_number) DO UPDATE SET line = EXCLUDED.line, reason = EXCLUDED.reason";

/// The table's name, for corrupt-record errors.
const TABLE: &str = "contact_imports";

/// The import `id` of `team_id`.
pub(super) fn one(db: &Postgres, team_id: Id, id: Id) -> Result<Option<ContactImport>, Error> {
    db.run(async |client| {
        let sql = format!("{SELECT_IMPORT} WHERE i.team_id = $1 AND i.id = $2");
        let row = client
            .query_opt(&sql, &[&team_id.uuid(), &id.uuid()])
            .await
            .map_err(from_driver)?;
        row.as_ref().map(import).transpose()
    })
}

/// One page of the imports of `team_id`, newest first.
pub(super) fn page(db: &Postgres, team_id: Id, request: &PageRequest) -> Result<(Vec<ContactImport>, bool), Error> {
    db.run(async |client| {
        // `id` is the import's: the columns aggregated beside it have none of that name.
        let sql = format!("{SELECT_IMPORT} WHERE i.team_id = $1 AND {}", page_sql(request, 2, 3));
        let (cursor, limit) = page_params(request);
        let rows = client
            .query(&sql, &[&team_id.uuid(), &cursor, &limit])
            .await
            .map_err(from_driver)?;
        let found = rows.iter().map(import).collect::<Result<Vec<_>, _>>()?;
        Ok(page_of(found, request))
    })
}

/// Every team's imports the worker has yet to finish, oldest first: what the partial
/// index `contact_imports_unfinished` holds.
pub(super) fn unfinished(db: &Postgres) -> Result<Vec<ContactImport>, Error> {
    db.run(async |client| {
        let sql = format!("{SELECT_IMPORT} WHERE i.status IN ('queued', 'in_progress') ORDER BY i.id");
        let rows = client.query(&sql, &[]).await.map_err(from_driver)?;
        rows.iter().map(import).collect()
    })
}

/// Up to `limit` rows `import` refused, in file order, after row `after`.
pub(super) fn errors(
    db: &Postgres,
    import: &ContactImport,
    after: u64,
    limit: usize,
) -> Result<Vec<ImportError>, Error> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    db.run(async |client| {
        let rows = client
            .query(
                "SELECT e.row_number, e.line, e.reason
                 FROM contact_import_errors e JOIN contact_imports i ON i.id = e.import_id
                 WHERE i.team_id = $1 AND e.import_id = $2 AND e.row_number > $3
                 ORDER BY e.row_number LIMIT $4",
                &[&import.team_id.uuid(), &import.id.uuid(), &bigint(after), &limit],
            )
            .await
            .map_err(from_driver)?;
        rows.iter().map(refused).collect()
    })
}

/// Stages into `change`, on `db`, the write of `import` with its property columns.
pub(super) fn stage_import(db: &Postgres, change: &mut Change, import: &ContactImport) -> Result<(), Error> {
    for statement in statements(db, import)? {
        change.stage_shared(statement);
    }
    Ok(())
}

/// The statements that write `import` with its property columns, on `db`.
pub(in crate::contacts::store) fn statements(db: &Postgres, import: &ContactImport) -> Result<Vec<Statement>, Error> {
    let columns = &import.columns;
    let counts = &import.counts;
    let expires_from = import.completed_at.filter(|_| import.status.is_final()).map(time);
    let values: Vec<Value> = vec![
        Box::new(import.id.uuid()),
        Box::new(import.team_id.uuid()),
        Box::new(enum_text(&import.status)),
        Box::new(time(import.created_at)),
        Box::new(import.completed_at.map(time)),
        Box::new(bigint(counts.total)),
        Box::new(bigint(counts.created)),
        Box::new(bigint(counts.updated)),
        Box::new(bigint(counts.skipped)),
        Box::new(bigint(counts.failed)),
        Box::new(integer(columns.email)?),
        Box::new(columns.first_name.map(integer).transpose()?),
        Box::new(columns.last_name.map(integer).transpose()?),
        Box::new(columns.unsubscribed.map(integer).transpose()?),
        Box::new(enum_text(&import.on_conflict)),
        Box::new(import.segments.iter().map(Id::uuid).collect::<Vec<_>>()),
        Box::new(import.topics.iter().map(|c| c.id.uuid()).collect::<Vec<_>>()),
        Box::new(
            import
                .topics
                .iter()
                .map(|c| enum_text(&c.subscription))
                .collect::<Vec<_>>(),
        ),
        Box::new(bigint(import.offset)),
        Box::new(bigint(import.line)),
        Box::new(import.failure.clone()),
        Box::new(expires_from),
    ];
    let mut statements = vec![Statement::new(db, PUT_IMPORT, values)];
    let properties = &columns.properties;
    statements.push(Statement::new(
        db,
        TRIM_COLUMNS,
        vec![Box::new(import.id.uuid()), Box::new(integer(properties.len())?)],
    ));
    if properties.is_empty() {
        return Ok(statements);
    }
    let ordinals = (0..properties.len()).map(integer).collect::<Result<Vec<_>, _>>()?;
    let positions = properties
        .iter()
        .map(|column| integer(column.index))
        .collect::<Result<Vec<_>, _>>()?;
    statements.push(Statement::new(
        db,
        PUT_COLUMNS,
        vec![
            Box::new(import.id.uuid()),
            Box::new(ordinals),
            Box::new(properties.iter().map(|c| c.id.uuid()).collect::<Vec<_>>()),
            Box::new(properties.iter().map(|c| c.key.clone()).collect::<Vec<_>>()),
            Box::new(positions),
            Box::new(properties.iter().map(|c| enum_text(&c.kind)).collect::<Vec<_>>()),
            Box::new(properties.iter().map(|c| c.boolean).collect::<Vec<_>>()),
        ],
    ));
    Ok(statements)
}

/// Stages into `change`, on `db`, the rows `import` refused (after the import itself,
/// which they refer to).
pub(super) fn stage_errors(db: &Postgres, change: &mut Change, import: &ContactImport, errors: &[ImportError]) {
    if errors.is_empty() {
        return;
    }
    change.stage_shared(Statement::new(db, PUT_ERRORS, error_values(import.id, errors)));
}

/// The values of [`PUT_ERRORS`] for `errors`, refused by the import `import_id`.
pub(in crate::contacts::store) fn error_values(import_id: Id, errors: &[ImportError]) -> Vec<Value> {
    vec![
        Box::new(import_id.uuid()),
        Box::new(errors.iter().map(|e| bigint(e.row)).collect::<Vec<_>>()),
        Box::new(errors.iter().map(|e| bigint(e.line)).collect::<Vec<_>>()),
        Box::new(errors.iter().map(|e| e.reason.clone()).collect::<Vec<_>>()),
    ]
}

/// The import on `row` of [`SELECT_IMPORT`].
fn import(row: &Row) -> Result<ContactImport, Error> {
    let topic_ids: Vec<uuid::Uuid> = row.get(16);
    let subscriptions: Vec<&str> = row.get(17);
    // Invariant: kept equal in length by the table's check.
    if topic_ids.len() != subscriptions.len() {
        return Err(corrupt("an import's topic choices of uneven length".into()));
    }
    let topics = topic_ids
        .into_iter()
        .zip(subscriptions)
        .map(|(id, subscription)| {
            Ok(TopicChoice {
                id: Id::from(id),
                subscription: text_enum(TABLE, subscription)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    let position =
        |index: usize| -> Result<Option<usize>, Error> { row.get::<_, Option<i32>>(index).map(unsigned).transpose() };
    Ok(ContactImport {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        status: text_enum(TABLE, row.get(2))?,
        created_at: timestamp(row.get(3)),
        completed_at: row.get::<_, Option<std::time::SystemTime>>(4).map(timestamp),
        counts: ImportCounts {
            total: unsigned(row.get::<_, i64>(5))?,
            created: unsigned(row.get::<_, i64>(6))?,
            updated: unsigned(row.get::<_, i64>(7))?,
            skipped: unsigned(row.get::<_, i64>(8))?,
            failed: unsigned(row.get::<_, i64>(9))?,
        },
        columns: Columns {
            email: unsigned(row.get::<_, i32>(10))?,
            first_name: position(11)?,
            last_name: position(12)?,
            unsubscribed: position(13)?,
            properties: property_columns(row)?,
        },
        on_conflict: text_enum(TABLE, row.get(14))?,
        segments: row.get::<_, Vec<uuid::Uuid>>(15).into_iter().map(Id::from).collect(),
        topics,
        offset: unsigned(row.get::<_, i64>(18))?,
        line: unsigned(row.get::<_, i64>(19))?,
        failure: row.get(20),
    })
}

/// The property columns on `row` of [`SELECT_IMPORT`]: one array per column, in order,
/// all null when the import has none.
fn property_columns(row: &Row) -> Result<Vec<PropertyColumn>, Error> {
    let Some(ids) = row.get::<_, Option<Vec<uuid::Uuid>>>(21) else {
        return Ok(Vec::new());
    };
    let keys: Vec<String> = row.get(22);
    let positions: Vec<i32> = row.get(23);
    let kinds: Vec<&str> = row.get(24);
    let booleans: Vec<bool> = row.get(25);
    // Invariant: the arrays are aggregated from the same rows.
    let lengths = [keys.len(), positions.len(), kinds.len(), booleans.len()];
    if lengths.iter().any(|&n| n != ids.len()) {
        return Err(corrupt("an import's property columns of uneven length".into()));
    }
    ids.into_iter()
        .zip(keys)
        .zip(positions)
        .zip(kinds.into_iter().zip(booleans))
        .map(|(((id, key), position), (kind, boolean))| {
            Ok(PropertyColumn {
                id: Id::from(id),
                key,
                index: unsigned(position)?,
                kind: text_enum::<PropertyType>("contact_import_columns", kind)?,
                boolean,
            })
        })
        .collect()
}

/// The refused row on `row` (its place, line and reason).
fn refused(row: &Row) -> Result<ImportError, Error> {
    Ok(ImportError {
        row: unsigned(row.get::<_, i64>(0))?,
        line: unsigned(row.get::<_, i64>(1))?,
        reason: row.get(2),
    })
}

/// `n` as a `bigint`: counts, offsets and lines of a file are far below its limit.
fn bigint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A position in a row as an `integer`: rows are bounded far below its limit by the
/// import's row limit, so one beyond it is refused rather than cut.
fn integer(n: usize) -> Result<i32, Error> {
    i32::try_from(n).map_err(|_| Error::Failed(format!("an import's column position {n} is more than is kept")))
}

/// A column the table keeps non-negative, back as what the record holds.
fn unsigned<T: TryFrom<i64>>(n: impl Into<i64>) -> Result<T, Error> {
    let n = n.into();
    T::try_from(n).map_err(|_| corrupt(format!("{n} where a count or position belongs")))
}

fn corrupt(reason: String) -> Error {
    Error::Corrupt { table: TABLE, reason }
}
