//! SMTP submission over real TCP and TLS with a real SMTP client library (mail-send), on
//! both listener modes: accepted mail is recorded and spooled like `POST /emails`.

mod util;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use hyper::Method;
use mail_send::SmtpClientBuilder;
use mail_send::mail_builder::MessageBuilder;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use util::{OPERATOR_KEY, call, start_api};

/// The spooled envelope and bytes of the email `id` (as `GET /emails` lists it).
fn spooled(running: &herald::server::Running, id: &str) -> (herald_queue::Envelope, Vec<u8>) {
    running
        .state
        .spool()
        .load(id.parse().expect("id"))
        .expect("load")
        .expect("spooled")
}

fn message(from: &'static str, subject: &'static str) -> MessageBuilder<'static> {
    MessageBuilder::new()
        .from(("Acme", from))
        .to("user@example.org")
        .bcc("hidden@example.org")
        .subject(subject)
        .text_body("Hello over SMTP")
}

#[tokio::test]
async fn mail_submitted_over_smtps_and_starttls_is_recorded_and_spooled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let (starttls, implicit) = (running.smtp[0].1, running.smtp[1].1);

    for (port, implicit_tls, subject) in [
        (implicit.port(), true, "via SMTPS"),
        (starttls.port(), false, "via STARTTLS"),
    ] {
        SmtpClientBuilder::new("127.0.0.1", port)
            .expect("builder")
            .implicit_tls(implicit_tls)
            .allow_invalid_certs()
            .helo_host("client.test")
            .credentials(("resend", OPERATOR_KEY))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{subject}: connect: {e}"))
            .send(message("hello@example.test", subject))
            .await
            .unwrap_or_else(|e| panic!("{subject}: send: {e}"));
    }
    let list = call(addr, Method::GET, "/emails", Some(OPERATOR_KEY), None)
        .await
        .json();
    let subjects: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["subject"].as_str())
        .collect();
    assert_eq!(subjects, vec!["via STARTTLS", "via SMTPS"]);
    let id = list["data"][0]["id"].as_str().expect("id");
    let record = call(addr, Method::GET, &format!("/emails/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(record["from"], "Acme <hello@example.test>");
    assert_eq!(record["to"], json!(["user@example.org"]));
    assert_eq!(record["bcc"], json!(["hidden@example.org"]));
    assert_eq!(record["last_event"], "sent");
    assert_eq!(record["text"].as_str().map(str::trim), Some("Hello over SMTP"));
    let (envelope, raw) = spooled(&running, id);
    assert_eq!(envelope.recipients.len(), 2);
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with(&format!(
            "Received: from client.test ([127.0.0.1]) by herald.test (herald) with ESMTPSA id {id};"
        )),
        "{text}"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn bad_credentials_unverified_domains_and_plaintext_auth_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    util::verified_domain(running.http_addr, "example.test").await;
    let (starttls, implicit) = (running.smtp[0].1, running.smtp[1].1);

    let wrong = SmtpClientBuilder::new("127.0.0.1", implicit.port())
        .expect("builder")
        .implicit_tls(true)
        .allow_invalid_certs()
        .credentials(("resend", "re_wrong_key_0123456789"))
        .connect()
        .await;
    assert!(wrong.is_err(), "a wrong key is refused at AUTH");

    let unverified = SmtpClientBuilder::new("127.0.0.1", implicit.port())
        .expect("builder")
        .implicit_tls(true)
        .allow_invalid_certs()
        .credentials(("resend", OPERATOR_KEY))
        .connect()
        .await
        .expect("connect")
        .send(message("a@unverified.test", "nope"))
        .await;
    let error = unverified.expect_err("unverified domain refused").to_string();
    assert!(error.contains("550") || error.contains("5.7.1"), "{error}");

    // Before STARTTLS there is no AUTH and no MAIL, and nothing relays.
    let mut plain = tokio::net::TcpStream::connect(starttls).await.expect("connect");
    plain
        .write_all(b"EHLO c\r\nAUTH PLAIN AHJlc2VuZAByZV94\r\nMAIL FROM:<a@example.test>\r\nQUIT\r\n")
        .await
        .expect("write");
    let mut transcript = String::new();
    plain.read_to_string(&mut transcript).await.expect("read");
    assert!(transcript.contains("STARTTLS"), "{transcript}");
    assert!(!transcript.contains("AUTH PLAIN LOGIN"), "{transcript}");
    assert_eq!(
        transcript
            .matches("530 5.7.0 Must issue a STARTTLS command first")
            .count(),
        2,
        "{transcript}"
    );
    assert!(transcript.ends_with("221 2.0.0 Bye\r\n"), "{transcript}");
    assert_eq!(running.state.spool().depth(), 0);
    running.shutdown().await;
}

#[tokio::test]
async fn resend_idempotency_key_sends_a_message_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let implicit = running.smtp[1].1;
    let keyed = |subject: &'static str| {
        MessageBuilder::new()
            .from(("Acme", "hello@example.test"))
            .to("user@example.org")
            .subject(subject)
            .message_id("order-7@example.test")
            .date(mail_send::mail_builder::headers::date::Date::new(1_795_334_400))
            .header(
                "Resend-Idempotency-Key",
                mail_send::mail_builder::headers::raw::Raw::new("order-7"),
            )
            .text_body("once")
    };
    let connect = || async {
        SmtpClientBuilder::new("127.0.0.1", implicit.port())
            .expect("builder")
            .implicit_tls(true)
            .allow_invalid_certs()
            .credentials(("resend", OPERATOR_KEY))
            .connect()
            .await
            .expect("connect")
    };
    connect().await.send(keyed("first")).await.expect("first send");
    connect()
        .await
        .send(keyed("first"))
        .await
        .expect("the same message again is answered OK");
    let list = call(addr, Method::GET, "/emails", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1), "sent once: {list}");
    let id = list["data"][0]["id"].as_str().expect("id");
    let (_, raw) = spooled(&running, id);
    let spooled = String::from_utf8_lossy(&raw);
    assert!(
        !spooled.to_ascii_lowercase().contains("resend-idempotency-key") && spooled.contains("Subject: first"),
        "the key is herald's, not the recipients': {spooled}"
    );
    let other = connect().await.send(keyed("different")).await;
    let error = other
        .expect_err("another message under the same key is refused")
        .to_string();
    assert!(error.contains("554") || error.contains("5.7.1"), "{error}");
    assert_eq!(running.state.spool().depth(), 1);
    running.shutdown().await;
}

