//! The session state machine: bytes in, [`Action`]s out.
//!
//! The driver feeds whatever it read; the session consumes complete commands and data,
//! answers what it can by itself, and hands the driver what it cannot: TLS upgrades,
//! credential checks and message delivery, each answered by a call back into the session.
//! Commands may be pipelined; a reply that needs the driver stops consumption there, so
//! the next command is read only once the previous one is answered.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::command::{self, Command, CommandError};
use crate::data::{BdatReceiver, DataError, DataReceiver};
use crate::line::{LineError, read_line};
use crate::reply::Reply;

/// The largest message of an inbound transaction (a bounce or a complaint handed back by
/// a receiving MX without AUTH): reports are small, and no one unauthenticated may make
/// the server hold a submission-sized message.
pub const INBOUND_SIZE_MAX: usize = 10 * 1024 * 1024;

/// What a session may receive, each limit named for the client's view of it.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Longest command line, CRLF included. RFC 5321 asks for at least 512; AUTH lines with
    /// long tokens need a little more.
    pub line_max: usize,
    /// Largest message, advertised with SIZE.
    pub size_max: usize,
    /// Recipients per message.
    pub recipients_max: usize,
    /// Messages per session.
    pub messages_max: u32,
    /// Failed commands before the session is closed.
    pub errors_max: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            line_max: 2048,
            size_max: 40 * 1024 * 1024,
            recipients_max: 50,
            messages_max: 1_000,
            errors_max: 10,
        }
    }
}

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The server's name, in the greeting and EHLO.
    pub hostname: String,
    /// Limits.
    pub limits: Limits,
    /// Whether STARTTLS may be offered (a STARTTLS listener before the upgrade).
    pub starttls: bool,
    /// Whether receiving MXs may hand this listener mail (bounces, complaints): `MAIL`
    /// without AUTH, and without TLS, opens an inbound transaction whose every recipient
    /// the driver checks ([`Action::CheckRecipient`]). Authenticated clients submit as
    /// on any listener.
    pub mx: bool,
    /// Whether the client is on a trusted network (Postfix's `mynetworks`): `MAIL`
    /// without AUTH, and without TLS, submits as the network's key; the driver checks the
    /// sender ([`Action::CheckSender`]) as for an authenticated client. AUTH still works
    /// and then speaks for the session.
    pub trusted: bool,
}

/// A message ready for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The name the client gave in `EHLO` or `HELO`, as it gave it.
    pub helo: String,
    /// `MAIL FROM`.
    pub from: String,
    /// `RCPT TO`s, in order.
    pub recipients: Vec<String>,
    /// The message, unstuffed.
    pub message: Vec<u8>,
    /// Whether it came in without AUTH on an `mx` listener: mail to herald itself, not a
    /// submission.
    pub inbound: bool,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this reply.
    Reply(Reply),
    /// Start TLS now (the `220` has been queued just before), discard every byte read so
    /// far beyond the STARTTLS line, then call [`Session::tls_started`].
    StartTls,
    /// Check these credentials, then call [`Session::authenticated`].
    Authenticate {
        /// The user name.
        username: String,
        /// The password (an API key).
        password: String,
    },
    /// Check that the authenticated client may use this envelope sender (the reverse
    /// path of `MAIL FROM`, without angle brackets; empty for `<>`), then call
    /// [`Session::sender_checked`]. Asked at `MAIL`, so that a sender the client may not
    /// use is refused before the message is sent, not after.
    CheckSender {
        /// The reverse path.
        from: String,
    },
    /// Check that an inbound transaction (see [`Settings::mx`]) may have this recipient
    /// (the forward path, without angle brackets), then call
    /// [`Session::recipient_checked`].
    CheckRecipient {
        /// The forward path.
        to: String,
    },
    /// Deliver this message, then call [`Session::delivered`].
    Deliver(Envelope),
    /// Close the connection after sending the replies before this action.
    Close,
}

#[derive(Debug)]
enum Phase {
    Command,
    Data(DataReceiver),
    Bdat {
        chunk: BdatReceiver,
        last: bool,
    },
    AuthPlain,
    AuthLoginUser,
    AuthLoginPassword(String),
    /// `MAIL` named this reverse path; the driver is checking it.
    CheckingSender(String),
    /// `RCPT` of an inbound transaction named this forward path; the driver is checking it.
    CheckingRecipient(String),
    /// A refused `BDAT`'s chunk: this many octets still to read and drop before the
    /// refusal is answered. They follow the command whatever its answer (RFC 3030), so
    /// they must never be read as commands.
    Discard {
        remaining: u64,
    },
    Waiting,
    Closed,
}

