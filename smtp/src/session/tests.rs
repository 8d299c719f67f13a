//! Whole sessions against the state machine, with a scripted client.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::*;

fn settings(starttls: bool) -> Settings {
    Settings {
        hostname: "mail.herald.test".into(),
        limits: Limits {
            recipients_max: 3,
            size_max: 1000,
            errors_max: 5,
            messages_max: 2,
            ..Limits::default()
        },
        starttls,
        mx: false,
        trusted: false,
    }
}

/// Feeds `input`, answering driver actions as a happy driver would (credentials
/// `resend`/`re_good` are valid, deliveries get ids), and returns the wire replies.
fn run(session: &mut Session, input: &[u8]) -> (String, Vec<Envelope>) {
    let mut out = String::new();
    let mut delivered = Vec::new();
    let mut rest = input.to_vec();
    loop {
        let (used, actions) = session.feed(&rest);
        rest.drain(..used);
        let mut progressed = used > 0;
        let mut queue: Vec<Action> = actions;
        while !queue.is_empty() {
            let action = queue.remove(0);
            match action {
                Action::Reply(reply) => out.push_str(&String::from_utf8(reply.to_bytes()).expect("text")),
                Action::StartTls => {
                    rest.clear();
                    session.tls_started();
                    progressed = true;
                }
                Action::Authenticate { username, password } => {
                    queue.extend(session.authenticated(username == "resend" && password == "re_good"));
                    progressed = true;
                }
                Action::CheckSender { from } => {
                    let outcome = if from.ends_with("@unverified.test") {
                        Err(Reply::new(550, "5.7.1", "The unverified.test domain is not verified"))
                    } else {
                        Ok(())
                    };
                    queue.extend(session.sender_checked(outcome));
                    progressed = true;
                }
                Action::CheckRecipient { to } => {
                    let outcome = if to.ends_with("@bounces.example.test") {
                        Ok(())
                    } else {
                        Err(Reply::new(550, "5.7.1", "Relay access denied"))
                    };
                    queue.extend(session.recipient_checked(outcome));
                    progressed = true;
                }
                Action::Deliver(envelope) => {
                    delivered.push(envelope);
                    queue.extend(session.delivered(Ok(format!("id-{}", delivered.len()))));
                    progressed = true;
                }
                Action::Close => return (out, delivered),
            }
        }
        if !progressed || rest.is_empty() {
            return (out, delivered);
        }
    }
}

fn plain(user: &str, password: &str) -> String {
    STANDARD.encode(format!("\0{user}\0{password}"))
}

fn codes(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.as_bytes().get(3) == Some(&b' '))
        .map(|l| &l[..3])
        .collect()
}

#[test]
fn a_pipelined_submission_over_tls_is_delivered() {
    let mut session = Session::new(settings(false), true);
    let script = format!(
        "EHLO client.test\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test> SIZE=100\r\nRCPT TO:<b@example.org>\r\nRCPT TO:<c@example.org>\r\nDATA\r\nSubject: hi\r\n\r\n..dot\r\n.\r\nQUIT\r\n",
        plain("resend", "re_good")
    );
    let (out, delivered) = run(&mut session, script.as_bytes());
    assert_eq!(
        codes(&out),
        vec!["250", "235", "250", "250", "250", "354", "250", "221"],
        "{out}"
    );
    assert!(
        out.contains("250-AUTH PLAIN LOGIN") || out.contains("250 AUTH PLAIN LOGIN"),
        "{out}"
    );
    assert!(!out.contains("STARTTLS"), "not offered inside TLS");
    assert!(out.contains("250 2.0.0 OK id-1"));
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].from, "a@example.test");
    assert_eq!(delivered[0].recipients, vec!["b@example.org", "c@example.org"]);
    assert_eq!(delivered[0].message, b"Subject: hi\r\n\r\n.dot\r\n");
}

#[test]
fn before_tls_there_is_no_auth_and_no_mail() {
    let mut session = Session::new(settings(true), false);
    let (out, _) = run(
        &mut session,
        format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\n",
            plain("resend", "re_good")
        )
        .as_bytes(),
    );
    assert!(out.contains("STARTTLS"), "{out}");
    assert!(!out.contains("AUTH PLAIN LOGIN"), "{out}");
    assert_eq!(codes(&out), vec!["250", "530", "530"]);
    assert!(out.contains("530 5.7.0 Must issue a STARTTLS command first"));
}

