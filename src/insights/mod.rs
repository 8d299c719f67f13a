//! Deliverability insights for one email (`GET /emails/{id}/insights` and a panel on its
//! dashboard page): checks that each pass or fail with the concrete fix. Resend's (link
//! domains match the sender, a DMARC record, a text part, no "no-reply" sender, under
//! Gmail's 102 KB clipping, no link shorteners, a subdomain, tracking on the team's own
//! subdomain) and more: SPF and DKIM alignment with the `From` domain, a `none` DMARC
//! policy on a domain that sends in volume, `List-Unsubscribe` on bulk mail, image-only
//! HTML, links whose text shows another address, HTML and text that disagree, the
//! domain's recent bounce and complaint rates against 4 % and 0.08 %, and the sending
//! host's PTR and TLS certificate. DNS goes through the configured resolver and its cache,
//! all lookups at once, never waited on longer than one resolver timeout.

pub mod content;

use std::collections::HashSet;
use std::time::Duration;

use herald_queue::{Id, Timestamp};
use serde_json::{Value, json};

use crate::accounts::Caller;
use crate::counters::{self, Metric};
use crate::dns::{Dns, Lookup};
use crate::domains::{Domain, RecordStatus};
use crate::emails::EmailRecord;
use crate::services::{Error, Services};

/// How long the DNS checks may take together: one resolver timeout.
const DNS_WAIT: Duration = Duration::from_secs(5);

/// Gmail clips messages whose HTML is larger than this.
const CLIP_BYTES: usize = 102 * 1024;

/// Emails in 30 days from which a domain sends "in volume".
const VOLUME: u64 = 1_000;

/// Link shorteners that spam filters distrust.
const SHORTENERS: &[&str] = &[
    "bit.ly",
    "t.co",
    "tinyurl.com",
    "goo.gl",
    "ow.ly",
    "is.gd",
    "buff.ly",
    "rebrand.ly",
    "cutt.ly",
    "youtu.be",
    "shorturl.at",
    "rb.gy",
    "t.ly",
    "tiny.cc",
    "s.id",
];

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Nothing to do.
    Pass,
    /// Worth fixing.
    Warn,
    /// Hurts delivery: fix it.
    Fail,
    /// Does not apply, or could not be checked now (the detail says which).
    Skip,
}

impl Status {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// One check.
#[derive(Debug, Clone)]
pub struct Check {
    /// A stable id (`dmarc_record`, ...).
    pub id: &'static str,
    /// What is checked, for people.
    pub title: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do, when it did not pass.
    pub fix: Option<String>,
}

fn check(
    id: &'static str,
    title: &'static str,
    status: Status,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        id,
        title,
        status,
        detail: detail.into(),
        fix: fix.filter(|_| matches!(status, Status::Warn | Status::Fail)),
    }
}

/// An email's checks.
#[derive(Debug, Clone)]
pub struct Report {
    /// The email.
    pub email_id: Id,
    /// Its checks, in a fixed order.
    pub checks: Vec<Check>,
}

