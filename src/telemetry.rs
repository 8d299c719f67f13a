//! Logs and metrics.
//!
//! Logs go through `tracing`, human-readable by default and one JSON object per line with
//! `[log] format = "json"`. Metrics go through the `metrics` facade into a Prometheus
//! recorder that `/metrics` renders.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global log subscriber. `RUST_LOG`, when set, overrides `[log] level`.
/// A second call (tests starting several servers in one process) keeps the first.
pub fn init_logging(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match config.format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// The Prometheus recorder's handle, installing the recorder on first use.
///
/// The `metrics` facade has exactly one global recorder per process, so the handle to it
/// is process-wide too; every server started in the process renders the same registry.
pub fn metrics() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // Fails only when another recorder is already installed (a test harness's);
            // the handle then renders an empty registry, which is still valid output.
            let _ = metrics::set_global_recorder(recorder);
            describe();
            handle
        })
        .clone()
}

fn describe() {
    metrics::describe_counter!(
        "herald_spool_enqueued_total",
        "Messages durably accepted into the spool."
    );
    metrics::describe_counter!(
        "herald_spool_refused_total",
        "Enqueues refused (disk low, storage error, busy)."
    );
    metrics::describe_gauge!("herald_spool_messages", "Messages in the spool.");
    metrics::describe_gauge!(
        "herald_spool_disk_available_bytes",
        "Free bytes on the data directory's file system."
    );
    metrics::describe_histogram!("herald_spool_commit_seconds", "Time of one synced group commit.");
    metrics::describe_histogram!(
        "herald_spool_commit_group_size",
        "Write batches merged into one synced commit."
    );
    metrics::describe_counter!("herald_http_requests_total", "HTTP requests by route and status.");
    metrics::describe_gauge!(
        "herald_store_table_bytes",
        "Bytes a store table takes, on disk (SST and blob files) and in memtables."
    );
    metrics::describe_gauge!("herald_store_table_keys", "RocksDB's estimate of a store table's keys.");
    metrics::describe_counter!(
        "herald_expired_total",
        "Records removed by retention, by kind (emails, content, webhook_messages, request_logs)."
    );
    metrics::describe_counter!(
        "herald_smtp_connections_total",
        "SMTP connections accepted, by listener."
    );
}

/// Sets the gauges of every store table's size, read from RocksDB now (cheap estimates),
/// before `/metrics` renders them.
pub fn record_table_sizes(node: &crate::storage::Node) {
    for size in node.table_sizes() {
        let table = size.table.name();
        metrics::gauge!("herald_store_table_bytes", "table" => table, "where" => "disk").set(size.disk_bytes as f64);
        metrics::gauge!("herald_store_table_bytes", "table" => table, "where" => "memory")
            .set(size.memory_bytes as f64);
        metrics::gauge!("herald_store_table_keys", "table" => table).set(size.keys as f64);
    }
}
