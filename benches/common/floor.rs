//! The CPU floor of one message through herald, measured apart on one thread: what no
//! implementation can avoid on this machine, against which the peer bench sets herald's
//! CPU per message.
//!
//! - DKIM: SHA-256 over the message (its body hash) and one signature (Ed25519 or
//!   RSA-2048 with PKCS#1 v1.5) over a header-sized input, with aws-lc directly;
//! - TLS: a full TLS 1.3 handshake, both ends (the load generator's client and the
//!   server run on the same machine, as in the bench), shared by the messages of a
//!   connection, plus sealing and opening the message's bytes;
//! - the disk: two synced appends per message (accepting, and writing the outcome): the
//!   message's bytes written once (no durable spool writes them less), and two
//!   `fdatasync`s, each one's CPU shared by the bench's 20 sessions (the most messages
//!   one commit can carry when each session waits for its own).
//!
//! CPU time is the thread's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, RsaKeyPair};

/// Repetitions of each measurement.
const ROUNDS: u32 = 200;

/// Messages sharing one synced write: the peer bench's sessions.
const GROUP: u32 = 20;

/// The floor's parts, per message or per connection.
#[derive(Clone, Copy, Debug)]
pub struct Floor {
    /// Body hash and signature.
    pub dkim: Duration,
    /// One full handshake, both ends.
    pub handshake: Duration,
    /// Sealing and opening the message's bytes.
    pub records: Duration,
    /// Writing the message's bytes into the page cache, once.
    pub write: Duration,
    /// Two `fdatasync`s, each shared by [`GROUP`] messages.
    pub fsync: Duration,
}

impl Floor {
    /// Per message, at `per_connection` messages per connection.
    pub fn per_message(&self, per_connection: usize) -> Duration {
        self.dkim
            + self.handshake / u32::try_from(per_connection).unwrap_or(u32::MAX)
            + self.records
            + self.write
            + self.fsync
    }
}

/// Measures the floor for `algorithm` (`ed25519` or `rsa`) and `message`, syncing in
/// `dir`.
pub fn measure(algorithm: &str, message: &[u8], dir: &std::path::Path, tls: &Arc<rustls::ClientConfig>) -> Floor {
    Floor {
        dkim: dkim(algorithm, message),
        handshake: handshake(tls),
        records: records(tls, message),
        write: write(dir, message.len()),
        fsync: fsync(dir) * 2 / GROUP,
    }
}

/// The thread's CPU time so far.
fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).expect("seconds"),
        u32::try_from(now.tv_nsec).expect("nanoseconds"),
    )
}

/// The mean on-CPU time of `work` over [`ROUNDS`] runs, after one untimed.
fn mean(mut work: impl FnMut()) -> Duration {
    work();
    let started = thread_cpu();
    for _ in 0..ROUNDS {
        work();
    }
    (thread_cpu() - started) / ROUNDS
}

fn dkim(algorithm: &str, message: &[u8]) -> Duration {
    let rng = SystemRandom::new();
    // About what a DKIM-Signature's signed headers and tag list come to.
    let headers = [b'h'; 400];
    match algorithm {
        "rsa" => {
            let pkcs8 = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("RSA key");
            let der = aws_lc_rs::encoding::AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&pkcs8).expect("DER");
            let key = RsaKeyPair::from_pkcs8(der.as_ref()).expect("RSA key");
            let mut signature = vec![0; key.public_modulus_len()];
            mean(|| {
                let body = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, message);
                std::hint::black_box(body);
                key.sign(&aws_lc_rs::signature::RSA_PKCS1_SHA256, &rng, &headers, &mut signature)
                    .expect("sign");
            })
        }
        _ => {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("Ed25519 key");
            let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("Ed25519 key");
            mean(|| {
                let body = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, message);
                std::hint::black_box(body);
                // Ed25519 in DKIM signs the SHA-256 of the headers (RFC 8463).
                let hashed = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &headers);
                std::hint::black_box(key.sign(hashed.as_ref()));
            })
        }
    }
}

/// A server configuration like herald's self-signed one (ECDSA P-256).
fn server() -> Arc<rustls::ServerConfig> {
    let certified = rcgen::generate_simple_self_signed(vec!["bench.herald.test".into()]).expect("certificate");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .expect("server config"),
    )
}

/// Moves what `from` has to send into `to`.
fn pass(
    from: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl rustls::SideData>>,
    to: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl rustls::SideData>>,
) {
    let mut wire = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut wire).expect("write_tls");
    }
    let mut reader = wire.as_slice();
    while !reader.is_empty() {
        to.read_tls(&mut reader).expect("read_tls");
        to.process_new_packets().expect("process");
    }
}

fn connected(
    client: &Arc<rustls::ClientConfig>,
    server: &Arc<rustls::ServerConfig>,
) -> (rustls::ClientConnection, rustls::ServerConnection) {
    let name = rustls::pki_types::ServerName::try_from("bench.herald.test").expect("name");
    let mut client = rustls::ClientConnection::new(Arc::clone(client), name).expect("client");
    let mut server = rustls::ServerConnection::new(Arc::clone(server)).expect("server");
    while client.is_handshaking() || server.is_handshaking() {
        pass(&mut client, &mut server);
        pass(&mut server, &mut client);
    }
    (client, server)
}

fn handshake(tls: &Arc<rustls::ClientConfig>) -> Duration {
    let server = server();
    mean(|| {
        std::hint::black_box(connected(tls, &server));
    })
}

fn records(tls: &Arc<rustls::ClientConfig>, message: &[u8]) -> Duration {
    let server = server();
    let (mut client, mut server) = connected(tls, &server);
    let mut plain = vec![0; message.len()];
    mean(|| {
        // In pieces that fit rustls's buffers (64 KB by default).
        for (piece, read) in message.chunks(16 * 1024).zip(plain.chunks_mut(16 * 1024)) {
            client.writer().write_all(piece).expect("write");
            pass(&mut client, &mut server);
            std::io::Read::read_exact(&mut server.reader(), read).expect("read");
        }
    })
}

/// Appending `len` bytes to a file, without syncing.
fn write(dir: &std::path::Path, len: usize) -> Duration {
    let path = dir.join("floor-write");
    let mut file = std::fs::File::create(&path).expect("a file to write");
    let chunk = vec![b'x'; len];
    let spent = mean(|| file.write_all(&chunk).expect("write"));
    let _ = std::fs::remove_file(path);
    spent
}

/// One `fdatasync` of a small append (a group's outcome records).
fn fsync(dir: &std::path::Path) -> Duration {
    let path = dir.join("floor-fsync");
    let mut file = std::fs::File::create(&path).expect("a file to sync");
    let chunk = vec![b'x'; 512];
    let spent = mean(|| {
        file.write_all(&chunk).expect("write");
        file.sync_data().expect("fdatasync");
    });
    let _ = std::fs::remove_file(path);
    spent
}
