//! The layers of `src/`, checked on the real file-level import graph
//! (`util/import_graph.rs`): every file sits in one layer of [`LAYERS`], and a file
//! imports only from its own layer or those below it. From the top:
//!
//! - **shell**: the binary, start-up and the operator's client;
//! - **adapters**: what speaks a protocol (REST, SMTP, the dashboard, DNS, outbound HTTP);
//! - **engines**: the loops that run beside the adapters (delivery, webhook dispatch,
//!   workers, retention, the due runner);
//! - **services**: the operations themselves;
//! - **storage**: the `store.rs` files, the `store/` folders beside them (the webhook
//!   log's `log/`) and `src/storage/`: the only code that touches tables, which holds
//!   without exception;
//! - **vocabulary**: config, wire formats, an email's states, the shutdown signal, and
//!   the record types every layer speaks of (teams, keys, domains, webhooks).
//!
//! Upward imports and import circles are a ratchet: today's are listed below and may
//! only shrink (the rest of them are the adapters' side). A list entry that no longer
//! holds fails too, so the list is lowered as the code improves. `LAYERS_PRINT=1 cargo
//! test --test layers -- --nocapture` prints the lists as they are now.

#[path = "util/import_graph.rs"]
mod import_graph;

use std::collections::BTreeMap;
use std::path::Path;

use import_graph::Graph;

/// The layers, top first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Shell,
    Adapters,
    Engines,
    Services,
    Storage,
    Vocabulary,
}

/// Where each file lies: the longest matching entry wins; an entry ending in `/` is a
/// folder. A `store.rs` anywhere is storage.
const LAYERS: &[(&str, Layer)] = &[
    ("main.rs", Layer::Shell),
    ("lib.rs", Layer::Shell),
    ("server/", Layer::Shell),
    ("cli/", Layer::Shell),
    ("client.rs", Layer::Shell),
    ("telemetry.rs", Layer::Shell),
    ("api/", Layer::Adapters),
    ("http/", Layer::Adapters),
    ("smtp/", Layer::Adapters),
    ("dashboard/", Layer::Adapters),
    ("unsubscribe/page.rs", Layer::Adapters),
    ("dns.rs", Layer::Adapters),
    ("outbound.rs", Layer::Adapters),
    ("delivery/", Layer::Engines),
    ("runner.rs", Layer::Engines),
    ("retention.rs", Layer::Engines),
    ("webhooks/dispatch.rs", Layer::Engines),
    ("broadcasts/worker.rs", Layer::Engines),
    ("contacts/imports/worker.rs", Layer::Engines),
    ("domains/verifier.rs", Layer::Engines),
    ("emails/idempotency/expiry.rs", Layer::Engines),
    ("accounts/", Layer::Services),
    ("broadcasts/", Layer::Services),
    ("contacts/", Layer::Services),
    ("counters/", Layer::Services),
    ("design/", Layer::Services),
    ("domains/", Layer::Services),
    ("emails/", Layer::Services),
    ("feedback/", Layer::Services),
    ("images/", Layer::Services),
    ("insights/", Layer::Services),
    ("logs/", Layer::Services),
    ("logs/model.rs", Layer::Vocabulary),
    ("limits.rs", Layer::Services),
    ("mailqueue/", Layer::Services),
    ("quotas/", Layer::Services),
    ("regions/", Layer::Services),
    ("services/", Layer::Services),
    ("suppressions/", Layer::Services),
    ("templates/", Layer::Services),
    ("tracking/", Layer::Services),
    ("unsubscribe/", Layer::Services),
    ("users/", Layer::Services),
    ("webhooks/", Layer::Services),
    ("storage/", Layer::Storage),
    ("accounts/store/", Layer::Storage),
    ("webhooks/store/", Layer::Storage),
    ("users/store/", Layer::Storage),
    ("templates/store/", Layer::Storage),
    ("images/store/", Layer::Storage),
    ("suppressions/store/", Layer::Storage),
    ("contacts/store/", Layer::Storage),
    ("domains/store/", Layer::Storage),
    ("emails/store/", Layer::Storage),
    // Where an email's bodies are read back from: the message the spool retains.
    ("emails/content.rs", Layer::Storage),
    ("broadcasts/store/", Layer::Storage),
    ("logs/store/", Layer::Storage),
    ("counters/store/", Layer::Storage),
    ("emails/idempotency/store/", Layer::Storage),
    ("webhooks/log/", Layer::Storage),
    ("config/", Layer::Vocabulary),
    ("wire.rs", Layer::Vocabulary),
    ("shutdown.rs", Layer::Vocabulary),
    ("wake.rs", Layer::Vocabulary),
    ("delivery/reply.rs", Layer::Vocabulary),
    ("emails/state.rs", Layer::Vocabulary),
    ("emails/schedule.rs", Layer::Vocabulary),
    ("emails/address.rs", Layer::Vocabulary),
    ("emails/record.rs", Layer::Vocabulary),
    ("emails/idempotency/record.rs", Layer::Vocabulary),
    ("accounts/team.rs", Layer::Vocabulary),
    ("accounts/api_key.rs", Layer::Vocabulary),
    ("domains/model.rs", Layer::Vocabulary),
    ("domains/dkim.rs", Layer::Vocabulary),
    ("webhooks/model.rs", Layer::Vocabulary),
    ("images/model.rs", Layer::Vocabulary),
    ("broadcasts/model.rs", Layer::Vocabulary),
    ("counters/model.rs", Layer::Vocabulary),
    ("webhooks/message.rs", Layer::Vocabulary),
    ("events.rs", Layer::Vocabulary),
    ("webhooks/secret.rs", Layer::Vocabulary),
    ("users/model.rs", Layer::Vocabulary),
    ("contacts/model.rs", Layer::Vocabulary),
    ("suppressions/model.rs", Layer::Vocabulary),
    ("templates/model.rs", Layer::Vocabulary),
];

