//! `herald queue ...`: the spool as Postfix's `mailq`, `postqueue -f` and `postsuper -d`
//! show and change it, through `/queue`.

use clap::Subcommand;
use hyper::Method;
use serde_json::{Value, json};

use super::{items, text};
use crate::client::Client;

/// `herald queue ...`
#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// One line per queued email: id, age, next attempt, attempts, recipients left, last
    /// reply.
    List {
        /// Only emails with a recipient not yet delivered at this destination domain.
        #[arg(long)]
        domain: Option<String>,
        /// Only emails in this state: due, scheduled, deferred or in-flight.
        #[arg(long)]
        status: Option<String>,
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// An email's envelope, its recipients with their states, and its attempt log.
    Show {
        /// The email's id.
        id: String,
    },
    /// Make deferred mail due now (with a team's key, a minute after the receiver's last
    /// answer at the soonest): one email, a destination domain, or all of it.
    Retry {
        /// The email's id.
        #[arg(conflicts_with_all = ["domain", "all"], required_unless_present_any = ["domain", "all"])]
        id: Option<String>,
        /// Every deferred recipient at this destination domain.
        #[arg(long, conflicts_with = "all")]
        domain: Option<String>,
        /// Every deferred recipient (the team's, or every team's with the operator's key).
        #[arg(long)]
        all: bool,
    },
    /// Take an email out of the queue: its undelivered recipients end as canceled.
    Delete {
        /// The email's id.
        id: String,
    },
    /// Counts by state and by destination domain, and the oldest email.
    Stats,
}

/// Runs a `queue` command.
pub async fn queue(client: &Client, command: QueueCommand) -> anyhow::Result<()> {
    match command {
        QueueCommand::List { domain, status, limit } => {
            let mut query = form_urlencoded::Serializer::new(String::new());
            query.append_pair("limit", &limit.to_string());
            if let Some(domain) = &domain {
                query.append_pair("domain", domain);
            }
            if let Some(status) = &status {
                query.append_pair("status", status);
            }
            let list = client
                .call(Method::GET, &format!("/queue?{}", query.finish()), None)
                .await?;
            print_list(&list);
        }
        QueueCommand::Show { id } => {
            let email = client.call(Method::GET, &format!("/queue/{id}"), None).await?;
            print_email(&email);
        }
        QueueCommand::Retry { id, domain, all } => {
            let retried = match (id, domain) {
                (Some(id), _) => client.call(Method::POST, &format!("/queue/{id}/retry"), None).await?,
                (None, Some(domain)) => {
                    let body = json!({ "domain": domain });
                    client.call(Method::POST, "/queue/retry", Some(&body)).await?
                }
                (None, None) => {
                    let body = json!({ "all": all });
                    client.call(Method::POST, "/queue/retry", Some(&body)).await?
                }
            };
            println!(
                "{} recipients of {} emails brought forward ({} emails skipped: a delivery attempt holds them)",
                number(&retried, "recipients"),
                number(&retried, "messages"),
                number(&retried, "skipped_in_flight"),
            );
        }
        QueueCommand::Delete { id } => {
            let deleted = client.call(Method::DELETE, &format!("/queue/{id}"), None).await?;
            println!(
                "deleted {id} from the queue: {} recipients canceled",
                number(&deleted, "canceled")
            );
        }
        QueueCommand::Stats => {
            let stats = client.call(Method::GET, "/queue/stats", None).await?;
            print_stats(&stats);
        }
    }
    Ok(())
}

fn number(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or(0)
}

fn print_list(list: &Value) {
    println!(
        "{:<36}  {:>8}  {:<9}  {:<28}  {:>8}  {:>5}  LAST REPLY",
        "ID", "AGE", "STATUS", "NEXT ATTEMPT", "ATTEMPTS", "LEFT"
    );
    for email in items(list) {
        println!(
            "{:<36}  {:>8}  {:<9}  {:<28}  {:>8}  {:>5}  {}",
            text(email, "id"),
            age(number(email, "age_seconds")),
            text(email, "status"),
            email["next_attempt_at"].as_str().unwrap_or("-"),
            number(email, "attempts"),
            number(email, "recipients_left"),
            email["last_reply"].as_str().unwrap_or("-"),
        );
    }
    if list["has_more"] == true {
        println!("(more: raise --limit or narrow with --domain and --status)");
    }
}

