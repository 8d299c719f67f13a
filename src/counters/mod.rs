//! The counters behind `GET /emails/metrics` and the dashboard's Metrics page: per team,
//! 15-minute UTC bucket, sending domain (the `From` address's) and metric, how many
//! events happened. Buckets of 15 minutes put every IANA zone's hour and day boundaries
//! on a bucket edge, so any zone's hours, days, weeks and months add up from them
//! exactly. Counting never reads (each event adds through the store's merge operator,
//! in the batch that records the event), and a day's buckets leave together after
//! `[retention] metrics`. The store's backfill (`store::backfill`) builds them once for
//! events recorded before they existed. They are kept by a [`CounterStore`].

pub mod model;
pub mod query;
pub(crate) mod store;

pub use model::{BUCKET_MS, Count, Metric, QuotaCounter, bucket_of, domain_of, start_of};
pub use store::{CounterStore, PostgresCounters, RocksCounters};
