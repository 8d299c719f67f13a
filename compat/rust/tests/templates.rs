//! Templates through the official Rust SDK (crates.io `resend-rs`): `templates.create / get
//! / list / update / publish / duplicate / delete`, and `emails.send` and `batch.send` with
//! `with_template(EmailTemplate)`. resend-rs decodes a template's `status` into an enum
//! without a catch-all (`TemplateEvent::Draft | Published`) and its variables' `type` into
//! `VariableType::String | Number`; it does not decode `object`, `current_version_id`,
//! `has_unpublished_versions`, the variables' ids and timestamps, or the email's
//! `template`, which are read raw. It always sends `fallback_value` (`null` without one),
//! an email's `from` and `subject` (empty strings when the template is to give them) and a
//! template send's `variables` (`null` without any), and `UpdateTemplateOptions` always
//! sends `name` and `html`.
//!
//! The template management tests run in teams of their own, so that the lists show only
//! their own templates; the send tests run in the operator's team, the only one whose
//! domains the suite can mark verified without DNS.

use herald_compat_rust::{
    assert_recent, assert_resend_error, client, is_uuid, random_hex, random_uuid, raw_get, raw_with_key,
    sending_domain, team_key_and_client,
};
use reqwest::Method;
use resend_rs::list_opts::ListOptions;
use resend_rs::types::{
    BatchValidation, CreateEmailBaseOptions, CreateTemplateOptions, EmailEvent, EmailTemplate, TemplateEvent,
    UpdateTemplateOptions, Variable, VariableType,
};
use resend_rs::{Error, Resend};
use serde_json::{Value, json};

const RECIPIENT: &str = "someone@recipient.test";

