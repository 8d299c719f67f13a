//! Templates in PostgreSQL (`templates`, `template_versions`, `template_variables`; see
//! the schema's second migration): shared by every node, so a template made through one
//! sends from all.
//!
//! A template is a row of its own with its versions beside it, each in its place (the
//! published one, the draft, the history by position) with its variables in order. A
//! write replaces the versions whole in one transaction, as the RocksDB store rewrites
//! its one record; a read is one statement, so it never sees half of a write. An alias
//! is unique in its team by a unique constraint on the alias as compared.

use futures_util::future::try_join_all;
use herald_queue::Id;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::TemplateStore;
use crate::storage::Error;
use crate::storage::page::PageRequest;
use crate::storage::postgres::{Postgres, Value, from_driver, page_of, page_params, page_sql, time, timestamp};
use crate::templates::model::{Template, TemplateSummary, Variable, VariableType, Version};

/// Templates deleted per pass of `erase_team`: each takes its versions with it (up to a
/// dozen, each up to a few megabytes), so a pass stays a transaction of bounded size.
const ERASE_BATCH: i64 = 100;

/// A template with its versions and their variables, one row per version (one row of
/// nulls after the template's own columns if it had none), to be followed by the
/// condition that picks the template (on `t`) and [`VERSION_ORDER`].
const SELECT_TEMPLATE: &str = "SELECT t.id, t.team_id, t.name, t.alias, t.published_at, t.created_at, t.updated_at,
        v.slot, v.id, v.sender, v.subject, v.reply_to, v.html, v.text, v.mjml, v.created_at,
        w.ids, w.keys, w.kinds, w.fallback_values, w.created_ats, w.updated_ats
    FROM templates t
    LEFT JOIN template_versions v ON v.template_id = t.id
    LEFT JOIN LATERAL (
        SELECT array_agg(w.id ORDER BY w.ordinal) AS ids, array_agg(w.key ORDER BY w.ordinal) AS keys,
            array_agg(w.kind ORDER BY w.ordinal) AS kinds,
            array_agg(w.fallback_value ORDER BY w.ordinal) AS fallback_values,
            array_agg(w.created_at ORDER BY w.ordinal) AS created_ats,
            array_agg(w.updated_at ORDER BY w.ordinal) AS updated_ats
        FROM template_variables w
        WHERE w.template_id = v.template_id AND w.slot = v.slot AND w.position = v.position
    ) w ON true";

/// The order of [`SELECT_TEMPLATE`]'s rows: by place, so that the history comes newest
/// first.
const VERSION_ORDER: &str = "ORDER BY v.slot, v.position";

/// The columns of a list item, in the order [`summary`] reads them: whether a version
/// was ever published is whether one is in the published place.
const SUMMARY_COLUMNS: &str = "id, name, alias, published_at, created_at, updated_at,
    EXISTS (SELECT 1 FROM template_versions v WHERE v.template_id = templates.id AND v.slot = 'published')";

/// Writes a template's own columns, new or changed.
pub(super) const PUT_TEMPLATE: &str =
    "INSERT INTO templates (id, team_id, name, alias, alias_key, published_at, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, alias = EXCLUDED.alias, alias_key = EXCLUDED.alias_key,
        published_at = EXCLUDED.published_at, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at";

