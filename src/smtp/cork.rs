//! A transport under TLS that can hold back what is written to it, so that records the
//! server would send on their own go out with the next reply instead: one write, one
//! segment and one wake-up of the client fewer.
//!
//! Two such moments come with every TLS 1.3 submission session:
//!
//! - the session ticket, which rustls emits right after the client's Finished and which
//!   tokio-rustls flushes before the handshake future returns. The client sends `EHLO` with
//!   or right after its Finished, so the ticket can wait for the `EHLO` reply.
//! - the `221` to `QUIT` and the `close_notify` that follows it.
//!
//! [`Corked`] starts holding on its own when the client sends its first
//! `application_data` record after the server has written its first flight: in TLS 1.3
//! that is the encrypted Finished (every handshake record after the ServerHello travels as
//! `application_data`), after which the server has nothing left to send in the handshake.
//! In TLS 1.2 the first such record can only come with or after the client's Finished
//! (False Start), and the server's Finished would then be held: the driver [`release`]s
//! and flushes at once for anything but TLS 1.3.
//!
//! [`release`]: Corked::release

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The TLS record content type of `application_data`.
const APPLICATION_DATA: u8 = 23;
/// Bytes of a TLS record header: type, version (2), length (2).
const HEADER_LEN: usize = 5;

/// What happens to writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Nothing written yet: writes pass, reads are not looked at.
    Fresh,
    /// The first flight is out: writes pass, reads are scanned for the client's first
    /// `application_data` record.
    Watching,
    /// Writes are kept in memory and reported written; flushing keeps them.
    Holding,
    /// Writes pass; what was held goes first, in the same system call.
    Open,
}

/// `inner` with writes held back while [`Mode::Holding`]; see the module documentation.
#[derive(Debug)]
pub struct Corked<S> {
    inner: S,
    mode: Mode,
    held: Vec<u8>,
    records: RecordScan,
}

impl<S> Corked<S> {
    /// Wraps a transport on which nothing has been written yet.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            mode: Mode::Fresh,
            held: Vec::new(),
            records: RecordScan::default(),
        }
    }

    /// Holds writes from now on, until [`Corked::release`] or a shutdown.
    pub fn hold(&mut self) {
        self.mode = Mode::Holding;
    }

    /// Stops holding: what is held goes out with the next write, flush or shutdown.
    pub fn release(&mut self) {
        self.mode = Mode::Open;
    }

    /// Whether bytes are held.
    #[cfg(test)]
    fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

