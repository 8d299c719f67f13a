//! Bounces and complaints that come back by mail, over real sockets: herald delivers to a
//! real SMTP sink with its VERP return path; a "receiving MX" then connects to herald's
//! `mx` listener in plain text without AUTH, as MXs do, and hands back delivery status
//! notifications and an abuse report shaped like Gmail's, Outlook's and Yahoo's. They
//! become `email.bounced`, `email.delivery_delayed` and `email.complained` at a webhook
//! receiver, with suppressions. Recipients other than return-path addresses are refused
//! at `RCPT` (never a relay), and listeners without `mx` keep refusing `MAIL` without AUTH.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use util::sink::{Sink, SinkOptions};
use util::webhook_receiver::Receiver;
use util::{HttpResponse, OPERATOR_KEY, call};

const WAIT: Duration = Duration::from_secs(30);

async fn api(addr: SocketAddr, method: Method, path: &str, body: Option<Value>) -> HttpResponse {
    call(addr, method, path, Some(OPERATOR_KEY), body).await
}

/// A plain-text SMTP client, one command at a time.
struct Mx {
    reader: BufReader<TcpStream>,
}

impl Mx {
    async fn connect(addr: SocketAddr) -> Mx {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut mx = Mx {
            reader: BufReader::new(stream),
        };
        let greeting = mx.reply().await;
        assert!(greeting.starts_with("220"), "{greeting}");
        mx
    }

    /// The next reply, all its lines.
    async fn reply(&mut self) -> String {
        let mut text = String::new();
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(WAIT, self.reader.read_line(&mut line))
                .await
                .expect("a reply in time")
                .expect("read");
            assert!(read > 0, "the server closed the connection: {text}");
            text.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                return text;
            }
        }
    }

    async fn command(&mut self, line: &str) -> String {
        self.reader
            .get_mut()
            .write_all(format!("{line}\r\n").as_bytes())
            .await
            .expect("write");
        self.reply().await
    }

    /// Sends `message` to `to` from the null sender; the reply to the end of data.
    async fn send(&mut self, to: &str, message: &str) -> String {
        assert!(self.command("MAIL FROM:<>").await.starts_with("250"));
        let rcpt = self.command(&format!("RCPT TO:<{to}>")).await;
        assert!(rcpt.starts_with("250 2.1.5"), "{rcpt}");
        assert!(self.command("DATA").await.starts_with("354"));
        let data = message.replace("\r\n", "\n").replace('\n', "\r\n");
        self.command(&format!("{data}\r\n.")).await
    }
}

fn dsn(reporter: &str, recipient: &str, action: &str, status: &str, diagnostic: &str, message_id: &str) -> String {
    format!(
        "From: Mail Delivery Subsystem <mailer-daemon@{reporter}>
To: bounces
Subject: Delivery Status Notification (Failure)
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary=\"b1\"

--b1
Content-Type: text/plain; charset=utf-8

Your message wasn't delivered to {recipient}.

--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; {reporter}
Arrival-Date: Thu, 26 Nov 2026 10:00:00 +0000

Final-Recipient: rfc822; {recipient}
Action: {action}
Status: {status}
Remote-MTA: dns; mx.{reporter}
Diagnostic-Code: smtp; {diagnostic}

--b1
Content-Type: text/rfc822-headers

From: news@shop.test
To: {recipient}
Subject: News
Message-ID: <{message_id}>

--b1--"
    )
}

fn arf(recipient: &str, mail_from: &str, message_id: &str) -> String {
    format!(
        "From: staff@feedback.yahoo.example
To: fbl
Subject: FW: News
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary=\"b2\"

--b2
Content-Type: text/plain

This is an email abuse report for an email message received from IP 192.0.2.1.

--b2
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: Yahoo!-Mail-Feedback/2.0
Version: 1
Original-Mail-From: <{mail_from}>
Original-Rcpt-To: <{recipient}>
Arrival-Date: Thu, 26 Nov 2026 10:00:00 +0000

--b2
Content-Type: message/rfc822

From: news@shop.test
To: {recipient}
Subject: News
Message-ID: <{message_id}>

Hello
--b2--"
    )
}

