//! Teams, API keys, domains, webhooks and suppressions copied and read back equal; the
//! copy's guards.

use herald::accounts::{ApiKey, Permission, Team, Token};
use herald::domains::{Domain, DomainStatus, RecordChecks, RecordStatus, TlsPolicy, generate_dkim_key};
use herald::storage::copy::Refused;
use herald::storage::page::{Cursor, PageRequest};
use herald::suppressions::{Origin, Suppression};
use herald::webhooks::{PreviousSecret, SigningSecret, Webhook, WebhookStatus};
use herald_queue::{Id, Store};

use crate::{Copying, count};

/// Every item in one page.
fn all() -> PageRequest {
    PageRequest {
        limit: 100,
        cursor: Cursor::Start,
    }
}

/// Waits until `condition` holds (a key's use is written without anyone waiting for it).
fn wait_for(condition: impl Fn() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !condition() {
        assert!(std::time::Instant::now() < end, "timed out");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn team(ids: &Store, name: &str, operator: bool) -> Team {
    Team {
        id: ids.next_id(),
        name: name.into(),
        operator,
        created_at: ids.now(),
        rate_limit: Some("5/s".into()),
        plan: None,
        deleted_at: None,
    }
}

fn key(ids: &Store, team_id: Id, permission: Permission) -> (ApiKey, Token) {
    let token = Token::generate();
    let key = ApiKey {
        id: ids.next_id(),
        team_id,
        name: "ci".into(),
        permission,
        domain_id: Some(ids.next_id()),
        digest: token.digest_hex(),
        created_at: ids.now(),
        last_used_at: None,
    };
    (key, token)
}

fn domain(ids: &Store, team_id: Id, name: &str) -> Domain {
    Domain {
        id: ids.next_id(),
        team_id,
        name: name.into(),
        region: "eu-west-1".into(),
        custom_return_path: "bounces".into(),
        open_tracking: true,
        click_tracking: false,
        tls: TlsPolicy::Enforced,
        tracking_subdomain: Some("links".into()),
        dkim: generate_dkim_key(herald::config::DkimAlgorithm::Ed25519).expect("a DKIM key"),
        checks: RecordChecks::all(RecordStatus::Verified),
        status: DomainStatus::Verified,
        dns_verification_skipped: true,
        created_at: ids.now(),
        verification_started_at: Some(ids.now()),
        last_checked_at: Some(ids.now()),
        next_check_at: Some(ids.now()),
        failed_checks: 2,
    }
}

/// A team with two keys (one used), a domain, a webhook mid-rotation and two suppressions
/// on RocksDB come out of PostgreSQL as they went in, counted, and the database is
/// initialised with the node's operator team.
#[test]
fn teams_keys_domains_webhooks_and_suppressions_are_copied_as_they_were() {
    let copying = Copying::new();
    let (ids, local) = (copying.ids(), &copying.local);
    let operator = team(ids, "Operator", true);
    let other = team(ids, "Tenant", false);
    let (first_key, first_token) = key(ids, operator.id, Permission::FullAccess);
    let (second_key, _) = key(ids, other.id, Permission::SendingAccess);
    local
        .accounts
        .initialise(&operator, &first_key, first_token.digest(), ids.now())
        .expect("initialise");
    local.accounts.put_team(&other).expect("team");
    local.accounts.insert_key(&second_key, [7; 32]).expect("key");
    let used_at = ids.now();
    local.accounts.record_use(first_key.id, used_at);
    wait_for(|| local.accounts.last_used(first_key.id).expect("used").is_some());
    let shop = domain(ids, operator.id, "shop.example.com");
    local.domains.insert(&shop, None).expect("domain");
    let hook = Webhook {
        id: ids.next_id(),
        team_id: other.id,
        endpoint: "https://hooks.example.com/in".into(),
        events: vec!["email.sent".into(), "email.bounced".into()],
        status: WebhookStatus::Disabled,
        signing_secret: SigningSecret::generate().expect("secret"),
        previous_secret: Some(PreviousSecret {
            secret: SigningSecret::generate().expect("secret"),
            until: ids.now(),
        }),
        created_at: ids.now(),
    };
    local.webhooks.put(&hook).expect("webhook");
    let suppressed: Vec<Suppression> = ["a@example.com", "b@example.com"]
        .iter()
        .map(|email| Suppression {
            id: ids.next_id(),
            team_id: operator.id,
            email: (*email).into(),
            origin: Origin::Complaint,
            source_id: Some(ids.next_id()),
            created_at: ids.now(),
        })
        .collect();
    local.suppressions.apply(&suppressed, &[], &[]).expect("suppress");

    let (copied, shared) = copying.copy();
    assert!(!copied.restarted);
    assert_eq!(count(&copied, "teams"), 2);
    assert_eq!(count(&copied, "API keys"), 2);
    assert_eq!(count(&copied, "domains"), 1);
    assert_eq!(count(&copied, "webhooks"), 1);
    assert_eq!(count(&copied, "suppressions"), 2);

    assert_eq!(shared.accounts.initialised().expect("initialised"), Some(operator.id));
    assert_eq!(
        shared.accounts.teams().expect("teams"),
        vec![operator.clone(), other.clone()]
    );
    let found = shared
        .accounts
        .key_by_digest(&first_token.digest())
        .expect("by digest")
        .expect("the operator's key authenticates on the database");
    assert_eq!(*found, first_key);
    assert_eq!(
        shared.accounts.key(other.id, second_key.id).expect("key"),
        Some(second_key)
    );
    assert_eq!(shared.accounts.last_used(first_key.id).expect("used"), Some(used_at));
    assert_eq!(
        shared.domains.get(operator.id, shop.id).expect("domain"),
        Some(shop.clone())
    );
    assert_eq!(
        shared
            .domains
            .by_name(operator.id, &shop.name)
            .expect("by name")
            .as_deref(),
        Some(&shop)
    );
    // As stored, secrets and all (a webhook has no equality of its own).
    assert_eq!(
        serde_json::to_value(shared.webhooks.for_team(other.id).expect("webhooks")).expect("encode"),
        serde_json::to_value(vec![hook]).expect("encode")
    );
    let (entries, more) = shared.suppressions.page(operator.id, &all(), None).expect("page");
    assert!(!more);
    assert_eq!(entries.len(), 2);
    for entry in &suppressed {
        assert_eq!(
            shared
                .suppressions
                .find(operator.id, &entry.email)
                .expect("find")
                .as_ref(),
            Some(entry)
        );
    }
}

/// A database that holds records (another node's, or its own start) is refused, naming
/// what it holds, and nothing in it changes.
#[test]
fn a_database_that_holds_records_is_refused() {
    let copying = Copying::new();
    let ids = copying.ids();
    let operator = team(ids, "Operator", true);
    copying.local.accounts.put_team(&operator).expect("team");
    let theirs = herald::accounts::PostgresAccounts::new(copying.db.clone());
    let their_team = team(ids, "Theirs", false);
    herald::accounts::AccountStore::put_team(&theirs, &their_team).expect("their team");
    match copying.refused() {
        Refused::NotEmpty(what) => assert!(what.contains("teams"), "{what}"),
        other => panic!("refused for another reason: {other}"),
    }
    assert_eq!(
        herald::accounts::AccountStore::teams(&theirs).expect("teams"),
        vec![their_team],
        "the database is untouched"
    );
    assert_eq!(copying.node.records_shared().expect("marker"), None, "nothing moved");
}

/// A copy that stopped part way (its stamp and some rows are in the database) is cleared
/// and done again by the next run, which says so; once done, the data directory is
/// marked as moved and a third run is refused.
#[test]
fn a_copy_that_failed_part_way_is_done_again_and_a_finished_one_is_not() {
    let copying = Copying::new();
    let ids = copying.ids();
    let operator = team(ids, "Operator", true);
    let (first_key, token) = key(ids, operator.id, Permission::FullAccess);
    copying
        .local
        .accounts
        .initialise(&operator, &first_key, token.digest(), ids.now())
        .expect("initialise");
    // What a copy that died after its first chunk leaves: the stamp naming this node's
    // operator team, and part of the records (here a team the node does not even have).
    let stray = team(ids, "Stray", false);
    copying
        .db
        .execute(
            "INSERT INTO herald_meta (name, team_id, at) VALUES ('copying', $1, now())",
            &[&operator.id.uuid()],
        )
        .expect("stamp");
    let shared_accounts = herald::accounts::PostgresAccounts::new(copying.db.clone());
    herald::accounts::AccountStore::put_team(&shared_accounts, &stray).expect("stray team");

    let (copied, shared) = copying.copy();
    assert!(copied.restarted, "the run says it cleared an unfinished copy");
    assert_eq!(count(&copied, "teams"), 1);
    assert_eq!(
        shared.accounts.teams().expect("teams"),
        vec![operator.clone()],
        "the stray row is gone"
    );
    assert_eq!(shared.accounts.initialised().expect("initialised"), Some(operator.id));
    let stamps = copying
        .db
        .one("SELECT count(*) FROM herald_meta WHERE name = 'copying'", &[], |row| {
            Ok(row.get::<_, i64>(0))
        })
        .expect("stamps");
    assert_eq!(stamps, Some(0), "the stamp goes when the copy is done");
    assert_eq!(
        copying.node.records_shared().expect("marker"),
        Some(copying.db.url().to_owned())
    );
    match copying.refused() {
        Refused::Moved(url) => assert_eq!(url, copying.db.url()),
        other => panic!("refused for another reason: {other}"),
    }
}
