//! Topics through the official Rust SDK (crates.io `resend-rs`): `topics.create / get /
//! update / delete / list`, and webhooks on the topic events. The SDK decodes a topic's
//! `default_subscription` and `visibility` into enums without a catch-all, and its
//! `UpdateTopicOptions` always sends `name`, as `null` when it is not changed. Every test
//! runs in a team of its own, so lists hold only its topics.

use herald_compat_rust::{
    assert_recent, assert_resend_error, is_uuid, random_hex, random_uuid, raw_with_key, team_client,
    team_key_and_client,
};
use reqwest::Method;
use resend_rs::events::{ContactTopicsEventType, EventType, TopicEventType};
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    CreateTopicOptions, CreateWebhookOptions, SubscriptionType, TopicVisibility, UpdateTopicOptions,
};
use serde_json::json;

#[tokio::test]
async fn create_get_update_and_delete() {
    let (key, resend) = team_key_and_client("topics").await;
    let options =
        CreateTopicOptions::new("Product", SubscriptionType::OptIn).with_description("Product news".to_owned());
    let created = resend.topics.create(options).await.expect("topics.create decodes");
    assert!(is_uuid(&created.id), "{}", created.id);

    let topic = resend.topics.get(&created.id).await.expect("topics.get decodes");
    assert_eq!(topic.id, created.id);
    assert_eq!(topic.name, "Product");
    assert_eq!(topic.description.as_deref(), Some("Product news"));
    assert_eq!(topic.default_subscription, SubscriptionType::OptIn);
    assert_eq!(topic.visibility, TopicVisibility::Private, "private unless asked");
    assert_recent(&topic.created_at);

    let options = CreateTopicOptions::new("Offers", SubscriptionType::OptOut).with_visibility(TopicVisibility::Public);
    let offers = resend.topics.create(options).await.expect("topics.create decodes");
    let offers = resend.topics.get(&offers.id).await.expect("topics.get decodes");
    assert_eq!(offers.description, None);
    assert_eq!(offers.default_subscription, SubscriptionType::OptOut);
    assert_eq!(offers.visibility, TopicVisibility::Public);

    // Without `with_name`, the SDK sends `"name": null`: the name stays.
    let updated = resend
        .topics
        .update(
            &created.id,
            UpdateTopicOptions::new().with_description("All product news"),
        )
        .await
        .expect("topics.update with \"name\": null decodes");
    assert_eq!(updated.id, created.id);
    let topic = resend.topics.get(&created.id).await.expect("topics.get decodes");
    assert_eq!(topic.name, "Product");
    assert_eq!(topic.description.as_deref(), Some("All product news"));

    let changes = UpdateTopicOptions::new()
        .with_name("Products")
        .with_visibility(TopicVisibility::Public);
    let updated = resend
        .topics
        .update(&created.id, changes)
        .await
        .expect("topics.update decodes");
    assert_eq!(updated.id, created.id);
    let topic = resend.topics.get(&created.id).await.expect("topics.get decodes");
    assert_eq!(topic.name, "Products");
    assert_eq!(topic.description.as_deref(), Some("All product news"));
    assert_eq!(topic.visibility, TopicVisibility::Public);
    assert_eq!(topic.default_subscription, SubscriptionType::OptIn);

    // The default subscription is fixed at creation.
    let path = format!("/topics/{}", created.id);
    let body = json!({ "default_subscription": "opt_out" });
    let response = raw_with_key(&key, Method::PATCH, &path, Some(body)).await;
    assert_eq!(response.status, 422, "PATCH {path}: {}", response.json);
    assert_eq!(response.json["name"], "validation_error");

    let deleted = resend.topics.delete(&created.id).await.expect("topics.delete decodes");
    assert_eq!(deleted.id, created.id);
    assert!(deleted.deleted);
    assert_resend_error(resend.topics.get(&created.id).await, 404, "not_found");
    assert_resend_error(resend.topics.get(&random_uuid()).await, 404, "not_found");
    assert_resend_error(resend.topics.get("not-a-topic").await, 422, "invalid_parameter");
}