#[test]
fn an_mx_listener_takes_mail_without_auth_or_tls_for_checked_recipients_only() {
    let mut session = Session::new(
        Settings {
            mx: true,
            ..settings(true)
        },
        false,
    );
    let (out, delivered) = run(
        &mut session,
        b"EHLO mx.example.org\r\nMAIL FROM:<>\r\nRCPT TO:<someone@elsewhere.test>\r\nRCPT TO:<0190@bounces.example.test>\r\nDATA\r\nSubject: bounce\r\n\r\nx\r\n.\r\n",
    );
    assert_eq!(codes(&out), vec!["250", "250", "550", "250", "354", "250"], "{out}");
    assert!(out.contains("550 5.7.1 Relay access denied"), "{out}");
    assert_eq!(delivered.len(), 1);
    assert!(delivered[0].inbound);
    assert_eq!(delivered[0].from, "");
    assert_eq!(delivered[0].recipients, vec!["0190@bounces.example.test"]);
    // The next transaction starts over: inbound again, never a submission.
    let (out, _) = run(
        &mut session,
        b"MAIL FROM:<a@example.org>\r\nRCPT TO:<b@example.org>\r\n",
    );
    assert_eq!(codes(&out), vec!["250", "550"], "{out}");
}

#[test]
fn a_trusted_client_submits_without_auth_or_tls_and_its_sender_is_checked() {
    for mx in [false, true] {
        let mut session = Session::new(
            Settings {
                trusted: true,
                mx,
                ..settings(true)
            },
            false,
        );
        let (out, delivered) = run(
            &mut session,
            b"EHLO app.internal\r\nMAIL FROM:<a@unverified.test>\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\nx\r\n.\r\n",
        );
        assert_eq!(
            codes(&out),
            vec!["250", "550", "250", "250", "354", "250"],
            "mx {mx}: {out}"
        );
        assert!(!delivered[0].inbound, "a submission, not mail to herald");
        // AUTH still works (over TLS) and then speaks for the session.
        let mut session = Session::new(
            Settings {
                trusted: true,
                mx,
                ..settings(false)
            },
            true,
        );
        let script = format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\n",
            plain("resend", "re_good")
        );
        let (out, _) = run(&mut session, script.as_bytes());
        assert_eq!(codes(&out), vec!["250", "235", "250"], "{out}");
    }
}

#[test]
fn an_authenticated_client_on_an_mx_listener_submits() {
    let mut session = Session::new(
        Settings {
            mx: true,
            ..settings(false)
        },
        true,
    );
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\nx\r\n.\r\n",
        plain("resend", "re_good")
    );
    let (out, delivered) = run(&mut session, script.as_bytes());
    assert_eq!(codes(&out), vec!["250", "235", "250", "250", "354", "250"], "{out}");
    assert!(!delivered[0].inbound);
}

#[test]
fn starttls_discards_what_was_pipelined_after_it_and_starts_over() {
    let mut session = Session::new(settings(true), false);
    let (out, delivered) = run(
        &mut session,
        b"EHLO c\r\nSTARTTLS\r\nMAIL FROM:<injected@evil.test>\r\n",
    );
    assert_eq!(codes(&out), vec!["250", "220"], "{out}");
    assert!(delivered.is_empty());
    let (out, _) = run(&mut session, b"MAIL FROM:<a@example.test>\r\n");
    assert!(
        out.starts_with("503 5.5.1 Send EHLO first"),
        "the session restarted before EHLO: {out}"
    );
    let (out, _) = run(&mut session, b"EHLO c\r\n");
    assert!(out.contains("AUTH PLAIN LOGIN") && !out.contains("STARTTLS"), "{out}");
}

#[test]
fn mail_needs_authentication_and_bad_credentials_are_refused() {
    let mut session = Session::new(settings(false), true);
    let (out, _) = run(
        &mut session,
        format!(
            "EHLO c\r\nMAIL FROM:<a@example.test>\r\nAUTH PLAIN {}\r\n",
            plain("resend", "re_bad")
        )
        .as_bytes(),
    );
    assert_eq!(codes(&out), vec!["250", "530", "535"], "{out}");
    assert!(out.contains("530 5.7.0 Authentication required"));
    assert!(out.contains("535 5.7.8"));
    let (out, _) = run(
        &mut session,
        format!(
            "AUTH LOGIN\r\n{}\r\n{}\r\n",
            STANDARD.encode("resend"),
            STANDARD.encode("re_good")
        )
        .as_bytes(),
    );
    assert_eq!(codes(&out), vec!["334", "334", "235"], "{out}");
    let (out, _) = run(&mut session, b"AUTH PLAIN\r\n");
    assert!(out.starts_with("503"), "{out}");
}

