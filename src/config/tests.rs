use std::time::Duration;

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml(text, Some(Path::new("/etc/herald/herald.toml")))
}

#[test]
fn defaults_match_the_design() {
    let config = Config::from_toml("", None).expect("defaults are valid");
    assert_eq!(config.http.listen, "127.0.0.1:3000".parse().expect("addr"));
    let ports: Vec<_> = config.smtp.listeners.iter().map(|l| (l.addr.port(), l.tls)).collect();
    assert_eq!(
        ports,
        vec![
            (25, TlsMode::StartTls),
            (465, TlsMode::Implicit),
            (587, TlsMode::StartTls),
            (2465, TlsMode::Implicit),
            (2587, TlsMode::StartTls),
        ]
    );
    assert!(!config.smtp.listeners_configured);
    assert_eq!(config.smtp.username, "resend");
    assert_eq!(config.delivery.mx_port, 25);
    assert!(config.delivery.nameservers.is_empty());
    assert_eq!(config.delivery.retry_intervals[0], Duration::from_secs(60));
    assert_eq!(config.delivery.retry_intervals.len(), 7);
    assert_eq!(config.delivery.message_lifetime, Duration::from_secs(72 * 3600));
    assert_eq!(config.domains.dkim_algorithm, DkimAlgorithm::Rsa);
    assert_eq!(config.domains.spf, format!("a:{}", config.server.hostname));
    assert_eq!(
        config.api.rate_limit,
        Rate {
            count: 50,
            per: Duration::from_secs(1)
        }
    );
    assert!(!config.webhooks.allow_private_endpoints);
    assert_eq!(config.webhooks.retry_intervals[0], Duration::from_secs(5));
    assert_eq!(config.webhooks.timeout, Duration::from_secs(15));
}

#[test]
fn every_documented_key_is_accepted() {
    let config = parse(
        r#"
        [server]
        hostname = "mail.example.com"
        data_dir = "data"
        shutdown_grace = "10s"
        [http]
        listen = "127.0.0.1:0"
        tls_listen = "127.0.0.1:0"
        public_url = "https://mail.example.com/"
        [smtp]
        listeners = [{ addr = "127.0.0.1:2587", tls = "starttls" }, { addr = "[::1]:2465", tls = "implicit", mx = true }]
        username = "resend"
        line_length_max = 1000
        message_size_max = "10MiB"
        recipients_max = 20
        messages_per_session_max = 5
        errors_max = 3
        idle_timeout = "1m"
        session_time_max = "10m"
        connections_max = 10
        connections_per_address_max = 2
        auth_failures_max = 4
        auth_lockout = "5m"
        trusted = [{ network = "10.0.0.0/8", api_key_id = "01a21895-6823-71c8-9d26-ab55e22e0846" }, { network = "::1/128", api_key_id = "01a21895-6823-71c8-9d26-ab55e22e0846" }]
        [delivery]
        nameservers = ["127.0.0.1:5353"]
        mx_port = 2525
        relay = "smtp.example.net:587"
        relay_username = "u"
        relay_password = "hunter2"
        retry_intervals = ["1s", "2s"]
        message_lifetime = "1h"
        [domains]
        dkim_algorithm = "ed25519"
        spf = "ip4:192.0.2.1"
        [api]
        rate_limit = "100/s"
        [webhooks]
        allow_private_endpoints = true
        retry_intervals = ["1s"]
        timeout = "2s"
        [spool]
        min_free_space = "1GiB"
        [log]
        format = "json"
        level = "herald=debug,info"
        "#,
    )
    .expect("valid");
    assert_eq!(config.server.hostname, "mail.example.com");
    assert_eq!(
        config.server.data_dir,
        PathBuf::from("/etc/herald/data"),
        "relative to the file"
    );
    assert!(config.smtp.listeners_configured);
    assert_eq!(config.smtp.listeners[1].tls, TlsMode::Implicit);
    assert!(config.smtp.listeners[1].mx && !config.smtp.listeners[0].mx);
    assert_eq!(config.http.public_url, "https://mail.example.com");
    assert!(config.http.tls_listen.is_some());
    assert_eq!(config.smtp.limits.message_size_max, 10 << 20);
    assert_eq!(config.smtp.limits.connections_per_address_max, 2);
    assert_eq!(config.smtp.limits.auth_lockout, Duration::from_secs(300));
    assert_eq!(config.smtp.trusted.len(), 2);
    assert!(!config.smtp.trusted[0].is_loopback() && config.smtp.trusted[1].is_loopback());
    assert_eq!(config.delivery.relay.as_ref().map(|r| r.port), Some(587));
    assert_eq!(config.domains.dkim_algorithm, DkimAlgorithm::Ed25519);
    assert_eq!(config.spool.min_free_space, 1 << 30);
    assert_eq!(config.log.format, LogFormat::Json);
    assert!(config.webhooks.allow_private_endpoints);
}

