//! Images for designs: what a team uploads in the no-code editor, kept in the store and
//! served to whoever opens the email, from `[http] public_url`, at an address nobody can
//! guess (`/images/{token}.{ext}`: the team's id and 16 random bytes).
//!
//! Only PNG, JPEG, GIF and WebP are taken, recognised by their first bytes whatever the
//! client says they are: an SVG could carry script, and a file that is not what it claims
//! is refused. An image is at most [`IMAGE_BYTES_MAX`], a team keeps at most
//! [`TEAM_IMAGES_MAX`]; an owner or admin may remove one, and its images leave with the
//! team.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_queue::{Batch, Id, Record, Scan, Table, Timestamp};
use rand::Rng as _;

use crate::accounts::Caller;
use crate::services::{Error, Services};

/// The largest image taken, in bytes.
pub const IMAGE_BYTES_MAX: usize = 5 * 1024 * 1024;

/// The most images a team keeps.
pub const TEAM_IMAGES_MAX: usize = 1_000;

/// Where images are served, under `[http] public_url`.
pub const PATH: &str = "/images/";

/// The longest name kept for an image (what the editor shows).
const NAME_MAX: usize = 200;

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

    fn code(self) -> u8 {
        match self {
            Format::Png => 1,
            Format::Jpeg => 2,
            Format::Gif => 3,
            Format::Webp => 4,
        }
    }

    fn from_code(code: u8) -> Option<Format> {
        [Format::Png, Format::Jpeg, Format::Gif, Format::Webp]
            .into_iter()
            .find(|f| f.code() == code)
    }
}

/// An uploaded image, as listed (its bytes are kept apart, in [`Table::IMAGE_BYTES`]).
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

impl Record for Image {
    const TABLE: Table = Table::IMAGES;
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

    fn key(&self) -> Vec<u8> {
        [self.team_id.as_bytes().as_slice(), self.id.as_bytes()].concat()
    }

    fn bytes_key(&self) -> Vec<u8> {
        [self.team_id.as_bytes().as_slice(), &self.secret].concat()
    }
}

/// Keeps the image `bytes` named `name` for the caller's team: the image, as listed.
///
/// # Errors
///
/// [`Error::Restricted`] for a sending-only key; [`Error::Invalid`] for no bytes, too
/// many, a format herald does not serve, or a team with [`TEAM_IMAGES_MAX`] images.
pub fn upload(services: &Services, caller: &Caller, name: &str, bytes: &[u8]) -> Result<Image, Error> {
    caller.require_full_access()?;
    if bytes.is_empty() {
        return Err(Error::invalid("The image is empty."));
    }
    if bytes.len() > IMAGE_BYTES_MAX {
        return Err(Error::invalid(format!(
            "The image is {} bytes; the largest taken is {IMAGE_BYTES_MAX} bytes (5 MiB).",
            bytes.len()
        )));
    }
    let format =
        Format::sniff(bytes).ok_or_else(|| Error::invalid("Only PNG, JPEG, GIF and WebP images can be uploaded."))?;
    let store = services.store();
    let _guard = services.lock_record(crate::services::RecordName {
        table: "images",
        key: caller.team_id.as_bytes(),
    });
    let kept = store.scan_raw(
        Table::IMAGES,
        Scan {
            limit: TEAM_IMAGES_MAX,
            ..Scan::prefix(caller.team_id.as_bytes())
        },
    )?;
    if kept.len() >= TEAM_IMAGES_MAX {
        return Err(Error::invalid(format!(
            "The team keeps {TEAM_IMAGES_MAX} images, the most it may."
        )));
    }
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(NAME_MAX)
        .collect::<String>()
        .trim()
        .to_owned();
    let image = Image {
        id: store.next_id(),
        team_id: caller.team_id,
        secret: rand::rng().random(),
        name: if name.is_empty() { "image".to_owned() } else { name },
        format,
        bytes: bytes.len() as u64,
        created_at: store.now(),
    };
    let mut stored = Vec::with_capacity(bytes.len() + 1);
    stored.push(format.code());
    stored.extend_from_slice(bytes);
    let mut batch = Batch::new();
    batch.put(image.key(), &image)?;
    batch.put_raw(Table::IMAGE_BYTES, image.bytes_key(), stored);
    store.commit(batch).wait()?;
    Ok(image)
}

/// Removes the caller's team's image whose address has `token`: it is no longer served,
/// so emails already sent show it broken. `false` when the team has no such image.
///
/// # Errors
///
/// [`Error::Restricted`] for a sending-only key; what the store returns.
pub fn delete(services: &Services, caller: &Caller, token: &str) -> Result<bool, Error> {
    caller.require_full_access()?;
    let Some(raw) = URL_SAFE_NO_PAD.decode(token).ok().filter(|raw| raw.len() == 32) else {
        return Ok(false);
    };
    // Another team's token names none of this team's images.
    if raw[..16] != *caller.team_id.as_bytes() {
        return Ok(false);
    }
    let store = services.store();
    let _guard = services.lock_record(crate::services::RecordName {
        table: "images",
        key: caller.team_id.as_bytes(),
    });
    let kept = store.scan::<Image>(Scan {
        limit: TEAM_IMAGES_MAX,
        ..Scan::prefix(caller.team_id.as_bytes())
    })?;
    // A plain comparison: the caller may list every one of these secrets anyway.
    let Some((_, image)) = kept.into_iter().find(|(_, image)| image.secret[..] == raw[16..]) else {
        return Ok(false);
    };
    let mut batch = Batch::new();
    batch.delete::<Image>(image.key());
    batch.delete_raw(Table::IMAGE_BYTES, image.bytes_key());
    store.commit(batch).wait()?;
    Ok(true)
}

/// The caller's team's newest images, at most `limit`.
///
/// # Errors
///
/// What the store returns.
pub fn list(services: &Services, caller: &Caller, limit: usize) -> Result<Vec<Image>, Error> {
    Ok(services
        .store()
        .scan::<Image>(Scan {
            reverse: true,
            limit,
            ..Scan::prefix(caller.team_id.as_bytes())
        })?
        .into_iter()
        .map(|(_, image)| image)
        .collect())
}

/// The image whose address ends in `file` (`{token}.{ext}`), as served: its format and
/// bytes. `None` for an address that names no image (or names it with another
/// extension).
///
/// # Errors
///
/// What the store returns.
pub fn public(services: &Services, file: &str) -> Result<Option<(Format, bytes::Bytes)>, Error> {
    let Some((token, extension)) = file.split_once('.') else {
        return Ok(None);
    };
    let Ok(raw) = URL_SAFE_NO_PAD.decode(token) else {
        return Ok(None);
    };
    if raw.len() != 32 {
        return Ok(None);
    }
    let Some(stored) = services.store().get_raw(Table::IMAGE_BYTES, &raw)? else {
        return Ok(None);
    };
    let Some(format) = stored.first().copied().and_then(Format::from_code) else {
        return Ok(None);
    };
    if format.extension() != extension {
        return Ok(None);
    }
    Ok(Some((format, bytes::Bytes::from(stored).slice(1..))))
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
        for format in [Format::Png, Format::Jpeg, Format::Gif, Format::Webp] {
            assert_eq!(Format::from_code(format.code()), Some(format));
        }
    }
}
