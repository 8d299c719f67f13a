//! A contact as rows: its own in `contacts`, its topic choices in `contact_topics`, its
//! property values in `contact_property_values` and its place in each segment's index in
//! `segment_members`. A read is one statement; writes of any number of contacts (one, or
//! an import's chunk) are a fixed handful of statements over arrays, staged into a
//! [`Change`] so that they commit in one transaction with whatever else it holds.

use std::collections::{BTreeMap, HashMap};

use herald_queue::Id;
use tokio_postgres::Row;

use crate::contacts::model::{Contact, TopicChoice, normalize};
use crate::storage::postgres::{Postgres, Statement, Value, enum_text, text_enum, time, timestamp};
use crate::storage::{Change, Error};

/// A contact with its topic choices (in order) and property values (by property id),
/// aggregated beside its row, to be followed by a condition on `c`. Its columns are read
/// by [`contact`].
pub(super) const SELECT_CONTACT: &str = "SELECT c.id, c.team_id, c.email, c.first_name, c.last_name,
        c.unsubscribed, c.created_at, c.updated_at, c.segments,
        t.topic_ids, t.subscriptions, p.property_ids, p.property_values
    FROM contacts c
    LEFT JOIN LATERAL (
        SELECT array_agg(topic_id ORDER BY position) AS topic_ids,
            array_agg(subscription ORDER BY position) AS subscriptions
        FROM contact_topics WHERE contact_id = c.id
    ) t ON true
    LEFT JOIN LATERAL (
        SELECT array_agg(property_id ORDER BY property_id) AS property_ids,
            array_agg(value ORDER BY property_id) AS property_values
        FROM contact_property_values WHERE contact_id = c.id
    ) p ON true";

/// Writes contacts, new or changed, and counts in their teams those that were not there
/// before. `known` is read in the statement's snapshot, before the insert: a statement
/// run again finds them all known and counts none, as staged statements must allow.
/// A contact's segments travel as the text of a `uuid[]` (arrays of arrays must be
/// rectangular in PostgreSQL, and contacts are in any number of segments).
const UPSERT_CONTACTS: &str = "WITH written AS (
        SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::boolean[], $8::timestamptz[], $9::timestamptz[], $10::text[])
            AS w(id, team_id, email, email_key, first_name, last_name, unsubscribed, created_at, updated_at,
                segments)
    ), known AS (
        SELECT id FROM contacts WHERE id IN (SELECT id FROM written)
    ), upserted AS (
        INSERT INTO contacts (id, team_id, email, email_key, first_name, last_name, unsubscribed, created_at,
            updated_at, segments)
        SELECT id, team_id, email, email_key, first_name, last_name, unsubscribed, created_at, updated_at,
            segments::uuid[]
        FROM written
        ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, email_key = EXCLUDED.email_key,
            first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
            unsubscribed = EXCLUDED.unsubscribed, created_at = EXCLUDED.created_at,
            updated_at = EXCLUDED.updated_at, segments = EXCLUDED.segments
        RETURNING id, team_id
    )
    INSERT INTO contact_counts (team_id, contacts)
    SELECT team_id, count(*) FROM upserted WHERE id NOT IN (SELECT id FROM known) GROUP BY team_id
    ON CONFLICT (team_id) DO UPDATE SET contacts = contact_counts.contacts + EXCLUDED.contacts";

/// Forgets the topic choices of changed contacts, before their new ones are written.
const CLEAR_TOPICS: &str = "DELETE FROM contact_topics WHERE contact_id = ANY($1)";

/// Writes topic choices in their places.
const PUT_TOPICS: &str = "INSERT INTO contact_topics (contact_id, position, topic_id, subscription)
    SELECT * FROM unnest($1::uuid[], $2::integer[], $3::uuid[], $4::text[])
    ON CONFLICT (contact_id, position) DO UPDATE
        SET topic_id = EXCLUDED.topic_id, subscription = EXCLUDED.subscription";

/// Forgets the property values of changed contacts, before their new ones are written.
const CLEAR_VALUES: &str = "DELETE FROM contact_property_values WHERE contact_id = ANY($1)";

/// Writes property values.
const PUT_VALUES: &str = "INSERT INTO contact_property_values (contact_id, property_id, value)
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[])
    ON CONFLICT (contact_id, property_id) DO UPDATE SET value = EXCLUDED.value";

/// Takes contacts out of segments' indexes.
const LEAVE_SEGMENTS: &str = "DELETE FROM segment_members m
    USING unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS l(team_id, segment_id, contact_id)
    WHERE m.team_id = l.team_id AND m.segment_id = l.segment_id AND m.contact_id = l.contact_id";

