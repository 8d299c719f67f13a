//! The route table: which resource and verb a method and path name.

use hyper::Method;

use super::ApiError;

/// A matched route, with its path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /api-keys`
    CreateApiKey,
    /// `GET /api-keys`
    ListApiKeys,
    /// `PATCH /api-keys/{id}`
    UpdateApiKey(String),
    /// `DELETE /api-keys/{id}`
    DeleteApiKey(String),
    /// `POST /teams`
    CreateTeam,
    /// `GET /teams`
    ListTeams,
    /// `GET /teams/{id}`
    GetTeam(String),
    /// `GET /usage`
    GetUsage,
    /// `PATCH /teams/{id}`
    UpdateTeam(String),
    /// `DELETE /teams/{id}`
    DeleteTeam(String),
    /// `POST /domains`
    CreateDomain,
    /// `GET /domains`
    ListDomains,
    /// `GET /domains/{id}`
    GetDomain(String),
    /// `PATCH /domains/{id}`
    UpdateDomain(String),
    /// `DELETE /domains/{id}`
    DeleteDomain(String),
    /// `POST /domains/{id}/verify`
    VerifyDomain(String),
    /// `POST /emails`
    SendEmail,
    /// `POST /emails/batch`
    SendBatch,
    /// `GET /emails`
    ListEmails,
    /// `GET /emails/metrics`
    EmailMetrics,
    /// `GET /emails/{id}`
    GetEmail(String),
    /// `PATCH /emails/{id}`
    UpdateEmail(String),
    /// `GET /emails/{id}/insights` (herald's own)
    EmailInsights(String),
    /// `POST /emails/{id}/cancel`
    CancelEmail(String),
    /// `GET /logs`
    ListLogs,
    /// `GET /logs/{id}`
    GetLog(String),
    /// `GET /queue`: the spool, as operators see it.
    ListQueue,
    /// `GET /queue/stats`
    QueueStats,
    /// `POST /queue/retry`
    RetryQueue,
    /// `GET /queue/{id}`
    ShowQueued(String),
    /// `POST /queue/{id}/retry`
    RetryQueued(String),
    /// `DELETE /queue/{id}`
    DeleteQueued(String),
    /// `POST /contacts`
    CreateContact,
    /// `GET /contacts`
    ListContacts,
    /// `GET /contacts/{id-or-email}`
    GetContact(String),
    /// `PATCH /contacts/{id-or-email}`
    UpdateContact(String),
    /// `DELETE /contacts/{id-or-email}`
    DeleteContact(String),
    /// `GET /contacts/imports`
    ListContactImports,
    /// `POST /contacts/imports` (multipart, streamed to disk)
    CreateContactImport,
    /// `GET /contacts/imports/{id}`
    GetContactImport(String),
    /// `GET /contacts/{id-or-email}/segments`
    ListContactSegments(String),
    /// `POST /contacts/{id-or-email}/segments/{segment_id}`
    AddContactSegment(String, String),
    /// `DELETE /contacts/{id-or-email}/segments/{segment_id}`
    RemoveContactSegment(String, String),
    /// `GET /contacts/{id-or-email}/topics`
    ListContactTopics(String),
    /// `PATCH /contacts/{id-or-email}/topics`
    UpdateContactTopics(String),
    /// `POST /segments`
    CreateSegment,
    /// `GET /segments`
    ListSegments,
    /// `GET /segments/{id}`
    GetSegment(String),
    /// `PATCH /segments/{id}`
    UpdateSegment(String),
    /// `DELETE /segments/{id}`
    DeleteSegment(String),
    /// `GET /segments/{id}/contacts`
    ListSegmentContacts(String),
    /// `POST /audiences`
    CreateAudience,
    /// `GET /audiences`
    ListAudiences,
    /// `GET /audiences/{id}`
    GetAudience(String),
    /// `DELETE /audiences/{id}`
    DeleteAudience(String),
    /// `POST /audiences/{id}/contacts`
    CreateAudienceContact(String),
    /// `GET /audiences/{id}/contacts`
    ListAudienceContacts(String),
    /// `GET /audiences/{id}/contacts/{id-or-email}`
    GetAudienceContact(String, String),
    /// `PATCH /audiences/{id}/contacts/{id-or-email}`
    UpdateAudienceContact(String, String),
    /// `DELETE /audiences/{id}/contacts/{id-or-email}`
    DeleteAudienceContact(String, String),
    /// `POST /broadcasts`
    CreateBroadcast,
    /// `GET /broadcasts`
    ListBroadcasts,
    /// `GET /broadcasts/{id}`
    GetBroadcast(String),
    /// `PATCH /broadcasts/{id}`
    UpdateBroadcast(String),
    /// `DELETE /broadcasts/{id}`
    DeleteBroadcast(String),
    /// `POST /broadcasts/{id}/send`
    SendBroadcast(String),
    /// `POST /broadcasts/{id}/cancel`
    CancelBroadcast(String),
    /// `POST /broadcasts/{id}/duplicate`
    DuplicateBroadcast(String),
    /// `GET /broadcasts/{id}/recipients`
    ListBroadcastRecipients(String),
    /// `GET /broadcasts/{id}/clicked-links`
    ListBroadcastClickedLinks(String),
    /// `POST /users`
    CreateUser,
    /// `GET /users`
    ListUsers,
    /// `POST /topics`
    CreateTopic,
    /// `GET /topics`
    ListTopics,
    /// `GET /topics/{id}`
    GetTopic(String),
    /// `PATCH /topics/{id}`
    UpdateTopic(String),
    /// `DELETE /topics/{id}`
    DeleteTopic(String),
    /// `POST /contact-properties`
    CreateContactProperty,
    /// `GET /contact-properties`
    ListContactProperties,
    /// `GET /contact-properties/{id}`
    GetContactProperty(String),
    /// `PATCH /contact-properties/{id}`
    UpdateContactProperty(String),
    /// `DELETE /contact-properties/{id}`
    DeleteContactProperty(String),
    /// `POST /templates`
    CreateTemplate,
    /// `GET /templates`
    ListTemplates,
    /// `GET /templates/{id-or-alias}`
    GetTemplate(String),
    /// `PATCH /templates/{id-or-alias}`
    UpdateTemplate(String),
    /// `DELETE /templates/{id-or-alias}`
    DeleteTemplate(String),
    /// `POST /templates/{id-or-alias}/publish`
    PublishTemplate(String),
    /// `POST /templates/{id-or-alias}/duplicate`
    DuplicateTemplate(String),
    /// `POST /suppressions`
    AddSuppression,
    /// `GET /suppressions`
    ListSuppressions,
    /// `GET /suppressions/{id-or-email}`
    GetSuppression(String),
    /// `DELETE /suppressions/{id-or-email}`
    DeleteSuppression(String),
    /// `POST /suppressions/batch/add`
    BatchAddSuppressions,
    /// `POST /suppressions/batch/remove`
    BatchRemoveSuppressions,
    /// `POST /webhooks`
    CreateWebhook,
    /// `GET /webhooks`
    ListWebhooks,
    /// `GET /webhooks/{id}`
    GetWebhook(String),
    /// `PATCH /webhooks/{id}`
    UpdateWebhook(String),
    /// `DELETE /webhooks/{id}`
    DeleteWebhook(String),
    /// `GET /webhooks/{id}/deliveries`: the request log.
    ListWebhookDeliveries(String),
    /// `POST /webhooks/{id}/deliveries/{delivery_id}/replay`
    ReplayWebhookDelivery(String, String),
    /// `POST /webhooks/{id}/signing-secret/rotate`
    RotateWebhookSecret(String),
    /// `GET /webhooks/{id}/events`
    ListWebhookEvents(String),
    /// `GET /webhooks/{id}/events/{event_id}`
    GetWebhookEvent(String, String),
    /// `GET /webhooks/{id}/events/{event_id}/attempts`
    ListWebhookEventAttempts(String, String),
    /// `POST /webhooks/{id}/events/{event_id}/replay`
    ReplayWebhookEvent(String, String),
}

