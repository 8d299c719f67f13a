//! The resource services without sockets: teams and API keys, domains, webhooks,
//! suppressions, and the rescheduling and cancelling of scheduled emails, each called as
//! an adapter calls it, on a real RocksDB in a temp directory with the injected clock.
//! The refusals are checked by their exact error, and the effects by what is stored.

mod util;

use std::time::Duration;

use herald::accounts::keys::{self, NewKey};
use herald::accounts::teams::{self, NewTeam, TeamChange};
use herald::accounts::{AuthError, Caller, Permission};
use herald::domains::service::{self as domains, Capabilities, Capability, DomainChange, NewDomain};
use herald::domains::{DomainStatus, RecordChecks, RecordStatus, TlsPolicy};
use herald::emails::accept::accept;
use herald::emails::input::SendEmail;
use herald::emails::record::EmailEvent;
use herald::emails::service as emails;
use herald::emails::submit::{self};
use herald::emails::{Email, EmailState, Source, validate};
use herald::services::Error;
use herald::storage::page::{Cursor, PageRequest};
use herald::suppressions::service::{self as suppressions, BATCH_MAX, RemoveTargets};
use herald::suppressions::{Origin, Suppression};
use herald::webhooks::WebhookStatus;
use herald::webhooks::service::{self as webhooks, NewWebhook, ROTATION_OVERLAP, WebhookChange};
use herald_queue::{Id, Scan, Timestamp};
use serde_json::json;
use util::world::{World, verified_domain};

impl World {
    /// The operator's full-access key.
    fn operator(&self) -> Caller {
        Caller {
            operator: true,
            ..member(self.team)
        }
    }

    /// An email of the operator's team from `from`, scheduled at `scheduled_at` if given,
    /// validated.
    fn email(&self, from: &str, scheduled_at: Option<&str>) -> Email {
        let mut input = json!({ "from": from, "to": "bob@example.org", "subject": "hi", "text": "Hello." });
        if let Some(at) = scheduled_at {
            input["scheduled_at"] = json!(at);
        }
        let input: SendEmail = serde_json::from_value(input).expect("input");
        validate(input, self.services.node().store().now(), &mut |_| {
            Err("no downloads".into())
        })
        .expect("valid")
    }

    /// Accepts an email from the operator's team, scheduled at `scheduled_at` if given.
    fn accept(&self, scheduled_at: Option<&str>) -> Id {
        let services = &self.services;
        let email = self.email("App <app@example.test>", scheduled_at);
        let domain = submit::authorize(services, &self.sender(), &email).expect("verified");
        let prepared = submit::prepare(services, &self.sender(), &email, &domain, Source::Api).expect("prepared");
        let id = prepared.id;
        accept(services, vec![prepared], None, Source::Api)
            .expect("accepting")
            .wait()
            .expect("accepted");
        id
    }
}

/// A full-access key of `team`, not the operator's.
fn member(team: Id) -> Caller {
    Caller {
        team_id: team,
        key_id: Id::from_bytes([1; 16]),
        permission: Permission::FullAccess,
        domain_id: None,
        operator: false,
    }
}

/// Another team than the world's.
fn other_team() -> Caller {
    member(Id::from_bytes([9; 16]))
}

fn first_page() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

fn new_domain(name: &str) -> NewDomain {
    NewDomain {
        name: Some(name.to_owned()),
        ..NewDomain::default()
    }
}

