//! Bad SMTP input, row by row on the ports as a client sees them, then the attacks that
//! need more than one write: commands injected before STARTTLS and AUTH brute force.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use super::client::{Client, Wire};
use super::server::{Server, assert_rows_passed};
use crate::util::{self, OPERATOR_KEY};
use crate::{LOCAL, SENDER, WRONG_KEY, message};

/// Limits of the server the SMTP table runs against: small enough that a row can cross
/// each of them in a few kilobytes.
const SMTP_LIMITS: &str = r#"
line_length_max = 512
message_size_max = "64KiB"
recipients_max = 5
errors_max = 10
idle_timeout = "5s"
"#;
const LINE_MAX: usize = 512;
const SIZE_MAX: usize = 64 * 1024;
const RECIPIENTS_MAX: usize = 5;
const ERRORS_MAX: usize = 10;

// ---------------------------------------------------------------------------------------
// SMTP: the table
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn bad_smtp_input_gets_a_clear_reply_and_the_server_keeps_serving() {
    let mut server = Server::start(SMTP_LIMITS).await;
    let cases = smtp_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = run_smtp_case(&server, case).await;
        server.expected += case.accepted;
        server.after_row(&case.name, outcome, &mut failures).await;
    }
    assert_rows_passed("SMTP", cases.len(), &failures);
    server.running.shutdown().await;
}

/// Where a row starts.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// The STARTTLS port after EHLO, before TLS.
    Plaintext,
    /// The implicit-TLS port after EHLO, not authenticated.
    Tls,
    /// The implicit-TLS port after EHLO and a successful AUTH.
    Authenticated,
}

/// How the connection must stand after a row's replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Still serving: `QUIT` is answered `221`.
    Open,
    /// Closed by herald, with nothing more said.
    Closed,
}

