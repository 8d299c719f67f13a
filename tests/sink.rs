//! The test SMTP sink ([`Sink`]) driven over raw TCP and STARTTLS by a scripted client:
//! replies, recipient rules, pipelining, recording and counters.

mod util;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use util::sink::{Received, Sink, SinkOptions};

/// How long any one read or wait may take before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(10);

/// A scripted SMTP client that reads whole, possibly multi-line, replies.
struct Client<S> {
    stream: BufReader<S>,
}

impl Client<TcpStream> {
    /// Connects and checks the greeting is `220`.
    async fn connect(addr: SocketAddr) -> Self {
        let mut client = Self::connect_raw(addr).await;
        let greeting = client.reply().await;
        assert!(greeting.starts_with("220 "), "{greeting}");
        client
    }

    async fn connect_raw(addr: SocketAddr) -> Self {
        let tcp = TcpStream::connect(addr).await.expect("connect to the sink");
        Client {
            stream: BufReader::new(tcp),
        }
    }

    /// STARTTLS and a handshake that accepts the sink's self-signed certificate.
    async fn start_tls(mut self) -> Client<tokio_rustls::client::TlsStream<TcpStream>> {
        assert_eq!(self.command("STARTTLS").await, "220 2.0.0 Ready to start TLS\r\n");
        let config = herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("client config");
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(name, self.stream.into_inner())
            .await
            .expect("TLS handshake with the sink");
        Client {
            stream: BufReader::new(tls),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    async fn send(&mut self, text: &str) {
        self.stream.get_mut().write_all(text.as_bytes()).await.expect("write");
        self.stream.get_mut().flush().await.expect("flush");
    }

    /// The next reply, every line with its CRLF; empty when the sink closed.
    async fn reply(&mut self) -> String {
        let mut reply = String::new();
        loop {
            let mut line = String::new();
            tokio::time::timeout(PATIENCE, self.stream.read_line(&mut line))
                .await
                .expect("the sink answers in time")
                .expect("read a reply");
            reply.push_str(&line);
            if line.len() < 4 || line.as_bytes()[3] == b' ' {
                return reply;
            }
        }
    }

    async fn command(&mut self, line: &str) -> String {
        self.send(&format!("{line}\r\n")).await;
        self.reply().await
    }

    async fn ehlo(&mut self) -> String {
        let reply = self.command("EHLO client.test").await;
        assert!(reply.starts_with("250-"), "{reply}");
        reply
    }

    /// A whole transaction, one command at a time; the reply to the end of data.
    async fn transaction(&mut self, from: &str, to: &[&str], data: &str) -> String {
        assert_eq!(self.command(&format!("MAIL FROM:<{from}>")).await, "250 2.1.0 OK\r\n");
        for to in to {
            assert_eq!(self.command(&format!("RCPT TO:<{to}>")).await, "250 2.1.5 OK\r\n");
        }
        assert!(self.command("DATA").await.starts_with("354 "));
        self.send(data).await;
        self.send(".\r\n").await;
        self.reply().await
    }

    /// Whether the sink closed the connection, after at most [`PATIENCE`].
    async fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(PATIENCE, self.stream.read_to_end(&mut rest)).await;
        // A reset is as closed as an orderly end.
        matches!(read, Ok(Ok(0) | Err(_)))
    }
}

/// Waits, polling, until `condition` holds; fails after [`PATIENCE`].
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let end = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_message_is_recorded_dot_unstuffed_with_its_envelope() {
    let sink = Sink::start(SinkOptions::default());
    let mut client = Client::connect(sink.addr()).await;

    let ehlo = client.ehlo().await;
    for extension in ["PIPELINING", "8BITMIME", "ENHANCEDSTATUSCODES"] {
        assert!(ehlo.contains(extension), "{ehlo}");
    }
    assert!(
        !ehlo.contains("STARTTLS") && !ehlo.contains("SIZE") && !ehlo.contains("SMTPUTF8"),
        "{ehlo}"
    );
    let reply = client
        .transaction(
            "sender@example.test",
            &["one@example.org", "two@example.org"],
            "Subject: dots\r\n\r\n..leading dot\r\n..\r\nlast\r\n",
        )
        .await;
    assert_eq!(reply, "250 2.0.0 OK: queued\r\n");
    assert_eq!(client.command("NOOP").await, "250 2.0.0 OK\r\n");
    assert_eq!(client.command("QUIT").await, "221 2.0.0 Bye\r\n");
    assert!(client.closed().await);

    let received = sink.wait_for(1, PATIENCE).await;
    assert_eq!(
        received,
        vec![Received {
            mail_from: "sender@example.test".to_owned(),
            rcpt_to: vec!["one@example.org".to_owned(), "two@example.org".to_owned()],
            data: b"Subject: dots\r\n\r\n.leading dot\r\n.\r\nlast\r\n".to_vec(),
            size: 40,
            connection: 0,
            peer: std::net::Ipv4Addr::LOCALHOST.into(),
            ehlo: "client.test".to_owned(),
            tls: false,
        }]
    );
    assert_eq!(sink.ehlo_names(), vec!["client.test"]);
    assert_eq!(sink.connections(), 1);
}

#[tokio::test]
async fn recipients_are_answered_by_local_part_and_deferonce_only_once() {
    let sink = Sink::start(SinkOptions::default());
    let mut client = Client::connect(sink.addr()).await;
    client.ehlo().await;

    assert_eq!(client.command("MAIL FROM:<>").await, "250 2.1.0 OK\r\n");
    for (to, reply) in [
        ("bounce@example.org", "550 5.1.1 No such user"),
        ("Full.box@example.org", "552 5.2.2 Mailbox full"),
        ("defer@example.org", "451 4.3.0 Try later"),
        ("deferonce@example.org", "451 4.3.0 Try later"),
        ("deferonce@example.org", "250 2.1.5 OK"),
        ("someone@example.org", "250 2.1.5 OK"),
    ] {
        assert_eq!(
            client.command(&format!("RCPT TO:<{to}>")).await,
            format!("{reply}\r\n"),
            "{to}"
        );
    }
    assert!(client.command("DATA").await.starts_with("354 "));
    client.send("Subject: rules\r\n\r\nbody\r\n.\r\n").await;
    assert_eq!(client.reply().await, "250 2.0.0 OK: queued\r\n");

    // The sink remembers `deferonce` addresses across connections.
    let mut again = Client::connect(sink.addr()).await;
    again.ehlo().await;
    let reply = again
        .transaction("", &["DeferOnce@example.org"], "\r\nsecond\r\n")
        .await;
    assert_eq!(reply, "250 2.0.0 OK: queued\r\n");

    let received = sink.wait_for(2, PATIENCE).await;
    assert_eq!(received[0].mail_from, "");
    assert_eq!(
        received[0].rcpt_to,
        vec!["deferonce@example.org", "someone@example.org"]
    );
    assert_eq!(received[1].connection, 1);
}

#[tokio::test]
async fn pipelined_commands_are_answered_in_order_whether_or_not_advertised() {
    for pipelining in [true, false] {
        let sink = Sink::start(SinkOptions {
            pipelining,
            ..SinkOptions::default()
        });
        let mut client = Client::connect(sink.addr()).await;
        assert_eq!(client.ehlo().await.contains("PIPELINING"), pipelining);

        client
            .send("MAIL FROM:<a@example.test>\r\nRCPT TO:<bounce@example.org>\r\nRCPT TO:<b@example.org>\r\nDATA\r\n")
            .await;
        for expected in ["250 2.1.0", "550 5.1.1", "250 2.1.5", "354 "] {
            let reply = client.reply().await;
            assert!(reply.starts_with(expected), "pipelining {pipelining}: {reply}");
        }
        // The end of data, the next transaction and QUIT in one write.
        client
            .send("first\r\n.\r\nMAIL FROM:<c@example.test>\r\nRCPT TO:<d@example.org>\r\nDATA\r\n")
            .await;
        for expected in ["250 2.0.0", "250 2.1.0", "250 2.1.5", "354 "] {
            let reply = client.reply().await;
            assert!(reply.starts_with(expected), "pipelining {pipelining}: {reply}");
        }
        client.send("second\r\n.\r\nQUIT\r\n").await;
        assert!(client.reply().await.starts_with("250 2.0.0"));
        assert_eq!(client.reply().await, "221 2.0.0 Bye\r\n");

        let received = sink.wait_for(2, PATIENCE).await;
        let envelopes: Vec<_> = received
            .iter()
            .map(|r| (r.mail_from.as_str(), r.rcpt_to.clone()))
            .collect();
        assert_eq!(
            envelopes,
            vec![
                ("a@example.test", vec!["b@example.org".to_owned()]),
                ("c@example.test", vec!["d@example.org".to_owned()])
            ]
        );
        assert_eq!(received[1].data, b"second\r\n");
        assert_eq!(sink.messages_per_connection(), vec![2]);
    }
}

#[tokio::test]
async fn commands_out_of_sequence_and_data_without_recipients_are_refused() {
    let sink = Sink::start(SinkOptions::default());
    let mut client = Client::connect(sink.addr()).await;

    assert!(
        client
            .command("MAIL FROM:<a@example.test>")
            .await
            .starts_with("503 5.5.1")
    );
    assert!(client.command("XYZZY").await.starts_with("500 5.5.2"));
    client.send("NOOP\n").await;
    assert!(
        client.reply().await.starts_with("500 5.5.2"),
        "a bare LF does not end a command"
    );
    client.ehlo().await;
    assert!(client.command("RCPT TO:<b@example.org>").await.starts_with("503 5.5.1"));
    assert!(client.command("DATA").await.starts_with("503 5.5.1"));
    assert!(client.command("MAIL FROM:<a@example.test>").await.starts_with("250"));
    assert!(
        client
            .command("MAIL FROM:<a@example.test>")
            .await
            .starts_with("503 5.5.1")
    );
    assert!(client.command("RCPT TO:<bounce@example.org>").await.starts_with("550"));
    assert_eq!(client.command("DATA").await, "554 5.5.1 No valid recipients\r\n");
    assert_eq!(client.command("RSET").await, "250 2.0.0 OK\r\n");
    assert!(client.command("RCPT TO:<b@example.org>").await.starts_with("503 5.5.1"));
    assert!(client.command("STARTTLS").await.starts_with("502 5.5.1"));

    assert!(sink.received().is_empty());
}

#[tokio::test]
async fn x_sink_reply_bare_lf_and_long_lines_choose_the_end_of_data_reply() {
    let sink = Sink::start(SinkOptions::default());
    let mut client = Client::connect(sink.addr()).await;
    client.ehlo().await;
    let to = ["to@example.org"];

    let rejected = "From: a@example.test\r\nx-sink-reply: 554 5.7.1 Content rejected\r\n\r\nbody\r\n";
    assert_eq!(
        client.transaction("a@example.test", &to, rejected).await,
        "554 5.7.1 Content rejected\r\n"
    );
    let deferred = "X-Sink-Reply: 451 4.7.1 Greylisted\r\n\r\nbody\r\n";
    assert_eq!(
        client.transaction("a@example.test", &to, deferred).await,
        "451 4.7.1 Greylisted\r\n"
    );
    let bare_lf = "Subject: x\r\n\r\nbare\nline\r\n";
    assert!(
        client
            .transaction("a@example.test", &to, bare_lf)
            .await
            .starts_with("554 5.6.0")
    );
    let long = format!("Subject: x\r\n\r\n{}\r\n", "x".repeat(1000));
    assert!(
        client
            .transaction("a@example.test", &to, &long)
            .await
            .starts_with("554 5.6.0")
    );
    // A header in the body is content, not a request.
    let body_only = "Subject: x\r\n\r\nX-Sink-Reply: 554 5.7.1 No\r\n";
    assert_eq!(
        client.transaction("a@example.test", &to, body_only).await,
        "250 2.0.0 OK: queued\r\n"
    );

    let received = sink.wait_for(1, PATIENCE).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].text(), body_only);
}