/// One SMTP session.
#[derive(Debug)]
pub struct Session {
    settings: Settings,
    tls: bool,
    /// The client's `EHLO`/`HELO` name, once it has greeted.
    helo: Option<String>,
    authenticated: bool,
    /// The open transaction is inbound (no AUTH, on an `mx` listener).
    inbound: bool,
    from: Option<String>,
    /// The size `MAIL` declared (`SIZE=`), 0 when it declared none.
    declared_size: usize,
    recipients: Vec<String>,
    bdat: Vec<u8>,
    phase: Phase,
    errors: u32,
    messages: u32,
}

impl Session {
    /// A session on a connection that is (`tls`) or is not yet encrypted.
    pub fn new(settings: Settings, tls: bool) -> Self {
        Session {
            settings,
            tls,
            helo: None,
            authenticated: false,
            inbound: false,
            from: None,
            declared_size: 0,
            recipients: Vec::new(),
            bdat: Vec::new(),
            phase: Phase::Command,
            errors: 0,
            messages: 0,
        }
    }

    /// The greeting.
    pub fn greeting(&self) -> Reply {
        Reply::plain(220, vec![format!("{} ESMTP herald", self.settings.hostname)])
    }

    /// Whether the session waits for the driver (TLS, credentials, delivery).
    pub fn is_waiting(&self) -> bool {
        matches!(self.phase, Phase::Waiting)
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// Consumes what it can of `input`; returns how many bytes it consumed and what to do.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Vec<Action>) {
        let mut consumed = 0;
        let mut actions = Vec::new();
        loop {
            let rest = &input[consumed..];
            let size_max = self.size_max();
            match &mut self.phase {
                Phase::Waiting | Phase::CheckingSender(_) | Phase::CheckingRecipient(_) | Phase::Closed => break,
                Phase::Data(receiver) => match receiver.feed(rest) {
                    Ok(progress) => {
                        consumed += progress.consumed;
                        if !progress.done {
                            break;
                        }
                        let Phase::Data(receiver) = std::mem::replace(&mut self.phase, Phase::Waiting) else {
                            break;
                        };
                        actions.push(self.deliver(receiver.into_message()));
                    }
                    Err(error) => {
                        self.data_error(error, &mut actions);
                        break;
                    }
                },
                Phase::Discard { remaining } => {
                    let take = usize::try_from(*remaining).unwrap_or(usize::MAX).min(rest.len());
                    consumed += take;
                    *remaining -= take as u64;
                    if *remaining > 0 {
                        break;
                    }
                    self.phase = Phase::Command;
                    actions.push(Action::Reply(Reply::new(503, "5.5.1", "Send RCPT first")));
                    self.count_error(&mut actions);
                }
                Phase::Bdat { chunk, last } => {
                    let last = *last;
                    match chunk.feed(rest, &mut self.bdat, size_max) {
                        Ok(progress) => {
                            consumed += progress.consumed;
                            if !progress.done {
                                break;
                            }
                            if last && !chunk.ends_cleanly() {
                                // The message would end in a CR with no LF: a bare CR,
                                // refused here as it is anywhere else in the data.
                                self.data_error(DataError::BareCr, &mut actions);
                                break;
                            } else if last {
                                self.phase = Phase::Waiting;
                                let message = std::mem::take(&mut self.bdat);
                                actions.push(self.deliver(message));
                            } else {
                                self.phase = Phase::Command;
                                let size = self.bdat.len();
                                actions.push(Action::Reply(Reply::new(
                                    250,
                                    "2.0.0",
                                    format!("{size} octets received"),
                                )));
                            }
                        }
                        Err(error) => {
                            self.data_error(error, &mut actions);
                            break;
                        }
                    }
                }
                Phase::Command | Phase::AuthPlain | Phase::AuthLoginUser | Phase::AuthLoginPassword(_) => {
                    match read_line(rest, self.settings.limits.line_max) {
                        Ok(None) => break,
                        Ok(Some((line, used))) => {
                            consumed += used;
                            let line = line.to_vec();
                            self.line(&line, &mut actions);
                        }
                        Err(error) => {
                            let reply = match error {
                                LineError::TooLong(max) => {
                                    Reply::new(500, "5.5.6", format!("Line too long (at most {max} bytes)"))
                                }
                                LineError::BareLf | LineError::BareCr => {
                                    Reply::new(500, "5.5.2", "Bare CR or LF in a command; lines must end with CRLF")
                                }
                            };
                            self.close(reply, &mut actions);
                            break;
                        }
                    }
                }
            }
        }
        (consumed, actions)
    }