/// One row: what a client sends in one write, and every reply herald must give to it.
struct SmtpCase {
    name: String,
    start: Start,
    bytes: Vec<u8>,
    /// Each reply's code and enhanced status code (`""` where the reply has none).
    replies: Vec<(u16, &'static str)>,
    after: After,
    /// Messages the row itself gets accepted; 0 for every refusal.
    accepted: usize,
}

fn case(
    name: impl Into<String>,
    start: Start,
    bytes: impl Into<Vec<u8>>,
    replies: &[&[(u16, &'static str)]],
    after: After,
) -> SmtpCase {
    SmtpCase {
        name: name.into(),
        start,
        bytes: bytes.into(),
        replies: replies.concat(),
        after,
        accepted: 0,
    }
}

impl SmtpCase {
    fn accepting(mut self, messages: usize) -> Self {
        self.accepted = messages;
        self
    }
}

/// The replies to `MAIL`, `RCPT` and `DATA` of [`transaction`].
pub(super) const OPENED: &[(u16, &str)] = &[(250, "2.1.0"), (250, "2.1.5"), (354, "")];
/// The replies to `MAIL` and `RCPT`.
const ADDRESSED: &[(u16, &str)] = &[(250, "2.1.0"), (250, "2.1.5")];
/// A smuggled transaction refused: a bare CR or LF ends the session.
const BARE_IN_DATA: &[(u16, &str)] = &[(550, "5.6.0")];
const ACCEPTED: &[(u16, &str)] = &[(250, "2.0.0")];

/// `MAIL`, `RCPT` and `DATA` from the verified sender to `to`.
pub(super) fn transaction(to: &str) -> String {
    format!("MAIL FROM:<{SENDER}>\r\nRCPT TO:<{to}>\r\nDATA\r\n")
}

/// A message body of about `size` bytes in 78-character lines.
fn body_of(size: usize) -> String {
    let line = format!("{}\r\n", "b".repeat(76));
    line.repeat(size / line.len() + 1)
}

/// The ways a client and a server further down the line could disagree about where DATA
/// ends (SMTP smuggling, CVE-2023-51764 and its cousins). Herald must refuse each, and
/// take nothing after it as a command or a message.
const SMUGGLING: &[(&str, &[u8])] = &[
    ("<LF>.<LF>", b"\n.\n"),
    ("<LF>.<CR><LF>", b"\n.\r\n"),
    ("<CR>.<CR>", b"\r.\r"),
    ("<CR>.<CR><LF>", b"\r.\r\n"),
    ("<CR><LF>.<LF>", b"\r\n.\n"),
    ("<CR><LF>.<CR>", b"\r\n.\r"),
    ("<LF>.<CR>", b"\n.\r"),
    ("bare <CR> mid-data", b"\r"),
    ("bare <LF> mid-data", b"\n"),
];

fn smtp_cases() -> Vec<SmtpCase> {
    use After::{Closed, Open};
    use Start::{Authenticated, Plaintext, Tls};
    let valid_auth = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));
    let mut cases = vec![
        // Lines.
        case(
            "command line longer than line_length_max",
            Authenticated,
            format!("NOOP {}\r\n", "a".repeat(LINE_MAX)),
            &[&[(500, "5.5.6")]],
            Closed,
        ),
        case(
            "endless line without CRLF",
            Tls,
            "a".repeat(10 * LINE_MAX),
            &[&[(500, "5.5.6")]],
            Closed,
        ),
        case(
            "AUTH PLAIN response longer than line_length_max",
            Tls,
            format!("AUTH PLAIN\r\n{}\r\n", "QUFB".repeat(LINE_MAX / 2)),
            &[&[(334, ""), (500, "5.5.6")]],
            Closed,
        ),
        case(
            "NUL byte in a command",
            Tls,
            &b"NO\0OP\r\n"[..],
            &[&[(500, "5.5.2")]],
            Open,
        ),
        case(
            "NUL byte in MAIL FROM",
            Authenticated,
            &b"MAIL FROM:<hello\0@example.test>\r\n"[..],
            &[&[(500, "5.5.2")]],
            Open,
        ),
        case(
            "invalid UTF-8 in MAIL FROM",
            Authenticated,
            &b"MAIL FROM:<\xff\xfe@example.test>\r\n"[..],
            &[&[(500, "5.5.2")]],
            Open,
        ),
        case(
            "invalid UTF-8 in RCPT TO",
            Authenticated,
            &b"MAIL FROM:<hello@example.test>\r\nRCPT TO:<\xc3\x28@example.org>\r\n"[..],
            &[&[(250, "2.1.0"), (500, "5.5.2")]],
            Open,
        ),
        case(
            "overlong UTF-8 encoding of '>' in RCPT TO",
            Authenticated,
            &b"MAIL FROM:<hello@example.test>\r\nRCPT TO:<victim@example.org\xc0\xbe\r\n"[..],
            &[&[(250, "2.1.0"), (500, "5.5.2")]],
            Open,
        ),
        // Header and command injection through addresses and names.
        case(
            "CRLF inside MAIL FROM splits it into two commands, neither relays",
            Authenticated,
            "MAIL FROM:<hello@example.test\r\nRCPT TO:<victim@example.org>>\r\n",
            &[&[(501, "5.5.4"), (503, "5.5.1")]],
            Open,
        ),
        case(
            "bare LF inside MAIL FROM",
            Authenticated,
            "MAIL FROM:<hello@example.test\nRCPT TO:<victim@example.org>>\r\n",
            &[&[(500, "5.5.2")]],
            Closed,
        ),
        case(
            "bare CR inside RCPT TO (Bcc injection)",
            Authenticated,
            "MAIL FROM:<hello@example.test>\r\nRCPT TO:<victim@example.org\rBcc: other@example.org>\r\n",
            &[&[(250, "2.1.0"), (500, "5.5.2")]],
            Closed,
        ),
        case(
            "bare CR in the EHLO name (Received header injection)",
            Tls,
            "EHLO evil.test\rReceived: forged\r\n",
            &[&[(500, "5.5.2")]],
            Closed,
        ),
        case(
            "bare LF ends a command",
            Tls,
            "NOOP\nNOOP\r\n",
            &[&[(500, "5.5.2")]],
            Closed,
        ),
        // What DATA carries.
        case(
            // NUL is not allowed in a message sent with 8BITMIME (RFC 6152, RFC 5322 2.3)
            // and herald offers no BINARYMIME; software further down the line reads C
            // strings and cuts there.
            "NUL byte in the message body",
            Authenticated,
            format!(
                "{}{}Hel\0lo.\r\n.\r\n",
                transaction("user@example.org"),
                message(SENDER, "nul")
            ),
            &[OPENED, &[(554, "5.6.0")]],
            Open,
        ),
        case(
            "NUL byte in a header name",
            Authenticated,
            format!(
                "{}X-\0Bad: 1\r\n{}.\r\n",
                transaction("user@example.org"),
                message(SENDER, "nul")
            ),
            &[OPENED, &[(554, "5.6.0")]],
            Open,
        ),
        case(
            // RFC 5322 2.1.1: a line MUST be at most 998 characters; herald would sign and
            // relay a message that receivers refuse or rewrap (breaking DKIM). Say so now,
            // not bounce later.
            "header line longer than 998 characters",
            Authenticated,
            format!(
                "{}X-Long: {}\r\n{}.\r\n",
                transaction("user@example.org"),
                "h".repeat(5_000),
                message(SENDER, "long header")
            ),
            &[OPENED, &[(554, "5.6.0")]],
            Open,
        ),
        case(
            "header block of 2,000 fields under the size limit is taken whole",
            Authenticated,
            format!(
                "{}{}{}.\r\n",
                transaction("user@example.org"),
                (0..2_000).map(|i| format!("X-F{i:04}: v\r\n")).collect::<String>(),
                message(SENDER, "many headers")
            ),
            &[OPENED, ACCEPTED],
            Open,
        )
        .accepting(1),
        case(
            "40 KB header folded into short lines is taken whole",
            Authenticated,
            format!(
                "{}X-Folded: start\r\n{}{}.\r\n",
                transaction("user@example.org"),
                format!(" {}\r\n", "f".repeat(70)).repeat(550),
                message(SENDER, "folded header")
            ),
            &[OPENED, ACCEPTED],
            Open,
        )
        .accepting(1),
        case(
            "BDAT chunk holding a fake end of data and commands is one message",
            Authenticated,
            {
                let chunk = format!(
                    "{}.\r\nMAIL FROM:<{SENDER}>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\n",
                    message(SENDER, "bdat")
                );
                format!(
                    "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT {} LAST\r\n{chunk}",
                    chunk.len()
                )
            },
            &[ADDRESSED, ACCEPTED],
            Open,
        )
        .accepting(1),
        case(
            "BDAT smuggling: <LF>.<LF> inside a chunk",
            Authenticated,
            {
                let chunk = format!("{}\n.\nRSET\r\n", message(SENDER, "bdat"));
                format!(
                    "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT {} LAST\r\n{chunk}",
                    chunk.len()
                )
            },
            &[ADDRESSED, BARE_IN_DATA],
            Closed,
        ),
        case(
            "BDAT chunk after a refused sender holding a transaction from the verified one is dropped",
            Authenticated,
            {
                let chunk = format!(
                    "{}{}.\r\n",
                    transaction("victim@example.org"),
                    message(SENDER, "forged")
                );
                format!(
                    "MAIL FROM:<someone@unverified.example>\r\nRCPT TO:<user@example.org>\r\nBDAT {} LAST\r\n{chunk}NOOP\r\n",
                    chunk.len()
                )
            },
            &[&[(550, "5.7.1"), (503, "5.5.1"), (503, "5.5.1"), (250, "2.0.0")]],
            Open,
        ),
        case(
            "BDAT LAST chunk ending in a lone CR (a bare CR at the end of the message)",
            Authenticated,
            {
                let chunk = format!("{}\r", message(SENDER, "bdat").trim_end_matches("\r\n"));
                format!(
                    "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT {} LAST\r\n{chunk}",
                    chunk.len()
                )
            },
            &[ADDRESSED, BARE_IN_DATA],
            Closed,
        ),
        // Sizes, declared and real.
        case(
            "message over message_size_max",
            Authenticated,
            format!(
                "{}{}{}.\r\n",
                transaction("user@example.org"),
                message(SENDER, "big"),
                body_of(SIZE_MAX + 1024)
            ),
            &[OPENED, &[(552, "5.3.4")]],
            Closed,
        ),
        case(
            "MAIL SIZE= over message_size_max",
            Authenticated,
            format!("MAIL FROM:<{SENDER}> SIZE={}\r\n", SIZE_MAX + 1),
            &[&[(552, "5.3.4")]],
            Open,
        ),
        case(
            "MAIL SIZE= that understates the message",
            Authenticated,
            format!(
                "MAIL FROM:<{SENDER}> SIZE=100\r\nRCPT TO:<user@example.org>\r\nDATA\r\n{}{}.\r\n",
                message(SENDER, "liar"),
                body_of(SIZE_MAX + 1024)
            ),
            &[OPENED, &[(552, "5.3.4")]],
            Closed,
        ),
        case(
            "MAIL SIZE= that is not a number",
            Authenticated,
            format!("MAIL FROM:<{SENDER}> SIZE=-1\r\n"),
            &[&[(501, "5.5.4")]],
            Open,
        ),
        case(
            "BDAT chunk over message_size_max",
            Authenticated,
            format!(
                "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT {} LAST\r\n",
                SIZE_MAX + 1
            ),
            &[ADDRESSED, &[(552, "5.3.4")]],
            Closed,
        ),
        case(
            "BDAT size beyond 64 bits",
            Authenticated,
            format!("MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT 99999999999999999999999 LAST\r\n"),
            &[ADDRESSED, &[(501, "5.5.4")]],
            Open,
        ),
        case(
            "BDAT chunks that add up past message_size_max",
            Authenticated,
            {
                let chunk = format!("{}{}", message(SENDER, "chunks"), body_of(SIZE_MAX / 2));
                format!(
                    "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT {}\r\n{chunk}BDAT {} LAST\r\n",
                    chunk.len(),
                    SIZE_MAX / 2 + 1024
                )
            },
            &[ADDRESSED, ACCEPTED, &[(552, "5.3.4")]],
            Closed,
        ),
        // Pipelining abuse.
        case(
            "500 pipelined NOOPs",
            Tls,
            "NOOP\r\n".repeat(500),
            &[&[(250, "2.0.0")].repeat(500)],
            Open,
        ),
        case(
            "pipelined RCPTs past recipients_max",
            Authenticated,
            format!(
                "MAIL FROM:<{SENDER}>\r\n{}RSET\r\n",
                (0..RECIPIENTS_MAX + 3)
                    .map(|i| format!("RCPT TO:<r{i}@example.org>\r\n"))
                    .collect::<String>()
            ),
            &[
                &[(250, "2.1.0")],
                &[(250, "2.1.5")].repeat(RECIPIENTS_MAX),
                &[(452, "4.5.3")].repeat(3),
                &[(250, "2.0.0")],
            ],
            Open,
        ),
        case(
            "pipelined errors past errors_max",
            Tls,
            "BOGUS\r\n".repeat(ERRORS_MAX + 2),
            &[&[(500, "5.5.1")].repeat(ERRORS_MAX), &[(421, "4.7.0")]],
            Closed,
        ),
        case(
            "commands pipelined after QUIT",
            Tls,
            format!("QUIT\r\n{}", transaction("victim@example.org")),
            &[&[(221, "2.0.0")]],
            Closed,
        ),
        case(
            "message text pipelined after a refused DATA is never a message",
            Authenticated,
            format!(
                "MAIL FROM:<{SENDER}>\r\nRCPT TO:<no-domain>\r\nDATA\r\n{}.\r\n",
                message(SENDER, "refused")
            ),
            &[
                &[(250, "2.1.0"), (501, "5.1.3"), (503, "5.5.1")],
                &[(500, "5.5.1")].repeat(6),
            ],
            Open,
        ),
        case(
            "AUTH, MAIL, RCPT and DATA pipelined before STARTTLS",
            Plaintext,
            format!("{valid_auth}\r\n{}", transaction("victim@example.org")),
            &[&[(530, "5.7.0"), (530, "5.7.0"), (503, "5.5.1"), (503, "5.5.1")]],
            Open,
        ),
        // AUTH.
        case(
            "AUTH with a wrong key",
            Tls,
            format!("AUTH PLAIN {}\r\n", util::auth_plain(WRONG_KEY)),
            &[&[(535, "5.7.8")]],
            Open,
        ),
        case(
            "AUTH PLAIN response that is not base64",
            Tls,
            "AUTH PLAIN !!not-base64!!\r\n",
            &[&[(501, "5.5.2")]],
            Open,
        ),
        case(
            "AUTH PLAIN response without NUL separators",
            Tls,
            "AUTH PLAIN dGVzdA==\r\n",
            &[&[(501, "5.5.2")]],
            Open,
        ),
        case(
            "AUTH LOGIN user name that is not UTF-8",
            Tls,
            "AUTH LOGIN /w==\r\n",
            &[&[(501, "5.5.2")]],
            Open,
        ),
        case(
            "unknown AUTH mechanism",
            Tls,
            "AUTH CRAM-MD5\r\n",
            &[&[(504, "5.5.4")]],
            Open,
        ),
        case(
            "AUTH cancelled with *",
            Tls,
            "AUTH PLAIN\r\n*\r\n",
            &[&[(334, ""), (501, "5.7.0")]],
            Open,
        ),
        case(
            "AUTH twice",
            Authenticated,
            format!("{valid_auth}\r\n"),
            &[&[(503, "5.5.1")]],
            Open,
        ),
        case(
            "MAIL without AUTH over TLS",
            Tls,
            transaction("victim@example.org"),
            &[&[(530, "5.7.0"), (503, "5.5.1"), (503, "5.5.1")]],
            Open,
        ),
        case(
            "STARTTLS on the implicit-TLS port",
            Tls,
            "STARTTLS\r\n",
            &[&[(503, "5.5.1")]],
            Open,
        ),
        case(
            "STARTTLS with an argument",
            Plaintext,
            "STARTTLS now\r\n",
            &[&[(501, "5.5.4")]],
            Open,
        ),
    ];
    for (name, terminator) in SMUGGLING {
        let mut bytes = format!(
            "{}{}smuggled body",
            transaction("user@example.org"),
            message(SENDER, "first")
        )
        .into_bytes();
        bytes.extend_from_slice(terminator);
        bytes.extend_from_slice(
            format!(
                "{}{}.\r\n",
                transaction("victim@example.org"),
                message(SENDER, "smuggled")
            )
            .as_bytes(),
        );
        cases.push(case(
            format!("DATA smuggling: {name}"),
            Authenticated,
            bytes,
            &[OPENED, BARE_IN_DATA],
            Closed,
        ));
    }
    cases
}

/// Runs one row on a fresh connection: sends its bytes in one write, reads the replies it
/// names, then checks that the connection is open or closed as it says.
async fn run_smtp_case(server: &Server, case: &SmtpCase) -> Result<(), String> {
    let mut client = open(server, case.start).await?;
    let outcome = async {
        client.send(&case.bytes).await;
        for (index, &(code, enhanced)) in case.replies.iter().enumerate() {
            client
                .expect_reply(code, enhanced)
                .await
                .map_err(|why| format!("reply {} of {}: {why}", index + 1, case.replies.len()))?;
        }
        match case.after {
            After::Closed => client.expect_closed().await,
            After::Open => client.command("QUIT", 221, "2.0.0").await.map(drop),
        }
    }
    .await;
    outcome.map_err(|why| format!("{why}\n{}", client.transcript))
}

/// A connection at `start`.
async fn open(server: &Server, start: Start) -> Result<Client<Box<dyn Wire>>, String> {
    let mut client = match start {
        Start::Plaintext => Client::plain(server.starttls(), LOCAL).await?.boxed(),
        Start::Tls | Start::Authenticated => Client::implicit(server.implicit(), LOCAL).await?.boxed(),
    };
    client.command("EHLO client.test", 250, "").await?;
    if matches!(start, Start::Authenticated) {
        let auth = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));
        client.command(&auth, 235, "2.7.0").await?;
    }
    Ok(client)
}

