//! The services without sockets: a real RocksDB in a temp directory, the injected clock,
//! and the operations the adapters call (acceptance from both doors with idempotency,
//! the queue's views and actions), with no listener, HTTP request or SMTP session.

mod util;

use std::sync::Arc;
use std::time::Duration;

use herald::emails::accept::accept;
use herald::emails::idempotency::{Answer, Outcome};
use herald::emails::input::SendEmail;
use herald::emails::record::{EmailRecord, EmailStatus};
use herald::emails::submit::{self};
use herald::emails::{EmailState, Source, raw, validate};
use herald::mailqueue::{self, QueueState, Scope};
use herald_queue::Id;
use serde_json::json;
use util::world::World;

impl World {
    /// An email from the API, prepared.
    fn prepared(&self, to: &str) -> submit::Prepared {
        let input: SendEmail = serde_json::from_value(json!({
            "from": "App <app@example.test>", "to": to, "subject": "hi", "text": "Hello."
        }))
        .expect("input");
        let email = validate(input, self.services.node().store().now(), &mut |_| {
            Err("no downloads".into())
        })
        .expect("valid");
        let domain = submit::authorize(&self.services, &self.sender(), &email).expect("verified");
        submit::prepare(&self.services, &self.sender(), &email, &domain, Source::Api).expect("prepared")
    }
}

#[test]
fn an_api_acceptance_is_durable_recorded_remembered_and_wakes_delivery() {
    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let Outcome::Fresh(in_flight) = services
        .idempotency()
        .begin(services.now(), world.team, "order-1", "hash-1".into())
        .expect("begin")
    else {
        panic!("a new key is fresh");
    };
    let prepared = world.prepared("bob@example.org");
    let id = prepared.id;
    let answer = Answer::Http {
        status: 200,
        response: json!({ "id": id }).to_string(),
    };
    let ids = accept(
        services,
        vec![prepared],
        Some((&in_flight, answer.clone())),
        Source::Api,
    )
    .expect("accepting")
    .wait()
    .expect("accepted");
    drop(in_flight);
    assert_eq!(ids, vec![id]);
    assert_eq!(services.spool().depth(), 1);
    assert!(world.delivery_was_woken(), "delivery was woken");
    let record = store
        .get::<EmailRecord>(EmailRecord::key(world.team, id))
        .expect("read")
        .expect("recorded");
    assert_eq!((record.last_event, record.source), (EmailState::Sent, Source::Api));

    let again = services
        .idempotency()
        .begin(services.now(), world.team, "order-1", "hash-1".into());
    assert!(
        matches!(again, Ok(Outcome::Replay(ref replayed)) if *replayed == answer),
        "{again:?}"
    );
    let other = services
        .idempotency()
        .begin(services.now(), world.team, "order-1", "hash-2".into());
    assert!(matches!(other, Ok(Outcome::Mismatch)), "{other:?}");
}

#[test]
fn an_smtp_acceptance_remembers_the_email_id_not_an_http_status() {
    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let Outcome::Fresh(in_flight) = services
        .idempotency()
        .begin(services.now(), world.team, "smtp-key", "bytes".into())
        .expect("begin")
    else {
        panic!("fresh");
    };
    let message = b"From: app@example.test\r\nTo: bob@example.org\r\nSubject: raw\r\n\r\nHello.\r\n";
    let prepared = raw::prepare(
        services,
        &world.sender(),
        "app@example.test",
        &["bob@example.org".to_owned()],
        message,
        "from client.test ([127.0.0.1]) by mx.test (herald) with ESMTPSA",
    )
    .expect("prepared");
    let id = prepared.id;
    let answer = Answer::Smtp { email_id: id };
    accept(services, vec![prepared], Some((&in_flight, answer)), Source::Smtp)
        .expect("accepting")
        .wait()
        .expect("accepted");
    drop(in_flight);
    let Ok(Outcome::Replay(replayed)) =
        services
            .idempotency()
            .begin(services.now(), world.team, "smtp-key", "bytes".into())
    else {
        panic!("replayed");
    };
    assert_eq!(replayed, Answer::Smtp { email_id: id });
    let status = store
        .get::<EmailStatus>(EmailRecord::key(world.team, id))
        .expect("read")
        .expect("status");
    assert_eq!(status.last_event, EmailState::Sent);
}