/// Imports from a higher layer that are still there (`importer -> imported`).
const UPWARD: &[&str] = &[
    "api/mod.rs -> server/mod.rs",
    "dashboard/emails.rs -> server/mod.rs",
    "dashboard/mod.rs -> server/mod.rs",
    "delivery/mod.rs -> dns.rs",
    "delivery/route.rs -> dns.rs",
    "domains/verifier.rs -> dns.rs",
    "domains/verify.rs -> dns.rs",
    "http/mod.rs -> server/mod.rs",
    "http/public.rs -> server/mod.rs",
    "http/routes.rs -> server/mod.rs",
    "http/routes.rs -> telemetry.rs",
    "http/upload.rs -> server/mod.rs",
    "insights/mod.rs -> dns.rs",
    "services/mod.rs -> outbound.rs",
    "smtp/driver.rs -> server/mod.rs",
    "smtp/mod.rs -> server/mod.rs",
    "webhooks/dispatch.rs -> outbound.rs",
    "webhooks/service.rs -> outbound.rs",
];

/// Import circles of more than one file that are still there, each its files sorted.
const CYCLES: &[&str] = &[
    "dashboard/identity.rs dashboard/mod.rs http/mod.rs http/public.rs http/request.rs http/upload.rs server/mod.rs smtp/mod.rs",
    "dashboard/broadcasts.rs dashboard/design.rs dashboard/templates.rs",
];

/// The layer of the file at `path`, if the table places it.
fn layer_of(path: &str) -> Option<Layer> {
    if path == "store.rs" || path.ends_with("/store.rs") {
        return Some(Layer::Storage);
    }
    LAYERS
        .iter()
        .filter(|(entry, _)| {
            if entry.ends_with('/') {
                path.starts_with(entry)
            } else {
                path == *entry
            }
        })
        .max_by_key(|(entry, _)| entry.len())
        .map(|&(_, layer)| layer)
}

fn graph() -> Graph {
    Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn printing() -> bool {
    std::env::var_os("LAYERS_PRINT").is_some()
}

/// Compares what was found with what a list allows: new entries and entries that no
/// longer hold are both failures.
fn ratchet(what: &str, found: &[String], allowed: &[String]) -> Vec<String> {
    let mut failures = Vec::new();
    for entry in found {
        if !allowed.contains(entry) {
            failures.push(format!("new {what}: {entry}"));
        }
    }
    for entry in allowed {
        if !found.contains(entry) {
            failures.push(format!("{what} no longer found (take it off the list): {entry}"));
        }
    }
    failures
}

#[test]
fn every_file_is_in_one_layer() {
    let graph = graph();
    let unplaced: Vec<&str> = graph
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|path| layer_of(path).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "files in no layer (add them to LAYERS): {unplaced:?}"
    );
    for (entry, _) in LAYERS {
        assert!(
            graph.files.iter().any(|f| if entry.ends_with('/') {
                f.path.starts_with(entry)
            } else {
                f.path == *entry
            }) || *entry == "storage/",
            "LAYERS names {entry}, which holds no source file"
        );
    }
}