// ---------------------------------------------------------------------------------------
// SMTP: STARTTLS injection, AUTH brute force
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn starttls_discards_commands_pipelined_in_plaintext() {
    let mut server = Server::start(SMTP_LIMITS).await;
    let mut plain = Client::plain(server.starttls(), LOCAL).await.expect("connect");
    // CVE-2011-0411: commands sent in plaintext behind STARTTLS must not run inside TLS.
    let injected = format!(
        "EHLO client.test\r\nSTARTTLS\r\nEHLO injected.test\r\nAUTH PLAIN {}\r\n{}{}.\r\n",
        util::auth_plain(OPERATOR_KEY),
        transaction("victim@example.org"),
        message(SENDER, "injected")
    );
    plain.send(injected.as_bytes()).await;
    let ehlo = plain.expect_reply(250, "").await.expect("EHLO");
    assert!(ehlo.text.contains("STARTTLS"), "{}", plain.transcript);
    plain.expect_reply(220, "2.0.0").await.expect("ready to start TLS");
    // Nothing else may come in plaintext: `starttls` refuses if anything did.
    let mut tls = plain.starttls().await.expect("TLS after STARTTLS");
    let mail = format!("MAIL FROM:<{SENDER}>");
    let steps = [
        // The injected EHLO is gone: the session is as before EHLO.
        (mail.as_str(), 503, "5.5.1"),
        ("EHLO client.test", 250, ""),
        // The injected AUTH is gone too.
        (mail.as_str(), 530, "5.7.0"),
        ("STARTTLS", 503, "5.5.1"),
    ];
    for (line, code, enhanced) in steps {
        if let Err(why) = tls.command(line, code, enhanced).await {
            panic!("after STARTTLS, {line}: {why}\n{}", tls.transcript);
        }
    }
    let ehlo = tls.transcript.clone();
    assert!(ehlo.contains("AUTH PLAIN LOGIN"), "{ehlo}");
    tls.command("QUIT", 221, "2.0.0").await.expect("QUIT");
    server.check_recorded().await.expect("nothing injected was recorded");
    server.check_healthy(LOCAL).await.expect("healthy");
    server.running.shutdown().await;
}

