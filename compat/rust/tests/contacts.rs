//! Contacts through the official Rust SDK (crates.io `resend-rs`): `contacts.create / get /
//! update / delete / list` with segments, topics and properties (and `with_audience_id`,
//! which posts to the legacy `/audiences/{id}/contacts`), a contact's segments
//! (`add_contact_segment / list_contact_segment / delete_contact_segment`, the list asked
//! with a trailing slash) and topics (`get_contact_topics / update_contact_topics`, a bare
//! JSON array), contact properties (`create_property / get_property / update_property /
//! delete_property / list_properties`) and imports (`create_import / get_import /
//! list_imports`, a multipart upload of a file). The SDK sends `"audience_id": null` on
//! every create without an audience and `"fallback_value": null` on a property without a
//! fallback; it decodes a contact's properties as `{type, value}` with the value a string,
//! and subscriptions, property types and import statuses into enums without a catch-all.
//! Its import `counts` have private fields, so they are read through serde. Every test runs
//! in a team of its own: a contact's topics list every topic of its team.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use herald_compat_rust::{
    assert_recent, assert_resend_error, eventually, is_uuid, random_hex, random_uuid, raw_with_key, team_client,
    team_key_and_client, unique_address,
};
use reqwest::Method;
use resend_rs::Resend;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    ContactChanges, ContactImport, ContactImportColumnMap, ContactImportOnConflict, ContactImportPropertyMapping,
    ContactImportPropertyType, ContactImportStatus, ContactImportTopic, ContactImportTopicSubscription,
    ContactPropertyChanges, CreateContactImportOptions, CreateContactOptions, CreateContactPropertyOptions,
    CreateTopicOptions, PropertyType, SubscriptionType, UpdateContactTopicOptions,
};
use serde_json::{Value, json};

/// `ids` as strings, sorted: for lists whose order the test does not fix.
fn sorted(ids: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    let mut ids: Vec<String> = ids.into_iter().map(|id| id.as_ref().to_owned()).collect();
    ids.sort_unstable();
    ids
}

/// Writes `contents` to a new file in the temporary directory, for `create_import`.
fn temp_csv(contents: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("herald-compat-{}.csv", random_hex(6)));
    std::fs::write(&path, contents).expect("the CSV is written");
    path
}

/// Uploads `contents` as a CSV import and polls `get_import` until it is completed
/// (imports run in the background).
async fn import_and_wait(resend: &Resend, contents: &str, options: CreateContactImportOptions) -> ContactImport {
    let path = temp_csv(contents);
    let file = File::open(&path).expect("the CSV opens for reading");
    let created = resend
        .contacts
        .create_import(file, options)
        .await
        .expect("contacts.create_import decodes");
    std::fs::remove_file(&path).expect("the CSV is removed");
    assert!(is_uuid(&created.id), "{}", created.id);
    eventually(Duration::from_secs(30), || async {
        let import = resend
            .contacts
            .get_import(&created.id)
            .await
            .expect("contacts.get_import decodes");
        assert_eq!(import.id, created.id);
        assert_ne!(import.status, ContactImportStatus::Failed, "{import:?}");
        (import.status == ContactImportStatus::Completed).then_some(import)
    })
    .await
    .expect("the import completes within 30 s")
}

