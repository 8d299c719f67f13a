//! Replays the committed fuzz inputs of herald's own targets (`fuzz/corpus/<target>/`:
//! config values, `POST /emails` bodies, `scheduled_at`) through the checks the fuzz
//! targets run; the SMTP corpora are replayed by `smtp/tests/fuzz_corpus.rs`.

#[path = "../src/config/values.rs"]
#[allow(dead_code)]
mod values;

#[path = "../fuzz/checks/config.rs"]
mod checks;

#[test]
fn config_values_corpus() {
    replay("config_values", checks::values);
}

/// herald's own modules, where `fuzz/checks/emails.rs` expects them.
mod emails {
    pub use herald::emails::{input, mime, schedule, validate};
}

#[path = "../fuzz/checks/emails.rs"]
mod email_checks;

/// Every input of `fuzz/corpus/<target>/` through `check`.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        let outcome = std::panic::catch_unwind(|| check(&input));
        assert!(outcome.is_ok(), "{} fails its check", path.display());
        replayed += 1;
    }
    assert!(replayed > 0, "no inputs in {}", dir.display());
}

#[test]
fn email_request_corpus() {
    replay("email_request", email_checks::request);
}

#[test]
fn scheduled_at_corpus() {
    replay("scheduled_at", email_checks::scheduled_at);
}

#[test]
fn feedback_report_corpus() {
    replay("feedback_report", herald::feedback::report::fuzz);
}

#[test]
fn template_merge_corpus() {
    replay("template_merge", herald::templates::merge::fuzz);
}
