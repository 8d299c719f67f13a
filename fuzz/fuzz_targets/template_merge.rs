//! Fuzzes the template merge language (`src/templates/merge.rs`): parsing anything, and
//! rendering what parses with the input itself as every variable's value, never panics.

#![no_main]

#[path = "../../src/templates/merge.rs"]
#[allow(dead_code)]
mod merge;

libfuzzer_sys::fuzz_target!(|data: &[u8]| merge::fuzz(data));
