//! `[contacts]`: the limits on what a team keeps of its audience, each a named value a
//! refusal quotes, so an operator who meets one knows which key raises it.

use super::raw::RawContacts;
use super::{ConfigError, Validator, values};

/// `[contacts]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContactsConfig {
    /// Contacts per team. Lists and segment pages never read a team's contacts whole, so
    /// this bounds disk, not memory; a million-contact team is the scale herald is built for.
    pub contacts_max: u64,
    /// Segments (and legacy audiences) per team. A contact's record names its segments,
    /// so this bounds every contact's size.
    pub segments_max: u64,
    /// Topics per team. A contact's record keeps its topic choices, so this bounds it too.
    pub topics_max: u64,
    /// Contact properties per team: every contact write checks its properties against
    /// all of them.
    pub properties_max: u64,
    /// Longest property value, in bytes (a string's UTF-8, a number's decimal text).
    pub property_value_max: u64,
    /// Largest import upload, in bytes. Uploads stream to the data directory; this bounds
    /// the disk one request can take.
    pub import_size_max: u64,
    /// Refused rows an import keeps the line and reason of; all are counted. Bounds what
    /// a file of nothing but bad rows leaves in the store.
    pub import_errors_max: u64,
    /// Uploads received at once; each holds a connection and writes to disk.
    pub uploads_max: u64,
}

impl Default for ContactsConfig {
    fn default() -> Self {
        ContactsConfig {
            contacts_max: 10_000_000,
            segments_max: 1_000,
            topics_max: 1_000,
            properties_max: 100,
            property_value_max: 2_048,
            import_size_max: 512 * 1024 * 1024,
            import_errors_max: 10_000,
            uploads_max: 4,
        }
    }
}

impl Validator<'_> {
    /// `[contacts]`.
    pub(super) fn contacts(&self, raw: &RawContacts) -> Result<ContactsConfig, ConfigError> {
        let defaults = ContactsConfig::default();
        let count = |key: &str, value: Option<u64>, default: u64| -> Result<u64, ConfigError> {
            match value {
                Some(0) => Err(self.error(key, "must be at least 1")),
                Some(n) => Ok(n),
                None => Ok(default),
            }
        };
        let size = |key: &str, value: Option<&str>, default: u64| -> Result<u64, ConfigError> {
            match value {
                None => Ok(default),
                Some(text) => match self.check(key, values::byte_size(text))? {
                    0 => Err(self.error(key, "must be more than 0 bytes")),
                    n => Ok(n),
                },
            }
        };
        Ok(ContactsConfig {
            contacts_max: count("contacts.contacts_max", raw.contacts_max, defaults.contacts_max)?,
            segments_max: count("contacts.segments_max", raw.segments_max, defaults.segments_max)?,
            topics_max: count("contacts.topics_max", raw.topics_max, defaults.topics_max)?,
            properties_max: count("contacts.properties_max", raw.properties_max, defaults.properties_max)?,
            property_value_max: size(
                "contacts.property_value_max",
                raw.property_value_max.as_deref(),
                defaults.property_value_max,
            )?,
            import_size_max: size(
                "contacts.import_size_max",
                raw.import_size_max.as_deref(),
                defaults.import_size_max,
            )?,
            import_errors_max: count(
                "contacts.import_errors_max",
                raw.import_errors_max,
                defaults.import_errors_max,
            )?,
            uploads_max: count("contacts.uploads_max", raw.uploads_max, defaults.uploads_max)?,
        })
    }
}

/// The `[contacts]` table as `herald config` prints it.
pub(super) fn render(config: &ContactsConfig) -> RawContacts {
    RawContacts {
        contacts_max: Some(config.contacts_max),
        segments_max: Some(config.segments_max),
        topics_max: Some(config.topics_max),
        properties_max: Some(config.properties_max),
        property_value_max: Some(config.property_value_max.to_string()),
        import_size_max: Some(config.import_size_max.to_string()),
        import_errors_max: Some(config.import_errors_max),
        uploads_max: Some(config.uploads_max),
    }
}
