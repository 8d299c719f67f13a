//! Fuzzes the DATA receiver: no input may panic; a completed message never contains a
//! bare CR or LF; and stuffing then receiving a CRLF message gives it back.

#![no_main]

#[path = "../checks/smtp.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::data(data));
