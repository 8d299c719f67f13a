//! Webhooks: the endpoints a team's events are posted to.
//!
//! A webhook names an http(s) endpoint, the event kinds it subscribes to, whether it is
//! enabled, and the secret its requests are signed with (the Standard Webhooks scheme,
//! which Resend's Svix signatures follow). They are kept in
//! [`Table::WEBHOOKS`](herald_queue::Table::WEBHOOKS) by team and id and managed through
//! `/webhooks` ([`crate::api`]). Endpoints are checked against the outbound client's
//! address policy ([`crate::outbound`]) when they are saved, and again at connect time.

pub mod dispatch;
mod model;
mod secret;
pub mod signature;

pub use model::{
    ENDPOINT_MAX, EventsError, PreviousSecret, WEBHOOKS_PER_TEAM_MAX, Webhook, WebhookStatus, events, find, for_team,
};
pub use secret::{PREFIX as SECRET_PREFIX, SECRET_BYTES, SigningSecret};