/// Asserts that `result` is the error `pattern`, showing what it was otherwise.
macro_rules! assert_refused {
    ($result:expr, $pattern:pat $(if $guard:expr)?) => {
        match $result {
            Err($pattern) $(if $guard)? => {}
            other => panic!("expected {}, got {other:?}", stringify!($pattern)),
        }
    };
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

// Teams and keys.

#[test]
fn a_sending_only_key_is_refused_every_operation_but_sending() {
    let world = World::new();
    let sending = Caller {
        permission: Permission::SendingAccess,
        ..member(world.team)
    };
    let page = first_page();
    assert_refused!(keys::list(&world.services, &sending, &page), Error::Restricted);
    assert_refused!(
        keys::create(
            &world.services,
            &sending,
            NewKey {
                name: Some("escalate".into()),
                ..NewKey::default()
            }
        ),
        Error::Restricted
    );
    assert_refused!(teams::get(&world.services, &sending, world.team), Error::Restricted);
    assert_refused!(domains::list(&world.services, &sending, &page), Error::Restricted);
    assert_refused!(
        domains::create(&world.services, &sending, new_domain("new.example.test")),
        Error::Restricted
    );
    assert_refused!(webhooks::list(&world.services, &sending, &page), Error::Restricted);
    assert_refused!(
        suppressions::add(&world.services, &sending, Some("a@example.org".into())),
        Error::Restricted
    );
    assert_refused!(
        suppressions::list(&world.services, &sending, &page, None),
        Error::Restricted
    );
    assert_refused!(emails::list(&world.services, &sending, &page), Error::Restricted);
    let id = world.accept(Some("in 1 hour"));
    assert_refused!(emails::cancel(&world.services, &sending, id), Error::Restricted);
    assert_eq!(
        emails::get(&world.services, &member(world.team), id)
            .expect("still there")
            .last_event,
        EmailState::Scheduled,
        "nothing changed"
    );
}

#[test]
fn only_the_operator_creates_lists_and_updates_teams() {
    let world = World::new();
    let services = &world.services;
    let tenant = other_team();
    let new = || NewTeam {
        name: Some("Acme".into()),
        rate_limit: None,
        plan: None,
    };
    assert_refused!(teams::create(services, &tenant, new()), Error::Forbidden(_));
    assert_refused!(teams::list(services, &tenant), Error::Forbidden(_));
    let (team, _, _, _) = teams::create(services, &world.operator(), new()).expect("created");
    let change = TeamChange {
        name: Some("Renamed".into()),
        rate_limit: None,
        plan: None,
    };
    assert_refused!(teams::update(services, &tenant, team.id, change), Error::Forbidden(_));
    assert_eq!(teams::list(services, &world.operator()).expect("list"), vec![team]);
    let outsider = member(Id::from_bytes([7; 16]));
    assert_refused!(teams::get(services, &outsider, world.team), Error::NotFound(_));
}

#[test]
fn a_team_update_renames_it_and_sets_or_clears_its_rate_limit() {
    let world = World::new();
    let (services, operator) = (&world.services, world.operator());
    let new = NewTeam {
        name: Some("Acme".into()),
        rate_limit: Some("10/s".into()),
        plan: None,
    };
    let (team, rate, _, _) = teams::create(services, &operator, new).expect("created");
    assert!(rate.is_some());
    let bad = NewTeam {
        name: Some("Bad".into()),
        rate_limit: Some("fast".into()),
        plan: None,
    };
    assert_refused!(teams::create(services, &operator, bad), Error::Invalid { .. });
    let change = TeamChange {
        name: Some("Acme Inc".into()),
        rate_limit: Some(None),
        plan: None,
    };
    assert!(matches!(
        teams::update(services, &operator, team.id, change),
        Ok(Some(None))
    ));
    let stored = teams::get(services, &member(team.id), team.id).expect("own team");
    assert_eq!((stored.name.as_str(), stored.rate_limit), ("Acme Inc", None));
}

#[test]
fn a_new_team_gets_a_full_access_key_that_authenticates_as_that_team() {
    let world = World::new();
    let services = &world.services;
    let new = NewTeam {
        name: Some("Acme".into()),
        rate_limit: None,
        plan: None,
    };
    let (team, _, key, token) = teams::create(services, &world.operator(), new).expect("created");
    assert_eq!((key.team_id, key.permission), (team.id, Permission::FullAccess));
    let caller = services.authenticate(token.expose()).expect("the new key works");
    assert_eq!(
        caller,
        Caller {
            team_id: team.id,
            key_id: key.id,
            permission: Permission::FullAccess,
            domain_id: None,
            operator: false,
        }
    );
}

#[test]
fn a_key_needs_a_bounded_name_and_a_known_permission() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let named = |name: Option<&str>| NewKey {
        name: name.map(str::to_owned),
        ..NewKey::default()
    };
    assert_refused!(
        keys::create(services, &caller, named(None)),
        Error::MissingField("name")
    );
    assert_refused!(
        keys::create(services, &caller, named(Some("   "))),
        Error::MissingField("name")
    );
    let long = "k".repeat(51);
    assert_refused!(
        keys::create(services, &caller, named(Some(&long))),
        Error::Invalid {
            name: "validation_error",
            ..
        }
    );
    let admin = NewKey {
        permission: Some("admin".into()),
        ..named(Some("ci"))
    };
    assert_refused!(
        keys::create(services, &caller, admin),
        Error::Invalid {
            name: "invalid_access",
            ..
        }
    );
    let (key, _) = keys::create(services, &caller, named(Some(&"k".repeat(50)))).expect("50 characters");
    assert_eq!(key.permission, Permission::FullAccess);
}

