//! Templates: stored emails with `{{{VARIABLE}}}` placeholders (Resend's `/templates`),
//! sent by id or alias with `POST /emails {"template": {"id", "variables"}}`.
//!
//! A template has a draft and a published version. Creating one makes a draft; publishing
//! makes the draft the version that sends; editing a published template makes a new
//! draft while the published version keeps sending until it is published again. Each
//! version has its own id, which an email sent from it records. The merge language is
//! [`merge`]'s: parsed when a version is saved (a template that does not parse is
//! refused), rendered at each send.

pub mod merge;
mod model;
pub mod send;
pub mod service;
pub(crate) mod store;

pub use crate::emails::record::TemplateRef;
pub use model::{HISTORY_MAX, Template, TemplateSummary, Variable, VariableType, Version};
pub use store::{PostgresTemplates, RocksTemplates, TemplateStore};
