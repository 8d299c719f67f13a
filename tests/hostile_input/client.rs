//! A raw SMTP client over TCP or TLS, bound to a chosen loopback address, that writes
//! bytes as they are and reads whole replies; and a raw HTTP/1.1 response reader. Every
//! wait is bounded by [`REPLY_WAIT`].

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;

use crate::REPLY_WAIT;

/// A byte stream an SMTP client runs over: TCP, or TLS over TCP.
pub(super) trait Wire: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Wire for T {}

/// One SMTP reply.
#[derive(Debug, Clone)]
pub(super) struct Reply {
    pub(super) code: u16,
    /// The enhanced status code of the last line, or `""`.
    pub(super) enhanced: String,
    /// Every line, without CRLF, joined by LF.
    pub(super) text: String,
}

impl Reply {
    fn is(&self, code: u16, enhanced: &str) -> bool {
        self.code == code && self.enhanced == enhanced
    }
}

/// Why no reply came.
#[derive(Debug)]
pub(super) enum NoReply {
    Closed,
    TimedOut,
    Failed(String),
}

impl fmt::Display for NoReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoReply::Closed => write!(f, "the connection closed"),
            NoReply::TimedOut => write!(f, "no reply within {REPLY_WAIT:?}"),
            NoReply::Failed(error) => write!(f, "the connection failed: {error}"),
        }
    }
}

/// A client that writes raw bytes and reads whole replies, every wait bounded by
/// [`REPLY_WAIT`], keeping a transcript for failure messages.
pub(super) struct Client<S> {
    pub(super) stream: S,
    /// Bytes read that do not yet make a whole reply.
    unread: Vec<u8>,
    pub(super) transcript: String,
}

impl Client<TcpStream> {
    /// A plaintext connection from `from`, greeted.
    pub(super) async fn plain(addr: SocketAddr, from: IpAddr) -> Result<Self, String> {
        let mut client = Client::new(connect(addr, from).await?);
        client.expect_reply(220, "").await?;
        Ok(client)
    }

    /// The TLS handshake after `220 Ready to start TLS`. Anything herald said in
    /// plaintext after that reply is an error: it would mean pipelined commands ran.
    pub(super) async fn starttls(self) -> Result<Client<TlsStream<TcpStream>>, String> {
        if !self.unread.is_empty() {
            return Err(format!(
                "plaintext after the STARTTLS reply: {}\n{}",
                self.unread.escape_ascii(),
                self.transcript
            ));
        }
        let mut client = Client::new(tls(self.stream).await?);
        client.transcript = self.transcript + "-- TLS --\n";
        Ok(client)
    }
}

impl Client<TlsStream<TcpStream>> {
    /// An implicit-TLS connection from `from`, greeted.
    pub(super) async fn implicit(addr: SocketAddr, from: IpAddr) -> Result<Self, String> {
        let mut client = Client::new(tls(connect(addr, from).await?).await?);
        client.expect_reply(220, "").await?;
        Ok(client)
    }
}

impl<S: Wire> Client<S> {
    fn new(stream: S) -> Self {
        Client {
            stream,
            unread: Vec::new(),
            transcript: String::new(),
        }
    }

    pub(super) fn boxed(self) -> Client<Box<dyn Wire>>
    where
        S: 'static,
    {
        Client {
            stream: Box::new(self.stream),
            unread: self.unread,
            transcript: self.transcript,
        }
    }

    /// Writes `bytes`. A failure is noted, not fatal: herald may close the connection
    /// before reading everything a hostile client sends.
    pub(super) async fn send(&mut self, bytes: &[u8]) {
        const SHOWN: usize = 240;
        let shown = &bytes[..bytes.len().min(SHOWN)];
        self.transcript.push_str(&format!("C: {}", shown.escape_ascii()));
        if bytes.len() > SHOWN {
            self.transcript.push_str(&format!("... ({} bytes)", bytes.len()));
        }
        self.transcript.push('\n');
        let written = async {
            self.stream.write_all(bytes).await?;
            self.stream.flush().await
        };
        if let Err(error) = written.await {
            self.transcript.push_str(&format!("   (write failed: {error})\n"));
        }
    }

