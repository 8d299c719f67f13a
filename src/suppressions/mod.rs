//! The suppression list: addresses a team's mail is no longer sent to, because they
//! bounced hard, complained, or were added by hand. Kept behind [`SuppressionStore`];
//! managed through [`service`].

mod model;
pub mod service;
pub(crate) mod store;

pub use model::{Origin, Suppression, normalize};
pub use store::{PostgresSuppressions, RocksSuppressions, SuppressionStore};
