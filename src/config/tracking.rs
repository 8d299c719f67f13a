//! `[tracking]`: open and click tracking's public side.

use super::raw::RawTracking;
use super::{ConfigError, Validator, values};

/// How tracking URLs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackingScheme {
    /// `https://` (the default: a TLS-terminating proxy or herald's TLS serves them).
    Https,
    /// `http://`, for local trials.
    Http,
}

impl TrackingScheme {
    /// The scheme's name.
    pub fn name(self) -> &'static str {
        match self {
            TrackingScheme::Https => "https",
            TrackingScheme::Http => "http",
        }
    }
}

/// `[tracking]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackingConfig {
    /// The host a domain's tracking CNAME points at (default: `[server] hostname`).
    pub cname_target: String,
    /// The scheme of tracking URLs.
    pub scheme: TrackingScheme,
}

impl Validator<'_> {
    /// `[tracking]`, with `hostname` (`[server] hostname`) as the default target.
    pub(super) fn tracking(&self, raw: &RawTracking, hostname: &str) -> Result<TrackingConfig, ConfigError> {
        let cname_target = match &raw.cname_target {
            Some(target) => {
                let target = target.trim().trim_end_matches('.').to_ascii_lowercase();
                if !values::is_hostname(&target) {
                    return Err(self.error("tracking.cname_target", "must be a host name, like mail.example.com"));
                }
                target
            }
            None => hostname.to_owned(),
        };
        let scheme = match raw.scheme.as_deref().map(str::trim) {
            None | Some("https") => TrackingScheme::Https,
            Some("http") => TrackingScheme::Http,
            Some(other) => {
                return Err(self.error(
                    "tracking.scheme",
                    format!("must be \"https\" or \"http\", got {other:?}"),
                ));
            }
        };
        Ok(TrackingConfig { cname_target, scheme })
    }
}

/// The `[tracking]` table as `herald config` prints it.
pub(super) fn render(config: &TrackingConfig) -> RawTracking {
    RawTracking {
        cname_target: Some(config.cname_target.clone()),
        scheme: Some(config.scheme.name().to_owned()),
    }
}
