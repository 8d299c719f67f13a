//! `herald serve`: opens the store, initialises the data directory on first start, loads
//! TLS, binds the listeners and runs until shutdown.
//!
//! [`start`] returns a [`Running`] server with the addresses it bound (tests use port 0),
//! and [`Running::shutdown`] stops it: listeners close, connections get the grace period
//! to finish, then the store closes after its commit thread has written what is queued.

mod data_dir;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use herald_queue::{IdGenerator, SharedClock, Spool};
use herald_tls::ServerTls;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::accounts::{self, Bootstrap};
use crate::config::{Config, Listener};
use crate::delivery::Delivery;
use crate::dns::Dns;
use crate::http::ratelimit::RateLimits;
use crate::outbound::Outbound;
use crate::services::Services;
use crate::shutdown::Controller;
use crate::storage::{Backends, Node, NodeOptions};
use crate::{http, smtp};

/// What the adapters share: the [`Services`] (reached through `Deref`), and what only
/// the HTTP adapter needs (rate limits, blocking-pool permits).
#[derive(Debug)]
pub struct AppState {
    /// The services the adapters call, shared with the engines (delivery, webhook
    /// dispatch, domain verification, expiry).
    pub services: Arc<Services>,
    /// Per-team rate limits.
    pub rate_limits: RateLimits,
    /// Per-address limits for requests without a valid key.
    pub anonymous_limits: RateLimits<std::net::IpAddr>,
    /// Per-link limits of unsubscribe `POST`s: each changes stored preferences, so one
    /// link cannot be made to write without bound.
    pub unsubscribe_limits: RateLimits<u64>,
    /// Bounds API handlers running on the blocking pool at once.
    pub blocking: Semaphore,
    /// Bounds walks of the whole spool (`herald queue` lists, stats and retries) at once.
    pub queue_scans: Semaphore,
    /// Bounds contact imports being uploaded at once (`[contacts] uploads_max`).
    pub uploads: Semaphore,
    /// Dashboard sign-in failures, per account and address.
    pub dashboard_guard: crate::dashboard::guard::Guard,
    /// Pending Google and GitHub sign-ins.
    pub identity: crate::dashboard::identity::Identity,
    /// DNS for the deliverability insights: the configured resolver, with its cache.
    pub dns: Dns,
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl AppState {
    /// API handlers that may run on the blocking pool at once: enough to keep both cores
    /// and the disk busy, few enough that a flood of requests queues instead of spawning
    /// hundreds of threads.
    pub const BLOCKING_MAX: usize = 64;

    /// Walks of the whole spool at once. Each reads every envelope (a team's own mail is
    /// found among everyone's), so without a bound a few clients looping on
    /// `GET /queue/stats` could hold the blocking threads that accept mail.
    pub const QUEUE_SCANS_MAX: usize = 2;
}

/// How to start a server.
#[derive(Debug)]
pub struct Options {
    /// The configuration.
    pub config: Config,
    /// The clock every deadline reads.
    pub clock: SharedClock,
    /// `HERALD_BOOTSTRAP_API_KEY`, read by the caller so tests need not set process-wide
    /// environment variables.
    pub bootstrap_api_key: Option<String>,
}

/// A server that is running.
pub struct Running {
    /// The HTTP listener's address.
    pub http_addr: SocketAddr,
    /// The HTTPS listener's address (`[http] tls_listen`), when there is one.
    pub https_addr: Option<SocketAddr>,
    /// The SMTP listeners bound, with their actual addresses.
    pub smtp: Vec<(Listener, SocketAddr)>,
    /// Default SMTP listeners skipped for lack of privilege.
    pub skipped: Vec<Listener>,
    /// What the first-start check did.
    pub bootstrap: Bootstrap,
    /// The shared state.
    pub state: Arc<AppState>,
    tls: ServerTls,
    controller: Controller,
    tasks: JoinSet<()>,
    delivery: Option<Delivery>,
}

impl Running {
    /// Re-reads the TLS certificate files (SIGHUP). On error the old certificates stay.
    pub fn reload_tls(&self) -> Result<(), herald_tls::Error> {
        self.tls.reload()
    }

    /// Stops accepting, lets connections finish within `[server] shutdown_grace`, then
    /// closes the store. Returns whether everything finished in time.
    pub async fn shutdown(mut self) -> bool {
        let grace = self.state.config().server.shutdown_grace;
        // One grace period for everything: connections draining and deliveries in flight
        // share it, so a stop takes at most `grace` (plus closing the store).
        let deadline = std::time::Instant::now() + grace;
        let drained = self.controller.shutdown(grace).await;
        if !drained {
            tracing::warn!(?grace, "connections still open after the grace period; closing them");
        }
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        if let Some(delivery) = self.delivery.take() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let _ = tokio::task::spawn_blocking(move || delivery.stop(left)).await;
        }
        // The last store handles drop with `self.state`; the commit thread then finishes
        // what is queued and RocksDB closes. That blocks, so it happens off the reactor.
        let state = self.state;
        let _ = tokio::task::spawn_blocking(move || drop(state)).await;
        drained
    }
}

