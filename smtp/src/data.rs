//! The DATA receiver and the BDAT chunk receiver.
//!
//! DATA ends only at `CRLF . CRLF` (the dot at the start of a line), and a line starting
//! with a dot has that dot removed (RFC 5321 4.5.2). Any bare CR or bare LF is refused:
//! another server might end the message there (SMTP smuggling, CVE-2023-51764), so
//! herald takes nothing after it as data or as a new command. BDAT chunks are counted
//! bytes, checked for the same bare line endings.

/// Why data is refused. Each is final for the transaction; after a bare line ending the
/// driver closes the connection, since the client's idea of where the data ends differs
/// from herald's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// A LF not preceded by CR.
    #[error("bare LF in message data; lines must end with CRLF")]
    BareLf,
    /// A CR not followed by LF.
    #[error("bare CR in message data; lines must end with CRLF")]
    BareCr,
    /// The message is larger than the limit (`552 5.3.4`).
    #[error("message larger than {0} bytes")]
    TooLarge(usize),
}

/// How far a receiver got with the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the input consumed; the rest belongs to what follows (pipelined commands).
    pub consumed: usize,
    /// Whether the data (or chunk) is complete.
    pub done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    LineStart,
    Middle,
    Cr,
    Dot,
    DotCr,
}

/// Receives DATA: feed it bytes, get the unstuffed message at the end.
#[derive(Debug)]
pub struct DataReceiver {
    state: State,
    message: Vec<u8>,
    size_max: usize,
}

impl DataReceiver {
    /// A receiver for a message of at most `size_max` bytes (after unstuffing).
    pub fn new(size_max: usize) -> Self {
        Self::expecting(size_max, 0)
    }

    /// A receiver for a message of at most `size_max` bytes that holds `expected` bytes
    /// from the start (the size the client declared with `MAIL ... SIZE=`), so that a
    /// message of the declared size is never copied to a larger buffer as it arrives.
    /// What is held is capped by `size_max`, and by [`DataReceiver::RESERVE_MAX`]; past
    /// it, the buffer grows as the message does.
    pub fn expecting(size_max: usize, expected: usize) -> Self {
        DataReceiver {
            state: State::LineStart,
            message: Vec::with_capacity(Self::reserve(size_max, expected)),
            size_max,
        }
    }

    /// The most a declared size makes a receiver hold before any byte has arrived.
    pub const RESERVE_MAX: usize = 16 * 1024 * 1024;

    /// What a message of at most `size_max` bytes that declared `expected` holds from the
    /// start: `expected`, capped by `size_max` and [`DataReceiver::RESERVE_MAX`]. BDAT's
    /// buffer holds as much.
    pub fn reserve(size_max: usize, expected: usize) -> usize {
        expected.min(size_max).min(Self::RESERVE_MAX)
    }

    /// Consumes bytes of `input` up to the end of the data.
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress, DataError> {
        let mut i = 0;
        while let Some(&byte) = input.get(i) {
            let in_line = match self.state {
                State::Middle => true,
                State::LineStart => byte != b'.',
                _ => false,
            };
            if in_line && byte != b'\r' && byte != b'\n' {
                i = self.take_lines(input, i)?;
                continue;
            }
            self.state = match (self.state, byte) {
                (State::LineStart, b'.') => State::Dot,
                (State::DotCr, b'\n') => {
                    return Ok(Progress {
                        consumed: i + 1,
                        done: true,
                    });
                }
                (State::Cr, b'\n') => {
                    self.push(b"\r\n")?;
                    State::LineStart
                }
                (State::Cr | State::DotCr, _) => return Err(DataError::BareCr),
                (_, b'\n') => return Err(DataError::BareLf),
                (State::Dot, b'\r') => State::DotCr,
                (_, b'\r') => State::Cr,
                // The dot that starts a line is dropped ("transparency"); the byte after
                // it is data.
                (State::LineStart | State::Middle | State::Dot, other) => {
                    self.push(&[other])?;
                    State::Middle
                }
            };
            i += 1;
        }
        Ok(Progress {
            consumed: input.len(),
            done: false,
        })
    }

