//! Images for designs: what a team uploads in the no-code editor, kept in the store and
//! served to whoever opens the email, from `[http] public_url`, at an address nobody can
//! guess (`/images/{token}.{ext}`: the team's id and 16 random bytes).
//!
//! Only PNG, JPEG, GIF and WebP are taken, recognised by their first bytes whatever the
//! client says they are: an SVG could carry script, and a file that is not what it claims
//! is refused. An image is at most [`IMAGE_BYTES_MAX`], a team keeps at most
//! [`TEAM_IMAGES_MAX`]; an owner or admin may remove one, and its images leave with the
//! team.

mod model;
pub(crate) mod store;

pub use model::{Format, Image, PATH};
pub use store::{ImageStore, PostgresImages, RocksImages};

use rand::Rng as _;

use crate::accounts::Caller;
use crate::services::{Error, RecordName, Services};

/// The largest image taken, in bytes.
pub const IMAGE_BYTES_MAX: usize = 5 * 1024 * 1024;

/// The most images a team keeps.
pub const TEAM_IMAGES_MAX: usize = 1_000;

/// The longest name kept for an image (what the editor shows).
const NAME_MAX: usize = 200;

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
    let _guard = services.lock_record(RecordName {
        table: "images",
        key: caller.team_id.as_bytes(),
    });
    if services.images().count(caller.team_id, TEAM_IMAGES_MAX)? >= TEAM_IMAGES_MAX {
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
        id: services.next_id(),
        team_id: caller.team_id,
        secret: rand::rng().random(),
        name: if name.is_empty() { "image".to_owned() } else { name },
        format,
        bytes: bytes.len() as u64,
        created_at: services.now(),
    };
    services.images().put(&image, bytes)?;
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
    let Some((team_id, secret)) = Image::parse_token(token) else {
        return Ok(false);
    };
    // Another team's token names none of this team's images.
    if team_id != caller.team_id {
        return Ok(false);
    }
    let _guard = services.lock_record(RecordName {
        table: "images",
        key: caller.team_id.as_bytes(),
    });
    Ok(services.images().delete(team_id, &secret)?)
}

/// The caller's team's newest images, at most `limit`.
///
/// # Errors
///
/// What the store returns.
pub fn list(services: &Services, caller: &Caller, limit: usize) -> Result<Vec<Image>, Error> {
    Ok(services.images().newest(caller.team_id, limit)?)
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
    let Some((team_id, secret)) = Image::parse_token(token) else {
        return Ok(None);
    };
    let found = services.images().served(team_id, &secret)?;
    Ok(found.filter(|(format, _)| format.extension() == extension))
}
