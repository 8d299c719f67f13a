//! `[cluster]`: where the records live when they are shared. Without `postgres`, every
//! record stays in the node's RocksDB, as on one machine.
//!
//! tokio-postgres parses a `postgres://` URL but neither the verifying `sslmode` values
//! (`verify-ca`, `verify-full`) nor `sslrootcert`. Both are taken out of the URL here and
//! kept beside it, for the storage layer to build the TLS verifier from; the rest of the
//! URL goes to the driver as written, and is checked by the driver's own parser now, so
//! that a typo fails the start with the key named rather than the first query.

use std::path::PathBuf;
use std::str::FromStr;

use super::raw::RawCluster;
use super::{ConfigError, REDACTED, Secret, Validator};

/// Connections to PostgreSQL a node keeps open at most, unless configured.
const POSTGRES_CONNECTIONS_DEFAULT: usize = 16;

/// The longest node id.
const NODE_ID_MAX: usize = 64;

/// `[cluster]`.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The database every record lives in; `None` keeps them in the node's RocksDB.
    pub postgres: Option<PostgresConfig>,
    /// This node's name among the others (`[server] hostname` unless configured).
    pub node_id: String,
}

/// `[cluster] postgres`, taken apart.
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// The URL as the driver reads it: `sslmode` reduced to what it knows, `sslrootcert`
    /// removed. Holds the password: never printed, never logged.
    pub driver_url: Secret,
    /// The URL as written, its password replaced by a marker: what may be shown.
    pub redacted: String,
    /// The `sslmode` asked for.
    pub ssl: DatabaseSsl,
    /// `sslrootcert`: the certificates trusted for the server's, instead of the web PKI's.
    pub root_cert: Option<PathBuf>,
    /// Connections kept open at most (`[cluster] postgres_connections_max`).
    pub connections_max: usize,
}

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseSsl {
    /// `disable`: no TLS.
    Disable,
    /// `prefer` (libpq's default) and `allow`: TLS when the server offers it, unverified.
    Prefer,
    /// `require`: TLS or no connection; verified as `verify-ca` when `sslrootcert` is set.
    Require,
    /// `verify-ca`: TLS, and a chain to a trusted root.
    VerifyCa,
    /// `verify-full`: TLS, a trusted chain, and the host's name in the certificate.
    VerifyFull,
}

impl DatabaseSsl {
    /// The value as written in a URL.
    pub fn name(self) -> &'static str {
        match self {
            DatabaseSsl::Disable => "disable",
            DatabaseSsl::Prefer => "prefer",
            DatabaseSsl::Require => "require",
            DatabaseSsl::VerifyCa => "verify-ca",
            DatabaseSsl::VerifyFull => "verify-full",
        }
    }

    /// The value tokio-postgres understands for this mode: it only decides whether TLS
    /// is tried or required; the verifier decides the rest.
    fn driver_name(self) -> &'static str {
        match self {
            DatabaseSsl::Disable => "disable",
            DatabaseSsl::Prefer => "prefer",
            DatabaseSsl::Require | DatabaseSsl::VerifyCa | DatabaseSsl::VerifyFull => "require",
        }
    }
}

impl super::Config {
    /// `url` read as `[cluster] postgres` would read it, with this config's connection
    /// limit: the database `herald store copy --to` names. An error names `--to`.
    pub fn with_postgres(&self, url: &str) -> Result<PostgresConfig, ConfigError> {
        let connections_max = self
            .cluster
            .postgres
            .as_ref()
            .map_or(POSTGRES_CONNECTIONS_DEFAULT, |postgres| postgres.connections_max);
        Validator { file: None }
            .postgres(url.trim(), connections_max)
            .map_err(|error| ConfigError {
                file: None,
                key: "--to".to_owned(),
                message: error.message,
            })
    }
}

