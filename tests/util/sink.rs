//! A real SMTP server for integration tests to deliver into, on `127.0.0.1` and an
//! ephemeral port: the MX host of herald's delivery engine tests.
//!
//! It speaks RFC 5321 with enhanced status codes (RFC 2034) and, as configured, PIPELINING
//! (RFC 2920), SIZE (RFC 1870), STARTTLS (RFC 3207) and SMTPUTF8 (RFC 6531). A test picks
//! the answer to `RCPT TO` by naming the recipient (`bounce@`, `full@`, `defer@`,
//! `deferonce@`, see [`RecipientRule::defaults`]) and the answer to the end of data with
//! an `X-Sink-Reply: 554 5.7.1 Content rejected` header. Every accepted message is
//! recorded, with counters of connections, for sync and async test code alike.
//!
//! The protocol lives in [`Session`], which takes lines and returns [`Step`]s and never
//! awaits; [`converse`] is the thin tokio driver around it. Where strictness finds client
//! bugs the sink is stricter than most servers: a command must end in CRLF, and a message
//! with a bare LF or a line longer than 1000 octets is refused with `554 5.6.0`.

#![allow(dead_code)]

use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

/// The longest line read, CRLF included (RFC 5321 §4.5.3.1.6); it bounds every read.
const LINE_LEN_MAX: u64 = 1000;

/// The largest message kept when no SIZE is configured, so a runaway client cannot take
/// the test's memory.
const MESSAGE_LEN_MAX: usize = 64 << 20;

/// Recipients per transaction: above the 100 RFC 5321 §4.5.3.1.8 requires, so tests are
/// never limited by it, and still bounded.
const RECIPIENTS_MAX: usize = 1000;

/// An SMTP reply as a code and text that starts with the enhanced status code:
/// `(550, "5.1.1 No such user".to_owned())`.
pub type Reply = (u16, String);

/// How a [`Sink`] behaves. The default is a plain modern MX: PIPELINING, 8BITMIME, no
/// STARTTLS, SIZE or SMTPUTF8, the greeting `220`, no delay and [`RecipientRule::defaults`].
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// The host name in the greeting and the EHLO reply, and of the TLS certificate.
    pub name: String,
    /// Advertise STARTTLS and upgrade with a self-signed certificate for `name`.
    pub starttls: bool,
    /// Advertise PIPELINING. Pipelined commands are answered correctly either way.
    pub pipelining: bool,
    /// Advertise `SIZE n`; refuse a larger `MAIL FROM ... SIZE=` or message (`552 5.3.4`).
    pub size: Option<usize>,
    /// Advertise SMTPUTF8 and accept non-ASCII addresses in a transaction that asks for it.
    pub smtputf8: bool,
    /// Greet with this instead of `220`; a 4xx or 5xx greeting closes the connection.
    pub greeting: Option<Reply>,
    /// How long to wait before answering the end of data, to play a slow host.
    pub delay: Duration,
    /// The answers to `RCPT TO`; the first rule that matches wins, and no match is `250`.
    pub recipients: Vec<RecipientRule>,
    /// Answer STARTTLS with `220`, then send garbage instead of a TLS handshake and close:
    /// a receiver whose TLS is broken.
    pub broken_tls: bool,
    /// Keep whole only the first this many messages; of later ones keep the header
    /// section (what Postfix's `smtp-sink` keeps of any: nothing at all), so that a
    /// benchmark's sink does not hold every body in memory.
    pub keep_whole: usize,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            name: "localhost".to_owned(),
            starttls: false,
            pipelining: true,
            size: None,
            smtputf8: false,
            greeting: None,
            delay: Duration::ZERO,
            broken_tls: false,
            recipients: RecipientRule::defaults(),
            keep_whole: usize::MAX,
        }
    }
}

/// The answer to `RCPT TO` for recipients whose local part starts with `prefix`.
#[derive(Clone, Debug)]
pub struct RecipientRule {
    /// Compared case-insensitively with the start of the local part.
    pub prefix: String,
    /// The reply; a 2xx reply accepts the recipient.
    pub reply: Reply,
    /// Answer `reply` only the first time the sink sees an address, `250` after that.
    pub once: bool,
}

