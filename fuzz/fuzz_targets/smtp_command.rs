//! Fuzzes SMTP line reading and command parsing: no input may panic, and a line that is
//! read never contains a CR or LF.

#![no_main]

#[path = "../checks/smtp.rs"]
#[allow(dead_code)]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::command(data));
