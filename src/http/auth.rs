//! Authentication: `Authorization: Bearer <token>`, looked up by the token's SHA-256.
//!
//! Keys are read from the store on every request, so a key works the moment it is created
//! and stops the moment it is deleted; there is no cache to invalidate. Only the decoding
//! of a key's record is kept between requests, beside the bytes it came from.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use herald_queue::{Batch, Id, RecordCache, Store, Timestamp};

use super::ApiError;
use crate::accounts::{ApiKey, ApiKeyDigest, ApiKeyUsage, Permission, Token};

/// How often a key's `last_used_at` is written at most. Writing it on every request would
/// add a synced write to each; a minute's precision is what a person reads it for.
const USAGE_WRITE_INTERVAL: Duration = Duration::from_secs(60);
/// Decoded key records kept at most (a key is a few hundred bytes).
const KEY_CACHE_MAX: usize = 4096;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The team the key acts for.
    pub team_id: Id,
    /// The key.
    pub key_id: Id,
    /// What the key may do.
    pub permission: Permission,
    /// The one domain a sending key is bound to.
    pub domain_id: Option<Id>,
    /// Whether the key is a full-access key of the operator's team.
    pub operator: bool,
}

/// Authenticates requests against the store.
#[derive(Debug)]
pub struct Authenticator {
    operator_team: Id,
    usage_written: Mutex<HashMap<Id, Timestamp>>,
    keys: RecordCache<ApiKey>,
}

impl Authenticator {
    /// An authenticator for a store whose operator team is `operator_team`.
    pub fn new(operator_team: Id) -> Self {
        Authenticator {
            operator_team,
            usage_written: Mutex::new(HashMap::new()),
            keys: RecordCache::new(KEY_CACHE_MAX),
        }
    }

    /// The caller behind `authorization` (the header's value, if any).
    pub fn authenticate(&self, store: &Store, authorization: Option<&str>) -> Result<Caller, ApiError> {
        let Some(header) = authorization.map(str::trim).filter(|h| !h.is_empty()) else {
            return Err(ApiError::missing_api_key());
        };
        let token = match header.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => return Err(ApiError::missing_api_key()),
        };
        if token.is_empty() {
            return Err(ApiError::missing_api_key());
        }
        if token.len() > Token::LEN_MAX {
            return Err(ApiError::invalid_api_key());
        }
        let token = Token::from_header(token);
        let Some(found) = store.get::<ApiKeyDigest>(token.digest())? else {
            return Err(ApiError::invalid_api_key());
        };
        let Some(key) = self.keys.get(store, &ApiKey::key(found.team_id, found.key_id))? else {
            // The digest outlived its key: a delete removes both in one batch, so this is
            // only reachable through a bug; refuse rather than guess.
            return Err(ApiError::invalid_api_key());
        };
        // The lookup already matched the digest; comparing it again in constant time
        // guards the invariant that the record found is the one for this token.
        if aws_lc_rs::constant_time::verify_slices_are_equal(key.digest.as_bytes(), token.digest_hex().as_bytes())
            .is_err()
        {
            return Err(ApiError::invalid_api_key());
        }
        self.record_use(store, key.id);
        Ok(Caller {
            team_id: key.team_id,
            key_id: key.id,
            permission: key.permission,
            domain_id: key.domain_id,
            operator: key.team_id == self.operator_team && key.permission == Permission::FullAccess,
        })
    }

    /// The operator's team.
    pub fn operator_team(&self) -> Id {
        self.operator_team
    }

    fn record_use(&self, store: &Store, key_id: Id) {
        let now = store.now();
        {
            let mut written = self
                .usage_written
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let due = written
                .get(&key_id)
                .is_none_or(|last| now.saturating_since(*last) >= USAGE_WRITE_INTERVAL);
            if !due {
                return;
            }
            written.insert(key_id, now);
        }
        let mut batch = Batch::new();
        if batch.put(key_id.as_bytes(), &ApiKeyUsage { last_used_at: now }).is_ok() {
            // Usage is informational: it is committed with the next group, and nobody
            // waits for it.
            drop(store.commit(batch));
        }
    }
}