#[tokio::test]
async fn size_is_advertised_and_larger_messages_are_refused() {
    let sink = Sink::start(SinkOptions {
        size: Some(100),
        ..SinkOptions::default()
    });
    let mut client = Client::connect(sink.addr()).await;
    assert!(client.ehlo().await.contains("SIZE 100\r\n"));

    assert_eq!(
        client.command("MAIL FROM:<a@example.test> SIZE=101").await,
        "552 5.3.4 Message too big\r\n"
    );
    assert!(
        client
            .command("MAIL FROM:<a@example.test> SIZE=50 BODY=8BITMIME")
            .await
            .starts_with("250")
    );
    assert!(client.command("RCPT TO:<b@example.org>").await.starts_with("250"));
    assert!(client.command("DATA").await.starts_with("354 "));
    client
        .send(&format!("Subject: big\r\n\r\n{}\r\n.\r\n", "x".repeat(200)))
        .await;
    assert_eq!(client.reply().await, "552 5.3.4 Message too big\r\n");

    assert!(sink.received().is_empty());
}

#[tokio::test]
async fn smtputf8_addresses_need_the_extension_and_the_parameter() {
    let plain = Sink::start(SinkOptions::default());
    let mut client = Client::connect(plain.addr()).await;
    client.ehlo().await;
    assert!(
        client
            .command("MAIL FROM:<a@example.test> SMTPUTF8")
            .await
            .starts_with("555 5.5.4")
    );
    assert!(client.command("MAIL FROM:<a@example.test>").await.starts_with("250"));
    assert!(
        client
            .command("RCPT TO:<jöran@example.org>")
            .await
            .starts_with("553 5.6.7")
    );

    let utf8 = Sink::start(SinkOptions {
        smtputf8: true,
        ..SinkOptions::default()
    });
    let mut client = Client::connect(utf8.addr()).await;
    assert!(client.ehlo().await.contains("SMTPUTF8"));
    assert!(
        client
            .command("MAIL FROM:<ä@example.test> SMTPUTF8")
            .await
            .starts_with("250")
    );
    assert!(client.command("RCPT TO:<jöran@example.org>").await.starts_with("250"));
}