    /// Takes, in one piece, the data from `start` (a byte of a line that is not a dot at
    /// its start, a CR or a LF) through every whole line after it that does not start
    /// with a dot, up to the next byte that needs the state machine (a dot starting a
    /// line, a CR at the end of the input) or the end of the input. Returns where it
    /// stopped, with the state there.
    fn take_lines(&mut self, input: &[u8], start: usize) -> Result<usize, DataError> {
        let mut at = start;
        loop {
            let Some(found) = memchr::memchr2(b'\r', b'\n', &input[at..]) else {
                self.push(&input[start..])?;
                self.state = State::Middle;
                return Ok(input.len());
            };
            let end = at + found;
            match (input[end], input.get(end + 1), input.get(end + 2)) {
                // A whole line, and the next one starts with an ordinary byte.
                (b'\r', Some(b'\n'), Some(next)) if !matches!(next, b'.' | b'\r' | b'\n') => at = end + 2,
                // A whole line, and what follows is for the state machine (or not here).
                (b'\r', Some(b'\n'), _) => {
                    self.push(&input[start..end + 2])?;
                    self.state = State::LineStart;
                    return Ok(end + 2);
                }
                // The rest, from a CR whose LF is not here yet or a bare CR or LF, is the
                // state machine's.
                _ => {
                    self.push(&input[start..end])?;
                    self.state = State::Middle;
                    return Ok(end);
                }
            }
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), DataError> {
        if self.message.len() + bytes.len() > self.size_max {
            return Err(DataError::TooLarge(self.size_max));
        }
        self.message.extend_from_slice(bytes);
        Ok(())
    }

    /// Bytes the receiver holds room for.
    pub fn capacity(&self) -> usize {
        self.message.capacity()
    }

    /// The message received (complete once `feed` said done).
    pub fn into_message(self) -> Vec<u8> {
        self.message
    }
}

/// Receives one BDAT chunk of a known size into the message being assembled.
#[derive(Debug)]
pub struct BdatReceiver {
    remaining: u64,
    previous: Option<u8>,
}

impl BdatReceiver {
    /// A receiver for a chunk of `size` bytes; `previous` is the last byte of the message
    /// so far, so that a CR ending one chunk pairs with the LF starting the next.
    pub fn new(size: u64, previous: Option<u8>) -> Self {
        BdatReceiver {
            remaining: size,
            previous,
        }
    }

    /// Appends bytes of the chunk from `input` to `message` (at most `size_max` in all).
    pub fn feed(&mut self, input: &[u8], message: &mut Vec<u8>, size_max: usize) -> Result<Progress, DataError> {
        let take = usize::try_from(self.remaining).unwrap_or(usize::MAX).min(input.len());
        let chunk = &input[..take];
        // Only CRs and LFs need a look: each CR must be followed by a LF, each LF preceded
        // by a CR, across chunk boundaries too. `previous` is the byte before `next`.
        let mut previous = self.previous;
        let mut next = 0;
        for at in memchr::memchr2_iter(b'\r', b'\n', chunk) {
            if at > next {
                // Other bytes since the last CR or LF: a CR just before them was bare.
                if previous == Some(b'\r') {
                    return Err(DataError::BareCr);
                }
                previous = Some(chunk[at - 1]);
            }
            match (previous, chunk[at]) {
                (Some(b'\r'), b'\n') => {}
                (Some(b'\r'), _) => return Err(DataError::BareCr),
                (_, b'\n') => return Err(DataError::BareLf),
                _ => {}
            }
            previous = Some(chunk[at]);
            next = at + 1;
        }
        if next < chunk.len() {
            if previous == Some(b'\r') {
                return Err(DataError::BareCr);
            }
            previous = chunk.last().copied();
        }
        self.previous = previous;
        if message.len() + take > size_max {
            return Err(DataError::TooLarge(size_max));
        }
        message.extend_from_slice(chunk);
        self.remaining -= take as u64;
        Ok(Progress {
            consumed: take,
            done: self.remaining == 0,
        })
    }