impl Route {
    /// Whether a `sending_access` key may call this route.
    pub fn is_sending(&self) -> bool {
        matches!(self, Route::SendEmail | Route::SendBatch)
    }

    /// A short label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            Route::CreateApiKey => "api_keys.create",
            Route::ListApiKeys => "api_keys.list",
            Route::UpdateApiKey(_) => "api_keys.update",
            Route::DeleteApiKey(_) => "api_keys.delete",
            Route::CreateTeam => "teams.create",
            Route::ListTeams => "teams.list",
            Route::GetTeam(_) => "teams.get",
            Route::GetUsage => "usage.get",
            Route::UpdateTeam(_) => "teams.update",
            Route::DeleteTeam(_) => "teams.delete",
            Route::CreateDomain => "domains.create",
            Route::ListDomains => "domains.list",
            Route::GetDomain(_) => "domains.get",
            Route::UpdateDomain(_) => "domains.update",
            Route::DeleteDomain(_) => "domains.delete",
            Route::VerifyDomain(_) => "domains.verify",
            Route::SendEmail => "emails.send",
            Route::SendBatch => "emails.batch",
            Route::ListEmails => "emails.list",
            Route::EmailMetrics => "emails.metrics",
            Route::EmailInsights(_) => "emails.insights",
            Route::GetEmail(_) => "emails.get",
            Route::UpdateEmail(_) => "emails.update",
            Route::CancelEmail(_) => "emails.cancel",
            Route::ListLogs => "logs.list",
            Route::GetLog(_) => "logs.get",
            Route::ListQueue => "queue.list",
            Route::QueueStats => "queue.stats",
            Route::RetryQueue => "queue.retry",
            Route::ShowQueued(_) => "queue.show",
            Route::RetryQueued(_) => "queue.retry_one",
            Route::DeleteQueued(_) => "queue.delete",
            Route::CreateContact => "contacts.create",
            Route::ListContacts => "contacts.list",
            Route::GetContact(_) => "contacts.get",
            Route::UpdateContact(_) => "contacts.update",
            Route::DeleteContact(_) => "contacts.delete",
            Route::ListContactImports => "contacts.imports.list",
            Route::CreateContactImport => "contacts.imports.create",
            Route::GetContactImport(_) => "contacts.imports.get",
            Route::ListContactSegments(_) => "contacts.segments.list",
            Route::AddContactSegment(..) => "contacts.segments.add",
            Route::RemoveContactSegment(..) => "contacts.segments.remove",
            Route::ListContactTopics(_) => "contacts.topics.list",
            Route::UpdateContactTopics(_) => "contacts.topics.update",
            Route::CreateSegment => "segments.create",
            Route::ListSegments => "segments.list",
            Route::GetSegment(_) => "segments.get",
            Route::UpdateSegment(_) => "segments.update",
            Route::DeleteSegment(_) => "segments.delete",
            Route::ListSegmentContacts(_) => "segments.contacts",
            Route::CreateAudience => "audiences.create",
            Route::ListAudiences => "audiences.list",
            Route::GetAudience(_) => "audiences.get",
            Route::DeleteAudience(_) => "audiences.delete",
            Route::CreateAudienceContact(_) => "audiences.contacts.create",
            Route::ListAudienceContacts(_) => "audiences.contacts.list",
            Route::GetAudienceContact(..) => "audiences.contacts.get",
            Route::UpdateAudienceContact(..) => "audiences.contacts.update",
            Route::DeleteAudienceContact(..) => "audiences.contacts.delete",
            Route::CreateBroadcast => "broadcasts.create",
            Route::ListBroadcasts => "broadcasts.list",
            Route::GetBroadcast(_) => "broadcasts.get",
            Route::UpdateBroadcast(_) => "broadcasts.update",
            Route::DeleteBroadcast(_) => "broadcasts.delete",
            Route::SendBroadcast(_) => "broadcasts.send",
            Route::CancelBroadcast(_) => "broadcasts.cancel",
            Route::DuplicateBroadcast(_) => "broadcasts.duplicate",
            Route::ListBroadcastRecipients(_) => "broadcasts.recipients",
            Route::ListBroadcastClickedLinks(_) => "broadcasts.clicked_links",
            Route::CreateUser => "users.create",
            Route::ListUsers => "users.list",
            Route::CreateTopic => "topics.create",
            Route::ListTopics => "topics.list",
            Route::GetTopic(_) => "topics.get",
            Route::UpdateTopic(_) => "topics.update",
            Route::DeleteTopic(_) => "topics.delete",
            Route::CreateContactProperty => "contact_properties.create",
            Route::ListContactProperties => "contact_properties.list",
            Route::GetContactProperty(_) => "contact_properties.get",
            Route::UpdateContactProperty(_) => "contact_properties.update",
            Route::DeleteContactProperty(_) => "contact_properties.delete",
            Route::CreateTemplate => "templates.create",
            Route::ListTemplates => "templates.list",
            Route::GetTemplate(_) => "templates.get",
            Route::UpdateTemplate(_) => "templates.update",
            Route::DeleteTemplate(_) => "templates.delete",
            Route::PublishTemplate(_) => "templates.publish",
            Route::DuplicateTemplate(_) => "templates.duplicate",
            Route::AddSuppression => "suppressions.add",
            Route::ListSuppressions => "suppressions.list",
            Route::GetSuppression(_) => "suppressions.get",
            Route::DeleteSuppression(_) => "suppressions.delete",
            Route::BatchAddSuppressions => "suppressions.batch_add",
            Route::BatchRemoveSuppressions => "suppressions.batch_remove",
            Route::CreateWebhook => "webhooks.create",
            Route::ListWebhooks => "webhooks.list",
            Route::GetWebhook(_) => "webhooks.get",
            Route::UpdateWebhook(_) => "webhooks.update",
            Route::DeleteWebhook(_) => "webhooks.delete",
            Route::ListWebhookDeliveries(_) => "webhooks.deliveries.list",
            Route::ReplayWebhookDelivery(..) => "webhooks.deliveries.replay",
            Route::RotateWebhookSecret(_) => "webhooks.rotate_secret",
            Route::ListWebhookEvents(_) => "webhooks.events.list",
            Route::GetWebhookEvent(..) => "webhooks.events.get",
            Route::ListWebhookEventAttempts(..) => "webhooks.events.attempts",
            Route::ReplayWebhookEvent(..) => "webhooks.events.replay",
        }
    }
}

