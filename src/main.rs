//! The `herald` command: `herald serve` runs the server; `herald config` prints the
//! effective configuration. Exit codes: 0 success, 1 a runtime failure, 2 a usage or
//! configuration error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
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
}

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
        Command::Serve { config } => {
            let config = match Config::load(config.as_deref()) {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("herald: {error}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            herald::telemetry::init_logging(&config.log);
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