/// An alias no other test uses.
fn unique_alias(label: &str) -> String {
    format!("rs-{label}-{}", random_hex(4))
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

/// `GET {path}` raw with `key`, asserting 200: for the fields resend-rs does not decode.
async fn raw_get_with_key(key: &str, path: &str) -> Value {
    let response = raw_with_key(key, Method::GET, path, None).await;
    assert_eq!(response.status, 200, "GET {path}: {}", response.json);
    response.json
}

/// The ids of a page of templates, as strings.
fn ids(templates: &[resend_rs::types::Template]) -> Vec<String> {
    templates.iter().map(|t| t.id.to_string()).collect()
}

/// A published template in the operator's team: its id, alias and published version.
async fn published_template(resend: &Resend, label: &str, options: CreateTemplateOptions) -> (String, String) {
    let created = resend
        .templates
        .create(options)
        .await
        .expect("templates.create decodes");
    let published = resend
        .templates
        .publish(&created.id)
        .await
        .expect("templates.publish decodes");
    assert_eq!(published.id, created.id);
    let got = raw_get(&format!("/templates/{}", created.id)).await;
    assert_eq!(got["status"], "published", "{label}: {got}");
    let version = got["current_version_id"].as_str().expect("a version id").to_owned();
    (created.id.to_string(), version)
}

#[tokio::test]
async fn create_get_list_update_publish_duplicate_and_delete() {
    let (key, resend) = team_key_and_client("templates").await;
    let on_wire = raw_with_key(
        &key,
        Method::POST,
        "/templates",
        Some(json!({ "name": "Wire", "html": "<p>wire</p>" })),
    )
    .await;
    assert_eq!(on_wire.status, 201, "{}", on_wire.json);
    let wire_id = on_wire.json["id"].as_str().expect("an id").to_owned();
    assert_eq!(on_wire.json, json!({ "object": "template", "id": wire_id }));

    let alias = unique_alias("welcome");
    let variables = vec![
        Variable::new("NAME", VariableType::String).with_fallback("there"),
        Variable::new("SEATS", VariableType::Number).with_fallback(1),
        Variable::new("PLAN", VariableType::String),
    ];
    let options = CreateTemplateOptions::new("Welcome", "<p>Hi {{{NAME}}}, {{{SEATS}}} seats on {{{PLAN}}}</p>")
        .with_alias(&alias)
        .with_from("Acme <hello@acme.test>")
        .with_subject("Welcome, {{{NAME}}}!")
        .with_reply_to("support@acme.test")
        .with_reply_to("sales@acme.test")
        .with_text("Hi {{{NAME}}}")
        .with_variables(&variables);
    let created = resend
        .templates
        .create(options)
        .await
        .expect("templates.create decodes");
    assert!(is_uuid(&created.id), "{}", created.id);

    let got = resend.templates.get(&created.id).await.expect("templates.get decodes");
    assert_eq!(got.id, created.id);
    assert_eq!(got.name, "Welcome");
    assert_eq!(got.alias.as_deref(), Some(alias.as_str()));
    assert_eq!(got.from.as_deref(), Some("Acme <hello@acme.test>"));
    assert_eq!(got.subject.as_deref(), Some("Welcome, {{{NAME}}}!"));
    assert_eq!(
        got.reply_to,
        Some(vec!["support@acme.test".to_owned(), "sales@acme.test".to_owned()])
    );
    assert_eq!(
        got.html.as_deref(),
        Some("<p>Hi {{{NAME}}}, {{{SEATS}}} seats on {{{PLAN}}}</p>")
    );
    assert_eq!(got.text.as_deref(), Some("Hi {{{NAME}}}"));
    assert_eq!(got.status, TemplateEvent::Draft);
    assert_eq!(got.published_at, None);
    assert_eq!(
        got.variables, variables,
        "PLAN's `\"fallback_value\": null` reads back as none"
    );
    assert_recent(&got.created_at);
    assert_eq!(got.updated_at, got.created_at);
    assert_eq!(
        resend
            .templates
            .get(&alias)
            .await
            .expect("templates.get by alias decodes"),
        got
    );

    // What resend-rs leaves undecoded.
    let path = format!("/templates/{}", created.id);
    let wire = raw_get_with_key(&key, &path).await;
    assert_eq!(wire["object"], "template");
    assert_eq!(wire["has_unpublished_versions"], false);
    let first_version = wire["current_version_id"].as_str().expect("a version id").to_owned();
    assert!(is_uuid(&first_version), "{first_version}");
    for variable in wire["variables"].as_array().expect("variables") {
        assert!(is_uuid(variable["id"].as_str().expect("a variable id")), "{variable}");
        assert_recent(variable["created_at"].as_str().expect("created_at"));
        assert_eq!(variable["updated_at"], variable["created_at"]);
    }

    let listed = resend
        .templates
        .list(ListOptions::default())
        .await
        .expect("templates.list decodes");
    assert!(!listed.has_more);
    assert_eq!(
        ids(&listed.data),
        [created.id.to_string(), wire_id.clone()],
        "newest first"
    );
    let item = &listed.data[0];
    assert_eq!(
        (item.name.as_str(), item.alias.as_deref(), item.status),
        ("Welcome", Some(alias.as_str()), TemplateEvent::Draft)
    );
    assert_eq!((&item.created_at, &item.updated_at), (&got.created_at, &got.updated_at));
    assert_eq!(item.published_at, None);
    // A list item has no content.
    assert_eq!((item.html.as_deref(), item.from.as_deref()), (None, None));
    assert!(item.variables.is_empty());
    assert_eq!(listed.data[1].alias, None);
    let first = resend
        .templates
        .list(ListOptions::default().with_limit(1))
        .await
        .expect("a page decodes");
    assert!(first.has_more);
    assert_eq!(ids(&first.data), [created.id.to_string()]);
    let second = resend
        .templates
        .list(ListOptions::default().with_limit(1).list_after(&created.id))
        .await
        .expect("the next page decodes");
    assert!(!second.has_more);
    assert_eq!(ids(&second.data), [wire_id.clone()]);
    let back = resend
        .templates
        .list(ListOptions::default().with_limit(1).list_before(&wire_id))
        .await
        .expect("the previous page decodes");
    assert_eq!(ids(&back.data), [created.id.to_string()]);

    // The SDK always sends the name and the html; what it leaves out stays.
    let new_alias = unique_alias("renamed");
    let update = UpdateTemplateOptions::new("Welcome aboard", "<p>Hello {{{NAME}}}</p>").with_alias(&new_alias);
    let updated = resend
        .templates
        .update(&alias, update)
        .await
        .expect("templates.update decodes");
    assert_eq!(updated.id, created.id);
    let edited = resend.templates.get(&new_alias).await.expect("templates.get decodes");
    assert_eq!(edited.name, "Welcome aboard");
    assert_eq!(edited.html.as_deref(), Some("<p>Hello {{{NAME}}}</p>"));
    assert_eq!(edited.text, got.text);
    assert_eq!(edited.subject, got.subject);
    assert_eq!(edited.reply_to, got.reply_to);
    assert_eq!(edited.variables, got.variables);
    assert_eq!(edited.status, TemplateEvent::Draft);
    let wire = raw_get_with_key(&key, &path).await;
    assert_eq!(
        wire["current_version_id"],
        first_version.as_str(),
        "a draft is edited in place"
    );
    assert_resend_error(resend.templates.get(&alias).await, 404, "not_found");

    // Publish; then a content edit makes a draft, which the answers show.
    let published = resend
        .templates
        .publish(&new_alias)
        .await
        .expect("templates.publish decodes");
    assert_eq!(published.id, created.id);
    let live = resend.templates.get(&created.id).await.expect("templates.get decodes");
    assert_eq!(live.status, TemplateEvent::Published);
    let published_at = live.published_at.clone().expect("published_at once published");
    assert_recent(&published_at);
    let wire = raw_get_with_key(&key, &path).await;
    assert_eq!(wire["has_unpublished_versions"], false);
    assert_eq!(wire["current_version_id"], first_version.as_str());

    let update = UpdateTemplateOptions::new("Welcome aboard", "<p>Hello again {{{NAME}}}</p>");
    let _ = resend
        .templates
        .update(&created.id, update)
        .await
        .expect("templates.update decodes");
    let drafted = resend.templates.get(&created.id).await.expect("templates.get decodes");
    assert_eq!(
        drafted.status,
        TemplateEvent::Published,
        "a published template stays published"
    );
    assert_eq!(drafted.published_at.as_deref(), Some(published_at.as_str()));
    assert_eq!(drafted.html.as_deref(), Some("<p>Hello again {{{NAME}}}</p>"));
    assert_eq!(
        drafted.alias.as_deref(),
        Some(new_alias.as_str()),
        "an update without alias keeps it"
    );
    let wire = raw_get_with_key(&key, &path).await;
    assert_eq!(wire["has_unpublished_versions"], true);
    let draft_version = wire["current_version_id"].as_str().expect("a version id").to_owned();
    assert_ne!(draft_version, first_version);

    // Duplicate copies the current version into a new draft without an alias.
    let copy = resend
        .templates
        .duplicate(&new_alias)
        .await
        .expect("templates.duplicate decodes");
    assert!(is_uuid(&copy.id), "{}", copy.id);
    assert_ne!(copy.id, created.id);
    let duplicate = resend.templates.get(&copy.id).await.expect("templates.get decodes");
    assert_eq!(duplicate.name, "Welcome aboard (copy)");
    assert_eq!(duplicate.alias, None);
    assert_eq!(duplicate.status, TemplateEvent::Draft);
    assert_eq!(duplicate.published_at, None);
    assert_eq!(duplicate.html, drafted.html);
    assert_eq!(duplicate.variables, drafted.variables);

    let published = resend
        .templates
        .publish(&created.id)
        .await
        .expect("templates.publish decodes");
    assert_eq!(published.id, created.id);
    let wire = raw_get_with_key(&key, &path).await;
    assert_eq!(wire["has_unpublished_versions"], false);
    assert_eq!(wire["current_version_id"], draft_version.as_str());

    let listed = resend
        .templates
        .list(ListOptions::default())
        .await
        .expect("templates.list decodes");
    assert_eq!(
        ids(&listed.data),
        [copy.id.to_string(), created.id.to_string(), wire_id.clone()]
    );
    assert_eq!(listed.data[1].status, TemplateEvent::Published);
    assert_eq!(listed.data[0].status, TemplateEvent::Draft);

    // Delete, by alias and by id; the raw answer has `object` too.
    let deleted = resend
        .templates
        .delete(&new_alias)
        .await
        .expect("templates.delete decodes");
    assert_eq!(deleted.id, created.id);
    assert!(deleted.deleted);
    assert_resend_error(resend.templates.get(&created.id).await, 404, "not_found");
    assert_resend_error(resend.templates.delete(&created.id).await, 404, "not_found");
    let path = format!("/templates/{}", copy.id);
    let removed = raw_with_key(&key, Method::DELETE, &path, None).await;
    assert_eq!(removed.status, 200, "{}", removed.json);
    assert_eq!(
        removed.json,
        json!({ "object": "template", "id": copy.id.to_string(), "deleted": true })
    );
    let listed = resend
        .templates
        .list(ListOptions::default())
        .await
        .expect("templates.list decodes");
    assert_eq!(ids(&listed.data), [wire_id]);
}

#[tokio::test]
async fn refused_templates_and_unknown_ones_get_sdk_errors() {
    let (_, resend) = team_key_and_client("templates-refused").await;
    let message = error_message(
        resend
            .templates
            .create(CreateTemplateOptions::new("", "<p>x</p>"))
            .await,
        422,
        "missing_required_field",
    );
    assert_eq!(message, "Missing `name` field.");
    let message = error_message(
        resend.templates.create(CreateTemplateOptions::new("No html", "")).await,
        422,
        "missing_required_field",
    );
    assert_eq!(message, "Missing `html` field.");
    let message = error_message(
        resend
            .templates
            .create(CreateTemplateOptions::new("Unclosed", "<p>\n  Hi {{{NAME</p>"))
            .await,
        422,
        "validation_error",
    );
    assert_eq!(
        message,
        "Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6"
    );
    for reserved in ["FIRST_NAME", "EMAIL", "UNSUBSCRIBE_URL", "contact", "this"] {
        let options = CreateTemplateOptions::new("Reserved", "<p>x</p>")
            .with_variable(Variable::new(reserved, VariableType::String));
        let message = error_message(resend.templates.create(options).await, 422, "validation_error");
        assert_eq!(
            message,
            format!("Invalid `variables[0].key` field: {reserved} is reserved; herald fills it in")
        );
    }
    let many: Vec<Variable> = (0..51)
        .map(|i| Variable::new(format!("VAR_{i}"), VariableType::String))
        .collect();
    let options = CreateTemplateOptions::new("Too many", "<p>x</p>").with_variables(&many);
    let message = error_message(resend.templates.create(options).await, 422, "validation_error");
    assert_eq!(message, "Invalid `variables` field: at most 50 variables, got 51");
    let options = CreateTemplateOptions::new("Fifty", "<p>x</p>").with_variables(&many[..50]);
    let fifty = resend
        .templates
        .create(options)
        .await
        .expect("50 variables are allowed");
    let got = resend.templates.get(&fifty.id).await.expect("templates.get decodes");
    assert_eq!(got.variables.len(), 50);
    let options = CreateTemplateOptions::new("Typed", "<p>x</p>")
        .with_variable(Variable::new("SEATS", VariableType::Number).with_fallback("many"));
    let message = error_message(resend.templates.create(options).await, 422, "validation_error");
    assert!(
        message.starts_with("Invalid `variables[0].fallback_value` field: the variable is a number"),
        "{message}"
    );

    let alias = unique_alias("taken");
    let owner = resend
        .templates
        .create(CreateTemplateOptions::new("Owner", "<p>x</p>").with_alias(&alias))
        .await
        .expect("templates.create decodes");
    let shouted = alias.to_uppercase();
    let options = CreateTemplateOptions::new("Same", "<p>x</p>").with_alias(&shouted);
    let message = error_message(resend.templates.create(options).await, 409, "conflict");
    assert_eq!(message, format!("A template with the alias {shouted} already exists"));
    // UpdateTemplateOptions::default() sends an empty name and html, which (as the Go
    // SDK sends them too) leave both as they are.
    resend
        .templates
        .update(&owner.id, UpdateTemplateOptions::default())
        .await
        .expect("an empty update changes nothing");
    let unchanged = resend.templates.get(&owner.id).await.expect("templates.get decodes");
    assert_eq!(unchanged.name, "Owner");
    assert_eq!(unchanged.html.as_deref(), Some("<p>x</p>"));
    let listed = resend
        .templates
        .list(ListOptions::default())
        .await
        .expect("templates.list decodes");
    assert_eq!(
        ids(&listed.data),
        [owner.id.to_string(), fifty.id.to_string()],
        "nothing refused was made"
    );

    let unknown = random_uuid();
    assert_resend_error(resend.templates.get(&unknown).await, 404, "not_found");
    assert_resend_error(resend.templates.get("no-such-alias").await, 404, "not_found");
    assert_resend_error(resend.templates.publish(&unknown).await, 404, "not_found");
    assert_resend_error(resend.templates.duplicate(&unknown).await, 404, "not_found");
    assert_resend_error(resend.templates.delete(&unknown).await, 404, "not_found");
    let update = UpdateTemplateOptions::new("Nothing", "<p>x</p>");
    assert_resend_error(resend.templates.update(&unknown, update).await, 404, "not_found");
}

#[tokio::test]
async fn emails_send_with_a_template_renders_it_and_records_the_version() {
    let resend = client();
    let (domain, _) = sending_domain("templates-send").await;
    let alias = unique_alias("receipt");
    let options = CreateTemplateOptions::new(
        "Rs receipt",
        "<p title=\"{{{NAME}}}\">Hi {{{NAME}}}, you paid {{{PRICE}}}</p>",
    )
    .with_alias(&alias)
    .with_from(&format!("{{{{{{SHOP}}}}}} <shop@{domain}>"))
    .with_subject("Receipt for {{{NAME}}}")
    .with_text("Hi {{{NAME}}}, you paid {{{PRICE}}}")
    .with_variable(Variable::new("SHOP", VariableType::String).with_fallback("Compat Shop"))
    .with_variable(Variable::new("NAME", VariableType::String))
    .with_variable(Variable::new("PRICE", VariableType::Number));
    let (id, version) = published_template(&resend, "receipt", options).await;

    // resend-rs sends `from` and `subject` as given: empty, the template's are used.
    let template = EmailTemplate::new(&id)
        .with_variable("NAME", json!("<Ann & \"Co\">"))
        .with_variable("PRICE", json!(12.5));
    let options = CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(template);
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    assert!(is_uuid(&sent.id), "{}", sent.id);
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.from, format!("Compat Shop <shop@{domain}>"));
    assert_eq!(got.to, [RECIPIENT]);
    assert_eq!(got.subject, "Receipt for <Ann & \"Co\">");
    assert_eq!(
        got.html.as_deref(),
        Some("<p title=\"&lt;Ann &amp; &quot;Co&quot;&gt;\">Hi &lt;Ann &amp; &quot;Co&quot;&gt;, you paid 12.5</p>")
    );
    assert_eq!(got.text.as_deref(), Some("Hi <Ann & \"Co\">, you paid 12.5"));
    assert_eq!(got.last_event, EmailEvent::Sent);
    let record = raw_get(&format!("/emails/{}", sent.id)).await;
    assert_eq!(record["template"], json!({ "id": id, "version_id": version }));

    // By alias, with the send's own from and subject.
    let from = format!("Compat Sender <hello@{domain}>");
    let template = EmailTemplate::new(&alias)
        .with_variable("NAME", json!("Bo"))
        .with_variable("PRICE", json!(3));
    let options = CreateEmailBaseOptions::new(from.as_str(), [RECIPIENT], "Own subject").with_template(template);
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.from, from);
    assert_eq!(got.subject, "Own subject");
    assert_eq!(got.html.as_deref(), Some("<p title=\"Bo\">Hi Bo, you paid 3</p>"));

    // A draft edit does not send until published.
    let update = UpdateTemplateOptions::new("Rs receipt", "<p>v2 {{{NAME}}}</p>");
    let _ = resend
        .templates
        .update(&id, update)
        .await
        .expect("templates.update decodes");
    let draft_version = raw_get(&format!("/templates/{id}")).await["current_version_id"].clone();
    let pinned = |name: &str| {
        EmailTemplate::new(&id)
            .with_variable("NAME", json!(name))
            .with_variable("PRICE", json!(1))
    };
    let options = CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(pinned("Cy"));
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.html.as_deref(), Some("<p title=\"Cy\">Hi Cy, you paid 1</p>"));
    let record = raw_get(&format!("/emails/{}", sent.id)).await;
    assert_eq!(record["template"], json!({ "id": id, "version_id": version }));
    let _ = resend
        .templates
        .publish(&alias)
        .await
        .expect("templates.publish decodes");
    let options = CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(pinned("Di"));
    let sent = resend.emails.send(options).await.expect("emails.send decodes");
    let got = resend.emails.get(&sent.id).await.expect("emails.get decodes");
    assert_eq!(got.html.as_deref(), Some("<p>v2 Di</p>"));
    let record = raw_get(&format!("/emails/{}", sent.id)).await;
    assert_eq!(record["template"], json!({ "id": id, "version_id": draft_version }));
}

