//! Large messages in body files, against a real RocksDB and real files in a temp dir:
//! written once, read back across a reopen, removed with their message, and checked.

mod util;

use std::path::{Path, PathBuf};

use herald_queue::{Admission, Batch, Error, Id, Scan, Spool, Store, Table, Updated};
use util::{deliver_all, email_batch, message, open};

/// Larger than the 4 KiB from which messages go to body files.
const LARGE: usize = 100 * 1024;

fn accept(spool: &Spool, store: &Store, size: usize, retain: bool) -> (Id, Vec<u8>) {
    let mut msg = message(store, size);
    msg.retain = retain;
    msg.raw[size - 1] = b'!';
    let (id, raw) = (msg.id, msg.raw.clone());
    let admission = spool.enqueue(msg, email_batch(id)).wait().expect("enqueue");
    assert_eq!(admission, Admission::Accepted(id));
    (id, raw)
}

fn body_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("bodies"))
        .expect("the body files' directory")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    files
}

fn places(store: &Store, id: Id) -> usize {
    store
        .scan_raw(Table::BODY_PLACES, Scan::prefix(id.as_bytes()))
        .expect("scan")
        .len()
}

#[test]
fn a_large_message_is_written_once_to_a_body_file_and_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, raw, small) = {
        let (store, spool, _) = open(dir.path());
        let (id, raw) = accept(&spool, &store, LARGE, false);
        let (small, _) = accept(&spool, &store, 2048, false);
        let inline = store.scan_raw(Table::MESSAGES, Scan::prefix(b"")).expect("scan");
        assert_eq!(
            inline.iter().map(|(key, _)| key.clone()).collect::<Vec<_>>(),
            vec![small.as_bytes().to_vec()],
            "only the small message is kept inline"
        );
        assert_eq!(places(&store, id), 1);
        let files = body_files(dir.path());
        assert_eq!(files.len(), 1);
        assert_eq!(std::fs::metadata(&files[0]).expect("file").len(), LARGE as u64);
        assert_eq!(spool.load(id).expect("load").expect("spooled").1, raw);
        (id, raw, small)
    };
    let (store, spool, recovery) = open(dir.path());
    assert_eq!(recovery.messages, 2);
    assert_eq!(spool.load(id).expect("load").expect("spooled").1, raw);
    assert_eq!(spool.load(small).expect("load").expect("spooled").1.len(), 2048);
    // A reopened store appends to a new file.
    let (second, second_raw) = accept(&spool, &store, LARGE, false);
    assert_eq!(body_files(dir.path()).len(), 2);
    assert_eq!(spool.load(second).expect("load").expect("spooled").1, second_raw);
}

#[test]
fn a_delivered_message_leaves_its_body_file_and_a_retained_one_when_forgotten() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let (store, spool, _) = open(dir.path());
        let (sent, _) = accept(&spool, &store, LARGE, false);
        let (kept, kept_raw) = accept(&spool, &store, LARGE, true);
        assert_eq!(deliver_all(&spool, sent), Updated::Removed);
        assert_eq!(places(&store, sent), 0);
        assert_eq!(spool.retained(sent).expect("read"), None);

        assert_eq!(deliver_all(&spool, kept), Updated::Removed);
        assert_eq!(
            spool.retained(kept).expect("read"),
            Some(kept_raw),
            "kept for its bodies"
        );
        let mut batch = Batch::new();
        Spool::forget(&store, kept, &mut batch).expect("forget");
        store.commit(batch).wait().expect("forgotten");
        assert_eq!(spool.retained(kept).expect("read"), None);
        assert_eq!(places(&store, kept), 0);
        // The file is still the one appended to: it stays until then, holding nothing.
        let files = body_files(dir.path());
        assert_eq!(files.len(), 1);
        let allocated = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&files[0]).expect("file")) * 512;
        assert!(
            allocated < LARGE as u64,
            "the two messages' ranges are punched out: {allocated} bytes left"
        );
    }
    let (store, _spool, _) = open(dir.path());
    assert!(body_files(dir.path()).is_empty(), "an empty file goes at open");
    assert!(
        store
            .scan_raw(Table::BODY_FILES, Scan::prefix(b""))
            .expect("scan")
            .is_empty(),
        "and so does its count"
    );
}

#[test]
fn a_body_that_does_not_match_its_checksum_is_corrupt_not_mail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, spool, _) = open(dir.path());
    let (id, _) = accept(&spool, &store, LARGE, false);
    let file = &body_files(dir.path())[0];
    let mut bytes = std::fs::read(file).expect("read");
    bytes[LARGE / 2] ^= 0x20;
    std::fs::write(file, bytes).expect("write");
    match spool.load(id) {
        Err(Error::Corrupt { table, reason }) => {
            assert_eq!(table, "body_places");
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("expected a corrupt record, got {other:?}"),
    }
}

#[test]
fn a_group_that_puts_and_deletes_a_message_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _spool, _) = open(dir.path());
    let id = store.next_id();
    let mut batch = Batch::new();
    batch.put_raw(Table::MESSAGES, id.as_bytes().to_vec(), vec![b'x'; LARGE]);
    batch.delete_raw(Table::MESSAGES, id.as_bytes().to_vec());
    batch.delete_raw(Table::MESSAGES, id.as_bytes().to_vec());
    store.commit(batch).wait().expect("committed");
    assert_eq!(store.get_raw(Table::MESSAGES, id.as_bytes()).expect("read"), None);
    assert_eq!(places(&store, id), 0);
    let counts = store.scan_raw(Table::BODY_FILES, Scan::prefix(b"")).expect("scan");
    assert_eq!(counts.len(), 1);
    assert_eq!(herald_queue::decode_counter(&counts[0].1), 0, "one in, one out");
}

#[test]
fn a_large_message_a_build_before_body_files_kept_in_rocksdb_is_read_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = {
        let (store, _spool, _) = open(dir.path());
        store.next_id()
    };
    let raw = vec![b'o'; LARGE];
    {
        // What such a build left: the bytes themselves in the messages table.
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        let names = rocksdb::DB::list_cf(&options, dir.path()).expect("tables");
        let db = rocksdb::DB::open_cf(&options, dir.path(), &names).expect("the store's RocksDB");
        let messages = db.cf_handle("messages").expect("the messages table");
        db.put_cf(messages, id.as_bytes(), &raw).expect("put");
    }
    let (store, spool, _) = open(dir.path());
    assert_eq!(spool.retained(id).expect("read"), Some(raw));
    let mut batch = Batch::new();
    Spool::forget(&store, id, &mut batch).expect("forget");
    store.commit(batch).wait().expect("forgotten");
    assert_eq!(spool.retained(id).expect("read"), None);
    assert!(body_files(dir.path()).is_empty(), "no body file was involved");
}
