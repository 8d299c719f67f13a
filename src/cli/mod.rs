//! The operator's command line for the running server: `herald
//! domains|keys|teams|queue ...`. Every command is a REST call through [`Client`];
//! nothing here opens the store.

mod queue;

pub use queue::{QueueCommand, queue};

use anyhow::Context as _;
use clap::Subcommand;
use hyper::Method;
use serde_json::{Value, json};

use crate::client::Client;

/// `herald domains ...`
#[derive(Debug, Subcommand)]
pub enum DomainsCommand {
    /// Add a sending domain and print the DNS records to publish.
    Add {
        /// The domain, e.g. example.com.
        name: String,
        /// DKIM key algorithm: rsa or ed25519 (default: [domains] dkim_algorithm).
        #[arg(long)]
        dkim_algorithm: Option<String>,
        /// The region its mail leaves from (default: [delivery] region).
        #[arg(long)]
        region: Option<String>,
    },
    /// List the team's domains.
    List,
    /// Check a domain's DNS records now (or, with --skip-dns, mark it verified).
    Verify {
        /// The domain name or id.
        name: String,
        /// Mark the domain verified without DNS, for local trials and benchmarks
        /// (the operator's key only; the domain records that it was verified this way).
        #[arg(long)]
        skip_dns: bool,
    },
}

/// `herald keys ...`
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create an API key and print its token (shown once).
    Create {
        /// A name for the key.
        name: String,
        /// Allow sending only.
        #[arg(long)]
        sending_only: bool,
        /// With --sending-only: the one domain (name or id) it may send from.
        #[arg(long, requires = "sending_only")]
        domain: Option<String>,
    },
    /// List the team's API keys.
    List,
    /// Delete an API key; it stops working at once.
    Revoke {
        /// The key's id.
        id: String,
    },
}

/// `herald teams ...`
#[derive(Debug, Subcommand)]
pub enum TeamsCommand {
    /// Create a team and print its first full-access API key (operator key only).
    Create {
        /// The team's name.
        name: String,
        /// The team's own rate limit, e.g. 100/s.
        #[arg(long)]
        rate_limit: Option<String>,
        /// The team's plan, one of `[[plans]]` (unlimited without one).
        #[arg(long)]
        plan: Option<String>,
    },
    /// List teams (operator key only).
    List,
}

/// `herald users ...`
#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Add a dashboard user: with --password-stdin they sign in at once; without, print
    /// a one-time invitation link (valid 7 days) where they set a password.
    Add {
        /// Their email address.
        email: String,
        /// The team (the operator's key only; default: the key's own).
        #[arg(long)]
        team: Option<String>,
        /// owner, admin or member.
        #[arg(long, default_value = "member")]
        role: String,
        /// Read the password from standard input (its first line).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List the team's users.
    List,
}

/// Runs a `users` command.
pub async fn users(client: &Client, command: UsersCommand) -> anyhow::Result<()> {
    match command {
        UsersCommand::Add {
            email,
            team,
            role,
            password_stdin,
        } => {
            let mut body = json!({ "email": email, "role": role });
            if let Some(team) = team {
                body["team_id"] = json!(team);
            }
            if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .context("cannot read the password from standard input")?;
                body["password"] = json!(line.trim_end_matches(['\r', '\n']));
            }
            let user = client.call(Method::POST, "/users", Some(&body)).await?;
            println!(
                "added {} ({}), role {}",
                text(&user, "email"),
                text(&user, "id"),
                text(&user, "role")
            );
            if let Some(url) = user["invitation_url"].as_str() {
                println!("invitation link (valid 7 days, shown only now): {url}");
            }
        }
        UsersCommand::List => {
            let list = client.call(Method::GET, "/users", None).await?;
            println!("{:<38} {:<8} {:<6} EMAIL", "ID", "ROLE", "MFA");
            for user in items(&list) {
                println!(
                    "{:<38} {:<8} {:<6} {}",
                    text(user, "id"),
                    text(user, "role"),
                    user["mfa"].as_bool().unwrap_or(false),
                    text(user, "email")
                );
            }
        }
    }
    Ok(())
}

/// Runs a `domains` command.
pub async fn domains(client: &Client, command: DomainsCommand) -> anyhow::Result<()> {
    match command {
        DomainsCommand::Add {
            name,
            dkim_algorithm,
            region,
        } => {
            let mut body = json!({ "name": name });
            if let Some(algorithm) = dkim_algorithm {
                body["dkim_algorithm"] = json!(algorithm);
            }
            if let Some(region) = region {
                body["region"] = json!(region);
            }
            let domain = client.call(Method::POST, "/domains", Some(&body)).await?;
            println!(
                "added {} ({}) in {}, status {}",
                domain["name"].as_str().unwrap_or_default(),
                domain["id"].as_str().unwrap_or_default(),
                domain["region"].as_str().unwrap_or_default(),
                domain["status"].as_str().unwrap_or_default()
            );
            println!(
                "publish these DNS records, then run `herald domains verify {}`:",
                domain["name"].as_str().unwrap_or_default()
            );
            print_records(&domain);
        }
        DomainsCommand::List => {
            let list = client.call(Method::GET, "/domains", None).await?;
            println!("{:<38} {:<20} {:<16} {:<30}", "ID", "STATUS", "REGION", "NAME");
            for domain in items(&list) {
                println!(
                    "{:<38} {:<20} {:<16} {:<30}",
                    text(domain, "id"),
                    text(domain, "status"),
                    text(domain, "region"),
                    text(domain, "name")
                );
            }
        }
        DomainsCommand::Verify { name, skip_dns } => {
            let id = domain_id(client, &name).await?;
            let body = json!({ "skip_dns": skip_dns });
            client
                .call(Method::POST, &format!("/domains/{id}/verify"), Some(&body))
                .await?;
            let domain = client.call(Method::GET, &format!("/domains/{id}"), None).await?;
            println!("{}: {}", text(&domain, "name"), text(&domain, "status"));
            if !skip_dns {
                println!("DNS is being checked in the background; `herald domains list` shows the result.");
                print_records(&domain);
            }
        }
    }
    Ok(())
}