impl Report {
    /// The API's answer.
    pub fn to_json(&self) -> Value {
        let count = |status| self.checks.iter().filter(|c| c.status == status).count();
        json!({
            "object": "insights",
            "email_id": self.email_id.to_string(),
            "passed": count(Status::Pass),
            "warnings": count(Status::Warn),
            "failed": count(Status::Fail),
            "checks": self.checks.iter().map(|c| json!({
                "id": c.id,
                "title": c.title,
                "status": c.status.name(),
                "detail": c.detail,
                "fix": c.fix,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The registrable (organisational) domain of `name` by the Public Suffix List, as
/// DMARC alignment reads it: `example.co.uk` for `mail.example.co.uk`, and
/// `shop.github.io` for `www.shop.github.io`. A name that is itself a public suffix, or
/// not a domain at all, is its own.
pub fn organizational(name: &str) -> String {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    psl::domain_str(&name).map_or_else(|| name.clone(), str::to_owned)
}

/// The team's domain that sends for `name` (itself or its closest parent).
fn sending_domain(services: &Services, team: Id, name: &str) -> Result<Option<Domain>, Error> {
    let mut candidate = name.to_owned();
    loop {
        if let Some(domain) = services.domains().by_name(team, &candidate)? {
            return Ok(Some((*domain).clone()));
        }
        match candidate.split_once('.') {
            Some((_, parent)) if parent.contains('.') => candidate = parent.to_owned(),
            _ => return Ok(None),
        }
    }
}

/// What the DNS says.
struct Answers {
    dmarc: Lookup<Vec<String>>,
    ptr: Result<(std::net::IpAddr, Lookup<Vec<String>>), String>,
}

async fn ask(dns: &Dns, org: &str, hostname: &str) -> Answers {
    let name = format!("_dmarc.{org}");
    let dmarc = dns.txt(&name);
    let ptr = async {
        match dns.ips(hostname).await {
            Lookup::Found(ips) => {
                let ip = ips[0];
                Ok((ip, dns.ptr(ip).await))
            }
            Lookup::NotFound => Err(format!("{hostname} has no address in DNS")),
            Lookup::TemporaryFailure(why) => Err(format!("cannot look up {hostname} now: {why}")),
        }
    };
    let (dmarc, ptr) = tokio::join!(dmarc, ptr);
    Answers { dmarc, ptr }
}

/// Runs every check on the caller's email `id`. Call from a blocking thread: the DNS
/// lookups run on the current runtime.
pub fn for_email(services: &Services, dns: &Dns, caller: &Caller, id: Id) -> Result<Report, Error> {
    let record = crate::emails::service::get(services, caller, id)?;
    let from_domain = counters::domain_of(&record.from);
    let org = organizational(&from_domain);
    let domain = sending_domain(services, caller.team_id, &from_domain)?;
    let config = services.config();
    let hostname = config.server.hostname.clone();
    let answers = tokio::runtime::Handle::current().block_on(async {
        tokio::time::timeout(DNS_WAIT, ask(dns, &org, &hostname))
            .await
            .unwrap_or(Answers {
                dmarc: Lookup::TemporaryFailure("DNS took longer than the resolver timeout".into()),
                ptr: Err("DNS took longer than the resolver timeout".into()),
            })
    });
    let html = record.html.as_deref().unwrap_or_default();
    let content = content::read(html);
    let mut checks = Vec::new();
    checks.extend(content_checks(&record, &from_domain, &org, &content));
    checks.extend(domain_checks(
        domain.as_ref(),
        &from_domain,
        &org,
        &answers,
        services,
        caller.team_id,
    ));
    checks.push(list_unsubscribe(
        &record,
        config.http.public_url.starts_with("https://"),
    ));
    checks.push(ptr_check(&hostname, &answers));
    checks.push(certificate_check(config));
    Ok(Report {
        email_id: record.id,
        checks,
    })
}

fn content_checks(record: &EmailRecord, from_domain: &str, org: &str, content: &content::Content) -> Vec<Check> {
    let mut checks = Vec::new();
    let hosts: Vec<String> = content.links.iter().filter_map(|l| content::host(&l.href)).collect();
    let foreign: HashSet<&str> = hosts
        .iter()
        .filter(|h| organizational(h) != org)
        .map(String::as_str)
        .collect();
    checks.push(if hosts.is_empty() {
        check("link_domains", "Links point to the sending domain", Status::Pass, "The email has no links.", None)
    } else if foreign.is_empty() {
        check("link_domains", "Links point to the sending domain", Status::Pass, format!("Every link points under {org}."), None)
    } else {
        let mut shown: Vec<&str> = foreign.into_iter().collect();
        shown.sort_unstable();
        check(
            "link_domains",
            "Links point to the sending domain",
            Status::Warn,
            format!("Links point to {} while the email comes from {from_domain}.", shown.join(", ")),
            Some(format!("Link to pages under {org} (or redirect through a page of yours): filters compare link domains with the sender.")),
        )
    });
    let text_given = record.text.as_deref().is_some_and(|t| !t.trim().is_empty());
    checks.push(if text_given {
        check(
            "text_part",
            "A plain-text part",
            Status::Pass,
            "The email has a text part of its own.",
            None,
        )
    } else if record.html.is_some() {
        check(
            "text_part",
            "A plain-text part",
            Status::Warn,
            "herald derives the text part from the HTML.",
            Some("Write the text part yourself (the text field): a derived one reads as an afterthought.".into()),
        )
    } else {
        check(
            "text_part",
            "A plain-text part",
            Status::Pass,
            "The email is plain text.",
            None,
        )
    });
    let local = record
        .from
        .rsplit_once('<')
        .map_or(record.from.as_str(), |(_, rest)| rest)
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .replace(['-', '_', '.'], "");
    let no_reply = local.contains("noreply") || local.contains("donotreply");
    checks.push(check(
        "no_reply",
        "A sender people can answer",
        if no_reply { Status::Fail } else { Status::Pass },
        if no_reply {
            format!("{} says replies go nowhere.", record.from)
        } else {
            "The sender is not a no-reply address.".into()
        },
        Some("Send from an address that is read (support@, hello@): replies are a sign of wanted mail.".into()),
    ));
    let size = record.html.as_ref().map_or(0, String::len);
    checks.push(check(
        "size",
        "Under Gmail's 102 KB clipping",
        if size > CLIP_BYTES { Status::Fail } else { Status::Pass },
        format!("The HTML is {:.1} KB.", size as f64 / 1024.0),
        Some("Trim the HTML below 102 KB (inline CSS and images add up): Gmail hides the rest behind \"View entire message\", with the unsubscribe link.".into()),
    ));
    let short: Vec<&str> = hosts
        .iter()
        .filter(|h| SHORTENERS.contains(&h.as_str()))
        .map(String::as_str)
        .collect();
    checks.push(check(
        "short_links",
        "No shortened links",
        if short.is_empty() { Status::Pass } else { Status::Fail },
        if short.is_empty() {
            "No link goes through a shortener.".into()
        } else {
            format!("Links go through {}.", short.join(", "))
        },
        Some("Use the full address: shorteners hide where a link goes, and spammers use them.".into()),
    ));
    let misleading: Vec<String> = content
        .links
        .iter()
        .filter_map(|l| {
            let shown = content::shown_host(&l.text)?;
            let real = content::host(&l.href)?;
            (organizational(&shown) != organizational(&real)).then(|| format!("\"{}\" goes to {real}", l.text))
        })
        .collect();
    checks.push(check(
        "misleading_links",
        "Link text matches where links go",
        if misleading.is_empty() { Status::Pass } else { Status::Fail },
        if misleading.is_empty() {
            "No link shows one address and goes to another.".into()
        } else {
            misleading.join("; ")
        },
        Some("Make a link's text the address it opens, or plain words: a shown address that differs is what phishing looks like.".into()),
    ));
    let words = content.text.split_whitespace().count();
    // Images with next to no words: a banner and "view in browser".
    let image_only = content.images > 0 && words < 5;
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    checks.push(check(
        "image_only",
        "Text, not only images",
        if image_only { Status::Fail } else { Status::Pass },
        format!("{} and {}.", plural(content.images, "image"), plural(words, "word")),
        Some(
            "Put the message in text, with images beside it: filters cannot read images and many readers block them."
                .into(),
        ),
    ));
    checks.push(match (record.text.as_deref(), record.html.is_some()) {
        (Some(text), true) if !text.trim().is_empty() => {
            let set = |s: &str| -> HashSet<String> {
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 3)
                    .map(str::to_lowercase)
                    .collect()
            };
            let (a, b) = (set(text), set(&content.text));
            let shared = a.intersection(&b).count();
            let union = a.union(&b).count().max(1);
            #[allow(clippy::cast_precision_loss)]
            let overlap = shared as f64 / union as f64;
            check(
                "html_text_match",
                "HTML and text say the same",
                if overlap < 0.3 { Status::Warn } else { Status::Pass },
                format!("{:.0} % of their words are shared.", overlap * 100.0),
                Some(
                    "Make the text part the same message as the HTML: parts that disagree look like a disguise.".into(),
                ),
            )
        }
        _ => check(
            "html_text_match",
            "HTML and text say the same",
            Status::Skip,
            "The email has one part only.",
            None,
        ),
    });
    let _ = from_domain;
    checks
}

fn record_ok(status: RecordStatus) -> bool {
    status == RecordStatus::Verified
}

fn domain_checks(
    domain: Option<&Domain>,
    from_domain: &str,
    org: &str,
    answers: &Answers,
    services: &Services,
    team: Id,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let policy = match &answers.dmarc {
        Lookup::Found(records) => records
            .iter()
            .find(|r| r.trim_start().starts_with("v=DMARC1"))
            .map(|r| {
                r.split(';')
                    .filter_map(|t| t.trim().strip_prefix("p="))
                    .next()
                    .unwrap_or("none")
                    .to_ascii_lowercase()
            }),
        _ => None,
    };
    checks.push(match (&answers.dmarc, &policy) {
        (_, Some(p)) => check("dmarc_record", "A DMARC record", Status::Pass, format!("_dmarc.{org} has policy p={p}."), None),
        (Lookup::TemporaryFailure(why), None) => {
            check("dmarc_record", "A DMARC record", Status::Skip, format!("Could not look it up now: {why}"), None)
        }
        _ => check(
            "dmarc_record",
            "A DMARC record",
            Status::Fail,
            format!("_dmarc.{org} has no DMARC record."),
            Some(format!("Publish TXT _dmarc.{org} \"v=DMARC1; p=none; rua=mailto:dmarc@{org}\", then move to quarantine once reports look right: Gmail and Yahoo require DMARC from bulk senders.")),
        ),
    });
    // The domain's last 30 days.
    let now = services.now();
    let from = Timestamp::from_millis(now.as_millis().saturating_sub(30 * 86_400_000));
    let mut sent = 0;
    let (mut delivered, mut bounced, mut complained) = (0, 0, 0);
    if let Ok(counts) = services
        .counters()
        .read(team, counters::bucket_of(from), counters::bucket_of(now))
    {
        for count in counts.iter().filter(|c| organizational(&c.domain) == org) {
            match count.metric {
                Metric::Sent => sent += count.n,
                Metric::Delivered => delivered += count.n,
                Metric::BouncedPermanent | Metric::BouncedTransient | Metric::BouncedUndetermined => bounced += count.n,
                Metric::Complained => complained += count.n,
                _ => {}
            }
        }
    }
    checks.push(match policy.as_deref() {
        Some("none") if sent >= VOLUME => check(
            "dmarc_policy",
            "A DMARC policy that protects the domain",
            Status::Warn,
            format!("p=none, with {sent} emails in 30 days."),
            Some("Move to p=quarantine (then reject) once DMARC reports show only your own mail: at this volume, p=none lets anyone send as you.".into()),
        ),
        Some(p) => check("dmarc_policy", "A DMARC policy that protects the domain", Status::Pass, format!("p={p}, {sent} emails in 30 days."), None),
        None => check("dmarc_policy", "A DMARC policy that protects the domain", Status::Skip, "No DMARC record to read.", None),
    });
    let labels = from_domain.split('.').count();
    checks.push(check(
        "subdomain",
        "Sent from a subdomain",
        if labels > org.split('.').count() { Status::Pass } else { Status::Warn },
        format!("The email comes from {from_domain}."),
        Some(format!("Send from a subdomain such as mail.{org} or updates.{org}: its reputation stays apart from the domain people write to.")),
    ));
    match domain {
        None => checks.push(check(
            "alignment",
            "SPF and DKIM aligned with From",
            Status::Fail,
            format!("{from_domain} is not one of the team's domains."),
            Some("Add and verify the domain (POST /domains).".into()),
        )),
        Some(domain) => {
            checks.push(check(
                "spf_alignment",
                "SPF aligned with From",
                if record_ok(domain.checks.spf_txt) {
                    Status::Pass
                } else {
                    Status::Fail
                },
                format!(
                    "The return path {} is under {}; its SPF record is {}.",
                    domain.return_path_host(),
                    domain.name,
                    serde_json::to_value(domain.checks.spf_txt)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
                Some(format!(
                    "Publish the SPF TXT record of {} shown on the domain's page.",
                    domain.return_path_host()
                )),
            ));
            checks.push(check(
                "dkim_alignment",
                "DKIM aligned with From",
                if record_ok(domain.checks.dkim) {
                    Status::Pass
                } else {
                    Status::Fail
                },
                format!(
                    "Signed with d={}; the key record {} is {}.",
                    domain.name,
                    domain.dkim_host(),
                    serde_json::to_value(domain.checks.dkim)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
                Some(format!(
                    "Publish the DKIM TXT record at {} shown on the domain's page.",
                    domain.dkim_host()
                )),
            ));
            let tracking = domain.open_tracking || domain.click_tracking;
            checks.push(if !tracking {
                check("tracking_domain", "Tracking on your own subdomain", Status::Skip, "Open and click tracking are off.", None)
            } else {
                let own = domain.tracking_subdomain.is_some() && record_ok(domain.checks.tracking);
                check(
                    "tracking_domain",
                    "Tracking on your own subdomain",
                    if own { Status::Pass } else { Status::Fail },
                    match domain.tracking_host() {
                        Some(host) if own => format!("Tracked links go through {host}."),
                        Some(host) => format!("{host} is not verified, so links and opens are not tracked."),
                        None => "No tracking subdomain is set, so links and opens are not tracked.".into(),
                    },
                    Some("Set a tracking subdomain (links.example.com) and publish its CNAME: shared tracking domains carry other senders' reputation.".into()),
                )
            });
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let rate = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    };
    let bounce_rate = rate(bounced, sent);
    checks.push(check(
        "bounce_rate",
        "Bounce rate under 4 %",
        if sent == 0 {
            Status::Skip
        } else if bounce_rate >= 4.0 {
            Status::Fail
        } else {
            Status::Pass
        },
        format!("{bounced} of {sent} emails bounced in 30 days ({bounce_rate:.2} %)."),
        Some("Remove addresses that bounce, confirm sign-ups (double opt-in) and never send to bought lists.".into()),
    ));
    let complaint_rate = rate(complained, delivered);
    checks.push(check(
        "complaint_rate",
        "Complaint rate under 0.08 %",
        if delivered == 0 {
            Status::Skip
        } else if complaint_rate >= 0.08 {
            Status::Fail
        } else {
            Status::Pass
        },
        format!("{complained} of {delivered} delivered emails were marked as spam in 30 days ({complaint_rate:.3} %)."),
        Some(
            "Send only what people asked for, say who you are in the first line, and make unsubscribing one click."
                .into(),
        ),
    ));
    checks
}

fn list_unsubscribe(record: &EmailRecord, https: bool) -> Check {
    let bulk = record.topic_id.is_some()
        || record
            .html
            .as_deref()
            .is_some_and(|h| h.contains(crate::unsubscribe::MARKER));
    if !bulk {
        return check(
            "list_unsubscribe",
            "List-Unsubscribe on bulk mail",
            Status::Skip,
            "A transactional email (no topic): one-click unsubscribe is for bulk mail.",
            None,
        );
    }
    check(
        "list_unsubscribe",
        "List-Unsubscribe on bulk mail",
        if https { Status::Pass } else { Status::Warn },
        if https {
            "List-Unsubscribe and List-Unsubscribe-Post (one click) are added.".to_owned()
        } else {
            "List-Unsubscribe is added, but not List-Unsubscribe-Post: [http] public_url is not https.".to_owned()
        },
        Some("Serve herald's public pages over https ([http] tls_listen or a proxy) and set [http] public_url to it: Gmail and Yahoo require one-click unsubscribe from bulk senders.".into()),
    )
}

fn ptr_check(hostname: &str, answers: &Answers) -> Check {
    match &answers.ptr {
        Err(why) => check(
            "ptr",
            "The sending host's reverse DNS",
            Status::Warn,
            why.clone(),
            Some(format!(
                "Give {hostname} an A (and AAAA) record for the address mail leaves from."
            )),
        ),
        Ok((ip, Lookup::Found(names))) if names.iter().any(|n| n == hostname) => check(
            "ptr",
            "The sending host's reverse DNS",
            Status::Pass,
            format!("{ip} points back to {hostname}."),
            None,
        ),
        Ok((ip, Lookup::TemporaryFailure(why))) => check(
            "ptr",
            "The sending host's reverse DNS",
            Status::Skip,
            format!("Could not look up {ip}'s PTR now: {why}"),
            None,
        ),
        Ok((ip, found)) => check(
            "ptr",
            "The sending host's reverse DNS",
            Status::Fail,
            match found {
                Lookup::Found(names) => format!("{ip} points back to {}, not {hostname}.", names.join(", ")),
                _ => format!("{ip} has no PTR record."),
            },
            Some(format!(
                "Ask whoever runs {ip} (your host or cloud provider) to set its PTR to {hostname}: many receivers refuse mail from addresses without matching reverse DNS."
            )),
        ),
    }
}

fn certificate_check(config: &crate::config::Config) -> Check {
    let hostname = &config.server.hostname;
    let Some(path) = &config.tls.cert else {
        return check(
            "tls_certificate",
            "A trusted TLS certificate for the host",
            Status::Warn,
            format!("herald uses a self-signed certificate for {hostname}."),
            Some(format!(
                "Set [tls] cert and key to a certificate for {hostname} from a public CA (Let's Encrypt): receivers that check (MTA-STS, DANE) see a trusted host."
            )),
        );
    };
    match herald_tls::check_certificate(path, hostname) {
        Ok(()) => check(
            "tls_certificate",
            "A trusted TLS certificate for the host",
            Status::Pass,
            format!(
                "{} is valid for {hostname} and chains to a public root.",
                path.display()
            ),
            None,
        ),
        Err(why) => check(
            "tls_certificate",
            "A trusted TLS certificate for the host",
            Status::Fail,
            why,
            Some(format!(
                "Renew or replace [tls] cert with a certificate for {hostname} from a public CA."
            )),
        ),
    }
}

#[cfg(test)]
mod organizational_tests {
    use super::organizational;

    #[test]
    fn the_organisational_domain_follows_the_public_suffix_list() {
        for (name, org) in [
            ("mail.example.co.uk", "example.co.uk"),
            ("a.b.example.com", "example.com"),
            ("Example.COM.", "example.com"),
            ("www.shop.github.io", "shop.github.io"),
            ("news.example.com.au", "example.com.au"),
            ("x.y.example.kawasaki.jp", "y.example.kawasaki.jp"),
            ("co.uk", "co.uk"),
        ] {
            assert_eq!(organizational(name), org, "{name}");
        }
    }
}
