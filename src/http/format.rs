//! Wire formats shared by every resource: ids and path segments here, timestamps in
//! [`crate::wire`] (re-exported, since the records' JSON needs them too).

use herald_queue::Id;

pub use crate::wire::{iso8601, timestamp};

use super::ApiError;

/// A resource id from a path segment; `what` names the resource in the error.
pub fn id(text: &str, what: &str) -> Result<Id, ApiError> {
    text.parse()
        .map_err(|_| ApiError::invalid_parameter(format!("The {what} id must be a valid UUID, got {text:?}")))
}

/// A path segment naming a resource (`what`: "contact id or address", ...), decoded as
/// [`path_segment`] does, or the refusal of a malformed one.
pub fn named(target: &str, what: &str) -> Result<String, ApiError> {
    path_segment(target)
        .ok_or_else(|| ApiError::invalid_parameter(format!("The {what} {target:?} is not validly percent-encoded")))
}

/// A path segment with its `%XX` escapes decoded, as SDKs send an email address in a
/// path (`bob%40example.com`). `+` stays `+`: it means a space only in query strings.
/// `None` when an escape is malformed or the bytes are not UTF-8.
pub fn path_segment(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            // `from_str_radix` would also take a sign, as in `%+1`.
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            decoded.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            at += 3;
        } else {
            decoded.push(byte);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_uuids() {
        assert!(id("4ef9a417-02e9-4d39-ad75-9611e0fcc33c", "domain").is_ok());
        let err = id("nope", "domain").expect_err("not a uuid");
        assert_eq!(err.name, "invalid_parameter");
        assert!(err.message.contains("domain"));
    }

    #[test]
    fn path_segments_decode_percent_escapes_only() {
        assert_eq!(path_segment("bob%40Example.com").as_deref(), Some("bob@Example.com"));
        assert_eq!(path_segment("a+b%2Bc@x.test").as_deref(), Some("a+b+c@x.test"));
        assert_eq!(path_segment("%E7%94%A8@x.test").as_deref(), Some("用@x.test"));
        assert_eq!(path_segment("plain").as_deref(), Some("plain"));
        for bad in ["%", "%4", "%zz", "a%4", "%FF", "%+1"] {
            assert_eq!(path_segment(bad), None, "{bad:?}");
        }
    }
}
