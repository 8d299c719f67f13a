//! `[dashboard]`: sign-in by Google (`[dashboard.google]`, OpenID Connect) and by GitHub
//! (`[dashboard.github]`, OAuth 2), each on when its section is present.

use super::raw::{RawDashboard, RawGithub, RawGoogle};
use super::{ConfigError, REDACTED, Validator};

/// `[dashboard]`.
#[derive(Debug, Clone, Default)]
pub struct DashboardConfig {
    /// Google sign-in, when configured.
    pub google: Option<GoogleConfig>,
    /// GitHub sign-in, when configured.
    pub github: Option<GithubConfig>,
}

/// `[dashboard.google]`: any OpenID Connect provider, Google by default.
#[derive(Clone)]
pub struct GoogleConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The OAuth client secret (never logged or printed).
    pub client_secret: String,
    /// The issuer; discovery is at `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
}

/// `[dashboard.github]`: GitHub's OAuth 2 (or a GitHub Enterprise host).
#[derive(Clone)]
pub struct GithubConfig {
    /// The OAuth client id.
    pub client_id: String,
    /// The OAuth client secret (never logged or printed).
    pub client_secret: String,
    /// Where the browser is sent to approve.
    pub authorize_url: String,
    /// Where the code is exchanged for a token.
    pub token_url: String,
    /// The REST API base (`/user/emails` is read from it).
    pub api_url: String,
}

impl std::fmt::Debug for GoogleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleConfig")
            .field("client_id", &self.client_id)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for GithubConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubConfig")
            .field("client_id", &self.client_id)
            .field("authorize_url", &self.authorize_url)
            .finish_non_exhaustive()
    }
}

impl Validator<'_> {
    /// `[dashboard]`.
    pub(super) fn dashboard(&self, raw: &RawDashboard) -> Result<DashboardConfig, ConfigError> {
        let google = raw
            .google
            .as_ref()
            .map(|g| {
                Ok(GoogleConfig {
                    client_id: self.required("dashboard.google.client_id", g.client_id.as_deref())?,
                    client_secret: self.required("dashboard.google.client_secret", g.client_secret.as_deref())?,
                    issuer: self.endpoint(
                        "dashboard.google.issuer",
                        g.issuer.as_deref().unwrap_or("https://accounts.google.com"),
                    )?,
                })
            })
            .transpose()?;
        let github = raw
            .github
            .as_ref()
            .map(|g| {
                Ok(GithubConfig {
                    client_id: self.required("dashboard.github.client_id", g.client_id.as_deref())?,
                    client_secret: self.required("dashboard.github.client_secret", g.client_secret.as_deref())?,
                    authorize_url: self.endpoint(
                        "dashboard.github.authorize_url",
                        g.authorize_url
                            .as_deref()
                            .unwrap_or("https://github.com/login/oauth/authorize"),
                    )?,
                    token_url: self.endpoint(
                        "dashboard.github.token_url",
                        g.token_url
                            .as_deref()
                            .unwrap_or("https://github.com/login/oauth/access_token"),
                    )?,
                    api_url: self.endpoint(
                        "dashboard.github.api_url",
                        g.api_url.as_deref().unwrap_or("https://api.github.com"),
                    )?,
                })
            })
            .transpose()?;
        Ok(DashboardConfig { google, github })
    }

    fn required(&self, key: &str, value: Option<&str>) -> Result<String, ConfigError> {
        match value.map(str::trim) {
            Some(value) if !value.is_empty() => Ok(value.to_owned()),
            _ => Err(self.error(key, "is required when its section is present")),
        }
    }

    /// An identity provider's URL: https, or http to a loopback host (a provider on the
    /// same machine, as in tests), without a trailing slash.
    fn endpoint(&self, key: &str, value: &str) -> Result<String, ConfigError> {
        let value = value.trim().trim_end_matches('/');
        let Ok(uri) = value.parse::<hyper::Uri>() else {
            return Err(self.error(key, format!("{value:?} is not a URL")));
        };
        let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
        let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        match uri.scheme_str() {
            Some("https") if !host.is_empty() => Ok(value.to_owned()),
            Some("http") if loopback => Ok(value.to_owned()),
            _ => Err(self.error(
                key,
                format!("{value:?} must be an https:// URL (http:// only to a loopback host)"),
            )),
        }
    }
}

/// The `[dashboard]` table as `herald config` prints it, secrets redacted.
pub(super) fn render(config: &DashboardConfig) -> RawDashboard {
    RawDashboard {
        google: config.google.as_ref().map(|g| RawGoogle {
            client_id: Some(g.client_id.clone()),
            client_secret: Some(REDACTED.to_owned()),
            issuer: Some(g.issuer.clone()),
        }),
        github: config.github.as_ref().map(|g| RawGithub {
            client_id: Some(g.client_id.clone()),
            client_secret: Some(REDACTED.to_owned()),
            authorize_url: Some(g.authorize_url.clone()),
            token_url: Some(g.token_url.clone()),
            api_url: Some(g.api_url.clone()),
        }),
    }
}