impl RecipientRule {
    /// A rule that answers `code text` every time.
    pub fn always(prefix: &str, code: u16, text: &str) -> Self {
        RecipientRule {
            prefix: prefix.to_owned(),
            reply: (code, text.to_owned()),
            once: false,
        }
    }

    /// A rule that answers `code text` the first time the sink sees each address.
    pub fn once(prefix: &str, code: u16, text: &str) -> Self {
        RecipientRule {
            once: true,
            ..Self::always(prefix, code, text)
        }
    }

    /// `deferonce` → 451 then 250, `defer` → 451, `bounce` → 550, `full` → 552.
    pub fn defaults() -> Vec<RecipientRule> {
        vec![
            // Before `defer`, which also matches these recipients.
            Self::once("deferonce", 451, "4.3.0 Try later"),
            Self::always("defer", 451, "4.3.0 Try later"),
            Self::always("bounce", 550, "5.1.1 No such user"),
            Self::always("full", 552, "5.2.2 Mailbox full"),
        ]
    }
}

/// A message the sink accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The reverse path, without angle brackets; empty for `MAIL FROM:<>`.
    pub mail_from: String,
    /// The accepted recipients, in order.
    pub rcpt_to: Vec<String>,
    /// The message, dot-unstuffed, without the final `.CRLF` (so it ends in CRLF); only
    /// its header section past [`SinkOptions::keep_whole`] messages.
    pub data: Vec<u8>,
    /// The whole message's length.
    pub size: usize,
    /// Which connection carried it: 0 for the first the sink accepted.
    pub connection: u64,
    /// The address the connection came from.
    pub peer: std::net::IpAddr,
    /// The name the client gave in its last EHLO or HELO on that connection.
    pub ehlo: String,
    /// Whether the connection was upgraded with STARTTLS.
    pub tls: bool,
}

impl Received {
    /// The message as text, for assertions.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

/// A running sink. Dropping it stops the server and closes every connection.
pub struct Sink {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Sink {
    /// Starts a sink on `127.0.0.1` and an ephemeral port. Must run inside a tokio runtime.
    pub fn start(options: SinkOptions) -> Sink {
        Sink::start_on(0, options)
    }

    /// Starts a sink on `127.0.0.1:port` (0: an ephemeral one), for MTAs outside the
    /// process that relay to a fixed port. Must run inside a tokio runtime.
    pub fn start_on(port: u16, options: SinkOptions) -> Sink {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"));
        listener.set_nonblocking(true).expect("make the listener non-blocking");
        let listener = TcpListener::from_std(listener).expect("Sink::start runs inside a tokio runtime");
        let addr = listener.local_addr().expect("listener has an address");
        let shared = Arc::new(Shared {
            tls: options.starttls.then(|| tls_acceptor(&options.name)),
            options,
            log: Mutex::default(),
            received_count: watch::Sender::new(0),
            connections: AtomicU64::new(0),
            concurrent: AtomicUsize::new(0),
            concurrent_max: AtomicUsize::new(0),
            replies_pending: AtomicUsize::new(0),
            pipelined_after_data: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept(listener, shared.clone()));
        Sink { addr, shared, task }
    }

    /// The address to deliver to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every accepted message, in the order their end of data was answered.
    pub fn received(&self) -> Vec<Received> {
        self.shared.log().received.clone()
    }

    /// The recipients of the messages accepted after the first `from`, in order, without
    /// copying the messages.
    pub fn recipients_since(&self, from: usize) -> Vec<String> {
        let log = self.shared.log();
        log.received
            .get(from..)
            .unwrap_or_default()
            .iter()
            .map(|m| m.rcpt_to.first().cloned().unwrap_or_default())
            .collect()
    }

    /// How many messages were accepted, without copying them as [`Sink::received`] does.
    pub fn received_len(&self) -> usize {
        *self.shared.received_count.borrow()
    }

    /// Connections accepted since the start.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn concurrent(&self) -> usize {
        self.shared.concurrent.load(Ordering::SeqCst)
    }

