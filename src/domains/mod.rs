//! Sending domains: DKIM keys, the DNS records to publish, and their verification.
//!
//! Creating a domain generates its DKIM key pair and tells the caller which records to
//! publish: DKIM (TXT at `<selector>._domainkey`), SPF (TXT and MX on the return-path
//! subdomain) and a recommended DMARC record. Verification looks them up and keeps
//! checking in the background: pending domains with backoff, verified ones daily, and a
//! domain whose records disappear stops being verified.

mod dkim;
mod model;
pub mod service;
pub(crate) mod store;
pub mod verifier;
mod verify;

pub use dkim::{DkimKey, KeyAlgorithm, generate as generate_dkim_key};
pub use model::{Domain, DomainStatus, RecordChecks, RecordStatus, TlsPolicy};
pub use service::save;
pub use store::{DomainStore, PostgresDomains, RocksDomains};
pub use verify::check;