/// Writes one version in its place.
pub(super) const INSERT_VERSION: &str = "INSERT INTO template_versions
        (template_id, slot, position, id, sender, subject, reply_to, html, text, mjml, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// Writes one variable of a version.
pub(super) const INSERT_VARIABLE: &str = "INSERT INTO template_variables
        (template_id, slot, position, ordinal, id, key, kind, fallback_value, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// Templates in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresTemplates {
    db: Postgres,
}

impl PostgresTemplates {
    /// Templates in `db`, whose schema is migrated.
    pub fn new(db: Postgres) -> PostgresTemplates {
        PostgresTemplates { db }
    }

    /// The template [`SELECT_TEMPLATE`] finds under `condition` with `params`.
    fn find(
        &self,
        condition: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Template>, Error> {
        self.db.run(async |client| {
            let sql = format!("{SELECT_TEMPLATE} WHERE {condition} {VERSION_ORDER}");
            let rows = client.query(&sql, params).await.map_err(from_driver)?;
            template(&rows)
        })
    }
}

/// The alias `alias` as compared: ASCII lower case, as the RocksDB store keys it.
fn alias_key(alias: &str) -> String {
    alias.to_ascii_lowercase()
}

/// Where a version is kept in its template.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Published,
    Draft,
    /// Published before, at this position from the newest.
    History(i16),
}

impl Slot {
    fn name(self) -> &'static str {
        match self {
            Slot::Published => "published",
            Slot::Draft => "draft",
            Slot::History(_) => "history",
        }
    }

    fn position(self) -> i16 {
        match self {
            Slot::Published | Slot::Draft => 0,
            Slot::History(position) => position,
        }
    }
}

/// Each version of `template` with its place.
fn places(template: &Template) -> Result<Vec<(Slot, &Version)>, Error> {
    let mut places: Vec<(Slot, &Version)> = Vec::with_capacity(template.history.len() + 2);
    places.extend(template.published.iter().map(|v| (Slot::Published, v)));
    places.extend(template.draft.iter().map(|v| (Slot::Draft, v)));
    for (position, version) in template.history.iter().enumerate() {
        places.push((Slot::History(small(position, "history")?), version));
    }
    Ok(places)
}

/// `n` as a `smallint`: positions and ordinals are bounded far below its limit by the
/// service (`HISTORY_MAX`, `VARIABLES_MAX`).
fn small(n: usize, what: &str) -> Result<i16, Error> {
    i16::try_from(n).map_err(|_| Error::Failed(format!("a template's {what} of {n} entries is more than is kept")))
}

fn kind_named(name: &str) -> Result<VariableType, Error> {
    [VariableType::String, VariableType::Number]
        .into_iter()
        .find(|kind| kind.name() == name)
        .ok_or_else(|| corrupt("template_variables", format!("unknown variable type {name:?}")))
}

fn corrupt(table: &'static str, reason: String) -> Error {
    Error::Corrupt { table, reason }
}

/// The template in `rows`, as [`SELECT_TEMPLATE`] answers them.
fn template(rows: &[Row]) -> Result<Option<Template>, Error> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let mut template = Template {
        id: Id::from(first.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(first.get::<_, uuid::Uuid>(1)),
        name: first.get(2),
        alias: first.get(3),
        published: None,
        published_at: first.get::<_, Option<std::time::SystemTime>>(4).map(timestamp),
        draft: None,
        history: Vec::new(),
        created_at: timestamp(first.get(5)),
        updated_at: timestamp(first.get(6)),
    };
    for row in rows {
        let Some(slot) = row.get::<_, Option<&str>>(7) else {
            continue;
        };
        let version = version(row)?;
        match slot {
            "published" => template.published = Some(version),
            "draft" => template.draft = Some(version),
            // In order of position: newest first.
            "history" => template.history.push(version),
            other => return Err(corrupt("template_versions", format!("unknown slot {other:?}"))),
        }
    }
    Ok(Some(template))
}

/// The version on `row` of [`SELECT_TEMPLATE`], from its eighth column.
fn version(row: &Row) -> Result<Version, Error> {
    Ok(Version {
        id: Id::from(row.get::<_, uuid::Uuid>(8)),
        from: row.get(9),
        subject: row.get(10),
        reply_to: row.get(11),
        html: row.get(12),
        text: row.get(13),
        variables: variables(row)?,
        mjml: row.get(14),
        created_at: timestamp(row.get(15)),
    })
}

