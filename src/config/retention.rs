//! `[retention]`: how long herald keeps what it records.

use std::time::Duration;

use super::raw::{RawApi, RawRetention};
use super::{ConfigError, Validator, values};

/// `[retention]`: how long each kind of record is kept. `None` keeps it for ever (written
/// `0` in the file). Suppressions are not here: they never expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Email records with their events and attempt logs, counted from the email's final
    /// outcome.
    pub emails: Option<Duration>,
    /// Message content (`html`, `text`), counted from the final outcome.
    pub content: Option<Duration>,
    /// Webhook messages and their attempts, counted from the message's final outcome.
    pub webhook_messages: Option<Duration>,
    /// API request logs, counted from the request.
    pub request_logs: Option<Duration>,
    /// The aggregated counters of the Metrics page, counted from their period.
    pub metrics: Option<Duration>,
    /// Finished contact imports with their refused rows, counted from when they
    /// finished.
    pub imports: Option<Duration>,
}

impl RetentionConfig {
    /// Every retention in force, for the sweep that must run often enough for the
    /// shortest.
    pub fn periods(&self) -> impl Iterator<Item = Duration> {
        [
            self.emails,
            self.content,
            self.webhook_messages,
            self.request_logs,
            self.metrics,
            self.imports,
        ]
        .into_iter()
        .flatten()
    }
}

impl Validator<'_> {
    /// `[retention]`, reading `[api] log_retention` (the old name of `request_logs`) when
    /// the new key is absent, with a warning in `warnings`.
    pub(super) fn retention(
        &self,
        raw: &RawRetention,
        api: &RawApi,
        warnings: &mut Vec<String>,
    ) -> Result<RetentionConfig, ConfigError> {
        let request_logs = match (&raw.request_logs, &api.log_retention) {
            (Some(_), Some(_)) => {
                warnings.push(
                    "`api.log_retention` is ignored: `retention.request_logs` is set (remove the old key)".to_owned(),
                );
                self.period("retention.request_logs", raw.request_logs.as_deref(), "7d")?
            }
            (None, Some(old)) => {
                warnings
                    .push("`api.log_retention` is deprecated: write it as `request_logs` in `[retention]`".to_owned());
                self.period("api.log_retention", Some(old), "7d")?
            }
            _ => self.period("retention.request_logs", raw.request_logs.as_deref(), "7d")?,
        };
        Ok(RetentionConfig {
            emails: self.period("retention.emails", raw.emails.as_deref(), "30d")?,
            content: self.period("retention.content", raw.content.as_deref(), "7d")?,
            webhook_messages: self.period("retention.webhook_messages", raw.webhook_messages.as_deref(), "30d")?,
            request_logs,
            metrics: self.period("retention.metrics", raw.metrics.as_deref(), "400d")?,
            imports: self.period("retention.imports", raw.imports.as_deref(), "30d")?,
        })
    }

    /// A retention period: a duration, or `0` for ever.
    fn period(&self, key: &str, text: Option<&str>, default: &str) -> Result<Option<Duration>, ConfigError> {
        let text = text.unwrap_or(default);
        if text.trim() == "0" {
            return Ok(None);
        }
        self.check(
            key,
            values::duration(text).map_err(|e| format!("{e}, or 0 to keep for ever")),
        )
        .map(Some)
    }
}

/// The `[retention]` table as `herald config` prints it.
pub(super) fn render(config: &RetentionConfig) -> RawRetention {
    let show = |period: Option<Duration>| {
        Some(period.map_or_else(|| "0".to_owned(), |d| humantime::format_duration(d).to_string()))
    };
    RawRetention {
        emails: show(config.emails),
        content: show(config.content),
        webhook_messages: show(config.webhook_messages),
        request_logs: show(config.request_logs),
        metrics: show(config.metrics),
        imports: show(config.imports),
    }
}