#[test]
fn a_sending_key_may_only_be_bound_to_a_domain_of_its_own_team() {
    let world = World::new();
    let services = &world.services;
    let caller = member(world.team);
    let theirs = verified_domain(services, Id::from_bytes([9; 16]), "theirs.test");
    let ours = verified_domain(services, world.team, "ours.test");
    let sending = |domain_id| NewKey {
        name: Some("ci".into()),
        permission: Some("sending_access".into()),
        domain_id: Some(domain_id),
    };
    assert_refused!(keys::create(services, &caller, sending(theirs.id)), Error::NotFound(_));
    assert_refused!(
        keys::create(services, &caller, sending(Id::from_bytes([5; 16]))),
        Error::NotFound(_)
    );
    let full = NewKey {
        permission: Some("full_access".into()),
        ..sending(ours.id)
    };
    assert_refused!(keys::create(services, &caller, full), Error::Invalid { .. });
    let (key, token) = keys::create(services, &caller, sending(ours.id)).expect("bound");
    let authenticated = services.authenticate(token.expose()).expect("works");
    assert_eq!(
        (authenticated.key_id, authenticated.permission, authenticated.domain_id),
        (key.id, Permission::SendingAccess, Some(ours.id))
    );
    assert!(
        !authenticated.operator,
        "a sending key of the operator's team is not the operator"
    );
}

#[test]
fn a_renamed_key_keeps_working_and_a_deleted_key_stops_at_once() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let new = NewKey {
        name: Some("old".into()),
        ..NewKey::default()
    };
    let (key, token) = keys::create(services, &caller, new).expect("created");
    assert_refused!(
        keys::rename(services, &caller, key.id, None),
        Error::MissingField("name")
    );
    assert_refused!(
        keys::rename(services, &other_team(), key.id, Some("mine".into())),
        Error::NotFound(_)
    );
    keys::rename(services, &caller, key.id, Some("new".into())).expect("renamed");
    let stored = services
        .accounts()
        .key(world.team, key.id)
        .expect("read")
        .expect("kept");
    assert_eq!(stored.name, "new");
    assert_eq!(
        services.authenticate(token.expose()).expect("still works").key_id,
        key.id
    );

    assert_refused!(keys::delete(services, &other_team(), key.id), Error::NotFound(_));
    keys::delete(services, &caller, key.id).expect("deleted");
    assert_refused!(services.authenticate(token.expose()), AuthError::Invalid);
    assert_refused!(keys::delete(services, &caller, key.id), Error::NotFound(_));
    let (listed, _) = keys::list(services, &caller, &first_page()).expect("list");
    assert!(listed.is_empty());
}

#[test]
fn listing_keys_reports_when_each_was_last_used() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let named = |name: &str| NewKey {
        name: Some(name.to_owned()),
        ..NewKey::default()
    };
    let (used, token) = keys::create(services, &caller, named("used")).expect("created");
    let (unused, _) = keys::create(services, &caller, named("unused")).expect("created");
    world.clock.advance(Duration::from_secs(30));
    let at = services.node().store().now();
    services.authenticate(token.expose()).expect("works");
    // The use is written without waiting for it. Commits are applied in order, so once a
    // later one is durable, so is the use.
    services
        .node()
        .store()
        .commit(herald_queue::Batch::new())
        .wait()
        .expect("a later commit");
    let listed = keys::list(services, &caller, &first_page()).expect("list").0;
    let uses: Vec<_> = listed.iter().map(|k| (k.key.id, k.last_used_at)).collect();
    assert_eq!(uses, vec![(unused.id, None), (used.id, Some(at))], "newest first");
}

// Domains.

#[test]
fn a_domain_name_is_required_valid_and_unique_within_its_team() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let create = |new| domains::create(services, &caller, new);
    assert_refused!(create(NewDomain::default()), Error::MissingField("name"));
    assert_refused!(create(new_domain("  ")), Error::MissingField("name"));
    for invalid in [
        "localhost",
        "has space.com",
        "under_score.com",
        "-dash.com",
        "example.123",
    ] {
        let refused = create(new_domain(invalid));
        assert_refused!(refused, Error::Invalid { .. });
    }
    let domain = create(new_domain("Mail.Example.ORG.")).expect("created");
    assert_eq!(
        (domain.name.as_str(), domain.status, domain.team_id),
        ("mail.example.org", DomainStatus::NotStarted, world.team)
    );
    assert_eq!(domains::get(services, &caller, domain.id).expect("stored"), domain);
    let again = create(new_domain("mail.example.org"));
    assert_refused!(again, Error::Invalid { .. });
    let already = create(new_domain("example.test"));
    assert_refused!(already, Error::Invalid { .. });
    let theirs = domains::create(services, &other_team(), new_domain("mail.example.org")).expect("other team");
    assert_ne!(theirs.id, domain.id);
}