/// Puts contacts in segments' indexes.
pub(in crate::contacts::store) const JOIN_SEGMENTS: &str =
    "INSERT INTO segment_members (team_id, segment_id, contact_id)
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[])
    ON CONFLICT DO NOTHING";

/// The table's name, for corrupt-record errors.
const TABLE: &str = "contacts";

/// The contact on `row` of [`SELECT_CONTACT`].
pub(super) fn contact(row: &Row) -> Result<Contact, Error> {
    let topic_ids: Vec<uuid::Uuid> = row.get::<_, Option<_>>(9).unwrap_or_default();
    let subscriptions: Vec<&str> = row.get::<_, Option<_>>(10).unwrap_or_default();
    let property_ids: Vec<uuid::Uuid> = row.get::<_, Option<_>>(11).unwrap_or_default();
    let values: Vec<serde_json::Value> = row.get::<_, Option<_>>(12).unwrap_or_default();
    // Invariant: each pair of arrays is aggregated from the same rows.
    if topic_ids.len() != subscriptions.len() || property_ids.len() != values.len() {
        return Err(Error::Corrupt {
            table: TABLE,
            reason: "a contact's aggregates of uneven length".into(),
        });
    }
    let topics = topic_ids
        .into_iter()
        .zip(subscriptions)
        .map(|(id, subscription)| {
            Ok(TopicChoice {
                id: Id::from(id),
                subscription: text_enum("contact_topics", subscription)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(Contact {
        id: Id::from(row.get::<_, uuid::Uuid>(0)),
        team_id: Id::from(row.get::<_, uuid::Uuid>(1)),
        email: row.get(2),
        first_name: row.get(3),
        last_name: row.get(4),
        unsubscribed: row.get(5),
        created_at: timestamp(row.get(6)),
        updated_at: timestamp(row.get(7)),
        segments: row.get::<_, Vec<uuid::Uuid>>(8).into_iter().map(Id::from).collect(),
        topics,
        properties: property_ids
            .into_iter()
            .map(Id::from)
            .zip(values)
            .collect::<BTreeMap<_, _>>(),
    })
}

/// One contact's write: the contact as it will be, and as it was (`None`: new).
type Write<'a> = (&'a Contact, Option<&'a Contact>);

/// `writes` with one entry per contact: a contact written twice is written as it was
/// last, changed from what it was before its first write, as writing them one after
/// another would leave it.
fn folded<'a>(writes: impl IntoIterator<Item = Write<'a>>) -> Vec<Write<'a>> {
    let mut folded: Vec<Write<'a>> = Vec::new();
    let mut places: HashMap<Id, usize> = HashMap::new();
    for (contact, previous) in writes {
        match places.get(&contact.id) {
            Some(&place) => folded[place].0 = contact,
            None => {
                places.insert(contact.id, folded.len());
                folded.push((contact, previous));
            }
        }
    }
    folded
}

/// Stages into `change`, on `db`, the writes of contacts new or changed, with their
/// topic choices, property values and moves between segments' indexes. A segment the
/// contact named before and names still is not indexed again: one deleted meanwhile
/// took its index with it, which a contact's write does not bring back.
pub(super) fn stage_writes<'a>(db: &Postgres, change: &mut Change, writes: impl IntoIterator<Item = Write<'a>>) {
    let writes = folded(writes);
    if writes.is_empty() {
        return;
    }
    change.stage_shared(Statement::new(db, UPSERT_CONTACTS, contact_values(&writes)));
    let changed: Vec<uuid::Uuid> = writes
        .iter()
        .filter(|(_, previous)| previous.is_some())
        .map(|(contact, _)| contact.id.uuid())
        .collect();
    if !changed.is_empty() {
        change.stage_shared(Statement::new(db, CLEAR_TOPICS, vec![Box::new(changed.clone())]));
        change.stage_shared(Statement::new(db, CLEAR_VALUES, vec![Box::new(changed)]));
    }
    if let Some(values) = topic_values(&writes) {
        change.stage_shared(Statement::new(db, PUT_TOPICS, values));
    }
    if let Some(values) = property_values(&writes) {
        change.stage_shared(Statement::new(db, PUT_VALUES, values));
    }
    let (left, joined) = segment_moves(&writes);
    if let Some(values) = left.into_values() {
        change.stage_shared(Statement::new(db, LEAVE_SEGMENTS, values));
    }
    if let Some(values) = joined.into_values() {
        change.stage_shared(Statement::new(db, JOIN_SEGMENTS, values));
    }
}

/// The statements that write `contact` as it is, new, without its entries in its
/// segments' indexes: what `herald store copy` writes of a contact, which copies those
/// entries from the RocksDB index itself (a contact names segments deleted since, whose
/// entries went with them). The team's count moves as for any new contact.
pub(in crate::contacts::store) fn copied(db: &Postgres, contact: &Contact) -> Vec<Statement> {
    let writes = [(contact, None)];
    let mut statements = vec![Statement::new(db, UPSERT_CONTACTS, contact_values(&writes))];
    if let Some(values) = topic_values(&writes) {
        statements.push(Statement::new(db, PUT_TOPICS, values));
    }
    if let Some(values) = property_values(&writes) {
        statements.push(Statement::new(db, PUT_VALUES, values));
    }
    statements
}

/// The values of [`JOIN_SEGMENTS`] that put `contact_id` of `team_id` in the index of
/// segment `segment_id`.
pub(in crate::contacts::store) fn member_values(team_id: Id, segment_id: Id, contact_id: Id) -> Vec<Value> {
    vec![
        Box::new(vec![team_id.uuid()]),
        Box::new(vec![segment_id.uuid()]),
        Box::new(vec![contact_id.uuid()]),
    ]
}

/// The arrays of [`UPSERT_CONTACTS`], a contact at each index.
fn contact_values(writes: &[Write<'_>]) -> Vec<Value> {
    let contacts = || writes.iter().map(|(contact, _)| *contact);
    let segments = |contact: &Contact| {
        let ids: Vec<String> = contact.segments.iter().map(|id| id.uuid().to_string()).collect();
        format!("{{{}}}", ids.join(","))
    };
    vec![
        Box::new(contacts().map(|c| c.id.uuid()).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| c.team_id.uuid()).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| c.email.clone()).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| normalize(&c.email)).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| c.first_name.clone()).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| c.last_name.clone()).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| c.unsubscribed).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| time(c.created_at)).collect::<Vec<_>>()),
        Box::new(contacts().map(|c| time(c.updated_at)).collect::<Vec<_>>()),
        Box::new(contacts().map(segments).collect::<Vec<_>>()),
    ]
}

