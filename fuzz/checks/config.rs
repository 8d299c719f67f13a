//! The property the `config_values` fuzz target checks, shared with the corpus replay
//! test (`tests/fuzz_corpus.rs`). The including file declares `mod values` (herald's
//! `src/config/values.rs`) beside this module.

use super::values;

/// The parsers behind config values: none panics, and every accepted rate renders back
/// to text that parses to the same rate.
pub fn values(data: &[u8]) {
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
}