#[test]
fn the_queue_service_lists_counts_and_deletes_within_its_scope() {
    let world = World::new();
    let services = &world.services;
    let first = world.prepared("a@example.org");
    let second = world.prepared("b@example.net");
    let (first_id, second_id) = (first.id, second.id);
    accept(services, vec![first, second], None, Source::Api)
        .expect("accepting")
        .wait()
        .expect("accepted");
    let team = Scope::Team(world.team);
    let (listed, more) = mailqueue::list(services, team, (None, None), None, 10).expect("list");
    assert!(!more);
    assert_eq!(
        listed.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![first_id, second_id]
    );
    assert!(listed.iter().all(|m| m.state == QueueState::Due));
    let (at_net, _) = mailqueue::list(services, team, (None, Some("EXAMPLE.NET")), None, 10).expect("list");
    assert_eq!(at_net.len(), 1);
    let (other_team, _) =
        mailqueue::list(services, Scope::Team(Id::from_bytes([9; 16])), (None, None), None, 10).expect("list");
    assert!(other_team.is_empty(), "another team sees nothing");

    world.clock.advance(Duration::from_secs(90));
    let stats = mailqueue::stats(services, team).expect("stats");
    assert_eq!((stats.messages(), stats.recipients), (2, 2));
    assert_eq!(stats.oldest.map(|(id, _)| id), Some(first_id));
    assert_eq!(stats.to_json()["oldest"]["age_seconds"], 90);

    assert!(mailqueue::delete(services, Scope::Team(Id::from_bytes([9; 16])), first_id).is_err());
    let deleted = mailqueue::delete(services, team, first_id).expect("delete");
    assert_eq!(deleted.canceled, 1);
    assert_eq!(services.spool().depth(), 1);
    let status = services
        .node()
        .store()
        .get::<EmailStatus>(EmailRecord::key(world.team, first_id))
        .expect("read")
        .expect("status");
    assert_eq!(status.last_event, EmailState::Canceled);
}

#[test]
fn a_record_lock_holds_off_other_changes_of_that_record_until_it_drops() {
    let world = World::new();
    let services = Arc::new(world.services);
    let record = herald::services::RecordName {
        table: "domains",
        key: b"team and domain",
    };
    let held = services.lock_record(record);
    let other = Arc::clone(&services);
    waits_until_dropped(held, "a second change of the record", move || {
        drop(other.lock_record(herald::services::RecordName {
            table: "domains",
            key: b"team and domain",
        }));
    });
}

/// Asserts that `take`, run on a thread of its own, waits while `held` is kept, and goes
/// ahead once it drops.
fn waits_until_dropped<H>(held: H, what: &str, take: impl FnOnce() + Send + 'static) {
    let (done, changed) = std::sync::mpsc::channel();
    let taking = std::thread::spawn(move || {
        take();
        done.send(()).expect("send");
    });
    assert!(
        changed.recv_timeout(Duration::from_millis(100)).is_err(),
        "{what} went ahead while the lock was held"
    );
    drop(held);
    changed
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what} goes ahead once the lock drops"));
    taking.join().expect("join");
}

#[test]
fn delivery_outcomes_lock_their_emails_apart_from_other_records() {
    let world = World::new();
    let services = Arc::new(world.services);
    let (team, first, second) = (
        Id::from_bytes([1; 16]),
        Id::from_bytes([2; 16]),
        Id::from_bytes([3; 16]),
    );
    // An email named twice in a group (or two sharing a stripe) is locked once: the
    // outcome thread does not wait for itself (this returns).
    let held = herald::emails::lock_many(&services, [(team, first), (team, second), (team, first)]);
    // Meanwhile, other records change freely: email stripes are their own.
    drop(services.lock_record(herald::services::RecordName {
        table: "domains",
        key: b"team and domain",
    }));
    // And a click on one of the emails waits for the outcomes.
    let other = Arc::clone(&services);
    waits_until_dropped(held, "a click on an email whose outcome is being written", move || {
        drop(herald::emails::lock(&other, team, second));
    });
}