    /// The answer to [`Action::Authenticate`].
    pub fn authenticated(&mut self, ok: bool) -> Vec<Action> {
        self.phase = Phase::Command;
        if ok {
            self.authenticated = true;
            vec![Action::Reply(Reply::new(235, "2.7.0", "Authentication successful"))]
        } else {
            let mut actions = vec![Action::Reply(Reply::new(
                535,
                "5.7.8",
                "Authentication credentials invalid",
            ))];
            self.count_error(&mut actions);
            actions
        }
    }

    /// The answer to [`Action::CheckSender`]: `Ok` opens the transaction, or the reply
    /// refusing the sender.
    pub fn sender_checked(&mut self, outcome: Result<(), Reply>) -> Vec<Action> {
        let Phase::CheckingSender(from) = std::mem::replace(&mut self.phase, Phase::Command) else {
            // Not waiting for this answer: nothing to open.
            return Vec::new();
        };
        match outcome {
            Ok(()) => {
                self.from = Some(from);
                vec![Action::Reply(Reply::new(250, "2.1.0", "OK"))]
            }
            Err(reply) => {
                let mut actions = vec![Action::Reply(reply)];
                self.count_error(&mut actions);
                actions
            }
        }
    }

    /// The answer to [`Action::CheckRecipient`]: `Ok` adds the recipient, or the reply
    /// refusing it.
    pub fn recipient_checked(&mut self, outcome: Result<(), Reply>) -> Vec<Action> {
        let Phase::CheckingRecipient(to) = std::mem::replace(&mut self.phase, Phase::Command) else {
            return Vec::new();
        };
        match outcome {
            Ok(()) => {
                self.recipients.push(to);
                vec![Action::Reply(Reply::new(250, "2.1.5", "OK"))]
            }
            Err(reply) => {
                let mut actions = vec![Action::Reply(reply)];
                self.count_error(&mut actions);
                actions
            }
        }
    }

    /// The answer to [`Action::Deliver`]: the email id, or the reply explaining why not.
    pub fn delivered(&mut self, outcome: Result<String, Reply>) -> Vec<Action> {
        self.phase = Phase::Command;
        self.reset();
        match outcome {
            Ok(id) => {
                self.messages += 1;
                vec![Action::Reply(Reply::new(250, "2.0.0", format!("OK {id}")))]
            }
            Err(reply) => vec![Action::Reply(reply)],
        }
    }

    /// The TLS handshake of [`Action::StartTls`] finished: the session starts over, as
    /// before EHLO, now encrypted.
    pub fn tls_started(&mut self) {
        self.tls = true;
        self.helo = None;
        self.authenticated = false;
        self.reset();
        self.phase = Phase::Command;
    }

    fn line(&mut self, line: &[u8], actions: &mut Vec<Action>) {
        match std::mem::replace(&mut self.phase, Phase::Command) {
            Phase::AuthPlain => self.auth_plain(line, actions),
            Phase::AuthLoginUser => match decode(line) {
                Some(username) => {
                    self.phase = Phase::AuthLoginPassword(username);
                    actions.push(Action::Reply(Reply::plain(334, vec!["UGFzc3dvcmQ6".into()])));
                }
                None => self.auth_failed(line, actions),
            },
            Phase::AuthLoginPassword(username) => match decode(line) {
                Some(password) => {
                    self.phase = Phase::Waiting;
                    actions.push(Action::Authenticate { username, password });
                }
                None => self.auth_failed(line, actions),
            },
            _ => match command::parse(line) {
                Ok(command) => self.command(command, actions),
                Err(error) => {
                    let reply = match error {
                        CommandError::Unknown => Reply::new(500, "5.5.1", "Command unrecognized"),
                        CommandError::Syntax(why) => Reply::new(501, "5.5.4", why),
                        CommandError::NotText => Reply::new(500, "5.5.2", "Command is not valid text"),
                    };
                    actions.push(Action::Reply(reply));
                    self.count_error(actions);
                }
            },
        }
    }