#[tokio::test]
async fn starttls_upgrades_and_resets_the_session() {
    let sink = Sink::start(SinkOptions {
        starttls: true,
        ..SinkOptions::default()
    });
    let mut client = Client::connect(sink.addr()).await;
    let ehlo = client.ehlo().await;
    assert!(ehlo.contains("STARTTLS\r\n"), "{ehlo}");
    let mut client = client.start_tls().await;

    assert!(
        client
            .command("MAIL FROM:<a@example.test>")
            .await
            .starts_with("503 5.5.1")
    );
    let ehlo = client.ehlo().await;
    assert!(!ehlo.contains("STARTTLS"), "{ehlo}");
    assert!(client.command("STARTTLS").await.starts_with("503 5.5.1"));
    let reply = client
        .transaction("a@example.test", &["b@example.org"], "Subject: tls\r\n\r\nsecret\r\n")
        .await;
    assert_eq!(reply, "250 2.0.0 OK: queued\r\n");

    let received = sink.wait_for(1, PATIENCE).await;
    assert!(received[0].tls);
    assert_eq!(received[0].text(), "Subject: tls\r\n\r\nsecret\r\n");
    assert_eq!(sink.ehlo_names(), vec!["client.test", "client.test"]);
}

#[tokio::test]
async fn a_refusing_greeting_closes_the_connection() {
    let greeting = Some((421, "4.3.2 Not now".to_owned()));
    let sink = Sink::start(SinkOptions {
        greeting,
        ..SinkOptions::default()
    });
    let mut client = Client::connect_raw(sink.addr()).await;

    assert_eq!(client.reply().await, "421 4.3.2 Not now\r\n");
    assert!(client.closed().await);
    assert_eq!(sink.connections(), 1);
}

