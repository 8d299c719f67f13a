//! # herald
//!
//! A self-hosted email delivery service: applications hand it mail over SMTP submission
//! or a REST API wire-compatible with Resend's; herald keeps every accepted message
//! durably in a RocksDB spool ([`herald_queue`]), signs it with the sending domain's DKIM
//! key, delivers it to each recipient's MX hosts, and reports what happened through
//! signed webhooks, email records, logs and metrics.
//!
//! ## Data flow
//!
//! ```text
//!  SMTP submission ─┐
//!                   ├─> accept ─> spool (RocksDB, synced WAL) ─> delivery ─> MX hosts
//!  REST /emails ────┘                          └─> events ─> outbox ─> webhooks
//! ```
//!
//! ## Modules
//!
//! - [`config`]: the TOML config, parsed once into validated types.
//! - [`dns`]: DNS lookups (TXT for domain verification, MX for delivery).
//! - [`server`]: `herald serve`, start-up and shutdown.
//! - [`services`]: the handle every service operation takes (stores, spool, caches, wake
//!   handles), shared by the adapters.
//! - [`http`]: the HTTP listener (REST API, `/healthz`, `/metrics`).
//! - [`smtp`]: the SMTP listeners.
//! - [`suppressions`]: addresses mail is no longer sent to.
//! - [`delivery`]: the delivery engine: scheduler, DKIM, MX routing, outbound SMTP.
//! - [`accounts`]: teams and API keys, and the first start's bootstrap.
//! - [`api`]: the REST resources (API keys, teams, domains, emails, logs, suppressions,
//!   webhooks).
//! - [`cli`] and [`client`]: the operator's command line, a client of the REST API.
//! - [`domains`]: sending domains, DKIM keys and DNS verification.
//! - [`emails`]: validation, MIME, records, idempotency and the one path that spools mail.
//! - [`events`]: events written with the changes that cause them, for webhooks.
//! - [`mailqueue`]: the spool as operators see it (`herald queue`): list, show, retry,
//!   delete, stats.
//! - [`logs`]: API request logs as records and their store (with their expiry).
//! - [`limits`]: rate-limit state and per-destination pacing and connection leases,
//!   behind the traits a cluster's shared store will implement.
//! - [`outbound`]: the SSRF-safe outbound HTTP client (attachment downloads, webhooks).
//! - [`runner`]: the due-time runner: one loop for everything that waits for a time
//!   (webhook retries, domain re-checks, expiry).
//! - [`shutdown`]: the shutdown signal and drain.
//! - [`wake`]: the handle that wakes a loop sleeping until work is due.
//! - [`telemetry`]: logs and metrics.
//! - [`webhooks`]: the endpoints events are posted to, with their signing secrets.
//! - [`wire`]: timestamps as the records' JSON and every adapter write them.
//! - [`storage`]: the layer under the services: the node's own store
//!   ([`storage::Node`]: opened, its format checked, upgrades migrated), the stores the
//!   services are assembled from ([`storage::Backends`]), the unit of work
//!   ([`storage::Change`]), the storage error ([`storage::Error`]), record locks, pages
//!   of lists ([`storage::page`]), queues of due items for the runners
//!   ([`storage::due`]) and the expiry of records ([`storage::expiry`]).
//! - [`retention`]: the engine that runs each store's expiry ([`storage::expiry::Sweep`])
//!   as `[retention]` says.
//!
//! ## Layers
//!
//! From the top: the shell (`main`, [`server`], [`cli`], [`client`]), the adapters
//! ([`api`] over [`http`], [`smtp`], [`dashboard`], the public pages, [`dns`],
//! [`outbound`]), the engines ([`delivery`], webhook dispatch, the workers, [`runner`],
//! [`retention`]), the services, storage (the `store.rs` files, the `store/` folders
//! and [`storage`]), and the vocabulary (config, [`wire`], an email's states, record
//! types). A file imports only from its own layer or those below; `tests/layers.rs`
//! reads the import graph and holds what does not yet, as a list that may only shrink.
//!
//! ## Records: who owns them, where they live
//!
//! Each record has one owning module; its store trait is what the services see, and
//! [`storage::Backends`] is the one place that names the RocksDB implementations. On one
//! node everything is in the data directory's RocksDB; in a cluster (DESIGN.md, "the
//! storage map") the spool stays on the node and the rest is shared.
//!
//! | records | owner (store) | in a cluster |
//! |---|---|---|
//! | spool: messages, envelopes, due index | [`herald_queue`] | the node's RocksDB |
//! | teams, API keys | [`accounts`] ([`accounts::AccountStore`]) | PostgreSQL |
//! | users, invitations, sessions | [`users`] ([`users::store::UserStore`]) | PostgreSQL |
//! | domains, DKIM keys | [`domains`] ([`domains::DomainStore`]) | PostgreSQL, cached per node |
//! | webhooks | [`webhooks`] ([`webhooks::WebhookStore`]) | PostgreSQL, cached per node |
//! | suppressions | [`suppressions`] ([`suppressions::SuppressionStore`]) | PostgreSQL |
//! | contacts, segments, topics, properties, imports | [`contacts`] ([`contacts::ContactStore`], [`contacts::AudienceStore`]) | PostgreSQL |
//! | templates | [`templates`] ([`templates::TemplateStore`]) | PostgreSQL |
//! | email records, statuses, timelines, the status index | [`emails`] ([`emails::EmailStore`]) | PostgreSQL |
//! | idempotency records, keys in flight | [`emails::idempotency`] ([`emails::idempotency::IdempotencyStore`]) | PostgreSQL, unique across nodes |
//! | broadcasts, their markers and counts | [`broadcasts`] ([`broadcasts::BroadcastStore`]) | PostgreSQL |
//! | images | [`images`] ([`images::ImageStore`]) | PostgreSQL |
//! | events outbox, webhook messages and attempts | [`webhooks::log`] ([`webhooks::WebhookLog`]) | the node's outbox, then PostgreSQL |
//! | request logs | [`logs`] ([`logs::RequestLogStore`]) | PostgreSQL |
//! | metrics counters, quota counts, source addresses' days | [`counters`] ([`counters::CounterStore`]) | PostgreSQL; quota counts in Redis |
//! | rate limits, destination leases | [`limits`] ([`limits::RateState`], [`limits::DestinationLimits`]) | Redis |
//! | record locks | [`storage::locks`] ([`storage::locks::Locks`]) | row or advisory locks |
//! | the store's format, upgrade markers | [`storage::format`], [`storage::migrations`] | the node's RocksDB |
//!
//! A store's trait answers in [`storage::Error`] (no backend's own error type), stages
//! writes that must land together into a [`storage::Change`], and erases a deleted
//! team's records a batch at a time (`erase_team`). A store whose records wait for a time
//! hands the runner a [`storage::due::DueQueue`] and the retention engine a
//! [`storage::expiry::Sweep`], never its tables. The services take the time, new ids and
//! record locks from what [`storage::Backends`] was given too.

pub mod accounts;
pub mod api;
pub mod broadcasts;
pub mod cli;
pub mod client;
pub mod config;
pub mod contacts;
pub mod counters;
pub mod dashboard;
pub mod delivery;
pub mod design;
pub mod dns;
pub mod domains;
pub mod emails;
pub mod events;
pub mod feedback;
pub mod http;
pub mod images;
pub mod insights;
pub mod limits;
pub mod logs;
pub mod mailqueue;
pub mod outbound;
pub mod quotas;
pub mod regions;
pub mod retention;
pub mod runner;
pub mod server;
pub mod services;
pub mod shutdown;
pub mod smtp;
pub mod storage;
pub mod suppressions;
pub mod telemetry;
pub mod templates;
#[cfg(test)]
mod testing;
pub mod tracking;
pub mod unsubscribe;
pub mod users;
pub mod wake;
pub mod webhooks;
pub mod wire;