    fn command(&mut self, command: Command, actions: &mut Vec<Action>) {
        let reply = match command {
            Command::Ehlo(name) => {
                self.helo = Some(name);
                self.reset();
                Reply::plain(250, self.capabilities())
            }
            Command::Helo(name) => {
                self.helo = Some(name);
                self.reset();
                Reply::plain(250, vec![self.settings.hostname.clone()])
            }
            Command::StartTls if self.tls || !self.settings.starttls => {
                Reply::new(503, "5.5.1", "TLS is already active or not offered here")
            }
            Command::StartTls => {
                self.phase = Phase::Waiting;
                actions.push(Action::Reply(Reply::new(220, "2.0.0", "Ready to start TLS")));
                actions.push(Action::StartTls);
                return;
            }
            Command::Auth { .. } if !self.tls => Reply::new(530, "5.7.0", "Must issue a STARTTLS command first"),
            Command::Auth { .. } if self.authenticated => Reply::new(503, "5.5.1", "Already authenticated"),
            Command::Auth { .. } if self.from.is_some() => {
                Reply::new(503, "5.5.1", "AUTH is not allowed during a mail transaction")
            }
            Command::Auth { mechanism, initial } => return self.auth(&mechanism, initial, actions),
            Command::Mail { .. } if self.helo.is_none() => Reply::new(503, "5.5.1", "Send EHLO first"),
            // A receiving MX may not use TLS, and never authenticates.
            Command::Mail { .. } if !self.tls && !self.settings.mx && !self.settings.trusted => {
                Reply::new(530, "5.7.0", "Must issue a STARTTLS command first")
            }
            Command::Mail { .. } if !self.authenticated && !self.settings.mx && !self.settings.trusted => {
                Reply::new(530, "5.7.0", "Authentication required")
            }
            Command::Mail { .. } if self.from.is_some() => Reply::new(503, "5.5.1", "Nested MAIL command"),
            Command::Mail { .. } if self.messages >= self.settings.limits.messages_max => {
                return self.close(
                    Reply::new(
                        421,
                        "4.7.0",
                        "Too many messages in this session, reconnect to send more",
                    ),
                    actions,
                );
            }
            Command::Mail { from, params } if !self.authenticated && !self.settings.trusted => {
                // Its own size limit applies from here (a report is small).
                self.inbound = true;
                match self.mail_parameters(&params) {
                    Ok(declared) => {
                        self.declared_size = declared;
                        self.from = Some(from);
                        Reply::new(250, "2.1.0", "OK")
                    }
                    Err(reply) => {
                        self.inbound = false;
                        reply
                    }
                }
            }
            Command::Mail { from, params } => match self.mail_parameters(&params) {
                Ok(declared) => {
                    self.declared_size = declared;
                    self.phase = Phase::CheckingSender(from.clone());
                    actions.push(Action::CheckSender { from });
                    return;
                }
                Err(reply) => reply,
            },
            Command::Rcpt { .. } if self.from.is_none() => Reply::new(503, "5.5.1", "Send MAIL first"),
            Command::Rcpt { .. } if self.recipients.len() >= self.settings.limits.recipients_max => Reply::new(
                452,
                "4.5.3",
                format!("Too many recipients (at most {})", self.settings.limits.recipients_max),
            ),
            Command::Rcpt { to, .. } if !to.contains('@') => Reply::new(501, "5.1.3", "Bad recipient address syntax"),
            Command::Rcpt { to, .. } if self.inbound => {
                self.phase = Phase::CheckingRecipient(to.clone());
                actions.push(Action::CheckRecipient { to });
                return;
            }
            Command::Rcpt { to, .. } => {
                self.recipients.push(to);
                Reply::new(250, "2.1.5", "OK")
            }
            Command::Bdat { size, .. } if self.recipients.is_empty() => {
                if size > self.size_max() as u64 {
                    return self.close(
                        Reply::new(
                            503,
                            "5.5.1",
                            "Send RCPT first; closing the connection rather than reading a chunk this large",
                        ),
                        actions,
                    );
                }
                // No transaction to add the chunk to (no MAIL, or MAIL or every RCPT was
                // refused): its octets are read and dropped, then refused.
                self.phase = Phase::Discard { remaining: size };
                return;
            }
            Command::Data if self.recipients.is_empty() => Reply::new(503, "5.5.1", "Send RCPT first"),
            Command::Data if !self.bdat.is_empty() => Reply::new(503, "5.5.1", "DATA cannot follow BDAT"),
            Command::Data => {
                self.phase = Phase::Data(DataReceiver::expecting(self.size_max(), self.declared_size));
                Reply::plain(354, vec!["Start mail input; end with <CRLF>.<CRLF>".into()])
            }
            Command::Bdat { size, .. } if self.bdat.len() as u64 + size > self.size_max() as u64 => {
                return self.close(
                    Reply::new(552, "5.3.4", format!("Message larger than {} bytes", self.size_max())),
                    actions,
                );
            }
            Command::Bdat { size, last } => {
                if self.bdat.is_empty() {
                    // The whole message as declared, as for DATA.
                    self.bdat
                        .reserve(DataReceiver::reserve(self.size_max(), self.declared_size));
                }
                let previous = self.bdat.last().copied();
                self.phase = Phase::Bdat {
                    chunk: BdatReceiver::new(size, previous),
                    last,
                };
                return;
            }
            Command::Rset => {
                self.reset();
                Reply::new(250, "2.0.0", "OK")
            }
            Command::Noop => Reply::new(250, "2.0.0", "OK"),
            Command::Vrfy(_) => Reply::new(
                252,
                "2.5.0",
                "Cannot VRFY user, but will accept message and attempt delivery",
            ),
            Command::Help => Reply::new(
                214,
                "2.0.0",
                "herald: see the REST API documentation; commands: EHLO MAIL RCPT DATA BDAT RSET NOOP QUIT",
            ),
            Command::Quit => return self.close(Reply::new(221, "2.0.0", "Bye"), actions),
        };
        let failed = !reply.is_positive();
        actions.push(Action::Reply(reply));
        if failed {
            self.count_error(actions);
        }
    }

