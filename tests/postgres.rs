//! PostgreSQL as herald connects to it, on private servers (`util/postgres.rs`): the
//! schema migrated once when nodes start together, a database newer than the build
//! refused with both versions named (at start and by `herald db status`), TLS verified as
//! `sslmode=verify-full`, `verify-ca` and `require` ask (a certificate for another name
//! refused), and the password kept out of everything herald prints.

#[path = "util/postgres.rs"]
mod postgres;

use std::path::Path;
use std::process::Command;

use herald::config::{Config, PostgresConfig};
use herald::storage::postgres::{Postgres, schema};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// The config of a node whose records are at `url`.
fn cluster_config(url: &str) -> PostgresConfig {
    Config::from_toml(&format!("[cluster]\npostgres = \"{url}\"\n"), None)
        .expect("config")
        .cluster
        .postgres
        .expect("[cluster] postgres")
}

#[test]
fn nodes_starting_together_migrate_once() {
    let url = postgres::database();
    let nodes: Vec<_> = (0..4)
        .map(|_| {
            let config = cluster_config(&url);
            std::thread::spawn(move || Postgres::connect(&config).and_then(|db| db.migrate()))
        })
        .collect();
    for node in nodes {
        let status = node.join().expect("a node's thread").expect("migrate");
        assert_eq!(status.database, schema::latest());
        assert!(status.pending.is_empty());
    }
    let db = Postgres::connect(&cluster_config(&url)).expect("connect");
    let applied: i64 = db
        .run(async |client| {
            Ok(client
                .query_one("SELECT count(*) FROM herald_schema", &[])
                .await
                .expect("count")
                .get(0))
        })
        .expect("read the migrations");
    assert_eq!(applied, i64::from(schema::latest()), "each migration applied once");
    let again = db.migrate().expect("migrate again");
    assert_eq!(again.database, schema::latest(), "a second start changes nothing");
}

/// A database migrated by a build one migration ahead of this one.
fn newer_database() -> (String, i32) {
    let url = postgres::database();
    let db = Postgres::connect(&cluster_config(&url)).expect("connect");
    db.migrate().expect("migrate");
    let newer = db
        .run(async |client| schema::stamp_newer(client).await)
        .expect("stamp a newer version");
    (url, newer)
}

#[test]
fn a_database_newer_than_the_build_is_refused_naming_both_versions() {
    let (url, newer) = newer_database();
    let db = Postgres::connect(&cluster_config(&url)).expect("connect");
    let error = db.migrate().expect_err("a newer schema is refused").to_string();
    let ours = schema::latest();
    assert!(
        error.contains(&format!("version {newer}")) && error.contains(&format!("this build's {ours}")),
        "{error}"
    );
    let status = db.status().expect("status");
    assert_eq!((status.database, status.binary), (newer, ours));
    assert!(status.is_newer());
}

/// Runs the herald binary with `args` on a config file holding `config`.
fn herald(dir: &Path, config: &str, args: &[&str]) -> std::process::Output {
    let file = dir.join("herald.toml");
    std::fs::write(&file, config).expect("write the config");
    Command::new(env!("CARGO_BIN_EXE_herald"))
        .args(args)
        .arg("--config")
        .arg(&file)
        .output()
        .expect("run herald")
}

#[test]
fn herald_db_status_and_serve_name_both_versions_of_a_newer_database() {
    let (url, newer) = newer_database();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "[server]\ndata_dir = \"{}\"\n[http]\nlisten = \"127.0.0.1:0\"\n[cluster]\npostgres = \"{url}\"\n",
        dir.path().join("data").display()
    );
    let status = herald(dir.path(), &config, &["db", "status"]);
    let printed = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        printed.contains(&format!("schema in the database: {newer}")),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("schema of this build:   {}", schema::latest())),
        "{printed}"
    );
    assert!(printed.contains("newer than this build"), "{printed}");

    let serve = herald(dir.path(), &config, &["serve"]);
    let said = String::from_utf8_lossy(&serve.stderr);
    assert_eq!(serve.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("version {newer}")) && said.contains(&format!("this build's {}", schema::latest())),
        "{said}"
    );
    assert!(
        !dir.path().join("data/spool").exists(),
        "nothing of the node is made before the database agrees"
    );
}

#[test]
fn herald_db_status_counts_pending_migrations_of_an_empty_database() {
    let url = postgres::database();
    let dir = tempfile::tempdir().expect("tempdir");
    let status = herald(
        dir.path(),
        &format!("[cluster]\npostgres = \"{url}\"\n"),
        &["db", "status"],
    );
    let printed = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{printed}");
    assert!(printed.contains("schema in the database: 0"), "{printed}");
    assert!(
        printed.contains("pending: 1 accounts and webhooks")
            && printed.contains("pending: 2 users, templates and images"),
        "{printed}"
    );
}