/// Runs a `keys` command.
pub async fn keys(client: &Client, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create {
            name,
            sending_only,
            domain,
        } => {
            let mut body =
                json!({ "name": name, "permission": if sending_only { "sending_access" } else { "full_access" } });
            if let Some(domain) = domain {
                body["domain_id"] = json!(domain_id(client, &domain).await?);
            }
            let key = client.call(Method::POST, "/api-keys", Some(&body)).await?;
            println!("created key {}", text(&key, "id"));
            println!("token (shown only now): {}", text(&key, "token"));
        }
        KeysCommand::List => {
            let list = client.call(Method::GET, "/api-keys", None).await?;
            println!(
                "{:<38} {:<16} {:<28} {:<28} NAME",
                "ID", "PERMISSION", "CREATED", "LAST USED"
            );
            for key in items(&list) {
                println!(
                    "{:<38} {:<16} {:<28} {:<28} {}",
                    text(key, "id"),
                    text(key, "permission"),
                    text(key, "created_at"),
                    key["last_used_at"].as_str().unwrap_or("never"),
                    text(key, "name")
                );
            }
        }
        KeysCommand::Revoke { id } => {
            client.call(Method::DELETE, &format!("/api-keys/{id}"), None).await?;
            println!("revoked key {id}");
        }
    }
    Ok(())
}

/// Runs a `teams` command.
pub async fn teams(client: &Client, command: TeamsCommand) -> anyhow::Result<()> {
    match command {
        TeamsCommand::Create { name, rate_limit, plan } => {
            let mut body = json!({ "name": name });
            if let Some(rate) = rate_limit {
                body["rate_limit"] = json!(rate);
            }
            if let Some(plan) = plan {
                body["plan"] = json!(plan);
            }
            let team = client.call(Method::POST, "/teams", Some(&body)).await?;
            println!("created team {} ({})", text(&team, "name"), text(&team, "id"));
            println!(
                "its first API key (shown only now): {}",
                team["api_key"]["token"].as_str().unwrap_or_default()
            );
        }
        TeamsCommand::List => {
            let list = client.call(Method::GET, "/teams", None).await?;
            println!("{:<38} {:<10} NAME", "ID", "OPERATOR");
            for team in items(&list) {
                println!(
                    "{:<38} {:<10} {}",
                    text(team, "id"),
                    team["operator"].as_bool().unwrap_or(false),
                    text(team, "name")
                );
            }
        }
    }
    Ok(())
}

/// The id of the domain named `name_or_id`.
async fn domain_id(client: &Client, name_or_id: &str) -> anyhow::Result<String> {
    if name_or_id.parse::<herald_queue::Id>().is_ok() {
        return Ok(name_or_id.to_owned());
    }
    let wanted = name_or_id.trim_end_matches('.').to_ascii_lowercase();
    let list = client.call(Method::GET, "/domains", None).await?;
    items(&list)
        .iter()
        .find(|d| d["name"] == wanted.as_str())
        .map(|d| text(d, "id").to_owned())
        .with_context(|| format!("no domain named {wanted} in this team"))
}

pub(crate) fn items(list: &Value) -> &[Value] {
    list["data"].as_array().map_or(&[], Vec::as_slice)
}

pub(crate) fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_default()
}

/// The required records, then the recommended DMARC record (a field of its own in the
/// API's answer, so that SDKs decoding `records` strictly keep working).
fn print_records(domain: &Value) {
    let name = text(domain, "name");
    for record in items(&json!({ "data": domain["records"] })) {
        print_record(name, text(record, "record"), record, "");
    }
    if domain["dmarc"].is_object() {
        print_record(name, "DMARC", &domain["dmarc"], " (recommended)");
    }
}

fn print_record(name: &str, kind: &str, record: &Value, note: &str) {
    let host = format!("{}.{name}", text(record, "name"));
    let priority = record["priority"].as_u64().map(|p| format!("{p} ")).unwrap_or_default();
    println!(
        "  {kind:<6} {:<4} {host:<40} {priority}{}  [{}]{note}",
        text(record, "type"),
        text(record, "value"),
        text(record, "status"),
    );
}