#[tokio::test]
async fn create_update_and_delete_answer_resend_shapes_on_the_wire() {
    let (key, _) = team_key_and_client("topics-wire").await;
    let body = json!({ "name": "Wire", "default_subscription": "opt_in" });
    let response = raw_with_key(&key, Method::POST, "/topics", Some(body)).await;
    assert_eq!(response.status, 201, "POST /topics: {}", response.json);
    let id = response.json["id"].as_str().expect("a string id").to_owned();
    assert_eq!(response.json, json!({ "object": "topic", "id": id }));

    let path = format!("/topics/{id}");
    let response = raw_with_key(&key, Method::GET, &path, None).await;
    assert_eq!(response.status, 200, "GET {path}: {}", response.json);
    assert_eq!(
        response.json,
        json!({
            "object": "topic",
            "id": id,
            "name": "Wire",
            "description": null,
            "default_subscription": "opt_in",
            "visibility": "private",
            "created_at": response.json["created_at"]
        })
    );
    let response = raw_with_key(&key, Method::PATCH, &path, Some(json!({ "name": "Renamed" }))).await;
    assert_eq!(response.status, 200, "PATCH {path}: {}", response.json);
    assert_eq!(response.json, json!({ "object": "topic", "id": id }));
    let response = raw_with_key(&key, Method::DELETE, &path, None).await;
    assert_eq!(response.status, 200, "DELETE {path}: {}", response.json);
    assert_eq!(response.json, json!({ "object": "topic", "id": id, "deleted": true }));

    for (body, name) in [
        (json!({ "name": "No default" }), "missing_required_field"),
        (json!({ "default_subscription": "opt_in" }), "missing_required_field"),
        (
            json!({ "name": "Bad", "default_subscription": "sometimes" }),
            "validation_error",
        ),
        (
            json!({ "name": "Bad", "default_subscription": "opt_in", "visibility": "secret" }),
            "validation_error",
        ),
    ] {
        let response = raw_with_key(&key, Method::POST, "/topics", Some(body.clone())).await;
        assert_eq!(response.status, 422, "POST /topics {body}: {}", response.json);
        assert_eq!(response.json["name"], name, "POST /topics {body}");
    }
}

#[tokio::test]
async fn list_pages_newest_first() {
    let resend = team_client("topics-list").await;
    let mut ids = Vec::new();
    for (name, subscription) in [
        ("First", SubscriptionType::OptIn),
        ("Second", SubscriptionType::OptOut),
        ("Third", SubscriptionType::OptIn),
    ] {
        let created = resend
            .topics
            .create(CreateTopicOptions::new(name, subscription))
            .await
            .expect("topics.create decodes");
        ids.push(created.id);
    }

    let all = resend
        .topics
        .list(ListOptions::default())
        .await
        .expect("topics.list decodes");
    assert!(!all.has_more);
    let names: Vec<&str> = all.data.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Third", "Second", "First"]);
    assert_eq!(all[1].default_subscription, SubscriptionType::OptOut);
    assert_eq!(all[1].visibility, TopicVisibility::Private);
    assert_eq!(all[1].description, None);
    assert_eq!(all[1], resend.topics.get(&ids[1]).await.expect("topics.get decodes"));

    let first = resend
        .topics
        .list(ListOptions::default().with_limit(2))
        .await
        .expect("a page of two decodes");
    assert!(first.has_more);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].id, ids[2]);
    let rest = resend
        .topics
        .list(ListOptions::default().with_limit(2).list_after(&first[1].id))
        .await
        .expect("the page after decodes");
    assert!(!rest.has_more);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].id, ids[0]);
}

#[tokio::test]
async fn webhooks_take_the_contact_topics_and_topic_events() {
    let resend = team_client("topics-webhooks").await;
    let endpoint = format!("https://93.184.216.34/rs-topics-{}", random_hex(5));
    let events = [
        EventType::from(ContactTopicsEventType::ContactTopicsUpdated),
        EventType::from(TopicEventType::TopicCreated),
        EventType::from(TopicEventType::TopicUpdated),
        EventType::from(TopicEventType::TopicDeleted),
    ];
    let created = resend
        .webhooks
        .create(CreateWebhookOptions::new(endpoint.as_str(), events))
        .await
        .expect("webhooks.create decodes");
    let webhook = resend.webhooks.get(&created.id).await.expect("webhooks.get decodes");
    assert_eq!(
        serde_json::to_value(&webhook.events).expect("event types serialize"),
        json!([
            "contact.topics.updated",
            "topic.created",
            "topic.updated",
            "topic.deleted"
        ])
    );
    let deleted = resend
        .webhooks
        .delete(&created.id)
        .await
        .expect("webhooks.delete decodes");
    assert!(deleted);
}
