//! Teams and API keys: who may use herald, and for which team; authentication of a
//! token into a [`Caller`], for every adapter (REST, SMTP, and later the dashboard).
//!
//! Every resource belongs to a team. An API key acts for its team only; its token is
//! shown once and stored only as a SHA-256 digest, which is also how requests find it.

mod api_key;
mod authenticate;
mod bootstrap;
pub mod erasure;
pub mod keys;
pub(crate) mod store;
mod team;
pub mod teams;

pub use api_key::{ApiKey, ApiKeyDigest, ApiKeyUsage, Permission, Token, TokenError};
pub use authenticate::{AuthError, Authenticator, Caller};
pub use bootstrap::{BOOTSTRAP_KEY_FILE, Bootstrap, BootstrapError, bootstrap};
pub use store::{AccountStore, PostgresAccounts, RocksAccounts};
pub use team::Team;