#[test]
fn unknown_keys_fail_naming_the_key_and_file() {
    let err = parse("[delivery]\nretry_intervalz = [\"1m\"]\n").expect_err("unknown key");
    assert_eq!(err.file.as_deref(), Some(Path::new("/etc/herald/herald.toml")));
    assert!(err.to_string().contains("retry_intervalz"), "{err}");
    assert!(err.to_string().contains("/etc/herald/herald.toml"), "{err}");
    let err = parse("[nope]\n").expect_err("unknown table");
    assert!(err.to_string().contains("nope"), "{err}");
    let err = parse("[smtp]\nlisteners = [{ addr = \"127.0.0.1:25\", tls = \"starttls\", extra = 1 }]\n")
        .expect_err("unknown nested key");
    assert!(err.to_string().contains("extra"), "{err}");
    assert_eq!(err.key, "smtp.listeners[0].extra");
}

#[test]
fn bad_values_fail_naming_the_key() {
    let cases = [
        (
            "[delivery]\nretry_intervals = [\"1m\", \"soon\"]\n",
            "delivery.retry_intervals[1]",
        ),
        ("[delivery]\nretry_intervals = []\n", "delivery.retry_intervals"),
        ("[delivery]\nmessage_lifetime = \"0s\"\n", "delivery.message_lifetime"),
        (
            "[delivery]\nnameservers = [\"dns.example\"]\n",
            "delivery.nameservers[0]",
        ),
        ("[delivery]\nrelay = \"smtp.example.net\"\n", "delivery.relay"),
        ("[delivery]\nrelay_password = \"x\"\n", "delivery.relay_username"),
        ("[delivery]\nmx_port = 70000\n", "delivery.mx_port"),
        ("[http]\nlisten = \"localhost\"\n", "http.listen"),
        ("[http]\ntls_listen = \"443\"\n", "http.tls_listen"),
        ("[http]\npublic_url = \"mail.example.com\"\n", "http.public_url"),
        (
            "[http]\npublic_url = \"https://mail.example.com/x?y\"\n",
            "http.public_url",
        ),
        ("[api]\nrate_limit = \"fast\"\n", "api.rate_limit"),
        (
            "[smtp]\nlisteners = [{ addr = \"127.0.0.1:25\", tls = \"maybe\" }]\n",
            "smtp.listeners[0].tls",
        ),
        (
            "[smtp]\nlisteners = [{ addr = \"127.0.0.1:25\", tls = \"starttls\" }, { addr = \"127.0.0.1:25\", tls = \"implicit\" }]\n",
            "smtp.listeners[1].addr",
        ),
        ("[server]\nhostname = \"not a host\"\n", "server.hostname"),
        (
            "[[smtp.trusted]]\nnetwork = \"10.0.0.0\"\napi_key_id = \"01a21895-6823-71c8-9d26-ab55e22e0846\"\n",
            "smtp.trusted[0].network",
        ),
        (
            "[[smtp.trusted]]\nnetwork = \"10.0.0.1/8\"\napi_key_id = \"01a21895-6823-71c8-9d26-ab55e22e0846\"\n",
            "smtp.trusted[0].network",
        ),
        (
            "[[smtp.trusted]]\nnetwork = \"0.0.0.0/0\"\napi_key_id = \"01a21895-6823-71c8-9d26-ab55e22e0846\"\n",
            "smtp.trusted[0].network",
        ),
        (
            "[[smtp.trusted]]\nnetwork = \"127.0.0.1/32\"\napi_key_id = \"re_123\"\n",
            "smtp.trusted[0].api_key_id",
        ),
        ("[smtp]\nline_length_max = 100\n", "smtp.line_length_max"),
        ("[smtp]\nrecipients_max = 0\n", "smtp.recipients_max"),
        ("[smtp]\nidle_timeout = \"soon\"\n", "smtp.idle_timeout"),
        ("[domains]\ndkim_algorithm = \"dsa\"\n", "domains.dkim_algorithm"),
        ("[spool]\nmin_free_space = \"plenty\"\n", "spool.min_free_space"),
        ("[log]\nformat = \"xml\"\n", "log.format"),
        (
            "[tls]\ncert = \"/nonexistent/cert.pem\"\nkey = \"/nonexistent/key.pem\"\n",
            "tls.cert",
        ),
        ("[tls]\ncert = \"/nonexistent/cert.pem\"\n", "tls.key"),
        ("[webhooks]\ntimeout = \"forever\"\n", "webhooks.timeout"),
        (
            "[webhooks]\nallow_private_endpoints = \"yes\"\n",
            "webhooks.allow_private_endpoints",
        ),
        (
            "[webhooks]\nallowed_networks = [\"10.0.0.0/8\", \"10.1.2.3\"]\n",
            "webhooks.allowed_networks[1]",
        ),
    ];
    for (text, key) in cases {
        let err = parse(text).expect_err(text);
        assert_eq!(err.key, key, "{text} gave {err}");
        assert!(err.to_string().contains(&format!("`{key}`")), "{err}");
    }
}

