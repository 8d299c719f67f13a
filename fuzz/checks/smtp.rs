//! The properties the SMTP fuzz targets check, shared with the corpus replay test
//! (`smtp/tests/fuzz_corpus.rs`), which runs every committed input through them in CI.

use herald_smtp::{Action, DataReceiver, Limits, Reply, Session, Settings};

/// Line reading and command parsing: nothing panics, and a line read never holds a CR
/// or LF.
pub fn command(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((line, consumed))) = herald_smtp::read_line(rest, 512) {
        assert!(!line.contains(&b'\r') && !line.contains(&b'\n'));
        let _ = herald_smtp::parse(line);
        rest = &rest[consumed..];
    }
}

/// The DATA receiver: nothing panics, a completed message has no bare CR or LF, and
/// stuffing then receiving it gives it back.
pub fn data(data: &[u8]) {
    let mut receiver = DataReceiver::new(1 << 20);
    let Ok(progress) = receiver.feed(data) else { return };
    if !progress.done {
        return;
    }
    let message = receiver.into_message();
    for (i, byte) in message.iter().enumerate() {
        match byte {
            b'\r' => assert_eq!(message.get(i + 1), Some(&b'\n')),
            b'\n' => assert_eq!(i.checked_sub(1).map(|p| message[p]), Some(b'\r')),
            _ => {}
        }
    }
    let mut again = DataReceiver::new(1 << 20);
    let stuffed = herald_smtp::stuff(&message);
    assert!(again.feed(&stuffed).map(|p| p.done).unwrap_or(false));
    assert_eq!(again.into_message(), message);
}

/// A whole session, as a client could drive it: the input is fed in pieces (its first
/// byte picks the piece size), every AUTH succeeds when the password is `good` and
/// every message is accepted. Nothing panics; no message is handed over before AUTH
/// succeeded, but inbound mail on an `mx` listener to checked recipients; no delivered
/// message holds a bare CR or LF; after a close nothing more happens.
pub fn session(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first % 64) + 1;
    let settings = Settings {
        hostname: "fuzz.test".to_owned(),
        limits: Limits {
            line_max: 512,
            size_max: 64 * 1024,
            recipients_max: 5,
            messages_max: 5,
            errors_max: 5,
        },
        starttls: first & 0x80 != 0,
        mx: first & 0x20 != 0,
        trusted: first & 0x10 != 0,
    };
    let mx = settings.mx;
    let trusted = settings.trusted;
    let mut session = Session::new(settings, first & 0x40 != 0);
    let mut authenticated = false;
    let mut buffer = Vec::new();
    for chunk in input.chunks(piece) {
        buffer.extend_from_slice(chunk);
        loop {
            let (used, actions) = session.feed(&buffer);
            buffer.drain(..used);
            let mut queue: std::collections::VecDeque<Action> = actions.into();
            let mut resumed = false;
            while let Some(action) = queue.pop_front() {
                match action {
                    Action::Reply(reply) => {
                        let text = reply.to_bytes();
                        assert!(text.ends_with(b"\r\n"));
                    }
                    Action::Close => {
                        assert!(session.is_closed());
                        return;
                    }
                    Action::StartTls => {
                        buffer.clear();
                        session.tls_started();
                        authenticated = false;
                    }
                    Action::Authenticate { password, .. } => {
                        authenticated = password == "good";
                        queue.extend(session.authenticated(authenticated));
                        resumed = true;
                    }
                    Action::CheckSender { .. } => {
                        assert!(
                            authenticated || trusted,
                            "a sender was checked without AUTH off a trusted network"
                        );
                        queue.extend(session.sender_checked(Ok(())));
                        resumed = true;
                    }
                    Action::CheckRecipient { to } => {
                        assert!(
                            mx && !authenticated && !trusted,
                            "an inbound recipient off an mx listener"
                        );
                        let outcome = if to.ends_with("@bounces.fuzz.test") {
                            Ok(())
                        } else {
                            Err(Reply::new(550, "5.7.1", "refused"))
                        };
                        queue.extend(session.recipient_checked(outcome));
                        resumed = true;
                    }
                    Action::Deliver(envelope) => {
                        assert!(
                            authenticated || trusted || (mx && envelope.inbound),
                            "a message was handed over without AUTH off an mx listener"
                        );
                        assert!(
                            !(trusted && envelope.inbound),
                            "a trusted client's message taken as inbound"
                        );
                        assert!(
                            !envelope.inbound || envelope.recipients.iter().all(|r| r.ends_with("@bounces.fuzz.test")),
                            "an inbound message to an unchecked recipient"
                        );
                        for (i, byte) in envelope.message.iter().enumerate() {
                            match byte {
                                b'\r' => assert_eq!(envelope.message.get(i + 1), Some(&b'\n')),
                                b'\n' => assert_eq!(i.checked_sub(1).map(|p| envelope.message[p]), Some(b'\r')),
                                _ => {}
                            }
                        }
                        queue.extend(session.delivered(Ok("id".to_owned())));
                        resumed = true;
                    }
                }
            }
            if session.is_closed() {
                return;
            }
            if !resumed || buffer.is_empty() {
                break;
            }
        }
    }
}