/// Sends a news email to `to`; its id and the envelope sender it was delivered with.
async fn send(addr: SocketAddr, sink: &Sink, to: &str, count: usize) -> (String, String) {
    let sent = api(
        addr,
        Method::POST,
        "/emails",
        Some(json!({ "from": "news@shop.test", "to": to, "subject": "News", "text": "Hello" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let id = sent.json()["id"].as_str().expect("id").to_owned();
    let received = sink.wait_for(count, WAIT).await;
    let envelope = received[count - 1].mail_from.clone();
    assert_eq!(envelope, format!("{id}@send.shop.test"), "the VERP return path");
    (id, envelope)
}

async fn event(receiver: &Receiver, kind: &str, email_id: &str) -> Value {
    let arrived = receiver
        .wait_for(WAIT, |r| {
            r.all()
                .iter()
                .any(|e| e.payload()["type"] == kind && e.payload()["data"]["email_id"] == email_id)
        })
        .await;
    assert!(arrived, "{kind} for {email_id} arrived");
    receiver
        .all()
        .into_iter()
        .map(|e| e.payload())
        .find(|p| p["type"] == kind && p["data"]["email_id"] == email_id)
        .expect("the event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_by_mail_become_events_and_suppressions() {
    let sink = Sink::start(SinkOptions::default());
    let receiver = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let listeners =
        r#"{ addr = "127.0.0.1:0", tls = "starttls", mx = true }, { addr = "127.0.0.1:0", tls = "starttls" }"#;
    let text = format!(
        "{}[webhooks]\nallow_private_endpoints = true\n[api]\nrate_limit = \"1000/s\"\n[delivery]\nenabled = true\nrelay = \"{}\"\nretry_intervals = [\"1s\"]\n",
        util::base_config(dir.path(), Duration::from_secs(5), listeners),
        sink.addr()
    );
    let config = herald::config::Config::from_toml(&text, None).expect("config");
    let running = util::start_with_key(config, Some(OPERATOR_KEY)).await;
    let (addr, mx, submission) = (running.http_addr, running.smtp[0].1, running.smtp[1].1);
    util::verified_domain(addr, "shop.test").await;
    let hook = json!({
        "endpoint": format!("http://{}/hook", receiver.addr()),
        "events": ["email.bounced", "email.delivery_delayed", "email.complained"],
    });
    assert_eq!(
        api(addr, Method::POST, "/webhooks", Some(hook)).await.status,
        StatusCode::CREATED
    );
    let (bounced, bounced_from) = send(addr, &sink, "ann@example.net", 1).await;
    let (delayed, delayed_from) = send(addr, &sink, "bob@example.net", 2).await;
    let (complained, complained_from) = send(addr, &sink, "carol@example.net", 3).await;

    // Without AUTH or TLS, only return-path addresses are taken.
    let mut client = Mx::connect(mx).await;
    assert!(client.command("EHLO mx.google.example").await.starts_with("250"));
    assert!(client.command("MAIL FROM:<>").await.starts_with("250"));
    for outside in [
        "victim@external.example",
        "news@shop.test",
        "victim%external.example@shop.test",
        "someone@send.other.test",
    ] {
        let refused = client.command(&format!("RCPT TO:<{outside}>")).await;
        assert!(refused.starts_with("550 5.7.1"), "{outside}: {refused}");
    }
    assert!(client.command("RSET").await.starts_with("250"));

    // A Gmail-shaped hard bounce, to the VERP address.
    let gmail = dsn(
        "googlemail.example",
        "ann@example.net",
        "failed",
        "5.1.1",
        "550-5.1.1 The email account that you tried to reach does not exist.",
        &format!("{bounced}@herald.test"),
    );
    let taken = client.send(&bounced_from, &gmail).await;
    assert!(taken.starts_with("250"), "{taken}");
    let event_data = event(&receiver, "email.bounced", &bounced).await;
    assert_eq!(event_data["data"]["bounce"]["type"], "Permanent", "{event_data}");
    assert_eq!(event_data["data"]["bounce"]["subType"], "NoEmail");
    assert_eq!(event_data["data"]["to"], json!(["ann@example.net"]));
    assert!(
        event_data["data"]["bounce"]["diagnosticCode"][0]
            .as_str()
            .is_some_and(|d| d.contains("does not exist")),
        "{event_data}"
    );
    let suppressed = api(addr, Method::GET, "/suppressions/ann@example.net", None).await;
    assert_eq!(suppressed.status, StatusCode::OK, "{}", suppressed.text());
    let record = api(addr, Method::GET, &format!("/emails/{bounced}"), None).await.json();
    assert_eq!(record["last_event"], "bounced");

    // A forged report naming an address the email was not sent to suppresses nobody.
    let forged = dsn(
        "googlemail.example",
        "victim@example.org",
        "failed",
        "5.1.1",
        "550 5.1.1 no such user",
        &format!("{bounced}@herald.test"),
    );
    assert!(client.send(&bounced_from, &forged).await.starts_with("250"));
    assert_eq!(
        api(addr, Method::GET, "/suppressions/victim@example.org", None)
            .await
            .status,
        StatusCode::NOT_FOUND,
        "only the email's own recipients count"
    );

    // An Outlook-shaped delay, on the same connection.
    let outlook = dsn(
        "outlook.example",
        "bob@example.net",
        "delayed",
        "4.4.7",
        "451 4.4.7 Message delayed",
        &format!("{delayed}@herald.test"),
    );
    assert!(client.send(&delayed_from, &outlook).await.starts_with("250"));
    let event_data = event(&receiver, "email.delivery_delayed", &delayed).await;
    assert_eq!(event_data["data"]["to"], json!(["bob@example.net"]));
    assert_eq!(
        api(addr, Method::GET, "/suppressions/bob@example.net", None)
            .await
            .status,
        StatusCode::NOT_FOUND,
        "a delay suppresses nothing"
    );

    // A Yahoo-shaped complaint to fbl@, matched by the original's Message-ID.
    let yahoo = arf(
        "carol@example.net",
        &complained_from,
        &format!("{complained}@herald.test"),
    );
    assert!(client.send("fbl@send.shop.test", &yahoo).await.starts_with("250"));
    let event_data = event(&receiver, "email.complained", &complained).await;
    assert_eq!(event_data["data"]["to"], json!(["carol@example.net"]));
    let suppression = api(addr, Method::GET, "/suppressions/carol@example.net", None)
        .await
        .json();
    assert_eq!(suppression["origin"], "complaint", "{suppression}");

    // A report that does not parse (no parts, a broken status block) is taken and dropped.
    let broken = "Content-Type: multipart/report; report-type=delivery-status; boundary=\"zz\"\n\n--zz\nContent-Type: message/delivery-status\n\nAction failed\nStatus: x\n--";
    assert!(client.send(&bounced_from, broken).await.starts_with("250"));

    // An out-of-office reply is taken and dropped: no event, nothing delivered.
    let ooo = "From: ann@example.net\nTo: x\nSubject: Out of office\nAuto-Submitted: auto-replied\n\nBack Monday.";
    assert!(client.send(&bounced_from, ooo).await.starts_with("250"));
    assert!(client.command("QUIT").await.starts_with("221"));
    // Nothing taken in is ever queued: once the three emails are delivered, the spool
    // is empty and the sink has those three only.
    util::eventually(WAIT, "the spool to be empty", || async {
        (running.state.spool().depth() == 0).then_some(())
    })
    .await;
    assert_eq!(sink.received().len(), 3, "nothing taken in is delivered anywhere");
    let metrics = util::get(addr, "/metrics").await.text();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("herald_feedback_total{kind=\"other\"}")),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("herald_feedback_total{kind=\"malformed\"}")),
        "{metrics}"
    );
    let events = receiver.all().len();
    assert_eq!(events, 3, "one event per report, none for what was dropped");

    // A listener without `mx` still wants TLS and AUTH before MAIL.
    let mut plain = Mx::connect(submission).await;
    assert!(plain.command("EHLO c").await.starts_with("250"));
    let refused = plain.command("MAIL FROM:<>").await;
    assert!(refused.starts_with("530 5.7.0"), "{refused}");
    assert!(running.shutdown().await);
}