    /// The next whole reply.
    pub(super) async fn reply(&mut self) -> Result<Reply, NoReply> {
        let deadline = tokio::time::Instant::now() + REPLY_WAIT;
        loop {
            if let Some(reply) = take_reply(&mut self.unread) {
                for line in reply.text.lines() {
                    self.transcript.push_str(&format!("S: {line}\n"));
                }
                return Ok(reply);
            }
            let mut chunk = [0u8; 16 * 1024];
            let read = match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => Err(NoReply::TimedOut),
                Ok(Ok(0)) => Err(NoReply::Closed),
                Ok(Ok(n)) => Ok(n),
                Ok(Err(error)) => Err(NoReply::Failed(error.to_string())),
            };
            match read {
                Ok(n) => self.unread.extend_from_slice(&chunk[..n]),
                Err(why) => {
                    self.transcript.push_str(&format!("   ({why})\n"));
                    return Err(why);
                }
            }
        }
    }

    pub(super) async fn expect_reply(&mut self, code: u16, enhanced: &str) -> Result<Reply, String> {
        match self.reply().await {
            Ok(reply) if reply.is(code, enhanced) => Ok(reply),
            Ok(reply) => Err(format!("wanted {code} {enhanced}, got {:?}", reply.text)),
            Err(why) => Err(format!("wanted {code} {enhanced}, but {why}")),
        }
    }

    /// Sends `line` with CRLF and expects the reply `code` `enhanced`.
    pub(super) async fn command(&mut self, line: &str, code: u16, enhanced: &str) -> Result<Reply, String> {
        self.send(format!("{line}\r\n").as_bytes()).await;
        self.expect_reply(code, enhanced).await
    }

    /// Waits for herald to end the connection without another reply.
    pub(super) async fn expect_closed(&mut self) -> Result<(), String> {
        match self.reply().await {
            // A reset is a close too: herald closed with unread input from the client.
            Err(NoReply::Closed | NoReply::Failed(_)) if self.unread.is_empty() => Ok(()),
            Err(NoReply::Closed | NoReply::Failed(_)) => {
                Err(format!("closed inside a reply: {}", self.unread.escape_ascii()))
            }
            Err(NoReply::TimedOut) => Err(format!("the connection is still open after {REPLY_WAIT:?}")),
            Ok(reply) => Err(format!("wanted the connection closed, got {:?}", reply.text)),
        }
    }
}

/// Takes one whole reply (every line up to one with a space after the code) off the
/// front of `unread`.
fn take_reply(unread: &mut Vec<u8>) -> Option<Reply> {
    let mut lines = Vec::new();
    let mut at = 0;
    loop {
        let end = at + find(&unread[at..], b"\r\n")?;
        let line = String::from_utf8_lossy(&unread[at..end]).into_owned();
        at = end + 2;
        let last = line.as_bytes().get(3) != Some(&b'-');
        lines.push(line);
        if last {
            break;
        }
    }
    unread.drain(..at);
    let last = lines.last()?;
    let code = last.get(..3).and_then(|code| code.parse().ok()).unwrap_or(0);
    let enhanced = last
        .get(4..)
        .and_then(|text| text.split(' ').next())
        .filter(|word| {
            let parts: Vec<&str> = word.split('.').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .unwrap_or_default()
        .to_owned();
    Some(Reply {
        code,
        enhanced,
        text: lines.join("\n"),
    })
}

/// A TCP connection to `addr` from the loopback address `from`.
pub(super) async fn connect(addr: SocketAddr, from: IpAddr) -> Result<TcpStream, String> {
    let socket = TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    socket
        .bind(SocketAddr::new(from, 0))
        .map_err(|e| format!("bind to {from}: {e}"))?;
    tokio::time::timeout(REPLY_WAIT, socket.connect(addr))
        .await
        .map_err(|_| format!("connecting to {addr} timed out"))?
        .map_err(|e| format!("connect to {addr}: {e}"))
}

/// A TLS client handshake on `stream`, accepting herald's self-signed certificate.
async fn tls(stream: TcpStream) -> Result<TlsStream<TcpStream>, String> {
    let config = herald_tls::client_config(herald_tls::Verification::Opportunistic, None)
        .map_err(|e| format!("TLS client config: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from("herald.test").map_err(|e| e.to_string())?;
    tokio::time::timeout(
        REPLY_WAIT,
        tokio_rustls::TlsConnector::from(config).connect(name, stream),
    )
    .await
    .map_err(|_| "the TLS handshake timed out".to_owned())?
    .map_err(|e| format!("TLS handshake: {e}"))
}

/// Reads HTTP/1.1 responses until the server closes the connection (`true`) or
/// [`REPLY_WAIT`] passes (`false`): each response's status and body.
pub(super) async fn read_responses<R: AsyncRead + Unpin>(stream: &mut R) -> (Vec<(u16, Bytes)>, bool) {
    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + REPLY_WAIT;
    let closed = loop {
        let mut chunk = [0u8; 8192];
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => break false,
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(n)) => received.extend_from_slice(&chunk[..n]),
        }
    };
    let mut responses = Vec::new();
    let mut rest = received.as_slice();
    while let Some(end) = find(rest, b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let length = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())
                    .flatten()
            })
            .unwrap_or(0);
        let body = &rest[end + 4..];
        let body = &body[..length.min(body.len())];
        responses.push((status, Bytes::copy_from_slice(body)));
        rest = &rest[end + 4 + body.len()..];
    }
    (responses, closed)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}
