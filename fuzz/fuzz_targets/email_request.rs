//! Fuzzes `POST /emails` bodies through herald's own JSON parsing, validation and MIME
//! building: see `checks::request`.
//!
//! herald's email modules are compiled in from `src/emails/` (and the id and clock types
//! from `queue/src/`), so the fuzz build never compiles RocksDB.

#![no_main]

// The modules below say `herald_queue::...`: this crate stands in for it.
extern crate self as herald_queue;

#[path = "../../queue/src/clock.rs"]
#[allow(dead_code)]
mod clock;
#[path = "../../queue/src/id.rs"]
#[allow(dead_code)]
mod id;

pub use clock::Timestamp;
pub use id::Id;

#[allow(dead_code)]
#[path = "../../src/emails"]
mod emails {
    pub mod address;
    pub mod input;
    pub mod mime;
    pub mod schedule;
    pub mod validate;
}

#[path = "../checks/emails.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::request(data));
