//! `kill -9` in the middle of a stream of enqueues loses no enqueue that had returned.
//!
//! The test re-runs its own binary as a child that opens a spool and enqueues from many
//! threads, printing `ACK <id>` only after each enqueue has returned `Accepted`. The parent
//! kills the child with SIGKILL at a varying point, reopens the spool and checks that every
//! acknowledged message is there with its extra record, and that nothing is half-written.
//! Half the messages are large enough to go to body files.

mod util;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use herald_queue::{Admission, Id, Scan, Table};
use util::{EmailRecord, email_batch, message, open};

const CHILD_ENV: &str = "HERALD_QUEUE_CRASH_CHILD_DIR";
const TEST_NAME: &str = "kill_9_during_enqueues_loses_no_acknowledged_message";
/// Rounds of start, load, kill, verify over the same data directory.
const ROUNDS: usize = 3;
/// Writers in the child: enough that most fsyncs are shared by a group.
const WRITERS: usize = 16;
/// The messages' sizes, in turn: kept inline, and in a body file.
const SIZES: [usize; 2] = [2048, 20_000];
/// The child stops by itself after this long, should the parent be gone.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);

#[test]
fn kill_9_during_enqueues_loses_no_acknowledged_message() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        run_child(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acknowledged: Vec<Id> = Vec::new();
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(7, |d| d.subsec_nanos());
    for round in 0..ROUNDS {
        let kill_after = 200 + (seed as usize / (round + 1)) % 1_500;
        let acked = run_and_kill(dir.path(), kill_after);
        assert!(
            acked.len() >= kill_after,
            "round {round}: child acknowledged only {}",
            acked.len()
        );
        acknowledged.extend(acked);

        let (store, spool, recovery) = open(dir.path());
        for id in &acknowledged {
            let raw = spool.load(*id).expect("load").map(|(_, raw)| raw);
            assert!(
                raw.as_ref().is_some_and(|raw| SIZES.contains(&raw.len())),
                "round {round}: acknowledged {id} lost or cut: {:?} bytes",
                raw.map(|raw| raw.len())
            );
            let record: Option<EmailRecord> = store.get(id.as_bytes()).expect("get");
            assert!(record.is_some(), "round {round}: email record of {id} lost");
        }
        // All-or-nothing: every envelope has its message and extra record, even those the
        // child wrote but never got to acknowledge.
        let envelopes = store.scan_raw(Table::ENVELOPES, Scan::prefix(b"")).expect("scan");
        for (key, _) in &envelopes {
            assert!(
                store.get_raw(Table::MESSAGES, key).expect("get").is_some(),
                "envelope without message"
            );
            assert!(
                store.get::<EmailRecord>(key).expect("get").is_some(),
                "envelope without its record"
            );
        }
        eprintln!(
            "round {round}: killed after {} acknowledged enqueues; {} messages in the spool after restart",
            acknowledged.len(),
            envelopes.len()
        );
        assert_eq!(recovery.messages as usize, envelopes.len());
        assert_eq!(recovery.repaired_due, 0);
        assert!(envelopes.len() >= acknowledged.len());
    }
}

fn run_and_kill(dir: &std::path::Path, kill_after: usize) -> Vec<Id> {
    let exe = std::env::current_exe().expect("test binary path");
    let mut child = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut acked = Vec::new();
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let Some(id) = line.strip_prefix("ACK ") else { continue };
        acked.push(id.parse::<Id>().expect("child prints ids"));
        if !killed && acked.len() >= kill_after {
            child.kill().expect("SIGKILL the child");
            killed = true;
        }
    }
    // Lines already in the pipe when the child died were acknowledged too; they were read
    // above until end of file.
    child.wait().expect("reap child");
    assert!(killed, "the child stopped before it was killed");
    acked
}

fn run_child(dir: &std::path::Path) {
    let (store, spool, _) = open(dir);
    let deadline = Instant::now() + CHILD_LIFETIME;
    let stdout = std::sync::Mutex::new(std::io::stdout());
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let (store, spool, stdout) = (&store, &spool, &stdout);
            scope.spawn(move || {
                let mut sizes = SIZES.iter().cycle().skip(writer);
                while Instant::now() < deadline {
                    let msg = message(store, *sizes.next().unwrap_or(&SIZES[0]));
                    let id = msg.id;
                    if let Ok(Admission::Accepted(_)) = spool.enqueue(msg, email_batch(id)).wait() {
                        let mut out = stdout.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        let _ = writeln!(out, "ACK {id}");
                        let _ = out.flush();
                    }
                }
            });
        }
    });
}
