//! Fuzzes SMTP line reading and command parsing: no input may panic, and a line that is
//! read never contains a CR or LF.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((line, consumed))) = herald_smtp::read_line(rest, 512) {
        assert!(!line.contains(&b'\r') && !line.contains(&b'\n'));
        let _ = herald_smtp::parse(line);
        rest = &rest[consumed..];
    }
});
