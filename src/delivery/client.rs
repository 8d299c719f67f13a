//! The outbound SMTP client: one connection to one MX address, driven command by command
//! with pipelining where the server offers it, reporting an outcome for every recipient.
//!
//! mail-send's high-level `send` stops at the first refused recipient and does not
//! pipeline, so herald drives the transaction itself over a socket it connected to a
//! hickory-resolved address.

use std::io::IoSlice;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;

use super::job::Outgoing;
use super::reply::Reply;

/// Longest reply line read; RFC 5321 allows 512 octets, servers write longer.
const LINE_MAX: usize = 4096;
/// Reply lines at most, so a server cannot feed an endless multi-line reply.
const LINES_MAX: usize = 128;

/// Why a connection could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConnectionError {
    /// TCP, TLS or a timeout.
    #[error("{0}")]
    Network(String),
    /// The server answered with something other than the expected success.
    #[error("{0}")]
    Refused(Reply),
    /// The STARTTLS handshake failed (opportunistic delivery may go on in plaintext).
    #[error("{0}")]
    Tls(String),
    /// The source address could not be bound: this host's fault, not the receiver's.
    #[error("{0}")]
    Bind(String),
}

impl ConnectionError {
    /// The reply a recipient is recorded with.
    pub fn to_reply(&self) -> Reply {
        match self {
            ConnectionError::Network(text) | ConnectionError::Tls(text) => Reply::local(451, "4.4.1", text),
            ConnectionError::Bind(text) => Reply::local(451, "4.3.0", text),
            ConnectionError::Refused(reply) => reply.clone(),
        }
    }
}

/// Whether the envelope needs SMTPUTF8: a non-ASCII sender or recipient.
fn needs_utf8(sender: &str, recipients: &[String]) -> bool {
    !sender.is_ascii() || recipients.iter().any(|r| !r.is_ascii())
}

/// A plain or TLS socket.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    /// Only while a plain socket is being upgraded.
    Closed,
}

fn closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the connection is closed")
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
            Io::Closed => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Io::Closed => Poll::Ready(Err(closed())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Io::Closed => Poll::Ready(Ok(())),
        }
    }
}

/// What the server's EHLO reply offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// `STARTTLS`.
    pub starttls: bool,
    /// `PIPELINING`.
    pub pipelining: bool,
    /// `SIZE`, with its limit (0: none announced).
    pub size: Option<u64>,
    /// `8BITMIME`.
    pub eight_bit: bool,
    /// `SMTPUTF8`.
    pub smtputf8: bool,
    /// `AUTH` mechanisms, upper case.
    pub auth: Vec<String>,
}

impl Capabilities {
    fn parse(reply: &Reply) -> Self {
        let mut caps = Capabilities::default();
        for line in reply.lines.iter().skip(1) {
            let mut words = line.split_ascii_whitespace();
            let keyword = words.next().unwrap_or_default().to_ascii_uppercase();
            match keyword.as_str() {
                "STARTTLS" => caps.starttls = true,
                "PIPELINING" => caps.pipelining = true,
                "8BITMIME" => caps.eight_bit = true,
                "SMTPUTF8" => caps.smtputf8 = true,
                "SIZE" => caps.size = Some(words.next().and_then(|n| n.parse().ok()).unwrap_or(0)),
                "AUTH" => caps.auth = words.map(str::to_ascii_uppercase).collect(),
                _ => {}
            }
        }
        caps
    }
}

/// One SMTP connection after a successful EHLO.
pub struct Connection {
    io: BufReader<Io>,
    /// What the server offers.
    pub caps: Capabilities,
    /// The MX host name (or the relay's).
    pub host: String,
    /// The address connected to.
    pub ip: IpAddr,
    /// The negotiated TLS version, when encrypted.
    pub tls: Option<String>,
    /// Whether the TLS session was verified against trusted roots.
    pub verified: bool,
    /// The connection cannot carry another transaction (RSET failed).
    pub broken: bool,
    /// Whether the last transaction got as far as sending the message's data.
    pub data_sent: bool,
    /// The next transaction's `MAIL`, `RCPT`s and `DATA` went out behind the last
    /// message's data (see [`Connection::send`]); their replies are still to be read.
    pub grouped: bool,
    timeout: Duration,
}

/// The commands that open a transaction, written ahead behind the message before it.
#[derive(Debug)]
pub struct Group {
    bytes: Vec<u8>,
}

/// How to treat TLS on a connection.
#[derive(Clone)]
pub struct TlsChoice {
    /// Accepts any certificate: encryption without authentication.
    pub opportunistic: Arc<rustls::ClientConfig>,
    /// Verifies against the web PKI roots plus `[delivery] ca_file`.
    pub verified: Arc<rustls::ClientConfig>,
    /// The domain requires verified TLS.
    pub required: bool,
    /// Skip STARTTLS even when offered: the retry after a failed opportunistic handshake.
    pub plaintext: bool,
}

