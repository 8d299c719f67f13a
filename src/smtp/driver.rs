//! One SMTP connection: greeting, the read-feed-act loop, STARTTLS, credentials and
//! delivery, bounded by an idle timeout, a session time limit and shutdown.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use herald_queue::Refusal;
use herald_smtp::{Action, Envelope, Limits, Reply, Session, Settings};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::ListenerContext;
use super::cork::Corked;
use crate::accounts::Caller;
use crate::config::TlsMode;
use crate::emails::accept::accept;
use crate::emails::address::Mailbox;
use crate::emails::idempotency::{self, Answer, InFlight, Outcome};
use crate::emails::raw::{self, RawError};
use crate::emails::record::Source;
use crate::emails::submit::{self, SendError, Sender};
use crate::server::AppState;
use crate::shutdown::Shutdown;

/// Time a session may run past `[smtp] session_time_max` to finish the transaction it is
/// in before it is cut off without a reply.
const SESSION_GRACE: Duration = Duration::from_secs(30);
/// Time allowed for a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest message parsed on the session's own task; a larger one is parsed on a
/// blocking thread so that it cannot stall the other sessions of an async worker.
const INLINE_PREPARE_MAX: usize = 256 * 1024;
/// Bytes of room made in the read buffer when it runs low: reads go straight into the
/// buffer's spare capacity, nothing is zeroed or copied.
const READ_CHUNK: usize = 16 * 1024;
/// Spare room below which the read buffer grows before the next read.
const READ_MIN: usize = 2 * 1024;

/// How a run of the session loop ended.
enum Ended {
    /// The session is over; the bytes are its last reply, still to be written (over TLS
    /// they go out in one write with the `close_notify`).
    Closed(Vec<u8>),
    StartTls,
}

/// Serves one connection.
pub async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    mode: TlsMode,
    mx: bool,
    context: &ListenerContext,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let configured = &context.state.config().smtp.limits;
    let settings = Settings {
        hostname: context.state.config().server.hostname.clone(),
        limits: Limits {
            line_max: configured.line_length_max,
            size_max: usize::try_from(configured.message_size_max).unwrap_or(usize::MAX),
            recipients_max: configured.recipients_max,
            messages_max: configured.messages_per_session_max,
            errors_max: configured.errors_max,
        },
        starttls: mode == TlsMode::StartTls,
        mx,
        trusted: false,
    };
    let trusted = if context.trusted.is_empty() {
        None
    } else {
        context.trusted.caller(&context.state.services, peer.ip(), mx)
    };
    let settings = Settings {
        trusted: trusted.is_some(),
        ..settings
    };
    if trusted.is_some() {
        metrics::counter!("herald_smtp_trusted_sessions_total").increment(1);
    }
    // A trusted client speaks as its network's key until it authenticates as another.
    let mut caller = trusted;
    let deadline = after(configured.session_time_max);
    let work = async {
        match mode {
            TlsMode::Implicit => {
                let mut session = Session::new(settings, true);
                // The greeting goes out with the server's first flight (TLS 1.3 lets the
                // server send data right after its Finished): the client has it one
                // round trip sooner, and nothing is written twice.
                let greeting = session.greeting().to_bytes();
                let mut tls = handshake(stream, context, Some(&greeting)).await?;
                let ended = run(&mut tls, &mut session, &mut caller, peer, context, shutdown, deadline).await?;
                close_tls(&mut tls, ended).await
            }
            TlsMode::StartTls => {
                let mut plain = stream;
                let mut session = Session::new(settings, false);
                plain.write_all(&session.greeting().to_bytes()).await?;
                match run(
                    &mut plain,
                    &mut session,
                    &mut caller,
                    peer,
                    context,
                    shutdown.clone(),
                    deadline,
                )
                .await?
                {
                    Ended::Closed(last) => {
                        plain.write_all(&last).await?;
                        plain.shutdown().await
                    }
                    Ended::StartTls => {
                        // Whatever the client pipelined after STARTTLS in plaintext was in
                        // the loop's buffer and is gone with it (CVE-2011-0411).
                        let mut tls = handshake(plain, context, None).await?;
                        session.tls_started();
                        let ended = run(&mut tls, &mut session, &mut caller, peer, context, shutdown, deadline).await?;
                        close_tls(&mut tls, ended).await
                    }
                }
            }
        }
    };
    // Everything logged for the session (its acceptances with their email ids) carries
    // the client's address.
    let work = tracing::Instrument::instrument(work, tracing::info_span!("smtp", peer = %peer, tls = ?mode));
    // The session loop answers `421` at the deadline; this bound only cuts off a session
    // stuck elsewhere (a TLS handshake has its own limit, a delivery finishes first).
    match tokio::time::timeout(configured.session_time_max + SESSION_GRACE, work).await {
        Ok(result) => result,
        Err(_) => Ok(()),
    }
}