#[tokio::test]
async fn auth_brute_force_is_slowed_then_locked_out_per_address() {
    let mut server = Server::start("auth_failures_max = 3\nauth_lockout = \"10m\"\n").await;
    let attacker = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let wrong = format!("AUTH PLAIN {}", util::auth_plain(WRONG_KEY));
    let right = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));

    let mut client = Client::implicit(server.implicit(), attacker).await.expect("connect");
    client.command("EHLO attacker.test", 250, "").await.expect("EHLO");
    for failure in 1..=3u32 {
        let started = Instant::now();
        if let Err(why) = client.command(&wrong, 535, "5.7.8").await {
            panic!("failure {failure}: {why}\n{}", client.transcript);
        }
        // Each failure from an address is answered later than the one before.
        let delay = Duration::from_millis(200) * failure;
        assert!(
            started.elapsed() >= delay,
            "failure {failure} answered after {:?}, before the {delay:?} slowdown",
            started.elapsed()
        );
    }
    // Locked out: even the right key is refused now, and the connection ends.
    client.command(&right, 421, "4.7.0").await.expect("locked out");
    client.expect_closed().await.expect("closed after the lockout");

    // The lockout holds for new connections from the address, on either port.
    let mut again = Client::implicit(server.implicit(), attacker).await.expect("connect");
    again.command("EHLO attacker.test", 250, "").await.expect("EHLO");
    again.command(&right, 421, "4.7.0").await.expect("still locked out");
    let mut plain = Client::plain(server.starttls(), attacker).await.expect("connect");
    plain.command("EHLO attacker.test", 250, "").await.expect("EHLO");
    plain.command("STARTTLS", 220, "2.0.0").await.expect("STARTTLS");
    let mut upgraded = plain.starttls().await.expect("TLS");
    upgraded.command("EHLO attacker.test", 250, "").await.expect("EHLO");
    upgraded
        .command(&right, 421, "4.7.0")
        .await
        .expect("locked out after STARTTLS");

    // Pipelining the guesses gains nothing: each is slowed, and the lockout ends them.
    let pipelined = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
    let mut burst = Client::implicit(server.implicit(), pipelined).await.expect("connect");
    let started = Instant::now();
    burst
        .send(format!("EHLO burst.test\r\n{}", format!("{wrong}\r\n").repeat(6)).as_bytes())
        .await;
    for (code, enhanced) in [
        (250, ""),
        (535, "5.7.8"),
        (535, "5.7.8"),
        (535, "5.7.8"),
        (421, "4.7.0"),
    ] {
        if let Err(why) = burst.expect_reply(code, enhanced).await {
            panic!("pipelined guesses: {why}\n{}", burst.transcript);
        }
    }
    burst.expect_closed().await.expect("closed after the lockout");
    assert!(started.elapsed() >= Duration::from_millis(200 + 400 + 600));

    // Other addresses are served as before.
    server.check_recorded().await.expect("nothing recorded");
    server.check_healthy(LOCAL).await.expect("127.0.0.1 still submits");
    server
        .check_healthy(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4)))
        .await
        .expect("127.0.0.4 still submits");
    server.running.shutdown().await;
}
