//! Authentication: an API key token, looked up by its SHA-256, becomes a [`Caller`]. The
//! adapters only find the token (the HTTP `Authorization: Bearer` header, the SMTP AUTH
//! password) and translate [`AuthError`] into their own refusals.
//!
//! Keys are read from the store on every request, so a key works the moment it is created
//! and stops the moment it is deleted; there is no cache to invalidate. Only the decoding
//! of a key's record is kept between requests, beside the bytes it came from.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use herald_queue::{Id, Timestamp};

use super::{AccountStore, ApiKey, Permission, Token};

/// How often a key's `last_used_at` is written at most. Writing it on every request would
/// add a synced write to each; a minute's precision is what a person reads it for.
const USAGE_WRITE_INTERVAL: Duration = Duration::from_secs(60);

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

impl Caller {
    /// Whether the caller may use every operation of its team (not only sending).
    pub fn has_full_access(&self) -> bool {
        self.permission == Permission::FullAccess
    }

    /// Refuses a key that may only send: every operation but sending asks this first,
    /// whichever adapter calls it.
    pub fn require_full_access(&self) -> Result<(), crate::services::Error> {
        if self.has_full_access() {
            Ok(())
        } else {
            Err(crate::services::Error::Restricted)
        }
    }
}

/// Why a token authenticates no one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No token was given.
    #[error("no API key was given")]
    Missing,
    /// The token is no key's (or no longer).
    #[error("the API key is invalid")]
    Invalid,
    /// The store could not be read.
    #[error(transparent)]
    Storage(#[from] crate::storage::Error),
}

impl From<herald_queue::Error> for AuthError {
    fn from(error: herald_queue::Error) -> AuthError {
        AuthError::Storage(error.into())
    }
}

/// Authenticates API key tokens against the store.
#[derive(Debug)]
pub struct Authenticator {
    operator_team: Id,
    usage_written: Mutex<HashMap<Id, Timestamp>>,
}

impl Authenticator {
    /// An authenticator for a store whose operator team is `operator_team`.
    pub fn new(operator_team: Id) -> Self {
        Authenticator {
            operator_team,
            usage_written: Mutex::new(HashMap::new()),
        }
    }

    /// The caller whose key `token` is. Surrounding whitespace is ignored; an empty token
    /// is [`AuthError::Missing`].
    /// `now` is when the request came, recorded as the key's last use.
    pub fn authenticate(&self, accounts: &dyn AccountStore, token: &str, now: Timestamp) -> Result<Caller, AuthError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > Token::LEN_MAX {
            return Err(AuthError::Invalid);
        }
        let token = Token::from_header(token);
        let Some(key) = accounts.key_by_digest(&token.digest())? else {
            return Err(AuthError::Invalid);
        };
        // The lookup already matched the digest; comparing it again in constant time
        // guards the invariant that the record found is the one for this token.
        if aws_lc_rs::constant_time::verify_slices_are_equal(key.digest.as_bytes(), token.digest_hex().as_bytes())
            .is_err()
        {
            return Err(AuthError::Invalid);
        }
        self.record_use(accounts, key.id, now);
        Ok(self.caller_of(&key))
    }

    /// The caller `key` makes: its team, permission and domain.
    pub fn caller_of(&self, key: &ApiKey) -> Caller {
        Caller {
            team_id: key.team_id,
            key_id: key.id,
            permission: key.permission,
            domain_id: key.domain_id,
            operator: key.team_id == self.operator_team && key.permission == Permission::FullAccess,
        }
    }

    /// The operator's team.
    pub fn operator_team(&self) -> Id {
        self.operator_team
    }

    fn record_use(&self, accounts: &dyn AccountStore, key_id: Id, now: Timestamp) {
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
        accounts.record_use(key_id, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::{ApiKey, RocksAccounts};

    /// Stores a key of `team` with `permission`; its token.
    fn key(accounts: &RocksAccounts, store: &herald_queue::Store, team: Id, permission: Permission) -> Token {
        let token = Token::generate();
        let key = ApiKey {
            id: store.next_id(),
            team_id: team,
            name: "k".into(),
            permission,
            domain_id: None,
            digest: token.digest_hex(),
            created_at: store.now(),
            last_used_at: None,
        };
        accounts.insert_key(&key, token.digest()).expect("insert");
        token
    }

    #[test]
    fn tokens_become_callers_and_the_operator_is_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _clock) = crate::testing::store(dir.path(), 1_700_000_000_000);
        let accounts = RocksAccounts::new(store.clone());
        let (operator, tenant) = (store.next_id(), store.next_id());
        let auth = Authenticator::new(operator);
        let full = key(&accounts, &store, operator, Permission::FullAccess);
        let sending = key(&accounts, &store, operator, Permission::SendingAccess);
        let theirs = key(&accounts, &store, tenant, Permission::FullAccess);
        let now = store.now();

        let caller = auth
            .authenticate(&accounts, &format!(" {} ", full.expose()), now)
            .expect("valid");
        assert_eq!((caller.team_id, caller.operator), (operator, true));
        assert!(caller.has_full_access());
        let caller = auth.authenticate(&accounts, sending.expose(), now).expect("valid");
        assert!(!caller.operator, "a sending key is not the operator's");
        let caller = auth.authenticate(&accounts, theirs.expose(), now).expect("valid");
        assert_eq!((caller.team_id, caller.operator), (tenant, false));

        assert!(matches!(
            auth.authenticate(&accounts, "  ", now),
            Err(AuthError::Missing)
        ));
        assert!(matches!(
            auth.authenticate(&accounts, "re_nobody_0123456789", now),
            Err(AuthError::Invalid)
        ));
        let long = "x".repeat(Token::LEN_MAX + 1);
        assert!(matches!(
            auth.authenticate(&accounts, &long, now),
            Err(AuthError::Invalid)
        ));
    }
}