/// A TLS session over a transport that can hold writes back (see [`Corked`]).
type Tls = tokio_rustls::server::TlsStream<Corked<TcpStream>>;

/// Accepts TLS on `stream`; `first` is queued before the handshake and sent as soon as
/// the server may send application data: with TLS 1.3, in the server's first flight
/// (`send_half_rtt_data`). With TLS 1.3, what the server writes after the client's
/// Finished (the session ticket) waits for the first reply, which is safe only because
/// the client speaks next: after the greeting in implicit TLS, after `STARTTLS` always.
async fn handshake(stream: TcpStream, context: &ListenerContext, first: Option<&[u8]>) -> std::io::Result<Tls> {
    let accept = context.tls.accept_with(Corked::new(stream), |connection| {
        if let Some(first) = first {
            // Buffered by rustls until the handshake lets it out; never fails.
            let _ = std::io::Write::write_all(&mut connection.writer(), first);
        }
    });
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept.into_fallible())
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out"))?;
    let mut tls = match handshake {
        Ok(tls) => tls,
        Err((error, mut transport)) => {
            // An alert written after the client's Finished (a bad Finished, say) was held:
            // the client gets it instead of a bare close.
            transport.release();
            let _ = transport.flush().await;
            return Err(error);
        }
    };
    let (transport, connection) = tls.get_mut();
    transport.release();
    if connection.protocol_version() != Some(rustls::ProtocolVersion::TLSv1_3) {
        // TLS 1.2 (False Start) may have had the server's Finished held: it goes now.
        tls.flush().await?;
    }
    Ok(tls)
}

/// Ends a TLS session: its last reply and the `close_notify` in one write, then the TCP
/// shutdown.
async fn close_tls(tls: &mut Tls, ended: Ended) -> std::io::Result<()> {
    if let Ended::Closed(last) = ended {
        tls.get_mut().0.hold();
        tls.write_all(&last).await?;
    }
    tls.shutdown().await
}

