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
//! - [`services`]: the handle every service operation takes (store, spool, caches, wake
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
//! - [`limits`]: rate-limit state and per-destination pacing and connection leases,
//!   behind the traits a cluster's shared store will implement.
//! - [`outbound`]: the SSRF-safe outbound HTTP client (attachment downloads, webhooks).
//! - [`runner`]: the due-time runner: one loop for everything that waits for a time
//!   (webhook retries, domain re-checks, expiry).
//! - [`shutdown`]: the shutdown signal and drain.
//! - [`telemetry`]: logs and metrics.
//! - [`webhooks`]: the endpoints events are posted to, with their signing secrets.
//! - [`wire`]: timestamps as the records' JSON and every adapter write them.

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
pub mod suppressions;
pub mod telemetry;
pub mod templates;
#[cfg(test)]
mod testing;
pub mod tracking;
pub mod unsubscribe;
pub mod users;
pub mod webhooks;
pub mod wire;
