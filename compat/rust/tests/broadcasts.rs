//! Broadcasts through the official Rust SDK (crates.io `resend-rs`): `broadcasts.create /
//! get / list / update / send / cancel / duplicate / delete / recipients / clicked_links`.
//! resend-rs decodes a broadcast into `Broadcast`, whose `name`, `audience_id` (herald's
//! segment) and `status` (a plain string) are required, and a recipient into
//! `BroadcastRecipient`; it does not decode `object`, `segment_id`, `topic_id`, herald's own
//! `progress` or a recipient's `email_id`, which are read raw. `CreateBroadcastOptions`
//! posts the segment as `audience_id` and has no `preview_text` or `topic_id`; `send` posts
//! `broadcast_id` in its body; `cancel` and `duplicate` post no body.
//!
//! Everything runs in the operator's team: a broadcast's `from` must be on a verified domain
//! even as a draft, and only the operator's key may mark one verified without DNS. Every
//! segment and contact is the test's own; lists are searched page by page.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use herald_compat_rust::{
    assert_resend_error, client, eventually, is_uuid, parse_timestamp, random_hex, random_uuid, raw, raw_get,
    sending_domain, unique_address, unique_domain, unique_name,
};
use reqwest::Method;
use resend_rs::list_opts::{ListOptions, ListResponse};
use resend_rs::types::BroadcastRecipientEventType::{Sent, Unsubscribed};
use resend_rs::types::{
    Broadcast, BroadcastRecipient, CreateBroadcastOptions, CreateContactOptions, ListRecipientsOptions,
    SendBroadcastOptions, UpdateBroadcastOptions,
};
use resend_rs::{Error, Resend};
use serde_json::{Value, json};

/// A `from` on a new verified domain of the operator's team.
async fn sender() -> String {
    let (domain, _) = sending_domain("broadcasts").await;
    format!("Compat News <news@{domain}>")
}

/// A broadcast timestamp: herald writes ISO 8601 (`…T…Z`); Resend's other resources `… +00`.
#[track_caller]
fn instant(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).map_or_else(|_| parse_timestamp(text), |at| at.with_timezone(&Utc))
}

#[track_caller]
fn assert_now(text: &str) {
    let age = Utc::now() - instant(text);
    assert!(
        age > TimeDelta::seconds(-5) && age < TimeDelta::seconds(60),
        "{text} is not now"
    );
}

/// herald's `progress` of a broadcast that has not been sent.
fn draft_progress() -> Value {
    json!({
        "status": "draft", "total": 0, "sent": 0, "unsubscribed": 0, "suppressed": 0, "failed": 0, "canceled": 0,
        "finished_at": null,
    })
}

/// Asserts an SDK call failed with Resend's error `name` and HTTP `status`; its message.
#[track_caller]
fn error_message<T: std::fmt::Debug>(result: resend_rs::Result<T>, status: u16, name: &str) -> String {
    match result {
        Err(Error::Resend(error)) => {
            assert_eq!(error.status_code, status, "{error:?}");
            assert_eq!(error.name, name, "{error:?}");
            error.message
        }
        other => panic!("expected a {status} {name} error, got {other:?}"),
    }
}

/// Asserts an SDK call was refused with 422 `validation_error`, its message naming `text`.
#[track_caller]
fn refused<T: std::fmt::Debug>(result: resend_rs::Result<T>, text: &str) {
    let message = error_message(result, 422, "validation_error");
    assert!(message.contains(text), "{text:?} not in {message}");
}

/// A new segment holding a new contact for each `(email, first name, unsubscribed)`: its
/// id and the contacts' ids, in order.
async fn segment_of(resend: &Resend, people: &[(&str, Option<&str>, bool)]) -> (String, Vec<String>) {
    let segment = resend
        .segments
        .create(&unique_name("broadcast"))
        .await
        .expect("segments.create decodes");
    let mut ids = Vec::new();
    for &(email, first_name, unsubscribed) in people {
        let mut options = CreateContactOptions::new(email)
            .with_segment(&segment.id)
            .with_unsubscribed(unsubscribed);
        if let Some(name) = first_name {
            options = options.with_first_name(name);
        }
        let id = resend.contacts.create(options).await;
        ids.push(id.expect("contacts.create decodes").to_string());
    }
    (segment.id.to_string(), ids)
}

