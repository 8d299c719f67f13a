//! The REST resources. Each handler is a plain function over a [`Ctx`]: it runs on the
//! blocking pool (it reads and writes RocksDB and may generate keys), returns a [`Reply`]
//! or an [`ApiError`], and knows nothing of sockets.

mod api_keys;
mod broadcasts;
mod contact_imports;
mod contact_properties;
mod contacts;
mod domains;
mod emails;
mod logs;
mod queue;
mod segments;
mod suppressions;
mod suppressions_batch;
mod teams;
mod templates;
mod topics;
mod users;
mod webhook_deliveries;
mod webhook_events;
mod webhooks;

use hyper::StatusCode;
use serde_json::Value;

use segments::Named;

use crate::accounts::Caller;
use crate::http::{ApiError, ApiRequest, Route};
use crate::server::AppState;

/// What a handler sees.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// Shared state.
    pub state: &'a AppState,
    /// Who is calling.
    pub caller: &'a Caller,
    /// The request.
    pub request: &'a ApiRequest,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The status: 200, or 201 for creations.
    pub status: StatusCode,
    /// The JSON body.
    pub body: Value,
}

impl Reply {
    /// `200` with `body`.
    pub fn ok(body: Value) -> Self {
        Reply {
            status: StatusCode::OK,
            body,
        }
    }

    /// `201` with `body`.
    pub fn created(body: Value) -> Self {
        Reply {
            status: StatusCode::CREATED,
            body,
        }
    }
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`), for a
/// `PATCH` body's `#[serde(default, deserialize_with = "super::present")]` fields.
fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Some)
}

