//! Emails through the official Rust SDK (crates.io `resend-rs`): `emails.send / get / list
//! / update / cancel` and `batch.send` (strict and permissive, with `Idempotency-Key`).
//! Each test sends from a domain of its own, created and marked verified raw (see
//! `sending_domain`), so that these tests depend on herald's email API only.

use std::time::Duration;

use herald_compat_rust::{
    assert_close, assert_recent, assert_resend_error, client, is_uuid, parse_timestamp, random_hex, rfc3339_from_now,
    sending_domain,
};
use resend_rs::Resend;
use resend_rs::idempotent::IdempotentTrait;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    BatchValidation, CreateAttachment, CreateEmailBaseOptions, EmailEvent, Tag, UpdateEmailOptions,
};

const HOUR: Duration = Duration::from_secs(3600);

/// A subject no other test uses, to find an email again in lists.
fn subject(label: &str) -> String {
    format!("rs {label} {}", random_hex(6))
}

/// A minimal valid email from `domain` (its subject is unique to it).
fn email(domain: &str, label: &str) -> CreateEmailBaseOptions {
    email_with_subject(domain, label).0
}

/// A minimal valid email from `domain`, and its subject.
fn email_with_subject(domain: &str, label: &str) -> (CreateEmailBaseOptions, String) {
    let subject = subject(label);
    let options = CreateEmailBaseOptions::new(
        format!("Compat Sender <hello@{domain}>"),
        ["someone@recipient.test"],
        subject.as_str(),
    )
    .with_text(&format!("Body of {label}"));
    (options, subject)
}

/// The ids of the emails with subject `wanted` among the newest 100 of the team.
async fn ids_with_subject(resend: &Resend, wanted: &str) -> Vec<String> {
    let list = resend
        .emails
        .list(ListOptions::default().with_limit(100))
        .await
        .expect("emails.list decodes");
    list.data
        .into_iter()
        .filter(|e| e.subject == wanted)
        .map(|e| e.id.to_string())
        .collect()
}

#[tokio::test]
async fn send_with_every_field_and_get_returns_them() {
    let resend = client();
    let (domain, _) = sending_domain("emails-every-field").await;
    let from = format!("Compat Sender <hello@{domain}>");
    let subject = subject("every field");
    let options = CreateEmailBaseOptions::new(
        from.as_str(),
        ["alice@recipient.test", "bob@recipient.test"],
        subject.as_str(),
    )
    .with_cc("carol@recipient.test")
    .with_bcc("dave@recipient.test")
    .with_bcc("erin@recipient.test")
    .with_reply("replies@recipient.test")
    .with_html("<p>Hello <strong>there</strong></p>")
    .with_text("Hello there")
    .with_header("X-Entity-Ref-ID", "ref-123")
    .with_tag(Tag::new("category", "welcome"))
    .with_tag(Tag::new("user_id", "u-42"));
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    assert!(is_uuid(&sent.id), "{}", sent.id);

    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.id, sent.id);
    assert_eq!(got.from, from);
    assert_eq!(got.to, ["alice@recipient.test", "bob@recipient.test"]);
    assert_eq!(got.cc, ["carol@recipient.test"]);
    assert_eq!(got.bcc, ["dave@recipient.test", "erin@recipient.test"]);
    assert_eq!(
        got.reply_to.as_deref(),
        Some(&["replies@recipient.test".to_owned()][..])
    );
    assert_eq!(got.subject, subject);
    assert_eq!(got.html.as_deref(), Some("<p>Hello <strong>there</strong></p>"));
    assert_eq!(got.text.as_deref(), Some("Hello there"));
    assert_eq!(got.last_event, EmailEvent::Sent);
    assert_eq!(got.scheduled_at, None);
    assert_eq!(got.message_id, Some(format!("<{}@mail.herald.test>", sent.id)));
    assert_recent(&got.created_at);
}

#[tokio::test]
async fn absent_cc_bcc_reply_to_and_text_read_as_empty() {
    let resend = client();
    let (domain, _) = sending_domain("emails-minimal").await;
    let options = CreateEmailBaseOptions::new(format!("hello@{domain}"), ["single@recipient.test"], subject("minimal"))
        .with_html("<p>only html</p>");
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.to, ["single@recipient.test"]);
    assert!(got.cc.is_empty(), "{:?}", got.cc);
    assert!(got.bcc.is_empty(), "{:?}", got.bcc);
    assert_eq!(got.reply_to, None);
    assert_eq!(got.html.as_deref(), Some("<p>only html</p>"));
    assert_eq!(got.text, None);
}

