//! Replays every committed fuzz input (`fuzz/corpus/<target>/`, seeds from real
//! transcripts and whatever fuzzing found) through the same checks the fuzz targets run,
//! so CI holds the parsers to them without a fuzzer.

#[path = "../../fuzz/checks/smtp.rs"]
mod checks;

use std::path::PathBuf;

/// The inputs of one target, by file name; at least one, so a moved corpus fails.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&path).expect("corpus file"))
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    inputs
}

fn replay(target: &str, check: fn(&[u8])) {
    for (name, input) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| check(&input));
        assert!(outcome.is_ok(), "fuzz/corpus/{target}/{name} fails its check");
    }
}

#[test]
fn smtp_command_corpus() {
    replay("smtp_command", checks::command);
}

#[test]
fn smtp_data_corpus() {
    replay("smtp_data", checks::data);
}

#[test]
fn smtp_session_corpus() {
    replay("smtp_session", checks::session);
    // Every input also as DATA and as commands: the targets' inputs are all SMTP bytes.
    for (_, input) in corpus("smtp_session") {
        checks::command(&input);
        checks::data(&input);
    }
}
