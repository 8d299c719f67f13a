//! `herald::dns::Dns` against a real authoritative server ([`TestDns`]) over UDP and TCP
//! on loopback.

#[path = "util/dns.rs"]
mod test_dns;

use herald::dns::{Dns, Lookup};
use test_dns::TestDns;

/// A server and an uncached resolver that asks only it.
async fn setup() -> (TestDns, Dns) {
    let server = TestDns::start().await;
    let dns = Dns::new(&[server.addr()], false).expect("build resolver");
    (server, dns)
}

/// A 2048-bit DKIM public key record: longer than one 255-byte character-string.
fn dkim_record() -> String {
    format!(
        "v=DKIM1; k=rsa; p={}",
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA".repeat(9)
    )
}

#[tokio::test]
async fn txt_is_found() {
    let (server, dns) = setup().await;
    server.set_txt("_herald.example.com", &["herald-verification=abc123"]);

    let found = dns.txt("_herald.example.com").await;

    assert_eq!(found, Lookup::Found(vec!["herald-verification=abc123".to_owned()]));
}

#[tokio::test]
async fn txt_longer_than_one_character_string_is_joined_intact() {
    let (server, dns) = setup().await;
    let key = dkim_record();
    assert!(key.len() > 255, "the record must span several character-strings");
    server.set_txt("herald._domainkey.example.com", &[&key]);

    let found = dns.txt("herald._domainkey.example.com").await;

    assert_eq!(found, Lookup::Found(vec![key]));
}

#[tokio::test]
async fn txt_returns_every_record() {
    let (server, dns) = setup().await;
    server.set_txt(
        "example.com",
        &["v=spf1 include:herald.test -all", "google-site-verification=xyz"],
    );

    let Lookup::Found(mut records) = dns.txt("example.com").await else {
        panic!("expected TXT records");
    };
    records.sort();

    assert_eq!(
        records,
        ["google-site-verification=xyz", "v=spf1 include:herald.test -all"]
    );
}

#[tokio::test]
async fn names_are_case_insensitive_and_may_end_with_a_dot() {
    let (server, dns) = setup().await;
    server.set_txt("Example.COM", &["hello"]);

    assert_eq!(dns.txt("example.com.").await, Lookup::Found(vec!["hello".to_owned()]));
    assert_eq!(dns.txt("EXAMPLE.com").await, Lookup::Found(vec!["hello".to_owned()]));
}

#[tokio::test]
async fn mx_is_sorted_by_preference_and_normalised() {
    let (server, dns) = setup().await;
    server.set_mx(
        "example.com",
        &[
            (20, "MX2.Example.COM."),
            (10, "mx1.example.com."),
            (30, "Backup.Example.net."),
        ],
    );

    let found = dns.mx("example.com").await;

    assert_eq!(
        found,
        Lookup::Found(vec![
            (10, "mx1.example.com".to_owned()),
            (20, "mx2.example.com".to_owned()),
            (30, "backup.example.net".to_owned()),
        ])
    );
}

#[tokio::test]
async fn null_mx_is_an_empty_exchange() {
    let (server, dns) = setup().await;
    server.set_mx("example.com", &[(0, ".")]);

    assert_eq!(dns.mx("example.com").await, Lookup::Found(vec![(0, String::new())]));
}

#[tokio::test]
async fn missing_name_is_not_found() {
    let (_server, dns) = setup().await;

    assert_eq!(dns.txt("nowhere.example.com").await, Lookup::NotFound);
    assert_eq!(dns.mx("nowhere.example.com").await, Lookup::NotFound);
}

#[tokio::test]
async fn name_without_records_of_the_type_is_not_found() {
    let (server, dns) = setup().await;
    server.set_mx("example.com", &[(10, "mx.example.com.")]);
    server.set_txt("_herald.example.com", &["token"]);

    assert_eq!(dns.txt("example.com").await, Lookup::NotFound);
    assert_eq!(dns.mx("_herald.example.com").await, Lookup::NotFound);
}

#[tokio::test]
async fn servfail_is_a_temporary_failure() {
    let (server, dns) = setup().await;
    server.set_txt("example.com", &["hello"]);
    server.fail("example.com");

    assert!(matches!(dns.txt("example.com").await, Lookup::TemporaryFailure(_)));
    assert!(matches!(dns.mx("example.com").await, Lookup::TemporaryFailure(_)));
}

#[tokio::test]
async fn changed_records_are_seen_at_once_without_cache() {
    let (server, dns) = setup().await;
    assert_eq!(dns.txt("_herald.example.com").await, Lookup::NotFound);

    server.set_txt("_herald.example.com", &["first"]);
    assert_eq!(
        dns.txt("_herald.example.com").await,
        Lookup::Found(vec!["first".to_owned()])
    );

    server.set_txt("_herald.example.com", &["second"]);
    assert_eq!(
        dns.txt("_herald.example.com").await,
        Lookup::Found(vec!["second".to_owned()])
    );

    server.remove("_herald.example.com");
    assert_eq!(dns.txt("_herald.example.com").await, Lookup::NotFound);
}

#[tokio::test]
async fn cached_records_outlive_a_change() {
    // The counterpart of the test above, showing that it proves something: with the
    // cache on, the server's long TTL keeps the first answer.
    let server = TestDns::start().await;
    let dns = Dns::new(&[server.addr()], true).expect("build resolver");
    server.set_txt("_herald.example.com", &["first"]);
    assert_eq!(
        dns.txt("_herald.example.com").await,
        Lookup::Found(vec!["first".to_owned()])
    );

    server.set_txt("_herald.example.com", &["second"]);

    assert_eq!(
        dns.txt("_herald.example.com").await,
        Lookup::Found(vec!["first".to_owned()])
    );
}

#[tokio::test]
async fn answer_truncated_over_udp_is_fetched_over_tcp() {
    let (server, dns) = setup().await;
    let values: Vec<String> = (0..4).map(|i| format!("{i}:{}", "x".repeat(2048))).collect();
    let value_refs: Vec<&str> = values.iter().map(String::as_str).collect();
    server.set_txt("big.example.com", &value_refs);

    let Lookup::Found(mut records) = dns.txt("big.example.com").await else {
        panic!("expected TXT records");
    };
    records.sort();

    assert_eq!(records, values);
    assert!(server.tcp_queries() > 0, "the resolver must have retried over TCP");
}