/// The variables on `row` of [`SELECT_TEMPLATE`]: one array per column, in order, all
/// null when the version has none.
fn variables(row: &Row) -> Result<Vec<Variable>, Error> {
    let Some(ids) = row.get::<_, Option<Vec<uuid::Uuid>>>(16) else {
        return Ok(Vec::new());
    };
    let keys: Vec<String> = row.get(17);
    let kinds: Vec<&str> = row.get(18);
    let fallbacks: Vec<Option<serde_json::Value>> = row.get(19);
    let created: Vec<std::time::SystemTime> = row.get(20);
    let updated: Vec<std::time::SystemTime> = row.get(21);
    let lengths = [keys.len(), kinds.len(), fallbacks.len(), created.len(), updated.len()];
    // Invariant: the arrays are aggregated from the same rows.
    if lengths.iter().any(|&n| n != ids.len()) {
        return Err(corrupt("template_variables", "variables of uneven columns".into()));
    }
    ids.into_iter()
        .zip(keys)
        .zip(kinds)
        .zip(fallbacks)
        .zip(created.into_iter().zip(updated))
        .map(|((((id, key), kind), fallback_value), (created_at, updated_at))| {
            Ok(Variable {
                id: Id::from(id),
                key,
                kind: kind_named(kind)?,
                fallback_value,
                created_at: timestamp(created_at),
                updated_at: timestamp(updated_at),
            })
        })
        .collect()
}

fn summary(row: &Row) -> TemplateSummary {
    TemplateSummary {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        name: row.get(1),
        alias: row.get(2),
        published_at: row.get::<_, Option<std::time::SystemTime>>(3).map(timestamp),
        created_at: timestamp(row.get(4)),
        updated_at: timestamp(row.get(5)),
        published: row.get(6),
    }
}

/// The values of [`PUT_TEMPLATE`] for `template`.
pub(super) fn values(template: &Template) -> Vec<Value> {
    vec![
        Box::new(template.id.uuid()),
        Box::new(template.team_id.uuid()),
        Box::new(template.name.clone()),
        Box::new(template.alias.clone()),
        Box::new(template.alias.as_deref().map(alias_key)),
        Box::new(template.published_at.map(time)),
        Box::new(time(template.created_at)),
        Box::new(time(template.updated_at)),
    ]
}

/// The rows of a template's versions, as values of their statements.
pub(super) struct VersionRows {
    /// The values of [`INSERT_VERSION`] for each version in its place.
    pub(super) versions: Vec<Vec<Value>>,
    /// The values of [`INSERT_VARIABLE`] for each of their variables (which refer to
    /// their version, so are written after them).
    pub(super) variables: Vec<Vec<Value>>,
}

/// The rows of `template`'s versions and their variables.
pub(super) fn version_values(template: &Template) -> Result<VersionRows, Error> {
    let places = places(template)?;
    let template_id = template.id.uuid();
    let mut versions = Vec::with_capacity(places.len());
    let mut variables = Vec::new();
    for &(slot, version) in &places {
        versions.push(vec![
            Box::new(template_id) as Value,
            Box::new(slot.name()),
            Box::new(slot.position()),
            Box::new(version.id.uuid()),
            Box::new(version.from.clone()),
            Box::new(version.subject.clone()),
            Box::new(version.reply_to.clone()),
            Box::new(version.html.clone()),
            Box::new(version.text.clone()),
            Box::new(version.mjml.clone()),
            Box::new(time(version.created_at)),
        ]);
        for (ordinal, variable) in version.variables.iter().enumerate() {
            variables.push(vec![
                Box::new(template_id) as Value,
                Box::new(slot.name()),
                Box::new(slot.position()),
                Box::new(small(ordinal, "variables")?),
                Box::new(variable.id.uuid()),
                Box::new(variable.key.clone()),
                Box::new(variable.kind.name()),
                Box::new(variable.fallback_value.clone()),
                Box::new(time(variable.created_at)),
                Box::new(time(variable.updated_at)),
            ]);
        }
    }
    Ok(VersionRows { versions, variables })
}