#[test]
fn malformed_toml_names_the_file_and_line() {
    let err = parse("[server\nhostname = 1").expect_err("syntax");
    let text = err.to_string();
    assert!(text.starts_with("/etc/herald/herald.toml: "), "{text}");
    assert!(text.contains("line 1"), "{text}");
}

#[test]
fn missing_file_is_named() {
    let err = Config::from_file(Path::new("/nonexistent/herald.toml")).expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/herald.toml"), "{err}");
    assert!(err.to_string().contains("cannot read"), "{err}");
}

#[test]
fn effective_config_round_trips_and_redacts_secrets() {
    let config =
        parse("[delivery]\nrelay = \"smtp.example.net:587\"\nrelay_username = \"u\"\nrelay_password = \"hunter2\"\n")
            .expect("valid");
    let text = config.to_toml();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    assert!(!format!("{config:?}").contains("hunter2"));
    for key in [
        "hostname",
        "data_dir",
        "listen",
        "listeners",
        "retry_intervals",
        "message_lifetime",
        "rate_limit",
        "allow_private_endpoints",
        "dkim_algorithm",
        "spf",
        "mx_port",
        "nameservers",
        "timeout",
        "min_free_space",
    ] {
        assert!(text.contains(key), "{key} missing from\n{text}");
    }
    let defaults = Config::defaults().to_toml();
    let reparsed = Config::from_toml(&defaults, None).expect("the printed defaults parse again");
    assert_eq!(
        reparsed.to_toml().lines().skip(1).collect::<Vec<_>>(),
        defaults.lines().skip(1).collect::<Vec<_>>()
    );
}

#[test]
fn destination_limits_match_by_pattern_and_inherit_defaults() {
    let config = parse(
        "[delivery]\nconnections_per_destination = 4\nrate = \"100/s\"\n[[delivery.destinations]]\npattern = \"*.Example.com\"\nconnections = 2\n[[delivery.destinations]]\npattern = \"example.com\"\nmessages_per_connection = 5\n",
    )
    .expect("valid");
    let delivery = &config.delivery;
    assert_eq!(delivery.limits_for("mx.example.com").connections, 2);
    assert_eq!(delivery.limits_for("mx.example.com").rate, delivery.limits.rate);
    assert_eq!(delivery.limits_for("example.com").messages_per_connection, 5);
    assert_eq!(delivery.limits_for("example.com").connections, 4);
    assert_eq!(delivery.limits_for("notexample.com").connections, 4);
    assert_eq!(delivery.limits_for("other.org").messages_per_connection, 100);
}