/// Matches `method` and `path`: `404` when no route has the path, `405` when one has it
/// with other methods.
pub fn route(method: &Method, path: &str) -> Result<Route, ApiError> {
    let trimmed = path.trim_end_matches('/');
    let segments: Vec<&str> = trimmed.split('/').skip(1).collect();
    let one = |allowed: &[(Method, Route)]| -> Result<Route, ApiError> {
        allowed
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, r)| r.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = allowed.iter().map(|(m, _)| m.as_str()).collect();
                ApiError::method_not_allowed(format!("{path} supports {} only", names.join(", ")))
            })
    };
    match segments.as_slice() {
        ["api-keys"] => one(&[(Method::POST, Route::CreateApiKey), (Method::GET, Route::ListApiKeys)]),
        ["api-keys", id] => one(&[
            (Method::PATCH, Route::UpdateApiKey((*id).to_owned())),
            (Method::DELETE, Route::DeleteApiKey((*id).to_owned())),
        ]),
        ["teams"] => one(&[(Method::POST, Route::CreateTeam), (Method::GET, Route::ListTeams)]),
        ["usage"] => one(&[(Method::GET, Route::GetUsage)]),
        ["teams", id] => one(&[
            (Method::GET, Route::GetTeam((*id).to_owned())),
            (Method::PATCH, Route::UpdateTeam((*id).to_owned())),
            (Method::DELETE, Route::DeleteTeam((*id).to_owned())),
        ]),
        ["domains"] => one(&[(Method::POST, Route::CreateDomain), (Method::GET, Route::ListDomains)]),
        // Resend's domain claims move a domain between hosted accounts; a self-hosted
        // herald has no other account to claim from. Matched before `/domains/{id}`.
        ["domains", "claim"] | ["domains", _, "claim", ..] => Err(ApiError::not_found(format!(
            "No route for {method} {path}: domain claims are not supported by herald (add the domain with POST /domains)"
        ))),
        ["domains", id] => one(&[
            (Method::GET, Route::GetDomain((*id).to_owned())),
            (Method::PATCH, Route::UpdateDomain((*id).to_owned())),
            (Method::DELETE, Route::DeleteDomain((*id).to_owned())),
        ]),
        ["domains", id, "verify"] => one(&[(Method::POST, Route::VerifyDomain((*id).to_owned()))]),
        ["emails"] => one(&[(Method::POST, Route::SendEmail), (Method::GET, Route::ListEmails)]),
        ["emails", "batch"] => one(&[(Method::POST, Route::SendBatch)]),
        // Named sub-collections come before `/emails/{id}`, which would take their names
        // for ids. Inbound mail is not a herald feature.
        ["emails", "receiving", ..] => Err(ApiError::not_found(format!(
            "No route for {method} {path}: herald does not receive mail (inbound email is not supported)"
        ))),
        ["emails", "metrics"] => one(&[(Method::GET, Route::EmailMetrics)]),
        ["emails", id] => one(&[
            (Method::GET, Route::GetEmail((*id).to_owned())),
            (Method::PATCH, Route::UpdateEmail((*id).to_owned())),
        ]),
        ["emails", id, "cancel"] => one(&[(Method::POST, Route::CancelEmail((*id).to_owned()))]),
        ["emails", id, "insights"] => one(&[(Method::GET, Route::EmailInsights((*id).to_owned()))]),
        ["logs"] => one(&[(Method::GET, Route::ListLogs)]),
        ["logs", id] => one(&[(Method::GET, Route::GetLog((*id).to_owned()))]),
        ["queue"] => one(&[(Method::GET, Route::ListQueue)]),
        ["queue", "stats"] => one(&[(Method::GET, Route::QueueStats)]),
        ["queue", "retry"] => one(&[(Method::POST, Route::RetryQueue)]),
        ["queue", id] => one(&[
            (Method::GET, Route::ShowQueued((*id).to_owned())),
            (Method::DELETE, Route::DeleteQueued((*id).to_owned())),
        ]),
        ["queue", id, "retry"] => one(&[(Method::POST, Route::RetryQueued((*id).to_owned()))]),
        ["contacts"] => one(&[(Method::POST, Route::CreateContact), (Method::GET, Route::ListContacts)]),
        // `/contacts/imports` is a collection of its own, matched before `/contacts/{id}`.
        ["contacts", "imports"] => one(&[
            (Method::POST, Route::CreateContactImport),
            (Method::GET, Route::ListContactImports),
        ]),
        ["contacts", "imports", id] => one(&[(Method::GET, Route::GetContactImport((*id).to_owned()))]),
        ["contacts", target, "segments"] => one(&[(Method::GET, Route::ListContactSegments((*target).to_owned()))]),
        ["contacts", target, "segments", segment] => one(&[
            (
                Method::POST,
                Route::AddContactSegment((*target).to_owned(), (*segment).to_owned()),
            ),
            (
                Method::DELETE,
                Route::RemoveContactSegment((*target).to_owned(), (*segment).to_owned()),
            ),
        ]),
        ["contacts", target, "topics"] => one(&[
            (Method::GET, Route::ListContactTopics((*target).to_owned())),
            (Method::PATCH, Route::UpdateContactTopics((*target).to_owned())),
        ]),
        ["segments"] => one(&[(Method::POST, Route::CreateSegment), (Method::GET, Route::ListSegments)]),
        ["segments", id] => one(&[
            (Method::GET, Route::GetSegment((*id).to_owned())),
            (Method::PATCH, Route::UpdateSegment((*id).to_owned())),
            (Method::DELETE, Route::DeleteSegment((*id).to_owned())),
        ]),
        ["segments", id, "contacts"] => one(&[(Method::GET, Route::ListSegmentContacts((*id).to_owned()))]),
        ["audiences"] => one(&[
            (Method::POST, Route::CreateAudience),
            (Method::GET, Route::ListAudiences),
        ]),
        ["audiences", id] => one(&[
            (Method::GET, Route::GetAudience((*id).to_owned())),
            (Method::DELETE, Route::DeleteAudience((*id).to_owned())),
        ]),
        ["audiences", id, "contacts"] => one(&[
            (Method::POST, Route::CreateAudienceContact((*id).to_owned())),
            (Method::GET, Route::ListAudienceContacts((*id).to_owned())),
        ]),
        ["audiences", id, "contacts", target] => {
            let (id, target) = ((*id).to_owned(), (*target).to_owned());
            one(&[
                (Method::GET, Route::GetAudienceContact(id.clone(), target.clone())),
                (Method::PATCH, Route::UpdateAudienceContact(id.clone(), target.clone())),
                (Method::DELETE, Route::DeleteAudienceContact(id, target)),
            ])
        }
        ["templates"] => one(&[
            (Method::POST, Route::CreateTemplate),
            (Method::GET, Route::ListTemplates),
        ]),
        ["templates", id] => one(&[
            (Method::GET, Route::GetTemplate((*id).to_owned())),
            (Method::PATCH, Route::UpdateTemplate((*id).to_owned())),
            (Method::DELETE, Route::DeleteTemplate((*id).to_owned())),
        ]),
        ["templates", id, "publish"] => one(&[(Method::POST, Route::PublishTemplate((*id).to_owned()))]),
        ["templates", id, "duplicate"] => one(&[(Method::POST, Route::DuplicateTemplate((*id).to_owned()))]),
        ["broadcasts"] => one(&[
            (Method::POST, Route::CreateBroadcast),
            (Method::GET, Route::ListBroadcasts),
        ]),
        ["broadcasts", id] => one(&[
            (Method::GET, Route::GetBroadcast((*id).to_owned())),
            (Method::PATCH, Route::UpdateBroadcast((*id).to_owned())),
            (Method::DELETE, Route::DeleteBroadcast((*id).to_owned())),
        ]),
        ["broadcasts", id, "send"] => one(&[(Method::POST, Route::SendBroadcast((*id).to_owned()))]),
        ["broadcasts", id, "cancel"] => one(&[(Method::POST, Route::CancelBroadcast((*id).to_owned()))]),
        ["broadcasts", id, "duplicate"] => one(&[(Method::POST, Route::DuplicateBroadcast((*id).to_owned()))]),
        ["broadcasts", id, "recipients"] => one(&[(Method::GET, Route::ListBroadcastRecipients((*id).to_owned()))]),
        ["broadcasts", id, "clicked-links"] => {
            one(&[(Method::GET, Route::ListBroadcastClickedLinks((*id).to_owned()))])
        }
        ["users"] => one(&[(Method::POST, Route::CreateUser), (Method::GET, Route::ListUsers)]),
        ["topics"] => one(&[(Method::POST, Route::CreateTopic), (Method::GET, Route::ListTopics)]),
        ["topics", id] => one(&[
            (Method::GET, Route::GetTopic((*id).to_owned())),
            (Method::PATCH, Route::UpdateTopic((*id).to_owned())),
            (Method::DELETE, Route::DeleteTopic((*id).to_owned())),
        ]),
        ["contact-properties"] => one(&[
            (Method::POST, Route::CreateContactProperty),
            (Method::GET, Route::ListContactProperties),
        ]),
        ["contact-properties", id] => one(&[
            (Method::GET, Route::GetContactProperty((*id).to_owned())),
            (Method::PATCH, Route::UpdateContactProperty((*id).to_owned())),
            (Method::DELETE, Route::DeleteContactProperty((*id).to_owned())),
        ]),
        ["contacts", target] => one(&[
            (Method::GET, Route::GetContact((*target).to_owned())),
            (Method::PATCH, Route::UpdateContact((*target).to_owned())),
            (Method::DELETE, Route::DeleteContact((*target).to_owned())),
        ]),
        ["suppressions"] => one(&[
            (Method::POST, Route::AddSuppression),
            (Method::GET, Route::ListSuppressions),
        ]),
        ["suppressions", "batch", "add"] => one(&[(Method::POST, Route::BatchAddSuppressions)]),
        ["suppressions", "batch", "remove"] => one(&[(Method::POST, Route::BatchRemoveSuppressions)]),
        ["suppressions", target] => one(&[
            (Method::GET, Route::GetSuppression((*target).to_owned())),
            (Method::DELETE, Route::DeleteSuppression((*target).to_owned())),
        ]),
        ["webhooks"] => one(&[(Method::POST, Route::CreateWebhook), (Method::GET, Route::ListWebhooks)]),
        ["webhooks", id] => one(&[
            (Method::GET, Route::GetWebhook((*id).to_owned())),
            (Method::PATCH, Route::UpdateWebhook((*id).to_owned())),
            (Method::DELETE, Route::DeleteWebhook((*id).to_owned())),
        ]),
        ["webhooks", id, "deliveries"] => one(&[(Method::GET, Route::ListWebhookDeliveries((*id).to_owned()))]),
        ["webhooks", id, "deliveries", delivery, "replay"] => one(&[(
            Method::POST,
            Route::ReplayWebhookDelivery((*id).to_owned(), (*delivery).to_owned()),
        )]),
        ["webhooks", id, "signing-secret", "rotate"] => {
            one(&[(Method::POST, Route::RotateWebhookSecret((*id).to_owned()))])
        }
        ["webhooks", id, "events"] => one(&[(Method::GET, Route::ListWebhookEvents((*id).to_owned()))]),
        ["webhooks", id, "events", event] => one(&[(
            Method::GET,
            Route::GetWebhookEvent((*id).to_owned(), (*event).to_owned()),
        )]),
        ["webhooks", id, "events", event, "attempts"] => one(&[(
            Method::GET,
            Route::ListWebhookEventAttempts((*id).to_owned(), (*event).to_owned()),
        )]),
        ["webhooks", id, "events", event, "replay"] => one(&[(
            Method::POST,
            Route::ReplayWebhookEvent((*id).to_owned(), (*event).to_owned()),
        )]),
        _ => Err(ApiError::not_found(format!("No route for {method} {path}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_paths_and_methods() {
        assert_eq!(route(&Method::GET, "/domains"), Ok(Route::ListDomains));
        assert_eq!(route(&Method::GET, "/domains/"), Ok(Route::ListDomains));
        assert_eq!(
            route(&Method::POST, "/domains/abc/verify"),
            Ok(Route::VerifyDomain("abc".into()))
        );
        assert_eq!(
            route(&Method::DELETE, "/api-keys/k"),
            Ok(Route::DeleteApiKey("k".into()))
        );
        let err = route(&Method::PUT, "/domains").expect_err("405");
        assert_eq!(err.name, "method_not_allowed");
        assert!(err.message.contains("POST, GET"), "{}", err.message);
        assert_eq!(route(&Method::GET, "/nope").expect_err("404").name, "not_found");
        assert_eq!(
            route(&Method::DELETE, "/suppressions/bob%40example.com"),
            Ok(Route::DeleteSuppression("bob%40example.com".into()))
        );
        assert_eq!(
            route(&Method::POST, "/suppressions/batch/remove"),
            Ok(Route::BatchRemoveSuppressions)
        );
        let err = route(&Method::GET, "/suppressions/batch/add").expect_err("405");
        assert_eq!(err.name, "method_not_allowed");
        assert_eq!(
            route(&Method::GET, "/domains/a/b/c").expect_err("404").name,
            "not_found"
        );
        assert_eq!(route(&Method::GET, "/webhooks"), Ok(Route::ListWebhooks));
        assert_eq!(
            route(&Method::PATCH, "/webhooks/w"),
            Ok(Route::UpdateWebhook("w".into()))
        );
        let err = route(&Method::PUT, "/webhooks/w").expect_err("405");
        assert!(err.message.contains("GET, PATCH, DELETE"), "{}", err.message);
    }

    #[test]
    fn resend_paths_herald_lacks_are_not_taken_for_ids() {
        assert_eq!(
            route(&Method::GET, "/emails/metrics").expect("a route"),
            Route::EmailMetrics
        );
        for (method, path, names) in [
            (Method::GET, "/emails/receiving", "does not receive mail"),
            (Method::GET, "/emails/receiving/4ef9a417", "does not receive mail"),
            (Method::POST, "/domains/claim", "claims are not supported"),
            (Method::GET, "/domains/d/claim", "claims are not supported"),
            (Method::POST, "/domains/d/claim/verify", "claims are not supported"),
        ] {
            let err = route(&method, path).expect_err("404");
            assert_eq!(
                (err.status, err.name),
                (hyper::StatusCode::NOT_FOUND, "not_found"),
                "{path}"
            );
            assert!(
                err.message.contains(names) && err.message.contains(path),
                "{path}: {}",
                err.message
            );
        }
    }
}
