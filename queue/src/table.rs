//! Typed record tables: one column family each, values encoded with a format byte.
//!
//! Every part of herald that keeps state (teams, API keys, domains, email records, events,
//! the webhook outbox, request logs, idempotency records) stores it here, so that one write
//! batch can cover a spooled message and every record that goes with it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// A table: a RocksDB column family with a fixed name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Table {
    name: &'static str,
}

impl Table {
    const fn new(name: &'static str) -> Self {
        Table { name }
    }

    /// The column family's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Raw message bytes by message id (spool-internal). A message of 4 KiB or more is
    /// kept in a body file instead, and its place in [`Table::BODY_PLACES`]: the commit
    /// thread moves it there when it is put, and reading or deleting it here reads or
    /// deletes it there. Scans of this table see only the shorter ones.
    pub const MESSAGES: Table = Table::new("messages");
    /// Where each large message lies in the body files, by message id (spool-internal).
    pub const BODY_PLACES: Table = Table::new("body_places");
    /// Messages in each body file, by big-endian file number: little-endian `u64` counts
    /// the commit thread adds to (spool-internal).
    pub const BODY_FILES: Table = Table::new("body_files");
    /// Envelopes and per-recipient state by message id (spool-internal).
    pub const ENVELOPES: Table = Table::new("envelopes");
    /// The due index: big-endian `(due, id)` keys with empty values (spool-internal).
    pub const DUE: Table = Table::new("due");
    /// Store-wide facts such as whether the data directory was initialised.
    pub const META: Table = Table::new("meta");
    /// Teams by id.
    pub const TEAMS: Table = Table::new("teams");
    /// API keys by team and key id.
    pub const API_KEYS: Table = Table::new("api_keys");
    /// API key lookup: SHA-256 digest of the token to the key's location.
    pub const API_KEY_DIGESTS: Table = Table::new("api_key_digests");
    /// When each API key last authenticated a request, apart from the key record so that
    /// recording use never races an edit of the key.
    pub const API_KEY_USAGE: Table = Table::new("api_key_usage");
    /// Sending domains by team and domain id.
    pub const DOMAINS: Table = Table::new("domains");
    /// Domain lookup by team and name.
    pub const DOMAIN_NAMES: Table = Table::new("domain_names");
    /// Domains due for a DNS check: a due index of big-endian `(next check, team and
    /// domain id)` keys with empty values.
    pub const DOMAIN_CHECKS: Table = Table::new("domain_checks");
    /// Email records by team and email id.
    pub const EMAILS: Table = Table::new("emails");
    /// Email events by email id and event id.
    pub const EVENTS: Table = Table::new("events");
    /// Events waiting for webhook dispatch.
    pub const OUTBOX: Table = Table::new("outbox");
    /// API request logs by team and log id.
    pub const LOGS: Table = Table::new("logs");
    /// Request logs by log id then team, so expiry walks them oldest first.
    pub const LOG_EXPIRY: Table = Table::new("log_expiry");
    /// Idempotency records by team and key.
    pub const IDEMPOTENCY: Table = Table::new("idempotency");
    /// Idempotency records by the time they were written, then team and key, so expiry
    /// walks them oldest first.
    pub const IDEMPOTENCY_EXPIRY: Table = Table::new("idempotency_expiry");
    /// Each email's delivery status (last event, attempts) by team and email id: small,
    /// so delivery rewrites it without the email's bodies.
    pub const EMAIL_STATUS: Table = Table::new("email_status");
    /// Webhook messages (one event for one endpoint) by team, webhook and event id.
    pub const WEBHOOK_MESSAGES: Table = Table::new("webhook_messages");
    /// Webhook messages due, by due time then team, webhook and event id.
    pub const WEBHOOK_DUE: Table = Table::new("webhook_due");
    /// The webhook request log by team, webhook and attempt id.
    pub const WEBHOOK_ATTEMPTS: Table = Table::new("webhook_attempts");
    /// Suppressed recipient addresses by team and lower-cased address.
    pub const SUPPRESSIONS: Table = Table::new("suppressions");
    /// Suppression ids by team and id, pointing at the address.
    pub const SUPPRESSION_IDS: Table = Table::new("suppression_ids");
    /// Webhook endpoints by team and webhook id.
    pub const WEBHOOKS: Table = Table::new("webhooks");
    /// Email records to expire: a due index of `(final outcome, team and email id)`.
    pub const EMAIL_EXPIRY: Table = Table::new("email_expiry");
    /// Email contents to expire: a due index of `(final outcome, team and email id)`.
    pub const CONTENT_EXPIRY: Table = Table::new("content_expiry");
    /// Webhook messages and attempts to expire: a due index of `(final outcome or attempt
    /// time, tagged key)`.
    pub const WEBHOOK_EXPIRY: Table = Table::new("webhook_expiry");
    /// Contacts by team and contact id.
    pub const CONTACTS: Table = Table::new("contacts");
    /// Contact ids by team and address (domain part lower-cased).
    pub const CONTACT_EMAILS: Table = Table::new("contact_emails");
    /// Each team's number of contacts, by team.
    pub const CONTACT_COUNTS: Table = Table::new("contact_counts");
    /// Segments (and legacy audiences) by team and segment id.
    pub const SEGMENTS: Table = Table::new("segments");
    /// Segment membership: empty values keyed by team, segment id and contact id, so a
    /// segment's contacts list newest first without reading anyone else.
    pub const SEGMENT_MEMBERS: Table = Table::new("segment_members");
    /// Topics (subscription preferences) by team and topic id.
    pub const TOPICS: Table = Table::new("topics");
    /// Contact property definitions by team and property id.
    pub const CONTACT_PROPERTIES: Table = Table::new("contact_properties");
    /// Contact imports by team and import id.
    pub const CONTACT_IMPORTS: Table = Table::new("contact_imports");
    /// The rows an import refused, by team, import id and row number.
    pub const IMPORT_ERRORS: Table = Table::new("import_errors");
    /// Imports not yet finished: empty values keyed by import id (time-ordered) and team,
    /// so the worker finds the next one without reading finished imports.
    pub const IMPORT_QUEUE: Table = Table::new("import_queue");
    /// Templates (with their versions) by team and template id.
    pub const TEMPLATES: Table = Table::new("templates");
    /// Template ids by team and lower-cased alias.
    pub const TEMPLATE_ALIASES: Table = Table::new("template_aliases");
    /// Templates' list items (no content) by team and template id, written with each
    /// template, so lists and counts never read whole templates.
    pub const TEMPLATE_SUMMARIES: Table = Table::new("template_summaries");
    /// Broadcasts by team and broadcast id.
    pub const BROADCASTS: Table = Table::new("broadcasts");
    /// What became of each contact of a broadcast, by team, broadcast and contact id:
    /// written in the same batch as the contact's email, so no contact is sent twice.
    pub const BROADCAST_RECIPIENTS: Table = Table::new("broadcast_recipients");
    /// Broadcasts waiting to be sent or being sent: empty values keyed by broadcast id
    /// (time-ordered) and team, so the worker finds them without reading the others.
    pub const BROADCAST_QUEUE: Table = Table::new("broadcast_queue");
    /// Dashboard users by team and user id.
    pub const USERS: Table = Table::new("users");
    /// Users by lower-cased email: the team and user id.
    pub const USER_EMAILS: Table = Table::new("user_emails");
    /// Dashboard sessions by the SHA-256 of their token.
    pub const SESSIONS: Table = Table::new("sessions");
    /// Invitations by the SHA-256 of their token.
    pub const INVITATIONS: Table = Table::new("invitations");
    /// Design images by team and image id: what each is (name, format, size).
    pub const IMAGES: Table = Table::new("images");
    /// Design images' bytes by team and the random half of their address, after a byte
    /// naming the format.
    pub const IMAGE_BYTES: Table = Table::new("image_bytes");
    /// Emails by team, current status and id: empty values, for the Emails page's filter.
    pub const EMAILS_BY_STATUS: Table = Table::new("emails_by_status");
    /// Counters by key (the daily counts of the Metrics page): little-endian `u64`
    /// values that writes add to with [`crate::Batch::add`].
    pub const COUNTERS: Table = Table::new("counters");
    /// Counter periods to expire: a due index of `(period start, counter key prefix)`.
    pub const COUNTER_EXPIRY: Table = Table::new("counter_expiry");
    /// Request logs to expire: a due index of `(request time, team and log id)`. Replaces
    /// [`Table::LOG_EXPIRY`], whose entries are moved here at start.
    pub const LOG_DUE: Table = Table::new("log_due");
    /// Finished contact imports to expire: a due index of `(time finished, team and
    /// import id)`.
    pub const IMPORT_EXPIRY: Table = Table::new("import_expiry");

