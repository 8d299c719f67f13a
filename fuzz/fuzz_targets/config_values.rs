//! Fuzzes the parsers behind config values (durations, rates, sizes, addresses): none may
//! panic, and every accepted rate renders back to text that parses to the same rate.

#![no_main]

#[path = "../../src/config/values.rs"]
#[allow(dead_code)]
mod values;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = values::duration(text);
    let _ = values::byte_size(text);
    let _ = values::socket_addr(text);
    let _ = values::nameserver(text);
    let _ = values::host_port(text);
    let _ = values::is_hostname(text);
    if let Ok(rate) = values::rate(text) {
        assert_eq!(values::rate(&rate.to_string()), Ok(rate), "{text:?}");
    }
});
