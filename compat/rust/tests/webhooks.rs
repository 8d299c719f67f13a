//! Webhooks through the official Rust SDK (crates.io `resend-rs`): `webhooks.create / get /
//! list / update / delete`, `rotate_signing_secret` and `list_events`. The SDK decodes a
//! webhook's `events` into its `EventType` enums, so every event name herald answers must
//! be one it knows. The suite's herald refuses private endpoints, so endpoints are a public
//! address literal, which needs no DNS. Listing runs in a team of its own.

use herald_compat_rust::{assert_recent, assert_resend_error, client, is_uuid, random_hex, team_client};
use resend_rs::events::{DomainEventType, EmailEventType, EventType};
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{CreateWebhookOptions, UpdateWebhookOptions, WebhookStatus};
use serde_json::{Value, json};

/// An endpoint no other test uses.
fn unique_endpoint(label: &str) -> String {
    format!("https://93.184.216.34/rs-{label}-{}", random_hex(5))
}

/// Event types as their wire names (the SDK's `EventType` has no `PartialEq`).
fn names(events: &[EventType]) -> Value {
    serde_json::to_value(events).expect("event types serialize")
}

/// Asserts `secret` is a `whsec_` secret of 32 base64-encoded bytes.
#[track_caller]
fn assert_signing_secret(secret: &str) {
    let encoded = secret.strip_prefix("whsec_").expect("a whsec_ signing secret");
    assert!(
        encoded.len() == 44
            && encoded.ends_with('=')
            && encoded
                .trim_end_matches('=')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/'),
        "{secret} is not 32 bytes in base64"
    );
}

#[tokio::test]
async fn create_answers_a_signing_secret_and_get_decodes_the_webhook() {
    let resend = client();
    let endpoint = unique_endpoint("create");
    let events = [EmailEventType::EmailSent, EmailEventType::EmailBounced];
    let created = resend
        .webhooks
        .create(CreateWebhookOptions::new(endpoint.as_str(), events))
        .await
        .expect("webhooks.create decodes");
    assert!(is_uuid(&created.id), "{}", created.id);
    assert_signing_secret(&created.signing_secret);

    let webhook = resend.webhooks.get(&created.id).await.expect("webhooks.get decodes");
    assert_eq!(webhook.id, created.id);
    assert_eq!(webhook.endpoint, endpoint);
    assert_eq!(webhook.status, "enabled");
    assert_eq!(names(&webhook.events), json!(["email.sent", "email.bounced"]));
    assert_recent(&webhook.created_at);

    let rotated = resend
        .webhooks
        .rotate_signing_secret(&created.id)
        .await
        .expect("webhooks.rotate_signing_secret decodes");
    assert_eq!(rotated.object, "webhook");
    assert_eq!(rotated.id, created.id);
    assert_signing_secret(&rotated.signing_secret);
    assert_ne!(rotated.signing_secret, created.signing_secret);

    let events = resend
        .webhooks
        .list_events(&created.id, ListOptions::default())
        .await
        .expect("webhooks.list_events decodes");
    assert_eq!(events.object, "list");
    assert!(events.data.is_empty(), "{events:?}");
    assert!(!events.has_more);
}

#[tokio::test]
async fn list_pages_newest_first() {
    let resend = team_client("webhooks-list").await;
    let endpoints = [
        unique_endpoint("list-0"),
        unique_endpoint("list-1"),
        unique_endpoint("list-2"),
    ];
    let mut ids = Vec::new();
    for endpoint in &endpoints {
        let options = CreateWebhookOptions::new(endpoint.as_str(), [DomainEventType::DomainCreated]);
        ids.push(
            resend
                .webhooks
                .create(options)
                .await
                .expect("webhooks.create decodes")
                .id,
        );
    }

    let all = resend
        .webhooks
        .list(ListOptions::default())
        .await
        .expect("webhooks.list decodes");
    assert!(!all.has_more);
    let listed: Vec<&str> = all.data.iter().map(|w| w.endpoint.as_str()).collect();
    let newest_first: Vec<&str> = endpoints.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    for webhook in &all.data {
        assert_eq!(webhook.status, "enabled");
        assert_eq!(names(&webhook.events), json!(["domain.created"]));
        assert_recent(&webhook.created_at);
    }

    let first = resend
        .webhooks
        .list(ListOptions::default().with_limit(2))
        .await
        .expect("a page of two decodes");
    assert!(first.has_more);
    assert_eq!(first[0].id, ids[2]);
    assert_eq!(first[1].id, ids[1]);
    let second = resend
        .webhooks
        .list(ListOptions::default().with_limit(2).list_after(&ids[1]))
        .await
        .expect("the page after decodes");
    assert!(!second.has_more);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].id, ids[0]);
}

#[tokio::test]
async fn update_changes_endpoint_events_and_status_and_delete_removes() {
    let resend = client();
    let options = CreateWebhookOptions::new(unique_endpoint("update"), [EmailEventType::EmailSent]);
    let created = resend.webhooks.create(options).await.expect("webhooks.create decodes");

    let disabled = resend
        .webhooks
        .update(
            &created.id,
            UpdateWebhookOptions::default().with_status(WebhookStatus::Disabled),
        )
        .await
        .expect("webhooks.update decodes");
    assert_eq!(disabled.id, created.id);
    let webhook = resend.webhooks.get(&created.id).await.expect("webhooks.get decodes");
    assert_eq!(webhook.status, "disabled");

    let endpoint = unique_endpoint("updated");
    let changes = UpdateWebhookOptions::default()
        .with_endpoint(&endpoint)
        .with_events([
            EventType::from(EmailEventType::EmailDelivered),
            EventType::from(EmailEventType::EmailOpened),
            EventType::from(DomainEventType::DomainUpdated),
        ])
        .with_status(WebhookStatus::Enabled);
    let _ = resend
        .webhooks
        .update(&created.id, changes)
        .await
        .expect("webhooks.update decodes");
    let webhook = resend.webhooks.get(&created.id).await.expect("webhooks.get decodes");
    assert_eq!(webhook.endpoint, endpoint);
    assert_eq!(webhook.status, "enabled");
    assert_eq!(
        names(&webhook.events),
        json!(["email.delivered", "email.opened", "domain.updated"])
    );

    let deleted = resend
        .webhooks
        .delete(&created.id)
        .await
        .expect("webhooks.delete decodes");
    assert!(deleted);
    assert_resend_error(resend.webhooks.get(&created.id).await, 404, "not_found");
    assert_resend_error(resend.webhooks.delete(&created.id).await, 404, "not_found");
}
