//! Standard Webhooks signatures (what Svix and Resend send): HMAC-SHA256 over
//! `<id>.<timestamp>.<body>` keyed with the secret's bytes, sent as `v1,<base64>` in both
//! the `webhook-*` and the `svix-*` headers, so receivers using either library verify it.

use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The `v1,<base64>` signature of `body` sent as message `id` at `timestamp` (Unix
/// seconds), keyed with the secret's decoded bytes.
pub fn sign(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut context = hmac::Context::with_key(&key);
    context.update(id.as_bytes());
    context.update(b".");
    context.update(timestamp.to_string().as_bytes());
    context.update(b".");
    context.update(body);
    format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
}

/// The request headers carrying message `id`, its `timestamp` and `signature`, under both
/// the Standard Webhooks and the Svix names.
pub fn headers(id: &str, timestamp: u64, signature: &str) -> [(&'static str, String); 6] {
    [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature.to_owned()),
        ("svix-id", id.to_owned()),
        ("svix-timestamp", timestamp.to_string()),
        ("svix-signature", signature.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example in the Standard Webhooks specification and Svix's documentation.
    #[test]
    fn the_published_test_vector_verifies() {
        let key = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("base64");
        let signature = sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn every_part_is_signed() {
        let key = b"secret-key-bytes";
        let base = sign(key, "msg_1", 1, b"{}");
        assert_ne!(base, sign(key, "msg_2", 1, b"{}"));
        assert_ne!(base, sign(key, "msg_1", 2, b"{}"));
        assert_ne!(base, sign(key, "msg_1", 1, b"{ }"));
        assert_ne!(base, sign(b"other-key-bytes!", "msg_1", 1, b"{}"));
        let headers = headers("msg_1", 1, &base);
        assert_eq!(headers[2], ("webhook-signature", base.clone()));
        assert_eq!(headers[5], ("svix-signature", base));
    }
}
