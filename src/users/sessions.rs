//! Dashboard sessions: a random token in an `HttpOnly` cookie, kept only as its SHA-256,
//! with an idle and an absolute lifetime, a CSRF token of its own, and whether the
//! second factor was given (a user with TOTP has a session that can do nothing else
//! until it is).

use crate::storage::Error;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::User;
pub use super::model::{Session, digest};
use crate::services::Services;

/// A session unused for this long ends.
pub const IDLE: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// A session ends this long after sign-in, however used.
pub const ABSOLUTE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// `last_seen` is written at most this often.
const TOUCH_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// A new random token: 32 bytes, URL-safe base64.
pub fn token() -> String {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Starts a session for `user`; its token.
pub fn start(services: &Services, user: &User) -> Result<String, Error> {
    let token = token();
    let now = services.now();
    let session = Session {
        team_id: user.team_id,
        user_id: user.id,
        created_at: now,
        last_seen: now,
        mfa_passed: user.totp_secret.is_none(),
        csrf: self::token(),
        pending_totp: None,
    };
    services.users().put_session(&token, &session)?;
    Ok(token)
}

/// The live session of `token` and its user, touching `last_seen` now and then; an
/// expired session is deleted.
pub fn find(services: &Services, token: &str) -> Result<Option<(Session, User)>, Error> {
    let users = services.users();
    let Some(mut session) = users.session(token)? else {
        return Ok(None);
    };
    let now = services.now();
    let expired = session.last_seen.saturating_add(IDLE) <= now || session.created_at.saturating_add(ABSOLUTE) <= now;
    let user = users.get(session.team_id, session.user_id)?;
    let Some(user) = user.filter(|_| !expired) else {
        users.end_session(token)?;
        return Ok(None);
    };
    if session.last_seen.saturating_add(TOUCH_EVERY) <= now {
        session.last_seen = now;
        users.put_session(token, &session)?;
    }
    Ok(Some((session, user)))
}

/// Rewrites the session of `token`.
pub fn save(services: &Services, token: &str, session: &Session) -> Result<(), Error> {
    services.users().put_session(token, session)
}

/// Marks the session of `token` as past its second factor.
pub fn pass_mfa(services: &Services, token: &str, session: &Session) -> Result<(), Error> {
    let passed = Session {
        mfa_passed: true,
        ..session.clone()
    };
    services.users().put_session(token, &passed)
}

/// Ends the session of `token`.
pub fn end(services: &Services, token: &str) -> Result<(), Error> {
    services.users().end_session(token)
}
