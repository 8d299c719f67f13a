//! Google (OpenID Connect) and GitHub (OAuth 2) sign-in over real HTTP, against a provider
//! the test starts on loopback: the flow with state, PKCE and a nonce; a verified address
//! that a user has signs that user in; unknown and unverified addresses, a callback from
//! another browser and a replayed callback are refused; TOTP still applies.

mod util;

use std::net::SocketAddr;

use hyper::{Method, StatusCode};
use serde_json::json;
use util::cookies::{Browser, csrf};
use util::identity_provider::{IdentityProvider, Person};
use util::{HttpResponse, OPERATOR_KEY, call};

/// `http://host:port/path?query` as the address and the path with its query.
fn split(url: &str) -> (SocketAddr, String) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').expect("a path"));
    (host.parse().expect("host:port"), path.to_owned())
}

/// Starts a flow, lets the provider approve, and returns the callback URL.
async fn approve(browser: &mut Browser, herald: SocketAddr, provider: &str) -> String {
    let started = browser.get(herald, &format!("/dashboard/auth/{provider}")).await;
    assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.text());
    let location = started.headers["location"].to_str().expect("location").to_owned();
    assert!(location.contains("code_challenge="), "PKCE on every flow: {location}");
    assert!(location.contains("state="), "{location}");
    let (at, path) = split(&location);
    let approved = util::get(at, &path).await;
    assert_eq!(approved.status, StatusCode::FOUND, "{}", approved.text());
    approved.headers["location"].to_str().expect("location").to_owned()
}

async fn finish(browser: &mut Browser, callback: &str) -> HttpResponse {
    let (at, path) = split(callback);
    browser.get(at, &path).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_and_github_identities_sign_in_their_users() {
    let provider = IdentityProvider::start("ann@example.com").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), &provider.config()).await;
    let addr = running.http_addr;
    for email in ["ann@example.com", "bob@example.com"] {
        let added = call(
            addr,
            Method::POST,
            "/users",
            Some(OPERATOR_KEY),
            Some(json!({ "email": email, "role": "admin", "password": "correct horse battery staple" })),
        )
        .await;
        assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    }

    // The sign-in page offers both.
    let mut browser = Browser::default();
    let page = browser.get(addr, "/dashboard/login").await;
    assert!(page.text().contains("href=\"/dashboard/auth/google\""));
    assert!(page.text().contains("href=\"/dashboard/auth/github\""));

    // Google: the callback goes to public_url, and signs Ann in.
    let callback = approve(&mut browser, addr, "google").await;
    assert!(
        callback.starts_with(&format!("http://{addr}/dashboard/auth/google/callback?")),
        "{callback}"
    );
    let signed = finish(&mut browser, &callback).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.text());
    assert_eq!(signed.headers["location"], "/dashboard/emails");
    let emails = browser.get(addr, "/dashboard/emails").await;
    assert_eq!(emails.status, StatusCode::OK);
    assert!(emails.text().contains("ann@example.com"), "signed in as Ann");

    // The same callback again: the flow is spent.
    let replayed = finish(&mut browser, &callback).await;
    assert_eq!(replayed.status, StatusCode::FORBIDDEN);

    // A callback finished in another browser (no flow cookie) is refused, and its code
    // is never exchanged.
    let mut mallory = Browser::default();
    let stolen = approve(&mut mallory, addr, "google").await;
    let mut victim = Browser::default();
    let refused = finish(&mut victim, &stolen).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.text().contains("started elsewhere"), "{}", refused.text());
    assert!(victim.get(addr, "/dashboard/emails").await.status == StatusCode::SEE_OTHER);

    // An address no user has is refused: identities do not sign up.
    provider.sign_in_as(Person {
        emails: vec![("carol@example.com".into(), true)],
    });
    let mut carol = Browser::default();
    let callback = approve(&mut carol, addr, "google").await;
    let refused = finish(&mut carol, &callback).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.text().contains("carol@example.com"), "{}", refused.text());
    assert_eq!(carol.get(addr, "/dashboard/emails").await.status, StatusCode::SEE_OTHER);

    // An unverified address is refused even when a user has it.
    provider.sign_in_as(Person {
        emails: vec![("bob@example.com".into(), false)],
    });
    let mut bob = Browser::default();
    let callback = approve(&mut bob, addr, "google").await;
    let refused = finish(&mut bob, &callback).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.text().contains("no verified email"), "{}", refused.text());

    // GitHub: the primary address is unverified, a second verified one is Bob's.
    provider.sign_in_as(Person {
        emails: vec![
            ("bob@users.noreply.example".into(), false),
            ("bob@example.com".into(), true),
        ],
    });
    let callback = approve(&mut bob, addr, "github").await;
    assert!(callback.contains("/dashboard/auth/github/callback?"), "{callback}");
    let signed = finish(&mut bob, &callback).await;
    assert_eq!(signed.headers["location"], "/dashboard/emails", "{}", signed.text());
    let emails = bob.get(addr, "/dashboard/emails").await;
    assert!(emails.text().contains("bob@example.com"));
    assert!(provider.refusals().is_empty(), "{:?}", provider.refusals());

    // With TOTP on, an identity reaches only the code form.
    tokio::task::block_in_place(|| {
        let users = running.state.users();
        let mut user = users.by_email("ann@example.com").expect("read").expect("ann");
        user.totp_secret = Some(herald::users::totp::secret());
        users.put(&user).expect("put");
    });
    provider.sign_in_as(Person {
        emails: vec![("ann@example.com".into(), true)],
    });
    let mut again = Browser::default();
    let callback = approve(&mut again, addr, "github").await;
    let signed = finish(&mut again, &callback).await;
    assert_eq!(signed.headers["location"], "/dashboard/login/mfa");
    let blocked = again.get(addr, "/dashboard/emails").await;
    assert_eq!(blocked.headers["location"], "/dashboard/login/mfa");
    let form = again.get(addr, "/dashboard/login/mfa").await;
    assert!(form.text().contains("name=\"code\""));
    assert!(!csrf(&form).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_sign_in_is_off_without_its_section_and_config_errors_name_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let page = util::get(running.http_addr, "/dashboard/login").await;
    assert!(!page.text().contains("/dashboard/auth/google"));
    let off = util::get(running.http_addr, "/dashboard/auth/google").await;
    assert_eq!(off.status, StatusCode::NOT_FOUND);

    let text = util::config_text(dir.path(), "[dashboard.github]\nclient_id = \"x\"\n");
    let error = herald::config::Config::from_toml(&text, None).expect_err("no secret");
    assert!(error.to_string().contains("dashboard.github.client_secret"), "{error}");
    let text = util::config_text(
        dir.path(),
        "[dashboard.google]\nclient_id = \"x\"\nclient_secret = \"y\"\nissuer = \"http://accounts.example.com\"\n",
    );
    let error = herald::config::Config::from_toml(&text, None).expect_err("plain http");
    assert!(error.to_string().contains("dashboard.google.issuer"), "{error}");
}