#[tokio::test]
async fn the_end_of_data_reply_waits_for_the_delay() {
    let delay = Duration::from_millis(100);
    let sink = Sink::start(SinkOptions {
        delay,
        ..SinkOptions::default()
    });
    let mut client = Client::connect(sink.addr()).await;
    client.ehlo().await;

    let start = Instant::now();
    let reply = client
        .transaction("a@example.test", &["b@example.org"], "\r\nslow\r\n")
        .await;
    assert!(reply.starts_with("250"));
    assert!(start.elapsed() >= delay, "{:?}", start.elapsed());
}

#[tokio::test]
async fn connections_are_counted_and_closed_when_the_sink_is_dropped() {
    let sink = Sink::start(SinkOptions::default());
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(Client::connect(sink.addr()).await);
    }
    assert_eq!(
        (sink.connections(), sink.concurrent(), sink.max_concurrent()),
        (3, 3, 3)
    );

    for mut client in clients.drain(1..) {
        assert_eq!(client.command("QUIT").await, "221 2.0.0 Bye\r\n");
        assert!(client.closed().await);
    }
    eventually("two connections to end", || sink.concurrent() == 1).await;
    let mut fourth = Client::connect(sink.addr()).await;
    fourth.ehlo().await;
    assert_eq!(
        (sink.connections(), sink.concurrent(), sink.max_concurrent()),
        (4, 2, 3)
    );
    assert_eq!(sink.messages_per_connection(), vec![0, 0, 0, 0]);

    drop(sink);
    assert!(clients[0].closed().await);
    assert!(fourth.closed().await);
}

#[tokio::test]
#[should_panic(expected = "sink: timed out after 50ms waiting for 1 messages; 0 arrived")]
async fn wait_for_names_what_it_waited_for() {
    let sink = Sink::start(SinkOptions::default());
    sink.wait_for(1, Duration::from_millis(50)).await;
}