/// Starts everything `options.config` describes.
pub async fn start(options: Options) -> anyhow::Result<Running> {
    let Options {
        config,
        clock,
        bootstrap_api_key,
    } = options;
    // Install the metrics recorder before anything records: counters incremented
    // without one are lost.
    let _ = crate::telemetry::metrics();
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let data_dir = config.server.data_dir.clone();
    data_dir::prepare(&data_dir)?;
    data_dir::prepare(&crate::contacts::imports::directory(&data_dir))?;

    let (node, spool, backends, bootstrap) = open_store(&config, clock.clone(), bootstrap_api_key).await?;
    let operator_team = match &bootstrap {
        Bootstrap::Existing { team_id } | Bootstrap::Created { team_id, .. } => *team_id,
    };
    let rate_limits = RateLimits::new(config.api.rate_limit, clock.clone());
    let anonymous_limits = RateLimits::new(config.api.rate_limit, clock.clone());
    let unsubscribe_limits = RateLimits::new(crate::http::public::UNSUBSCRIBE_RATE, clock.clone());
    let outbound = Outbound::new(
        config.webhooks.allow_private_endpoints,
        config.webhooks.allowed_networks.clone(),
    )?;
    let dns = Dns::new(&config.delivery.nameservers, false).context("cannot set up DNS (`delivery.nameservers`)")?;

    let tls = load_tls(&config).await?;
    let http_listener = smtp::listen(config.http.listen)
        .with_context(|| format!("cannot listen on {} (`http.listen`)", config.http.listen))?;
    let http_addr = http_listener.local_addr()?;
    let https_listener = match config.http.tls_listen {
        Some(addr) => Some(smtp::listen(addr).with_context(|| format!("cannot listen on {addr} (`http.tls_listen`)"))?),
        None => None,
    };
    let https_addr = https_listener
        .as_ref()
        .map(tokio::net::TcpListener::local_addr)
        .transpose()?;
    let mut config = config;
    if config.http.public_url == format!("http://{}", config.http.listen) {
        // The default names the address bound, not the port 0 a test asked for.
        config.http.public_url = format!("http://{http_addr}");
    }
    if !config.http.public_url.starts_with("https://") {
        tracing::info!(
            public_url = %config.http.public_url,
            "[http] public_url is not https: unsubscribe links go out without List-Unsubscribe-Post (RFC 8058 one-click needs https)"
        );
    }
    let bound = smtp::bind_listeners(&config.smtp).await?;

    let services = Arc::new(Services::assemble(
        config,
        backends,
        node,
        spool,
        operator_team,
        outbound,
    ));
    for team in services.accounts().teams()? {
        if let Some(plan) = team.plan.as_deref()
            && !services.config().plans.iter().any(|p| p.name == plan)
        {
            tracing::warn!(team_id = %team.id, plan, "the team's plan is no longer in [[plans]]: it sends without a limit");
        }
        if let Some(rate) = crate::accounts::teams::rate_of(&services, &team) {
            rate_limits.set_override(team.id, Some(rate));
        }
    }
    let config_uploads = services.config().contacts.uploads_max;
    let config_nameservers = services.config().delivery.nameservers.clone();
    let state = Arc::new(AppState {
        services,
        rate_limits,
        anonymous_limits,
        unsubscribe_limits,
        blocking: Semaphore::new(AppState::BLOCKING_MAX),
        queue_scans: Semaphore::new(AppState::QUEUE_SCANS_MAX),
        uploads: Semaphore::new(usize::try_from(config_uploads).unwrap_or(usize::MAX)),
        dashboard_guard: crate::dashboard::guard::Guard::default(),
        identity: crate::dashboard::identity::Identity::new()?,
        dns: Dns::new(&config_nameservers, true).context("cannot set up DNS (`delivery.nameservers`)")?,
    });
    let controller = Controller::default();
    let mut tasks = JoinSet::new();
    tasks.spawn(http::serve(
        http_listener,
        Arc::clone(&state),
        None,
        controller.handle(),
    ));
    if let Some(listener) = https_listener {
        let acceptor = http::tls_acceptor(&tls.server_config());
        tasks.spawn(http::serve(
            listener,
            Arc::clone(&state),
            Some(acceptor),
            controller.handle(),
        ));
    }
    tasks.spawn(crate::domains::verifier::run(
        Arc::clone(&state.services),
        dns,
        controller.handle(),
    ));
    tasks.spawn(crate::webhooks::dispatch::run(
        Arc::clone(&state.services),
        controller.handle(),
    ));
    tasks.spawn(crate::emails::idempotency::expiry::run(
        Arc::clone(&state.services),
        controller.handle(),
    ));
    tasks.spawn(
        state
            .node()
            .migrate_in_background(state.spool().clone(), controller.handle()),
    );
    tasks.spawn(crate::accounts::erasure::run(
        Arc::clone(&state.services),
        state.services.erasure_wake().clone(),
        controller.handle(),
    ));
    tasks.spawn(crate::contacts::imports::worker::run(
        Arc::clone(&state.services),
        controller.handle(),
    ));
    tasks.spawn(crate::broadcasts::worker::run(
        Arc::clone(&state.services),
        controller.handle(),
    ));
    let retention = state.config().retention;
    let [emails, content] = state.emails().expiries(retention.emails, retention.content);
    for (sweep, keep) in [
        (emails, retention.emails),
        (content, retention.content),
        (state.request_logs().expiry(), retention.request_logs),
        (state.counters().expiry(), retention.metrics),
        (state.webhook_log().expiry(), retention.webhook_messages),
        (state.audience().import_expiry(), retention.imports),
    ] {
        tasks.spawn(crate::retention::run(sweep, keep, controller.handle()));
    }
    let delivery = if state.config().delivery.enabled {
        Some(Delivery::start(Arc::clone(&state.services)).context("cannot start delivery")?)
    } else {
        tracing::warn!("delivery is disabled (`delivery.enabled = false`): mail stays in the spool");
        None
    };
    let context = smtp::ListenerContext {
        state: Arc::clone(&state),
        tls: smtp::acceptor(tls.server_config()),
        guard: smtp::Guard::new(state.config().smtp.limits.clone(), clock),
        trusted: Arc::new(smtp::Trusted::resolve(&state.services, &state.config().smtp.trusted)?),
    };
    let mut smtp_addrs = Vec::new();
    for (listener, socket) in bound.listeners {
        smtp_addrs.push((listener, socket.local_addr()?));
        tasks.spawn(smtp::serve(socket, listener, context.clone(), controller.handle()));
    }
    tracing::info!(
        http = %http_addr,
        https = %https_addr.map(|a| a.to_string()).unwrap_or_default(),
        smtp = %smtp_addrs.iter().map(|(_, a)| a.to_string()).collect::<Vec<_>>().join(", "),
        data_dir = %data_dir.display(),
        hostname = %state.config().server.hostname,
        "herald is ready"
    );
    Ok(Running {
        http_addr,
        https_addr,
        smtp: smtp_addrs,
        skipped: bound.skipped,
        bootstrap,
        state,
        tls,
        controller,
        tasks,
        delivery,
    })
}