#[test]
fn a_domain_region_and_capabilities_are_checked() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let mars = NewDomain {
        region: Some("mars-north-1".into()),
        ..new_domain("a.example.org")
    };
    assert_refused!(
        domains::create(services, &caller, mars),
        Error::Invalid {
            name: "invalid_region",
            ..
        }
    );
    let receiving = NewDomain {
        capabilities: Some(Capabilities {
            sending: Some(Capability::Enabled),
            receiving: Some(Capability::Enabled),
        }),
        ..new_domain("b.example.org")
    };
    assert_refused!(
        domains::create(services, &caller, receiving),
        Error::Invalid {
            name: "validation_error",
            ..
        }
    );
    // Only the regions this server runs: by default the one named by `[delivery] region`.
    let elsewhere = NewDomain {
        region: Some("eu-west-1".into()),
        ..new_domain("e.example.org")
    };
    assert_refused!(
        domains::create(services, &caller, elsewhere),
        Error::Invalid {
            name: "invalid_region",
            ..
        }
    );
    let eu = NewDomain {
        region: Some("us-east-1".into()),
        capabilities: Some(Capabilities {
            sending: Some(Capability::Enabled),
            receiving: Some(Capability::Disabled),
        }),
        ..new_domain("c.example.org")
    };
    assert_eq!(
        domains::create(services, &caller, eu).expect("created").region,
        "us-east-1"
    );
    let (listed, _) = domains::list(services, &caller, &first_page()).expect("list");
    assert_eq!(listed.len(), 2, "the refused domains were not stored");
}

#[test]
fn only_the_operator_may_skip_dns_verification() {
    let world = World::new();
    let services = &world.services;
    let domain = domains::create(services, &member(world.team), new_domain("mail.example.org")).expect("created");
    assert_refused!(
        domains::verify(services, &member(world.team), domain.id, true),
        Error::Forbidden(_)
    );
    assert_eq!(
        domains::get(services, &member(world.team), domain.id)
            .expect("get")
            .status,
        DomainStatus::NotStarted
    );
    let email = world.email("app@mail.example.org", None);
    assert!(
        submit::authorize(services, &world.sender(), &email).is_err(),
        "not verified yet"
    );
    domains::verify(services, &world.operator(), domain.id, true).expect("verified");
    let stored = domains::get(services, &world.operator(), domain.id).expect("get");
    assert_eq!(
        (stored.status, stored.dns_verification_skipped, stored.next_check_at),
        (DomainStatus::Verified, true, None)
    );
    let authorized = submit::authorize(services, &world.sender(), &email).expect("sends at once");
    assert_eq!(authorized.id, domain.id);
}

#[test]
fn verifying_a_domain_through_dns_makes_it_pending_and_due_for_a_check() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let domain = domains::create(services, &caller, new_domain("mail.example.org")).expect("created");
    world.clock.advance(Duration::from_secs(60));
    let now = services.node().store().now();
    domains::verify(services, &caller, domain.id, false).expect("verifying");
    let stored = domains::get(services, &caller, domain.id).expect("get");
    assert_eq!(stored.status, DomainStatus::Pending);
    assert_eq!(stored.checks, RecordChecks::all(RecordStatus::Pending));
    assert_eq!(
        (stored.next_check_at, stored.verification_started_at),
        (Some(now), Some(now))
    );
    assert!(!stored.dns_verification_skipped);
}

#[test]
fn a_domain_update_is_reported_to_webhooks_only_when_something_changed() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let domain = domains::create(services, &caller, new_domain("mail.example.org")).expect("created");
    let webhook = herald::webhooks::Webhook {
        id: services.node().store().next_id(),
        team_id: world.team,
        endpoint: "https://hooks.example.com/h".into(),
        events: strings(&["domain.updated"]),
        status: WebhookStatus::Enabled,
        signing_secret: herald::webhooks::SigningSecret::generate().expect("random"),
        previous_secret: None,
        created_at: services.node().store().now(),
    };
    services.webhooks().put(&webhook).expect("webhook");
    let updates = || {
        services
            .node()
            .store()
            .scan::<herald::events::Event>(Scan::prefix(b""))
            .expect("outbox")
            .into_iter()
            .filter(|(_, event)| event.kind == herald::events::EventKind::DomainUpdated)
            .count()
    };
    let same = DomainChange {
        open_tracking: Some(domain.open_tracking),
        ..DomainChange::default()
    };
    domains::update(services, &caller, domain.id, same).expect("updated");
    assert_eq!(updates(), 0, "nothing changed, nothing to report");
    let change = DomainChange {
        click_tracking: Some(!domain.click_tracking),
        ..DomainChange::default()
    };
    domains::update(services, &caller, domain.id, change).expect("updated");
    assert_eq!(updates(), 1);
}