/// `GET /broadcasts/{id}` raw once herald's worker has sent it (progress.status `sent`).
async fn finished(id: &str) -> Value {
    let path = format!("/broadcasts/{id}");
    eventually(Duration::from_secs(30), || async {
        let got = raw_get(&path).await;
        assert_ne!(got["progress"]["status"], "canceled", "{got}");
        (got["progress"]["status"] == "sent").then_some(got)
    })
    .await
    .unwrap_or_else(|| panic!("broadcast {id} is sent within 30 s"))
}

/// `broadcasts.create`, which must decode: the new broadcast's id.
async fn create(resend: &Resend, options: CreateBroadcastOptions) -> String {
    let created = resend.broadcasts.create(options).await;
    created.expect("broadcasts.create decodes").id.to_string()
}

/// `broadcasts.delete`, which must decode.
async fn delete(resend: &Resend, id: &str) -> bool {
    resend.broadcasts.delete(id).await.expect("broadcasts.delete decodes")
}

/// `broadcasts.get`, which must decode.
async fn get(resend: &Resend, id: &str) -> Broadcast {
    resend.broadcasts.get(id).await.expect("broadcasts.get decodes")
}

/// `broadcasts.recipients`, which must decode.
async fn recipients<T>(
    resend: &Resend,
    id: &str,
    options: ListRecipientsOptions<T>,
) -> ListResponse<BroadcastRecipient> {
    let found = resend.broadcasts.recipients(id, options).await;
    found.expect("broadcasts.recipients decodes")
}

/// The list item of broadcast `id`, searched page by page (the operator's team has many).
async fn listed(resend: &Resend, id: &str) -> Broadcast {
    let mut after: Option<String> = None;
    loop {
        let options = ListOptions::default().with_limit(100);
        let page = match &after {
            None => resend.broadcasts.list(options).await,
            Some(last) => resend.broadcasts.list(options.list_after(last)).await,
        }
        .expect("broadcasts.list decodes every broadcast");
        if let Some(found) = page.data.iter().find(|b| &*b.id == id) {
            return found.clone();
        }
        assert!(page.has_more && !page.data.is_empty(), "broadcast {id} is not listed");
        after = page.data.last().map(|b| b.id.to_string());
    }
}