#[test]
fn a_tracking_key_that_cannot_be_loaded_is_tried_again_a_minute_later() {
    let world = World::with_config(|dir| {
        let data = dir.join("data");
        // The key's path is a directory: reading it fails, as a disk error would.
        std::fs::create_dir_all(data.join("tracking.key")).expect("a directory in the key's place");
        herald::config::Config::from_toml(
            &format!("[server]\ndata_dir = {:?}\n", data.display().to_string()),
            None,
        )
        .expect("config")
    });
    let services = &world.services;
    let key = services.config().server.data_dir.join("tracking.key");

    assert!(services.tracking_signer().is_none());
    std::fs::remove_dir(&key).expect("mend it");
    assert!(services.tracking_signer().is_none(), "not tried again at once");
    world.clock.advance(Duration::from_secs(61));
    let signer = services.tracking_signer().expect("loaded once a minute has passed");
    let tag = signer.tag(&[b"x"]);
    assert!(services.tracking_signer().expect("kept").verify_tag(&[b"x"], &tag));
    assert!(key.is_file(), "made and kept");
}

/// A broadcast whose segment cannot be read gets the store's error (a `500`, or `503`
/// when the store refuses), not a `422` telling the caller their segment is wrong.
#[test]
fn a_broadcast_whose_segment_cannot_be_read_is_a_storage_error_not_a_refusal() {
    use herald::broadcasts::service::{self, Fields};
    use herald::services::Error;
    use herald_queue::{Batch, Table};

    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let caller = herald::accounts::Caller {
        team_id: world.team,
        key_id: store.next_id(),
        permission: herald::accounts::Permission::FullAccess,
        domain_id: None,
        operator: true,
    };
    let segment = store.next_id();
    let fields = || Fields {
        segment_id: Some(segment.to_string()),
        from: Some("News <news@example.test>".into()),
        subject: Some("Hello".into()),
        html: Some("<p>Hi</p>".into()),
        ..Fields::default()
    };
    // No such segment: the caller's mistake, named.
    match service::create(services, &caller, fields(), false, None) {
        Err(Error::Invalid { message, .. }) => assert!(message.contains("segment_id"), "{message}"),
        other => panic!("expected a refusal naming segment_id, got {other:?}"),
    }
    // A segment record no decoder takes: the store failed, and says so.
    let mut batch = Batch::new();
    let key = [world.team.as_bytes().as_slice(), segment.as_bytes()].concat();
    batch.put_raw(Table::SEGMENTS, key, vec![0xff, 0x00, 0x13]);
    store.commit(batch).wait().expect("commit");
    match service::create(services, &caller, fields(), false, None) {
        Err(Error::Store(_)) => {}
        other => panic!("expected the store's error, got {other:?}"),
    }
}

/// A sending key bound to a domain whose record cannot be read is a fault of herald's
/// (`500`), not a `403` naming "its own domain".
#[test]
fn a_bound_key_whose_domain_cannot_be_read_is_a_fault_not_a_refusal() {
    use herald::accounts::Permission;
    use herald_queue::{Batch, Table};

    let world = World::new();
    let services = &world.services;
    let store = services.node().store();
    let bound = store.next_id();
    let sender = submit::Sender {
        permission: Permission::SendingAccess,
        domain_id: Some(bound),
        ..world.sender()
    };
    // The bound domain is gone: refused, as its own domain only.
    match submit::authorize_domain(services, &sender, "example.test") {
        Err(submit::SendError::DomainNotAllowed(allowed)) => assert_eq!(allowed, "its own domain"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut batch = Batch::new();
    let key = [world.team.as_bytes().as_slice(), bound.as_bytes()].concat();
    batch.put_raw(Table::DOMAINS, key, vec![0xff, 0x00, 0x13]);
    store.commit(batch).wait().expect("commit");
    match submit::authorize_domain(services, &sender, "example.test") {
        Err(submit::SendError::Internal(_)) => {}
        other => panic!("expected the read's failure, got {other:?}"),
    }
}