/// `values` as the driver takes them.
fn params(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|value| &**value as _).collect()
}

/// Writes `template`'s versions and their variables through `client` (a transaction in
/// which its earlier ones were deleted). A table's rows are sent one after another
/// without waiting for each answer (the driver pipelines them), then awaited together.
async fn insert_versions(client: &impl tokio_postgres::GenericClient, template: &Template) -> Result<(), Error> {
    let rows = version_values(template)?;
    for (sql, rows) in [(INSERT_VERSION, &rows.versions), (INSERT_VARIABLE, &rows.variables)] {
        if rows.is_empty() {
            continue;
        }
        let statement = &client.prepare(sql).await.map_err(from_driver)?;
        try_join_all(
            rows.iter()
                .map(|row| async move { client.execute(statement, &params(row)).await }),
        )
        .await
        .map_err(from_driver)?;
    }
    Ok(())
}

impl TemplateStore for PostgresTemplates {
    fn get(&self, team_id: Id, id: Id) -> Result<Option<Template>, Error> {
        self.find("t.team_id = $1 AND t.id = $2", &[&team_id.uuid(), &id.uuid()])
    }

    fn by_alias(&self, team_id: Id, alias: &str) -> Result<Option<Template>, Error> {
        self.find(
            "t.team_id = $1 AND t.alias_key = $2",
            &[&team_id.uuid(), &alias_key(alias)],
        )
    }

    fn page(&self, team_id: Id, page: &PageRequest) -> Result<(Vec<TemplateSummary>, bool), Error> {
        self.db.run(async |client| {
            let sql = format!(
                "SELECT {SUMMARY_COLUMNS} FROM templates WHERE team_id = $1 AND {}",
                page_sql(page, 2, 3)
            );
            let (cursor, limit) = page_params(page);
            let rows = client
                .query(&sql, &[&team_id.uuid(), &cursor, &limit])
                .await
                .map_err(from_driver)?;
            Ok(page_of(rows.iter().map(summary).collect(), page))
        })
    }

    fn count(&self, team_id: Id) -> Result<usize, Error> {
        self.db.run(async |client| {
            let row = client
                .query_one("SELECT count(*) FROM templates WHERE team_id = $1", &[&team_id.uuid()])
                .await
                .map_err(from_driver)?;
            let count: i64 = row.get(0);
            Ok(usize::try_from(count).unwrap_or(usize::MAX))
        })
    }

    fn put(&self, template: &Template, _previous: Option<&Template>) -> Result<(), Error> {
        // `previous` is not needed: the alias is a column of the row it changes with,
        // where the RocksDB store keeps it in a key of its own to delete.
        self.db.run(async |client| {
            let transaction = client.transaction().await.map_err(from_driver)?;
            transaction
                .execute(PUT_TEMPLATE, &params(&values(template)))
                .await
                .map_err(from_driver)?;
            // The variables go with their versions (ON DELETE CASCADE).
            transaction
                .execute(
                    "DELETE FROM template_versions WHERE template_id = $1",
                    &[&template.id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            insert_versions(&*transaction, template).await?;
            transaction.commit().await.map_err(from_driver)
        })
    }

    fn delete(&self, template: &Template) -> Result<(), Error> {
        self.db.run(async |client| {
            // Its alias is in its row; its versions go with it (ON DELETE CASCADE).
            client
                .execute(
                    "DELETE FROM templates WHERE team_id = $1 AND id = $2",
                    &[&template.team_id.uuid(), &template.id.uuid()],
                )
                .await
                .map_err(from_driver)?;
            Ok(())
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
                        SELECT id FROM templates WHERE team_id = $1 ORDER BY id LIMIT $2::bigint + 1
                     ), deleted AS (
                        DELETE FROM templates WHERE id IN (SELECT id FROM picked ORDER BY id LIMIT $2)
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