#[tokio::test]
async fn attachments_sent_as_byte_arrays_are_accepted() {
    // resend-rs sends attachment content as a JSON array of byte values, not base64.
    let resend = client();
    let (domain, _) = sending_domain("emails-attachments").await;
    let png: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d];
    let options = email(&domain, "attachments")
        .with_html("<p>Logo: <img src=\"cid:logo-1\" alt=\"logo\"></p>")
        .with_attachment(CreateAttachment::from_content(b"hello from resend-rs\n".to_vec()).with_filename("hello.txt"))
        .with_attachment(
            CreateAttachment::from_content(vec![0, 1, 2, 253, 254, 255])
                .with_filename("bytes.bin")
                .with_content_type("application/octet-stream"),
        )
        .with_attachment(
            CreateAttachment::from_content(png)
                .with_filename("logo.png")
                .with_content_type("image/png")
                .with_content_id("logo-1"),
        );
    let sent = resend
        .emails
        .send(options)
        .await
        .expect("emails.send with attachments decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.last_event, EmailEvent::Sent);
    assert_eq!(
        got.html.as_deref(),
        Some("<p>Logo: <img src=\"cid:logo-1\" alt=\"logo\"></p>")
    );
}

#[tokio::test]
async fn the_same_idempotency_key_and_payload_send_once() {
    let resend = client();
    let (domain, _) = sending_domain("emails-idempotent").await;
    let key = format!("rs-{}", random_hex(8));
    let (payload, subject) = email_with_subject(&domain, "idempotent");
    let first = resend
        .emails
        .send(payload.clone().with_idempotency_key(&key))
        .await
        .expect("emails.send with an Idempotency-Key decodes");
    let second = resend
        .emails
        .send(payload.with_idempotency_key(&key))
        .await
        .expect("the replay decodes");
    assert_eq!(second.id, first.id, "the replay answers the first id");
    assert_eq!(ids_with_subject(&resend, &subject).await, [first.id.to_string()]);

    let other = email(&domain, "idempotent other").with_idempotency_key(&key);
    assert_resend_error(resend.emails.send(other).await, 409, "invalid_idempotent_request");
}

#[tokio::test]
async fn batch_send_sends_every_email_and_answers_their_ids_in_order() {
    let resend = client();
    let (domain, _) = sending_domain("emails-batch").await;
    let (first, first_subject) = email_with_subject(&domain, "batch 0");
    let second_subject = subject("batch 1");
    let second = CreateEmailBaseOptions::new(
        format!("hello@{domain}"),
        ["x@recipient.test", "y@recipient.test"],
        second_subject.as_str(),
    )
    .with_text("two recipients");
    let (third, third_subject) = email_with_subject(&domain, "batch 2");
    let sent = resend
        .batch
        .send(vec![first, second, third])
        .await
        .expect("batch.send decodes");
    assert_eq!(sent.len(), 3);
    for (response, wanted) in sent.iter().zip([first_subject, second_subject, third_subject]) {
        assert!(is_uuid(&response.id), "{}", response.id);
        let got = resend.emails.get(&response.id).await.expect("emails.get decodes");
        assert_eq!(got.subject, wanted);
        assert_eq!(got.last_event, EmailEvent::Sent);
    }
    let second = resend.emails.get(&sent[1].id).await.expect("emails.get decodes");
    assert_eq!(second.to, ["x@recipient.test", "y@recipient.test"]);
}

#[tokio::test]
async fn batch_send_strict_refuses_and_permissive_lists_the_errors() {
    let resend = client();
    let (domain, _) = sending_domain("emails-batch-modes").await;
    let bad = CreateEmailBaseOptions::new(format!("hello@{domain}"), ["not-an-address"], "bad")
        .with_text("invalid recipient");
    let strict = vec![email(&domain, "strict 0"), bad.clone()];
    assert_resend_error(resend.batch.send(strict).await, 422, "validation_error");

    let (first, first_subject) = email_with_subject(&domain, "permissive 0");
    let (third, third_subject) = email_with_subject(&domain, "permissive 2");
    let permissive = vec![first, bad, third];
    let result = resend
        .batch
        .send_with_batch_validation(permissive, BatchValidation::Permissive)
        .await
        .expect("a permissive batch decodes");
    assert_eq!(result.data.len(), 2);
    assert_eq!(result.errors.len(), 1, "{:?}", result.errors);
    assert_eq!(result.errors[0].index, 1);
    assert!(!result.errors[0].message.is_empty());
    for (response, wanted) in result.data.iter().zip([first_subject, third_subject]) {
        let got = resend.emails.get(&response.id).await.expect("emails.get decodes");
        assert_eq!(got.subject, wanted);
    }

    let key = format!("rs-batch-{}", random_hex(8));
    let (idem, idem_subject) = email_with_subject(&domain, "batch idem 0");
    let once = vec![idem, email(&domain, "batch idem 1")];
    let first = resend
        .batch
        .send(once.clone().with_idempotency_key(&key))
        .await
        .expect("a batch with an Idempotency-Key decodes");
    let again = resend
        .batch
        .send(once.with_idempotency_key(&key))
        .await
        .expect("the replayed batch decodes");
    let ids = |r: &[resend_rs::types::CreateEmailResponse]| r.iter().map(|e| e.id.to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&again), ids(&first));
    assert_eq!(ids_with_subject(&resend, &idem_subject).await.len(), 1, "sent once");
}

