//! Segments through the official Rust SDK (crates.io `resend-rs`): `segments.create / get /
//! update / delete / list / list_contacts`. The SDK ignores the status code of a success and
//! the `object` of an answer, so `POST /segments` answering 201 and the answers' exact shapes
//! are checked raw. Every test runs in a team of its own, so lists hold only its segments.

use herald_compat_rust::{
    assert_recent, assert_resend_error, is_uuid, random_uuid, raw_with_key, team_client, team_key, team_key_and_client,
    unique_address, unique_name,
};
use reqwest::Method;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::CreateContactOptions;
use serde_json::json;

#[tokio::test]
async fn create_get_update_and_delete() {
    let (key, resend) = team_key_and_client("segments").await;
    let name = unique_name("segment");
    let created = resend.segments.create(&name).await.expect("segments.create decodes");
    assert!(is_uuid(&created.id), "{}", created.id);
    assert_eq!(created.name, name);

    let segment = resend.segments.get(&created.id).await.expect("segments.get decodes");
    assert_eq!(segment.id, created.id);
    assert_eq!(segment.name, name);
    assert_recent(&segment.created_at);
    let path = format!("/segments/{}", created.id);
    let wire = raw_with_key(&key, Method::GET, &path, None).await;
    assert_eq!(wire.status, 200, "GET {path}: {}", wire.json);
    assert_eq!(
        wire.json,
        json!({ "object": "segment", "id": created.id, "name": name, "created_at": segment.created_at })
    );

    let renamed = unique_name("renamed");
    let updated = resend
        .segments
        .update(&created.id, &renamed)
        .await
        .expect("segments.update decodes");
    assert_eq!(updated.id, created.id);
    let segment = resend.segments.get(&created.id).await.expect("segments.get decodes");
    assert_eq!(segment.name, renamed);

    let deleted = resend
        .segments
        .delete(&created.id)
        .await
        .expect("segments.delete decodes");
    assert!(deleted);
    assert_resend_error(resend.segments.get(&created.id).await, 404, "not_found");
    assert_resend_error(resend.segments.get(&random_uuid()).await, 404, "not_found");
    assert_resend_error(resend.segments.get("not-a-segment").await, 422, "invalid_parameter");
}

#[tokio::test]
async fn create_and_delete_answer_resend_shapes_on_the_wire() {
    let key = team_key("segments-wire").await;
    let name = unique_name("wire");
    let response = raw_with_key(&key, Method::POST, "/segments", Some(json!({ "name": name }))).await;
    assert_eq!(response.status, 201, "POST /segments: {}", response.json);
    let id = response.json["id"].as_str().expect("a string id").to_owned();
    assert!(is_uuid(&id), "{id}");
    assert_eq!(response.json, json!({ "object": "segment", "id": id, "name": name }));

    let path = format!("/segments/{id}");
    let response = raw_with_key(&key, Method::PATCH, &path, Some(json!({ "name": "Renamed" }))).await;
    assert_eq!(response.status, 200, "PATCH {path}: {}", response.json);
    assert_eq!(response.json, json!({ "object": "segment", "id": id }));
    let response = raw_with_key(&key, Method::DELETE, &path, None).await;
    assert_eq!(response.status, 200, "DELETE {path}: {}", response.json);
    assert_eq!(response.json, json!({ "object": "segment", "id": id, "deleted": true }));

    let response = raw_with_key(&key, Method::POST, "/segments", Some(json!({}))).await;
    assert_eq!(response.status, 422, "POST /segments without a name: {}", response.json);
    assert_eq!(response.json["name"], "missing_required_field");
}

#[tokio::test]
async fn list_pages_newest_first() {
    let resend = team_client("segments-list").await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let created = resend
            .segments
            .create(&format!("Segment {n}"))
            .await
            .expect("segments.create decodes");
        ids.push(created.id);
    }

    let all = resend
        .segments
        .list(ListOptions::default())
        .await
        .expect("segments.list decodes");
    assert!(!all.has_more);
    let names: Vec<&str> = all.data.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Segment 2", "Segment 1", "Segment 0"]);
    assert_recent(&all[0].created_at);

    let first = resend
        .segments
        .list(ListOptions::default().with_limit(2))
        .await
        .expect("a page of two decodes");
    assert!(first.has_more);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].id, ids[2]);
    assert_eq!(first[1].id, ids[1]);
    let second = resend
        .segments
        .list(ListOptions::default().with_limit(2).list_after(&first[1].id))
        .await
        .expect("the page after decodes");
    assert!(!second.has_more);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].id, ids[0]);
    let back = resend
        .segments
        .list(ListOptions::default().with_limit(2).list_before(&ids[0]))
        .await
        .expect("the page before decodes");
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].id, ids[2]);
    assert_resend_error(
        resend.segments.list(ListOptions::default().with_limit(101)).await,
        422,
        "validation_error",
    );
}

#[tokio::test]
async fn list_contacts_lists_the_segments_contacts_newest_first() {
    let resend = team_client("segments-contacts").await;
    let segment = resend
        .segments
        .create("Members")
        .await
        .expect("segments.create decodes");
    let emails = [
        unique_address("member-0"),
        unique_address("member-1"),
        unique_address("outsider"),
    ];
    let mut ids = Vec::new();
    for (n, email) in emails.iter().enumerate() {
        let mut options = CreateContactOptions::new(email).with_first_name("Member");
        if n < 2 {
            options = options.with_segment(&segment.id);
        }
        ids.push(resend.contacts.create(options).await.expect("contacts.create decodes"));
    }

    let members = resend
        .segments
        .list_contacts(&segment.id, ListOptions::default())
        .await
        .expect("segments.list_contacts decodes");
    assert!(!members.has_more);
    let listed: Vec<&str> = members.data.iter().map(|c| c.email.as_str()).collect();
    assert_eq!(listed, [emails[1].as_str(), emails[0].as_str()]);
    assert_eq!(members[0].id, ids[1]);
    assert_eq!(members[0].first_name.as_deref(), Some("Member"));
    assert_eq!(members[0].last_name, None);
    assert!(!members[0].unsubscribed);
    assert_recent(&members[0].created_at);

    let page = resend
        .segments
        .list_contacts(&segment.id, ListOptions::default().with_limit(1))
        .await
        .expect("a page of one decodes");
    assert!(page.has_more);
    assert_eq!(page[0].id, ids[1]);
    let rest = resend
        .segments
        .list_contacts(
            &segment.id,
            ListOptions::default().with_limit(1).list_after(&page[0].id),
        )
        .await
        .expect("the page after decodes");
    assert!(!rest.has_more);
    assert_eq!(rest[0].id, ids[0]);

    assert_resend_error(
        resend
            .segments
            .list_contacts(&random_uuid(), ListOptions::default())
            .await,
        404,
        "not_found",
    );
}