    /// Every table this build knows. The store creates the missing ones at open.
    pub const ALL: &'static [Table] = &[
        Table::MESSAGES,
        Table::BODY_PLACES,
        Table::BODY_FILES,
        Table::ENVELOPES,
        Table::DUE,
        Table::META,
        Table::TEAMS,
        Table::API_KEYS,
        Table::API_KEY_DIGESTS,
        Table::API_KEY_USAGE,
        Table::DOMAINS,
        Table::DOMAIN_NAMES,
        Table::DOMAIN_CHECKS,
        Table::EMAILS,
        Table::EVENTS,
        Table::OUTBOX,
        Table::LOGS,
        Table::LOG_EXPIRY,
        Table::IDEMPOTENCY,
        Table::IDEMPOTENCY_EXPIRY,
        Table::EMAIL_STATUS,
        Table::WEBHOOK_MESSAGES,
        Table::WEBHOOK_DUE,
        Table::WEBHOOK_ATTEMPTS,
        Table::SUPPRESSIONS,
        Table::SUPPRESSION_IDS,
        Table::WEBHOOKS,
        Table::EMAIL_EXPIRY,
        Table::CONTENT_EXPIRY,
        Table::WEBHOOK_EXPIRY,
        Table::LOG_DUE,
        Table::COUNTERS,
        Table::COUNTER_EXPIRY,
        Table::CONTACTS,
        Table::CONTACT_EMAILS,
        Table::CONTACT_COUNTS,
        Table::SEGMENTS,
        Table::SEGMENT_MEMBERS,
        Table::TOPICS,
        Table::CONTACT_PROPERTIES,
        Table::CONTACT_IMPORTS,
        Table::IMPORT_ERRORS,
        Table::IMPORT_QUEUE,
        Table::TEMPLATES,
        Table::TEMPLATE_ALIASES,
        Table::TEMPLATE_SUMMARIES,
        Table::BROADCASTS,
        Table::BROADCAST_RECIPIENTS,
        Table::BROADCAST_QUEUE,
        Table::USERS,
        Table::USER_EMAILS,
        Table::SESSIONS,
        Table::INVITATIONS,
        Table::IMAGES,
        Table::IMAGE_BYTES,
        Table::EMAILS_BY_STATUS,
        Table::IMPORT_EXPIRY,
    ];
}

