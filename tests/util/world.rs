//! Services without sockets: a real store and spool in a temp directory on the manual
//! clock, the operator's team, and a verified domain `example.test` to send from.

use std::sync::Arc;

use herald::accounts::Permission;
use herald::config::{Config, DkimAlgorithm};
use herald::domains::{Domain, DomainStatus, RecordChecks, RecordStatus, TlsPolicy};
use herald::emails::submit::Sender;
use herald::outbound::Outbound;
use herald::services::Services;
use herald_queue::{Id, ManualClock, Spool, Store, StoreOptions, Timestamp};

/// The services and what a test drives them with.
pub struct World {
    /// The services.
    pub services: Services,
    /// The clock, moved only by the test.
    pub clock: Arc<ManualClock>,
    /// The operator's team.
    pub team: Id,
    _dir: tempfile::TempDir,
}

impl World {
    /// Whether something woke the delivery scheduler since the last look (and takes the
    /// wake).
    pub fn delivery_was_woken(&self) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        // `timeout` polls the wait first: a wake already given completes it.
        let woken = self.services.delivery_wake().woken();
        runtime.block_on(async { tokio::time::timeout(std::time::Duration::ZERO, woken).await.is_ok() })
    }

    /// A fresh world with `example.test` verified for the operator's team.
    pub fn new() -> World {
        World::with_config(|_| Config::defaults())
    }

    /// A fresh world as [`World::new`], on the config `make` gives for its directory.
    pub fn with_config(make: impl FnOnce(&std::path::Path) -> Config) -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
        let mut options = StoreOptions::new(dir.path().join("spool"));
        options.min_free_space = 0;
        options.clock = clock.clone();
        let store = Store::open(options).expect("open the store");
        let (spool, _) = Spool::open(store.clone()).expect("open the spool");
        let team = store.next_id();
        // As `[webhooks] allow_private_endpoints` defaults: private endpoints are refused.
        let outbound = Outbound::new(false, Vec::new()).expect("outbound client");
        let services = Services::new(
            make(dir.path()),
            herald::storage::Node::new(store),
            spool,
            team,
            outbound,
        );
        verified_domain(&services, team, "example.test");
        World {
            services,
            clock,
            team,
            _dir: dir,
        }
    }

    /// The operator's team as it sends over the API, with a full-access key.
    pub fn sender(&self) -> Sender {
        Sender {
            team_id: self.team,
            api_key_id: None,
            permission: Permission::FullAccess,
            domain_id: None,
            request_log_id: None,
        }
    }
}

/// Stores `name` as a verified domain of `team`, as the domains API and verifier would.
pub fn verified_domain(services: &Services, team: Id, name: &str) -> Domain {
    let store = services.node().store();
    let domain = Domain {
        id: store.next_id(),
        team_id: team,
        name: name.to_owned(),
        region: "us-east-1".into(),
        custom_return_path: "send".into(),
        open_tracking: false,
        click_tracking: false,
        tls: TlsPolicy::Opportunistic,
        tracking_subdomain: None,
        dkim: herald::domains::generate_dkim_key(DkimAlgorithm::Ed25519).expect("key"),
        checks: RecordChecks::all(RecordStatus::Verified),
        status: DomainStatus::Verified,
        dns_verification_skipped: true,
        created_at: store.now(),
        verification_started_at: None,
        last_checked_at: None,
        next_check_at: None,
        failed_checks: 0,
    };
    services.domains().insert(&domain, None).expect("insert");
    domain
}
