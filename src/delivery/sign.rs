//! DKIM signing: once per message, with the sending domain's stored key, relaxed/relaxed
//! canonicalisation. Parsed keys are cached per domain: parsing an RSA key costs more
//! than a signature.
//!
//! mail-auth selects and canonicalises the headers, writes the tag list and signs; the
//! body hash is [`super::canonical`]'s, which makes mail-auth's bytes without its
//! byte-at-a-time writes. The steps are those of mail-auth's own `DkimSigner`, whose
//! headers the tests compare byte for byte.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use herald_queue::Id;
use mail_auth::common::crypto::{DkimKey, Ed25519Key, RsaKey, Sha256, SigningKey};
use mail_auth::common::headers::{HeaderStream, HeaderWriter, Writable, Writer};
use mail_auth::dkim::{Canonicalization, Signature};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::canonical::relaxed_body_hash;
use crate::domains::{Domain, KeyAlgorithm};

/// Headers signed when present. `From` is signed twice (over-signed) so that a second
/// `From` cannot be added without breaking the signature.
const SIGNED_HEADERS: &[&str] = &[
    "From",
    "From",
    "Reply-To",
    "Subject",
    "Date",
    "Message-ID",
    "To",
    "Cc",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "In-Reply-To",
    "References",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

/// A domain's key and the signature each of its messages starts from.
struct Signer {
    key: DkimKey,
    template: Signature,
}

/// Signers by domain, built on first use.
#[derive(Default)]
pub struct Signers {
    cache: Mutex<HashMap<Id, (String, Arc<Signer>)>>,
}

impl Signers {
    /// The `DKIM-Signature` field for `domain` that goes in front of `message` (with its
    /// CRLF). CPU-bound (an RSA-2048 signature is about a quarter of a millisecond): call
    /// it off the async workers.
    pub fn sign(&self, domain: &Domain, message: &[u8]) -> Result<Vec<u8>, String> {
        let signer = self.signer(domain)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let header = signer
            .header(message, now)
            .map_err(|e| format!("cannot sign for {}: {e}", domain.name))?;
        Ok(header.into_bytes())
    }

    fn signer(&self, domain: &Domain) -> Result<Arc<Signer>, String> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((pkcs8, signer)) = cache.get(&domain.id)
            && *pkcs8 == domain.dkim.private_pkcs8
        {
            return Ok(Arc::clone(signer));
        }
        let signer = Arc::new(build(domain)?);
        cache.insert(domain.id, (domain.dkim.private_pkcs8.clone(), Arc::clone(&signer)));
        Ok(signer)
    }
}

fn build(domain: &Domain) -> Result<Signer, String> {
    let der = STANDARD
        .decode(&domain.dkim.private_pkcs8)
        .map_err(|e| format!("the DKIM key of {} is not base64: {e}", domain.name))?;
    let key = match domain.dkim.algorithm {
        KeyAlgorithm::Rsa => {
            RsaKey::<Sha256>::from_key_der(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der))).map(DkimKey::Rsa)
        }
        KeyAlgorithm::Ed25519 => Ed25519Key::from_pkcs8_maybe_unchecked_der(&der).map(DkimKey::Ed25519),
    }
    .map_err(|e| format!("the DKIM key of {} cannot be loaded: {e}", domain.name))?;
    Ok(Signer::new(key, &domain.name, &domain.dkim.selector))
}

impl Signer {
    fn new(key: DkimKey, domain: &str, selector: &str) -> Signer {
        let template = Signature {
            v: 1,
            a: key.algorithm(),
            d: domain.to_owned(),
            s: selector.to_owned(),
            h: SIGNED_HEADERS.iter().map(|name| (*name).to_owned()).collect(),
            ch: Canonicalization::Relaxed,
            cb: Canonicalization::Relaxed,
            ..Signature::default()
        };
        Signer { key, template }
    }

    /// The `DKIM-Signature` header (with its CRLF) for `message`, timestamped `now`
    /// (seconds since the epoch).
    fn header(&self, message: &[u8], now: u64) -> mail_auth::Result<String> {
        let mut fields = Fields::new(message);
        let mut signature = self.template.clone();
        let (_, headers, signed, _) = signature.canonicalize(&mut fields);
        if signed.is_empty() {
            return Err(mail_auth::Error::NoHeadersFound);
        }
        signature.bh = STANDARD.encode(relaxed_body_hash((&mut fields).body())).into_bytes();
        signature.t = now;
        signature.h = signed;
        let b = self.key.sign(Signable {
            headers,
            signature: &signature,
        })?;
        signature.b = STANDARD.encode(b).into_bytes();
        Ok(signature.to_header())
    }
}