/// A value stored in a table. Implement it for each record type:
///
/// ```
/// # use herald_queue::{Record, Table};
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Team { name: String }
/// impl Record for Team { const TABLE: Table = Table::TEAMS; }
/// ```
pub trait Record: Serialize + DeserializeOwned {
    /// The table records of this type live in.
    const TABLE: Table;
}

/// The first byte of every encoded record: the encoding's version. A reader that meets
/// another byte refuses the record instead of guessing at it.
const FORMAT_JSON_V1: u8 = 1;

/// Encodes a record as its format byte followed by JSON. JSON keeps records readable
/// with `ldb` and lets later versions add fields with serde defaults.
pub(crate) fn encode<R: Serialize>(table: Table, record: &R) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![FORMAT_JSON_V1];
    serde_json::to_writer(&mut bytes, record).map_err(|source| Error::Encode {
        table: table.name(),
        source,
    })?;
    // The pair of this check is the one in `decode`: a record is valid JSON behind the
    // format byte when written and when read.
    debug_assert!(bytes.len() > 1);
    Ok(bytes)
}

/// Decodes what [`encode`] wrote.
pub(crate) fn decode<R: DeserializeOwned>(table: Table, bytes: &[u8]) -> Result<R, Error> {
    match bytes.split_first() {
        Some((&FORMAT_JSON_V1, json)) => serde_json::from_slice(json).map_err(|e| Error::Corrupt {
            table: table.name(),
            reason: e.to_string(),
        }),
        Some((other, _)) => Err(Error::Corrupt {
            table: table.name(),
            reason: format!("unknown format byte {other}"),
        }),
        None => Err(Error::Corrupt {
            table: table.name(),
            reason: "empty value".to_owned(),
        }),
    }
}

/// Decodes a record of type `R` from the bytes a raw read returned (see
/// [`Store::scan_raw`](crate::Store::scan_raw)), so that one bad record in a scan can be
/// told from the rest.
///
/// # Errors
///
/// [`Error::Corrupt`] when the bytes are not a record of type `R`.
pub fn decode_record<R: Record>(bytes: &[u8]) -> Result<R, Error> {
    decode(R::TABLE, bytes)
}

/// The value of a counter (see [`crate::Batch::add`]): `0` for bytes that are not one.
pub fn decode_counter(bytes: &[u8]) -> u64 {
    bytes.try_into().map_or(0, u64::from_le_bytes)
}

/// Sums the additions to one counter: RocksDB's merge operator for [`Table::COUNTERS`].
/// A value that is not 8 bytes counts as 0 rather than failing the read.
pub(crate) fn add_counters(_key: &[u8], existing: Option<&[u8]>, operands: &rocksdb::MergeOperands) -> Option<Vec<u8>> {
    let sum = operands
        .iter()
        .fold(existing.map_or(0, decode_counter), |sum, operand| {
            sum.wrapping_add(decode_counter(operand))
        });
    Some(sum.to_le_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sample {
        name: String,
        count: u32,
    }

    #[test]
    fn records_round_trip() {
        let sample = Sample {
            name: "ü".into(),
            count: 7,
        };
        let bytes = encode(Table::TEAMS, &sample).expect("encodes");
        assert_eq!(bytes[0], FORMAT_JSON_V1);
        let back: Sample = decode(Table::TEAMS, &bytes).expect("decodes");
        assert_eq!(back, sample);
    }

    #[test]
    fn unknown_format_byte_is_corrupt() {
        let err = decode::<Sample>(Table::TEAMS, b"\x09{}").expect_err("refused");
        assert!(matches!(err, Error::Corrupt { table: "teams", .. }), "{err}");
        assert!(decode::<Sample>(Table::TEAMS, b"").is_err());
        assert!(decode::<Sample>(Table::TEAMS, b"\x01{not json").is_err());
    }

    #[test]
    fn table_names_are_unique() {
        let mut names: Vec<_> = Table::ALL.iter().map(Table::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Table::ALL.len());
    }
}