    /// Messages received whole whose reply is still held back by [`SinkOptions::delay`]:
    /// a transaction caught between its data and its `250`.
    pub fn replies_pending(&self) -> usize {
        self.shared.replies_pending.load(Ordering::SeqCst)
    }

    /// Messages whose end of data arrived with the next command already behind it: the
    /// client pipelined the next transaction (RFC 2920).
    #[allow(dead_code, reason = "not every test binary looks")]
    pub fn pipelined_after_data(&self) -> usize {
        self.shared.pipelined_after_data.load(Ordering::SeqCst)
    }

    /// The most connections that were open at once.
    pub fn max_concurrent(&self) -> usize {
        self.shared.concurrent_max.load(Ordering::SeqCst)
    }

    /// Messages accepted on each connection, indexed by connection number.
    pub fn messages_per_connection(&self) -> Vec<usize> {
        let connections = usize::try_from(self.connections()).expect("test connections fit usize");
        let mut counts = vec![0; connections];
        for received in &self.shared.log().received {
            counts[usize::try_from(received.connection).expect("fits, as above")] += 1;
        }
        counts
    }

    /// The names given in EHLO and HELO, in order.
    pub fn ehlo_names(&self) -> Vec<String> {
        self.shared.log().ehlo_names.clone()
    }

    /// Waits until at least `count` messages are accepted, without copying them; false
    /// after `timeout`.
    pub async fn wait_for_count(&self, count: usize, timeout: Duration) -> bool {
        let mut received_count = self.shared.received_count.subscribe();
        matches!(
            tokio::time::timeout(timeout, received_count.wait_for(|&n| n >= count)).await,
            Ok(Ok(_))
        )
    }

    /// Waits until at least `count` messages are accepted and returns them all; panics,
    /// describing what did arrive, after `timeout`.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Received> {
        let mut received_count = self.shared.received_count.subscribe();
        let arrived = tokio::time::timeout(timeout, received_count.wait_for(|&n| n >= count)).await;
        // The sender lives in `self.shared`, so the inner result is always `Ok`.
        if !matches!(arrived, Ok(Ok(_))) {
            let received = self.received();
            let envelopes: Vec<_> = received.iter().map(|r| (&r.mail_from, &r.rcpt_to)).collect();
            panic!(
                "sink: timed out after {timeout:?} waiting for {count} messages; {} arrived {envelopes:?} \
                 over {} connections, EHLO names {:?}",
                received.len(),
                self.connections(),
                self.ehlo_names(),
            );
        }
        self.received()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Aborting the accept task drops its `JoinSet`, which aborts every connection.
        self.task.abort();
    }
}

/// What the server tasks share with the test.
struct Shared {
    options: SinkOptions,
    tls: Option<TlsAcceptor>,
    log: Mutex<Log>,
    /// Counts accepted messages, to wake [`Sink::wait_for`] without polling.
    received_count: watch::Sender<usize>,
    connections: AtomicU64,
    concurrent: AtomicUsize,
    concurrent_max: AtomicUsize,
    /// Messages whose data has arrived and whose reply waits out [`SinkOptions::delay`].
    replies_pending: AtomicUsize,
    /// Ends of data that came with the next command behind them.
    pipelined_after_data: AtomicUsize,
}

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    ehlo_names: Vec<String>,
    /// Lower-cased addresses a [`RecipientRule::once`] rule has already answered.
    seen_once: HashSet<String>,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        // Every change is a single push or insert, so a panic cannot leave it half-written.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The answer to `RCPT TO:<address>`.
    fn recipient_reply(&self, address: &str) -> Reply {
        let local = address
            .rsplit_once('@')
            .map_or(address, |(local, _)| local)
            .to_lowercase();
        let rule = self
            .options
            .recipients
            .iter()
            .find(|rule| local.starts_with(&rule.prefix.to_lowercase()));
        match rule {
            Some(rule) if !rule.once || self.log().seen_once.insert(address.to_lowercase()) => rule.reply.clone(),
            _ => (250, "2.1.5 OK".to_owned()),
        }
    }

