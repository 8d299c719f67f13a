//! The Emails page's list: a team's emails newest first, filtered by status (through the
//! email store's index by status), a date range (ids are time-ordered, so the range is where the
//! read starts and stops), sending domain, API key, tag and a search over recipients and
//! subject. Rows are the status records (no bodies). A filtered page reads at most
//! [`SCANNED_MAX`] emails; when it stops there it says where to go on.

use herald_queue::{Id, Timestamp};

use super::EmailState;
use super::record::EmailStatus;
use crate::accounts::Caller;
use crate::services::{Error, Services};

/// Emails read at most for one page.
pub const SCANNED_MAX: usize = 5_000;

/// Emails read per step.
const STEP: usize = 200;

/// What to show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only emails whose last event is this.
    pub status: Option<EmailState>,
    /// Only emails accepted at or after this.
    pub since: Option<Timestamp>,
    /// Only emails accepted before this.
    pub until: Option<Timestamp>,
    /// Only emails from this domain or its subdomains (lower case).
    pub domain: Option<String>,
    /// Only emails sent with this API key.
    pub api_key_id: Option<Id>,
    /// Only emails with this tag name (and value, when given).
    pub tag: Option<(String, Option<String>)>,
    /// Only emails whose recipients or subject contain this (lower case).
    pub search: String,
}

/// One page.
#[derive(Debug, Default)]
pub struct Page {
    /// The emails, newest first.
    pub rows: Vec<EmailStatus>,
    /// Where the next page starts (older than this id), when there may be more.
    pub next: Option<Id>,
}

/// The first 6 bytes of the ids of `at` (UUIDv7's milliseconds): a bound in key order.
fn time_bound(at: Timestamp) -> Vec<u8> {
    at.as_millis().to_be_bytes()[2..].to_vec()
}

impl Filter {
    fn matches(&self, services: &Services, status: &EmailStatus) -> Result<bool, Error> {
        if let Some(domain) = &self.domain {
            let from = crate::counters::domain_of(&status.from);
            if from != *domain && !from.ends_with(&format!(".{domain}")) {
                return Ok(false);
            }
        }
        if let Some((name, value)) = &self.tag {
            let found = status
                .tags
                .iter()
                .any(|t| t.name == *name && value.as_ref().is_none_or(|v| t.value == *v));
            if !found {
                return Ok(false);
            }
        }
        if !self.search.is_empty()
            && !status.subject.to_lowercase().contains(&self.search)
            && !status.to.iter().any(|to| to.to_lowercase().contains(&self.search))
        {
            return Ok(false);
        }
        if let Some(key) = self.api_key_id {
            let sent_with = match status.api_key_id {
                Some(id) => Some(id),
                // Stored before statuses kept the key: the record has it.
                None => services
                    .emails()
                    .get(status.team_id, status.id)?
                    .and_then(|r| r.api_key_id),
            };
            if sent_with != Some(key) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Up to `limit` of the caller's emails that match `filter`, older than `before`.
pub fn page(
    services: &Services,
    caller: &Caller,
    filter: &Filter,
    before: Option<Id>,
    limit: usize,
) -> Result<Page, Error> {
    caller.require_full_access()?;
    let emails = services.emails();
    let team = caller.team_id;
    // Where reading starts: after the cursor, or before the range's end.
    let mut bound: Option<Vec<u8>> = match (before, filter.until) {
        (Some(id), _) => Some(id.as_bytes().to_vec()),
        (None, Some(until)) => Some(time_bound(until)),
        (None, None) => None,
    };
    let mut page = Page::default();
    let mut scanned = 0;
    loop {
        // Each email read, or only its id when an index entry finds it moved on or gone.
        let statuses: Vec<(Id, Option<EmailStatus>)> = match filter.status {
            Some(state) => {
                let ids = emails.ids_in_state(team, state, bound.as_deref(), STEP)?;
                let mut found = Vec::with_capacity(ids.len());
                for id in ids {
                    let status = emails.status(team, id)?.filter(|s| s.last_event == state);
                    found.push((id, status));
                }
                found
            }
            None => emails
                .statuses(team, bound.as_deref(), STEP)?
                .into_iter()
                .map(|status| (status.id, Some(status)))
                .collect(),
        };
        let exhausted = statuses.len() < STEP;
        for (id, status) in statuses {
            scanned += 1;
            bound = Some(id.as_bytes().to_vec());
            if let (Some(since), Some(at)) = (filter.since, id.timestamp())
                && at < since
            {
                return Ok(page);
            }
            let Some(status) = status else { continue };
            if filter.matches(services, &status)? {
                page.rows.push(status);
                if page.rows.len() == limit {
                    page.next = page.rows.last().map(|s| s.id);
                    return Ok(page);
                }
            }
            if scanned >= SCANNED_MAX {
                page.next = Some(id);
                return Ok(page);
            }
        }
        if exhausted {
            return Ok(page);
        }
    }
}