/// Runs the handler of `route`.
pub fn dispatch(ctx: &Ctx<'_>, route: &Route) -> Result<Reply, ApiError> {
    match route {
        Route::CreateApiKey => api_keys::create(ctx),
        Route::ListApiKeys => api_keys::list(ctx),
        Route::UpdateApiKey(id) => api_keys::update(ctx, id),
        Route::DeleteApiKey(id) => api_keys::delete(ctx, id),
        Route::CreateTeam => teams::create(ctx),
        Route::ListTeams => teams::list(ctx),
        Route::GetTeam(id) => teams::get(ctx, id),
        Route::GetUsage => teams::usage(ctx),
        Route::UpdateTeam(id) => teams::update(ctx, id),
        Route::DeleteTeam(id) => teams::delete(ctx, id),
        Route::CreateDomain => domains::create(ctx),
        Route::ListDomains => domains::list(ctx),
        Route::GetDomain(id) => domains::get(ctx, id),
        Route::UpdateDomain(id) => domains::update(ctx, id),
        Route::DeleteDomain(id) => domains::delete(ctx, id),
        Route::VerifyDomain(id) => domains::verify(ctx, id),
        Route::SendEmail => emails::send(ctx),
        Route::SendBatch => emails::batch(ctx),
        Route::ListEmails => emails::list(ctx),
        Route::EmailMetrics => emails::metrics(ctx),
        Route::EmailInsights(id) => emails::insights(ctx, id),
        Route::GetEmail(id) => emails::get(ctx, id),
        Route::UpdateEmail(id) => emails::update(ctx, id),
        Route::CancelEmail(id) => emails::cancel(ctx, id),
        Route::ListLogs => logs::list(ctx),
        Route::GetLog(id) => logs::get(ctx, id),
        Route::ListQueue => queue::list(ctx),
        Route::QueueStats => queue::stats(ctx),
        Route::RetryQueue => queue::retry(ctx),
        Route::ShowQueued(id) => queue::show(ctx, id),
        Route::RetryQueued(id) => queue::retry_one(ctx, id),
        Route::DeleteQueued(id) => queue::delete(ctx, id),
        Route::CreateContact => contacts::create(ctx),
        Route::ListContacts => contacts::list(ctx),
        Route::GetContact(target) => contacts::get(ctx, target),
        Route::UpdateContact(target) => contacts::update(ctx, target),
        Route::DeleteContact(target) => contacts::delete(ctx, target),
        Route::ListContactImports => contact_imports::list(ctx),
        Route::CreateContactImport => contact_imports::create(ctx),
        Route::GetContactImport(id) => contact_imports::get(ctx, id),
        Route::ListContactSegments(target) => contacts::segments(ctx, target),
        Route::AddContactSegment(target, segment) => contacts::add_segment(ctx, target, segment),
        Route::RemoveContactSegment(target, segment) => contacts::remove_segment(ctx, target, segment),
        Route::ListContactTopics(target) => contacts::topics(ctx, target),
        Route::UpdateContactTopics(target) => contacts::update_topics(ctx, target),
        Route::CreateSegment => segments::create(ctx, Named::Segment),
        Route::ListSegments | Route::ListAudiences => segments::list(ctx),
        Route::GetSegment(id) => segments::get(ctx, id, Named::Segment),
        Route::UpdateSegment(id) => segments::update(ctx, id),
        Route::DeleteSegment(id) => segments::delete(ctx, id, Named::Segment),
        Route::ListSegmentContacts(id) | Route::ListAudienceContacts(id) => segments::contacts(ctx, id),
        Route::CreateAudience => segments::create(ctx, Named::Audience),
        Route::GetAudience(id) => segments::get(ctx, id, Named::Audience),
        Route::DeleteAudience(id) => segments::delete(ctx, id, Named::Audience),
        Route::CreateAudienceContact(id) => contacts::create_in(ctx, id),
        Route::GetAudienceContact(id, target) => {
            contacts::in_audience(ctx, id, target).and_then(|()| contacts::get(ctx, target))
        }
        Route::UpdateAudienceContact(id, target) => {
            contacts::in_audience(ctx, id, target).and_then(|()| contacts::update(ctx, target))
        }
        Route::DeleteAudienceContact(id, target) => {
            contacts::in_audience(ctx, id, target).and_then(|()| contacts::delete(ctx, target))
        }
        Route::CreateTemplate => templates::create(ctx),
        Route::ListTemplates => templates::list(ctx),
        Route::GetTemplate(target) => templates::get(ctx, target),
        Route::UpdateTemplate(target) => templates::update(ctx, target),
        Route::DeleteTemplate(target) => templates::delete(ctx, target),
        Route::PublishTemplate(target) => templates::publish(ctx, target),
        Route::DuplicateTemplate(target) => templates::duplicate(ctx, target),
        Route::CreateBroadcast => broadcasts::create(ctx),
        Route::ListBroadcasts => broadcasts::list(ctx),
        Route::GetBroadcast(id) => broadcasts::get(ctx, id),
        Route::UpdateBroadcast(id) => broadcasts::update(ctx, id),
        Route::DeleteBroadcast(id) => broadcasts::delete(ctx, id),
        Route::SendBroadcast(id) => broadcasts::send(ctx, id),
        Route::CancelBroadcast(id) => broadcasts::cancel(ctx, id),
        Route::DuplicateBroadcast(id) => broadcasts::duplicate(ctx, id),
        Route::ListBroadcastRecipients(id) => broadcasts::recipients(ctx, id),
        Route::ListBroadcastClickedLinks(id) => broadcasts::clicked_links(ctx, id),
        Route::CreateUser => users::create(ctx),
        Route::ListUsers => users::list(ctx),
        Route::CreateTopic => topics::create(ctx),
        Route::ListTopics => topics::list(ctx),
        Route::GetTopic(id) => topics::get(ctx, id),
        Route::UpdateTopic(id) => topics::update(ctx, id),
        Route::DeleteTopic(id) => topics::delete(ctx, id),
        Route::CreateContactProperty => contact_properties::create(ctx),
        Route::ListContactProperties => contact_properties::list(ctx),
        Route::GetContactProperty(id) => contact_properties::get(ctx, id),
        Route::UpdateContactProperty(id) => contact_properties::update(ctx, id),
        Route::DeleteContactProperty(id) => contact_properties::delete(ctx, id),
        Route::AddSuppression => suppressions::add(ctx),
        Route::ListSuppressions => suppressions::list(ctx),
        Route::GetSuppression(target) => suppressions::get(ctx, target),
        Route::DeleteSuppression(target) => suppressions::delete(ctx, target),
        Route::BatchAddSuppressions => suppressions_batch::add(ctx),
        Route::BatchRemoveSuppressions => suppressions_batch::remove(ctx),
        Route::CreateWebhook => webhooks::create(ctx),
        Route::ListWebhooks => webhooks::list(ctx),
        Route::GetWebhook(id) => webhooks::get(ctx, id),
        Route::UpdateWebhook(id) => webhooks::update(ctx, id),
        Route::DeleteWebhook(id) => webhooks::delete(ctx, id),
        Route::ListWebhookDeliveries(id) => webhook_deliveries::list(ctx, id),
        Route::ReplayWebhookDelivery(id, delivery) => webhook_deliveries::replay(ctx, id, delivery),
        Route::RotateWebhookSecret(id) => webhooks::rotate_secret(ctx, id),
        Route::ListWebhookEvents(id) => webhook_events::list(ctx, id),
        Route::GetWebhookEvent(id, event) => webhook_events::get(ctx, id, event),
        Route::ListWebhookEventAttempts(id, event) => webhook_events::attempts(ctx, id, event),
        Route::ReplayWebhookEvent(id, event) => webhook_events::replay(ctx, id, event),
    }
}