    /// Whether the message may end after this chunk: not in the middle of a CRLF.
    pub fn ends_cleanly(&self) -> bool {
        self.previous != Some(b'\r')
    }
}

/// Dot-stuffs a message for sending with DATA and appends the terminator: the inverse of
/// [`DataReceiver`], for tests, fuzzing and herald's own clients. `message` must use CRLF
/// line endings.
pub fn stuff(message: &[u8]) -> Vec<u8> {
    stuffed(message).concat()
}

/// [`stuff`] without copying: the pieces that, written in order (one vectored write),
/// make the dot-stuffed message and its terminator. Most messages have no line starting
/// with a dot, and are then one piece followed by the terminator.
pub fn stuffed(message: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::with_capacity(3);
    // A dot that starts a line is doubled: at the very start, and after each LF.
    if message.first() == Some(&b'.') {
        pieces.push(&b"."[..]);
    }
    let mut copied = 0;
    for at in memchr::memmem::find_iter(message, b"\n.") {
        pieces.push(&message[copied..=at]);
        pieces.push(b".");
        copied = at + 1;
    }
    pieces.push(&message[copied..]);
    if !message.is_empty() && !message.ends_with(b"\r\n") {
        pieces.push(b"\r\n");
    }
    pieces.push(b".\r\n");
    pieces
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn what_a_receiver_holds_from_the_start_is_capped() {
        assert_eq!(DataReceiver::new(1000).capacity(), 0);
        assert!(DataReceiver::expecting(1000, 500).capacity() >= 500);
        assert!(DataReceiver::expecting(1000, 1 << 40).capacity() < 2000);
        let huge = DataReceiver::expecting(usize::MAX, usize::MAX).capacity();
        assert!((DataReceiver::RESERVE_MAX..2 * DataReceiver::RESERVE_MAX).contains(&huge));
    }

    fn receive(input: &[u8]) -> Result<(Vec<u8>, usize), DataError> {
        let mut receiver = DataReceiver::new(1 << 20);
        let progress = receiver.feed(input)?;
        assert!(progress.done, "not done: {:?}", String::from_utf8_lossy(input));
        Ok((receiver.into_message(), progress.consumed))
    }

    #[test]
    fn data_ends_only_at_crlf_dot_crlf_and_is_unstuffed() {
        let (message, consumed) = receive(b"Subject: x\r\n\r\n..leading dot\r\n.\r\nQUIT\r\n").expect("valid");
        assert_eq!(message, b"Subject: x\r\n\r\n.leading dot\r\n");
        assert_eq!(
            consumed,
            b"Subject: x\r\n\r\n..leading dot\r\n.\r\n".len(),
            "pipelined QUIT is left"
        );
        let (empty, _) = receive(b".\r\n").expect("empty message");
        assert!(empty.is_empty());
        let (dot_word, _) = receive(b".x\r\n.\r\n").expect("valid");
        assert_eq!(dot_word, b"x\r\n", "a leading dot is dropped even without a second one");
    }

    #[test]
    fn every_smuggling_variant_is_refused() {
        for (input, error) in [
            (&b"a\r\n\n.\n"[..], DataError::BareLf),
            (b"a\n.\r\n", DataError::BareLf),
            (b"a\r\n.\n", DataError::BareLf),
            (b"a\r.\r", DataError::BareCr),
            (b"a\r\n.\r", DataError::BareCr),
            (b"a\r\n.\rMAIL FROM:<x@y>\r\n", DataError::BareCr),
            (b"a\rb\r\n.\r\n", DataError::BareCr),
            (b"\n", DataError::BareLf),
        ] {
            let mut receiver = DataReceiver::new(1 << 20);
            let outcome = receiver.feed(input);
            let refused = match outcome {
                Err(e) => e == error,
                Ok(progress) => !progress.done && input.ends_with(b"\r") && error == DataError::BareCr,
            };
            assert!(refused, "{:?} gave {outcome:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn bytes_split_anywhere_give_the_same_result() {
        let input = b"Subject: x\r\n\r\n.hidden\r\nline\r\n.\r\n";
        for split in 0..input.len() {
            let mut receiver = DataReceiver::new(1 << 20);
            let first = receiver.feed(&input[..split]).expect("first part");
            assert!(!first.done);
            let second = receiver.feed(&input[split..]).expect("second part");
            assert!(second.done);
            assert_eq!(receiver.into_message(), b"Subject: x\r\n\r\nhidden\r\nline\r\n");
        }
    }

    #[test]
    fn the_size_limit_applies_to_the_message() {
        let mut receiver = DataReceiver::new(10);
        assert_eq!(receiver.feed(b"0123456789abc\r\n.\r\n"), Err(DataError::TooLarge(10)));
    }

    #[test]
    fn bdat_chunks_are_counted_and_checked() {
        let mut message = Vec::new();
        let mut chunk = BdatReceiver::new(12, None);
        let progress = chunk
            .feed(b"Subject: x\r\nRSET\r\n", &mut message, 1000)
            .expect("chunk");
        assert_eq!(
            progress,
            Progress {
                consumed: 12,
                done: true
            }
        );
        assert_eq!(message, b"Subject: x\r\n");
        let mut split = BdatReceiver::new(2, Some(b'\r'));
        assert_eq!(
            split.feed(b"\nA", &mut message, 1000).map(|p| p.done),
            Ok(true),
            "CR|LF across chunks"
        );
        let mut bad = BdatReceiver::new(3, None);
        assert_eq!(bad.feed(b"a\nb", &mut message, 1000), Err(DataError::BareLf));
        let mut ending = BdatReceiver::new(1, None);
        ending.feed(b"\r", &mut message, 1000).expect("chunk");
        assert!(!ending.ends_cleanly());
        let mut large = BdatReceiver::new(5, None);
        assert_eq!(large.feed(b"12345", &mut Vec::new(), 4), Err(DataError::TooLarge(4)));
    }

    proptest! {
        #[test]
        fn stuffing_then_receiving_round_trips(lines in proptest::collection::vec("[ -~]{0,40}", 0..20)) {
            let mut message = Vec::new();
            for line in &lines {
                message.extend_from_slice(line.as_bytes());
                message.extend_from_slice(b"\r\n");
            }
            let (received, consumed) = receive(&stuff(&message)).expect("valid");
            prop_assert_eq!(&received, &message);
            prop_assert_eq!(consumed, stuff(&message).len());
        }

        /// The receivers scan for CR and LF in bulk; byte by byte, as the RFC reads,
        /// they must give the same answer for any bytes split anyhow.
        #[test]
        fn bulk_scanning_matches_byte_by_byte(
            input in proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'.'), Just(b'a')], 0..64),
            split in 0usize..64,
        ) {
            let split = split.min(input.len());
            let mut receiver = DataReceiver::new(1 << 20);
            let mut outcome = receiver.feed(&input[..split]);
            if let Ok(first) = outcome
                && !first.done
            {
                outcome = receiver.feed(&input[split..]).map(|p| Progress { consumed: split + p.consumed, ..p });
            }
            let expected = byte_by_byte_data(&input);
            prop_assert_eq!(outcome.map(|p| (p.consumed, p.done)), expected.clone().map(|(_, c, d)| (c, d)));
            if let Ok((message, _, true)) = expected {
                prop_assert_eq!(receiver.into_message(), message);
            }

            let mut message = Vec::new();
            let mut bdat = BdatReceiver::new(input.len() as u64, None);
            let first = bdat.feed(&input[..split], &mut message, 1 << 20);
            let both = first.and_then(|_| bdat.feed(&input[split..], &mut message, 1 << 20));
            prop_assert_eq!(both.map(|_| bdat.ends_cleanly()), byte_by_byte_bdat(&input));

            prop_assert_eq!(stuff(&input), byte_by_byte_stuff(&input));
        }
    }

