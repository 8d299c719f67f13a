//! Connections: the driver's configuration from `[cluster] postgres`, TLS as its
//! `sslmode` asks (the verifier built here, since the driver knows no verifying mode),
//! and the pool.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use herald_tls::{DatabaseVerification, database_client_config};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::config::{DatabaseSsl, PostgresConfig};
use crate::storage::Error;

/// How long making a connection may take, unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a caller waits for a free connection or a new one before the store answers
/// that the database is unavailable.
const WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server's certificate must prove, for `ssl` and whether a root certificate
/// is given: libpq's reading of `sslmode`, where `require` with `sslrootcert` verifies
/// the chain.
pub fn verification(ssl: DatabaseSsl, root_cert: bool) -> DatabaseVerification {
    match ssl {
        DatabaseSsl::Disable | DatabaseSsl::Prefer => DatabaseVerification::Encrypt,
        DatabaseSsl::Require if root_cert => DatabaseVerification::Chain,
        DatabaseSsl::Require => DatabaseVerification::Encrypt,
        DatabaseSsl::VerifyCa => DatabaseVerification::Chain,
        DatabaseSsl::VerifyFull => DatabaseVerification::Full,
    }
}

/// The pool for `config`. Must be called inside the runtime its connections will run on.
pub(super) fn pool(config: &PostgresConfig) -> Result<Pool, Error> {
    let mut driver = tokio_postgres::Config::from_str(config.driver_url.expose())
        .map_err(|error| Error::Failed(format!("cluster.postgres: {error}")))?;
    if driver.get_connect_timeout().is_none() {
        driver.connect_timeout(CONNECT_TIMEOUT);
    }
    if driver.get_application_name().is_none() {
        driver.application_name("herald");
    }
    driver.keepalives(true);
    let mode = verification(config.ssl, config.root_cert.is_some());
    let tls = database_client_config(mode, config.root_cert.as_deref())
        .map_err(|error| Error::Failed(format!("cluster.postgres: {error}")))?;
    let tls = MakeRustlsConnect::new(Arc::unwrap_or_clone(tls));
    let manager = Manager::from_config(
        driver,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(config.connections_max)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(WAIT_TIMEOUT))
        .create_timeout(Some(WAIT_TIMEOUT))
        .recycle_timeout(Some(WAIT_TIMEOUT))
        .build()
        .map_err(|error| Error::Failed(format!("cannot build the database's pool: {error}")))
}