/// A message's header fields, read as mail-auth's own (crate-private) reader does: a
/// name up to the first colon, a value up to the line break that no space or tab
/// continues (with that CRLF), a line without a colon as a name with an empty value; the
/// fields end at an empty line, and the body is everything after it.
struct Fields<'x> {
    message: &'x [u8],
    /// The next byte to read.
    at: usize,
    /// Where the current field began.
    start: usize,
}

impl<'x> Fields<'x> {
    fn new(message: &'x [u8]) -> Fields<'x> {
        Fields {
            message,
            at: 0,
            start: 0,
        }
    }

    /// Whether the line after the current byte continues the field.
    fn continued(&self) -> bool {
        matches!(self.message.get(self.at), Some(b' ' | b'\t'))
    }
}

impl<'x> HeaderStream<'x> for &mut Fields<'x> {
    fn next_header(&mut self) -> Option<(&'x [u8], &'x [u8])> {
        let mut colon = None;
        let mut last = 0u8;
        while let Some(&byte) = self.message.get(self.at) {
            let at = self.at;
            self.at += 1;
            match colon {
                None if byte == b':' => colon = Some(at),
                None if byte == b'\n' => {
                    if last == b'\r' || self.start == at {
                        return None;
                    }
                    if !self.continued() {
                        let name = &self.message[self.start..=at];
                        self.start = at + 1;
                        return Some((name, b""));
                    }
                }
                Some(colon) if byte == b'\n' && !self.continued() => {
                    let field = (&self.message[self.start..colon], &self.message[colon + 1..=at]);
                    self.start = at + 1;
                    return Some(field);
                }
                _ => {}
            }
            last = byte;
        }
        None
    }

    fn body(&mut self) -> &'x [u8] {
        self.message.get(self.at..).unwrap_or_default()
    }
}

/// What the signature signs: the canonical headers, then its own header without `b=`.
struct Signable<'a, H> {
    headers: H,
    signature: &'a Signature,
}

impl<H: Writable> Writable for Signable<'_, H> {
    fn write(self, writer: &mut impl Writer) {
        self.headers.write(writer);
        self.signature.write(writer, false);
    }
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::Ed25519KeyPair;
    use mail_auth::dkim::DkimSigner;

    use super::*;

    /// Messages whose header sections and bodies take every branch of the readers.
    const MESSAGES: &[&[u8]] = &[
        b"From: A <a@example.test>\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nHello.\r\n",
        b"From: a@example.test\r\nSubject: folded\r\n  over\r\n\tlines\r\nFrom: second@example.test\r\n\r\n  spaced \t body  \r\n\r\n\r\n",
        b"Received: x\r\nno colon here\r\nFrom: a@example.test\r\nX-Empty:\r\n\r\nbody\r\n",
        b"From: a@example.test\nTo: b@example.net\nSubject: bare line feeds\n\nbody\nlines\n",
        b"From: a@example.test\r\nSubject: no body\r\n",
        b"From: a@example.test\r\nSubject: empty body\r\n\r\n",
        b"FROM:a@example.test\r\nsubject :  odd  spacing  \r\nMessage-ID: <x@y>\r\n\r\n\r\n",
    ];

    fn keys() -> [(DkimKey, DkimKey); 2] {
        let rsa = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("RSA key");
        let rsa = AsDer::<Pkcs8V1Der<'_>>::as_der(&rsa).expect("DER").as_ref().to_vec();
        let rsa_key = || {
            DkimKey::Rsa(
                RsaKey::<Sha256>::from_key_der(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(rsa.clone())))
                    .expect("RSA"),
            )
        };
        let ed = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("Ed25519 key");
        let ed_key = || DkimKey::Ed25519(Ed25519Key::from_pkcs8_maybe_unchecked_der(ed.as_ref()).expect("Ed25519"));
        [(rsa_key(), rsa_key()), (ed_key(), ed_key())]
    }

    #[test]
    fn the_header_is_mail_auths_byte_for_byte() {
        for (ours, theirs) in keys() {
            let signer = Signer::new(ours, "example.test", "herald1");
            let reference = DkimSigner::from_key(theirs)
                .domain("example.test")
                .selector("herald1")
                .headers(SIGNED_HEADERS.iter().copied())
                .header_canonicalization(Canonicalization::Relaxed)
                .body_canonicalization(Canonicalization::Relaxed);
            for message in MESSAGES {
                let expected = reference.sign(message).expect("mail-auth signs");
                let header = signer.header(message, expected.t).expect("signs");
                assert_eq!(header, expected.to_header(), "{}", String::from_utf8_lossy(message));
            }
        }
    }
}