/// Opens the node's store and the stores on it, and initialises the data directory on
/// its first start.
async fn open_store(
    config: &Config,
    clock: SharedClock,
    bootstrap_api_key: Option<String>,
) -> anyhow::Result<(Node, Spool, Backends, Bootstrap)> {
    let data_dir = config.server.data_dir.clone();
    let options = NodeOptions {
        path: data_dir.join("spool"),
        clock,
        min_free_space: config.spool.min_free_space,
        commit_queue_max: config.spool.commit_queue_max,
    };
    let postgres = config.cluster.postgres.clone();
    tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        // The database first: a node whose database refuses (unreachable, newer) makes
        // nothing in its data directory.
        let db = match &postgres {
            Some(postgres) => {
                let db = crate::storage::postgres::Postgres::connect(postgres)
                    .with_context(|| format!("[cluster] postgres {}", postgres.redacted))?;
                let schema = db
                    .migrate()
                    .with_context(|| format!("[cluster] postgres {}", postgres.redacted))?;
                tracing::info!(url = %postgres.redacted, schema = schema.database, "records in PostgreSQL");
                Some(db)
            }
            None => None,
        };
        let (node, spool) = Node::open(options)?;
        let backends = match &db {
            Some(db) => {
                crate::storage::copy::check_join(&node, db)?;
                node.mark_records_shared(db.url())?;
                Backends::postgres(&node, db)
            }
            None => {
                if let Some(url) = node.records_shared()? {
                    anyhow::bail!(
                        "this data directory's records are in PostgreSQL ({url}): set [cluster] postgres, \
                         or start on another data directory; starting without it would fork them"
                    );
                }
                Backends::rocksdb(&node)
            }
        };
        let bootstrap = accounts::bootstrap(
            &*backends.accounts,
            backends.clock.now(),
            &IdGenerator::default(),
            &data_dir,
            bootstrap_api_key.as_deref(),
        )?;
        Ok((node, spool, backends, bootstrap))
    })
    .await
    .context("the store's start-up task failed")?
}

async fn load_tls(config: &Config) -> anyhow::Result<ServerTls> {
    let options = herald_tls::ServerTlsOptions {
        cert: config.tls.cert.clone(),
        key: config.tls.key.clone(),
        extra: config
            .tls
            .sni
            .iter()
            .map(|(cert, key)| herald_tls::CertKeyPaths {
                cert: cert.clone(),
                key: key.clone(),
            })
            .collect(),
        data_dir: config.server.data_dir.clone(),
        hostname: config.server.hostname.clone(),
    };
    let tls = tokio::task::spawn_blocking(move || ServerTls::load(&options))
        .await
        .context("the TLS loading task failed")??;
    Ok(tls)
}

/// The data directory's bootstrap key file, if the first start generated one.
pub fn bootstrap_key_file(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join(accounts::BOOTSTRAP_KEY_FILE)
}