impl Connection {
    /// Connects to `addr`, reads the greeting, says EHLO as `hostname`, upgrades with
    /// STARTTLS when offered (required when `tls.required`), and authenticates with
    /// `login` (a smarthost's credentials), which is only ever sent encrypted.
    pub async fn open(
        host: &str,
        addr: SocketAddr,
        hostname: &str,
        tls: &TlsChoice,
        login: Option<(&str, &str)>,
        timeouts: (Duration, Duration),
        source: Option<IpAddr>,
    ) -> Result<Connection, ConnectionError> {
        let (connect_timeout, timeout) = timeouts;
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        }
        .map_err(|e| ConnectionError::Network(format!("cannot open a socket: {e}")))?;
        if let Some(source) = source {
            socket.bind(SocketAddr::new(source, 0)).map_err(|e| {
                tracing::warn!(%source, error = %e, "cannot bind a source address: is it configured on this host?");
                ConnectionError::Bind(format!("cannot bind the source address {source}: {e}"))
            })?;
        }
        let tcp = tokio::time::timeout(connect_timeout, socket.connect(addr))
            .await
            .map_err(|_| ConnectionError::Network(format!("connecting to {host} [{}] timed out", addr.ip())))?
            .map_err(|e| ConnectionError::Network(format!("cannot connect to {host} [{}]: {e}", addr.ip())))?;
        let _ = tcp.set_nodelay(true);
        let mut connection = Connection {
            io: BufReader::new(Io::Plain(tcp)),
            caps: Capabilities::default(),
            host: host.to_owned(),
            ip: addr.ip(),
            tls: None,
            verified: false,
            broken: false,
            data_sent: false,
            grouped: false,
            timeout,
        };
        connection.expect(220).await?;
        connection.ehlo(hostname).await?;
        if connection.caps.starttls && !tls.plaintext {
            connection.starttls(tls).await?;
            connection.ehlo(hostname).await?;
        } else if tls.required {
            return Err(ConnectionError::Network(format!(
                "TLS is required for this domain, and {host} does not offer STARTTLS"
            )));
        }
        if let Some((user, password)) = login {
            connection.login(user, password).await?;
        }
        Ok(connection)
    }

    /// `AUTH PLAIN`, refused on a connection that is not encrypted.
    async fn login(&mut self, user: &str, password: &str) -> Result<(), ConnectionError> {
        if self.tls.is_none() {
            return Err(ConnectionError::Network(format!(
                "{} offers no STARTTLS; the relay credentials are never sent in plaintext",
                self.host
            )));
        }
        if !self.caps.auth.iter().any(|m| m == "PLAIN") {
            return Err(ConnectionError::Network(format!(
                "{} does not offer AUTH PLAIN",
                self.host
            )));
        }
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0{password}"));
        self.write(format!("AUTH PLAIN {token}\r\n").as_bytes()).await?;
        self.expect(235).await.map(drop)
    }

    async fn ehlo(&mut self, hostname: &str) -> Result<(), ConnectionError> {
        self.write(format!("EHLO {hostname}\r\n").as_bytes()).await?;
        let reply = self.read_reply().await?;
        if reply.code != 250 {
            return Err(ConnectionError::Refused(reply));
        }
        self.caps = Capabilities::parse(&reply);
        Ok(())
    }

    async fn starttls(&mut self, tls: &TlsChoice) -> Result<(), ConnectionError> {
        self.write(b"STARTTLS\r\n").await?;
        let reply = self.read_reply().await?;
        if reply.code != 220 {
            if tls.required {
                return Err(ConnectionError::Refused(reply));
            }
            // Opportunistic TLS goes on in plaintext when the offer is withdrawn.
            return Ok(());
        }
        if !self.io.buffer().is_empty() {
            // Anything after the 220 arrived before encryption: an injection attempt.
            return Err(ConnectionError::Tls(format!(
                "{} sent data after its STARTTLS reply",
                self.host
            )));
        }
        let Io::Plain(tcp) = std::mem::replace(&mut self.io, BufReader::new(Io::Closed)).into_inner() else {
            return Err(ConnectionError::Network("STARTTLS on an encrypted connection".into()));
        };
        let config = if tls.required {
            &tls.verified
        } else {
            &tls.opportunistic
        };
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|_| ConnectionError::Network(format!("{} is not a valid TLS server name", self.host)))?;
        let stream = tokio::time::timeout(
            self.timeout,
            tokio_rustls::TlsConnector::from(Arc::clone(config)).connect(name, tcp),
        )
        .await
        .map_err(|_| ConnectionError::Tls(format!("TLS handshake with {} timed out", self.host)))?
        .map_err(|e| ConnectionError::Tls(format!("TLS handshake with {} failed: {e}", self.host)))?;
        self.tls = stream
            .get_ref()
            .1
            .protocol_version()
            .and_then(|v| v.as_str())
            .map(|v| v.replace('_', "").replace("TLSv1", "TLSv1."));
        self.verified = tls.required;
        self.io = BufReader::new(Io::Tls(Box::new(stream)));
        Ok(())
    }

    /// The commands that open a transaction of `message` from `sender` to `recipients`
    /// when the server takes them pipelined; otherwise the reply refusing the message
    /// before anything is sent (an address that needs SMTPUTF8, or a message over the
    /// announced SIZE), or `None` for a server without PIPELINING.
    pub fn group(&self, sender: &str, recipients: &[String], message: &Outgoing) -> Result<Option<Group>, Reply> {
        let needs_utf8 = needs_utf8(sender, recipients);
        if needs_utf8 && !self.caps.smtputf8 {
            return Err(Reply::local(
                553,
                "5.6.7",
                "the receiving server does not support SMTPUTF8 addresses",
            ));
        }
        if let Some(limit) = self.caps.size.filter(|&l| l > 0)
            && message.len() as u64 > limit
        {
            return Err(Reply::local(
                552,
                "5.3.4",
                &format!(
                    "the message ({} bytes) exceeds the receiving server's limit of {limit}",
                    message.len()
                ),
            ));
        }
        if !self.caps.pipelining {
            return Ok(None);
        }
        let mut bytes = self.mail_command(sender, message, needs_utf8).into_bytes();
        for recipient in recipients {
            bytes.extend_from_slice(format!("RCPT TO:<{recipient}>\r\n").as_bytes());
        }
        bytes.extend_from_slice(b"DATA\r\n");
        Ok(Some(Group { bytes }))
    }

    /// `MAIL FROM` with the parameters the message and the server call for.
    fn mail_command(&self, sender: &str, message: &Outgoing, needs_utf8: bool) -> String {
        let mut mail = format!("MAIL FROM:<{sender}>");
        if self.caps.size.is_some() {
            mail.push_str(&format!(" SIZE={}", message.len()));
        }
        if self.caps.eight_bit && !message.is_ascii() {
            mail.push_str(" BODY=8BITMIME");
        }
        if needs_utf8 {
            mail.push_str(" SMTPUTF8");
        }
        mail.push_str("\r\n");
        mail
    }

    /// Sends one message to `recipients` in one transaction. Returns one reply per
    /// recipient: the RCPT refusal, or the end-of-data reply.
    ///
    /// Right before the message's data goes out, `next` may give the [`Group`] of the
    /// transaction to follow (RFC 2920 lets a client pipeline the next `MAIL` behind the
    /// end of data): it goes out in the same write, and [`Connection::grouped`] says so.
    /// The next `send` on this connection must then be of that transaction; it reads
    /// the group's replies instead of writing it. A server that takes messages back to
    /// back so costs one round trip per message, not two.
    pub async fn send(
        &mut self,
        sender: &str,
        recipients: &[String],
        message: &Outgoing,
        next: impl FnOnce(&Connection) -> Option<Group>,
    ) -> Result<Vec<Reply>, ConnectionError> {
        self.data_sent = false;
        let written = std::mem::take(&mut self.grouped);
        let group = if written {
            // Checked when it was written.
            None
        } else {
            match self.group(sender, recipients, message) {
                Ok(group) => group,
                Err(reply) => return Ok(vec![reply; recipients.len()]),
            }
        };
        let mut rcpts = Vec::with_capacity(recipients.len());
        let outcome = if written || group.is_some() {
            if let Some(group) = &group {
                self.write(&group.bytes).await?;
            }
            let mail_reply = self.read_reply().await?;
            for _ in recipients {
                rcpts.push(self.read_reply().await?);
            }
            let data_reply = self.read_reply().await?;
            (mail_reply, data_reply)
        } else {
            let needs_utf8 = needs_utf8(sender, recipients);
            self.write(self.mail_command(sender, message, needs_utf8).as_bytes())
                .await?;
            let mail_reply = self.read_reply().await?;
            if !mail_reply.is_success() {
                (mail_reply.clone(), mail_reply)
            } else {
                for recipient in recipients {
                    self.write(format!("RCPT TO:<{recipient}>\r\n").as_bytes()).await?;
                    rcpts.push(self.read_reply().await?);
                }
                if rcpts.iter().any(Reply::is_success) {
                    self.write(b"DATA\r\n").await?;
                    (mail_reply, self.read_reply().await?)
                } else {
                    (mail_reply, Reply::local(554, "5.5.1", "no valid recipients"))
                }
            }
        };
        let (mail_reply, data_reply) = outcome;
        if !mail_reply.is_success() {
            if data_reply.code == 354 {
                self.write(b".\r\n").await?;
                self.read_reply().await?;
            }
            self.reset().await?;
            return Ok(vec![mail_reply; recipients.len()]);
        }
        if data_reply.code != 354 {
            self.reset().await?;
            return Ok(rcpts
                .into_iter()
                .map(|r| if r.is_success() { data_reply.clone() } else { r })
                .collect());
        }
        if !rcpts.iter().any(Reply::is_success) {
            // The server took DATA without recipients; end the empty message.
            self.write(b".\r\n").await?;
            self.read_reply().await?;
            self.reset().await?;
            return Ok(rcpts);
        }
        // Dot-stuffed, with the terminating `.` line. The signature field never starts a
        // line with a dot and ends in CRLF, so the message after it starts a line.
        self.data_sent = true;
        let following = next(self);
        let mut pieces = vec![message.header.as_slice()];
        pieces.extend(herald_smtp::stuffed(&message.body));
        if let Some(following) = &following {
            pieces.push(&following.bytes);
        }
        self.write_pieces(&pieces).await?;
        self.grouped = following.is_some();
        let end = self.read_reply().await?;
        Ok(rcpts
            .into_iter()
            .map(|r| if r.is_success() { end.clone() } else { r })
            .collect())
    }

    /// `RSET`, so the connection can carry another transaction. Its failure only marks
    /// the connection broken: the replies already read stand.
    async fn reset(&mut self) -> Result<(), ConnectionError> {
        let ok = match self.write(b"RSET\r\n").await {
            Ok(()) => self.read_reply().await.is_ok_and(|reply| reply.is_success()),
            Err(_) => false,
        };
        self.broken |= !ok;
        Ok(())
    }

    /// `QUIT`, without waiting long for the answer. A connection with a transaction's
    /// commands written ahead is only closed: the server may be reading its data, and
    /// would take `QUIT` as part of it (a message never ended is never delivered).
    pub async fn quit(mut self) {
        if !self.grouped && self.write(b"QUIT\r\n").await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.read_reply()).await;
        }
        let _ = self.io.get_mut().shutdown().await;
    }

    async fn expect(&mut self, code: u16) -> Result<Reply, ConnectionError> {
        let reply = self.read_reply().await?;
        if reply.code == code {
            Ok(reply)
        } else {
            Err(ConnectionError::Refused(reply))
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), ConnectionError> {
        self.write_pieces(&[bytes]).await
    }

    /// Writes `pieces` one after the other, in as few vectored writes as the socket takes.
    async fn write_pieces(&mut self, pieces: &[&[u8]]) -> Result<(), ConnectionError> {
        let io = self.io.get_mut();
        let result = tokio::time::timeout(self.timeout, async {
            let mut slices: Vec<IoSlice<'_>> = pieces.iter().map(|piece| IoSlice::new(piece)).collect();
            let mut rest = &mut slices[..];
            IoSlice::advance_slices(&mut rest, 0);
            while !rest.is_empty() {
                let written = io.write_vectored(rest).await?;
                if written == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                IoSlice::advance_slices(&mut rest, written);
            }
            io.flush().await
        })
        .await;
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ConnectionError::Network(format!(
                "writing to {} failed: {e}",
                self.host
            ))),
            Err(_) => Err(ConnectionError::Network(format!("writing to {} timed out", self.host))),
        }
    }

    /// Reads one reply, all its lines.
    async fn read_reply(&mut self) -> Result<Reply, ConnectionError> {
        let host = self.host.clone();
        let result = tokio::time::timeout(self.timeout, async {
            let mut lines = Vec::new();
            loop {
                let mut line = Vec::new();
                let n = (&mut self.io)
                    .take(LINE_MAX as u64)
                    .read_until(b'\n', &mut line)
                    .await?;
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ));
                }
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                let Some((code, last, rest)) = Reply::split_line(&text) else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("not an SMTP reply: {text:?}"),
                    ));
                };
                lines.push((code, rest.to_owned()));
                if last {
                    return Ok(Reply::from_lines(lines));
                }
                if lines.len() >= LINES_MAX {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a reply of more than {LINES_MAX} lines"),
                    ));
                }
            }
        })
        .await;
        match result {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(e)) => Err(ConnectionError::Network(format!("reading from {host} failed: {e}"))),
            Err(_) => Err(ConnectionError::Network(format!("{host} did not answer in time"))),
        }
    }
}
