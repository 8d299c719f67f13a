//! API request logs as records: what one logged request holds ([`RequestLog`]) and where
//! logs are kept ([`RequestLogStore`]). The HTTP adapter writes them and renders them
//! (`http::request_log`), `GET /logs` and the dashboard read them.

mod model;
pub mod store;

pub use model::RequestLog;
pub use store::{PostgresRequestLogs, RequestLogStore, RocksRequestLogs};
