//! The first start: one team and its first full-access key.
//!
//! When a data directory is first initialised, herald creates the operator's team and a
//! key for it. The token is `HERALD_BOOTSTRAP_API_KEY` when that is set, otherwise a new
//! random one written to `<data_dir>/bootstrap-api-key` (mode 0600). Later starts find the
//! initialisation record and change nothing.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use herald_queue::{Id, IdGenerator, Timestamp};

use super::AccountStore;
use super::api_key::{ApiKey, Permission, Token, TokenError};
use super::team::Team;

/// The file the generated bootstrap key is written to, inside the data directory.
pub const BOOTSTRAP_KEY_FILE: &str = "bootstrap-api-key";

/// What the first start did, or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bootstrap {
    /// The data directory was already initialised.
    Existing {
        /// The operator's team.
        team_id: Id,
    },
    /// It was initialised now.
    Created {
        /// The operator's team.
        team_id: Id,
        /// Where the generated token was written; `None` when it came from the
        /// environment.
        key_file: Option<PathBuf>,
    },
}

/// Why bootstrapping failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// `HERALD_BOOTSTRAP_API_KEY` is not an acceptable token.
    #[error("HERALD_BOOTSTRAP_API_KEY: {0}")]
    Token(#[from] TokenError),
    /// The key file could not be written.
    #[error("cannot write {path}: {source}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::storage::Error),
}

/// Initialises the data directory on its first start, at `now`, with ids from `ids`.
/// Blocking: run it off the async workers.
pub fn bootstrap(
    accounts: &dyn AccountStore,
    now: Timestamp,
    ids: &IdGenerator,
    data_dir: &Path,
    supplied: Option<&str>,
) -> Result<Bootstrap, BootstrapError> {
    if let Some(team_id) = accounts.initialised()? {
        if supplied.is_some() {
            tracing::info!("HERALD_BOOTSTRAP_API_KEY is ignored: the data directory is already initialised");
        }
        return Ok(Bootstrap::Existing { team_id });
    }
    let token = match supplied {
        Some(text) => Token::parse(text)?,
        None => Token::generate(),
    };
    let team = Team {
        id: ids.next(now),
        name: "Default".to_owned(),
        operator: true,
        created_at: now,
        rate_limit: None,
        plan: None,
        deleted_at: None,
    };
    let key = ApiKey {
        id: ids.next(now),
        team_id: team.id,
        name: "Bootstrap".to_owned(),
        permission: Permission::FullAccess,
        domain_id: None,
        digest: token.digest_hex(),
        created_at: now,
        last_used_at: None,
    };
    // The token file is written before the records: if herald dies in between, the next
    // start overwrites the file with a new token, so the file never names a key that
    // was not created, and no created key is left without its file.
    let key_file = match supplied {
        Some(_) => None,
        None => Some(write_key_file(data_dir, &token)?),
    };
    if let Err(error) = accounts.initialise(&team, &key, token.digest(), now) {
        // On a shared database another node may have initialised it meanwhile (its
        // record is unique): then this node joins, and the token written is no key.
        if let Some(team_id) = accounts.initialised()? {
            if let Some(path) = &key_file {
                let _ = std::fs::remove_file(path);
            }
            tracing::info!("another node initialised the database first; joining it");
            return Ok(Bootstrap::Existing { team_id });
        }
        return Err(error.into());
    }
    match &key_file {
        Some(path) => tracing::info!(path = %path.display(), "created the first team; its API key is in this file"),
        None => tracing::info!("created the first team with the API key from HERALD_BOOTSTRAP_API_KEY"),
    }
    Ok(Bootstrap::Created {
        team_id: team.id,
        key_file,
    })
}

fn write_key_file(data_dir: &Path, token: &Token) -> Result<PathBuf, BootstrapError> {
    let path = data_dir.join(BOOTSTRAP_KEY_FILE);
    let temp = data_dir.join(format!(".{BOOTSTRAP_KEY_FILE}.tmp"));
    let write = || -> std::io::Result<()> {
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(token.expose().as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&temp, &path)?;
        std::fs::File::open(data_dir)?.sync_all()
    };
    write().map_err(|source| BootstrapError::KeyFile {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use herald_queue::{Store, StoreOptions};

    use super::*;
    use crate::accounts::RocksAccounts;

    fn store(dir: &Path) -> Store {
        let mut options = StoreOptions::new(dir.join("spool"));
        options.min_free_space = 0;
        Store::open(options).expect("open")
    }

    fn bootstrap(store: &Store, data_dir: &Path, supplied: Option<&str>) -> Result<Bootstrap, BootstrapError> {
        let accounts = RocksAccounts::new(store.clone());
        super::bootstrap(&accounts, store.now(), &IdGenerator::default(), data_dir, supplied)
    }

    #[test]
    fn first_start_writes_a_private_key_file_and_later_starts_keep_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        let Bootstrap::Created {
            team_id,
            key_file: Some(path),
        } = bootstrap(&store, dir.path(), None).expect("bootstrap")
        else {
            panic!("expected a generated key file");
        };
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let token = Token::parse(std::fs::read_to_string(&path).expect("read").trim()).expect("token");
        let accounts = RocksAccounts::new(store.clone());
        let key = accounts
            .key_by_digest(&token.digest())
            .expect("get")
            .expect("digest indexed");
        assert_eq!(key.team_id, team_id);
        assert_eq!(accounts.key(team_id, key.id).expect("get").as_ref(), Some(&*key));
        assert_eq!(key.permission, Permission::FullAccess);
        assert_eq!(key.digest, token.digest_hex());
        let team = accounts.team(team_id).expect("get").expect("team stored");
        assert!(team.operator);

        assert_eq!(
            bootstrap(&store, dir.path(), Some("re_ignored_now_0123456789")).expect("again"),
            Bootstrap::Existing { team_id }
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read").trim(), token.expose());
        assert_eq!(accounts.teams().expect("scan").len(), 1);
    }

    #[test]
    fn a_supplied_token_becomes_the_first_key_and_no_file_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        let supplied = "re_operator_chosen_token_123";
        let outcome = bootstrap(&store, dir.path(), Some(supplied)).expect("bootstrap");
        assert!(matches!(outcome, Bootstrap::Created { key_file: None, .. }));
        assert!(!dir.path().join(BOOTSTRAP_KEY_FILE).exists());
        let digest = Token::parse(supplied).expect("token").digest();
        let accounts = RocksAccounts::new(store);
        assert!(accounts.key_by_digest(&digest).expect("get").is_some());
    }

    #[test]
    fn an_unacceptable_supplied_token_fails_the_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(dir.path());
        let err = bootstrap(&store, dir.path(), Some("short")).expect_err("too short");
        assert!(err.to_string().contains("HERALD_BOOTSTRAP_API_KEY"), "{err}");
        assert!(RocksAccounts::new(store).teams().expect("scan").is_empty());
    }
}
