//! Suppressions through the official Rust SDK (crates.io `resend-rs`): `suppressions.add /
//! get / list / remove / batch_add / batch_remove`. The SDK ignores the status code of a
//! success, so `POST /suppressions` and `/suppressions/batch/add` answering 201 (as
//! Resend's API does) is checked raw. Listing runs in a team of its own.

use herald_compat_rust::{assert_recent, assert_resend_error, client, is_uuid, raw, team_client, unique_address};
use reqwest::Method;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    AddSuppressionOptions, BatchAddSuppressionOptions, BatchRemoveSuppressionOptions, SuppressionOrigin,
};
use serde_json::json;

#[tokio::test]
async fn add_get_by_id_and_by_address_and_remove() {
    let resend = client();
    let email = unique_address("single");
    let added = resend
        .suppressions
        .add(AddSuppressionOptions::new().with_email(&email))
        .await
        .expect("suppressions.add decodes");
    assert!(is_uuid(&added.id), "{}", added.id);
    let again = resend
        .suppressions
        .add(AddSuppressionOptions::new().with_email(&email.to_uppercase()))
        .await
        .expect("adding a suppressed address again decodes");
    assert_eq!(again.id, added.id, "an address already suppressed keeps its id");

    let by_id = resend
        .suppressions
        .get(&added.id)
        .await
        .expect("suppressions.get decodes");
    assert_eq!(by_id.id, added.id);
    assert_eq!(by_id.email, email);
    assert!(matches!(by_id.origin, SuppressionOrigin::Manual), "{:?}", by_id.origin);
    assert_eq!(by_id.source_id, None);
    assert_recent(&by_id.created_at);
    // The SDK percent-encodes the address into the path.
    let by_address = resend.suppressions.get(&email).await.expect("get by address decodes");
    assert_eq!(by_address.id, added.id);
    assert_eq!(by_address.created_at, by_id.created_at);

    let removed = resend
        .suppressions
        .remove(&email)
        .await
        .expect("suppressions.remove decodes");
    assert_eq!(removed.id, added.id);
    assert!(removed.deleted);
    assert_resend_error(resend.suppressions.get(&added.id).await, 404, "not_found");
    assert_resend_error(resend.suppressions.remove(&added.id).await, 404, "not_found");
}

#[tokio::test]
async fn add_and_batch_add_answer_201_on_the_wire() {
    let email = unique_address("status");
    let response = raw(Method::POST, "/suppressions", Some(json!({ "email": email }))).await;
    assert_eq!(response.status, 201, "POST /suppressions: {}", response.json);
    assert_eq!(response.json["object"], "suppression");

    let emails = [unique_address("status-a"), unique_address("status-b")];
    let body = json!({ "emails": emails });
    let response = raw(Method::POST, "/suppressions/batch/add", Some(body)).await;
    assert_eq!(response.status, 201, "POST /suppressions/batch/add: {}", response.json);
    assert_eq!(response.json["data"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn list_pages_newest_first_and_filters_by_origin() {
    let resend = team_client("suppressions-list").await;
    let emails = [
        unique_address("list-0"),
        unique_address("list-1"),
        unique_address("list-2"),
    ];
    for email in &emails {
        let _ = resend
            .suppressions
            .add(AddSuppressionOptions::new().with_email(email))
            .await
            .expect("suppressions.add decodes");
    }

    let first = resend
        .suppressions
        .list(ListOptions::default().with_limit(2))
        .await
        .expect("suppressions.list decodes");
    assert!(first.has_more);
    let listed: Vec<&str> = first.data.iter().map(|s| s.email.as_str()).collect();
    assert_eq!(listed, [emails[2].as_str(), emails[1].as_str()]);
    assert!(matches!(first[0].origin, SuppressionOrigin::Manual));
    assert_eq!(first[0].source_id, None);
    assert_recent(&first[0].created_at);

    let second = resend
        .suppressions
        .list(ListOptions::default().with_limit(2).list_after(&first[1].id))
        .await
        .expect("the page after decodes");
    assert!(!second.has_more);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].email, emails[0]);

    let manual = resend
        .suppressions
        .list(ListOptions::default().with_other("origin", json!("manual")))
        .await
        .expect("a list filtered by origin decodes");
    assert_eq!(manual.len(), 3);
    let bounces = resend
        .suppressions
        .list(ListOptions::default().with_other("origin", json!("bounce")))
        .await
        .expect("an empty filtered list decodes");
    assert!(bounces.is_empty());
    assert_resend_error(
        resend.suppressions.list(ListOptions::default().with_limit(101)).await,
        422,
        "validation_error",
    );
}

#[tokio::test]
async fn batch_add_and_batch_remove() {
    let resend = client();
    let [a, b] = [unique_address("batch-a"), unique_address("batch-b")];
    let existing = resend
        .suppressions
        .add(AddSuppressionOptions::new().with_email(&b))
        .await
        .expect("suppressions.add decodes");
    let added = resend
        .suppressions
        .batch_add(BatchAddSuppressionOptions::new().add_emails([a.clone(), b.clone(), a.to_uppercase()]))
        .await
        .expect("suppressions.batch_add decodes");
    assert_eq!(added.data.len(), 2, "duplicates collapse: {added:?}");
    assert!(
        added.data.iter().any(|s| s.id == existing.id),
        "the existing entry keeps its id"
    );
    let new_id = added
        .data
        .iter()
        .find(|s| s.id != existing.id)
        .expect("a new entry for the other address")
        .id
        .clone();
    assert_eq!(resend.suppressions.get(&new_id).await.expect("get decodes").email, a);

    let removed = resend
        .suppressions
        .batch_remove(BatchRemoveSuppressionOptions::new().add_emails([a.clone()]))
        .await
        .expect("suppressions.batch_remove by address decodes");
    assert_eq!(removed.data.len(), 1);
    assert_eq!(removed.data[0].id, new_id);
    assert!(removed.data[0].deleted);

    let removed = resend
        .suppressions
        .batch_remove(BatchRemoveSuppressionOptions::new().add_ids([existing.id.to_string()]))
        .await
        .expect("suppressions.batch_remove by id decodes");
    assert_eq!(removed.data.len(), 1);
    assert_eq!(removed.data[0].id, existing.id);
    assert_resend_error(resend.suppressions.get(&b).await, 404, "not_found");
}