#[tokio::test]
async fn create_with_segments_topics_and_properties_and_get_decodes_them() {
    let (key, resend) = team_key_and_client("contacts-audience").await;
    let vip = resend.segments.create("VIP").await.expect("segments.create decodes");
    let trial = resend.segments.create("Trial").await.expect("segments.create decodes");
    let news = resend
        .topics
        .create(CreateTopicOptions::new("News", SubscriptionType::OptOut))
        .await
        .expect("topics.create decodes");
    for options in [
        CreateContactPropertyOptions::new("plan", PropertyType::String).with_fallback("free"),
        CreateContactPropertyOptions::new("seats", PropertyType::Number),
        CreateContactPropertyOptions::new("nickname", PropertyType::String),
    ] {
        let _ = resend
            .contacts
            .create_property(options)
            .await
            .expect("contacts.create_property decodes");
    }

    let email = unique_address("full");
    let options = CreateContactOptions::new(&email)
        .with_first_name("Ada")
        .with_segment(&vip.id)
        .with_segment(&trial.id)
        .with_topic(UpdateContactTopicOptions::new(
            news.id.to_string(),
            SubscriptionType::OptIn,
        ))
        .with_properties(HashMap::from([("seats".to_owned(), json!(3))]));
    let id = resend.contacts.create(options).await.expect("contacts.create decodes");
    assert!(is_uuid(&id), "{id}");

    let contact = resend
        .contacts
        .get(&id)
        .await
        .expect("contacts.get decodes the properties");
    assert_eq!(contact.id, id);
    assert_eq!(contact.email, email);
    assert_eq!(contact.first_name.as_deref(), Some("Ada"));
    assert_eq!(contact.last_name, None);
    assert!(!contact.unsubscribed);
    assert_recent(&contact.created_at);
    // Every defined property with a value, or its fallback; values always as strings.
    let properties = contact.properties.expect("a contact's properties");
    assert_eq!(properties.len(), 2, "{properties:?}");
    assert_eq!(properties["plan"].r#type, PropertyType::String);
    assert_eq!(
        properties["plan"].value, "free",
        "the fallback: the contact has no plan"
    );
    assert_eq!(properties["seats"].r#type, PropertyType::Number);
    assert_eq!(properties["seats"].value, "3");

    let segments = resend
        .contacts
        .list_contact_segment(&id, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment decodes");
    assert!(!segments.has_more);
    assert_eq!(
        sorted(segments.data.iter().map(|s| &*s.id)),
        sorted([&*vip.id, &*trial.id])
    );
    let entry = segments.data.iter().find(|s| s.id == vip.id).expect("the VIP segment");
    assert_eq!(entry.name, "VIP");
    assert_recent(&entry.created_at);

    let members = resend
        .segments
        .list_contacts(&vip.id, ListOptions::default())
        .await
        .expect("segments.list_contacts decodes");
    let listed: Vec<&str> = members.data.iter().map(|c| &*c.id).collect();
    assert_eq!(listed, [&*id]);
    let path = format!("/contacts?segment_id={}", trial.id);
    let response = raw_with_key(&key, Method::GET, &path, None).await;
    assert_eq!(response.status, 200, "GET {path}: {}", response.json);
    assert_eq!(response.json["data"][0]["id"], json!(id));
    assert_eq!(response.json["data"].as_array().map(Vec::len), Some(1));

    let topics = resend
        .contacts
        .get_contact_topics(&id, ListOptions::default())
        .await
        .expect("contacts.get_contact_topics decodes");
    assert!(!topics.has_more);
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].id, news.id);
    assert_eq!(topics[0].name, "News");
    assert_eq!(topics[0].description, None);
    assert_eq!(topics[0].subscription, SubscriptionType::OptIn);
    assert_recent(&topics[0].created_at);

    // A value replaces, null removes.
    let changes = ContactChanges::new().with_properties(HashMap::from([
        ("plan".to_owned(), json!("pro")),
        ("seats".to_owned(), Value::Null),
        ("nickname".to_owned(), json!("Countess")),
    ]));
    let updated = resend
        .contacts
        .update(&id, changes)
        .await
        .expect("contacts.update decodes");
    assert_eq!(updated.id, id);
    let properties = resend
        .contacts
        .get(&email)
        .await
        .expect("contacts.get by address decodes")
        .properties
        .expect("a contact's properties");
    assert_eq!(properties.len(), 2, "{properties:?}");
    assert_eq!(properties["plan"].value, "pro");
    assert_eq!(properties["nickname"].value, "Countess");
    let changes = ContactChanges::new().with_property("unknown_key", "x");
    assert_resend_error(resend.contacts.update(&id, changes).await, 422, "validation_error");

    // What is refused creates nothing.
    let refused = unique_address("refused");
    let options = CreateContactOptions::new(&refused).with_segment(&random_uuid());
    assert_resend_error(resend.contacts.create(options).await, 404, "not_found");
    let topic = UpdateContactTopicOptions::new(random_uuid(), SubscriptionType::OptIn);
    let options = CreateContactOptions::new(&refused).with_topic(topic);
    assert_resend_error(resend.contacts.create(options).await, 404, "not_found");
    let options = CreateContactOptions::new(&refused).with_property("unknown_key", "x");
    assert_resend_error(resend.contacts.create(options).await, 422, "validation_error");
    let options = CreateContactOptions::new(&refused).with_property("seats", "lots");
    assert_resend_error(resend.contacts.create(options).await, 422, "validation_error");
    assert_resend_error(resend.contacts.get(&refused).await, 404, "not_found");
}

#[tokio::test]
async fn create_with_audience_id_posts_to_the_legacy_path() {
    let (key, resend) = team_key_and_client("contacts-legacy").await;
    let audience = resend.segments.create("Legacy").await.expect("segments.create decodes");
    let email = unique_address("legacy");
    let options = CreateContactOptions::new(&email)
        .with_first_name("Lin")
        .with_unsubscribed(false)
        .with_audience_id(&audience.id);
    let id = resend
        .contacts
        .create(options)
        .await
        .expect("contacts.create with an audience decodes");
    assert!(is_uuid(&id), "{id}");
    let contact = resend.contacts.get(&id).await.expect("contacts.get decodes");
    assert_eq!(contact.email, email);
    assert_eq!(contact.first_name.as_deref(), Some("Lin"));
    let members = resend
        .segments
        .list_contacts(&audience.id, ListOptions::default())
        .await
        .expect("segments.list_contacts decodes");
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].id, id);

    // An address that is already a contact is found, and added to the audience.
    let existing_email = unique_address("existing");
    let existing = resend
        .contacts
        .create(CreateContactOptions::new(&existing_email))
        .await
        .expect("contacts.create decodes");
    let options = CreateContactOptions::new(&existing_email).with_audience_id(&audience.id);
    let again = resend.contacts.create(options).await.expect("contacts.create decodes");
    assert_eq!(again, existing);
    let segments = resend
        .contacts
        .list_contact_segment(&existing_email, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment by address decodes");
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].id, audience.id);

    // 201 on the wire, with the body the SDK sends.
    let path = format!("/audiences/{}/contacts", audience.id);
    let body = json!({ "email": unique_address("wire"), "audience_id": audience.id });
    let response = raw_with_key(&key, Method::POST, &path, Some(body)).await;
    assert_eq!(response.status, 201, "POST {path}: {}", response.json);
    assert_eq!(response.json["object"], "contact");

    let options = CreateContactOptions::new(&unique_address("nowhere")).with_audience_id(&random_uuid());
    assert_resend_error(resend.contacts.create(options).await, 404, "not_found");
}

