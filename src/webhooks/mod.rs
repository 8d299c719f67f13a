//! Webhooks: the endpoints a team's events are posted to.
//!
//! A webhook names an http(s) endpoint, the event kinds it subscribes to, whether it is
//! enabled, and the secret its requests are signed with (the Standard Webhooks scheme,
//! which Resend's Svix signatures follow). They are kept behind
//! [`WebhookStore`] and managed through [`service`] (the REST API's `/webhooks`). Endpoints are checked against the outbound client's
//! address policy ([`crate::outbound`]) when they are saved, and again at connect time.
//!
//! What is sent to them is the webhook log ([`WebhookLog`]): the event outbox, one
//! message per event and endpoint, and each attempt, written by the [`dispatch`]er and
//! read through [`history`].

pub mod dispatch;
pub mod history;
pub mod log;
mod message;
mod model;
mod secret;
pub mod service;
pub mod signature;
pub(crate) mod store;

pub use log::{PostgresWebhookLog, RocksWebhookLog, WebhookLog};
pub use message::{MessageState, WebhookAttempt, WebhookMessage};
pub use model::{ENDPOINT_MAX, EventsError, PreviousSecret, WEBHOOKS_PER_TEAM_MAX, Webhook, WebhookStatus, events};
pub use secret::{PREFIX as SECRET_PREFIX, SECRET_BYTES, SigningSecret};
pub use store::{PostgresWebhooks, RocksWebhooks, WebhookStore};