fn print_email(email: &Value) {
    println!("id:            {}", text(email, "id"));
    println!("team:          {}", text(email, "team_id"));
    println!("status:        {}", text(email, "status"));
    println!("from:          {}", email["header_from"].as_str().unwrap_or("-"));
    println!("return path:   {}", text(email, "return_path"));
    println!("subject:       {}", email["subject"].as_str().unwrap_or("-"));
    println!(
        "accepted:      {} ({} ago)",
        text(email, "created_at"),
        age(number(email, "age_seconds"))
    );
    println!("next attempt:  {}", email["next_attempt_at"].as_str().unwrap_or("-"));
    println!("expires:       {}", text(email, "expires_at"));
    println!("size:          {} bytes", number(email, "size"));
    println!("recipients:");
    for recipient in email["recipient_states"].as_array().map_or(&[][..], Vec::as_slice) {
        let when = recipient["next_attempt_at"]
            .as_str()
            .or_else(|| recipient["at"].as_str())
            .unwrap_or("-");
        println!(
            "  {:<40} {:<10} attempts {:<3} {when}  {}",
            text(recipient, "address"),
            text(recipient, "state"),
            number(recipient, "attempts"),
            recipient["last_reply"].as_str().unwrap_or(""),
        );
    }
    println!("attempts:");
    for attempt in email["attempt_log"].as_array().map_or(&[][..], Vec::as_slice) {
        println!(
            "  {}  {} [{}]{} {}  -> {}",
            text(attempt, "at"),
            attempt["host"].as_str().unwrap_or("(no host)"),
            attempt["ip"].as_str().unwrap_or("-"),
            attempt["source"]
                .as_str()
                .map_or_else(String::new, |source| format!(" from {source}")),
            attempt["tls"].as_str().unwrap_or("plain"),
            text(attempt, "reply"),
        );
    }
}

fn print_stats(stats: &Value) {
    println!(
        "{} emails, {} recipients not yet delivered",
        number(stats, "messages"),
        number(stats, "recipients")
    );
    let states = &stats["by_status"];
    println!(
        "due {}  scheduled {}  deferred {}  in flight {}",
        number(states, "due"),
        number(states, "scheduled"),
        number(states, "deferred"),
        number(states, "in_flight")
    );
    if let Some(oldest) = stats["oldest"].as_object() {
        let oldest = Value::Object(oldest.clone());
        println!(
            "oldest: {} accepted {} ({} ago)",
            text(&oldest, "id"),
            text(&oldest, "created_at"),
            age(number(&oldest, "age_seconds"))
        );
    }
    println!(
        "{:<40} {:>8} {:>10} {:>8}",
        "DOMAIN", "EMAILS", "RECIPIENTS", "DEFERRED"
    );
    for domain in stats["by_domain"].as_array().map_or(&[][..], Vec::as_slice) {
        println!(
            "{:<40} {:>8} {:>10} {:>8}",
            text(domain, "domain"),
            number(domain, "messages"),
            number(domain, "recipients"),
            number(domain, "deferred")
        );
    }
    let sources = stats["sources"].as_array().map_or(&[][..], Vec::as_slice);
    if !sources.is_empty() {
        println!();
        println!(
            "{:<16} {:<40} {:>11} {:>10} {:>11} {:>8}",
            "REGION", "SOURCE ADDRESS", "CONNECTIONS", "SENT TODAY", "DAILY LIMIT", "WARM-UP"
        );
        for source in sources {
            let limit = source["daily_limit"]
                .as_u64()
                .map_or_else(|| "-".to_owned(), |n| n.to_string());
            let warmup = if source["warmup"].is_object() {
                format!(
                    "{}/{}",
                    number(&source["warmup"], "day"),
                    number(&source["warmup"], "days")
                )
            } else {
                "-".to_owned()
            };
            println!(
                "{:<16} {:<40} {:>11} {:>10} {:>11} {:>8}",
                text(source, "region"),
                text(source, "address"),
                format!(
                    "{}/{}",
                    number(source, "connections"),
                    number(source, "connections_max")
                ),
                number(source, "sent_today"),
                limit,
                warmup
            );
        }
    }
    let tables = stats["tables"].as_array().map_or(&[][..], Vec::as_slice);
    if !tables.is_empty() {
        println!();
        println!("{:<24} {:>12} {:>12} {:>12}", "TABLE", "DISK", "MEMORY", "KEYS (EST.)");
        for table in tables {
            println!(
                "{:<24} {:>12} {:>12} {:>12}",
                text(table, "table"),
                bytes(number(table, "disk_bytes")),
                bytes(number(table, "memory_bytes")),
                number(table, "keys")
            );
        }
    }
}

/// `count` bytes in binary units: `0 B`, `12.3 KiB`, `4.0 GiB`.
fn bytes(count: u64) -> String {
    bytesize::ByteSize::b(count).display().iec().to_string()
}

/// `seconds` as the largest whole unit or two: `45s`, `12m`, `3h05m`, `2d04h`.
fn age(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
        _ => format!("{}d{:02}h", seconds / 86_400, seconds % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age(0), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(61), "1m");
        assert_eq!(age(3600 + 5 * 60), "1h05m");
        assert_eq!(age(2 * 86_400 + 4 * 3600), "2d04h");
    }
}