#[test]
fn a_domain_update_changes_tracking_and_clears_the_tracking_subdomain() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let new = NewDomain {
        tracking_subdomain: Some("Links".into()),
        ..new_domain("mail.example.org")
    };
    let domain = domains::create(services, &caller, new).expect("created");
    assert_eq!(domain.tracking_subdomain.as_deref(), Some("links"));
    let bad = DomainChange {
        tracking_subdomain: Some(Some("not a label".into())),
        ..DomainChange::default()
    };
    assert_refused!(
        domains::update(services, &caller, domain.id, bad),
        Error::Invalid { .. }
    );
    let change = DomainChange {
        open_tracking: Some(true),
        click_tracking: Some(true),
        tls: Some(TlsPolicy::Enforced),
        tracking_subdomain: Some(None),
        capabilities: None,
        region: None,
    };
    domains::update(services, &caller, domain.id, change).expect("updated");
    let stored = domains::get(services, &caller, domain.id).expect("get");
    assert_eq!(
        (
            stored.open_tracking,
            stored.click_tracking,
            stored.tls,
            stored.tracking_subdomain
        ),
        (true, true, TlsPolicy::Enforced, None)
    );
    assert_eq!(
        (stored.name, stored.dkim),
        (domain.name, domain.dkim),
        "the rest is kept"
    );
}

#[test]
fn a_domain_is_not_found_by_another_team_and_gone_once_deleted() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let domain = domains::create(services, &caller, new_domain("mail.example.org")).expect("created");
    let stranger = other_team();
    assert_refused!(domains::get(services, &stranger, domain.id), Error::NotFound(_));
    assert_refused!(
        domains::update(services, &stranger, domain.id, DomainChange::default()),
        Error::NotFound(_)
    );
    assert_refused!(
        domains::verify(services, &stranger, domain.id, false),
        Error::NotFound(_)
    );
    assert_refused!(domains::delete(services, &stranger, domain.id), Error::NotFound(_));
    domains::delete(services, &caller, domain.id).expect("deleted");
    assert_refused!(domains::get(services, &caller, domain.id), Error::NotFound(_));
    assert_refused!(domains::delete(services, &caller, domain.id), Error::NotFound(_));
    let again = domains::create(services, &caller, new_domain("mail.example.org")).expect("the name is free again");
    assert_ne!(again.id, domain.id);
}

// Webhooks: the service blocks on the runtime to check endpoints, so each test runs on a
// blocking thread inside a multi-threaded runtime, as the adapters call it.

async fn on_blocking_thread(test: impl FnOnce(World) + Send + 'static) {
    tokio::task::spawn_blocking(move || test(World::new()))
        .await
        .expect("the test passed");
}