#[tokio::test]
async fn connection_limits_and_auth_lockout_hold_over_real_sockets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = util::config_text(dir.path(), "[api]\nrate_limit = \"1000/s\"\n").replace(
        "[smtp]\n",
        "[smtp]\nconnections_per_address_max = 2\nauth_failures_max = 2\n",
    );
    let config = herald::config::Config::from_toml(&text, None).expect("config");
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let (starttls, implicit) = (running.smtp[0].1, running.smtp[1].1);

    let mut first = tokio::net::TcpStream::connect(starttls).await.expect("connect");
    assert!(util::read_line(&mut first).await.starts_with("220 "));
    let mut second = tokio::net::TcpStream::connect(starttls).await.expect("connect");
    assert!(util::read_line(&mut second).await.starts_with("220 "));
    let mut third = tokio::net::TcpStream::connect(starttls).await.expect("connect");
    let refused = util::read_line(&mut third).await;
    assert!(
        refused.starts_with("421 4.7.0 Too many connections from your address"),
        "{refused}"
    );
    drop((first, second));

    for _ in 0..2 {
        let wrong = SmtpClientBuilder::new("127.0.0.1", implicit.port())
            .expect("builder")
            .implicit_tls(true)
            .allow_invalid_certs()
            .credentials(("resend", "re_wrong_key_0123456789"))
            .connect()
            .await;
        let Err(error) = wrong else {
            panic!("a wrong key must be refused")
        };
        let error = error.to_string();
        assert!(
            error.contains("535") || error.to_lowercase().contains("auth"),
            "{error}"
        );
    }
    // Even the right key is refused now, with a clear reply, and the connection closes.
    let auth = util::auth_plain(OPERATOR_KEY);
    let transcript = util::smtps_transcript(implicit, &format!("EHLO c\r\nAUTH PLAIN {auth}\r\n")).await;
    assert!(
        transcript.contains("421 4.7.0 Too many failed authentications"),
        "{transcript}"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn data_that_is_not_a_message_is_refused_and_nothing_is_spooled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    util::verified_domain(running.http_addr, "example.test").await;
    let implicit = running.smtp[1].1;
    let auth = util::auth_plain(OPERATOR_KEY);
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {auth}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\njust some text\r\n.\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\nSubject: no sender\r\n\r\nhi\r\n.\r\nQUIT\r\n"
    );
    let transcript = util::smtps_transcript(implicit, &script).await;
    assert!(
        transcript.contains("554 5.6.0 malformed header on line 1"),
        "{transcript}"
    );
    assert!(
        transcript.contains("554 5.6.0 the message has no From: header"),
        "{transcript}"
    );
    assert!(transcript.ends_with("221 2.0.0 Bye\r\n"), "{transcript}");
    assert_eq!(running.state.spool().depth(), 0);
    running.shutdown().await;
}

