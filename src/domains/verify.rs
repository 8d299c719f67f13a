//! One verification pass: look each record up and judge it.

use super::model::{Domain, RecordChecks, RecordStatus};
use crate::config::Config;
use crate::dns::{Dns, Lookup};

/// Looks up every record of `domain` and returns their statuses. Never fails: DNS
/// trouble is a `temporary_failure` status.
pub async fn check(dns: &Dns, domain: &Domain, config: &Config) -> RecordChecks {
    let (dkim_host, return_path, dmarc_host) = (domain.dkim_host(), domain.return_path_host(), domain.dmarc_host());
    let tracking_host = domain.tracking_host();
    let tracking = async {
        match &tracking_host {
            Some(host) => Some(dns.cname(host).await),
            None => None,
        }
    };
    let (dkim, spf_txt, spf_mx, dmarc, tracking) = tokio::join!(
        dns.txt(&dkim_host),
        dns.txt(&return_path),
        dns.mx(&return_path),
        dns.txt(&dmarc_host),
        tracking
    );
    RecordChecks {
        dkim: judge(dkim, |values| {
            values.iter().any(|v| dkim_matches(v, &domain.dkim.public))
        }),
        spf_txt: judge(spf_txt, |values| {
            // `[domains] spf` is what verification asks for. The region's addresses and
            // names are recommended beside it, not required: an operator adding an
            // address to a region, or a domain moving, must not stop its sending.
            values.iter().any(|v| spf_matches(v, &config.domains.spf))
        }),
        spf_mx: judge(spf_mx, |records| {
            records
                .iter()
                .any(|(_, host)| host.eq_ignore_ascii_case(&config.server.hostname))
        }),
        dmarc: judge(dmarc, |values| {
            values
                .iter()
                .any(|v| v.trim_start().to_ascii_lowercase().starts_with("v=dmarc1"))
        }),
        tracking: tracking.map_or(RecordStatus::NotStarted, |found| {
            judge(found, |targets| {
                targets
                    .iter()
                    .any(|t| t.eq_ignore_ascii_case(&config.tracking.cname_target))
            })
        }),
    }
}

fn judge<T>(lookup: Lookup<T>, matches: impl FnOnce(&T) -> bool) -> RecordStatus {
    match lookup {
        Lookup::Found(found) if matches(&found) => RecordStatus::Verified,
        Lookup::Found(_) | Lookup::NotFound => RecordStatus::Failed,
        Lookup::TemporaryFailure(_) => RecordStatus::TemporaryFailure,
    }
}

/// Whether a DKIM TXT value publishes `public` in its `p=` tag (whitespace inside the tag
/// value is allowed by RFC 6376 and ignored).
fn dkim_matches(value: &str, public: &str) -> bool {
    value.split(';').any(|tag| {
        let Some((name, tag_value)) = tag.split_once('=') else {
            return false;
        };
        name.trim() == "p" && tag_value.chars().filter(|c| !c.is_whitespace()).eq(public.chars())
    })
}

/// Whether an SPF record includes `mechanism` (with or without the `+` qualifier).
fn spf_matches(value: &str, mechanism: &str) -> bool {
    let mut terms = value.split_whitespace();
    terms
        .next()
        .is_some_and(|version| version.eq_ignore_ascii_case("v=spf1"))
        && terms.any(|term| term.trim_start_matches('+').eq_ignore_ascii_case(mechanism))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dkim_values_match_on_the_public_key() {
        assert!(dkim_matches("v=DKIM1; k=rsa; p=ABCD", "ABCD"));
        assert!(dkim_matches("v=DKIM1;k=rsa;p=AB CD", "ABCD"));
        assert!(!dkim_matches("v=DKIM1; k=rsa; p=ABCE", "ABCD"));
        assert!(!dkim_matches("v=DKIM1; k=rsa", "ABCD"));
    }

    #[test]
    fn spf_values_match_on_the_mechanism() {
        assert!(spf_matches("v=spf1 a:mail.example.com ~all", "a:mail.example.com"));
        assert!(spf_matches(
            "v=spf1 include:x +A:MAIL.example.com -all",
            "a:mail.example.com"
        ));
        assert!(!spf_matches("v=spf1 include:x ~all", "a:mail.example.com"));
        assert!(!spf_matches("a:mail.example.com", "a:mail.example.com"));
    }
}
