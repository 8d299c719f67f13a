//! The SMTP submission load generator the benches share: `sessions` concurrent clients,
//! in plaintext, with STARTTLS or over implicit TLS, with or without AUTH PLAIN, with
//! MAIL/RCPT/DATA pipelined or one command at a time, each taking up to `per_connection`
//! messages at a time from one shared count, a new connection for each take, until the
//! count is spent.
//!
//! It checks every reply code and panics on the first unexpected one: a benchmark that
//! silently counts refusals as throughput would be worse than none.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Characters per line of generated message text, as mail clients wrap it.
const LINE_LEN: usize = 76;

/// How a session protects its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// Plain SMTP, no TLS (what Postfix's `smtp-source` speaks).
    #[allow(dead_code, reason = "the delivery bench, which shares this file, only loads herald")]
    Plain,
    /// Plaintext greeting and `EHLO`, then `STARTTLS`.
    StartTls,
    /// TLS from the first byte (SMTPS).
    Implicit,
}

impl Security {
    /// `plain`, `starttls` or `implicit`.
    #[allow(dead_code, reason = "the delivery bench, which shares this file, takes no settings")]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "plain" => Some(Security::Plain),
            "starttls" => Some(Security::StartTls),
            "implicit" => Some(Security::Implicit),
            _ => None,
        }
    }
}

/// What the load generator sends, where and how.
pub struct Load {
    /// The submission listener.
    pub addr: SocketAddr,
    /// How the connection is protected.
    pub security: Security,
    /// The AUTH PLAIN password of user `resend` (an API key), or `None` for no AUTH.
    pub key: Option<String>,
    /// Whether MAIL, RCPT and DATA go in one write (PIPELINING) or each waits for its
    /// reply.
    pub pipelining: bool,
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

/// A connection, plain or under TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// A session opened by [`open_idle`], past its greeting, `EHLO` and AUTH, doing nothing.
pub struct Idle(BufReader<Box<dyn Stream>>);

/// Opens `count` sessions as `load` says, `load.sessions` at a time (each with a TLS
/// session store of its own, as in [`run`]), and returns them open and idle.
#[allow(
    dead_code,
    reason = "the delivery bench, which shares this file, keeps no idle sessions"
)]
pub async fn open_idle(load: Arc<Load>, tls: &Arc<rustls::ClientConfig>, count: usize) -> Vec<Idle> {
    let remaining = Arc::new(AtomicUsize::new(count));
    let mut tasks = Vec::new();
    for _ in 0..load.sessions {
        let (load, remaining) = (Arc::clone(&load), Arc::clone(&remaining));
        let tls = own_sessions(tls);
        tasks.push(tokio::spawn(async move {
            let mut opened = Vec::new();
            while claim(&remaining, 1) == 1 {
                opened.push(Idle(open(&load, &tls).await));
            }
            opened
        }));
    }
    let mut idle = Vec::with_capacity(count);
    for task in tasks {
        idle.extend(task.await.expect("an idle session panicked"));
    }
    idle
}

/// Ends idle sessions with `QUIT`, each awaiting its `221`.
#[allow(
    dead_code,
    reason = "the delivery bench, which shares this file, keeps no idle sessions"
)]
pub async fn close_idle(idle: Vec<Idle>) {
    for Idle(mut stream) in idle {
        send(&mut stream, b"QUIT\r\n").await;
        expect(&mut stream, "221").await;
    }
}

/// Connects and goes through the greeting, `EHLO` and AUTH as `load` says.
async fn open(load: &Load, tls: &Arc<rustls::ClientConfig>) -> BufReader<Box<dyn Stream>> {
    let tcp = TcpStream::connect(load.addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let name = ServerName::try_from("bench.herald.test").expect("name");
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(tls));
    let mut stream: BufReader<Box<dyn Stream>> = match load.security {
        Security::Implicit => BufReader::new(Box::new(connector.connect(name.clone(), tcp).await.expect("tls"))),
        Security::Plain | Security::StartTls => BufReader::new(Box::new(tcp)),
    };
    expect(&mut stream, "220").await;
    if load.security == Security::StartTls {
        send(&mut stream, b"EHLO bench.client\r\nSTARTTLS\r\n").await;
        expect(&mut stream, "250").await;
        expect(&mut stream, "220").await;
        // The server says nothing more in plaintext after its 220, so nothing read ahead
        // is lost with the buffer.
        assert!(stream.buffer().is_empty(), "bytes after the STARTTLS 220");
        let plain = stream.into_inner();
        stream = BufReader::new(Box::new(connector.connect(name, plain).await.expect("tls")));
    }
    match &load.key {
        Some(key) => {
            let auth = base64::engine::general_purpose::STANDARD.encode(format!("\0resend\0{key}"));
            send(
                &mut stream,
                format!("EHLO bench.client\r\nAUTH PLAIN {auth}\r\n").as_bytes(),
            )
            .await;
            expect(&mut stream, "250").await;
            expect(&mut stream, "235").await;
        }
        None => {
            send(&mut stream, b"EHLO bench.client\r\n").await;
            expect(&mut stream, "250").await;
        }
    }
    stream
}

/// One session sending `count` messages; returns each end-of-data-to-250 time.
async fn session(load: &Load, tls: &Arc<rustls::ClientConfig>, count: usize) -> Vec<Duration> {
    let mut stream = open(load, tls).await;
    let mail = format!("MAIL FROM:<{}>\r\n", load.mail_from);
    let rcpt = format!("RCPT TO:<{}>\r\n", load.rcpt_to);
    let envelope = format!("{mail}{rcpt}DATA\r\n");
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        if load.pipelining {
            send(&mut stream, envelope.as_bytes()).await;
            expect(&mut stream, "250").await;
            expect(&mut stream, "250").await;
            expect(&mut stream, "354").await;
        } else {
            for (command, code) in [(mail.as_str(), "250"), (rcpt.as_str(), "250"), ("DATA\r\n", "354")] {
                send(&mut stream, command.as_bytes()).await;
                expect(&mut stream, code).await;
            }
        }
        send(&mut stream, &load.data).await;
        let sent = Instant::now();
        expect(&mut stream, "250").await;
        latencies.push(sent.elapsed());
    }
    send(&mut stream, b"QUIT\r\n").await;
    latencies
}

async fn send(stream: &mut BufReader<Box<dyn Stream>>, bytes: &[u8]) {
    stream.get_mut().write_all(bytes).await.expect("write");
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