/// The instant `duration` from now, or one far in the future when that is beyond the
/// clock's range (a limit configured as "never", in effect).
fn after(duration: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// Answers a connection that is over a limit with `421` and closes it.
pub async fn refuse(mut stream: TcpStream, why: &str) {
    let _ = stream.write_all(&Reply::new(421, "4.7.0", why).to_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads, feeds the session and carries out its actions until it closes or asks for TLS.
async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    session: &mut Session,
    caller: &mut Option<Caller>,
    peer: SocketAddr,
    context: &ListenerContext,
    mut shutdown: Shutdown,
    deadline: tokio::time::Instant,
) -> std::io::Result<Ended> {
    let mut buffer: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // Two timers for the whole session, not two per read: the session's end, and the
    // idle timeout, moved forward before each read.
    let idle_timeout = context.state.config().smtp.limits.idle_timeout;
    let session_end = tokio::time::sleep_until(deadline);
    let idle = tokio::time::sleep(idle_timeout);
    tokio::pin!(session_end, idle);
    // Replies not yet written: those to a pipelined group go out together, in one write,
    // once the group's last buffered command is answered.
    let mut out = Vec::new();
    loop {
        let (used, actions) = session.feed(&buffer);
        buffer.drain(..used);
        // Set when the session resumes after waiting on this driver: bytes pipelined behind
        // the command that waited are already in the buffer and must be fed before reading.
        let mut resumed = false;
        let mut queue: VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Reply(reply) => reply.write_to(&mut out),
                Action::Close => return Ok(Ended::Closed(out)),
                Action::StartTls => {
                    stream.write_all(&out).await?;
                    stream.flush().await?;
                    return Ok(Ended::StartTls);
                }
                Action::Authenticate { username, password } => {
                    if context.guard.locked_out(peer.ip()) {
                        out.extend_from_slice(
                            &Reply::new(
                                421,
                                "4.7.0",
                                "Too many failed authentications from your address, try again later",
                            )
                            .to_bytes(),
                        );
                        return Ok(Ended::Closed(out));
                    }
                    let authenticated = authenticate(context, &username, &password);
                    let delay = context.guard.record_auth(peer.ip(), authenticated.is_some());
                    if !delay.is_zero() {
                        // Each failure from an address answers later than the last: guessing
                        // keys costs time even before the lockout.
                        tokio::time::sleep(delay).await;
                    }
                    queue.extend(session.authenticated(authenticated.is_some()));
                    if authenticated.is_some() {
                        *caller = authenticated;
                    }
                    resumed = true;
                }
                Action::CheckSender { from } => {
                    queue.extend(session.sender_checked(check_sender(context, caller.as_ref(), &from)));
                    resumed = true;
                }
                Action::CheckRecipient { to } => {
                    queue.extend(session.recipient_checked(crate::feedback::check_recipient(&context.state, &to)));
                    resumed = true;
                }
                Action::Deliver(envelope) if envelope.inbound => {
                    let outcome = inbound(context, envelope).await;
                    queue.extend(session.delivered(outcome));
                    resumed = true;
                }
                Action::Deliver(envelope) => {
                    let outcome = deliver(context, caller.as_ref(), envelope, peer).await;
                    queue.extend(session.delivered(outcome));
                    resumed = true;
                }
            }
        }
        if session.is_closed() {
            return Ok(Ended::Closed(out));
        }
        if resumed && !buffer.is_empty() {
            // Commands pipelined behind the one that waited are answered first; their
            // replies join these.
            continue;
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            // Over TLS, a write returns once rustls has the reply even when the socket
            // would block; the flush makes sure it all went out before waiting for input.
            stream.flush().await?;
            out.clear();
        }
        if buffer.capacity() - buffer.len() < READ_MIN {
            buffer.reserve(READ_CHUNK);
        }
        idle.as_mut().reset(after(idle_timeout));
        let read = tokio::select! {
            // A shutdown or the session's end wins over input that arrives with it; input
            // wins over the idle timeout.
            biased;
            () = shutdown.triggered() => {
                let reply = Reply::new(421, "4.3.2", "Service shutting down, try again later");
                return Ok(Ended::Closed(reply.to_bytes()));
            }
            () = &mut session_end => {
                let reply = Reply::new(421, "4.4.2", "Session time limit reached, closing the connection");
                return Ok(Ended::Closed(reply.to_bytes()));
            }
            read = stream.read_buf(&mut buffer) => read,
            () = &mut idle => {
                let reply = Reply::new(421, "4.4.2", "Idle timeout, closing the connection");
                return Ok(Ended::Closed(reply.to_bytes()));
            }
        };
        if read? == 0 {
            return Ok(Ended::Closed(Vec::new()));
        }
    }
}

/// Checks `[smtp] username` and the API key. Both are in-memory work plus two point
/// reads of the store (the key's digest and its record), cheap enough for the session's own
/// task; the usage timestamp is committed without waiting.
fn authenticate(context: &ListenerContext, username: &str, password: &str) -> Option<Caller> {
    let state = &context.state;
    let name_ok =
        aws_lc_rs::constant_time::verify_slices_are_equal(username.as_bytes(), state.config().smtp.username.as_bytes())
            .is_ok();
    let caller = state.authenticate(password).ok().filter(|_| name_ok);
    metrics::counter!("herald_smtp_auth_total", "outcome" => if caller.is_some() { "ok" } else { "failed" })
        .increment(1);
    caller
}

