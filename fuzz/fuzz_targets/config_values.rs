//! Fuzzes the parsers behind config values (durations, rates, sizes, addresses): none may
//! panic, and every accepted rate renders back to text that parses to the same rate.

#![no_main]

#[path = "../../src/config/values.rs"]
#[allow(dead_code)]
mod values;

#[path = "../checks/config.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::values(data));