#[tokio::test]
async fn a_scheduled_email_can_be_rescheduled_and_canceled() {
    let resend = client();
    let (domain, _) = sending_domain("emails-scheduled").await;
    let (at, at_text) = rfc3339_from_now(HOUR);
    let sent = resend
        .emails
        .send(email(&domain, "scheduled").with_scheduled_at(&at_text))
        .await
        .expect("a scheduled send decodes");
    let scheduled = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(scheduled.last_event, EmailEvent::Scheduled);
    let when = scheduled.scheduled_at.as_deref().expect("scheduled_at is set");
    assert_close(parse_timestamp(when), at);

    let (target, target_text) = rfc3339_from_now(2 * HOUR);
    let updated = resend
        .emails
        .update(&sent.id, UpdateEmailOptions::new().with_scheduled_at(&target_text))
        .await
        .expect("emails.update decodes");
    assert_eq!(updated.id, sent.id);
    let moved = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(moved.last_event, EmailEvent::Scheduled);
    let when = moved.scheduled_at.as_deref().expect("scheduled_at is still set");
    assert_close(parse_timestamp(when), target);

    let canceled = resend.emails.cancel(&sent.id).await.expect("emails.cancel decodes");
    assert_eq!(canceled.id, sent.id);
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.last_event, EmailEvent::Canceled);

    assert_resend_error(resend.emails.cancel(&sent.id).await, 422, "validation_error");
    let later = UpdateEmailOptions::new().with_scheduled_at(&target_text);
    assert_resend_error(resend.emails.update(&sent.id, later).await, 422, "validation_error");
}

#[tokio::test]
async fn natural_language_scheduled_at_schedules_the_email() {
    let resend = client();
    let (domain, _) = sending_domain("emails-natural").await;
    let sent = resend
        .emails
        .send(email(&domain, "natural language").with_scheduled_at("in 1 hour"))
        .await
        .expect("a send scheduled in natural language decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.last_event, EmailEvent::Scheduled);
    let when = parse_timestamp(got.scheduled_at.as_deref().expect("scheduled_at is set"));
    let from_now = when - chrono::Utc::now();
    assert!(
        (from_now - chrono::TimeDelta::hours(1)).abs() < chrono::TimeDelta::minutes(1),
        "{when} is in an hour"
    );
    let _ = resend.emails.cancel(&sent.id).await.expect("emails.cancel decodes");
}

#[tokio::test]
async fn list_returns_new_emails_newest_first_without_bodies() {
    let resend = client();
    let (domain, _) = sending_domain("emails-list").await;
    let first = resend
        .emails
        .send(email(&domain, "list a").with_html("<p>a</p>"))
        .await
        .expect("emails.send decodes");
    let second = resend
        .emails
        .send(
            email(&domain, "list b")
                .with_html("<p>b</p>")
                .with_cc("cc@recipient.test"),
        )
        .await
        .expect("emails.send decodes");

    let list = resend
        .emails
        .list(ListOptions::default())
        .await
        .expect("emails.list decodes");
    assert!(list.len() <= 20, "the default page holds at most 20");
    let position = |id: &str| list.data.iter().position(|e| *e.id == *id);
    let a = position(&first.id).expect("the first new email is listed");
    let b = position(&second.id).expect("the second new email is listed");
    assert!(b < a, "the newer email comes first");

    let item = &list[b];
    let full = resend.emails.get(&second.id).await.expect("emails.get decodes");
    assert_eq!(item.from, full.from);
    assert_eq!(item.to, full.to);
    assert_eq!(item.subject, full.subject);
    assert_eq!(item.cc, ["cc@recipient.test"]);
    assert_eq!(item.bcc, full.bcc);
    assert_eq!(item.reply_to, full.reply_to);
    assert_eq!(item.created_at, full.created_at);
    assert_eq!(item.last_event, full.last_event);
    assert_eq!(item.scheduled_at, full.scheduled_at);
    assert_eq!(item.message_id, full.message_id);
    assert_eq!(item.html, None, "list items carry no html");
    assert_eq!(item.text, None, "list items carry no text");

    let page = resend
        .emails
        .list(ListOptions::default().with_limit(1))
        .await
        .expect("a page of one decodes");
    assert_eq!(page.len(), 1);
    assert!(page.has_more);
    let next = resend
        .emails
        .list(ListOptions::default().with_limit(1).list_after(&page[0].id))
        .await
        .expect("the next page decodes");
    assert_eq!(next.len(), 1);
    assert_ne!(next[0].id, page[0].id);
}

#[tokio::test]
async fn unknown_ids_and_unverified_domains_get_sdk_errors() {
    let resend = client();
    let id = "00000000-0000-4000-8000-000000000000";
    assert_resend_error(resend.emails.get(id).await, 404, "not_found");
    assert_resend_error(resend.emails.cancel(id).await, 404, "not_found");

    let unknown = herald_compat_rust::unique_domain("unknown");
    let from_unknown = CreateEmailBaseOptions::new(
        format!("a@{unknown}"),
        ["someone@recipient.test"],
        subject("unknown domain"),
    )
    .with_text("x");
    assert_resend_error(resend.emails.send(from_unknown).await, 403, "validation_error");
}