#[tokio::test]
async fn list_update_and_delete() {
    let (key, resend) = team_key_and_client("contacts-list").await;
    let emails = [
        unique_address("list-0"),
        unique_address("list-1"),
        unique_address("list-2"),
    ];
    let mut ids = Vec::new();
    for email in &emails {
        let id = resend
            .contacts
            .create(CreateContactOptions::new(email))
            .await
            .expect("contacts.create decodes");
        ids.push(id);
    }
    // Every create above sent "audience_id": null; on the wire it answers 201.
    let body = json!({ "email": unique_address("wire"), "audience_id": null });
    let response = raw_with_key(&key, Method::POST, "/contacts", Some(body)).await;
    assert_eq!(response.status, 201, "POST /contacts: {}", response.json);
    let wire_id = response.json["id"].as_str().expect("a string id").to_owned();

    let first = resend
        .contacts
        .list(ListOptions::default().with_limit(2))
        .await
        .expect("contacts.list decodes");
    assert!(first.has_more);
    assert_eq!(first.len(), 2);
    assert_eq!(&*first[0].id, wire_id);
    assert_eq!(first[1].email, emails[2]);
    let rest = resend
        .contacts
        .list(ListOptions::default().with_limit(2).list_after(&first[1].id))
        .await
        .expect("the page after decodes");
    assert!(!rest.has_more);
    let listed: Vec<&str> = rest.data.iter().map(|c| c.email.as_str()).collect();
    assert_eq!(listed, [emails[1].as_str(), emails[0].as_str()]);

    let changes = ContactChanges::new()
        .with_first_name("Ann")
        .with_last_name("Lee")
        .with_unsubscribed(true);
    let updated = resend
        .contacts
        .update(&emails[0], changes)
        .await
        .expect("contacts.update by address decodes");
    assert_eq!(updated.id, ids[0]);
    let contact = resend.contacts.get(&ids[0]).await.expect("contacts.get decodes");
    assert_eq!(contact.first_name.as_deref(), Some("Ann"));
    assert_eq!(contact.last_name.as_deref(), Some("Lee"));
    assert!(contact.unsubscribed);
    assert!(contact.properties.is_some_and(|p| p.is_empty()), "no properties");

    let deleted = resend.contacts.delete(&ids[0]).await.expect("contacts.delete decodes");
    assert!(deleted);
    assert_resend_error(resend.contacts.get(&ids[0]).await, 404, "not_found");
    let deleted = resend
        .contacts
        .delete(&emails[1])
        .await
        .expect("contacts.delete by address decodes");
    assert!(deleted);
    assert_resend_error(resend.contacts.get(&emails[1]).await, 404, "not_found");
}