/// The arrays of [`PUT_TOPICS`], or `None` when no contact chose a topic.
fn topic_values(writes: &[Write<'_>]) -> Option<Vec<Value>> {
    let (mut contacts, mut positions, mut topics, mut subscriptions) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (contact, _) in writes {
        for (position, choice) in contact.topics.iter().enumerate() {
            contacts.push(contact.id.uuid());
            // A contact chooses among its team's topics, a few dozen at most.
            positions.push(i32::try_from(position).unwrap_or(i32::MAX));
            topics.push(choice.id.uuid());
            subscriptions.push(enum_text(&choice.subscription));
        }
    }
    if contacts.is_empty() {
        return None;
    }
    Some(vec![
        Box::new(contacts),
        Box::new(positions),
        Box::new(topics),
        Box::new(subscriptions),
    ])
}

/// The arrays of [`PUT_VALUES`], or `None` when no contact has a property value.
fn property_values(writes: &[Write<'_>]) -> Option<Vec<Value>> {
    let (mut contacts, mut properties, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (contact, _) in writes {
        for (property, value) in &contact.properties {
            contacts.push(contact.id.uuid());
            properties.push(property.uuid());
            values.push(value.clone());
        }
    }
    if contacts.is_empty() {
        return None;
    }
    Some(vec![Box::new(contacts), Box::new(properties), Box::new(values)])
}

/// Entries of segments' indexes, as three arrays.
#[derive(Default)]
struct Entries {
    teams: Vec<uuid::Uuid>,
    segments: Vec<uuid::Uuid>,
    contacts: Vec<uuid::Uuid>,
}

impl Entries {
    fn push(&mut self, contact: &Contact, segment: Id) {
        self.teams.push(contact.team_id.uuid());
        self.segments.push(segment.uuid());
        self.contacts.push(contact.id.uuid());
    }

    /// The values of [`LEAVE_SEGMENTS`] or [`JOIN_SEGMENTS`], or `None` for no entry.
    fn into_values(self) -> Option<Vec<Value>> {
        if self.contacts.is_empty() {
            return None;
        }
        Some(vec![
            Box::new(self.teams),
            Box::new(self.segments),
            Box::new(self.contacts),
        ])
    }
}

/// The entries each contact's write removes (the segments it left) and adds (those it
/// joined), as the RocksDB store moves its member keys.
fn segment_moves(writes: &[Write<'_>]) -> (Entries, Entries) {
    let (mut left, mut joined) = (Entries::default(), Entries::default());
    for (contact, previous) in writes {
        let before: &[Id] = previous.map_or(&[], |old| &old.segments);
        for segment in before.iter().filter(|s| !contact.segments.contains(s)) {
            left.push(contact, *segment);
        }
        for segment in contact.segments.iter().filter(|s| !before.contains(s)) {
            joined.push(contact, *segment);
        }
    }
    (left, joined)
}
