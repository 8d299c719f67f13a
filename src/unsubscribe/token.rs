//! Unsubscribe tokens: the team, the email, the topic (if any) and the recipient's
//! address, with an HMAC-SHA256 over them (and a kind byte of their own, so no tracking
//! URL's signature is ever a token's). URL-safe base64, `<payload>.<tag>`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_queue::Id;

use crate::tracking::Signer;

/// The kind byte signed with every token.
const KIND: &[u8] = b"u";

/// Longest address a token carries, in bytes (RFC 5321's path limit).
const ADDRESS_MAX: usize = 256;

/// What a verified token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsubscribe {
    /// The team.
    pub team_id: Id,
    /// The email the link was sent in.
    pub email_id: Id,
    /// The topic the email was sent on.
    pub topic_id: Option<Id>,
    /// The recipient.
    pub address: String,
}

impl Unsubscribe {
    /// The token, signed by `signer`.
    pub fn token(&self, signer: &Signer) -> String {
        let payload = self.payload();
        let tag = signer.tag(&[KIND, &payload]);
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(tag))
    }

    /// What `token` names, when `signer` signed it.
    pub fn verify(signer: &Signer, token: &str) -> Option<Unsubscribe> {
        let (payload, tag) = token.split_once('.')?;
        if payload.len() > 1024 || tag.len() > 64 {
            return None;
        }
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        if !signer.verify_tag(&[KIND, &payload], &tag) {
            return None;
        }
        let team_id = Id::from_slice(payload.get(..16)?)?;
        let email_id = Id::from_slice(payload.get(16..32)?)?;
        let (topic_id, address) = match payload.get(32)? {
            0 => (None, payload.get(33..)?),
            1 => (Some(Id::from_slice(payload.get(33..49)?)?), payload.get(49..)?),
            _ => return None,
        };
        let address = String::from_utf8(address.to_vec()).ok()?;
        (!address.is_empty() && address.len() <= ADDRESS_MAX).then_some(Unsubscribe {
            team_id,
            email_id,
            topic_id,
            address,
        })
    }

    fn payload(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(49 + self.address.len());
        payload.extend_from_slice(self.team_id.as_bytes());
        payload.extend_from_slice(self.email_id.as_bytes());
        match self.topic_id {
            Some(topic) => {
                payload.push(1);
                payload.extend_from_slice(topic.as_bytes());
            }
            None => payload.push(0),
        }
        payload.extend_from_slice(self.address.as_bytes());
        payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_and_forgeries_do_not() {
        let signer = Signer::new(&[7; 32]);
        let id = |n: u8| Id::from_bytes([n; 16]);
        for topic_id in [None, Some(id(3))] {
            let unsubscribe = Unsubscribe {
                team_id: id(1),
                email_id: id(2),
                topic_id,
                address: "Bob@example.com".into(),
            };
            let token = unsubscribe.token(&signer);
            assert_eq!(Unsubscribe::verify(&signer, &token), Some(unsubscribe.clone()));
            assert_eq!(Unsubscribe::verify(&Signer::new(&[8; 32]), &token), None);
            let (payload, tag) = token.split_once('.').expect("two parts");
            let mut bytes = URL_SAFE_NO_PAD.decode(payload).expect("base64");
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
            let altered = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&bytes));
            assert_eq!(Unsubscribe::verify(&signer, &altered), None, "another address");
        }
        // A tracking URL's signature is never a token's.
        let open = signer.open_path(id(1), id(2));
        let part = open.trim_start_matches("/t/o/");
        assert_eq!(Unsubscribe::verify(&signer, part), None);
        assert_eq!(Unsubscribe::verify(&signer, "x.y"), None);
        assert_eq!(Unsubscribe::verify(&signer, ""), None);
    }
}
