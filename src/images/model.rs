//! What an image is, as every layer speaks of it: its format and its listed record.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_queue::{Id, Timestamp};

/// Where images are served, under `[http] public_url`.
pub const PATH: &str = "/images/";

/// An image format herald serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// GIF.
    Gif,
    /// WebP.
    Webp,
}

impl Format {
    /// Every format herald serves.
    pub const ALL: [Format; 4] = [Format::Png, Format::Jpeg, Format::Gif, Format::Webp];

    /// The format `bytes` begin with, if it is one herald serves.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Format::Gif)
        } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Format::Webp)
        } else {
            None
        }
    }

    /// Its media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
        }
    }

    /// The file name extension its address ends with.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpg",
            Format::Gif => "gif",
            Format::Webp => "webp",
        }
    }
}

/// An uploaded image, as listed (its bytes are kept apart, read only when it is served).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Image {
    /// Its id.
    pub id: Id,
    /// The owning team.
    pub team_id: Id,
    /// The random half of its address.
    pub secret: [u8; 16],
    /// The file's name, as uploaded.
    pub name: String,
    /// Its format.
    pub format: Format,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was uploaded.
    pub created_at: Timestamp,
}

impl Image {
    /// The token of its address: the team's id and the secret, base64url.
    pub fn token(&self) -> String {
        let mut raw = [0u8; 32];
        raw[..16].copy_from_slice(self.team_id.as_bytes());
        raw[16..].copy_from_slice(&self.secret);
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Its public address under `public_url`.
    pub fn url(&self, public_url: &str) -> String {
        format!("{public_url}{PATH}{}.{}", self.token(), self.format.extension())
    }

    /// The team and secret a token names, if it is one that [`Image::token`] could
    /// make.
    pub fn parse_token(token: &str) -> Option<(Id, [u8; 16])> {
        let raw = URL_SAFE_NO_PAD.decode(token).ok()?;
        if raw.len() != 32 {
            return None;
        }
        let team_id = Id::from_slice(&raw[..16])?;
        let secret = raw[16..].try_into().ok()?;
        Some((team_id, secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_known_by_their_first_bytes_only() {
        assert_eq!(Format::sniff(b"\x89PNG\r\n\x1a\nrest"), Some(Format::Png));
        assert_eq!(Format::sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some(Format::Jpeg));
        assert_eq!(Format::sniff(b"GIF89a..."), Some(Format::Gif));
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Format::Webp));
        assert_eq!(Format::sniff(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), None);
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(Format::sniff(b""), None);
    }

    #[test]
    fn a_token_names_the_team_and_secret_it_was_made_of() {
        let image = Image {
            id: Id::from_slice(&[7; 16]).expect("16 bytes"),
            team_id: Id::from_slice(&[1; 16]).expect("16 bytes"),
            secret: [9; 16],
            name: "logo.png".into(),
            format: Format::Png,
            bytes: 3,
            created_at: Timestamp::from_millis(0),
        };
        assert_eq!(Image::parse_token(&image.token()), Some((image.team_id, image.secret)));
        assert_eq!(Image::parse_token("not-a-token"), None);
        assert_eq!(Image::parse_token(&image.token()[..20]), None);
    }
}