#[tokio::test]
async fn create_get_update_list_schedule_cancel_duplicate_and_delete() {
    let resend = client();
    let broadcasts = &resend.broadcasts;
    let from = sender().await;
    let contact = unique_address("draft");
    let (segment_id, _) = segment_of(&resend, &[(contact.as_str(), None, false)]).await;
    let name = format!("Launch {}", random_hex(4));
    let options = CreateBroadcastOptions::new(&segment_id, &from, "Hello {{{FIRST_NAME|there}}}")
        .with_html("<p>Hi {{{FIRST_NAME|there}}}</p>")
        .with_text("Hi")
        .with_name(&name)
        .with_reply("reply@example.test");
    let id = create(&resend, options).await;
    assert!(is_uuid(&id), "{id}");
    let path = format!("/broadcasts/{id}");

    let got = get(&resend, &id).await;
    assert_eq!(got.id.to_string(), id);
    assert_eq!(got.name, name);
    assert_eq!(got.audience_id.to_string(), segment_id);
    assert_eq!(got.status, "draft");
    assert_now(&got.created_at);
    assert_eq!((got.scheduled_at, got.sent_at, got.preview_text), (None, None, None));
    assert_eq!(got.from.as_deref(), Some(from.as_str()));
    assert_eq!(got.subject.as_deref(), Some("Hello {{{FIRST_NAME|there}}}"));
    assert_eq!(got.reply_to, Some(vec!["reply@example.test".to_owned()]));
    assert_eq!(got.html.as_deref(), Some("<p>Hi {{{FIRST_NAME|there}}}</p>"));
    assert_eq!(got.text.as_deref(), Some("Hi"));
    let wire = raw_get(&path).await;
    assert_eq!(wire["object"], "broadcast");
    assert_eq!(wire["segment_id"], segment_id.as_str());
    assert_eq!(wire["topic_id"], Value::Null);
    assert_eq!(wire["progress"], draft_progress());

    // The SDK ignores the status code: 201, raw; `preview_text`, which resend-rs cannot
    // send, decodes.
    let body =
        json!({ "segment_id": segment_id, "from": from, "subject": "Wire", "text": "Wire", "preview_text": "Soon" });
    let on_wire = raw(Method::POST, "/broadcasts", Some(body)).await;
    assert_eq!(on_wire.status, 201, "{}", on_wire.json);
    let wire_id = on_wire.json["id"].as_str().expect("an id").to_owned();
    assert_eq!(on_wire.json, json!({ "object": "broadcast", "id": wire_id }));
    let other = get(&resend, &wire_id).await;
    assert_eq!(
        (other.name.as_str(), other.preview_text.as_deref(), other.html),
        ("Wire", Some("Soon"), None)
    );

    let renamed = format!("{name} v2");
    let changes = UpdateBroadcastOptions::new()
        .with_name(&renamed)
        .with_subject("Updated")
        .with_html("<p>New</p>")
        .with_reply_multiple(&["a@example.test".to_owned(), "b@example.test".to_owned()]);
    let updated = broadcasts
        .update(&id, changes)
        .await
        .expect("broadcasts.update decodes");
    assert_eq!(updated.id.to_string(), id);
    let edited = get(&resend, &id).await;
    assert_eq!(edited.name, renamed);
    assert_eq!(edited.subject.as_deref(), Some("Updated"));
    assert_eq!(edited.html.as_deref(), Some("<p>New</p>"));
    assert_eq!(edited.text.as_deref(), Some("Hi"));
    assert_eq!(
        edited.reply_to,
        Some(vec!["a@example.test".to_owned(), "b@example.test".to_owned()])
    );

    let item = listed(&resend, &id).await;
    assert_eq!((item.name.as_str(), item.status.as_str()), (renamed.as_str(), "draft"));
    assert_eq!(item.audience_id.to_string(), segment_id);
    assert_eq!(item.created_at, edited.created_at);
    assert_eq!(item.from, None, "a list item has no content");
    let one = broadcasts.list(ListOptions::default().with_limit(1)).await;
    let one = one.expect("broadcasts.list decodes");
    assert_eq!((one.len(), one.has_more), (1, true));
    assert!(delete(&resend, &wire_id).await);

    // Scheduled: Resend's `queued`, herald's `scheduled`; no longer a draft to change.
    let options = SendBroadcastOptions::new(&id).with_scheduled_at("in 1 hour");
    let sent = broadcasts.send(options).await.expect("broadcasts.send decodes");
    assert_eq!(sent.id.to_string(), id);
    let scheduled = get(&resend, &id).await;
    assert_eq!(scheduled.status, "queued");
    let ahead = instant(scheduled.scheduled_at.as_deref().expect("a scheduled_at")) - Utc::now();
    assert!(
        ahead > TimeDelta::minutes(59) && ahead < TimeDelta::minutes(61),
        "{ahead}"
    );
    assert_eq!(raw_get(&path).await["progress"]["status"], "scheduled");
    assert_eq!(listed(&resend, &id).await.status, "queued");
    let late = UpdateBroadcastOptions::new().with_name("Late");
    assert_resend_error(broadcasts.update(&id, late).await, 422, "validation_error");
    assert_resend_error(broadcasts.delete(&id).await, 422, "validation_error");

    // Canceled before its time: nothing was sent, so Resend's `status` reads `draft` again.
    let canceled = broadcasts.cancel(&id).await.expect("broadcasts.cancel decodes");
    assert_eq!(canceled.id.to_string(), id);
    assert_eq!(get(&resend, &id).await.status, "draft");
    let wire = raw_get(&path).await;
    assert_eq!(
        (&wire["progress"]["status"], &wire["progress"]["canceled"]),
        (&json!("canceled"), &json!(0))
    );
    assert_resend_error(broadcasts.cancel(&id).await, 422, "validation_error");
    let again = SendBroadcastOptions::new(&id);
    assert_resend_error(broadcasts.send(again).await, 422, "validation_error");

    let copy = broadcasts.duplicate(&id).await.expect("broadcasts.duplicate decodes");
    assert_ne!(copy.id.to_string(), id);
    let duplicate = get(&resend, &copy.id).await;
    assert_eq!(duplicate.name, format!("{renamed} (copy)"));
    assert_eq!((duplicate.status.as_str(), duplicate.scheduled_at), ("draft", None));
    assert_eq!((duplicate.from, duplicate.subject), (edited.from, edited.subject));
    assert_eq!((duplicate.html, duplicate.text), (edited.html, edited.text));
    assert_eq!(duplicate.reply_to, edited.reply_to);
    assert!(delete(&resend, &copy.id).await);
    assert_resend_error(broadcasts.get(&copy.id).await, 404, "not_found");
    assert_resend_error(broadcasts.get(&random_uuid()).await, 404, "not_found");
    assert_resend_error(broadcasts.get("not-a-broadcast").await, 422, "invalid_parameter");
}

