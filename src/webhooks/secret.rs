//! Signing secrets: `whsec_` and the base64 of random bytes, as the Standard Webhooks
//! scheme (and Resend, through Svix) writes them.

use aws_lc_rs::error::Unspecified;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The prefix every signing secret carries.
pub const PREFIX: &str = "whsec_";

/// Random bytes in a new secret. The Standard Webhooks specification allows 24 to 64;
/// 32, SHA-256's output size, is as much key as HMAC-SHA256 can make use of.
pub const SECRET_BYTES: usize = 32;

/// A webhook's signing secret. It is stored as given to the caller, because signing
/// needs the key itself; it leaves the server only in the API responses that Resend's
/// own include, never in logs (`Debug` hides it, and the request log redacts the
/// `signing_secret` field).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SigningSecret(String);

impl SigningSecret {
    /// A new secret from the system's random generator.
    pub fn generate() -> Result<SigningSecret, Unspecified> {
        let mut bytes = [0_u8; SECRET_BYTES];
        aws_lc_rs::rand::fill(&mut bytes)?;
        Ok(SigningSecret(format!("{PREFIX}{}", STANDARD.encode(bytes))))
    }

    /// A secret as a store kept it ([`expose`](Self::expose)'s text).
    pub fn from_stored(text: String) -> SigningSecret {
        SigningSecret(text)
    }

    /// The secret as the caller sees it: `whsec_...`.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The HMAC key: the bytes the base64 after the prefix encodes. `None` when the
    /// stored text is not such a secret, which [`generate`](Self::generate) never makes.
    pub fn key(&self) -> Option<Vec<u8>> {
        let encoded = self.0.strip_prefix(PREFIX)?;
        STANDARD.decode(encoded).ok().filter(|key| !key.is_empty())
    }
}

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_base64_of_random_bytes_and_hidden_from_debug() {
        let secret = SigningSecret::generate().expect("random");
        assert!(secret.expose().starts_with("whsec_"), "{}", secret.expose());
        assert_eq!(secret.key().expect("key").len(), SECRET_BYTES);
        assert_ne!(SigningSecret::generate().expect("random").expose(), secret.expose());
        let debug = format!("{secret:?}");
        assert!(!debug.contains(&secret.expose()[PREFIX.len()..]), "{debug}");
        assert_eq!(debug, "SigningSecret(<redacted>)");
    }

    #[test]
    fn the_key_is_the_decoded_base64_after_the_prefix() {
        // The Standard Webhooks specification's example secret.
        let secret = SigningSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned());
        assert_eq!(
            secret.key().expect("key"),
            STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("base64")
        );
        assert_eq!(SigningSecret("MfKQ9r8G".to_owned()).key(), None);
        assert_eq!(SigningSecret("whsec_!!".to_owned()).key(), None);
    }

    #[test]
    fn secrets_serialise_as_plain_strings() {
        let secret = SigningSecret("whsec_AAAA".to_owned());
        assert_eq!(serde_json::to_string(&secret).expect("json"), "\"whsec_AAAA\"");
        let back: SigningSecret = serde_json::from_str("\"whsec_AAAA\"").expect("json");
        assert_eq!(back.expose(), "whsec_AAAA");
    }
}
