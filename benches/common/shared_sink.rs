//! The sink every target of the peer bench relays to: Postfix's `smtp-sink` when it is
//! installed (what `../shared/bench/postfix-peer.sh` relays to), herald's test sink
//! otherwise or when `HERALD_BENCH_SINK=herald`. Both count what they got; `smtp-sink`
//! through its running counter (`-c`), read from its output.

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::sync::watch;

use crate::sink::{Sink, SinkOptions};

/// One of the two sinks, on 127.0.0.1:`port`.
pub enum SharedSink {
    /// herald's test sink, in this process.
    Herald(Sink),
    /// Postfix's `smtp-sink`, killed when dropped.
    SmtpSink {
        child: Child,
        addr: SocketAddr,
        count: watch::Sender<usize>,
    },
}

impl SharedSink {
    /// Starts `smtp-sink` when it is installed and not refused by `HERALD_BENCH_SINK`,
    /// else herald's sink.
    pub fn start(port: u16) -> SharedSink {
        let wanted = std::env::var("HERALD_BENCH_SINK").unwrap_or_default();
        if wanted != "herald"
            && let Some(sink) = smtp_sink(port)
        {
            return sink;
        }
        assert!(
            wanted != "smtp-sink",
            "HERALD_BENCH_SINK=smtp-sink, and smtp-sink cannot start"
        );
        SharedSink::Herald(Sink::start_on(
            port,
            SinkOptions {
                keep_whole: 0,
                ..SinkOptions::default()
            },
        ))
    }

    /// What it is, for the report.
    pub fn name(&self) -> &'static str {
        match self {
            SharedSink::Herald(_) => "herald's test sink",
            SharedSink::SmtpSink { .. } => "Postfix's smtp-sink",
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        match self {
            SharedSink::Herald(sink) => sink.addr(),
            SharedSink::SmtpSink { addr, .. } => *addr,
        }
    }

    /// Messages received so far.
    pub fn received_len(&self) -> usize {
        match self {
            SharedSink::Herald(sink) => sink.received_len(),
            SharedSink::SmtpSink { count, .. } => *count.borrow(),
        }
    }

    /// Waits until it has received `count` messages; `false` after `timeout`.
    pub async fn wait_for_count(&self, wanted: usize, timeout: Duration) -> bool {
        match self {
            SharedSink::Herald(sink) => sink.wait_for_count(wanted, timeout).await,
            SharedSink::SmtpSink { count, .. } => {
                let mut count = count.subscribe();
                matches!(
                    tokio::time::timeout(timeout, count.wait_for(|&n| n >= wanted)).await,
                    Ok(Ok(_))
                )
            }
        }
    }
}

impl Drop for SharedSink {
    fn drop(&mut self) {
        if let SharedSink::SmtpSink { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `smtp-sink -c -m 1024 127.0.0.1:PORT 1024` (as the peer script runs it; as `nobody`
/// when started by root, which it requires), its counter followed by a thread.
fn smtp_sink(port: u16) -> Option<SharedSink> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut command = Command::new("smtp-sink");
    command.arg("-c");
    // `/proc/self` belongs to the process's effective user.
    if std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0) {
        command.args(["-u", "nobody"]);
    }
    let mut child = command
        .args(["-m", "1024", &addr.to_string(), "1024"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut output = child.stdout.take()?;
    let count = watch::Sender::new(0);
    {
        let count = count.clone();
        // The counter line is `sess=.. quit=.. mesg=N`, rewritten after `\r`.
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buffer = [0u8; 4096];
            while let Ok(read) = output.read(&mut buffer) {
                if read == 0 {
                    return;
                }
                pending.extend_from_slice(&buffer[..read]);
                while let Some(end) = pending.iter().position(|&b| b == b'\r' || b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line);
                    if let Some(n) = line.rsplit("mesg=").next().and_then(|n| n.trim().parse::<usize>().ok()) {
                        count.send_if_modified(|seen| {
                            let more = n > *seen;
                            *seen = (*seen).max(n);
                            more
                        });
                    }
                }
            }
        });
    }
    // It takes a moment to listen.
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Some(SharedSink::SmtpSink { child, addr, count });
        }
        if child.try_wait().ok().flatten().is_some() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}
