use std::time::Duration;

use herald_queue::Store;

use super::*;
use crate::config::Config;
use crate::counters::RocksCounters;
use crate::limits::LocalDestinations;

/// 2026-11-20T12:00:00Z, the warm-up's first day.
const START: u64 = 1_795_176_000_000;

const CONFIG: &str = "[[regions]]\nname = \"us-east-1\"\n\
    source_addresses = [\"127.0.0.2\", \"127.0.0.3\", \"::1\"]\nconnections_per_address = 2\n\
    [[regions.warmup]]\naddress = \"127.0.0.3\"\nstart = \"2026-11-20\"\ndaily_limits = [2, 3]\n\
    [[regions]]\nname = \"eu-west-1\"\n";

/// One address, warming up with a limit of one message on its first day.
const ONE_A_DAY: &str = "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"127.0.0.2\"]\n\
    [[regions.warmup]]\naddress = \"127.0.0.2\"\nstart = \"2026-11-20\"\ndaily_limits = [1]\n";

fn setup(store: &Store) -> (Config, Regions) {
    setup_with(store, CONFIG)
}

fn setup_with(store: &Store, text: &str) -> (Config, Regions) {
    let config = Config::from_toml(text, None).expect("valid");
    let regions = Regions::new(&config, &LocalDestinations::new(store.clock().clone()));
    (config, regions)
}

/// The counters at the store's time now.
fn at<'a>(counters: &'a RocksCounters, store: &Store) -> Today<'a> {
    Today {
        counters,
        now: store.now(),
    }
}

fn bound(pick: Pick) -> SourceLease {
    match pick {
        Pick::Bound(lease) => lease,
        _ => panic!("no address was bound"),
    }
}

#[test]
fn addresses_of_the_family_take_turns_up_to_their_connections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _clock) = crate::testing::store(dir.path(), START);
    let counters = RocksCounters::new(store.clone());
    let (config, regions) = setup(&store);
    let us = regions.get(&config, "us-east-1");
    let turns: Vec<SourceLease> = (0..4).map(|_| bound(us.pick(at(&counters, &store), true))).collect();
    let ips: Vec<String> = turns.iter().map(|l| l.ip().to_string()).collect();
    assert_eq!(ips, ["127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"]);
    assert!(
        matches!(us.pick(at(&counters, &store), true), Pick::Busy),
        "two connections each"
    );
    drop(turns);
    assert_eq!(bound(us.pick(at(&counters, &store), false)).ip().to_string(), "::1");
    let eu = regions.get(&config, "eu-west-1");
    assert!(matches!(eu.pick(at(&counters, &store), true), Pick::System));
    let (v4_only, only) = setup_with(&store, ONE_A_DAY);
    assert!(matches!(
        only.get(&v4_only, "us-east-1").pick(at(&counters, &store), false),
        Pick::NoFamily
    ));
    assert_eq!(
        regions.get(&config, "ap-northeast-1").name(),
        "us-east-1",
        "the default"
    );
}

#[test]
fn a_warming_address_stops_at_its_daily_limit_and_grows_the_next_day() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, clock) = crate::testing::store(dir.path(), START);
    let counters = RocksCounters::new(store.clone());
    let (config, regions) = setup(&store);
    let us = regions.get(&config, "us-east-1");
    let warming = &us.sources()[1];
    assert_eq!(warming.today(store.now()), Some((0, 2)));
    let lease = bound(us.pick(at(&counters, &store), true));
    let lease = if lease.ip() == warming.ip() {
        lease
    } else {
        bound(us.pick(at(&counters, &store), true))
    };
    assert!(lease.take(at(&counters, &store)) && lease.take(at(&counters, &store)));
    assert!(!lease.take(at(&counters, &store)), "the day's two are used");
    // Counted in the store as attempts are recorded, and read back after a restart.
    let mut batch = crate::storage::Change::new();
    count(&counters, &mut batch, warming.ip(), store.now(), 2);
    store
        .commit(batch.into_local().expect("shared writes"))
        .wait()
        .expect("commit");
    drop(lease);
    for _ in 0..4 {
        let other = bound(us.pick(at(&counters, &store), true));
        assert_eq!(other.ip().to_string(), "127.0.0.2", "a spent address is skipped");
    }
    let (_, restarted) = setup(&store);
    let again = restarted.get(&config, "us-east-1");
    assert_eq!(again.sources()[1].sent_today(at(&counters, &store)), 2);

    clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(warming.today(store.now()), Some((1, 3)));
    assert_eq!(warming.sent_today(at(&counters, &store)), 0, "a new day");
    clock.advance(Duration::from_secs(24 * 3600));
    assert_eq!(warming.today(store.now()), None, "warmed up");
    let stats = stats::of(&us, at(&counters, &store));
    assert_eq!(stats[1].address, "127.0.0.3");
    assert_eq!(stats[1].warmup, None);
}

#[test]
fn every_address_spent_is_spent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _clock) = crate::testing::store(dir.path(), START);
    let counters = RocksCounters::new(store.clone());
    let (config, regions) = setup_with(&store, ONE_A_DAY);
    let us = regions.get(&config, "us-east-1");
    let lease = bound(us.pick(at(&counters, &store), true));
    assert!(lease.take(at(&counters, &store)));
    drop(lease);
    assert!(matches!(us.pick(at(&counters, &store), true), Pick::Spent));
    let stats = stats::all(&regions, at(&counters, &store));
    assert_eq!(stats[0].sent_today, 1);
    assert_eq!(
        stats[0].warmup,
        Some(stats::WarmupDay {
            day: 1,
            days: 1,
            daily_limit: 1
        })
    );
    assert_eq!(next_day(store.now()), Timestamp::from_millis(START + 12 * 3600 * 1000));
    // Held mail resumes over the next day's first hour, each message at its own time.
    let resumes: std::collections::BTreeSet<u64> = (0..50)
        .map(|_| resume_at(store.now(), store.next_id()).as_millis())
        .collect();
    let midnight = next_day(store.now()).as_millis();
    assert!(
        resumes.iter().all(|at| (midnight..midnight + 3_600_000).contains(at)),
        "{resumes:?}"
    );
    assert!(resumes.len() > 40, "spread, not bunched: {resumes:?}");
}

#[test]
fn a_message_given_back_frees_its_place_in_the_day() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _clock) = crate::testing::store(dir.path(), START);
    let counters = RocksCounters::new(store.clone());
    let (config, regions) = setup_with(&store, ONE_A_DAY);
    let lease = bound(regions.get(&config, "us-east-1").pick(at(&counters, &store), true));
    assert!(lease.take(at(&counters, &store)));
    assert!(!lease.take(at(&counters, &store)));
    lease.give_back(at(&counters, &store));
    assert!(
        lease.take(at(&counters, &store)),
        "the unsent message's place is free again"
    );
}