#[test]
fn bad_delivery_limits_name_their_key() {
    for (text, key) in [
        (
            "[[delivery.destinations]]\npattern = \"not a domain\"\n",
            "delivery.destinations[0].pattern",
        ),
        (
            "[[delivery.destinations]]\npattern = \"a.com\"\nconnections = 0\n",
            "delivery.destinations[0].connections",
        ),
        (
            "[[delivery.destinations]]\npattern = \"a.com\"\nrate = \"fast\"\n",
            "delivery.destinations[0].rate",
        ),
        (
            "[delivery]\nconnections_per_destination = 0\n",
            "delivery.connections_per_destination",
        ),
        ("[delivery]\nidle_timeout = \"0s\"\n", "delivery.idle_timeout"),
        ("[delivery]\nworkers = 0\n", "delivery.workers"),
        ("[[plans]]\nmonthly_emails = 5\n", "plans[0].name"),
        ("[[plans]]\nname = \"a b\"\nmonthly_emails = 5\n", "plans[0].name"),
        ("[[plans]]\nname = \"a\"\n", "plans[0].monthly_emails"),
        (
            "[[plans]]\nname = \"a\"\nmonthly_emails = 0\n",
            "plans[0].monthly_emails",
        ),
        (
            "[[plans]]\nname = \"a\"\nmonthly_emails = 5\n[[plans]]\nname = \"a\"\nmonthly_emails = 9\n",
            "plans[1].name",
        ),
        (
            "[[plans]]\nname = \"a\"\nmonthly_emails = 5\ndaily_emails = 0\n",
            "plans[0].daily_emails",
        ),
        (
            "[[plans]]\nname = \"a\"\nmonthly_emails = 5\nrate_limit = \"fast\"\n",
            "plans[0].rate_limit",
        ),
    ] {
        let err = parse(text).expect_err(text);
        assert_eq!(err.key, key, "{text}");
    }
}

#[test]
fn retention_has_a_default_per_kind_and_zero_keeps_for_ever() {
    const DAY: Duration = Duration::from_secs(86_400);
    let defaults = Config::from_toml("", None).expect("defaults").retention;
    assert_eq!(defaults.emails, Some(30 * DAY));
    assert_eq!(defaults.content, Some(7 * DAY));
    assert_eq!(defaults.webhook_messages, Some(30 * DAY));
    assert_eq!(defaults.request_logs, Some(7 * DAY));
    assert_eq!(defaults.metrics, Some(400 * DAY));
    let config = parse("[retention]\nemails = \"0\"\ncontent = \"5s\"\n").expect("valid");
    assert_eq!(config.retention.emails, None);
    assert_eq!(config.retention.content, Some(Duration::from_secs(5)));
    assert!(config.warnings.is_empty());
    assert!(config.to_toml().contains("emails = \"0\""), "{}", config.to_toml());
    let err = parse("[retention]\nwebhook_messages = \"soon\"\n").expect_err("invalid");
    assert_eq!(err.key, "retention.webhook_messages");
    assert!(err.message.contains("or 0 to keep for ever"), "{}", err.message);
}

#[test]
fn the_old_request_log_key_is_still_read_with_a_warning_naming_the_new_one() {
    let config = parse("[api]\nlog_retention = \"2d\"\n").expect("valid");
    assert_eq!(config.retention.request_logs, Some(Duration::from_secs(2 * 86_400)));
    assert_eq!(config.warnings.len(), 1);
    assert!(
        config.warnings[0].contains("`request_logs` in `[retention]`"),
        "{:?}",
        config.warnings
    );
    assert!(config.to_toml().contains("# warning:"), "herald config shows it");
    let both = parse("[api]\nlog_retention = \"2d\"\n[retention]\nrequest_logs = \"1d\"\n").expect("valid");
    assert_eq!(
        both.retention.request_logs,
        Some(Duration::from_secs(86_400)),
        "the new key wins"
    );
    assert!(both.warnings[0].contains("is ignored"));
    let err = parse("[api]\nlog_retention = \"x\"\n").expect_err("invalid");
    assert_eq!(err.key, "api.log_retention");
}

const TWO_REGIONS: &str = "[delivery]\nregion = \"eu-west-1\"\nrelay = \"smart.example.net:25\"\n\
    [[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"192.0.2.10\", \"2001:db8::10\"]\nehlo = \"mta-us.example.com\"\n\
    connections_per_address = 20\nrate_per_address = \"10/s\"\n\
    [[regions.warmup]]\naddress = \"192.0.2.10\"\nstart = \"2026-11-20\"\ndaily_limits = [50, 100, 200]\n\
    [[regions]]\nname = \"eu-west-1\"\nsource_addresses = [\"192.0.2.20\"]\nrelay = \"eu.example.net:587\"\n\
    relay_username = \"eu\"\nrelay_password = \"sesame\"\n";

#[test]
fn regions_default_to_one_named_by_delivery_region() {
    let config = Config::from_toml("", None).expect("defaults");
    assert_eq!(config.delivery.region, "us-east-1");
    assert_eq!(config.region_names(), ["us-east-1"]);
    let region = config.region("eu-west-1");
    assert_eq!(region.name, "us-east-1", "an unknown name falls back to the default");
    assert!(region.source_addresses.is_empty() && region.implicit);
    assert_eq!(config.ehlo_of(region), config.server.hostname);
    assert!(
        !config.to_toml().contains("[[regions]]"),
        "the implicit region is not printed"
    );

    let named = parse("[delivery]\nregion = \"sa-east-1\"\n").expect("valid");
    assert_eq!(named.region_names(), ["sa-east-1"]);
}