#[test]
fn bdat_chunks_assemble_one_message() {
    let mut session = Session::new(settings(false), true);
    let (_, _) = run(
        &mut session,
        format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\n",
            plain("resend", "re_good")
        )
        .as_bytes(),
    );
    let (out, delivered) = run(
        &mut session,
        b"BDAT 14\r\nSubject: x\r\n\r\nBDAT 6 LAST\r\nbody\r\nNOOP\r\n",
    );
    assert_eq!(codes(&out), vec!["250", "250", "250"], "{out}");
    assert_eq!(delivered[0].message, b"Subject: x\r\n\r\nbody\r\n");
}

#[test]
fn a_sender_the_driver_refuses_is_refused_at_mail_and_pipelining_stays_in_step() {
    let mut session = Session::new(settings(false), true);
    let (out, delivered) = run(
        &mut session,
        format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@unverified.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\n\
             MAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\nSubject: x\r\n\r\nhi\r\n.\r\n",
            plain("resend", "re_good")
        )
        .as_bytes(),
    );
    let replies: Vec<&str> = out.lines().filter(|l| l.as_bytes().get(3) == Some(&b' ')).collect();
    assert_eq!(
        replies[2..],
        [
            "550 5.7.1 The unverified.test domain is not verified",
            "503 5.5.1 Send MAIL first",
            "503 5.5.1 Send RCPT first",
            "250 2.1.0 OK",
            "250 2.1.5 OK",
            "354 Start mail input; end with <CRLF>.<CRLF>",
            "250 2.0.0 OK id-1",
        ],
        "{out}"
    );
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].from, "a@example.test");
}

#[test]
fn a_chunk_after_a_refused_sender_is_dropped_never_read_as_commands() {
    let mut session = Session::new(settings(false), true);
    let smuggled =
        "MAIL FROM:<a@example.test>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\nSubject: forged\r\n\r\nhi\r\n.\r\n";
    let script = format!(
        "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@unverified.test>\r\nRCPT TO:<b@example.org>\r\nBDAT {} LAST\r\n{smuggled}NOOP\r\n",
        plain("resend", "re_good"),
        smuggled.len()
    );
    let (out, delivered) = run(&mut session, script.as_bytes());
    assert!(delivered.is_empty(), "{out}");
    assert_eq!(
        codes(&out),
        vec!["250", "235", "550", "503", "503", "250"],
        "the chunk is one refusal, then NOOP: {out}"
    );
    let mut big = Session::new(settings(false), true);
    let (out, _) = run(
        &mut big,
        format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nBDAT 5000 LAST\r\n",
            plain("resend", "re_good")
        )
        .as_bytes(),
    );
    assert!(out.ends_with("rather than reading a chunk this large\r\n"), "{out}");
    assert!(big.is_closed());
}

#[test]
fn a_last_bdat_chunk_ending_in_a_lone_cr_is_a_bare_cr() {
    for chunks in [
        &b"BDAT 13 LAST\r\nSubject: x\r\n\r"[..],
        b"BDAT 13\r\nSubject: x\r\n\rBDAT 0 LAST\r\n",
    ] {
        let mut session = Session::new(settings(false), true);
        let mut script = format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\n",
            plain("resend", "re_good")
        )
        .into_bytes();
        script.extend_from_slice(chunks);
        let (out, delivered) = run(&mut session, &script);
        assert!(delivered.is_empty(), "{out}");
        assert!(
            out.ends_with(
                "550 5.6.0 Bare CR or LF in message data; lines must end with CRLF. Closing the connection\r\n"
            ),
            "{out}"
        );
        assert!(session.is_closed());
    }
}

#[test]
fn smuggled_data_closes_the_session_and_delivers_nothing() {
    for data in [
        &b"Subject: x\r\n\r\nhi\n.\nMAIL FROM:<x@evil.test>\r\n"[..],
        b"Subject: x\r\n\r\nhi\r\n.\rMAIL\r\n",
        b"hi\r.\r\n.\r\n",
    ] {
        let mut session = Session::new(settings(false), true);
        let mut script = format!(
            "EHLO c\r\nAUTH PLAIN {}\r\nMAIL FROM:<a@example.test>\r\nRCPT TO:<b@example.org>\r\nDATA\r\n",
            plain("resend", "re_good")
        )
        .into_bytes();
        script.extend_from_slice(data);
        let (out, delivered) = run(&mut session, &script);
        assert!(delivered.is_empty(), "{:?}", String::from_utf8_lossy(data));
        assert!(out.contains("550 5.6.0"), "{out}");
        assert!(session.is_closed());
    }
}