/// Whether the authenticated `caller` may use `from` as the envelope sender: an address
/// on a verified domain of its team (and the key's own domain for a key bound to one),
/// as Postfix's `reject_sender_login_mismatch` checks at `MAIL`. Point reads of the
/// store, cheap enough for the session's own task. The `From:` header is checked again
/// once the message is in.
fn check_sender(context: &ListenerContext, caller: Option<&Caller>, from: &str) -> Result<(), Reply> {
    let Some(caller) = caller else {
        return Err(Reply::new(530, "5.7.0", "Authentication required"));
    };
    if from.is_empty() {
        return Err(Reply::new(
            550,
            "5.7.1",
            "A null reverse path is not accepted for submission; use an address on a verified domain of your team",
        ));
    }
    let address = Mailbox::parse(from).map_err(|why| Reply::new(553, "5.1.7", format!("Bad sender address: {why}")))?;
    submit::authorize_domain(&context.state, &sender_of(caller), address.domain())
        .map(drop)
        .map_err(|error| failure_reply(RawError::Send(error)))
}

/// Takes in a message a receiving MX sent to herald's return path (a bounce, a
/// complaint, or anything else, which is dropped): `250` once what it says is recorded,
/// whatever it is, so that nothing is ever bounced back; `451` when storage fails.
async fn inbound(context: &ListenerContext, envelope: Envelope) -> Result<String, Reply> {
    let state = Arc::clone(&context.state);
    let taken =
        tokio::task::spawn_blocking(move || crate::feedback::intake(&state, &envelope.recipients, &envelope.message))
            .await;
    match taken {
        Ok(Ok(intake)) => {
            tracing::info!(?intake, "inbound report taken");
            Ok("taken".to_owned())
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "cannot record an inbound report");
            Err(Reply::new(451, "4.3.0", "Temporary storage failure, try again later"))
        }
        Err(error) => {
            tracing::error!(%error, "an inbound report's task failed");
            Err(Reply::new(451, "4.3.0", "Temporary failure, try again later"))
        }
    }
}

/// The sender an authenticated SMTP client sends as.
fn sender_of(caller: &Caller) -> Sender {
    Sender {
        team_id: caller.team_id,
        api_key_id: Some(caller.key_id),
        permission: caller.permission,
        domain_id: caller.domain_id,
        request_log_id: None,
    }
}

/// Records and spools a message; the email id, or the reply that refuses it. A
/// `Resend-Idempotency-Key` header works like the API's `Idempotency-Key`: the same key
/// with the same message bytes answers with the first id and sends nothing.
///
/// The session task awaits the spool's group commit instead of parking a blocking thread
/// on it; only the parse of a large message moves off the async workers.
async fn deliver(
    context: &ListenerContext,
    caller: Option<&Caller>,
    envelope: Envelope,
    peer: SocketAddr,
) -> Result<String, Reply> {
    let Some(caller) = caller else {
        return Err(Reply::new(530, "5.7.0", "Authentication required"));
    };
    let state = &context.state;
    let submission = Arc::new(Submission {
        sender: sender_of(caller),
        received: received_from(&envelope.helo, peer, &state.config().server.hostname),
        envelope,
    });
    let key = mail_parser::MessageParser::default()
        .parse_headers(&submission.envelope.message)
        .and_then(|m| m.header_raw(raw::IDEMPOTENCY_HEADER).map(|k| k.trim().to_owned()))
        .filter(|k| !k.is_empty());
    let Some(key) = key else {
        return send(state, &submission, None).await.map_err(failure_reply);
    };
    if key.chars().count() > idempotency::KEY_MAX {
        return Err(Reply::new(
            554,
            "5.5.4",
            "Resend-Idempotency-Key is longer than 256 characters",
        ));
    }
    let hash = idempotency::bytes_hash(&submission.envelope.message);
    let outcome = state
        .idempotency()
        .begin(state.now(), caller.team_id, &key, hash)
        .map_err(|e| failure_reply(RawError::Send(e.into())))?;
    match outcome {
        Outcome::Replay(answer) => Ok(answer.email_id().map(|id| id.to_string()).unwrap_or_default()),
        Outcome::Mismatch => Err(Reply::new(
            554,
            "5.7.1",
            "This Resend-Idempotency-Key was already used with a different message",
        )),
        Outcome::Concurrent => Err(Reply::new(
            451,
            "4.5.0",
            "A message with this Resend-Idempotency-Key is still being accepted, try again later",
        )),
        Outcome::Fresh(in_flight) => send(state, &submission, Some(&in_flight)).await.map_err(failure_reply),
    }
}

