//! The real `herald` binary as a child process, for crash tests: `herald serve --config
//! FILE` with [`OPERATOR_KEY`](super::OPERATOR_KEY) as the bootstrap key, its addresses
//! read from the `herald is ready` line of its JSON log, ended with SIGKILL or SIGTERM.
//!
//! A [`Log`] collects the stderr of every life of one data directory, so a failing test
//! shows what happened before and after each restart. Dropping a [`Process`] kills it,
//! and prints the log's tail when the test is failing.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub const HERALD: &str = env!("CARGO_BIN_EXE_herald");

/// Log lines shown when a test fails.
const LOG_TAIL: usize = 60;

/// The stderr lines of every life, each prefixed with `[life]`.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    /// The lines that contain `needle`.
    pub fn matching(&self, needle: &str) -> Vec<String> {
        self.lines().iter().filter(|l| l.contains(needle)).cloned().collect()
    }

    /// The last `count` lines.
    pub fn tail(&self, count: usize) -> Vec<String> {
        let lines = self.lines();
        lines[lines.len().saturating_sub(count)..].to_vec()
    }

    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // Every change is one push, so a panic cannot leave it half-written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running `herald serve`.
pub struct Process {
    child: Child,
    /// The HTTP listener.
    pub http: SocketAddr,
    /// The SMTP listeners, in the config's order.
    pub smtp: Vec<SocketAddr>,
    log: Log,
}

impl Process {
    /// Starts the binary on `config` (its directory is the working directory), logging
    /// into `log` as `life`, and waits up to `timeout` for its `herald is ready` line. The
    /// config must set `[log] format = "json"`.
    pub async fn start(config: &Path, log: &Log, life: usize, timeout: Duration) -> Process {
        let mut child = Command::new(HERALD)
            .args(["serve", "--config"])
            .arg(config)
            .current_dir(config.parent().expect("the config file is in a directory"))
            .env("HERALD_BOOTSTRAP_API_KEY", super::OPERATOR_KEY)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn herald");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (ready, mut ready_lines) = tokio::sync::mpsc::unbounded_channel();
        let keep = log.clone();
        // A thread, not a task: the pipe is blocking, and the reader must outlive a
        // runtime that a panic is tearing down, or herald could block on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && value["message"] == "herald is ready"
                {
                    let _ = ready.send(value);
                }
                keep.lines().push(format!("[{life}] {line}"));
            }
        });
        let mut process = Process {
            child,
            http: SocketAddr::from(([127, 0, 0, 1], 0)),
            smtp: Vec::new(),
            log: log.clone(),
        };
        let line = match tokio::time::timeout(timeout, ready_lines.recv()).await {
            Ok(Some(line)) => line,
            // The reader ends when stderr closes, which it does when herald exits.
            Ok(None) => panic!("herald (life {life}) exited during startup: {:?}", process.child.wait()),
            Err(_) => panic!("herald (life {life}) was not ready within {timeout:?}"),
        };
        process.http = address(line["http"].as_str().unwrap_or_default(), &line);
        process.smtp = line["smtp"]
            .as_str()
            .unwrap_or_default()
            .split(',')
            .filter(|a| !a.trim().is_empty())
            .map(|a| address(a, &line))
            .collect();
        process
    }

    /// SIGKILL: no shutdown code runs, as in a power cut or an OOM kill.
    pub fn kill_9(&mut self) -> ExitStatus {
        self.child.kill().expect("SIGKILL herald");
        self.child.wait().expect("wait for herald")
    }

    /// SIGTERM, and a clean exit within `timeout`.
    pub async fn terminate(&mut self, timeout: Duration) {
        self.sigterm();
        let exit = self
            .wait_exit(timeout)
            .await
            .unwrap_or_else(|| panic!("herald did not stop within {timeout:?} of SIGTERM"));
        assert!(exit.success(), "herald stopped uncleanly after SIGTERM: {exit:?}");
    }

    /// SIGTERM without waiting, so a test can watch herald while it shuts down.
    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-s", "TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s TERM: {status:?}");
    }

    /// Waits up to `timeout` for herald to exit: its exit status, or `None` while it
    /// still runs.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(exit) = self.child.try_wait().expect("try_wait") {
                return Some(exit);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// An address from the ready `line`.
fn address(text: &str, line: &Value) -> SocketAddr {
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("bad address {text:?} in {line}: {e}"))
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("== herald log (last {LOG_TAIL} lines)");
            for line in self.log.tail(LOG_TAIL) {
                eprintln!("{line}");
            }
        }
    }
}
