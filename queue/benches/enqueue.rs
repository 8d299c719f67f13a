//! Durable enqueues per second: 2 KB and 100 KB messages with 1, 16 and 128 concurrent
//! writers, each enqueue returning only once its write batch is fsynced. A raw
//! `fdatasync` loop on the same file system runs first as the disk's baseline, appending
//! and writing over old blocks (as the spool's recycled write-ahead logs do).
//!
//! `cargo bench -p herald-queue --profile dev --bench enqueue`

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use herald_queue::{Admission, Batch, NewMessage, Spool, Store, StoreOptions};

const SIZES: [usize; 2] = [2 * 1024, 100 * 1024];
const WRITERS: [usize; 3] = [1, 16, 128];

fn raw_fsync(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(bench_dir()).expect("tempdir");
    let mut file = std::fs::File::create(dir.path().join("fsync")).expect("create");
    let block = vec![b'x'; 2048];
    let mut group = c.benchmark_group("raw_fdatasync");
    group.throughput(Throughput::Elements(1));
    group.bench_function("2KiB", |b| {
        b.iter(|| {
            file.write_all(&block).expect("write");
            file.sync_data().expect("fdatasync");
        });
    });
    // What a recycled write-ahead log does: write over blocks the file already has, so
    // the sync changes neither its size nor its inode.
    let mut old = std::fs::File::create(dir.path().join("overwrite")).expect("create");
    let blocks = 16 * 1024;
    for _ in 0..blocks {
        old.write_all(&block).expect("write");
    }
    old.sync_all().expect("fsync");
    let mut at = 0;
    group.bench_function("2KiB over old blocks", |b| {
        b.iter(|| {
            at = (at + 1) % blocks;
            old.write_all_at(&block, (at * block.len()) as u64).expect("write");
            old.sync_data().expect("fdatasync");
        });
    });
    group.finish();
}

fn enqueue(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_enqueue");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for size in SIZES {
        for writers in WRITERS {
            let dir = tempfile::tempdir_in(bench_dir()).expect("tempdir");
            let mut options = StoreOptions::new(dir.path());
            options.min_free_space = 0;
            let store = Store::open(options).expect("open");
            let (spool, _) = Spool::open(store.clone()).expect("spool");
            let raw = vec![b'x'; size];
            group.throughput(Throughput::Elements(1));
            let id = BenchmarkId::new(format!("{}KiB", size / 1024), format!("{writers}_writers"));
            group.bench_function(id, |b| b.iter_custom(|iters| run(&store, &spool, &raw, writers, iters)));
        }
    }
    group.finish();
}

/// Enqueues `iters` messages spread over `writers` threads; returns the wall time.
fn run(store: &Store, spool: &Spool, raw: &[u8], writers: usize, iters: u64) -> Duration {
    let per_writer = iters.div_ceil(writers as u64);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..writers {
            scope.spawn(|| {
                for _ in 0..per_writer {
                    let message = NewMessage {
                        id: store.next_id(),
                        team: "bench".into(),
                        sender: "a@example.com".into(),
                        recipients: vec!["b@example.net".into()],
                        metadata: BTreeMap::new(),
                        not_before: None,
                        raw: raw.to_vec(),
                        retain: false,
                    };
                    let admission = spool.enqueue(message, Batch::new()).wait().expect("enqueue");
                    assert!(matches!(admission, Admission::Accepted(_)), "{admission:?}");
                }
            });
        }
    });
    // Scale to the requested count so a rounded-up last writer does not flatter the rate.
    started
        .elapsed()
        .mul_f64(iters as f64 / (per_writer * writers as u64) as f64)
}

/// Benchmarks write where the data directory would live (the target dir's file system),
/// not on a tmpfs `/tmp` whose fsync is free.
fn bench_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("HERALD_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("cwd").join("target").join("bench-spool"));
    std::fs::create_dir_all(&dir).expect("bench dir");
    dir
}

criterion_group!(benches, raw_fsync, enqueue);
criterion_main!(benches);