#[tokio::test]
async fn bdat_chunks_over_smtps_make_one_message_and_mix_with_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    let addr = running.http_addr;
    util::verified_domain(addr, "example.test").await;
    let implicit = running.smtp[1].1;
    // The message in two chunks; the first ends mid-line, and a line starting with a dot
    // is not stuffed (BDAT carries bytes as they are).
    let first = "From: Acme <hello@example.test>\r\nTo: user@example.org\r\nSubject: via BDAT\r\n\r\nfirst half, ";
    let second = "second half\r\n.not stuffed\r\n";
    let data =
        "From: Acme <hello@example.test>\r\nTo: user@example.org\r\nSubject: via DATA\r\n\r\nafter BDAT\r\n.\r\n";
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {auth}\r\nMAIL FROM:<hello@example.test>\r\nRCPT TO:<user@example.org>\r\n\
         BDAT {}\r\n{first}BDAT {} LAST\r\n{second}\
         MAIL FROM:<hello@example.test>\r\nRCPT TO:<user@example.org>\r\nDATA\r\n{data}QUIT\r\n",
        first.len(),
        second.len(),
        auth = util::auth_plain(OPERATOR_KEY),
    );
    let transcript = util::smtps_transcript(implicit, &script).await;
    assert!(transcript.contains("250-CHUNKING\r\n"), "{transcript}");
    let accepted: Vec<&str> = transcript
        .lines()
        .filter_map(|line| line.strip_prefix("250 2.0.0 OK "))
        .collect();
    assert_eq!(accepted.len(), 2, "{transcript}");
    assert!(transcript.contains("\r\n221 "), "{transcript}");

    let (_, raw) = running
        .state
        .spool()
        .load(accepted[0].parse().expect("id"))
        .expect("load")
        .expect("spooled");
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.ends_with("Subject: via BDAT\r\n\r\nfirst half, second half\r\n.not stuffed\r\n"),
        "{text}"
    );
    let record = call(
        addr,
        Method::GET,
        &format!("/emails/{}", accepted[1]),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    assert_eq!(record["subject"], "via DATA");
    running.shutdown().await;
}

/// A transport that counts the TLS records the server sends, reading their 5-byte headers
/// as the bytes pass: one record is one write of the server's.
struct RecordCounter {
    inner: tokio::net::TcpStream,
    records: Arc<AtomicUsize>,
    /// Header bytes of the record being read, then the body bytes it has left.
    header: Vec<u8>,
    body_left: usize,
}

impl tokio::io::AsyncRead for RecordCounter {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        for &byte in &buf.filled()[before..] {
            if this.body_left > 0 {
                this.body_left -= 1;
                continue;
            }
            this.header.push(byte);
            if this.header.len() == 5 {
                this.body_left = usize::from(u16::from_be_bytes([this.header[3], this.header[4]]));
                this.records.fetch_add(1, Ordering::SeqCst);
                this.header.clear();
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for RecordCounter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Reads until the text read so far ends a line that starts with `last`.
async fn read_through<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, last: &str) -> String {
    let mut text = String::new();
    while !text.ends_with("\r\n") || !text.split("\r\n").any(|line| line.starts_with(last)) {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed after {text:?}");
        text.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    text
}

/// A pipelined group is answered in one write (RFC 2920), counted as TLS records on the
/// wire: MAIL, RCPT and DATA sent together get their three replies in one record, and the
/// message text with the next group behind it gets four in one. One write per group is
/// one segment and one wake-up of the client, not one per command.
#[tokio::test]
async fn a_pipelined_group_is_answered_in_one_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start_api(dir.path(), "").await;
    util::verified_domain(running.http_addr, "example.test").await;
    let tls = herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("client config");
    let records = Arc::new(AtomicUsize::new(0));
    let counter = RecordCounter {
        inner: tokio::net::TcpStream::connect(running.smtp[1].1)
            .await
            .expect("connect"),
        records: records.clone(),
        header: Vec::new(),
        body_left: 0,
    };
    let name = rustls::pki_types::ServerName::try_from("herald.test").expect("name");
    let mut stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, counter)
        .await
        .expect("TLS");
    read_through(&mut stream, "220 ").await;
    let auth = format!("EHLO c\r\nAUTH PLAIN {}\r\n", util::auth_plain(OPERATOR_KEY));
    stream.write_all(auth.as_bytes()).await.expect("write");
    read_through(&mut stream, "235 ").await;

    let group = "MAIL FROM:<hello@example.test>\r\nRCPT TO:<user@example.org>\r\nDATA\r\n";
    let before = records.load(Ordering::SeqCst);
    stream.write_all(group.as_bytes()).await.expect("write");
    let replies = read_through(&mut stream, "354 ").await;
    let codes: Vec<&str> = replies.lines().map(|line| &line[..4]).collect();
    assert_eq!(codes, ["250 ", "250 ", "354 "], "{replies:?}");
    assert_eq!(records.load(Ordering::SeqCst) - before, 1, "{replies:?}");

    let from = "From: <hello@example.test>\r\nTo: <user@example.org>\r\n";
    let before = records.load(Ordering::SeqCst);
    let text = format!("{from}Subject: one\r\n\r\nhi\r\n.\r\n{group}");
    stream.write_all(text.as_bytes()).await.expect("write");
    let replies = read_through(&mut stream, "354 ").await;
    let codes: Vec<&str> = replies.lines().map(|line| &line[..4]).collect();
    assert_eq!(codes, ["250 ", "250 ", "250 ", "354 "], "{replies:?}");
    assert_eq!(records.load(Ordering::SeqCst) - before, 1, "{replies:?}");

    let text = format!("{from}Subject: two\r\n\r\nhi\r\n.\r\nQUIT\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    let end = read_through(&mut stream, "221 ").await;
    assert!(end.starts_with("250 2.0.0 OK "), "{end:?}");
    assert_eq!(running.state.spool().depth(), 2);
    running.shutdown().await;
}
