//! API keys: tokens, their digests and permissions.

use herald_queue::{Id, Timestamp};
use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Everything the team may do.
    FullAccess,
    /// Only send email (optionally from one domain).
    SendingAccess,
}

/// A stored API key. The token itself is never stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiKey {
    /// The key's id.
    pub id: Id,
    /// The team it acts for.
    pub team_id: Id,
    /// A display name.
    pub name: String,
    /// What it may do.
    pub permission: Permission,
    /// For a sending key bound to one domain, that domain.
    pub domain_id: Option<Id>,
    /// Hex SHA-256 of the token.
    pub digest: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last authenticated a request.
    pub last_used_at: Option<Timestamp>,
}

/// The lookup record under a token's digest: where its key lives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiKeyDigest {
    /// The key's team.
    pub team_id: Id,
    /// The key.
    pub key_id: Id,
}

/// When a key last authenticated a request, under the key's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiKeyUsage {
    /// The time.
    pub last_used_at: Timestamp,
}

/// An API key token, as clients send it. Its `Debug` form hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a supplied token is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Too short to carry enough randomness, or too long to be reasonable.
    #[error("an API key must be {min} to {max} characters long", min = Token::LEN_MIN, max = Token::LEN_MAX)]
    Length,
    /// Contains spaces, control characters or non-ASCII.
    #[error("an API key may contain only printable ASCII characters without spaces")]
    Characters,
}

impl Token {
    /// The prefix of generated tokens, as Resend's.
    pub const PREFIX: &'static str = "re_";
    /// Random characters in a generated token: 32 alphanumerics carry 190 bits.
    const RANDOM_CHARS: usize = 32;
    /// Shortest token accepted from outside (16 characters of a good generator carry at
    /// least the 95 bits of printable ASCII; the operator's choice is theirs).
    pub const LEN_MIN: usize = 16;
    /// Longest token accepted.
    pub const LEN_MAX: usize = 256;

    /// A new random token from the operating system's CSPRNG.
    pub fn generate() -> Token {
        let random: String = rand::rng()
            .sample_iter(&Alphanumeric)
            .take(Self::RANDOM_CHARS)
            .map(char::from)
            .collect();
        Token(format!("{}{random}", Self::PREFIX))
    }

    /// A token supplied by the operator (`HERALD_BOOTSTRAP_API_KEY`), checked.
    pub fn parse(text: &str) -> Result<Token, TokenError> {
        if !(Self::LEN_MIN..=Self::LEN_MAX).contains(&text.len()) {
            return Err(TokenError::Length);
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Characters);
        }
        Ok(Token(text.to_owned()))
    }

    /// A token as a client presented it, unchecked: it is only ever hashed for lookup.
    pub fn from_header(text: &str) -> Token {
        Token(text.to_owned())
    }

    /// The token itself, to show once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// SHA-256 of the token: the lookup key. A fast hash is right here: the token has
    /// 128+ random bits, so there is nothing for a slow hash to protect against.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// The digest in hex, as stored in [`ApiKey::digest`].
    pub fn digest_hex(&self) -> String {
        self.digest().iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_prefixed_random_and_hidden() {
        let a = Token::generate();
        let b = Token::generate();
        assert_ne!(a, b);
        assert!(a.expose().starts_with("re_"));
        assert_eq!(a.expose().len(), 35);
        assert!(!format!("{a:?}").contains(a.expose()));
        assert_eq!(a.digest_hex().len(), 64);
        assert_eq!(Token::parse(a.expose()).map(|t| t.digest()), Ok(a.digest()));
    }

    #[test]
    fn supplied_tokens_are_checked() {
        assert_eq!(Token::parse("short"), Err(TokenError::Length));
        assert_eq!(Token::parse(&"x".repeat(257)), Err(TokenError::Length));
        assert_eq!(Token::parse("re_with space_inside_it"), Err(TokenError::Characters));
        assert_eq!(Token::parse("re_ünïcödé_not_allowed"), Err(TokenError::Characters));
        assert!(Token::parse("re_test_0123456789abcdef").is_ok());
    }
}
