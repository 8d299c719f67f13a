//! Segments: named groups of a team's contacts. Resend's older audiences are segments
//! under another name (`/audiences`), so both routes share this service.

use herald_queue::Id;

use crate::accounts::Caller;
use crate::services::{Error, Services, required_text};
use crate::storage::page::PageRequest;

pub use super::model::Segment;

/// Longest segment name, in characters.
const NAME_MAX: usize = 256;

/// Creates a segment named `name`.
pub fn create(services: &Services, caller: &Caller, name: Option<String>) -> Result<Segment, Error> {
    caller.require_full_access()?;
    let name = required_text(name, "name", NAME_MAX)?;
    let max = services.config().contacts.segments_max;
    let _guard = super::lock(services, caller.team_id);
    if services.audience().segments(caller.team_id)?.len() as u64 >= max {
        return Err(Error::invalid(format!(
            "This team has {max} segments, the most it may have ([contacts] segments_max); delete one first"
        )));
    }
    let segment = Segment {
        id: services.next_id(),
        team_id: caller.team_id,
        name,
        created_at: services.now(),
    };
    services.audience().put_segment(&segment)?;
    Ok(segment)
}

/// The caller's segment `id` (as written in a path).
pub fn get(services: &Services, caller: &Caller, id: &str) -> Result<Segment, Error> {
    caller.require_full_access()?;
    find(services, caller.team_id, parse_id(id)?)
}

/// The team's segment `id`, or not found.
pub fn find(services: &Services, team_id: Id, id: Id) -> Result<Segment, Error> {
    services
        .audience()
        .segment(team_id, id)?
        .ok_or(Error::NotFound("Segment not found"))
}

/// A segment id from a path or body.
pub fn parse_id(text: &str) -> Result<Id, Error> {
    crate::services::parse_id(text, "segment")
}

/// One page of the caller's segments, newest first.
pub fn list(services: &Services, caller: &Caller, page: &PageRequest) -> Result<(Vec<Segment>, bool), Error> {
    caller.require_full_access()?;
    Ok(services.audience().segment_page(caller.team_id, page)?)
}

/// Renames the caller's segment `id`.
pub fn rename(services: &Services, caller: &Caller, id: &str, name: Option<String>) -> Result<Id, Error> {
    caller.require_full_access()?;
    let name = required_text(name, "name", NAME_MAX)?;
    let _guard = super::lock(services, caller.team_id);
    let mut segment = get(services, caller, id)?;
    if segment.name != name {
        segment.name = name;
        services.audience().put_segment(&segment)?;
    }
    Ok(segment.id)
}

/// Deletes the caller's segment `id` with its membership index; its contacts stay. It
/// holds the team's contact lock, under which joins check that a segment exists, so no
/// contact joins the segment after its index is gone.
pub fn delete(services: &Services, caller: &Caller, id: &str) -> Result<Id, Error> {
    caller.require_full_access()?;
    let _guard = super::lock(services, caller.team_id);
    let segment = get(services, caller, id)?;
    services.audience().delete_segment(&segment)?;
    Ok(segment.id)
}
