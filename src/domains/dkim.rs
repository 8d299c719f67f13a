//! DKIM key pairs, generated with aws-lc-rs.

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::config::DkimAlgorithm;

/// A domain's DKIM key. The private half never leaves the server: it has no place in any
/// API response, and `Debug` hides it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DkimKey {
    /// The selector: the key is published at `<selector>._domainkey.<domain>`.
    pub selector: String,
    /// The algorithm.
    pub algorithm: KeyAlgorithm,
    /// PKCS#8 DER of the private key, base64.
    pub private_pkcs8: String,
    /// The public key as DKIM's `p=` tag carries it, base64.
    pub public: String,
}

/// The algorithm of a stored key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyAlgorithm {
    /// RSA-2048 with SHA-256.
    Rsa,
    /// Ed25519 with SHA-256.
    Ed25519,
}

impl DkimKey {
    /// The TXT record value to publish.
    pub fn record_value(&self) -> String {
        let k = match self.algorithm {
            KeyAlgorithm::Rsa => "rsa",
            KeyAlgorithm::Ed25519 => "ed25519",
        };
        format!("v=DKIM1; k={k}; p={}", self.public)
    }
}

impl std::fmt::Debug for DkimKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DkimKey")
            .field("selector", &self.selector)
            .field("algorithm", &self.algorithm)
            .field("private_pkcs8", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The selector herald publishes keys under.
pub const SELECTOR: &str = "herald";

/// Generates a key pair. RSA generation takes tens of milliseconds of CPU: call it off
/// the async workers.
pub fn generate(algorithm: DkimAlgorithm) -> Result<DkimKey, aws_lc_rs::error::Unspecified> {
    let (algorithm, private, public) = match algorithm {
        DkimAlgorithm::Rsa => {
            let pair = aws_lc_rs::rsa::KeyPair::generate(KeySize::Rsa2048)?;
            let private: Pkcs8V1Der<'_> = pair.as_der()?;
            // DKIM's p= for RSA is the SubjectPublicKeyInfo DER, as `openssl rsa -pubout`.
            let public: PublicKeyX509Der<'_> = pair.public_key().as_der()?;
            (KeyAlgorithm::Rsa, private.as_ref().to_vec(), public.as_ref().to_vec())
        }
        DkimAlgorithm::Ed25519 => {
            let pair = Ed25519KeyPair::generate()?;
            let private: Pkcs8V1Der<'_> = pair.as_der()?;
            // RFC 8463: p= is the raw 32-byte public key.
            (
                KeyAlgorithm::Ed25519,
                private.as_ref().to_vec(),
                pair.public_key().as_ref().to_vec(),
            )
        }
    };
    Ok(DkimKey {
        selector: SELECTOR.to_owned(),
        algorithm,
        private_pkcs8: STANDARD.encode(private),
        public: STANDARD.encode(public),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_expected_shapes_and_hide_the_private_half() {
        let rsa = generate(DkimAlgorithm::Rsa).expect("rsa");
        assert_eq!(rsa.algorithm, KeyAlgorithm::Rsa);
        assert!(
            rsa.record_value().starts_with("v=DKIM1; k=rsa; p=MII"),
            "{}",
            rsa.record_value()
        );
        let ed = generate(DkimAlgorithm::Ed25519).expect("ed25519");
        assert_eq!(STANDARD.decode(&ed.public).expect("base64").len(), 32);
        assert!(ed.record_value().starts_with("v=DKIM1; k=ed25519; p="));
        assert!(!format!("{rsa:?}").contains(&rsa.private_pkcs8));
        assert_ne!(generate(DkimAlgorithm::Ed25519).expect("again").public, ed.public);
    }
}