    fn record(&self, mut received: Received) {
        let mut log = self.log();
        if log.received.len() >= self.options.keep_whole {
            let header_end = received
                .data
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(received.data.len(), |at| at + 4);
            received.data.truncate(header_end);
            received.data.shrink_to_fit();
        }
        log.received.push(received);
        drop(log);
        self.received_count.send_modify(|count| *count += 1);
    }
}

/// Counts a connection as open while it lives; dropped when its task ends or is aborted.
struct Open(Arc<Shared>);

impl Open {
    fn new(shared: Arc<Shared>) -> Self {
        let now = shared.concurrent.fetch_add(1, Ordering::SeqCst) + 1;
        shared.concurrent_max.fetch_max(now, Ordering::SeqCst);
        Open(shared)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.concurrent.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reply and what the driver does after sending it.
struct Step {
    reply: String,
    then: Then,
}

enum Then {
    ReadCommand,
    ReadData(Incoming),
    StartTls,
    Close,
}

impl Step {
    fn reply(code: u16, text: &str) -> Self {
        Step {
            reply: format!("{code} {text}\r\n"),
            then: Then::ReadCommand,
        }
    }

    fn close(code: u16, text: &str) -> Self {
        Step {
            then: Then::Close,
            ..Self::reply(code, text)
        }
    }
}

/// The SMTP state machine of one connection, without I/O.
struct Session {
    peer: std::net::IpAddr,
    ehlo: String,
    shared: Arc<Shared>,
    connection: u64,
    tls: bool,
    state: State,
}

/// What the client may do next.
enum State {
    /// Nothing before EHLO or HELO.
    Greeted,
    /// Start a transaction with MAIL.
    Ready,
    /// Add recipients with RCPT or send the message with DATA.
    Mail {
        from: String,
        utf8: bool,
        recipients: Vec<String>,
    },
}

impl Session {
    fn greeting(&self) -> Step {
        match &self.shared.options.greeting {
            Some((code, text)) if *code >= 400 => Step::close(*code, text),
            Some((code, text)) => Step::reply(*code, text),
            None => Step::reply(220, &format!("{} ESMTP herald test sink", self.shared.options.name)),
        }
    }

    /// Answers one command line, CRLF included.
    fn command(&mut self, line: &[u8]) -> Step {
        let Some(line) = line.strip_suffix(b"\r\n") else {
            return Step::reply(500, "5.5.2 Commands end with CRLF");
        };
        let Ok(line) = std::str::from_utf8(line) else {
            return Step::reply(500, "5.5.2 Command is not UTF-8");
        };
        let (verb, arguments) = line.split_once(' ').unwrap_or((line, ""));
        match verb.to_ascii_uppercase().as_str() {
            "EHLO" => self.hello(arguments, true),
            "HELO" => self.hello(arguments, false),
            "MAIL" => self.mail(arguments),
            "RCPT" => self.rcpt(arguments),
            "DATA" => self.data(arguments),
            "RSET" => {
                if !matches!(self.state, State::Greeted) {
                    self.state = State::Ready;
                }
                Step::reply(250, "2.0.0 OK")
            }
            "NOOP" => Step::reply(250, "2.0.0 OK"),
            "QUIT" => Step::close(221, "2.0.0 Bye"),
            "STARTTLS" if !self.shared.options.starttls => Step::reply(502, "5.5.1 STARTTLS not offered"),
            "STARTTLS" if self.tls => Step::reply(503, "5.5.1 TLS already active"),
            "STARTTLS" => Step {
                then: Then::StartTls,
                ..Step::reply(220, "2.0.0 Ready to start TLS")
            },
            _ => Step::reply(500, "5.5.2 Command not recognized"),
        }
    }

    fn hello(&mut self, name: &str, extended: bool) -> Step {
        let name = name.trim();
        if name.is_empty() {
            return Step::reply(501, "5.5.4 A domain is required");
        }
        self.shared.log().ehlo_names.push(name.to_owned());
        name.clone_into(&mut self.ehlo);
        self.state = State::Ready;
        let options = &self.shared.options;
        let mut lines = vec![format!("{} greets {name}", options.name)];
        if extended {
            lines.extend(["8BITMIME", "ENHANCEDSTATUSCODES"].map(str::to_owned));
            lines.extend(options.pipelining.then(|| "PIPELINING".to_owned()));
            lines.extend(options.size.map(|size| format!("SIZE {size}")));
            lines.extend(options.smtputf8.then(|| "SMTPUTF8".to_owned()));
            lines.extend((options.starttls && !self.tls).then(|| "STARTTLS".to_owned()));
        }
        let last = lines.len() - 1;
        let reply = lines
            .iter()
            .enumerate()
            .map(|(i, line)| format!("250{}{line}\r\n", if i == last { ' ' } else { '-' }))
            .collect();
        Step {
            reply,
            then: Then::ReadCommand,
        }
    }

    fn mail(&mut self, arguments: &str) -> Step {
        match self.state {
            State::Greeted => return Step::reply(503, "5.5.1 Send EHLO first"),
            State::Mail { .. } => return Step::reply(503, "5.5.1 Nested MAIL"),
            State::Ready => {}
        }
        let Some((from, parameters)) = path(arguments, "FROM:") else {
            return Step::reply(501, "5.5.4 Syntax: MAIL FROM:<address>");
        };
        let options = &self.shared.options;
        let mut utf8 = false;
        for parameter in parameters {
            let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
            match (key.to_ascii_uppercase().as_str(), options.size) {
                ("SIZE", Some(max)) => match value.parse::<usize>() {
                    Ok(declared) if declared > max => return Step::reply(552, "5.3.4 Message too big"),
                    Ok(_) => {}
                    Err(_) => return Step::reply(501, "5.5.4 Bad SIZE"),
                },
                ("BODY", _) if ["7BIT", "8BITMIME"].iter().any(|body| value.eq_ignore_ascii_case(body)) => {}
                ("SMTPUTF8", _) if options.smtputf8 && value.is_empty() => utf8 = true,
                _ => return Step::reply(555, &format!("5.5.4 Unsupported parameter {parameter}")),
            }
        }
        if !utf8 && !from.is_ascii() {
            return Step::reply(553, "5.6.7 Non-ASCII address without SMTPUTF8");
        }
        self.state = State::Mail {
            from,
            utf8,
            recipients: Vec::new(),
        };
        Step::reply(250, "2.1.0 OK")
    }

    fn rcpt(&mut self, arguments: &str) -> Step {
        let State::Mail { utf8, recipients, .. } = &mut self.state else {
            return Step::reply(503, "5.5.1 Send MAIL first");
        };
        let Some((to, parameters)) = path(arguments, "TO:") else {
            return Step::reply(501, "5.5.4 Syntax: RCPT TO:<address>");
        };
        if let Some(parameter) = parameters.first() {
            return Step::reply(555, &format!("5.5.4 Unsupported parameter {parameter}"));
        }
        if !to.contains('@') {
            return Step::reply(501, "5.1.3 Bad recipient address syntax");
        }
        if !*utf8 && !to.is_ascii() {
            return Step::reply(553, "5.6.7 Non-ASCII address without SMTPUTF8");
        }
        if recipients.len() >= RECIPIENTS_MAX {
            return Step::reply(452, "4.5.3 Too many recipients");
        }
        let (code, text) = self.shared.recipient_reply(&to);
        if (200..300).contains(&code) {
            recipients.push(to);
        }
        if code == 421 {
            // The service is closing: the connection goes with the reply.
            return Step::close(code, &text);
        }
        Step::reply(code, &text)
    }

    fn data(&mut self, arguments: &str) -> Step {
        if !arguments.is_empty() {
            return Step::reply(501, "5.5.4 DATA takes no arguments");
        }
        match &self.state {
            State::Mail { recipients, .. } if recipients.is_empty() => Step::reply(554, "5.5.1 No valid recipients"),
            State::Mail { .. } => {
                let len_max = self.shared.options.size.unwrap_or(MESSAGE_LEN_MAX);
                Step {
                    // 354 is not a final reply, so it carries no enhanced status code.
                    reply: "354 End data with <CR><LF>.<CR><LF>\r\n".to_owned(),
                    then: Then::ReadData(Incoming::new(len_max)),
                }
            }
            _ => Step::reply(503, "5.5.1 Send MAIL first"),
        }
    }

    /// Answers the end of data, recording the message if it is accepted.
    fn data_end(&mut self, message: Incoming) -> Step {
        let State::Mail { from, recipients, .. } = std::mem::replace(&mut self.state, State::Ready) else {
            unreachable!("data is only read after DATA was accepted in a transaction");
        };
        if message.line_too_long {
            return Step::reply(554, "5.6.0 Line longer than 1000 octets");
        }
        if message.bare_lf {
            return Step::reply(554, "5.6.0 Bare LF; lines end with CRLF");
        }
        if message.too_big {
            return Step::reply(552, "5.3.4 Message too big");
        }
        let (code, text) = requested_reply(&message.data).unwrap_or((250, "2.0.0 OK: queued".to_owned()));
        if (200..300).contains(&code) {
            let (connection, tls) = (self.connection, self.tls);
            self.shared.record(Received {
                mail_from: from,
                rcpt_to: recipients,
                size: message.data.len(),
                data: message.data,
                connection,
                peer: self.peer,
                ehlo: self.ehlo.clone(),
                tls,
            });
        }
        Step::reply(code, &text)
    }

    /// RFC 3207 §4.2: after the handshake the client starts again from EHLO.
    fn start_tls(&mut self) {
        self.tls = true;
        self.state = State::Greeted;
    }
}

/// The address in `<...>` after `keyword` (`FROM:` or `TO:`), and the parameters after it.
fn path<'a>(arguments: &'a str, keyword: &str) -> Option<(String, Vec<&'a str>)> {
    let head = arguments.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    // A space after the colon is not allowed by RFC 5321 but common enough to accept.
    let rest = arguments[keyword.len()..].trim_start().strip_prefix('<')?;
    let (address, parameters) = rest.split_once('>')?;
    Some((address.to_owned(), parameters.split_whitespace().collect()))
}

/// The reply an `X-Sink-Reply: 554 5.7.1 Content rejected` header asks for.
fn requested_reply(data: &[u8]) -> Option<Reply> {
    let header_end = data.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(data.len());
    let headers = String::from_utf8_lossy(&data[..header_end]);
    let value = headers.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("X-Sink-Reply").then_some(value)
    })?;
    let (code, text) = value.trim().split_once(' ')?;
    let code = code.parse().ok().filter(|code| (200..600).contains(code))?;
    Some((code, text.to_owned()))
}

