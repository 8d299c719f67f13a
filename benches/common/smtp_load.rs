//! The SMTP submission load generator the benches share: `sessions` concurrent clients
//! over implicit TLS with AUTH PLAIN and pipelined MAIL/RCPT/DATA, each taking up to
//! `per_connection` messages at a time from one shared count, a new connection for each
//! take, until the count is spent.
//!
//! It checks every reply code and panics on the first unexpected one: a benchmark that
//! silently counts refusals as throughput would be worse than none.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Characters per line of generated message text, as mail clients wrap it.
const LINE_LEN: usize = 76;

/// What the load generator sends, where and how.
pub struct Load {
    /// The implicit-TLS submission listener.
    pub addr: SocketAddr,
    /// The API key, sent as the AUTH PLAIN password of user `resend`.
    pub key: String,
    /// The envelope sender, without angle brackets.
    pub mail_from: String,
    /// The envelope recipient, without angle brackets.
    pub rcpt_to: String,
    /// What follows `354`: the message, dot-stuffed, ending with `CRLF.CRLF`; see
    /// [`message`].
    pub data: Vec<u8>,
    /// Sessions open at once.
    pub sessions: usize,
    /// Messages sent over one connection before it is closed and another opened.
    pub per_connection: usize,
}

/// A TLS client configuration that accepts any certificate: the server under test makes
/// up a self-signed one at start.
pub fn tls_client() -> Arc<rustls::ClientConfig> {
    Arc::new(
        rustls::ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert))
            .with_no_client_auth(),
    )
}

/// A message with `From`, `To` and `Subject` headers and a body of `body_len` `x`s in lines
/// of 76, ready to send after `354` (no line starts with a dot, so nothing needs
/// stuffing).
pub fn message(from: &str, to: &str, body_len: usize) -> Vec<u8> {
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: load\r\n\r\n{}\r\n.\r\n",
        text(body_len, "\r\n")
    )
    .into_bytes()
}

/// `len` `x`s in lines of 76, the last one shorter, joined by `newline`.
pub fn text(len: usize, newline: &str) -> String {
    let line = "x".repeat(LINE_LEN);
    let mut lines = vec![line.as_str(); len / LINE_LEN];
    let rest = "x".repeat(len % LINE_LEN);
    if !rest.is_empty() {
        lines.push(&rest);
    }
    lines.join(newline)
}

/// Sends `messages` messages as `load` says; returns each one's time from the end of data
/// to `250`, in no particular order.
pub async fn run(load: Arc<Load>, tls: &Arc<rustls::ClientConfig>, messages: usize) -> Vec<Duration> {
    let remaining = Arc::new(AtomicUsize::new(messages));
    let mut tasks = Vec::new();
    for _ in 0..load.sessions {
        let (load, remaining) = (Arc::clone(&load), Arc::clone(&remaining));
        let tls = own_sessions(tls);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let claimed = claim(&remaining, load.per_connection);
                if claimed == 0 {
                    return latencies;
                }
                latencies.extend(session(&load, &tls, claimed).await);
            }
        }));
    }
    let mut latencies = Vec::with_capacity(messages);
    for task in tasks {
        latencies.extend(task.await.expect("an SMTP load session panicked"));
    }
    latencies
}

/// `tls` with a session store of its own: each load session stands for one client that
/// resumes with the ticket from its own last connection, as a mail client or application
/// instance does. A store shared by every session keeps at most 8 tickets per server
/// (rustls' limit), fewer than the sessions, so some reconnections would make full
/// handshakes only because of how the load generator is built.
fn own_sessions(tls: &Arc<rustls::ClientConfig>) -> Arc<rustls::ClientConfig> {
    let mut config = rustls::ClientConfig::clone(tls);
    config.resumption = rustls::client::Resumption::in_memory_sessions(1);
    Arc::new(config)
}

/// Takes up to `want` from `remaining`; 0 when it is spent.
fn claim(remaining: &AtomicUsize, want: usize) -> usize {
    let mut current = remaining.load(Ordering::Relaxed);
    loop {
        let take = current.min(want);
        if take == 0 {
            return 0;
        }
        match remaining.compare_exchange(current, current - take, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return take,
            Err(actual) => current = actual,
        }
    }
}

/// One session sending `count` messages; returns each end-of-data-to-250 time.
async fn session(load: &Load, tls: &Arc<rustls::ClientConfig>, count: usize) -> Vec<Duration> {
    let tcp = TcpStream::connect(load.addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(ServerName::try_from("bench.herald.test").expect("name"), tcp)
        .await
        .expect("tls");
    let (reader, mut writer) = tokio::io::split(stream);
    let mut reader = BufReader::new(reader);
    expect(&mut reader, "220").await;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("\0resend\0{}", load.key));
    writer
        .write_all(format!("EHLO bench.client\r\nAUTH PLAIN {auth}\r\n").as_bytes())
        .await
        .expect("write");
    expect(&mut reader, "250").await;
    expect(&mut reader, "235").await;
    let envelope = format!(
        "MAIL FROM:<{}>\r\nRCPT TO:<{}>\r\nDATA\r\n",
        load.mail_from, load.rcpt_to
    );
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        writer.write_all(envelope.as_bytes()).await.expect("write");
        expect(&mut reader, "250").await;
        expect(&mut reader, "250").await;
        expect(&mut reader, "354").await;
        writer.write_all(&load.data).await.expect("write");
        let sent = Instant::now();
        expect(&mut reader, "250").await;
        latencies.push(sent.elapsed());
    }
    writer.write_all(b"QUIT\r\n").await.expect("write");
    latencies
}

/// Reads one reply (all its lines) and checks its code.
async fn expect<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R, code: &str) {
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.expect("read");
        assert!(line.starts_with(code), "expected {code}, got {line:?}");
        if line.as_bytes().get(3) == Some(&b' ') {
            return;
        }
    }
}

#[derive(Debug)]
struct AnyCert;

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::aws_lc_rs::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
