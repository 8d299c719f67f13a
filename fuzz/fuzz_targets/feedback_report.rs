//! Fuzzes the bounce and complaint report parser (`src/feedback/report.rs`): parsing any
//! message never panics, and what parses keeps its bounds (recipients, value lengths).

#![no_main]

#[path = "../../src/feedback/report.rs"]
#[allow(dead_code)]
mod report;

libfuzzer_sys::fuzz_target!(|data: &[u8]| report::fuzz(data));