#[tokio::test]
async fn send_reaches_the_subscribed_contacts_personalised_and_recipients_decode() {
    let resend = client();
    let from = sender().await;
    let (ann, bo, cy) = (unique_address("ann"), unique_address("bo"), unique_address("cy"));
    let people = [
        (ann.as_str(), Some("Ann"), false),
        (bo.as_str(), None, false),
        (cy.as_str(), Some("Cy"), true),
    ];
    let (segment_id, ids) = segment_of(&resend, &people).await;
    let options = CreateBroadcastOptions::new(&segment_id, &from, "Hi {{{FIRST_NAME|there}}}")
        .with_html("<p>Hi {{{contact.first_name|friend}}}</p>")
        .with_send(true);
    let id = create(&resend, options).await;

    let mut progress = finished(&id).await["progress"].clone();
    assert_now(progress["finished_at"].take().as_str().expect("a finished_at"));
    let expected = json!({
        "status": "sent", "total": 3, "sent": 2, "unsubscribed": 1, "suppressed": 0, "failed": 0, "canceled": 0,
        "finished_at": null,
    });
    assert_eq!(progress, expected);
    let got = get(&resend, &id).await;
    assert_eq!(got.status, "sent");
    assert_now(got.sent_at.as_deref().expect("a sent_at"));

    let sent = recipients(&resend, &id, ListRecipientsOptions::new(Sent)).await;
    assert!(!sent.has_more);
    let mut found: Vec<(String, Option<String>)> = sent
        .data
        .iter()
        .map(|r| (r.email.clone(), r.contact_id.as_ref().map(|c| c.to_string())))
        .collect();
    found.sort();
    let mut wanted = vec![(ann.clone(), Some(ids[0].clone())), (bo.clone(), Some(ids[1].clone()))];
    wanted.sort();
    assert_eq!(found, wanted);
    for recipient in &sent.data {
        assert_eq!(Some(recipient.id.as_str()), recipient.contact_id.as_deref());
        assert!(recipient.count.is_none() && recipient.bounce_type.is_none() && recipient.clicked_links.is_none());
    }
    // One ordinary email per contact, merge tags filled in: read raw (`email_id`).
    let listed_raw = raw_get(&format!("/broadcasts/{id}/recipients?type=sent")).await;
    for recipient in listed_raw["data"].as_array().expect("a list") {
        let email_id = recipient["email_id"].as_str().expect("an email_id");
        let record = raw_get(&format!("/emails/{email_id}")).await;
        let (subject, html) = if recipient["email"] == ann.as_str() {
            ("Hi Ann", "<p>Hi Ann</p>")
        } else {
            ("Hi there", "<p>Hi friend</p>")
        };
        assert_eq!((&record["subject"], &record["html"]), (&json!(subject), &json!(html)));
        assert_eq!(record["tags"], json!([{ "name": "broadcast_id", "value": id }]));
        assert_eq!(recipient["last_event"], "sent");
    }

    let skipped = recipients(&resend, &id, ListRecipientsOptions::new(Unsubscribed)).await;
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        (skipped[0].email.as_str(), skipped[0].contact_id.as_deref()),
        (cy.as_str(), Some(ids[2].as_str()))
    );
    let only = recipients(&resend, &id, ListRecipientsOptions::new(Sent).with_email(&bo)).await;
    assert_eq!(
        only.data.iter().map(|r| r.email.as_str()).collect::<Vec<_>>(),
        [bo.as_str()]
    );
    let first = recipients(&resend, &id, ListRecipientsOptions::new(Sent).with_limit(1)).await;
    assert_eq!((first.len(), first.has_more), (1, true));
    let options = ListRecipientsOptions::new(Sent).with_limit(1).list_after(&first[0].id);
    let rest = recipients(&resend, &id, options).await;
    assert_eq!((rest.len(), rest.has_more), (1, false));
    assert_ne!(rest[0].email, first[0].email);
    let links = resend
        .broadcasts
        .clicked_links(&id, ListOptions::default())
        .await
        .expect("broadcasts.clicked_links decodes");
    assert!(links.is_empty() && !links.has_more);
    assert_resend_error(resend.broadcasts.cancel(&id).await, 422, "validation_error");
    assert_resend_error(resend.broadcasts.delete(&id).await, 422, "validation_error");
}