#[test]
fn the_password_is_never_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "postgres://herald:correct-horse@127.0.0.1:1/herald?sslmode=disable&connect_timeout=1";
    let config = format!("[cluster]\npostgres = \"{url}\"\n");
    let printed = herald(dir.path(), &config, &["config"]);
    let text = String::from_utf8_lossy(&printed.stdout);
    assert!(printed.status.success());
    assert!(
        text.contains(
            "postgres = \"postgres://herald:<redacted>@127.0.0.1:1/herald?sslmode=disable&connect_timeout=1\""
        ),
        "{text}"
    );
    let status = herald(dir.path(), &config, &["db", "status"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(status.status.code(), Some(1), "nothing listens on port 1: {said}");
    assert!(said.contains("herald:<redacted>@127.0.0.1:1"), "{said}");
    assert!(!said.contains("correct-horse"), "{said}");
}

#[test]
fn a_bad_sslmode_names_the_key() {
    let error = Config::from_toml("[cluster]\npostgres = \"postgres://db/herald?sslmode=verify\"\n", None)
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("cluster.postgres") && error.contains("verify-full"),
        "{error}"
    );
    let error = Config::from_toml("[cluster]\npostgres = \"mysql://db/herald\"\n", None)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("cluster.postgres"), "{error}");
}

/// A CA, and a server certificate for `db.herald.test` it signed: PEM of the CA, of the
/// server's certificate and of its key.
fn certificates() -> (String, String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key")).expect("CA");
    let key = KeyPair::generate().expect("server key");
    let server = CertificateParams::new(vec!["db.herald.test".to_owned()])
        .expect("server params")
        .signed_by(&key, &ca)
        .expect("server certificate");
    (ca.pem(), server.pem(), key.serialize_pem())
}

#[test]
fn tls_is_verified_as_sslmode_asks() {
    use std::os::unix::fs::PermissionsExt;
    let (ca, cert, key) = certificates();
    let server = postgres::Server::start(
        &["ssl=on", "ssl_cert_file=server.crt", "ssl_key_file=server.key"],
        |data| {
            std::fs::write(data.join("server.crt"), &cert).expect("write the certificate");
            std::fs::write(data.join("server.key"), &key).expect("write the key");
            std::fs::set_permissions(data.join("server.key"), std::fs::Permissions::from_mode(0o600))
                .expect("chmod the key");
        },
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca).expect("write the CA");
    let (other_ca, _, _) = certificates();
    let other_ca_file = dir.path().join("other-ca.pem");
    std::fs::write(&other_ca_file, &other_ca).expect("write the other CA");
    let port = server.port;
    let url = |host: &str, mode: &str, root: &Path| {
        format!(
            "postgres://{}@{host}:{port}/postgres?hostaddr=127.0.0.1&connect_timeout=5&sslmode={mode}&sslrootcert={}",
            postgres::USER,
            root.display()
        )
    };
    let encrypted = |db: &Postgres| -> bool {
        db.run(async |client| {
            Ok(client
                .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
                .await
                .expect("pg_stat_ssl")
                .get(0))
        })
        .expect("query")
    };

    let full = Postgres::connect(&cluster_config(&url("db.herald.test", "verify-full", &ca_file)))
        .expect("verify-full with the server's name and its CA");
    assert!(encrypted(&full));

    let error = Postgres::connect(&cluster_config(&url("127.0.0.1", "verify-full", &ca_file)))
        .expect_err("a certificate for another name is refused")
        .to_string();
    assert!(error.to_lowercase().contains("certificate"), "{error}");

    let error = Postgres::connect(&cluster_config(&url("db.herald.test", "verify-full", &other_ca_file)))
        .expect_err("a certificate from another CA is refused")
        .to_string();
    assert!(error.to_lowercase().contains("certificate"), "{error}");

    let chain = Postgres::connect(&cluster_config(&url("127.0.0.1", "verify-ca", &ca_file)))
        .expect("verify-ca checks the chain, not the name");
    assert!(encrypted(&chain));
    Postgres::connect(&cluster_config(&url("127.0.0.1", "verify-ca", &other_ca_file)))
        .expect_err("verify-ca still refuses another CA");

    let require = format!(
        "postgres://{}@127.0.0.1:{port}/postgres?connect_timeout=5&sslmode=require",
        postgres::USER
    );
    let encrypt_only = Postgres::connect(&cluster_config(&require)).expect("require encrypts without verifying");
    assert!(encrypted(&encrypt_only));
}