    fn capabilities(&self) -> Vec<String> {
        let mut lines = vec![
            self.settings.hostname.clone(),
            "PIPELINING".into(),
            format!("SIZE {}", self.settings.limits.size_max),
            "8BITMIME".into(),
            "SMTPUTF8".into(),
            "ENHANCEDSTATUSCODES".into(),
            "CHUNKING".into(),
        ];
        if self.settings.starttls && !self.tls {
            lines.push("STARTTLS".into());
        }
        if self.tls {
            lines.push("AUTH PLAIN LOGIN".into());
        }
        lines
    }

    /// Checks the parameters of `MAIL`: the size it declares (0 for none), or the reply
    /// refusing them.
    fn mail_parameters(&self, params: &[command::Param]) -> Result<usize, Reply> {
        let mut declared = 0;
        for param in params {
            match (param.keyword.as_str(), param.value.as_deref()) {
                ("SIZE", Some(size)) => match size.parse::<u64>() {
                    Ok(size) if size > self.size_max() as u64 => {
                        return Err(Reply::new(
                            552,
                            "5.3.4",
                            format!("Message larger than {} bytes", self.size_max()),
                        ));
                    }
                    Ok(size) => declared = usize::try_from(size).unwrap_or(usize::MAX),
                    Err(_) => return Err(Reply::new(501, "5.5.4", "SIZE needs a number")),
                },
                ("BODY", Some(body)) if body.eq_ignore_ascii_case("7BIT") || body.eq_ignore_ascii_case("8BITMIME") => {}
                ("SMTPUTF8", None) | ("AUTH", Some(_)) => {}
                _ => {
                    return Err(Reply::new(
                        555,
                        "5.5.4",
                        format!("Unsupported MAIL parameter {}", param.keyword),
                    ));
                }
            }
        }
        Ok(declared)
    }

