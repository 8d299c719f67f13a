//! Contacts: the people a team mails in bulk, one per address per team (Resend's
//! audience API), with the segments they belong to, their topic subscriptions and their
//! custom properties, created one at a time or imported from a CSV file.
//!
//! A contact that unsubscribes is not suppressed: suppressions stop transactional mail to
//! an address, unsubscribing (from everything, or from one topic) stops marketing mail to
//! a person. Broadcasts read [`Contact::receives`] to skip them.
//!
//! Segments, topics and property definitions are small per-team collections (each
//! bounded by a `[contacts]` limit); contacts are the big one. A contact's record names
//! its segments, topic choices and property values, and a segment's members are also
//! indexed by segment, so a segment's contacts page without reading anyone else's. When
//! a segment, topic or property goes, the records that name it are not rewritten (there
//! may be millions): what they say of it is ignored on reading, and dropped at the
//! contact's next write (see [`service`]), so a record names at most the live segments
//! and topics plus those deleted since its last write.

pub mod imports;
pub mod model;
pub mod properties;
pub mod segments;
pub mod service;
pub(crate) mod store;
pub mod topics;

pub use model::{Contact, ContactProperty, Segment, Subscription, Topic, TopicChoice, normalize};
pub use store::{AudienceStore, ContactStore, PostgresContacts, RocksContacts};

use herald_queue::Id;

use crate::services::{RecordName, Services};

/// Serialises changes to a team's audience: an address is looked up before it is taken,
/// a change of address takes one while freeing another, the team's count moves with
/// each creation, and segments and topics are checked to exist before contacts join
/// them (their deletion holds this lock too). One lock per team keeps that simple and
/// deadlock-free; each change holds it for a few reads and one commit (an import, for
/// one chunk).
pub fn lock(services: &Services, team_id: Id) -> crate::services::Held<'_> {
    services.lock_record(RecordName {
        table: "contacts",
        key: team_id.as_bytes(),
    })
}