/// A draft to `segment` from `from` with a plain body.
fn draft(segment: &str, from: &str) -> CreateBroadcastOptions {
    CreateBroadcastOptions::new(segment, from, "Hello").with_html("<p>Hello</p>")
}

#[tokio::test]
async fn refusals_decode_as_resend_errors() {
    let resend = client();
    let broadcasts = &resend.broadcasts;
    let from = sender().await;
    let contact = unique_address("refusals");
    let (segment, _) = segment_of(&resend, &[(contact.as_str(), None, false)]).await;
    let empty = resend.segments.create(&unique_name("empty")).await;
    let empty = empty.expect("segments.create decodes").id;

    refused(broadcasts.create(draft(&random_uuid(), &from)).await, "segment");
    let unverified = format!("news@{}", unique_domain("unverified"));
    refused(broadcasts.create(draft(&segment, &unverified)).await, "not verified");
    let tag = format!("{}company_{}{}", "{{{", random_hex(4), "}}}");
    let options = draft(&segment, &from).with_html(&format!("<p>Hi {tag}</p>"));
    refused(broadcasts.create(options).await, &tag);
    let fallback = tag.replace("}}}", "|friend}}}");
    let _ = create(
        &resend,
        draft(&segment, &from).with_html(&format!("<p>Hi {fallback}</p>")),
    )
    .await;
    refused(
        broadcasts.create(draft(&empty, &from).with_send(true)).await,
        "no contacts",
    );
    let waiting = create(&resend, draft(&empty, &from)).await;
    refused(
        broadcasts.send(SendBroadcastOptions::new(&waiting)).await,
        "no contacts",
    );
    let options = draft(&segment, &from).with_scheduled_at("in 1 hour");
    refused(broadcasts.create(options).await, "scheduled_at");
    let changes = UpdateBroadcastOptions::new().with_from(&unverified);
    refused(broadcasts.update(&waiting, changes).await, "not verified");
    let changes = UpdateBroadcastOptions::new().with_text(&format!("Hi {tag}"));
    refused(broadcasts.update(&waiting, changes).await, &tag);

    let bodiless = CreateBroadcastOptions::new(&segment, &from, "Hello");
    let message = error_message(broadcasts.create(bodiless).await, 422, "missing_required_field");
    assert!(message.contains("html"), "{message}");
    let subjectless = CreateBroadcastOptions::new(&segment, &from, "").with_text("Hi");
    let message = error_message(broadcasts.create(subjectless).await, 422, "missing_required_field");
    assert!(message.contains("subject"), "{message}");
    assert_resend_error(broadcasts.cancel(&waiting).await, 422, "validation_error");
    let options = ListRecipientsOptions::new(Sent);
    assert_resend_error(broadcasts.recipients(&random_uuid(), options).await, 404, "not_found");
}
