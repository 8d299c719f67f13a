//! The second factor: TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps, one step of
//! clock skew either way) and ten single-use recovery codes, kept as SHA-256 digests.

use base64::Engine;
use sha2::{Digest, Sha256};
use totp_rs::{Algorithm, Secret, TOTP};

/// Recovery codes made at enrolment.
pub const RECOVERY_CODES: usize = 10;

/// A new random secret (20 bytes, as RFC 4226 recommends).
pub fn secret() -> Vec<u8> {
    let mut bytes = [0u8; 20];
    aws_lc_rs::rand::fill(&mut bytes).expect("the system's random source");
    bytes.to_vec()
}

/// `secret` in base32, as authenticator apps take it typed.
pub fn base32(secret: &[u8]) -> String {
    Secret::Raw(secret.to_vec()).to_encoded().to_string()
}

/// The secret a base32 key (as shown at enrolment) stands for.
pub fn from_base32(key: &str) -> Option<Vec<u8>> {
    Secret::Encoded(key.trim().to_owned()).to_bytes().ok()
}

fn totp(secret: &[u8], account: &str, issuer: &str) -> Option<TOTP> {
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        30,
        secret.to_vec(),
        Some(issuer.to_owned()),
        account.to_owned(),
    )
    .ok()
}

/// Whether `code` is the current code of `secret` (or the step before or after), at
/// the Unix time `now_seconds`.
pub fn check(secret: &[u8], code: &str, now_seconds: u64) -> bool {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    // The account name is not part of the code; any valid one will do.
    totp(secret, "user", "herald").is_some_and(|t| t.check(&code, now_seconds))
}

/// The code of `secret` at `now_seconds` (for tests and the enrolment hint).
pub fn code(secret: &[u8], now_seconds: u64) -> String {
    totp(secret, "user", "herald")
        .map(|t| t.generate(now_seconds))
        .unwrap_or_default()
}

/// The `otpauth://` URL an authenticator app reads from the QR code.
pub fn url(secret: &[u8], account: &str, issuer: &str) -> String {
    // An account name with `:` is refused by totp-rs; it is only a label.
    let account = account.replace(':', "_");
    totp(secret, &account, issuer).map(|t| t.get_url()).unwrap_or_default()
}

/// The QR code of `url` as an SVG image, as a `data:` URL for an `<img>` (no script, no
/// request anywhere).
pub fn qr_data_url(url: &str) -> String {
    let Ok(code) = qrcode::QrCode::new(url.as_bytes()) else {
        return String::new();
    };
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .build();
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
}

/// Ten new recovery codes (`xxxxx-xxxxx`, lower-case base32 letters and digits) and
/// their digests.
pub fn recovery_codes() -> (Vec<String>, Vec<String>) {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut codes = Vec::with_capacity(RECOVERY_CODES);
    for _ in 0..RECOVERY_CODES {
        let mut bytes = [0u8; 10];
        aws_lc_rs::rand::fill(&mut bytes).expect("the system's random source");
        let chars: String = bytes
            .iter()
            .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
            .collect();
        codes.push(format!("{}-{}", &chars[..5], &chars[5..]));
    }
    let digests = codes.iter().map(|c| recovery_digest(c)).collect();
    (codes, digests)
}

/// The digest a recovery code is kept as.
pub fn recovery_digest(code: &str) -> String {
    let normal: String = code
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    hex(&Sha256::digest(normal.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_check_within_one_step_and_not_beyond() {
        let secret = secret();
        let now = 1_800_000_000;
        assert!(check(&secret, &code(&secret, now), now));
        assert!(check(&secret, &code(&secret, now - 30), now));
        assert!(!check(&secret, &code(&secret, now - 90), now));
        assert!(!check(&secret, "12345", now));
        assert!(!check(&secret, "abcdef", now));
        // RFC 6238's SHA-1 test vector: "12345678901234567890" at 59 s is 94287082.
        assert_eq!(code(b"12345678901234567890", 59), "287082");
    }

    #[test]
    fn recovery_codes_are_distinct_and_kept_as_digests() {
        let (codes, digests) = recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        assert_eq!(recovery_digest(&codes[0].to_uppercase()), digests[0]);
        assert!(url(&secret(), "a@b.test", "herald").starts_with("otpauth://totp/"));
        assert!(qr_data_url("otpauth://totp/x").starts_with("data:image/svg+xml;base64,"));
    }
}