/// The message read after DATA, a line at a time, dot-unstuffed (RFC 5321 §4.5.2).
struct Incoming {
    data: Vec<u8>,
    len_max: usize,
    line_start: bool,
    line_too_long: bool,
    bare_lf: bool,
    too_big: bool,
}

impl Incoming {
    fn new(len_max: usize) -> Self {
        Incoming {
            data: Vec::new(),
            len_max,
            line_start: true,
            line_too_long: false,
            bare_lf: false,
            too_big: false,
        }
    }

    /// Takes the next line, or the first [`LINE_LEN_MAX`] bytes of a longer one; `true` at
    /// the end-of-data line.
    fn push(&mut self, piece: &[u8]) -> bool {
        let line_start = std::mem::replace(&mut self.line_start, piece.ends_with(b"\n"));
        if line_start && piece == b".\r\n" {
            return true;
        }
        self.line_too_long |= !self.line_start;
        self.bare_lf |= self.line_start && !piece.ends_with(b"\r\n");
        let piece = if line_start {
            piece.strip_prefix(b".").unwrap_or(piece)
        } else {
            piece
        };
        if self.data.len() + piece.len() > self.len_max {
            self.too_big = true;
        } else {
            self.data.extend_from_slice(piece);
        }
        false
    }
}

fn tls_acceptor(name: &str) -> TlsAcceptor {
    // rcgen directly rather than `util::certificate`, so that a bench can include this
    // file on its own (`#[path = "../tests/util/sink.rs"] mod sink;`).
    let certified = rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("rcgen makes a certificate");
    let (certificate, key) = (certified.cert.pem(), certified.signing_key.serialize_pem());
    let certificate = CertificateDer::from_pem_slice(certificate.as_bytes()).expect("rcgen writes PEM certificates");
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("rcgen writes PEM keys");
    // An explicit provider, so the sink does not depend on a process-wide default.
    let config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![certificate], key)
        .expect("rcgen's certificate matches its key");
    TlsAcceptor::from(Arc::new(config))
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        while connections.try_join_next().is_some() {}
        let connection = shared.connections.fetch_add(1, Ordering::SeqCst);
        connections.spawn(serve(stream, (connection, peer.ip()), Open::new(shared.clone())));
    }
}

