//! API keys through the official Rust SDK (crates.io `resend-rs`): `api_keys.create / list
//! / update / delete`, and clients made with the tokens they hand out. Listing runs in a
//! team of its own, so the list holds only this test's keys.

use herald_compat_rust::{
    assert_recent, assert_resend_error, client, client_with_key, is_uuid, parse_timestamp, sending_domain, team_client,
    unique_name,
};
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{CreateApiKeyOptions, CreateEmailBaseOptions, DomainId, UpdateApiKeyOptions};

#[tokio::test]
async fn create_returns_a_token_that_works_at_once_and_delete_revokes_it() {
    let resend = client();
    let created = resend
        .api_keys
        .create(CreateApiKeyOptions::new(&unique_name("create")).with_full_access())
        .await
        .expect("api_keys.create decodes");
    assert!(is_uuid(&created.id), "{}", created.id);
    assert!(created.token.starts_with("re_"), "{}", created.token);
    assert!(created.token.len() >= 20, "a token long enough to be secret");

    let with_token = client_with_key(&created.token);
    let list = with_token
        .api_keys
        .list(ListOptions::default())
        .await
        .expect("the new token lists API keys");
    assert!(list.data.iter().any(|k| k.id == created.id));

    resend
        .api_keys
        .delete(&created.id)
        .await
        .expect("api_keys.delete succeeds");
    assert_resend_error(
        with_token.api_keys.list(ListOptions::default()).await,
        403,
        "invalid_api_key",
    );
    assert_resend_error(resend.api_keys.delete(&created.id).await, 404, "not_found");
    let list = resend
        .api_keys
        .list(ListOptions::default())
        .await
        .expect("api_keys.list decodes");
    assert!(!list.data.iter().any(|k| k.id == created.id));
}

#[tokio::test]
async fn list_shows_the_keys_newest_first_and_update_renames() {
    let team = team_client("api-keys-list").await;
    let name = unique_name("list");
    let created = team
        .api_keys
        .create(CreateApiKeyOptions::new(&name))
        .await
        .expect("api_keys.create decodes");

    let list = team
        .api_keys
        .list(ListOptions::default())
        .await
        .expect("api_keys.list decodes");
    // The team's first key (used by this client) and the new one, newest first.
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(!list.has_more);
    let key = &list[0];
    assert_eq!(key.id, created.id);
    assert_eq!(key.name, name);
    assert_recent(&key.created_at);
    assert_eq!(key.last_used_at, None, "the new key was never used");
    let first = &list[1];
    assert_eq!(first.name, "Default");
    // Usage is written without waiting, so it may not show yet; when it does, it is a
    // Resend timestamp.
    if let Some(used) = first.last_used_at.as_deref() {
        let _ = parse_timestamp(used);
    }

    let page = team
        .api_keys
        .list(ListOptions::default().with_limit(1))
        .await
        .expect("a page of one decodes");
    assert_eq!(page.len(), 1);
    assert!(page.has_more);
    assert_eq!(page[0].id, created.id);

    let renamed = unique_name("renamed");
    let updated = team
        .api_keys
        .update(&created.id, UpdateApiKeyOptions::new(&renamed))
        .await
        .expect("api_keys.update decodes");
    assert_eq!(updated.id, created.id);
    let list = team
        .api_keys
        .list(ListOptions::default())
        .await
        .expect("api_keys.list decodes");
    assert_eq!(list[0].name, renamed);
}

#[tokio::test]
async fn a_domain_sending_key_sends_but_cannot_manage_keys() {
    let resend = client();
    let (domain, domain_id) = sending_domain("api-keys-sending").await;
    let created = resend
        .api_keys
        .create(CreateApiKeyOptions::new(&unique_name("sending")).with_domain_access(&DomainId::new(&domain_id)))
        .await
        .expect("api_keys.create with domain access decodes");
    let sender = client_with_key(&created.token);
    let email = CreateEmailBaseOptions::new(
        format!("hello@{domain}"),
        ["someone@recipient.test"],
        "sent with a sending key",
    )
    .with_text("hello");
    let sent = sender.emails.send(email).await.expect("a sending key sends");
    assert!(is_uuid(&sent.id));
    assert_resend_error(sender.emails.get(&sent.id).await, 401, "restricted_api_key");
    assert_resend_error(
        sender.api_keys.list(ListOptions::default()).await,
        401,
        "restricted_api_key",
    );
    resend
        .api_keys
        .delete(&created.id)
        .await
        .expect("api_keys.delete succeeds");
}
