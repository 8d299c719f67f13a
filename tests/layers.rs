//! The layers of `src/` (DESIGN.md, README "Architecture"): adapters (`api/`, `http/`,
//! `smtp/`, `cli/`, `server/`) call services and engines; services and engines never
//! reach back into an adapter. Read from the source tree, so an import that crosses the
//! line fails the suite before it becomes a circle.

use std::path::{Path, PathBuf};

/// The modules that hold the operations themselves, the engines that run beside the
/// adapters, and what both build on.
const BELOW_ADAPTERS: &[&str] = &[
    "accounts",
    "config",
    "contacts",
    "counters",
    "delivery",
    "dns.rs",
    "domains",
    "emails",
    "events.rs",
    "insights",
    "limits.rs",
    "mailqueue",
    "outbound.rs",
    "retention.rs",
    "runner.rs",
    "services",
    "suppressions",
    "templates",
    "tracking",
    "webhooks",
    "wire.rs",
];

/// The adapters, by the paths code would name them with.
const ADAPTERS: &[&str] = &[
    "crate::api",
    "crate::http",
    "crate::smtp",
    "crate::server",
    "crate::cli",
];

fn sources(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read the source tree") {
            sources(&entry.expect("a directory entry").path(), found);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        found.push(path.to_owned());
    }
}

/// Every line of code (comments aside) in `files` that `offends`, as `file:line: text`.
fn offending_lines(files: &[PathBuf], offends: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("read a source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && offends(code) {
                found.push(format!("{}:{}: {}", file.display(), number + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn services_and_engines_never_import_an_adapter() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for module in BELOW_ADAPTERS {
        let path = src.join(module);
        assert!(path.exists(), "{} is gone: update this test's list", path.display());
        sources(&path, &mut files);
    }
    let crossings = offending_lines(&files, |code| {
        ADAPTERS.iter().any(|adapter| {
            code.match_indices(adapter).any(|(at, _)| {
                // `crate::http` but not `crate::https_...`: the next character ends the path.
                code[at + adapter.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            })
        })
    });
    assert!(
        crossings.is_empty(),
        "services and engines must not depend on adapters:\n{}",
        crossings.join("\n")
    );
}

/// The raw store operations: only a resource's own module reads and writes its table by
/// key bytes; adapters go through it.
const RAW_STORE: &[&str] = &["put_raw(", "delete_raw(", "get_raw(", "scan_raw(", "Table::"];

#[test]
fn adapters_leave_raw_table_access_to_the_resources_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for adapter in ["api", "smtp", "cli"] {
        sources(&src.join(adapter), &mut files);
    }
    // A record lock is named by its table (`Table::DOMAINS.name()`): a name, not an access.
    let found = offending_lines(&files, |code| {
        RAW_STORE
            .iter()
            .any(|op| code.contains(op) && !(op.starts_with("Table::") && code.contains(".name()")))
    });
    assert!(
        found.is_empty(),
        "adapters must not touch tables by key bytes; call the resource's module:\n{}",
        found.join("\n")
    );
}