async fn serve(tcp: TcpStream, (connection, peer): (u64, std::net::IpAddr), open: Open) {
    let shared = open.0.clone();
    let mut session = Session {
        shared: shared.clone(),
        connection,
        peer,
        ehlo: String::new(),
        tls: false,
        state: State::Greeted,
    };
    let mut plain = BufReader::new(tcp);
    let greeting = session.greeting();
    if send(&mut plain, greeting.reply.as_bytes()).await.is_err() || matches!(greeting.then, Then::Close) {
        return;
    }
    if !matches!(converse(&mut plain, &mut session).await, Ok(Then::StartTls)) {
        return;
    }
    if shared.options.broken_tls {
        let _ = send(&mut plain, b"this is not TLS\r\n").await;
        return;
    }
    let acceptor = shared.tls.clone().expect("STARTTLS is only accepted when configured");
    // Dropping the reader discards plaintext sent after STARTTLS, which must not be taken
    // for commands inside TLS (CVE-2011-0411).
    let Ok(tls) = acceptor.accept(plain.into_inner()).await else {
        return;
    };
    session.start_tls();
    let _ = converse(&mut BufReader::new(tls), &mut session).await;
}

/// Runs commands until the session ends; returns [`Then::Close`] or [`Then::StartTls`].
async fn converse<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut BufReader<S>,
    session: &mut Session,
) -> io::Result<Then> {
    let mut line = Vec::new();
    let mut pending = Vec::new();
    loop {
        if !read_piece(stream, &mut line).await? {
            return Ok(Then::Close);
        }
        let mut step = if line.ends_with(b"\n") {
            session.command(&line)
        } else {
            Step::close(500, "5.5.2 Line too long")
        };
        if let Then::ReadData(message) = step.then {
            pending.extend_from_slice(step.reply.as_bytes());
            send(stream, &pending).await?;
            pending.clear();
            let message = receive(stream, message).await?;
            if stream.buffer().contains(&b'\n') {
                // The next command came with the end of data: the client pipelined it.
                session.shared.pipelined_after_data.fetch_add(1, Ordering::SeqCst);
            }
            session.shared.replies_pending.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(session.shared.options.delay).await;
            session.shared.replies_pending.fetch_sub(1, Ordering::SeqCst);
            step = session.data_end(message);
        }
        pending.extend_from_slice(step.reply.as_bytes());
        // RFC 2920 §3.1: answer a pipelined group at once, when no whole command is left.
        if !matches!(step.then, Then::ReadCommand) || !stream.buffer().contains(&b'\n') {
            send(stream, &pending).await?;
            pending.clear();
        }
        if !matches!(step.then, Then::ReadCommand) {
            return Ok(step.then);
        }
    }
}

/// Reads the message after `354` up to and including the end-of-data line.
async fn receive<S: AsyncRead + Unpin>(stream: &mut BufReader<S>, mut message: Incoming) -> io::Result<Incoming> {
    let mut piece = Vec::new();
    loop {
        if !read_piece(stream, &mut piece).await? {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if message.push(&piece) {
            return Ok(message);
        }
    }
}

/// Reads the next line, or the first [`LINE_LEN_MAX`] bytes of a longer one; `false` at
/// the end of the stream.
async fn read_piece<R: AsyncBufRead + Unpin>(reader: &mut R, piece: &mut Vec<u8>) -> io::Result<bool> {
    piece.clear();
    Ok(reader.take(LINE_LEN_MAX).read_until(b'\n', piece).await? > 0)
}

async fn send<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut BufReader<S>, bytes: &[u8]) -> io::Result<()> {
    stream.get_mut().write_all(bytes).await?;
    stream.get_mut().flush().await
}
