//! A private PostgreSQL server for the tests: Debian's `postgresql` (installed by
//! `scripts/deps --test`; its programs live in `/usr/lib/postgresql/<version>/bin`), a
//! cluster made by `initdb` in a temporary directory, listening on a loopback port of its
//! own, run as `nobody` when the tests run as root (PostgreSQL refuses to run as root).
//! Never a server the machine happens to run.
//!
//! One server serves a test binary, started on first use; each test takes a database of
//! its own on it ([`database`]). The server is started under a shell that waits for its
//! standard input to close, which happens when the test process exits however it exits
//! (a panic, `kill -9`): the shell then stops the server and removes its directory.
//!
//! A suite includes this file alone (`#[path = "util/postgres.rs"] mod postgres;`).

#![allow(dead_code)]

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The role every test connects as (a superuser of the private cluster).
pub const USER: &str = "herald";

/// A private server.
pub struct Server {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its directory: the cluster's files, its socket and its log.
    pub dir: PathBuf,
    _child: Child,
    /// Kept open for the life of the process: closing it stops the server.
    _stdin: Mutex<ChildStdin>,
}

static SERVER: OnceLock<Server> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The binary's private server, plain TCP on loopback.
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| Server::start(&[], |_| {}))
}

/// A URL for a new, empty database of its own on the binary's private server.
pub fn database() -> String {
    server().new_database()
}

/// The directory of the newest PostgreSQL's programs.
pub fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed: run scripts/deps --test")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("no /usr/lib/postgresql/<version>/bin/initdb: run scripts/deps --test")
        .1
}

/// The user and group the server runs as: `nobody` when the tests run as root.
fn server_user() -> Option<(u32, u32)> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let ids = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"nobody"))
            .then(|| Some((fields.get(2)?.parse().ok()?, fields.get(3)?.parse().ok()?)))?
    });
    Some(ids.unwrap_or((65534, 65534)))
}

/// A free port on loopback.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Runs `command` as the server's user, in `dir`.
fn as_server_user(command: &mut Command, dir: &Path) {
    use std::os::unix::process::CommandExt;
    command.current_dir(dir);
    if let Some((uid, gid)) = server_user() {
        command.uid(uid).gid(gid);
    }
}

impl Server {
    /// Makes a cluster and starts a server on it with `settings` (`-c name=value` each),
    /// after `prepare` has written what they need into the cluster's directory (given).
    pub fn start(settings: &[&str], prepare: impl FnOnce(&Path)) -> Server {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("herald-postgres-")
            .tempdir()
            .expect("tempdir")
            .keep();
        let data = dir.join("data");
        if let Some((uid, gid)) = server_user() {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the server's directory");
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args(["-D"])
            .arg(&data)
            .args([
                "-U",
                USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_server_user(&mut initdb, &dir);
        let made = initdb.output().expect("run initdb");
        assert!(
            made.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        prepare(&data);
        if let Some((uid, gid)) = server_user() {
            for entry in std::fs::read_dir(&data).expect("read the cluster").flatten() {
                let _ = std::os::unix::fs::chown(entry.path(), Some(uid), Some(gid));
            }
        }
        let port = free_port();
        let mut arguments = vec![
            "-c".to_owned(),
            "fsync=off".to_owned(),
            "-c".to_owned(),
            "full_page_writes=off".to_owned(),
            "-c".to_owned(),
            "max_connections=300".to_owned(),
        ];
        for setting in settings {
            arguments.push("-c".to_owned());
            arguments.push((*setting).to_owned());
        }
        // The shell starts the server, waits for its standard input to close (the test
        // process is gone), then stops the server fast and removes its directory.
        let script = r#"bin="$1"; dir="$2"; port="$3"; shift 3
"$bin/postgres" -D "$dir/data" -k "$dir" -h 127.0.0.1 -p "$port" "$@" >"$dir/log" 2>&1 &
server=$!
while read -r _; do :; done
kill -INT "$server" 2>/dev/null
wait "$server"
rm -rf "$dir""#;
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(script)
            .arg("herald-postgres")
            .arg(&bin)
            .arg(&dir)
            .arg(port.to_string())
            .args(&arguments)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        as_server_user(&mut shell, &dir);
        let mut child = shell.spawn().expect("start PostgreSQL");
        let stdin = child.stdin.take().expect("the shell's stdin");
        let server = Server {
            port,
            dir,
            _child: child,
            _stdin: Mutex::new(stdin),
        };
        server.wait_ready();
        server
    }

    /// The URL of `database` on this server, plain TCP unless `query` says otherwise.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{database}?sslmode=disable", self.port)
    }

    /// Makes a new, empty database and answers its URL.
    pub fn new_database(&self) -> String {
        let name = format!(
            "test_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::SeqCst)
        );
        self.execute("postgres", &format!("CREATE DATABASE {name}"));
        self.url(&name)
    }

    /// Runs `sql` on `database`, on a thread and runtime of its own (the caller may be
    /// inside a runtime).
    pub fn execute(&self, database: &str, sql: &str) {
        let url = self.url(database);
        let sql = sql.to_owned();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .expect("connect to the private server");
                let driving = tokio::spawn(connection);
                client.batch_execute(&sql).await.expect("run SQL");
                drop(client);
                let _ = driving.await;
            });
        })
        .join()
        .expect("the SQL thread");
    }

    /// Waits until the server accepts a connection, showing its log if it never does.
    fn wait_ready(&self) {
        let end = Instant::now() + START_TIMEOUT;
        let url = self.url("postgres");
        loop {
            let url = url.clone();
            let ready = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async { tokio_postgres::connect(&url, tokio_postgres::NoTls).await.is_ok() })
            })
            .join()
            .unwrap_or(false);
            if ready {
                return;
            }
            if Instant::now() > end {
                let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
                panic!("PostgreSQL did not start within {START_TIMEOUT:?}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
