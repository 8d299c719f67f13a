//! The `herald` command: `herald serve` runs the server; `herald config` prints the
//! effective configuration. Exit codes: 0 success, 1 a runtime failure, 2 a usage or
//! configuration error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use herald::cli;
use herald::client::Client;
use herald::config::Config;
use herald::server::{self, Options};
use herald_queue::SystemClock;
use tokio::signal::unix::{SignalKind, signal};

/// herald: self-hosted email delivery with a Resend-compatible API.
#[derive(Debug, Parser)]
#[command(name = "herald", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (SMTP submission, REST API, delivery, webhooks).
    Serve {
        /// Config file; without it, ./herald.toml if present, else built-in defaults.
        #[arg(long, short, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Print the effective configuration, secrets redacted.
    Config {
        /// Config file; without it, ./herald.toml if present, else built-in defaults.
        #[arg(long, short, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Manage sending domains on the running server.
    Domains {
        #[command(subcommand)]
        command: cli::DomainsCommand,
        #[command(flatten)]
        remote: Remote,
    },
    /// Manage API keys on the running server.
    Keys {
        #[command(subcommand)]
        command: cli::KeysCommand,
        #[command(flatten)]
        remote: Remote,
    },
    /// Manage teams on the running server (operator key only).
    Teams {
        #[command(subcommand)]
        command: cli::TeamsCommand,
        #[command(flatten)]
        remote: Remote,
    },
    /// Manage dashboard users on the running server.
    Users {
        #[command(subcommand)]
        command: cli::UsersCommand,
        #[command(flatten)]
        remote: Remote,
    },
    /// The database of records (`[cluster] postgres`); needs no running server.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// The node's own store; needs the node stopped.
    #[command(name = "store")]
    NodeStore {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// See and act on the running server's mail queue.
    Queue {
        #[command(subcommand)]
        command: cli::QueueCommand,
        #[command(flatten)]
        remote: Remote,
    },
}

/// `herald db`.
#[derive(Debug, Subcommand)]
enum DbCommand {
    /// Show the schema's version in the database beside this build's, changing nothing.
    Status {
        /// Config file; without it, ./herald.toml if present, else built-in defaults.
        #[arg(long, short, value_name = "PATH")]
        config: Option<PathBuf>,
    },
}

/// `herald store`.
#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Copy every record of this stopped node (its data directory, from --config) into an
    /// empty PostgreSQL database, then mark the directory as moved: start the node again
    /// with `[cluster] postgres` set to the same URL. Safe to run again after a failure.
    Copy {
        /// Config file; without it, ./herald.toml if present, else built-in defaults.
        #[arg(long, short, value_name = "PATH")]
        config: Option<PathBuf>,
        /// The database, as `[cluster] postgres` would name it (postgres://...).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// How the command line reaches the running server.
#[derive(Debug, clap::Args)]
struct Remote {
    /// The server's config file (for [http] listen and the bootstrap key's location).
    #[arg(long, short, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// The REST API's URL, e.g. http://127.0.0.1:3000 (default: from the config).
    #[arg(long, global = true, env = "HERALD_URL")]
    url: Option<String>,
}

/// mimalloc instead of the system allocator: herald allocates many short-lived buffers
/// per request (JSON, MIME, records), where glibc's malloc showed up as a fifth of the CPU
/// time in the `emails` benchmark.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXIT_FAILURE: u8 = 1;
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Config { config } => match Config::load(config.as_deref()) {
            Ok(config) => {
                print!("{}", config.to_toml());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("herald: {error}");
                ExitCode::from(EXIT_CONFIG)
            }
        },
        Command::Db {
            command: DbCommand::Status { config },
        } => db_status(config.as_deref()),
        Command::NodeStore {
            command: StoreCommand::Copy { config, to },
        } => store_copy(config.as_deref(), &to),
        Command::Domains { command, remote } => {
            admin(&remote, |client| async move { cli::domains(&client, command).await })
        }
        Command::Keys { command, remote } => admin(&remote, |client| async move { cli::keys(&client, command).await }),
        Command::Teams { command, remote } => {
            admin(&remote, |client| async move { cli::teams(&client, command).await })
        }
        Command::Queue { command, remote } => {
            admin(&remote, |client| async move { cli::queue(&client, command).await })
        }
        Command::Users { command, remote } => {
            admin(&remote, |client| async move { cli::users(&client, command).await })
        }
        Command::Serve { config } => {
            let config = match Config::load(config.as_deref()) {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("herald: {error}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            herald::telemetry::init_logging(&config.log);
            // Everything herald writes (the spool with its messages, DKIM keys, webhook
            // secrets and key digests; TLS and bootstrap key files) is for its own user
            // only, whatever umask it was started with.
            rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
            match run(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!("{error:#}");
                    eprintln!("herald: {error:#}");
                    ExitCode::from(EXIT_FAILURE)
                }
            }
        }
    }
}

/// `herald db status`: reads the config and the database, prints both versions.
fn db_status(config: Option<&std::path::Path>) -> ExitCode {
    let config = match Config::load(config) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("herald: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let Some(postgres) = &config.cluster.postgres else {
        eprintln!("herald: [cluster] postgres is not set: the records are in the node's RocksDB");
        return ExitCode::from(EXIT_CONFIG);
    };
    let status = herald::storage::postgres::Postgres::connect(postgres).and_then(|db| db.status());
    match status {
        Ok(status) => {
            println!("database: {}", postgres.redacted);
            print!("{status}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("herald: {}: {error}", postgres.redacted);
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// `herald store copy`: the stopped node's records into the database at `to`.
fn store_copy(config: Option<&std::path::Path>, to: &str) -> ExitCode {
    let copy = Config::load(config).and_then(|config| {
        let target = config.with_postgres(to)?;
        Ok((config, target))
    });
    let (config, target) = match copy {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("herald: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    println!(
        "copying the records of {} into {}",
        config.server.data_dir.display(),
        target.redacted
    );
    match herald::storage::copy::copy_node(&config, &target) {
        Ok(copied) => {
            if copied.restarted {
                println!("an earlier copy that did not finish was cleared first");
            }
            for (kind, count) in &copied.counts {
                println!("{kind:>24}  {count}");
            }
            println!(
                "done: start herald with [cluster] postgres = \"{}\" (the password as you gave it)",
                target.redacted
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("herald: {error:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// Runs an operator command against the running server's REST API, with
/// `HERALD_API_KEY` or the bootstrap key file.
fn admin<F, Fut>(remote: &Remote, command: F) -> ExitCode
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let config = match Config::load(remote.config.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("herald: {error}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let result = Client::new(&config, remote.url.as_deref(), std::env::var("HERALD_API_KEY").ok()).and_then(|client| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(command(client))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("herald: {error:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

fn run(config: Config) -> anyhow::Result<()> {
    // One rustls crypto provider throughout (aws-lc-rs); installing it as the process
    // default covers libraries that build their own TLS configs.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("herald")
        .build()?;
    runtime.block_on(serve(config))
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let running = server::start(Options {
        config,
        clock: Arc::new(SystemClock),
        bootstrap_api_key: std::env::var("HERALD_BOOTSTRAP_API_KEY").ok(),
    })
    .await?;
    notify(&[sd_notify::NotifyState::Ready]);
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = hangup.recv() => match running.reload_tls() {
                Ok(()) => tracing::info!("reloaded TLS certificates"),
                Err(error) => tracing::error!(%error, "TLS reload failed; keeping the current certificates"),
            },
        }
    }
    tracing::info!("shutting down");
    notify(&[sd_notify::NotifyState::Stopping]);
    let drained = running.shutdown().await;
    tracing::info!(drained, "stopped");
    Ok(())
}

/// Tells systemd (Type=notify) about readiness; a no-op outside systemd.
fn notify(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(error) = sd_notify::notify(false, states) {
        tracing::warn!(%error, "cannot notify systemd");
    }
}
