//! Signed tracking URLs: an open pixel and one click URL per link, naming the team, the
//! email and (for clicks) the link's index and target, with an HMAC-SHA256 over all of
//! it. Nothing is stored per link: the URL carries what the redirect needs, and a forged
//! or altered URL fails the signature (a 404, never an open redirect).

use std::path::Path;

use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_queue::Id;

/// The key file in the data directory.
const KEY_FILE: &str = "tracking.key";

/// Longest link target a click URL carries, in bytes; a longer link is left untracked.
pub const TARGET_MAX: usize = 4_096;

/// What a verified tracking URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracked {
    /// The open pixel of an email.
    Open {
        /// The team.
        team_id: Id,
        /// The email.
        email_id: Id,
    },
    /// A link of an email.
    Click {
        /// The team.
        team_id: Id,
        /// The email.
        email_id: Id,
        /// The link's place among the email's links, from 0.
        index: u16,
        /// Where it leads.
        target: String,
    },
}

/// Makes and checks tracking URLs with the node's key.
pub struct Signer {
    key: hmac::Key,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer { .. }")
    }
}

impl Signer {
    /// A signer over `secret`.
    pub fn new(secret: &[u8]) -> Signer {
        Signer {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    /// The signer of the key in `data_dir` (`tracking.key`, mode 0600), made on first use.
    pub fn load(data_dir: &Path) -> std::io::Result<Signer> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = data_dir.join(KEY_FILE);
        match std::fs::read(&path) {
            Ok(secret) if secret.len() >= 32 => return Ok(Signer::new(&secret)),
            Ok(_) => return Err(std::io::Error::other(format!("{} is too short", path.display()))),
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
            Err(_) => {}
        }
        let mut secret = [0u8; 32];
        aws_lc_rs::rand::fill(&mut secret).map_err(|_| std::io::Error::other("no randomness"))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(&secret)?;
        file.sync_all()?;
        Ok(Signer::new(&secret))
    }

    /// The HMAC-SHA256 tag of `parts` (concatenated), for the other signed public links
    /// (unsubscribe), each starting with a kind byte of its own.
    pub fn tag(&self, parts: &[&[u8]]) -> Vec<u8> {
        hmac::sign(&self.key, &parts.concat()).as_ref().to_vec()
    }

    /// Whether `tag` is the tag of `parts`, compared in constant time.
    pub fn verify_tag(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        hmac::verify(&self.key, &parts.concat(), tag).is_ok()
    }

    /// The path of the open pixel of `email_id`.
    pub fn open_path(&self, team_id: Id, email_id: Id) -> String {
        let ids = ids(team_id, email_id);
        let tag = hmac::sign(&self.key, &[b"o".as_slice(), &ids].concat());
        format!(
            "/t/o/{}.{}",
            URL_SAFE_NO_PAD.encode(ids),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// The path of link `index` of `email_id`, leading to `target`; `None` when the
    /// target is longer than [`TARGET_MAX`].
    pub fn click_path(&self, team_id: Id, email_id: Id, index: u16, target: &str) -> Option<String> {
        if target.len() > TARGET_MAX {
            return None;
        }
        let mut head = ids(team_id, email_id).to_vec();
        head.extend_from_slice(&index.to_be_bytes());
        let tag = hmac::sign(&self.key, &[b"c".as_slice(), &head, target.as_bytes()].concat());
        Some(format!(
            "/t/c/{}.{}/{}",
            URL_SAFE_NO_PAD.encode(&head),
            URL_SAFE_NO_PAD.encode(tag.as_ref()),
            URL_SAFE_NO_PAD.encode(target.as_bytes())
        ))
    }

    /// What `path` names, when it is a tracking path this key signed.
    pub fn verify(&self, path: &str) -> Option<Tracked> {
        let mut parts = path.strip_prefix("/t/")?.split('/');
        let kind = parts.next()?;
        let (head, tag) = parts.next()?.split_once('.')?;
        let head = URL_SAFE_NO_PAD.decode(head).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let team_id = Id::from_slice(head.get(..16)?)?;
        let email_id = Id::from_slice(head.get(16..32)?)?;
        match (kind, head.len(), parts.next(), parts.next()) {
            ("o", 32, None, None) => {
                hmac::verify(&self.key, &[b"o".as_slice(), &head].concat(), &tag).ok()?;
                Some(Tracked::Open { team_id, email_id })
            }
            ("c", 34, Some(target), None) => {
                let target = String::from_utf8(URL_SAFE_NO_PAD.decode(target).ok()?).ok()?;
                hmac::verify(&self.key, &[b"c".as_slice(), &head, target.as_bytes()].concat(), &tag).ok()?;
                let index = u16::from_be_bytes([head[32], head[33]]);
                Some(Tracked::Click {
                    team_id,
                    email_id,
                    index,
                    target,
                })
            }
            _ => None,
        }
    }
}

fn ids(team_id: Id, email_id: Id) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(team_id.as_bytes());
    out[16..].copy_from_slice(email_id.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_verify_and_forgeries_do_not() {
        let signer = Signer::new(&[7; 32]);
        let (team, email) = (Id::from_bytes([1; 16]), Id::from_bytes([2; 16]));
        let open = signer.open_path(team, email);
        assert_eq!(
            signer.verify(&open),
            Some(Tracked::Open {
                team_id: team,
                email_id: email
            })
        );
        let click = signer
            .click_path(team, email, 3, "https://example.com/a?b=c")
            .expect("short");
        assert_eq!(
            signer.verify(&click),
            Some(Tracked::Click {
                team_id: team,
                email_id: email,
                index: 3,
                target: "https://example.com/a?b=c".into()
            })
        );
        // Another target under the same signature, another key, a truncated path.
        let (prefix, _) = click.rsplit_once('/').expect("target part");
        let forged = format!("{prefix}/{}", URL_SAFE_NO_PAD.encode("https://evil.test/"));
        assert_eq!(signer.verify(&forged), None);
        assert_eq!(Signer::new(&[8; 32]).verify(&click), None);
        assert_eq!(signer.verify(prefix), None);
        assert_eq!(signer.verify("/t/o/x.y"), None);
        assert!(signer.click_path(team, email, 0, &"a".repeat(TARGET_MAX + 1)).is_none());
    }
}