#[test]
fn limits_give_standard_codes() {
    let mut session = Session::new(settings(false), true);
    let auth = format!("EHLO c\r\nAUTH PLAIN {}\r\n", plain("resend", "re_good"));
    run(&mut session, auth.as_bytes());
    let (out, _) = run(&mut session, b"MAIL FROM:<a@example.test> SIZE=5000\r\n");
    assert!(out.starts_with("552 5.3.4"), "{out}");
    let (out, _) = run(&mut session, b"MAIL FROM:<a@example.test>\r\nRCPT TO:<1@x.test>\r\nRCPT TO:<2@x.test>\r\nRCPT TO:<3@x.test>\r\nRCPT TO:<4@x.test>\r\n");
    assert!(out.ends_with("452 4.5.3 Too many recipients (at most 3)\r\n"), "{out}");
    let (out, _) = run(
        &mut session,
        format!("DATA\r\n{}\r\n.\r\n", "x".repeat(2000)).as_bytes(),
    );
    assert!(out.contains("552 5.3.4"), "{out}");
    assert!(session.is_closed());

    let mut long = Session::new(settings(false), true);
    let (out, _) = run(&mut long, format!("NOOP {}\r\n", "x".repeat(3000)).as_bytes());
    assert!(out.starts_with("500 5.5.6"), "{out}");
}

#[test]
fn a_declared_size_is_held_from_the_start_and_forgotten_with_its_transaction() {
    let mut session = Session::new(settings(false), true);
    let auth = format!("EHLO c\r\nAUTH PLAIN {}\r\n", plain("resend", "re_good"));
    run(&mut session, auth.as_bytes());
    let held = |session: &Session| match &session.phase {
        Phase::Data(receiver) => receiver.capacity(),
        other => panic!("not in DATA: {other:?}"),
    };
    let (out, _) = run(
        &mut session,
        b"MAIL FROM:<a@example.test> SIZE=600\r\nRCPT TO:<1@x.test>\r\nDATA\r\n",
    );
    assert!(
        out.ends_with("354 Start mail input; end with <CRLF>.<CRLF>\r\n"),
        "{out}"
    );
    assert!(held(&session) >= 600, "{}", held(&session));
    let (out, delivered) = run(&mut session, b"Subject: hi\r\n\r\nbody\r\n.\r\n");
    assert_eq!(delivered.len(), 1, "{out}");
    assert_eq!(delivered[0].message, b"Subject: hi\r\n\r\nbody\r\n");
    // The next transaction declares nothing: nothing is held for it.
    run(
        &mut session,
        b"MAIL FROM:<a@example.test>\r\nRCPT TO:<1@x.test>\r\nDATA\r\n",
    );
    assert_eq!(held(&session), 0);
}

#[test]
fn too_many_errors_close_the_session() {
    let mut session = Session::new(settings(false), true);
    let (out, _) = run(&mut session, b"FOO\r\nBAR\r\nBAZ\r\nQUX\r\nQUUX\r\nNOOP\r\n");
    assert_eq!(codes(&out), vec!["500", "500", "500", "500", "500", "421"], "{out}");
    assert!(session.is_closed());
}

#[test]
fn bare_line_endings_in_commands_close_the_session() {
    let mut session = Session::new(settings(false), true);
    let (out, _) = run(&mut session, b"EHLO c\nMAIL FROM:<a@b.test>\r\n");
    assert!(out.starts_with("500 5.5.2"), "{out}");
    assert!(session.is_closed());
}

#[test]
fn rset_vrfy_help_noop_and_sequence_errors() {
    let mut session = Session::new(settings(false), true);
    let (out, _) = run(
        &mut session,
        b"RCPT TO:<b@x.test>\r\nDATA\r\nVRFY bob\r\nHELP\r\nNOOP\r\nRSET\r\n",
    );
    assert_eq!(codes(&out), vec!["503", "503", "252", "214", "250", "250"], "{out}");
}

#[test]
fn an_inbound_transaction_is_held_to_the_inbound_size() {
    let big = Settings {
        mx: true,
        limits: Limits {
            size_max: 40 * 1024 * 1024,
            ..Limits::default()
        },
        ..settings(false)
    };
    let mut session = Session::new(big, false);
    let (out, _) = run(
        &mut session,
        b"EHLO mx.example.org\r\nMAIL FROM:<> SIZE=20000000\r\nMAIL FROM:<> SIZE=2000\r\n",
    );
    assert_eq!(codes(&out), vec!["250", "552", "250"], "{out}");
    assert!(out.contains(&format!("larger than {INBOUND_SIZE_MAX} bytes")), "{out}");
}