/// The clauses of the `Received` header before its date (RFC 5321 4.4): the name the client
/// gave in `EHLO` with the address it connected from, this host, and the protocol (TLS
/// and AUTH are required, so always ESMTPSA). The name is the client's own words: only
/// the characters of a domain or an address literal are kept, at most 255 of them, each
/// other one shown as `?`, so that it cannot add a comment, a clause or a date.
fn received_from(helo: &str, peer: SocketAddr, hostname: &str) -> String {
    let name: String = helo
        .chars()
        .take(255)
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_:[]".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    let name = if name.is_empty() { "unknown" } else { &name };
    let literal = match peer.ip() {
        std::net::IpAddr::V4(ip) => format!("[{ip}]"),
        std::net::IpAddr::V6(ip) => format!("[IPv6:{ip}]"),
    };
    format!("from {name} ({literal}) by {hostname} (herald) with ESMTPSA")
}

/// A message on its way into the spool, shareable with a blocking thread.
struct Submission {
    sender: Sender,
    received: String,
    envelope: Envelope,
}

/// Prepares, records and spools one message; its id once durable. `in_flight`, when the
/// message carries an idempotency key, adds the key's record to the same write.
async fn send(
    state: &Arc<AppState>,
    submission: &Arc<Submission>,
    in_flight: Option<&InFlight<'_>>,
) -> Result<String, RawError> {
    let prepare = |state: &AppState, submission: &Submission| {
        let envelope = &submission.envelope;
        raw::prepare(
            state,
            &submission.sender,
            &envelope.from,
            &envelope.recipients,
            &envelope.message,
            &submission.received,
        )
    };
    let prepared = if submission.envelope.message.len() <= INLINE_PREPARE_MAX {
        prepare(state, submission)?
    } else {
        let (state, submission) = (Arc::clone(state), Arc::clone(submission));
        tokio::task::spawn_blocking(move || prepare(&state, &submission))
            .await
            .map_err(|e| SendError::Internal(format!("message preparation failed: {e}")))??
    };
    let id = prepared.id;
    let remember = in_flight.map(|in_flight| (in_flight, Answer::Smtp { email_id: id }));
    accept(state, vec![prepared], remember, Source::Smtp)?.durable().await?;
    Ok(id.to_string())
}

fn failure_reply(error: RawError) -> Reply {
    match error {
        RawError::NotAMessage(why) => Reply::new(554, "5.6.0", why),
        RawError::Send(SendError::DomainNotVerified(_) | SendError::DomainNotAllowed(_)) => {
            Reply::new(550, "5.7.1", error.to_string())
        }
        RawError::Send(SendError::Quota(exceeded)) => Reply::new(452, "4.5.3", exceeded.message),
        RawError::Send(SendError::Unavailable(Refusal::DiskLow { .. })) => {
            Reply::new(452, "4.3.1", "Insufficient system storage, try again later")
        }
        RawError::Send(SendError::Unavailable(Refusal::Busy)) => {
            Reply::new(451, "4.3.2", "Too busy to accept mail now, try again later")
        }
        RawError::Send(SendError::Unavailable(_) | SendError::Internal(_)) => {
            Reply::new(451, "4.3.0", "Temporary storage failure, try again later")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_received_clause_names_the_client_as_it_greeted_without_letting_it_write_more() {
        let v4: SocketAddr = "192.0.2.7:4000".parse().expect("addr");
        let v6: SocketAddr = "[2001:db8::1]:4000".parse().expect("addr");
        assert_eq!(
            received_from("client.example", v4, "mx.test"),
            "from client.example ([192.0.2.7]) by mx.test (herald) with ESMTPSA"
        );
        assert_eq!(
            received_from("[IPv6:2001:db8::1]", v6, "mx.test"),
            "from [IPv6:2001:db8::1] ([IPv6:2001:db8::1]) by mx.test (herald) with ESMTPSA"
        );
        assert_eq!(
            received_from("evil;(by)\u{e9}", v4, "mx.test"),
            "from evil??by?? ([192.0.2.7]) by mx.test (herald) with ESMTPSA"
        );
        assert_eq!(
            received_from("", v4, "mx.test"),
            "from unknown ([192.0.2.7]) by mx.test (herald) with ESMTPSA"
        );
        assert_eq!(
            received_from(&"a".repeat(300), v4, "h").len(),
            "from  ([192.0.2.7]) by h (herald) with ESMTPSA".len() + 255
        );
    }
}