#[tokio::test]
async fn batch_send_with_templates_and_refused_template_sends() {
    let resend = client();
    let (domain, _) = sending_domain("templates-batch").await;
    let alias = unique_alias("batch");
    let options = CreateTemplateOptions::new("Rs batch", "<p>Hi {{{NAME}}}</p>")
        .with_alias(&alias)
        .with_from(&format!("Compat Sender <hello@{domain}>"))
        .with_subject("Batch {{{NAME}}}")
        .with_variable(Variable::new("NAME", VariableType::String));
    let (id, version) = published_template(&resend, "batch", options).await;

    let names = [format!("Ann {}", random_hex(3)), format!("Bo {}", random_hex(3))];
    let emails = vec![
        CreateEmailBaseOptions::new("", ["ann@recipient.test"], "")
            .with_template(EmailTemplate::new(&id).with_variable("NAME", json!(names[0]))),
        CreateEmailBaseOptions::new("", ["bo@recipient.test"], "")
            .with_template(EmailTemplate::new(&alias).with_variable("NAME", json!(names[1]))),
    ];
    let sent = resend.batch.send(emails).await.expect("batch.send decodes");
    assert_eq!(sent.len(), 2);
    for (response, name) in sent.iter().zip(&names) {
        let got = resend.emails.get(&response.id).await.expect("emails.get decodes");
        assert_eq!(got.subject, format!("Batch {name}"));
        assert_eq!(got.html.as_deref(), Some(format!("<p>Hi {name}</p>").as_str()));
        let record = raw_get(&format!("/emails/{}", response.id)).await;
        assert_eq!(record["template"], json!({ "id": id, "version_id": version }));
    }

    // `"variables": null` (no variables) is no variables: NAME is missing.
    let no_variables = || CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(EmailTemplate::new(&id));
    let message = error_message(resend.emails.send(no_variables()).await, 422, "validation_error");
    assert!(message.starts_with("Missing template variable `NAME`"), "{message}");
    let good = || {
        CreateEmailBaseOptions::new("", [RECIPIENT], "")
            .with_template(EmailTemplate::new(&id).with_variable("NAME", json!("Eve")))
    };
    let message = error_message(
        resend.batch.send(vec![good(), no_variables()]).await,
        422,
        "validation_error",
    );
    assert!(
        message.starts_with("emails[1]: Missing template variable `NAME`"),
        "{message}"
    );
    let unknown = || CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(EmailTemplate::new(&random_uuid()));
    let result = resend
        .batch
        .send_with_batch_validation(vec![good(), unknown()], BatchValidation::Permissive)
        .await
        .expect("a permissive batch decodes");
    assert_eq!(result.data.len(), 1);
    assert_eq!(result.errors.len(), 1, "{:?}", result.errors);
    assert_eq!(result.errors[0].index, 1);
    assert_eq!(result.errors[0].message, "Template not found");

    let message = error_message(
        resend.emails.send(good().with_html("<p>mine</p>")).await,
        422,
        "validation_error",
    );
    assert!(message.contains("cannot be sent with `template`"), "{message}");
    let message = error_message(resend.emails.send(unknown()).await, 404, "not_found");
    assert_eq!(message, "Template not found");
    let wrong_type = CreateEmailBaseOptions::new("", [RECIPIENT], "")
        .with_template(EmailTemplate::new(&id).with_variable("NAME", json!(7)));
    let message = error_message(resend.emails.send(wrong_type).await, 422, "validation_error");
    assert_eq!(
        message,
        "Invalid `template.variables.NAME` field: the template declares it a string"
    );

    let draft = resend
        .templates
        .create(
            CreateTemplateOptions::new("Rs draft", "<p>draft</p>")
                .with_from(&format!("hello@{domain}"))
                .with_subject("Draft"),
        )
        .await
        .expect("templates.create decodes");
    let options = CreateEmailBaseOptions::new("", [RECIPIENT], "").with_template(EmailTemplate::new(&draft.id));
    let message = error_message(resend.emails.send(options).await, 422, "validation_error");
    assert!(message.contains("not published"), "{message}");
}
