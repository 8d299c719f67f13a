//! `[[plans]]`: the sending allowances teams are put on. None by default: a team without
//! a plan is unlimited, so a self-hosted install is never capped by surprise.

use super::raw::RawPlan;
use super::values::{self, Rate};
use super::{ConfigError, Validator};

/// Longest plan name.
const NAME_MAX: usize = 64;

/// One plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Its name, as teams name it (`POST /teams` with `plan`).
    pub name: String,
    /// Emails (recipients, as Resend counts) a team may send per UTC calendar month.
    pub monthly_emails: u64,
    /// Emails per UTC day, when the plan caps days too.
    pub daily_emails: Option<u64>,
    /// The API rate limit of its teams, instead of `[api] rate_limit` (a team's own
    /// `rate_limit` still comes first).
    pub rate_limit: Option<Rate>,
}

impl Validator<'_> {
    /// Validates `[[plans]]`: names present, unique and plain; allowances at least 1.
    pub(super) fn plans(&self, raw: &[RawPlan]) -> Result<Vec<Plan>, ConfigError> {
        let mut plans: Vec<Plan> = Vec::with_capacity(raw.len());
        for (i, entry) in raw.iter().enumerate() {
            let key = |field: &str| format!("plans[{i}].{field}");
            let name = entry.name.clone().unwrap_or_default();
            if name.is_empty() || name.len() > NAME_MAX {
                return Err(self.error(
                    key("name"),
                    format!("a plan needs a name of 1 to {NAME_MAX} characters"),
                ));
            }
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(self.error(key("name"), "letters, digits, `-` and `_` only"));
            }
            if plans.iter().any(|plan| plan.name == name) {
                return Err(self.error(key("name"), format!("another plan is named `{name}`")));
            }
            let monthly_emails = match entry.monthly_emails {
                Some(n) if n > 0 => n,
                Some(_) => return Err(self.error(key("monthly_emails"), "must be at least 1")),
                None => return Err(self.error(key("monthly_emails"), "a plan needs its monthly allowance")),
            };
            let daily_emails = match entry.daily_emails {
                Some(0) => return Err(self.error(key("daily_emails"), "must be at least 1")),
                other => other,
            };
            let rate_limit = entry
                .rate_limit
                .as_deref()
                .map(|text| self.check(&key("rate_limit"), values::rate(text)))
                .transpose()?;
            plans.push(Plan {
                name,
                monthly_emails,
                daily_emails,
                rate_limit,
            });
        }
        Ok(plans)
    }
}
