//! The DKIM body hash: relaxed body canonicalisation (RFC 6376 3.4.4) under SHA-256.
//!
//! mail-auth's canonicaliser writes the canonical body a byte at a time, which at 100 KB
//! cost more than the hash itself. This one finds, with `memchr`, the runs that the
//! canonical form keeps as they are (most of a body: words with single spaces between
//! them, on lines that end without spaces), hashes them straight from the body, gathers
//! the rest into a block, and makes exactly mail-auth's output (tested against it on
//! arbitrary bodies), so signatures are what they were.

use aws_lc_rs::digest;

/// Canonical bytes collected before they are hashed.
const BLOCK: usize = 16 * 1024;

/// Runs at least this long are hashed where they lie instead of being gathered first.
const DIRECT: usize = 512;

/// Bytes the relaxed canonicalisation looks at; every other byte is copied as it is.
const SPECIAL: [bool; 256] = {
    let mut special = [false; 256];
    special[b' ' as usize] = true;
    special[b'\t' as usize] = true;
    special[b'\r' as usize] = true;
    special[b'\n' as usize] = true;
    special
};

/// The SHA-256 of `body`'s relaxed canonical form: DKIM's `bh=` before base64.
pub fn relaxed_body_hash(body: &[u8]) -> digest::Digest {
    let mut hasher = Blocks {
        context: digest::Context::new(&digest::SHA256),
        // Not zeroed: a zeroed block per message cost more than hashing a small one.
        pending: Vec::with_capacity(BLOCK.min(body.len() + 2)),
    };
    relaxed(body, |bytes| hasher.write(bytes));
    hasher.finish()
}

/// Writes `body`'s relaxed canonical form to `write`, as mail-auth does: every CR is
/// dropped and every LF ends a line; a run of spaces and tabs becomes one space before an
/// ordinary byte and nothing at the end of a line; empty lines at the end are dropped;
/// a body with anything but line breaks ends in one CRLF.
fn relaxed(body: &[u8], mut write: impl FnMut(&[u8])) {
    let mut stops = Stops::new(body);
    let mut line_breaks = 0usize;
    let mut last = 0u8;
    let mut empty = true;
    let mut at = 0;
    while at < body.len() {
        let byte = body[at];
        match byte {
            b' ' | b'\t' => {
                for _ in 0..std::mem::take(&mut line_breaks) {
                    write(b"\r\n");
                }
                empty = false;
                at += 1;
            }
            b'\n' => {
                line_breaks += 1;
                at += 1;
            }
            b'\r' => at += 1,
            _ => {
                for _ in 0..std::mem::take(&mut line_breaks) {
                    write(b"\r\n");
                }
                if matches!(last, b' ' | b'\t') {
                    write(b" ");
                }
                let start = at;
                at = kept_run(body, at, &mut stops);
                write(&body[start..at]);
                empty = false;
            }
        }
        last = body[at - 1];
    }
    if !empty {
        write(b"\r\n");
    }
}

/// The end of the run from `at` (an ordinary byte) that the canonical form keeps as it
/// is: ordinary bytes, single spaces between them, and CRLFs between a line that ends in
/// an ordinary byte and one that starts with one. A run ends after an ordinary byte.
fn kept_run(body: &[u8], mut at: usize, stops: &mut Stops<'_>) -> usize {
    let ordinary = |at: usize| body.get(at).is_some_and(|byte| !SPECIAL[usize::from(*byte)]);
    loop {
        // Up to `stop`: ordinary bytes and single spaces, of which only one right before a
        // tab, a line break or the end is not kept.
        let stop = stops.next(at);
        if body[stop - 1] == b' ' {
            return stop - 1;
        }
        if body.get(stop) == Some(&b'\r') && body.get(stop + 1) == Some(&b'\n') && ordinary(stop + 2) {
            at = stop + 3;
        } else {
            return stop;
        }
    }
}

/// Finds where a kept run may end: a line break (`memchr2`, about once a line), or a tab
/// or two spaces in a row, which are rare, each found once and kept until it is passed.
struct Stops<'a> {
    body: &'a [u8],
    tab: Next,
    spaces: Next,
}

/// The first match at or after the last position asked about (`None` before the first
/// search).
#[derive(Default)]
struct Next(Option<usize>);

impl Next {
    fn at_or_after(&mut self, from: usize, search: impl FnOnce() -> Option<usize>, end: usize) -> usize {
        match self.0 {
            Some(at) if at >= from => at,
            _ => *self.0.insert(search().map_or(end, |i| from + i)),
        }
    }
}

impl<'a> Stops<'a> {
    fn new(body: &'a [u8]) -> Self {
        Stops {
            body,
            tab: Next::default(),
            spaces: Next::default(),
        }
    }

