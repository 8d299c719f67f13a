//! The dashboard in a real browser: Debian's `chromium`, headless, driven through
//! WebDriver (`chromedriver`, both installed by `scripts/deps --test`) with a client
//! built on rustls that downloads nothing. It signs in, enrols TOTP and signs in again
//! with a code, browses every page with real data (emails delivered to a sink, a
//! domain, API logs), creates an API key, and saves a screenshot of each page into
//! `HERALD_SCREENSHOTS` (default `target/dashboard-screenshots`), which are to be looked
//! at.

mod util;

use std::net::SocketAddr;
use std::time::Duration;

use fantoccini::Locator;
use hyper::Method;
use serde_json::json;
use util::browser::{
    Driver, PASSWORD, click, connect, expect_path, fill, shot, shot_of, sign_in, submit, text_of, wait_for_text,
};
use util::sink::{Sink, SinkOptions};
use util::{OPERATOR_KEY, call};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_works_in_a_real_browser() {
    let sink = Sink::start(SinkOptions::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = util::relay_to(sink.addr());
    let provider = util::identity_provider::IdentityProvider::start("dev@example.com").await;
    // Mail leaves from two loopback addresses, one of them warming up (from a day still
    // to come: its first day's limit holds).
    let regions = "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"127.0.0.1\", \"127.0.0.2\"]\n\
        ehlo = \"mta-us.herald.test\"\n[[regions.warmup]]\naddress = \"127.0.0.2\"\nstart = \"2099-01-01\"\n\
        daily_limits = [500, 1000, 5000]\n[[regions]]\nname = \"eu-west-1\"\nsource_addresses = [\"127.0.0.3\"]\n";
    let extra = format!("{extra}{}{regions}", provider.config());
    let running = util::start_api(dir.path(), &extra).await;
    let addr: SocketAddr = running.http_addr;
    let base = format!("http://{addr}");
    call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "ann@example.com", "role": "owner", "password": PASSWORD })),
    )
    .await;
    call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "dev@example.com", "role": "member", "password": PASSWORD })),
    )
    .await;
    util::verified_domain(addr, "shop.test").await;
    let receiver = util::webhook_receiver::Receiver::start().await;
    let hook =
        json!({ "endpoint": format!("http://{}/hook", receiver.addr()), "events": ["email.sent", "email.delivered"] });
    call(addr, Method::POST, "/webhooks", Some(OPERATOR_KEY), Some(hook)).await;
    // One that bounces (the sink refuses its recipient), sent first so that it is oldest.
    let bounced = json!({
        "from": "Shop <orders@shop.test>", "to": "bounce@example.net",
        "subject": "Your invoice", "html": "<p>Invoice attached.</p>",
    });
    call(addr, Method::POST, "/emails", Some(OPERATOR_KEY), Some(bounced)).await;
    for n in 0..3 {
        let body = json!({
            "from": "Shop <orders@shop.test>", "to": format!("reader{n}@example.net"),
            "subject": format!("Your order #{n} has shipped"),
            "html": format!("<h1>Order #{n}</h1><p>It is on its way.</p><img src=\"https://tracker.example/pixel.gif\">"),
        });
        call(addr, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
    }
    sink.wait_for(3, Duration::from_secs(30)).await;
    util::eventually(Duration::from_secs(30), "the bounce", || async {
        let metrics = call(
            addr,
            Method::GET,
            "/emails/metrics?metrics=bounced",
            Some(OPERATOR_KEY),
            None,
        )
        .await;
        (metrics.json()["totals"]["bounced"] == 1).then_some(())
    })
    .await;

    let driver = Driver::start();
    let client = connect(&driver).await;
    client
        .goto(&format!("{base}/dashboard/login"))
        .await
        .expect("login page");
    shot(&client, "01-login").await;
    sign_in(&client, &base, "ann@example.com").await;
    expect_path(&client, "/dashboard/emails").await;
    let first = text_of(&client, "table.list tbody tr td").await;
    assert!(first.starts_with("reader"), "{first}");
    shot(&client, "02-emails").await;

    // Metrics: the three deliveries counted, charts drawn with the thresholds.
    client
        .goto(&format!("{base}/dashboard/metrics"))
        .await
        .expect("metrics");
    let cards = text_of(&client, "#metric-cards").await;
    assert!(
        cards.contains("Delivered\n3") || cards.contains("Delivered 3"),
        "{cards}"
    );
    assert!(text_of(&client, ".charts").await.contains("0.08 % threshold"));
    assert!(text_of(&client, "#by-domain").await.contains("shop.test"));
    shot(&client, "02b-metrics").await;
    client.goto(&format!("{base}/dashboard/emails")).await.expect("emails");

    // An email's page, its preview sandboxed.
    click(&client, Locator::Css("table.list tbody tr td a")).await;
    let sandbox = client
        .find(Locator::Css("iframe.preview"))
        .await
        .expect("the preview")
        .attr("sandbox")
        .await
        .expect("attribute");
    assert_eq!(sandbox.as_deref(), Some(""), "a sandbox that allows nothing");
    shot(&client, "03-email").await;
    // The deliverability panel loads into the page through htmx.
    wait_for_text(&client, "#insights", "passed,").await;
    assert!(text_of(&client, "#insights").await.contains("A DMARC record"));
    shot_of(&client, "#insights", "03b-insights").await;

    // Domains, API logs, API keys.
    client
        .goto(&format!("{base}/dashboard/domains"))
        .await
        .expect("domains");
    assert!(text_of(&client, "table.list").await.contains("shop.test"));
    shot(&client, "04-domains").await;
    click(&client, Locator::LinkText("shop.test")).await;
    assert!(text_of(&client, "#records").await.contains("DKIM"));
    shot(&client, "05-domain").await;
    let region = text_of(&client, "#region").await;
    assert!(
        region.contains("127.0.0.2") && region.contains("day 1 of 3: 500 a day"),
        "{region}"
    );
    shot_of(&client, "#region", "05b-domain-region").await;
    client.goto(&format!("{base}/dashboard/logs")).await.expect("logs");
    assert!(text_of(&client, "table.list").await.contains("/emails"));
    shot(&client, "06-logs").await;
    client.goto(&format!("{base}/dashboard/api-keys")).await.expect("keys");
    fill(&client, "name", "deploy").await;
    submit(&client, "form[action=\"/dashboard/api-keys\"]").await;
    let token = text_of(&client, "#new-token").await;
    assert!(token.starts_with("re_"), "{token}");
    shot(&client, "07-api-keys").await;

    // Webhooks: an endpoint's messages, and a replay.
    assert!(
        receiver.wait_for(Duration::from_secs(30), |r| r.all().len() >= 7).await,
        "the events arrived"
    );
    client
        .goto(&format!("{base}/dashboard/webhooks"))
        .await
        .expect("webhooks");
    click(&client, Locator::Css("table.list tbody a")).await;
    assert!(text_of(&client, "table.list").await.contains("email.delivered"));
    shot(&client, "08-webhook").await;
    submit(&client, "form[action*=\"/replay/\"]").await;
    assert!(text_of(&client, ".notice").await.contains("sent again"));
    assert!(
        receiver.wait_for(Duration::from_secs(30), |r| r.all().len() >= 8).await,
        "the replay arrived"
    );
    // A second endpoint from the form: its signing secret shown once.
    client
        .goto(&format!("{base}/dashboard/webhooks"))
        .await
        .expect("webhooks");
    fill(&client, "endpoint", &format!("http://{}/second", receiver.addr())).await;
    click(&client, Locator::Css("input[name=\"events\"][value=\"email.bounced\"]")).await;
    submit(&client, "#new-webhook").await;
    assert!(text_of(&client, "#signing-secret").await.starts_with("whsec_"));
    shot(&client, "08b-webhook-added").await;

    // The Emails filter, through htmx: the results swap in place, the address follows.
    client.goto(&format!("{base}/dashboard/emails")).await.expect("emails");
    let loaded = client.execute("return typeof htmx;", vec![]).await.expect("script");
    assert_eq!(loaded.as_str(), Some("object"), "the vendored htmx loads under the CSP");
    fill(&client, "q", "order #1 ").await;
    submit(&client, "#email-filters").await;
    // The results swap in place: wait until the unfiltered rows are gone.
    for _ in 0..100 {
        let shown = text_of(&client, "#email-results").await;
        if !shown.contains("reader0@example.net") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = client.current_url().await.expect("url");
    assert!(
        url.query().is_some_and(|q| q.contains("q=order")),
        "the address follows: {url}"
    );
    let results = text_of(&client, "#email-results").await;
    assert!(
        results.contains("reader1@example.net") && !results.contains("reader0@example.net"),
        "{results}"
    );
    shot(&client, "02c-emails-filtered").await;

    // The CSV export, fetched by the page with its session.
    let csv = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch('/dashboard/emails/export.csv?domain=shop.test').then(r => r.text()).then(done);",
            vec![],
        )
        .await
        .expect("the export");
    let csv = csv.as_str().expect("text").to_owned();
    assert!(csv.starts_with("id,created_at,from,to,subject,last_event"), "{csv}");
    assert_eq!(csv.lines().count(), 5, "a header and four emails: {csv}");
    assert!(csv.contains(",bounced,"), "{csv}");

    client
        .goto(&format!("{base}/dashboard/suppressions"))
        .await
        .expect("suppressions");
    fill(&client, "email", "bounced@example.org").await;
    submit(&client, "form[method=\"post\"][action=\"/dashboard/suppressions\"]").await;
    // The bounce already put a row in the table: wait for the page after the form's.
    wait_for_text(&client, "table.list", "bounced@example.org").await;
    assert!(
        text_of(&client, "table.list").await.contains("bounce@example.net"),
        "the bounce"
    );
    shot(&client, "09-suppressions").await;
    client.goto(&format!("{base}/dashboard/team")).await.expect("team");
    fill(&client, "email", "colleague@example.com").await;
    submit(&client, "form[action=\"/dashboard/team\"]").await;
    assert!(text_of(&client, "#invitation").await.contains("/dashboard/invite/"));
    shot(&client, "10-team").await;

    // Audience: a segment from its form, then contacts from a CSV through the file input;
    // the import's page follows it to the end.
    client
        .goto(&format!("{base}/dashboard/audience"))
        .await
        .expect("audience");
    fill(&client, "name", "Customers").await;
    submit(&client, "#new-segment").await;
    wait_for_text(&client, "#segments", "Customers").await;
    shot(&client, "10b-audience").await;
    let csv = dir.path().join("people.csv");
    std::fs::write(
        &csv,
        "email,first_name\nana@example.org,Ana\nnot-an-address,Bo\ncy@example.org,Cy\n",
    )
    .expect("csv");
    client
        .goto(&format!("{base}/dashboard/contacts"))
        .await
        .expect("contacts");
    client
        .find(Locator::Css("#import-contacts input[name=\"file\"]"))
        .await
        .expect("the file input")
        .send_keys(&csv.display().to_string())
        .await
        .expect("choose the file");
    click(
        &client,
        Locator::Css("#import-contacts select[name=\"segment\"] option:nth-child(2)"),
    )
    .await;
    submit(&client, "#import-contacts").await;
    wait_for_text(&client, "#import-status", "completed").await;
    assert!(text_of(&client, "#import-errors").await.contains("not-an-address"));
    shot(&client, "10c-import").await;
    client
        .goto(&format!("{base}/dashboard/contacts"))
        .await
        .expect("contacts");
    assert!(text_of(&client, "#contacts").await.contains("ana@example.org"));
    shot(&client, "10d-contacts").await;

    // Templates: one written as HTML, then published.
    client
        .goto(&format!("{base}/dashboard/templates"))
        .await
        .expect("templates");
    fill(&client, "name", "Welcome").await;
    fill(&client, "subject", "Welcome aboard").await;
    client
        .find(Locator::Css("#new-template textarea[name=\"html\"]"))
        .await
        .expect("the HTML field")
        .send_keys("<h1>Hi {{{FIRST_NAME|there}}}</h1><p>Glad you are here.</p>")
        .await
        .expect("type");
    submit(&client, "#new-template").await;
    wait_for_text(&client, "h1", "Welcome").await;
    submit(&client, "form[action$=\"/publish\"]").await;
    wait_for_text(&client, ".notice", "Published").await;
    shot(&client, "10e-template").await;

    // A broadcast to the imported contacts: written, tested, reviewed, sent.
    client
        .goto(&format!("{base}/dashboard/broadcasts"))
        .await
        .expect("broadcasts");
    fill(&client, "name", "November news").await;
    fill(&client, "from", "Shop <news@shop.test>").await;
    fill(&client, "subject", "What is new").await;
    client
        .find(Locator::Css("#new-broadcast textarea[name=\"html\"]"))
        .await
        .expect("the HTML field")
        .send_keys("<p>Hello {{{FIRST_NAME|there}}}, here is what is new at the shop this month: warm socks.</p><p><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</a></p>")
        .await
        .expect("type");
    // The merge-tag menu puts a tag at the cursor.
    click(
        &client,
        Locator::Css("select[data-insert-into=\"#new-broadcast-html\"] option[value=\"FIRST_NAME\"]"),
    )
    .await;
    let typed = client
        .find(Locator::Css("#new-broadcast-html"))
        .await
        .expect("the HTML field")
        .prop("value")
        .await
        .expect("its value")
        .unwrap_or_default();
    assert!(typed.ends_with("{{{FIRST_NAME}}}"), "{typed}");
    // A tag without a fallback would stop the test send for an address with no name
    // (which the page says): give it one.
    client
        .find(Locator::Css("#new-broadcast-html"))
        .await
        .expect("the HTML field")
        .send_keys("\u{8}\u{8}\u{8}|friend}}}")
        .await
        .expect("a fallback");
    submit(&client, "#new-broadcast").await;
    wait_for_text(&client, "#recipients", "2").await;
    fill(&client, "to", "tester@example.org").await;
    submit(&client, "#test-send").await;
    wait_for_text(&client, "#insights", "passed,").await;
    shot(&client, "10f-broadcast-review").await;
    submit(&client, "#send-broadcast").await;
    wait_for_text(&client, "#broadcast-status", "sent").await;
    shot(&client, "10g-broadcast-sent").await;

    // TOTP: enrol, sign out, sign in with a code.
    client
        .goto(&format!("{base}/dashboard/profile"))
        .await
        .expect("profile");
    let key = text_of(&client, "#totp-secret").await;
    shot(&client, "11-profile").await;
    let secret = herald::users::totp::from_base32(&key).expect("base32");
    fill(&client, "code", &herald::users::totp::code(&secret, now())).await;
    submit(&client, "form[action=\"/dashboard/profile/totp\"]").await;
    let codes = text_of(&client, "#recovery-codes").await;
    assert_eq!(codes.split_whitespace().count(), 10, "{codes}");
    shot(&client, "12-recovery-codes").await;
    submit(&client, "form.logout").await;
    sign_in(&client, &base, "ann@example.com").await;
    expect_path(&client, "/dashboard/login/mfa").await;
    shot(&client, "13-mfa").await;
    fill(&client, "code", &herald::users::totp::code(&secret, now())).await;
    submit(&client, "form").await;
    expect_path(&client, "/dashboard/emails").await;

    // GitHub and Google identities, through the provider on loopback.
    submit(&client, "form.logout").await;
    expect_path(&client, "/dashboard/login").await;
    shot(&client, "14-login-identities").await;
    click(&client, Locator::Id("sign-in-github")).await;
    expect_path(&client, "/dashboard/emails").await;
    assert!(text_of(&client, ".who").await.contains("dev@example.com"));
    submit(&client, "form.logout").await;
    expect_path(&client, "/dashboard/login").await;
    provider.sign_in_as(util::identity_provider::Person {
        emails: vec![("ann@example.com".into(), true)],
    });
    click(&client, Locator::Id("sign-in-google")).await;
    expect_path(&client, "/dashboard/login/mfa").await;
    fill(&client, "code", &herald::users::totp::code(&secret, now() + 30)).await;
    submit(&client, "form").await;
    expect_path(&client, "/dashboard/emails").await;
    assert!(text_of(&client, ".who").await.contains("ann@example.com"));

    client.close().await.expect("close the browser");
    drop(driver);
    assert!(running.shutdown().await);
}
