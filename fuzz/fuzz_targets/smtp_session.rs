//! Fuzzes whole SMTP sessions (commands, AUTH PLAIN and LOGIN decoding, DATA, BDAT,
//! STARTTLS, limits) through the sans-IO state machine: see `checks::session`.

#![no_main]

#[path = "../checks/smtp.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::session(data));