    fn auth(&mut self, mechanism: &str, initial: Option<String>, actions: &mut Vec<Action>) {
        match (mechanism, initial) {
            ("PLAIN", Some(initial)) => self.auth_plain(initial.as_bytes(), actions),
            ("PLAIN", None) => {
                self.phase = Phase::AuthPlain;
                actions.push(Action::Reply(Reply::plain(334, vec![String::new()])));
            }
            ("LOGIN", Some(initial)) => match decode(initial.as_bytes()) {
                Some(username) => {
                    self.phase = Phase::AuthLoginPassword(username);
                    actions.push(Action::Reply(Reply::plain(334, vec!["UGFzc3dvcmQ6".into()])));
                }
                None => self.auth_failed(initial.as_bytes(), actions),
            },
            ("LOGIN", None) => {
                self.phase = Phase::AuthLoginUser;
                actions.push(Action::Reply(Reply::plain(334, vec!["VXNlcm5hbWU6".into()])));
            }
            _ => {
                actions.push(Action::Reply(Reply::new(
                    504,
                    "5.5.4",
                    "Unrecognized authentication type; use PLAIN or LOGIN",
                )));
                self.count_error(actions);
            }
        }
    }

    /// `authzid NUL authcid NUL password`, base64.
    fn auth_plain(&mut self, line: &[u8], actions: &mut Vec<Action>) {
        let decoded = STANDARD.decode(line).ok();
        let mut parts = decoded.as_deref().unwrap_or_default().split(|b| *b == 0);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(_), Some(user), Some(password), None) => {
                match (std::str::from_utf8(user), std::str::from_utf8(password)) {
                    (Ok(user), Ok(password)) => {
                        self.phase = Phase::Waiting;
                        actions.push(Action::Authenticate {
                            username: user.to_owned(),
                            password: password.to_owned(),
                        });
                    }
                    _ => self.auth_failed(line, actions),
                }
            }
            _ => self.auth_failed(line, actions),
        }
    }

    fn auth_failed(&mut self, line: &[u8], actions: &mut Vec<Action>) {
        self.phase = Phase::Command;
        let reply = if line == b"*" {
            Reply::new(501, "5.7.0", "Authentication canceled")
        } else {
            Reply::new(
                501,
                "5.5.2",
                "Cannot decode the authentication response (base64 expected)",
            )
        };
        actions.push(Action::Reply(reply));
        self.count_error(actions);
    }

    fn deliver(&mut self, message: Vec<u8>) -> Action {
        Action::Deliver(Envelope {
            helo: self.helo.clone().unwrap_or_default(),
            from: self.from.clone().unwrap_or_default(),
            recipients: self.recipients.clone(),
            message,
            inbound: self.inbound,
        })
    }

    fn data_error(&mut self, error: DataError, actions: &mut Vec<Action>) {
        let reply = match error {
            DataError::TooLarge(max) => Reply::new(552, "5.3.4", format!("Message larger than {max} bytes")),
            DataError::BareLf | DataError::BareCr => Reply::new(
                550,
                "5.6.0",
                "Bare CR or LF in message data; lines must end with CRLF. Closing the connection",
            ),
        };
        // The client's idea of where the data ends differs from herald's (or the client
        // is still sending a message herald will not take): nothing after this point can
        // be read as commands, so the connection ends here.
        self.close(reply, actions);
    }

    fn count_error(&mut self, actions: &mut Vec<Action>) {
        self.errors += 1;
        if self.errors >= self.settings.limits.errors_max {
            self.close(
                Reply::new(421, "4.7.0", "Too many errors, closing the connection"),
                actions,
            );
        }
    }

    fn close(&mut self, reply: Reply, actions: &mut Vec<Action>) {
        self.phase = Phase::Closed;
        actions.push(Action::Reply(reply));
        actions.push(Action::Close);
    }

    /// The largest message of the transaction: an inbound one (bounces, complaints) is
    /// held to [`INBOUND_SIZE_MAX`].
    fn size_max(&self) -> usize {
        if self.inbound {
            self.settings.limits.size_max.min(INBOUND_SIZE_MAX)
        } else {
            self.settings.limits.size_max
        }
    }

    fn reset(&mut self) {
        self.from = None;
        self.declared_size = 0;
        self.inbound = false;
        self.recipients.clear();
        self.bdat.clear();
    }
}

fn decode(line: &[u8]) -> Option<String> {
    STANDARD
        .decode(line)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
}

#[cfg(test)]
mod tests;