    /// DATA byte by byte: (message, consumed, done).
    fn byte_by_byte_data(input: &[u8]) -> Result<(Vec<u8>, usize, bool), DataError> {
        let mut state = State::LineStart;
        let mut message = Vec::new();
        for (i, &byte) in input.iter().enumerate() {
            state = match (state, byte) {
                (State::LineStart, b'.') => State::Dot,
                (State::DotCr, b'\n') => return Ok((message, i + 1, true)),
                (State::Cr, b'\n') => {
                    message.extend_from_slice(b"\r\n");
                    State::LineStart
                }
                (State::Cr | State::DotCr, _) => return Err(DataError::BareCr),
                (_, b'\n') => return Err(DataError::BareLf),
                (State::Dot, b'\r') => State::DotCr,
                (_, b'\r') => State::Cr,
                (_, other) => {
                    message.push(other);
                    State::Middle
                }
            };
        }
        Ok((message, input.len(), false))
    }

    /// A BDAT chunk byte by byte: whether it ends cleanly, or why it is refused.
    fn byte_by_byte_bdat(input: &[u8]) -> Result<bool, DataError> {
        let mut previous = None;
        for &byte in input {
            match (previous, byte) {
                (Some(b'\r'), b'\n') => {}
                (Some(b'\r'), _) => return Err(DataError::BareCr),
                (_, b'\n') => return Err(DataError::BareLf),
                _ => {}
            }
            previous = Some(byte);
        }
        Ok(previous != Some(b'\r'))
    }

    /// Dot-stuffing byte by byte.
    fn byte_by_byte_stuff(message: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut line_start = true;
        for &byte in message {
            if line_start && byte == b'.' {
                out.push(b'.');
            }
            out.push(byte);
            line_start = byte == b'\n';
        }
        if !message.is_empty() && !message.ends_with(b"\r\n") {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b".\r\n");
        out
    }
}