#[test]
fn no_file_imports_from_a_layer_above_it() {
    let graph = graph();
    let mut found = Vec::new();
    let mut lines = Vec::new();
    for (&(from, to), line) in &graph.edges {
        let (importer, imported) = (&graph.files[from].path, &graph.files[to].path);
        let (Some(low), Some(high)) = (layer_of(importer), layer_of(imported)) else {
            continue;
        };
        if high < low {
            let entry = format!("{importer} -> {imported}");
            lines.push(format!(
                "src/{importer}:{line}: imports {imported} ({low:?} -> {high:?})"
            ));
            found.push(entry);
        }
    }
    if printing() {
        println!(
            "const UPWARD: &[&str] = &[\n{}];",
            found.iter().map(|e| format!("    \"{e}\",\n")).collect::<String>()
        );
    }
    let failures = ratchet(
        "upward import",
        &found,
        &UPWARD.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
    );
    assert!(
        failures.is_empty(),
        "{}\n\nwhere:\n{}",
        failures.join("\n"),
        lines.join("\n")
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let graph = graph();
    let found: Vec<String> = graph
        .cycles()
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|&i| graph.files[i].path.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if printing() {
        println!(
            "const CYCLES: &[&str] = &[\n{}];",
            found.iter().map(|e| format!("    \"{e}\",\n")).collect::<String>()
        );
    }
    let failures = ratchet(
        "import circle",
        &found,
        &CYCLES.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether a line of code touches a table: names the store's types (`Store`, `Batch`,
/// `Table`, `Scan`), calls `.store()`, or reads or writes raw key bytes (the store's
/// `get_raw`, `scan_raw`, `put_raw`, `delete_raw`).
fn touches_tables(code: &str) -> bool {
    if code.contains(".store()") || code.contains("herald_queue::Store") {
        return true;
    }
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| match word {
            "Batch" | "Table" | "Scan" | "get_raw" | "scan_raw" | "put_raw" | "delete_raw" => true,
            // `Error::Store(..)` is the storage error a service passes on, not an access.
            "Store" => !code.contains("Store(") && !code.contains("::Store"),
            _ => false,
        })
}

#[test]
fn only_storage_touches_tables() {
    let graph = graph();
    let mut counts: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for file in &graph.files {
        if layer_of(&file.path) == Some(Layer::Storage) {
            continue;
        }
        for (number, line) in file.code.lines().enumerate() {
            if touches_tables(line) {
                counts.entry(&file.path).or_default().push(format!(
                    "src/{}:{}: {}",
                    file.path,
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    let failures: Vec<String> = counts
        .iter()
        .map(|(path, lines)| {
            format!(
                "{path} touches tables on {} lines: move the access into a store\n{}",
                lines.len(),
                lines.join("\n")
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The graph finds what it should: a re-export is followed to the file that defines the
/// item, and a path written in code counts as much as a `use`.
#[test]
fn the_graph_follows_reexports_and_paths_in_code() {
    let graph = graph();
    let edge = |from: &str, to: &str| {
        let (Some(from), Some(to)) = (graph.index_of(from), graph.index_of(to)) else {
            return false;
        };
        graph.edges.contains_key(&(from, to))
    };
    // `use crate::services::{Error, Services}`: `Services` is defined in services/mod.rs,
    // and `Error` is re-exported there from services/error.rs, which defines it.
    assert!(edge("emails/browse.rs", "services/mod.rs"));
    assert!(edge("emails/browse.rs", "services/error.rs"));
    // A path written in a function body, with no `use`.
    assert!(edge("api/emails.rs", "insights/mod.rs"));
    // `main.rs` reaches the library through `herald::`.
    assert!(edge("main.rs", "server/mod.rs"));
    // Test modules are not part of the graph.
    assert!(
        !graph
            .files
            .iter()
            .any(|f| f.path.ends_with("tests.rs") || f.path == "testing.rs")
    );
}

/// The reader on a tree made for it: a re-export followed, a circle found through it, a
/// module's own child aside, and comments, strings and test modules ignored.
#[test]
fn the_graph_reads_a_small_tree_right() {
    let root = std::env::temp_dir().join(format!("herald-layers-{}", std::process::id()));
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\nmod c;\n"),
        ("a/mod.rs", "mod inner;\npub use inner::Thing;\n"),
        ("a/inner.rs", "use crate::b::helper;\npub struct Thing;\n"),
        (
            "b.rs",
            "pub fn helper() {\n    let _ = super::a::Thing; // crate::c::gone\n    let _ = \"crate::c::gone\";\n}\n",
        ),
        (
            "c.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::a::Thing;\n}\npub fn c() -> char { '\"' }\n",
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("make the folder");
        std::fs::write(path, text).expect("write a file");
    }
    let graph = Graph::read(&root);
    std::fs::remove_dir_all(&root).expect("remove the tree");
    let named: Vec<(String, String, usize)> = graph
        .edges
        .iter()
        .map(|(&(from, to), &line)| (graph.files[from].path.clone(), graph.files[to].path.clone(), line))
        .collect();
    let expected = [
        ("a/inner.rs".to_owned(), "b.rs".to_owned(), 1),
        ("a/mod.rs".to_owned(), "a/inner.rs".to_owned(), 2),
        ("b.rs".to_owned(), "a/inner.rs".to_owned(), 2),
    ];
    assert_eq!(named, expected);
    let cycles: Vec<Vec<&str>> = graph
        .cycles()
        .iter()
        .map(|group| group.iter().map(|&i| graph.files[i].path.as_str()).collect())
        .collect();
    assert_eq!(cycles, [["a/inner.rs", "b.rs"]]);
}