impl Validator<'_> {
    /// `[cluster]`, with `hostname` (`[server] hostname`) as the default node id.
    pub(super) fn cluster(&self, raw: &RawCluster, hostname: &str) -> Result<ClusterConfig, ConfigError> {
        let node_id = match &raw.node_id {
            Some(id) => {
                let id = id.trim();
                let fine = !id.is_empty()
                    && id.len() <= NODE_ID_MAX
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
                if !fine {
                    return Err(self.error(
                        "cluster.node_id",
                        format!("must be 1 to {NODE_ID_MAX} letters, digits, '.', '-' or '_'"),
                    ));
                }
                id.to_owned()
            }
            None => hostname.to_owned(),
        };
        let connections_max = raw.postgres_connections_max.unwrap_or(POSTGRES_CONNECTIONS_DEFAULT);
        if connections_max == 0 {
            return Err(self.error("cluster.postgres_connections_max", "must be at least 1"));
        }
        let postgres = match raw.postgres.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(url) => Some(self.postgres(url, connections_max)?),
        };
        Ok(ClusterConfig { postgres, node_id })
    }

    fn postgres(&self, url: &str, connections_max: usize) -> Result<PostgresConfig, ConfigError> {
        const KEY: &str = "cluster.postgres";
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(self.error(
                KEY,
                "must be a postgres:// URL, like postgres://herald@db.example.com/herald",
            ));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut ssl = DatabaseSsl::Prefer;
        let mut root_cert = None;
        let mut kept = form_urlencoded::Serializer::new(String::new());
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "sslmode" => {
                    ssl = match &*value {
                        "disable" => DatabaseSsl::Disable,
                        "allow" | "prefer" => DatabaseSsl::Prefer,
                        "require" => DatabaseSsl::Require,
                        "verify-ca" => DatabaseSsl::VerifyCa,
                        "verify-full" => DatabaseSsl::VerifyFull,
                        other => {
                            return Err(self.error(
                                KEY,
                                format!(
                                    "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                                ),
                            ));
                        }
                    }
                }
                "sslrootcert" => root_cert = Some(self.path(PathBuf::from(&*value))),
                _ => {
                    kept.append_pair(&name, &value);
                }
            }
        }
        kept.append_pair("sslmode", ssl.driver_name());
        let driver_url = format!("{base}?{}", kept.finish());
        if let Err(error) = tokio_postgres::Config::from_str(&driver_url) {
            return Err(self.error(KEY, format!("is not a URL PostgreSQL's driver accepts: {error}")));
        }
        if let Some(path) = &root_cert
            && !path.is_file()
        {
            return Err(self.error(KEY, format!("sslrootcert {} is not a readable file", path.display())));
        }
        Ok(PostgresConfig {
            driver_url: Secret(driver_url),
            redacted: redact(url),
            ssl,
            root_cert,
            connections_max,
        })
    }
}

/// `url` with the password of its user part and of a `password` parameter replaced.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:{REDACTED}@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let path = match path.split_once('?') {
        Some((before, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("password", _)) => format!("password={REDACTED}"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{before}?{}", query.join("&"))
        }
        None => path.to_owned(),
    };
    format!("{scheme}://{authority}{path}")
}

/// The `[cluster]` table as `herald config` prints it, the password redacted.
pub(super) fn render(config: &ClusterConfig) -> RawCluster {
    RawCluster {
        postgres: config.postgres.as_ref().map(|postgres| postgres.redacted.clone()),
        node_id: Some(config.node_id.clone()),
        postgres_connections_max: Some(
            config
                .postgres
                .as_ref()
                .map_or(POSTGRES_CONNECTIONS_DEFAULT, |postgres| postgres.connections_max),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_password_is_redacted_wherever_it_is_written() {
        assert_eq!(
            redact("postgres://herald:s3cr%40t@db.example.com:5432/herald?sslmode=verify-full"),
            "postgres://herald:<redacted>@db.example.com:5432/herald?sslmode=verify-full"
        );
        assert_eq!(
            redact("postgres://herald@db/herald?password=hunter2&sslmode=require"),
            "postgres://herald@db/herald?password=<redacted>&sslmode=require"
        );
        assert_eq!(redact("postgres://db/herald"), "postgres://db/herald");
    }
}