    /// The first line break, tab or pair of spaces at or after `from`, or the body's
    /// length.
    fn next(&mut self, from: usize) -> usize {
        let (body, end) = (self.body, self.body.len());
        let rest = body.get(from..).unwrap_or_default();
        let tab = self.tab.at_or_after(from, || memchr::memchr(b'\t', rest), end);
        let spaces = self.spaces.at_or_after(from, || memchr::memmem::find(rest, b"  "), end);
        let line_break = memchr::memchr2(b'\r', b'\n', rest).map_or(end, |i| from + i);
        line_break.min(tab).min(spaces)
    }
}

/// A SHA-256 fed in blocks of [`BLOCK`] bytes.
struct Blocks {
    context: digest::Context,
    pending: Vec<u8>,
}

impl Blocks {
    fn write(&mut self, bytes: &[u8]) {
        if bytes.len() >= DIRECT || self.pending.len() + bytes.len() > BLOCK {
            self.context.update(&self.pending);
            self.pending.clear();
        }
        if bytes.len() >= DIRECT {
            self.context.update(bytes);
        } else {
            self.pending.extend_from_slice(bytes);
        }
    }

    fn finish(mut self) -> digest::Digest {
        self.context.update(&self.pending);
        self.context.finish()
    }
}

#[cfg(test)]
mod tests {
    use mail_auth::common::headers::Writable;
    use mail_auth::dkim::Canonicalization;
    use proptest::prelude::*;

    use super::*;

    /// mail-auth's relaxed canonical form of `body`.
    fn mail_auth(body: &[u8]) -> Vec<u8> {
        let mut canonical = Vec::new();
        Canonicalization::Relaxed
            .canonical_body(body, u64::MAX)
            .write(&mut canonical);
        canonical
    }

    fn ours(body: &[u8]) -> Vec<u8> {
        let mut canonical = Vec::new();
        relaxed(body, |bytes| canonical.extend_from_slice(bytes));
        canonical
    }

    #[test]
    fn the_edges_canonicalise_as_mail_auth_does() {
        for body in [
            &b""[..],
            b"\r\n",
            b"\r\n\r\n",
            b" \r\n",
            b"\t",
            b"a",
            b"a\r\n",
            b"a \r\n",
            b"a  \t b\r\n",
            b" leading\r\n\r\n\r\n",
            b"a\r\n\r\n b\r\n\r\n",
            b"bare\nline feeds\n\n",
            b"lone\rcarriage \rreturns",
            b"a \rb",
            b"trailing\t\t",
            b"x\r\n \r\n",
        ] {
            assert_eq!(ours(body), mail_auth(body), "{:?}", String::from_utf8_lossy(body));
        }
    }

    /// A word longer than [`DIRECT`].
    static LONG_WORD: [u8; 700] = [b'z'; 700];

    proptest! {
        #[test]
        fn any_body_canonicalises_as_mail_auth_does(body in proptest::collection::vec(
            prop_oneof![Just(b' '), Just(b'\t'), Just(b'\r'), Just(b'\n'), Just(b'a'), Just(b'.'), Just(0xc3), any::<u8>()],
            0..300,
        )) {
            prop_assert_eq!(ours(&body), mail_auth(&body));
        }

        /// Bodies of words, long enough that runs kept as they are get hashed where they
        /// lie, with the irregular pieces that end such runs among them.
        #[test]
        fn any_prose_hashes_as_mail_auth_canonicalises(pieces in proptest::collection::vec(
            prop_oneof![
                8 => Just(&b"word"[..]),
                4 => Just(&b" "[..]),
                2 => Just(&b"\r\n"[..]),
                1 => Just(&b"  "[..]),
                1 => Just(&b"\t"[..]),
                1 => Just(&b" \r\n"[..]),
                1 => Just(&b"\n"[..]),
                1 => Just(&b"\r"[..]),
                1 => Just(&b"\r\n\r\n"[..]),
                1 => Just(&LONG_WORD[..]),
            ],
            0..2_000,
        )) {
            let body = pieces.concat();
            prop_assert_eq!(ours(&body), mail_auth(&body));
            let expected = digest::digest(&digest::SHA256, &mail_auth(&body));
            let ours = relaxed_body_hash(&body);
            prop_assert_eq!(ours.as_ref(), expected.as_ref());
        }
    }

    #[test]
    fn the_hash_is_sha256_of_the_canonical_body_across_blocks() {
        let mut body = Vec::new();
        for line in 0..5_000 {
            body.extend_from_slice(format!("line {line}\t with  spaces \r\n").as_bytes());
        }
        for line in 0..2_000 {
            body.extend_from_slice(format!("prose of line {line}, kept as it is\r\n").as_bytes());
        }
        body.extend_from_slice(&[b'y'; 3 * BLOCK]);
        body.extend_from_slice(b"\r\n\r\n");
        let expected = digest::digest(&digest::SHA256, &mail_auth(&body));
        assert_eq!(relaxed_body_hash(&body).as_ref(), expected.as_ref());
    }
}