#[test]
fn regions_take_addresses_ehlo_relay_limits_and_warmup() {
    let config = parse(TWO_REGIONS).expect("valid");
    assert_eq!(config.region_names(), ["us-east-1", "eu-west-1"]);
    let us = config.region("us-east-1");
    assert_eq!(
        us.source_addresses,
        [
            "192.0.2.10".parse::<std::net::IpAddr>().expect("ip"),
            "2001:db8::10".parse().expect("ip")
        ]
    );
    assert_eq!(config.ehlo_of(us), "mta-us.example.com");
    assert_eq!(
        config.relay_of(us).map(|r| r.host.as_str()),
        Some("smart.example.net"),
        "inherited"
    );
    assert_eq!(us.connections_per_address, 20);
    assert_eq!(us.rate_per_address.map(|r| r.to_string()).as_deref(), Some("10/s"));
    let warmup = us.warmup_of("192.0.2.10".parse().expect("ip")).expect("a schedule");
    let day = |text: &str| chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("date");
    assert_eq!(
        warmup.on(day("2026-11-19")),
        Some((0, 50)),
        "before the start: the first day's"
    );
    assert_eq!(warmup.on(day("2026-11-21")), Some((1, 100)));
    assert_eq!(warmup.on(day("2026-11-23")), None, "the schedule is over");
    let eu = config.region("eu-west-1");
    assert_eq!(
        config.relay_of(eu).map(|r| (r.host.as_str(), r.port)),
        Some(("eu.example.net", 587))
    );
    assert_eq!(config.ehlo_of(eu), config.server.hostname);

    let text = config.to_toml();
    assert!(!text.contains("sesame"), "{text}");
    let reparsed = Config::from_toml(&text.replace("<redacted>", "sesame"), None).expect("the printed regions parse");
    assert_eq!(reparsed.regions, config.regions);
}

#[test]
fn region_errors_name_the_key() {
    let region = |body: &str| format!("[[regions]]\nname = \"us-east-1\"\n{body}");
    for (text, key) in [
        ("[delivery]\nregion = \"mars-1\"\n".to_owned(), "delivery.region"),
        ("[[regions]]\nname = \"eu-central-1\"\n".to_owned(), "regions[0].name"),
        ("[[regions]]\nsource_addresses = []\n".to_owned(), "regions[0].name"),
        (
            "[[regions]]\nname = \"us-east-1\"\n[[regions]]\nname = \"us-east-1\"\n".to_owned(),
            "regions[1].name",
        ),
        ("[[regions]]\nname = \"eu-west-1\"\n".to_owned(), "delivery.region"),
        (
            region("source_addresses = [\"192.0.2.1\", \"mail\"]\n"),
            "regions[0].source_addresses[1]",
        ),
        (
            region("source_addresses = [\"0.0.0.0\"]\n"),
            "regions[0].source_addresses[0]",
        ),
        (
            region("source_addresses = [\"192.0.2.1\", \"192.0.2.1\"]\n"),
            "regions[0].source_addresses[1]",
        ),
        (
            "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"192.0.2.1\"]\n\
             [[regions]]\nname = \"eu-west-1\"\nsource_addresses = [\"192.0.2.1\"]\n"
                .to_owned(),
            "regions[1].source_addresses[0]",
        ),
        (region("ehlo = \"not a name\"\n"), "regions[0].ehlo"),
        (region("relay = \"nowhere\"\n"), "regions[0].relay"),
        (region("relay_username = \"u\"\n"), "regions[0].relay_password"),
        (
            region("connections_per_address = 0\n"),
            "regions[0].connections_per_address",
        ),
        (region("rate_per_address = \"lots\"\n"), "regions[0].rate_per_address"),
        (
            region(
                "source_addresses = [\"192.0.2.1\"]\n[[regions.warmup]]\naddress = \"192.0.2.9\"\nstart = \"2026-01-01\"\ndaily_limits = [1]\n",
            ),
            "regions[0].warmup[0].address",
        ),
        (
            region(
                "source_addresses = [\"192.0.2.1\"]\n[[regions.warmup]]\naddress = \"192.0.2.1\"\nstart = \"soon\"\ndaily_limits = [1]\n",
            ),
            "regions[0].warmup[0].start",
        ),
        (
            region(
                "source_addresses = [\"192.0.2.1\"]\n[[regions.warmup]]\naddress = \"192.0.2.1\"\nstart = \"2026-01-01\"\ndaily_limits = []\n",
            ),
            "regions[0].warmup[0].daily_limits",
        ),
        (
            region(
                "source_addresses = [\"192.0.2.1\"]\n[[regions.warmup]]\naddress = \"192.0.2.1\"\nstart = \"2026-01-01\"\ndaily_limits = [5, 0]\n",
            ),
            "regions[0].warmup[0].daily_limits[1]",
        ),
        (
            region(
                "source_addresses = [\"192.0.2.1\"]\n[[regions.warmup]]\naddress = \"192.0.2.1\"\nstart = \"2026-01-01\"\ndaily_limits = [5]\n[[regions.warmup]]\naddress = \"192.0.2.1\"\nstart = \"2026-01-01\"\ndaily_limits = [5]\n",
            ),
            "regions[0].warmup[1].address",
        ),
    ] {
        let err = parse(&text).expect_err(&text);
        assert_eq!(err.key, key, "{text}");
    }
}

