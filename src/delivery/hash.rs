//! The DKIM signing key herald hands mail-auth: mail-auth's own key, with a SHA-256 that
//! buffers what it is given.
//!
//! mail-auth's relaxed body canonicalisation writes the canonical body to the hasher a
//! byte at a time, and its aws-lc hasher passes each write straight to
//! `EVP_DigestUpdate`: for a 100 KB message that is 100,000 calls into the library, which
//! cost several times the hashing itself. Collecting the writes into blocks first makes
//! the same digest with the same library, in a few dozen calls.

use aws_lc_rs::digest;
use mail_auth::common::crypto::{Algorithm, DkimKey, HashContext, HashImpl, HashOutput, SigningKey};
use mail_auth::common::headers::{Writable, Writer};

/// Bytes collected before they are hashed.
const BLOCK: usize = 16 * 1024;

/// A mail-auth DKIM key whose body hash goes through [`BufferedSha256`]. Signing itself
/// (the header hash and the RSA or Ed25519 operation) is mail-auth's, unchanged.
pub struct Key(pub DkimKey);

impl SigningKey for Key {
    type Hasher = BufferedSha256;

    fn sign(&self, input: impl Writable) -> mail_auth::Result<Vec<u8>> {
        self.0.sign(input)
    }

    fn algorithm(&self) -> Algorithm {
        self.0.algorithm()
    }
}

/// SHA-256 (aws-lc) fed in blocks of [`BLOCK`] bytes.
pub struct BufferedSha256;

impl HashImpl for BufferedSha256 {
    type Context = Buffered;

    fn hasher() -> Buffered {
        Buffered {
            context: digest::Context::new(&digest::SHA256),
            // Not zeroed: a zeroed block per hasher (two per message) cost more than the
            // hashing of a small message.
            pending: Vec::with_capacity(BLOCK),
        }
    }
}

/// A SHA-256 in progress and the bytes not yet given to it (at most [`BLOCK`]).
pub struct Buffered {
    context: digest::Context,
    pending: Vec<u8>,
}

impl Buffered {
    fn flush(&mut self) {
        self.context.update(&self.pending);
        self.pending.clear();
    }
}

impl Writer for Buffered {
    /// mail-auth's canonicalisation writes one or two bytes at a time: those go into the
    /// block by hand, not through a `memcpy` call each.
    #[inline]
    fn write(&mut self, data: &[u8]) {
        match *data {
            [byte] if self.pending.len() < BLOCK => self.pending.push(byte),
            [first, second] if self.pending.len() + 2 <= BLOCK => self.pending.extend_from_slice(&[first, second]),
            _ => self.write_slice(data),
        }
    }
}

impl Buffered {
    fn write_slice(&mut self, data: &[u8]) {
        if self.pending.len() + data.len() > BLOCK {
            self.flush();
        }
        if data.len() >= BLOCK {
            self.context.update(data);
        } else {
            self.pending.extend_from_slice(data);
        }
    }
}

impl HashContext for Buffered {
    fn complete(mut self) -> HashOutput {
        self.flush();
        HashOutput::Digest(self.context.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256_of_everything_written_however_it_is_split() {
        let data: Vec<u8> = (0..100_000_u32).map(|i| (i % 251) as u8).collect();
        let expected = digest::digest(&digest::SHA256, &data);
        for split in [1, 2, 3, 7, BLOCK - 1, BLOCK, BLOCK + 1, data.len()] {
            let mut hasher = BufferedSha256::hasher();
            for chunk in data.chunks(split) {
                hasher.write(chunk);
            }
            assert_eq!(hasher.complete().as_ref(), expected.as_ref(), "chunks of {split}");
        }
    }
}
