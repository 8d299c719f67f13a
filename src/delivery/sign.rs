//! DKIM signing with mail-auth: once per message, with the sending domain's stored key,
//! relaxed/relaxed canonicalisation. Parsed keys are cached per domain: parsing an RSA
//! key costs more than a signature.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use herald_queue::Id;
use mail_auth::common::crypto::{DkimKey as SigningKey, Ed25519Key, RsaKey, Sha256};
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::{Canonicalization, DkimSigner, Done};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::hash::Key;
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

type Signer = DkimSigner<Key, Done>;

/// Signers by domain, built on first use.
#[derive(Default)]
pub struct Signers {
    cache: Mutex<HashMap<Id, (String, Arc<Signer>)>>,
}

impl Signers {
    /// `message` with a `DKIM-Signature` header for `domain` in front. CPU-bound (an
    /// RSA-2048 signature is about half a millisecond): call it off the async workers.
    pub fn sign(&self, domain: &Domain, message: &[u8]) -> Result<Vec<u8>, String> {
        let signer = self.signer(domain)?;
        let signature = signer
            .sign(message)
            .map_err(|e| format!("cannot sign for {}: {e}", domain.name))?;
        let header = signature.to_header();
        let mut signed = Vec::with_capacity(header.len() + message.len());
        signed.extend_from_slice(header.as_bytes());
        signed.extend_from_slice(message);
        Ok(signed)
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
            RsaKey::<Sha256>::from_key_der(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der))).map(SigningKey::Rsa)
        }
        KeyAlgorithm::Ed25519 => Ed25519Key::from_pkcs8_maybe_unchecked_der(&der).map(SigningKey::Ed25519),
    }
    .map_err(|e| format!("the DKIM key of {} cannot be loaded: {e}", domain.name))?;
    Ok(DkimSigner::from_key(Key(key))
        .domain(domain.name.clone())
        .selector(domain.dkim.selector.clone())
        .headers(SIGNED_HEADERS.iter().copied())
        .header_canonicalization(Canonicalization::Relaxed)
        .body_canonicalization(Canonicalization::Relaxed))
}