impl<S: AsyncWrite + Unpin> Corked<S> {
    /// Writes `held` and then as much of `bufs` as the transport takes, in one call when
    /// it can; returns how much of `bufs` was written. `held` is written first: nothing
    /// of `bufs` counts as written until all of it is.
    fn poll_write_after_held(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        loop {
            if self.held.is_empty() {
                return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            }
            let mut slices = Vec::with_capacity(bufs.len() + 1);
            slices.push(IoSlice::new(&self.held));
            slices.extend(bufs.iter().map(|buf| IoSlice::new(buf)));
            let written = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, &slices))?;
            if written == 0 {
                return Poll::Ready(Ok(0));
            }
            if written <= self.held.len() {
                self.held.drain(..written);
                continue;
            }
            let taken = written - self.held.len();
            self.held.clear();
            return Poll::Ready(Ok(taken));
        }
    }

    /// Writes out everything held.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.drain(..written);
        }
        Poll::Ready(Ok(()))
    }

    fn poll_write_slices(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        match self.mode {
            Mode::Holding => {
                let mut taken = 0;
                for buf in bufs {
                    self.held.extend_from_slice(buf);
                    taken += buf.len();
                }
                Poll::Ready(Ok(taken))
            }
            Mode::Fresh => {
                let written = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
                self.mode = Mode::Watching;
                Poll::Ready(Ok(written))
            }
            Mode::Watching | Mode::Open => self.poll_write_after_held(cx, bufs),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Corked<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.mode == Mode::Watching && this.records.finds_application_data(&buf.filled()[before..]) {
            this.mode = Mode::Holding;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corked<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// While holding, a flush keeps what is held: the flushes that come then are
    /// tokio-rustls' own at the end of the handshake and the driver's before its
    /// shutdown, which sends everything.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.mode == Mode::Holding {
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.mode = Mode::Open;
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Follows TLS record boundaries through a byte stream that arrives in pieces.
#[derive(Debug, Default)]
struct RecordScan {
    header: [u8; HEADER_LEN],
    header_len: usize,
    /// Bytes of the current record's body still to skip.
    body_left: usize,
}

impl RecordScan {
    /// Consumes `bytes`; whether a record of type `application_data` begins in them.
    fn finds_application_data(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let skip = self.body_left.min(bytes.len());
                self.body_left -= skip;
                bytes = &bytes[skip..];
                continue;
            }
            let take = (HEADER_LEN - self.header_len).min(bytes.len());
            self.header[self.header_len..self.header_len + take].copy_from_slice(&bytes[..take]);
            self.header_len += take;
            bytes = &bytes[take..];
            if self.header_len == HEADER_LEN {
                if self.header[0] == APPLICATION_DATA {
                    return true;
                }
                self.body_left = usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
                self.header_len = 0;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, body: usize) -> Vec<u8> {
        let len = u16::try_from(body).expect("short");
        let mut bytes = vec![kind, 3, 3];
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend(std::iter::repeat_n(kind, body));
        bytes
    }

    #[test]
    fn application_data_is_found_however_the_stream_is_split() {
        // A handshake record and a change_cipher_spec whose bodies are full of 23s, then
        // application data: only the third header counts.
        let mut stream = record(22, 300);
        stream.extend(record(20, 1));
        let first_app = stream.len();
        stream.extend(record(APPLICATION_DATA, 40));
        for split in [1, 2, 4, 5, 6, 299, stream.len()] {
            let mut scan = RecordScan::default();
            let mut seen = 0;
            let mut found_at = None;
            for chunk in stream.chunks(split) {
                seen += chunk.len();
                if scan.finds_application_data(chunk) {
                    found_at = Some(seen);
                    break;
                }
            }
            let found_at = found_at.expect("found");
            let header_end = first_app + HEADER_LEN;
            assert!(
                found_at >= header_end && found_at < header_end + split,
                "split {split}: found after {found_at} bytes"
            );
        }
    }

    #[test]
    fn handshake_records_alone_are_not_application_data() {
        let mut scan = RecordScan::default();
        let mut stream = record(22, 512);
        stream.extend(record(21, 2));
        assert!(!scan.finds_application_data(&stream));
    }

    #[tokio::test]
    async fn held_bytes_go_out_with_the_next_write_in_order() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, server) = tokio::io::duplex(1 << 16);
        let mut corked = Corked::new(server);
        let mut client = client;
        corked.write_all(b"first flight|").await.expect("write");
        corked.hold();
        corked.write_all(b"ticket|").await.expect("write");
        corked.flush().await.expect("flush holds");
        assert!(corked.holds());
        corked.release();
        corked.write_all(b"reply|").await.expect("write");
        assert!(!corked.holds());
        corked.hold();
        corked.write_all(b"221|").await.expect("write");
        corked.write_all(b"close_notify").await.expect("write");
        corked.shutdown().await.expect("shutdown");
        let mut got = String::new();
        client.read_to_string(&mut got).await.expect("read");
        assert_eq!(got, "first flight|ticket|reply|221|close_notify");
    }

    #[tokio::test]
    async fn the_client_s_first_application_data_starts_holding() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let mut corked = Corked::new(server);
        let mut buf = [0; 1024];
        // Before the server has written, nothing read counts.
        client.write_all(&record(APPLICATION_DATA, 3)).await.expect("write");
        let _ = corked.read(&mut buf).await.expect("read");
        corked.write_all(b"flight").await.expect("write");
        assert!(!corked.holds());
        client.write_all(&record(22, 10)).await.expect("write");
        let _ = corked.read(&mut buf).await.expect("read");
        corked.write_all(b"|more").await.expect("write");
        assert!(!corked.holds(), "a handshake record does not start holding");
        client.write_all(&record(APPLICATION_DATA, 10)).await.expect("write");
        let _ = corked.read(&mut buf).await.expect("read");
        corked.write_all(b"|ticket").await.expect("write");
        assert!(corked.holds());
        corked.release();
        corked.flush().await.expect("flush");
        assert!(!corked.holds());
        let mut got = [0; 18];
        client.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"flight|more|ticket");
    }
}