#[tokio::test]
async fn contact_segments_add_list_and_delete() {
    let (key, resend) = team_key_and_client("contact-segments").await;
    let a = resend.segments.create("A").await.expect("segments.create decodes");
    let b = resend.segments.create("B").await.expect("segments.create decodes");
    let c = resend.segments.create("C").await.expect("segments.create decodes");
    let email = unique_address("member");
    let id = resend
        .contacts
        .create(CreateContactOptions::new(&email))
        .await
        .expect("contacts.create decodes");
    let none = resend
        .contacts
        .list_contact_segment(&id, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment decodes");
    assert!(none.is_empty());

    let added = resend
        .contacts
        .add_contact_segment(&id, &a.id)
        .await
        .expect("contacts.add_contact_segment decodes");
    assert_eq!(added.id, a.id);
    let added = resend
        .contacts
        .add_contact_segment(&email, &b.id)
        .await
        .expect("contacts.add_contact_segment by address decodes");
    assert_eq!(added.id, b.id);
    // The whole answer and its 201, raw (the SDK posts no body).
    let path = format!("/contacts/{id}/segments/{}", c.id);
    let response = raw_with_key(&key, Method::POST, &path, None).await;
    assert_eq!(response.status, 201, "POST {path}: {}", response.json);
    assert_eq!(
        response.json,
        json!({ "object": "contact_segment", "id": c.id, "contact_id": id, "segment_id": c.id })
    );

    let listed = resend
        .contacts
        .list_contact_segment(&id, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment decodes");
    assert!(!listed.has_more);
    assert_eq!(
        sorted(listed.data.iter().map(|s| &*s.id)),
        sorted([&*a.id, &*b.id, &*c.id])
    );
    let members = resend
        .segments
        .list_contacts(&b.id, ListOptions::default())
        .await
        .expect("segments.list_contacts decodes");
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].id, id);

    let removed = resend
        .contacts
        .delete_contact_segment(&id, &a.id)
        .await
        .expect("contacts.delete_contact_segment decodes");
    assert_eq!(removed.id, a.id);
    assert!(removed.deleted);
    let path = format!("/contacts/{id}/segments/{}", b.id);
    let response = raw_with_key(&key, Method::DELETE, &path, None).await;
    assert_eq!(response.status, 200, "DELETE {path}: {}", response.json);
    assert_eq!(
        response.json,
        json!({ "object": "contact_segment", "id": b.id, "contact_id": id, "segment_id": b.id, "deleted": true })
    );
    let listed = resend
        .contacts
        .list_contact_segment(&email, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment by address decodes");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, c.id);
    assert_eq!(listed[0].name, "C");
    let members = resend
        .segments
        .list_contacts(&a.id, ListOptions::default())
        .await
        .expect("segments.list_contacts decodes");
    assert!(members.is_empty());

    assert_resend_error(
        resend.contacts.add_contact_segment(&id, &random_uuid()).await,
        404,
        "not_found",
    );
    assert_resend_error(
        resend.contacts.add_contact_segment(&random_uuid(), &a.id).await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn contact_topics_default_to_the_topics_and_update_takes_a_bare_array() {
    let (key, resend) = team_key_and_client("contact-topics").await;
    let options =
        CreateTopicOptions::new("Weekly", SubscriptionType::OptIn).with_description("Every Monday".to_owned());
    let weekly = resend.topics.create(options).await.expect("topics.create decodes");
    let offers = resend
        .topics
        .create(CreateTopicOptions::new("Offers", SubscriptionType::OptOut))
        .await
        .expect("topics.create decodes");
    let email = unique_address("topics");
    let id = resend
        .contacts
        .create(CreateContactOptions::new(&email))
        .await
        .expect("contacts.create decodes");

    let topics = resend
        .contacts
        .get_contact_topics(&id, ListOptions::default())
        .await
        .expect("contacts.get_contact_topics decodes");
    assert!(!topics.has_more);
    assert_eq!(topics.len(), 2);
    let entry = topics
        .data
        .iter()
        .find(|t| t.id == weekly.id)
        .expect("the Weekly topic");
    assert_eq!(entry.name, "Weekly");
    assert_eq!(entry.description.as_deref(), Some("Every Monday"));
    assert_eq!(entry.subscription, SubscriptionType::OptIn, "the topic's default");
    assert_recent(&entry.created_at);
    let entry = topics
        .data
        .iter()
        .find(|t| t.id == offers.id)
        .expect("the Offers topic");
    assert_eq!(entry.description, None);
    assert_eq!(entry.subscription, SubscriptionType::OptOut, "the topic's default");

    let choices = [
        UpdateContactTopicOptions::new(weekly.id.to_string(), SubscriptionType::OptOut),
        UpdateContactTopicOptions::new(offers.id.to_string(), SubscriptionType::OptIn),
    ];
    let updated = resend
        .contacts
        .update_contact_topics(&id, choices)
        .await
        .expect("contacts.update_contact_topics decodes");
    assert_eq!(updated.id, id, "the contact's id");
    let topics = resend
        .contacts
        .get_contact_topics(&email, ListOptions::default())
        .await
        .expect("contacts.get_contact_topics by address decodes");
    let subscription = |topic: &str| {
        topics
            .data
            .iter()
            .find(|t| &*t.id == topic)
            .map(|t| t.subscription)
            .expect("the topic is listed")
    };
    assert_eq!(subscription(&*weekly.id), SubscriptionType::OptOut);
    assert_eq!(subscription(&*offers.id), SubscriptionType::OptIn);

    // The whole answer, raw.
    let path = format!("/contacts/{id}/topics");
    let body = json!([
        { "id": weekly.id, "subscription": "opt_in" },
        { "id": offers.id, "subscription": "opt_out" }
    ]);
    let response = raw_with_key(&key, Method::PATCH, &path, Some(body)).await;
    assert_eq!(response.status, 200, "PATCH {path}: {}", response.json);
    assert_eq!(response.json["object"], "contact_topics");
    assert_eq!(response.json["id"], json!(id));
    assert_eq!(response.json["contact_id"], json!(id));
    let mut answered: Vec<(String, String)> = response.json["topics"]
        .as_array()
        .expect("the topics set")
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap_or_default().to_owned(),
                t["subscription"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    answered.sort_unstable();
    let mut expected = vec![
        (weekly.id.to_string(), "opt_in".to_owned()),
        (offers.id.to_string(), "opt_out".to_owned()),
    ];
    expected.sort_unstable();
    assert_eq!(answered, expected);

    let unknown = [UpdateContactTopicOptions::new(random_uuid(), SubscriptionType::OptIn)];
    assert_resend_error(
        resend.contacts.update_contact_topics(&id, unknown).await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn contact_properties_create_get_list_update_and_delete() {
    let (key, resend) = team_key_and_client("contact-properties").await;
    let company = resend
        .contacts
        .create_property(CreateContactPropertyOptions::new("company", PropertyType::String).with_fallback("Acme"))
        .await
        .expect("contacts.create_property decodes");
    assert!(is_uuid(&company.id), "{}", company.id);
    let score = resend
        .contacts
        .create_property(CreateContactPropertyOptions::new("score", PropertyType::Number).with_fallback(0))
        .await
        .expect("contacts.create_property decodes");
    // Without a fallback, the SDK sends "fallback_value": null.
    let nickname = resend
        .contacts
        .create_property(CreateContactPropertyOptions::new("nickname", PropertyType::String))
        .await
        .expect("contacts.create_property with a null fallback decodes");

    let property = resend
        .contacts
        .get_property(&company.id)
        .await
        .expect("contacts.get_property decodes");
    assert_eq!(property.id, company.id);
    assert_eq!(property.key, "company");
    assert_eq!(property.r#type, PropertyType::String);
    assert_eq!(property.fallback_value, Some(json!("Acme")));
    assert_recent(&property.created_at);
    let property = resend
        .contacts
        .get_property(&score.id)
        .await
        .expect("contacts.get_property decodes");
    assert_eq!(property.r#type, PropertyType::Number);
    assert_eq!(property.fallback_value, Some(json!(0)));
    let property = resend
        .contacts
        .get_property(&nickname.id)
        .await
        .expect("contacts.get_property decodes");
    assert_eq!(property.fallback_value, None);

    let listed = resend
        .contacts
        .list_properties(ListOptions::default())
        .await
        .expect("contacts.list_properties decodes");
    assert!(!listed.has_more);
    let keys: Vec<&str> = listed.data.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["nickname", "score", "company"]);
    let page = resend
        .contacts
        .list_properties(ListOptions::default().with_limit(1).list_after(&nickname.id))
        .await
        .expect("the page after decodes");
    assert!(page.has_more);
    assert_eq!(page[0].id, score.id);

    let updated = resend
        .contacts
        .update_property(&company.id, ContactPropertyChanges::default().with_fallback("Initech"))
        .await
        .expect("contacts.update_property decodes");
    assert_eq!(updated.id, company.id);
    let property = resend
        .contacts
        .get_property(&company.id)
        .await
        .expect("contacts.get_property decodes");
    assert_eq!(property.fallback_value, Some(json!("Initech")));
    let _ = resend
        .contacts
        .update_property(
            &company.id,
            ContactPropertyChanges::default().with_fallback(Value::Null),
        )
        .await
        .expect("contacts.update_property to no fallback decodes");
    let property = resend
        .contacts
        .get_property(&company.id)
        .await
        .expect("contacts.get_property decodes");
    assert_eq!(property.fallback_value, None);
    assert_resend_error(
        resend
            .contacts
            .update_property(&score.id, ContactPropertyChanges::default().with_fallback("ten"))
            .await,
        422,
        "validation_error",
    );
    // The key and the type are fixed at creation.
    let path = format!("/contact-properties/{}", company.id);
    for body in [json!({ "key": "renamed" }), json!({ "type": "number" })] {
        let response = raw_with_key(&key, Method::PATCH, &path, Some(body.clone())).await;
        assert_eq!(response.status, 422, "PATCH {path} {body}: {}", response.json);
        assert_eq!(response.json["name"], "validation_error", "PATCH {path} {body}");
    }

    assert_resend_error(
        resend
            .contacts
            .create_property(CreateContactPropertyOptions::new("company", PropertyType::String))
            .await,
        409,
        "conflict",
    );
    for options in [
        CreateContactPropertyOptions::new("has space", PropertyType::String),
        CreateContactPropertyOptions::new("k".repeat(51), PropertyType::String),
        CreateContactPropertyOptions::new("count", PropertyType::Number).with_fallback("ten"),
    ] {
        assert_resend_error(resend.contacts.create_property(options).await, 422, "validation_error");
    }

    let deleted = resend
        .contacts
        .delete_property(&company.id)
        .await
        .expect("contacts.delete_property decodes");
    assert_eq!(deleted.id, company.id);
    assert!(deleted.deleted);
    assert_resend_error(resend.contacts.get_property(&company.id).await, 404, "not_found");
    assert_resend_error(resend.contacts.get_property(&random_uuid()).await, 404, "not_found");

    // The answers' exact shapes, raw.
    let body = json!({ "key": "wire_key", "type": "string" });
    let response = raw_with_key(&key, Method::POST, "/contact-properties", Some(body)).await;
    assert_eq!(response.status, 201, "POST /contact-properties: {}", response.json);
    let id = response.json["id"].as_str().expect("a string id").to_owned();
    assert_eq!(response.json, json!({ "object": "contact_property", "id": id }));
    let path = format!("/contact-properties/{id}");
    let response = raw_with_key(&key, Method::DELETE, &path, None).await;
    assert_eq!(response.status, 200, "DELETE {path}: {}", response.json);
    assert_eq!(
        response.json,
        json!({ "object": "contact_property", "id": id, "deleted": true })
    );
}

#[tokio::test]
async fn import_with_the_default_columns_and_list_imports() {
    let (key, resend) = team_key_and_client("imports").await;
    let existing_email = unique_address("import-existing");
    let existing = resend
        .contacts
        .create(CreateContactOptions::new(&existing_email).with_first_name("Old"))
        .await
        .expect("contacts.create decodes");
    let [a, b] = [unique_address("import-a"), unique_address("import-b")];
    let csv = format!(
        "email,first_name,last_name,unsubscribed\n{a},Ann,Lee,false\nnot-an-address,Bad,Row,false\n\
         {b},Bo,Ek,true\n{existing_email},New,Name,false\n"
    );
    let import = import_and_wait(&resend, &csv, CreateContactImportOptions::new()).await;
    assert_recent(&import.created_at);
    assert_recent(
        import
            .completed_at
            .as_deref()
            .expect("a completed import has completed_at"),
    );
    // on_conflict defaults to upsert: the existing address is updated.
    assert_eq!(
        serde_json::to_value(import.counts).expect("counts serialize"),
        json!({ "total": 4, "created": 2, "updated": 1, "skipped": 0, "failed": 1 })
    );
    // The bad row's error (the SDK's type leaves errors out).
    let path = format!("/contacts/imports/{}", import.id);
    let response = raw_with_key(&key, Method::GET, &path, None).await;
    assert_eq!(response.status, 200, "GET {path}: {}", response.json);
    assert_eq!(response.json["object"], "contact_import");
    assert_eq!(response.json["status"], "completed");
    assert_eq!(response.json["errors_total"], json!(1));
    let errors = response.json["errors"].as_array().expect("an errors array");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0]["line"],
        json!(3),
        "the file's third line (the header is line 1)"
    );
    assert!(
        errors[0]["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{errors:?}"
    );

    let ann = resend.contacts.get(&a).await.expect("contacts.get decodes");
    assert_eq!(ann.first_name.as_deref(), Some("Ann"));
    assert_eq!(ann.last_name.as_deref(), Some("Lee"));
    assert!(!ann.unsubscribed);
    let bo = resend.contacts.get(&b).await.expect("contacts.get decodes");
    assert_eq!(bo.first_name.as_deref(), Some("Bo"));
    assert!(bo.unsubscribed);
    let updated = resend
        .contacts
        .get(&existing_email)
        .await
        .expect("contacts.get decodes");
    assert_eq!(updated.id, existing);
    assert_eq!(updated.first_name.as_deref(), Some("New"));
    let all = resend
        .contacts
        .list(ListOptions::default())
        .await
        .expect("contacts.list decodes");
    assert_eq!(all.len(), 3);

    let imports = resend
        .contacts
        .list_imports(ListOptions::default())
        .await
        .expect("contacts.list_imports decodes");
    assert!(!imports.has_more);
    assert_eq!(imports.len(), 1);
    assert_eq!(imports[0].id, import.id);
    assert_eq!(imports[0].status, ContactImportStatus::Completed);
    assert_eq!(imports[0].completed_at, import.completed_at);
    let completed = resend
        .contacts
        .list_imports(ListOptions::default().with_other("status", json!("completed")))
        .await
        .expect("contacts.list_imports by status decodes");
    assert_eq!(completed.len(), 1);
    let queued = resend
        .contacts
        .list_imports(ListOptions::default().with_other("status", json!("queued")))
        .await
        .expect("contacts.list_imports by status decodes");
    assert!(queued.is_empty());
    assert_resend_error(resend.contacts.get_import(&random_uuid()).await, 404, "not_found");
}

#[tokio::test]
async fn import_with_a_column_map_segments_topics_and_skip() {
    let resend = team_client("imports-mapped").await;
    let segment = resend
        .segments
        .create("Imported")
        .await
        .expect("segments.create decodes");
    let topic = resend
        .topics
        .create(CreateTopicOptions::new("Digest", SubscriptionType::OptOut))
        .await
        .expect("topics.create decodes");
    for options in [
        CreateContactPropertyOptions::new("plan", PropertyType::String),
        CreateContactPropertyOptions::new("seats", PropertyType::Number),
    ] {
        let _ = resend
            .contacts
            .create_property(options)
            .await
            .expect("contacts.create_property decodes");
    }
    let existing_email = unique_address("mapped-existing");
    let existing = resend
        .contacts
        .create(CreateContactOptions::new(&existing_email).with_first_name("Old"))
        .await
        .expect("contacts.create decodes");
    let fresh = unique_address("mapped-new");

    let column_map = ContactImportColumnMap::new()
        .with_email("E-mail")
        .with_first_name("Given")
        .with_property(
            "plan",
            ContactImportPropertyMapping {
                column: "Plan".to_owned(),
                r#type: ContactImportPropertyType::String,
            },
        )
        .with_property(
            "seats",
            ContactImportPropertyMapping {
                column: "Seats".to_owned(),
                r#type: ContactImportPropertyType::Number,
            },
        );
    let options = CreateContactImportOptions::new()
        .with_column_map(column_map)
        .with_on_conflict(ContactImportOnConflict::Skip)
        .with_segment(&segment.id)
        .with_topic(ContactImportTopic {
            id: topic.id.to_string(),
            subscription: ContactImportTopicSubscription::OptIn,
        });
    let csv = format!("E-mail,Given,Plan,Seats\n{fresh},Cy,pro,5\n{existing_email},Changed,basic,1\n");
    let import = import_and_wait(&resend, &csv, options).await;
    assert_eq!(
        serde_json::to_value(import.counts).expect("counts serialize"),
        json!({ "total": 2, "created": 1, "updated": 0, "skipped": 1, "failed": 0 })
    );

    let cy = resend.contacts.get(&fresh).await.expect("contacts.get decodes");
    assert_eq!(cy.first_name.as_deref(), Some("Cy"));
    let properties = cy.properties.expect("a contact's properties");
    assert_eq!(properties.len(), 2, "{properties:?}");
    assert_eq!(properties["plan"].value, "pro");
    assert_eq!(properties["seats"].r#type, PropertyType::Number);
    assert_eq!(properties["seats"].value, "5");
    let segments = resend
        .contacts
        .list_contact_segment(&fresh, ListOptions::default())
        .await
        .expect("contacts.list_contact_segment decodes");
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].id, segment.id);
    let topics = resend
        .contacts
        .get_contact_topics(&fresh, ListOptions::default())
        .await
        .expect("contacts.get_contact_topics decodes");
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].id, topic.id);
    assert_eq!(topics[0].subscription, SubscriptionType::OptIn);
    let skipped = resend
        .contacts
        .get(&existing_email)
        .await
        .expect("contacts.get decodes");
    assert_eq!(skipped.id, existing);
    assert_eq!(
        skipped.first_name.as_deref(),
        Some("Old"),
        "a skipped row changes nothing"
    );
}