#[test]
fn the_shipped_config_and_its_regions_example_are_valid() {
    let shipped = include_str!("../../dist/herald.toml");
    let config = Config::from_toml(shipped, None).expect("dist/herald.toml is valid");
    assert_eq!(config.plans.len(), 8);
    assert_eq!(config.region_names(), ["us-east-1"]);
    // The commented `[[regions]]` example, uncommented, is valid too.
    let example: String = shipped
        .lines()
        .skip_while(|line| *line != "# [[regions]]")
        .map(|line| format!("{}\n", line.trim_start_matches("# ")))
        .collect();
    assert!(example.contains("[[regions.warmup]]"), "{example}");
    let config = Config::from_toml(&format!("{shipped}\n{example}"), None).expect("the regions example is valid");
    assert_eq!(config.region_names(), ["us-east-1", "eu-west-1"]);
    assert_eq!(config.regions[0].warmup[0].daily_limits[0], 50);
}

#[test]
fn a_region_whose_spf_record_outgrows_one_dns_string_is_warned_about() {
    let addresses: Vec<String> = (1..=12).map(|n| format!("\"2001:db8:ffff:ffff::{n}\"")).collect();
    let few =
        parse("[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"192.0.2.1\", \"192.0.2.2\"]\n").expect("valid");
    assert!(few.warnings.is_empty(), "{:?}", few.warnings);
    let many = parse(&format!(
        "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"192.0.2.1\"]\n\
         [[regions]]\nname = \"eu-west-1\"\nsource_addresses = [{}]\n",
        addresses.join(", ")
    ))
    .expect("valid: a long record is the operator's to publish");
    assert_eq!(many.warnings.len(), 1, "{:?}", many.warnings);
    let value = many.spf_value(&many.regions[1]);
    assert!(value.len() > 255, "{value}");
    assert!(
        many.warnings[0].starts_with(&format!(
            "regions[1] (eu-west-1): the SPF record of its domains is {} characters",
            value.len()
        )),
        "{}",
        many.warnings[0]
    );
    assert!(
        many.to_toml().contains("# warning: regions[1]"),
        "herald config shows it"
    );
}

#[test]
fn a_wildcard_listener_without_a_public_url_is_warned_about() {
    let exposed = parse("[http]\nlisten = \"0.0.0.0:3000\"\n").expect("valid");
    assert_eq!(exposed.http.public_url, "http://0.0.0.0:3000");
    assert!(
        exposed
            .warnings
            .iter()
            .any(|w| w.starts_with("http.public_url is not set")),
        "{:?}",
        exposed.warnings
    );
    assert!(
        exposed.to_toml().contains("# warning: http.public_url"),
        "herald config shows it"
    );
    for quiet in [
        "[http]\nlisten = \"0.0.0.0:3000\"\npublic_url = \"https://mail.example.com\"\n",
        "[http]\nlisten = \"127.0.0.1:3000\"\n",
        "[http]\nlisten = \"[::]:3000\"\n[delivery]\nenabled = false\n",
    ] {
        let config = parse(quiet).expect("valid");
        assert!(
            !config.warnings.iter().any(|w| w.contains("public_url")),
            "{quiet}: {:?}",
            config.warnings
        );
    }
}