fn new_webhook(endpoint: &str, events: &[&str]) -> NewWebhook {
    NewWebhook {
        endpoint: Some(endpoint.to_owned()),
        events: Some(strings(events)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_needs_outbound_event_types_and_a_public_endpoint() {
    on_blocking_thread(|world| {
        let (services, caller) = (&world.services, member(world.team));
        let public = "https://1.1.1.1/hook";
        let no_events = NewWebhook {
            events: None,
            ..new_webhook(public, &[])
        };
        assert_refused!(
            webhooks::create(services, &caller, no_events),
            Error::MissingField("events")
        );
        for events in [&[][..], &["email.exploded"], &["email.sent", "email.received"]] {
            let refused = webhooks::create(services, &caller, new_webhook(public, events));
            assert_refused!(refused, Error::Invalid { .. });
        }
        let private = webhooks::create(services, &caller, new_webhook("http://127.0.0.1/x", &["email.sent"]));
        assert_refused!(private, Error::Invalid { ref message, .. } if message.contains("allow_private_endpoints"));
        assert!(services.webhooks().for_team(world.team).expect("read").is_empty());

        let events = ["email.sent", "domain.created", "email.sent"];
        let webhook = webhooks::create(services, &caller, new_webhook(public, &events)).expect("created");
        assert_eq!(webhook.events, strings(&["email.sent", "domain.created"]));
        assert_eq!(webhook.status, WebhookStatus::Enabled);
        assert!(webhook.signing_secret.expose().starts_with("whsec_"));
        let stored = webhooks::get(services, &caller, webhook.id).expect("stored");
        assert_eq!(stored.endpoint, public);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_a_webhook_secret_keeps_the_old_one_signing_until_the_overlap_ends() {
    on_blocking_thread(|world| {
        let (services, caller) = (&world.services, member(world.team));
        let webhook =
            webhooks::create(services, &caller, new_webhook("https://1.1.1.1/hook", &["email.sent"])).expect("created");
        let old = webhook.signing_secret.expose().to_owned();
        let rotated = webhooks::rotate_secret(services, &caller, webhook.id).expect("rotated");
        assert_ne!(rotated.signing_secret.expose(), old);
        let stored = webhooks::get(services, &caller, webhook.id).expect("get");
        let secrets = |now| {
            stored
                .signing_keys(now)
                .iter()
                .map(|secret| secret.expose().to_owned())
                .collect::<Vec<_>>()
        };
        let new = rotated.signing_secret.expose().to_owned();
        assert_eq!(secrets(services.node().store().now()), vec![new.clone(), old]);
        world.clock.advance(ROTATION_OVERLAP + Duration::from_secs(1));
        assert_eq!(secrets(services.node().store().now()), vec![new]);
        assert_refused!(
            webhooks::rotate_secret(services, &other_team(), webhook.id),
            Error::NotFound(_)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_updated_and_deleted_by_its_team_only() {
    on_blocking_thread(|world| {
        let (services, caller) = (&world.services, member(world.team));
        let webhook =
            webhooks::create(services, &caller, new_webhook("https://1.1.1.1/hook", &["email.sent"])).expect("created");
        let private = WebhookChange {
            endpoint: Some("http://10.0.0.1/hook".into()),
            ..WebhookChange::default()
        };
        assert_refused!(
            webhooks::update(services, &caller, webhook.id, private),
            Error::Invalid { .. }
        );
        let change = WebhookChange {
            endpoint: None,
            events: Some(strings(&["email.bounced"])),
            status: Some(WebhookStatus::Disabled),
        };
        assert_refused!(
            webhooks::update(services, &other_team(), webhook.id, change.clone()),
            Error::NotFound(_)
        );
        webhooks::update(services, &caller, webhook.id, change).expect("updated");
        let stored = webhooks::get(services, &caller, webhook.id).expect("get");
        assert_eq!(
            (stored.endpoint.as_str(), stored.events.clone(), stored.status),
            (
                "https://1.1.1.1/hook",
                strings(&["email.bounced"]),
                WebhookStatus::Disabled
            )
        );
        assert_refused!(
            webhooks::delete(services, &other_team(), webhook.id),
            Error::NotFound(_)
        );
        webhooks::delete(services, &caller, webhook.id).expect("deleted");
        assert_refused!(webhooks::get(services, &caller, webhook.id), Error::NotFound(_));
        assert!(
            webhooks::list(services, &caller, &first_page())
                .expect("list")
                .0
                .is_empty()
        );
    })
    .await;
}

// Suppressions.

#[test]
fn adding_a_suppression_checks_the_address_and_keeps_one_entry_per_address() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let add = |email: Option<&str>| suppressions::add(services, &caller, email.map(str::to_owned));
    assert_refused!(add(None), Error::MissingField("email"));
    assert_refused!(add(Some("  ")), Error::MissingField("email"));
    assert_refused!(add(Some("not an address")), Error::Invalid { .. });
    assert_refused!(add(Some("Bob <bob@example.org>")), Error::Invalid { .. });
    let id = add(Some("Bob@Example.ORG")).expect("added");
    assert_eq!(add(Some("bob@example.org")).expect("again"), id);
    let entry = suppressions::get(services, &caller, &id.to_string()).expect("by id");
    assert_eq!(
        (entry.email.as_str(), entry.origin),
        ("bob@example.org", Origin::Manual)
    );
    let (listed, _) = suppressions::list(services, &caller, &first_page(), None).expect("list");
    assert_eq!(listed, vec![entry]);
}

#[test]
fn adding_many_suppressions_dedupes_addresses_in_the_order_given() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let existing = suppressions::add(services, &caller, Some("c@example.org".into())).expect("added");
    let emails = strings(&[
        "b@example.org",
        "A@example.org",
        "B@EXAMPLE.org",
        "c@example.org",
        "a@example.org",
    ]);
    let ids = suppressions::add_many(services, &caller, Some(emails)).expect("added");
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[2], existing, "an address already suppressed keeps its entry");
    let emails: Vec<String> = ids
        .iter()
        .map(|id| {
            suppressions::get(services, &caller, &id.to_string())
                .expect("get")
                .email
        })
        .collect();
    assert_eq!(emails, strings(&["b@example.org", "a@example.org", "c@example.org"]));
    let one_bad = strings(&["d@example.org", "Dee <d@example.org>"]);
    assert_refused!(
        suppressions::add_many(services, &caller, Some(one_bad)),
        Error::Invalid { .. }
    );
    assert_refused!(
        suppressions::get(services, &caller, "d@example.org"),
        Error::NotFound(_)
    );
    assert_refused!(
        suppressions::add_many(services, &caller, Some(Vec::new())),
        Error::Invalid { .. }
    );
    assert_refused!(
        suppressions::add_many(services, &caller, None),
        Error::MissingField("emails")
    );
}

#[test]
fn suppressions_are_listed_by_origin_and_found_by_id_or_address_within_the_team() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let bounced = Suppression::new(
        (services.next_id(), services.now()),
        world.team,
        "Gone@Example.org",
        Origin::Bounce,
        None,
    );
    services
        .suppressions()
        .apply(std::slice::from_ref(&bounced), &[], &[])
        .expect("stored");
    let manual = suppressions::add(services, &caller, Some("quiet@example.org".into())).expect("added");
    let listed = |origin| {
        suppressions::list(services, &caller, &first_page(), origin)
            .expect("list")
            .0
            .iter()
            .map(|s| s.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(None), vec![manual, bounced.id], "newest first");
    assert_eq!(listed(Some(Origin::Bounce)), vec![bounced.id]);
    assert_eq!(listed(Some(Origin::Manual)), vec![manual]);
    assert!(listed(Some(Origin::Complaint)).is_empty());
    let one = PageRequest {
        limit: 1,
        cursor: Cursor::Start,
    };
    let (page, more) = suppressions::list(services, &caller, &one, Some(Origin::Bounce)).expect("list");
    assert_eq!(
        (page.len(), more),
        (1, false),
        "a filtered page counts only the matches"
    );
    let older = PageRequest {
        limit: 1,
        cursor: Cursor::After(manual),
    };
    let (page, more) = suppressions::list(services, &caller, &older, None).expect("list");
    assert_eq!(
        (page.iter().map(|s| s.id).collect::<Vec<_>>(), more),
        (vec![bounced.id], false)
    );
    assert_refused!(suppressions::origin("spam"), Error::Invalid { .. });

    assert_eq!(
        suppressions::get(services, &caller, "GONE@example.org").expect("by address"),
        bounced
    );
    assert_eq!(
        suppressions::get(services, &caller, &bounced.id.to_string()).expect("by id"),
        bounced
    );
    assert_refused!(
        suppressions::get(services, &caller, "neither"),
        Error::Invalid {
            name: "invalid_parameter",
            ..
        }
    );
    let stranger = other_team();
    assert_refused!(
        suppressions::get(services, &stranger, "gone@example.org"),
        Error::NotFound(_)
    );
    assert_refused!(
        suppressions::get(services, &stranger, &manual.to_string()),
        Error::NotFound(_)
    );
}

#[test]
fn removing_suppressions_answers_each_removed_entry_once() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let emails = strings(&["a@example.org", "b@example.org", "c@example.org", "d@example.org"]);
    let ids = suppressions::add_many(services, &caller, Some(emails)).expect("added");
    let removed = suppressions::remove(services, &caller, "A@example.org").expect("removed");
    assert_eq!(removed.id, ids[0]);
    assert_refused!(
        suppressions::remove(services, &caller, "a@example.org"),
        Error::NotFound(_)
    );

    let by_ids = RemoveTargets {
        emails: None,
        ids: Some(vec![ids[1].to_string(), ids[1].to_string(), ids[0].to_string()]),
    };
    let removed = suppressions::remove_many(services, &caller, by_ids).expect("removed");
    assert_eq!(removed.iter().map(|s| s.id).collect::<Vec<_>>(), vec![ids[1]]);

    let by_emails = RemoveTargets {
        emails: Some(strings(&["c@example.org", "C@EXAMPLE.ORG", "nobody@example.org"])),
        ids: None,
    };
    let removed = suppressions::remove_many(services, &caller, by_emails).expect("removed");
    assert_eq!(removed.iter().map(|s| s.id).collect::<Vec<_>>(), vec![ids[2]]);
    let (left, _) = suppressions::list(services, &caller, &first_page(), None).expect("list");
    assert_eq!(left.iter().map(|s| s.id).collect::<Vec<_>>(), vec![ids[3]]);
}

#[test]
fn a_batch_removal_names_one_to_a_hundred_entries_one_way() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let id = suppressions::add(services, &caller, Some("a@example.org".into())).expect("added");
    let remove = |emails: Option<Vec<String>>, ids: Option<Vec<String>>| {
        suppressions::remove_many(services, &caller, RemoveTargets { emails, ids })
    };
    let both = remove(Some(strings(&["a@example.org"])), Some(vec![id.to_string()]));
    assert_refused!(both, Error::Invalid { .. });
    assert_refused!(remove(None, None), Error::MissingField("emails"));
    assert_refused!(remove(Some(Vec::new()), None), Error::Invalid { .. });
    assert_refused!(remove(None, Some(Vec::new())), Error::Invalid { .. });
    let too_many = vec!["a@example.org".to_owned(); BATCH_MAX + 1];
    assert_refused!(remove(Some(too_many), None), Error::Invalid { .. });
    assert_refused!(remove(None, Some(strings(&["not-a-uuid"]))), Error::Invalid { .. });
    assert_eq!(
        suppressions::get(services, &caller, "a@example.org")
            .expect("still suppressed")
            .id,
        id
    );
}

// Emails: rescheduling and cancelling.

#[test]
fn a_scheduled_email_is_rescheduled_then_canceled_and_then_left_alone() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let id = world.accept(Some("in 1 hour"));
    let email = emails::get(services, &caller, id).expect("get");
    assert_eq!(email.last_event, EmailState::Scheduled);

    let later = emails::reschedule(services, &caller, id, Some("in 2 hours".into())).expect("rescheduled");
    assert_eq!(
        later,
        services
            .node()
            .store()
            .now()
            .saturating_add(Duration::from_secs(2 * 3600))
    );
    assert_eq!(
        emails::get(services, &caller, id).expect("get").scheduled_at,
        Some(later)
    );
    let (envelope, _) = services.spool().load(id).expect("load").expect("queued");
    assert_eq!(envelope.due, later);
    assert!(!services.spool().is_claimed(id), "the reschedule released its claim");

    emails::cancel(services, &caller, id).expect("canceled");
    let email = emails::get(services, &caller, id).expect("get");
    assert_eq!(email.last_event, EmailState::Canceled);
    assert!(services.spool().load(id).expect("load").is_none(), "it left the queue");
    let events = services
        .node()
        .store()
        .scan::<EmailEvent>(Scan::prefix(id.as_bytes()))
        .expect("events");
    let kinds: Vec<_> = events.iter().map(|(_, event)| event.kind).collect();
    assert_eq!(kinds, vec![EmailState::Scheduled, EmailState::Canceled]);

    let again = emails::cancel(services, &caller, id);
    assert_refused!(again, Error::Invalid { ref message, .. } if message.contains("not scheduled"));
    let moved = emails::reschedule(services, &caller, id, Some("in 3 hours".into()));
    assert_refused!(moved, Error::Invalid { ref message, .. } if message.contains("not scheduled"));
}

#[test]
fn an_email_is_rescheduled_to_an_iso_time() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    // The clock starts at 2023-11-14T22:13:20Z.
    let id = world.accept(Some("2023-11-14T23:13:20Z"));
    let at = emails::reschedule(services, &caller, id, Some("2023-11-15T01:00:00+01:00".into())).expect("moved");
    assert_eq!(at, Timestamp::from_millis(1_700_006_400_000));
    let past = emails::reschedule(services, &caller, id, Some("2023-11-14T20:00:00Z".into()));
    assert_refused!(past, Error::Invalid { .. });
    assert_eq!(emails::get(services, &caller, id).expect("get").scheduled_at, Some(at));
}

#[test]
fn an_email_due_now_cannot_be_canceled_or_rescheduled() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let id = world.accept(None);
    let canceled = emails::cancel(services, &caller, id);
    assert_refused!(canceled, Error::Invalid { ref message, .. } if message.contains("not scheduled"));
    let moved = emails::reschedule(services, &caller, id, Some("in 1 hour".into()));
    assert_refused!(moved, Error::Invalid { ref message, .. } if message.contains("not scheduled"));
    assert_eq!(
        emails::get(services, &caller, id).expect("get").last_event,
        EmailState::Sent
    );
    assert!(services.spool().load(id).expect("load").is_some(), "still queued");
    assert!(!services.spool().is_claimed(id));
}

#[test]
fn rescheduling_needs_a_time_and_another_teams_email_is_not_found() {
    let world = World::new();
    let (services, caller) = (&world.services, member(world.team));
    let id = world.accept(Some("in 1 hour"));
    assert_refused!(
        emails::reschedule(services, &caller, id, None),
        Error::MissingField("scheduled_at")
    );
    let stranger = other_team();
    assert_refused!(emails::get(services, &stranger, id), Error::NotFound(_));
    assert_refused!(emails::cancel(services, &stranger, id), Error::NotFound(_));
    assert_refused!(
        emails::reschedule(services, &stranger, id, Some("in 2 hours".into())),
        Error::NotFound(_)
    );
    let email = emails::get(services, &caller, id).expect("get");
    assert_eq!(email.last_event, EmailState::Scheduled);
    assert!(!services.spool().is_claimed(id));
}
