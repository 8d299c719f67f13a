//! Dashboard sessions: a random token in an `HttpOnly` cookie, kept only as its SHA-256,
//! with an idle and an absolute lifetime, a CSRF token of its own, and whether the
//! second factor was given (a user with TOTP has a session that can do nothing else
//! until it is).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_queue::{Batch, Error, Id, Record, Store, Table, Timestamp};
use sha2::{Digest, Sha256};

use super::User;

/// A session unused for this long ends.
pub const IDLE: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// A session ends this long after sign-in, however used.
pub const ABSOLUTE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// `last_seen` is written at most this often.
const TOUCH_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// One session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Session {
    /// The user's team.
    pub team_id: Id,
    /// The user.
    pub user_id: Id,
    /// When it began.
    pub created_at: Timestamp,
    /// When it was last used.
    pub last_seen: Timestamp,
    /// Whether the user gave its second factor (or has none).
    pub mfa_passed: bool,
    /// The CSRF token forms of this session carry.
    pub csrf: String,
    /// A TOTP secret being enrolled, until a code confirms it.
    #[serde(default)]
    pub pending_totp: Option<Vec<u8>>,
}

impl Record for Session {
    const TABLE: Table = Table::SESSIONS;
}

/// A new random token: 32 bytes, URL-safe base64.
pub fn token() -> String {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The SHA-256 of `token`: what is stored.
pub fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Starts a session for `user`; its token.
pub fn start(store: &Store, user: &User) -> Result<String, Error> {
    let token = token();
    let now = store.now();
    let session = Session {
        team_id: user.team_id,
        user_id: user.id,
        created_at: now,
        last_seen: now,
        mfa_passed: user.totp_secret.is_none(),
        csrf: self::token(),
        pending_totp: None,
    };
    let mut batch = Batch::new();
    batch.put(digest(&token), &session)?;
    store.commit(batch).wait()?;
    Ok(token)
}

/// The live session of `token` and its user, touching `last_seen` now and then; an
/// expired session is deleted.
pub fn find(store: &Store, token: &str) -> Result<Option<(Session, User)>, Error> {
    let key = digest(token);
    let Some(mut session) = store.get::<Session>(&key)? else {
        return Ok(None);
    };
    let now = store.now();
    let expired = session.last_seen.saturating_add(IDLE) <= now || session.created_at.saturating_add(ABSOLUTE) <= now;
    let user = super::store::get(store, session.team_id, session.user_id)?;
    let Some(user) = user.filter(|_| !expired) else {
        end(store, token)?;
        return Ok(None);
    };
    if session.last_seen.saturating_add(TOUCH_EVERY) <= now {
        session.last_seen = now;
        let mut batch = Batch::new();
        batch.put(&key, &session)?;
        store.commit(batch).wait()?;
    }
    Ok(Some((session, user)))
}

/// Rewrites the session of `token`.
pub fn save(store: &Store, token: &str, session: &Session) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.put(digest(token), session)?;
    store.commit(batch).wait()
}

/// Marks the session of `token` as past its second factor.
pub fn pass_mfa(store: &Store, token: &str, session: &Session) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.put(
        digest(token),
        &Session {
            mfa_passed: true,
            ..session.clone()
        },
    )?;
    store.commit(batch).wait()
}

/// Ends the session of `token`.
pub fn end(store: &Store, token: &str) -> Result<(), Error> {
    let mut batch = Batch::new();
    batch.delete::<Session>(digest(token));
    store.commit(batch).wait()
}
