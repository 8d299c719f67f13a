//! Replays the committed `config_values` fuzz inputs (`fuzz/corpus/config_values/`)
//! through the check the fuzz target runs; the SMTP corpora are replayed by
//! `smtp/tests/fuzz_corpus.rs`.

#[path = "../src/config/values.rs"]
#[allow(dead_code)]
mod values;

#[path = "../fuzz/checks/config.rs"]
mod checks;

#[test]
fn config_values_corpus() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/config_values");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        let outcome = std::panic::catch_unwind(|| checks::values(&input));
        assert!(outcome.is_ok(), "{} fails its check", path.display());
        replayed += 1;
    }
    assert!(replayed > 0, "no inputs in {}", dir.display());
}
