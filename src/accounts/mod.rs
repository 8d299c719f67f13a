//! Teams and API keys: who may use herald, and for which team.
//!
//! Every resource belongs to a team. An API key acts for its team only; its token is
//! shown once and stored only as a SHA-256 digest, which is also how requests find it.

mod api_key;
mod bootstrap;
mod team;

pub use api_key::{ApiKey, ApiKeyDigest, ApiKeyUsage, Permission, Token, TokenError};
pub use bootstrap::{BOOTSTRAP_KEY_FILE, Bootstrap, BootstrapError, bootstrap};
pub use team::Team;
