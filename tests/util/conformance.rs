//! What the store suites (`tests/storage_conformance.rs` and its modules in
//! `tests/conformance/`) share: a real store to run a suite on, page requests, the outbox
//! that events land in, and the cursor cases every paged list must pass. A suite includes this file alone
//! (`#[path = "util/conformance.rs"] mod conformance;`) rather than `mod util`, so that it
//! does not build the helpers for tests that run a whole server.

use herald::events::Event;
use herald::storage::page::{Cursor, PageRequest};
use herald_queue::{Id, Store};

/// Items per page in [`pages_go_newest_first`]: small, so that a list of a few items
/// spans several pages and every kind of page (first, middle, last) is seen.
const CASES_PAGE_LIMIT: usize = 2;

/// A real store in a temp directory. The directory is returned with it because the store
/// lives in it: drop the directory and the files go.
pub fn rocksdb() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = herald_queue::StoreOptions::new(dir.path().join("spool"));
    options.min_free_space = 0;
    let store = Store::open(options).expect("open the store");
    (dir, store)
}

/// A real store in a temp directory as [`rocksdb`], on a manual clock at `start`
/// (milliseconds since the epoch) that the suite moves itself.
pub fn rocksdb_on_clock(start: u64) -> (tempfile::TempDir, Store, std::sync::Arc<herald_queue::ManualClock>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = std::sync::Arc::new(herald_queue::ManualClock::new(herald_queue::Timestamp::from_millis(
        start,
    )));
    let mut options = herald_queue::StoreOptions::new(dir.path().join("spool"));
    options.min_free_space = 0;
    options.clock = clock.clone();
    let store = Store::open(options).expect("open the store");
    (dir, store, clock)
}

/// A new, empty database on the binary's private PostgreSQL server, its schema
/// migrated, as herald connects to it.
pub fn postgres() -> herald::storage::postgres::Postgres {
    let url = crate::postgres::database();
    let config = herald::config::Config::from_toml(&format!("[cluster]\npostgres = \"{url}\"\n"), None)
        .expect("a config naming the database");
    let postgres = config.cluster.postgres.expect("[cluster] postgres");
    let db = herald::storage::postgres::Postgres::connect(&postgres).expect("connect");
    db.migrate().expect("migrate");
    db
}

/// A page of `limit` items from `cursor`.
pub fn page(limit: usize, cursor: Cursor) -> PageRequest {
    PageRequest { limit, cursor }
}

/// The ids of `items`, in their order, each read with `id`.
pub fn ids_of<T>(items: &[T], id: impl Fn(&T) -> Id) -> Vec<Id> {
    items.iter().map(id).collect()
}

/// Whether `event` is in the outbox, where webhooks are fed from. The outbox is the
/// node's store (`ids`): an event is written in the same write as the change it reports,
/// so whatever keeps the records must get it there.
pub fn in_outbox(ids: &Store, event: &Event) -> bool {
    ids.get::<Event>(event.id.as_bytes()).expect("read the outbox").as_ref() == Some(event)
}

/// Asserts the cursor cases of a paged list that holds exactly the items `oldest_first`
/// (three or more). `list` answers a request with the ids of its page and whether more lie
/// beyond it in the direction of travel.
///
/// With pages of two, the list is cut into pages from the newest. From `Start`, each
/// `After` the last item of a page gives the next older page, with more beyond all but
/// the last; after the oldest item comes nothing. Coming back, `Before` the newest item
/// of a page gives the page before it, with more beyond all but the first; before the
/// newest item comes nothing. A page exactly as long as the list holds it all, and is not
/// "more". For five items `a` to `e`, oldest first, that is:
///
/// | cursor      | page     | more  |
/// |-------------|----------|-------|
/// | `Start`     | `[e, d]` | yes   |
/// | `After(d)`  | `[c, b]` | yes   |
/// | `After(b)`  | `[a]`    | no    |
/// | `After(a)`  | `[]`     | no    |
/// | `Before(a)` | `[c, b]` | yes   |
/// | `Before(c)` | `[e, d]` | no    |
/// | `Before(e)` | `[]`     | no    |
///
/// and `Start` with a limit of five gives all five, newest first, and no more.
pub fn pages_go_newest_first(list: impl Fn(&PageRequest) -> (Vec<Id>, bool), oldest_first: &[Id]) {
    assert!(
        oldest_first.len() > CASES_PAGE_LIMIT,
        "the cases need a list longer than one page"
    );
    let newest_first: Vec<Id> = oldest_first.iter().rev().copied().collect();
    let pages: Vec<&[Id]> = newest_first.chunks(CASES_PAGE_LIMIT).collect();
    let last = pages.len() - 1;
    let expect = |request: PageRequest, ids: &[Id], more: bool, case: &str| {
        assert_eq!(list(&request), (ids.to_vec(), more), "{case}: {request:?}");
    };

    let mut cursor = Cursor::Start;
    for (n, ids) in pages.iter().enumerate() {
        expect(page(CASES_PAGE_LIMIT, cursor), ids, n < last, "going older");
        cursor = Cursor::After(ids[ids.len() - 1]);
    }
    expect(page(CASES_PAGE_LIMIT, cursor), &[], false, "after the oldest");
    for n in (1..=last).rev() {
        let request = page(CASES_PAGE_LIMIT, Cursor::Before(pages[n][0]));
        expect(request, pages[n - 1], n - 1 > 0, "coming back");
    }
    let before_newest = page(CASES_PAGE_LIMIT, Cursor::Before(newest_first[0]));
    expect(before_newest, &[], false, "before the newest");
    let whole = page(oldest_first.len(), Cursor::Start);
    expect(whole, &newest_first, false, "exactly a page is not more");
}
