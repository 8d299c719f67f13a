//! The dashboard over real HTTP: users added through `POST /users` (what `herald users
//! add` calls), with a password or an invitation link; the sign-in page, its CSRF and
//! lockout; sessions that API keys cannot stand in for (and that never work on the API);
//! TOTP enrolment and sign-in with a code or a single-use recovery code; the Emails page.

mod util;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::json;
use util::cookies::{Browser, add_users, csrf, sign_in, signed_in};
use util::{HttpResponse, OPERATOR_KEY, call, call_with_headers};

const PASSWORD: &str = "correct horse battery staple";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_sign_in_with_a_password_and_a_second_factor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let added = call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "Ann@Example.com", "role": "admin", "password": PASSWORD })),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    assert_eq!(added.json()["role"], "admin");
    let again = call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "ann@example.com" })),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "one user per address");
    let short = call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "x@example.com", "password": "short" })),
    )
    .await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);

    // The sign-in page: the fixed field names, a strict CSP, no framing.
    let mut browser = Browser::default();
    let page = browser.get(addr, "/dashboard/login").await;
    let text = page.text();
    assert!(
        text.contains("name=\"email\"") && text.contains("name=\"password\""),
        "{text}"
    );
    let csp = page.headers["content-security-policy"].to_str().expect("csp");
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline") && csp.contains("frame-ancestors 'none'")
    );
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let css = browser.get(addr, "/dashboard/assets/app.css").await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(
        css.headers["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/css")
    );

    // Without the form's CSRF token, or with a wrong password: the same refusal.
    let token = csrf(&page);
    let forged = browser
        .post(
            addr,
            "/dashboard/login",
            &[("csrf", "nope"), ("email", "ann@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    let wrong = browser
        .post(
            addr,
            "/dashboard/login",
            &[
                ("csrf", &token),
                ("email", "ann@example.com"),
                ("password", "wrong password!!"),
            ],
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let unknown = browser
        .post(
            addr,
            "/dashboard/login",
            &[
                ("csrf", &token),
                ("email", "nobody@example.com"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        unknown.text().replace("nobody@example.com", "ann@example.com"),
        wrong.text(),
        "nothing tells which of email or password was wrong"
    );

    // The right password: a session cookie, HttpOnly and SameSite=Lax.
    let (mut ann, signed) = sign_in(addr, "ann@example.com", PASSWORD).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.text());
    assert_eq!(signed.headers["location"], "/dashboard/emails");
    let cookie = signed
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().expect("cookie").to_owned())
        .find(|c| c.starts_with("herald_session="))
        .expect("a session cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );

    // The Emails page lists the team's emails.
    util::verified_domain(addr, "shop.test").await;
    let sent = call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({ "from": "a@shop.test", "to": "reader@example.net", "subject": "<b>Hello</b>", "text": "x" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK);
    let emails = ann.get(addr, "/dashboard/emails").await;
    assert_eq!(emails.status, StatusCode::OK);
    let text = emails.text();
    assert!(
        text.contains("reader@example.net") && text.contains("Hello") && !text.contains("<b>Hello"),
        "escaped: {text}"
    );

    // An email's page: its timeline, and its HTML in a sandboxed frame, never run.
    let hostile = call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({ "from": "a@shop.test", "to": "reader@example.net", "subject": "Script", "html": "<p>Hi</p><script>alert(1)</script>" })),
    )
    .await;
    let id = hostile.json()["id"].as_str().expect("id").to_owned();
    let detail = ann.get(addr, &format!("/dashboard/emails/{id}")).await;
    assert_eq!(detail.status, StatusCode::OK);
    let text = detail.text();
    assert!(text.contains("<iframe class=\"preview\" sandbox "), "{text}");
    assert!(
        !text.contains("<script>"),
        "the HTML is escaped into srcdoc and the source view"
    );
    assert!(text.contains("status sent"), "the timeline: {text}");

    // Filters: a search over subjects and recipients, and a status.
    let searched = ann.get(addr, "/dashboard/emails?q=script").await.text();
    assert!(
        searched.contains(">Script<") && !searched.contains("Hello"),
        "{searched}"
    );
    let delivered = ann.get(addr, "/dashboard/emails?status=delivered").await.text();
    assert!(delivered.contains("No email matches"), "delivery is off: {delivered}");
    let sent = ann.get(addr, "/dashboard/emails?status=sent&q=READER").await.text();
    assert!(sent.contains("Script") && sent.contains("Hello"), "{sent}");

    // The API logs: the requests above, filtered, each with its bodies.
    let logs = ann.get(addr, "/dashboard/logs").await;
    assert!(logs.text().contains("/emails"), "{}", logs.text());
    let errors = ann.get(addr, "/dashboard/logs?status=errors").await.text();
    assert!(
        errors.contains("/users") && !errors.contains(">200<"),
        "only the refused requests: {errors}"
    );
    let first = logs.text();
    let at = first.find("href=\"/dashboard/logs/").expect("a log link") + "href=\"".len();
    let link = first[at..].split('"').next().expect("link").to_owned();
    let log = ann.get(addr, &link).await;
    assert_eq!(log.status, StatusCode::OK);
    assert!(log.text().contains("Request body"));

    // API keys are not sessions, sessions are not API keys.
    let with_key = call(addr, Method::GET, "/dashboard/emails", Some(OPERATOR_KEY), None).await;
    assert_eq!(with_key.status, StatusCode::SEE_OTHER);
    let session = ann.cookie_header();
    let api_with_cookie = call_with_headers(
        addr,
        Method::GET,
        "/emails",
        None,
        &[("cookie", &session)],
        Bytes::new(),
    )
    .await;
    assert_eq!(api_with_cookie.status, StatusCode::UNAUTHORIZED);

    // A state-changing request without the session's CSRF token is refused.
    let forged = ann
        .post(
            addr,
            "/dashboard/profile/password",
            &[("current", PASSWORD), ("password", "another long password")],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);

    // TOTP enrolment: the secret as text, a code turns it on, ten recovery codes once.
    let profile = ann.get(addr, "/dashboard/profile").await;
    let text = profile.text();
    let at = text.find("id=\"totp-secret\">").expect("the secret") + "id=\"totp-secret\">".len();
    let key = text[at..].split('<').next().expect("key").to_owned();
    let secret = herald::users::totp::from_base32(&key).expect("base32");
    assert!(text.contains("data:image/svg+xml;base64,"), "a QR code");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .as_secs()
    };
    let enrolled = ann
        .post(
            addr,
            "/dashboard/profile/totp",
            &[
                ("csrf", &csrf(&profile)),
                ("code", &herald::users::totp::code(&secret, now())),
            ],
        )
        .await;
    assert_eq!(enrolled.status, StatusCode::OK, "{}", enrolled.text());
    let text = enrolled.text();
    let codes: Vec<String> = text
        .split("<li><code>")
        .skip(1)
        .map(|rest| rest.split('<').next().expect("code").to_owned())
        .collect();
    assert_eq!(codes.len(), 10, "{text}");
    let again = ann.get(addr, "/dashboard/profile").await;
    assert!(!again.text().contains(&codes[0]), "recovery codes are shown once");

    // Sign out, then in: the password alone reaches only the code form.
    let logout = ann.post(addr, "/dashboard/logout", &[("csrf", &csrf(&again))]).await;
    assert_eq!(logout.status, StatusCode::SEE_OTHER);
    assert_eq!(ann.get(addr, "/dashboard/emails").await.status, StatusCode::SEE_OTHER);
    let (mut second, signed) = sign_in(addr, "ann@example.com", PASSWORD).await;
    assert_eq!(signed.headers["location"], "/dashboard/login/mfa");
    let blocked = second.get(addr, "/dashboard/emails").await;
    assert_eq!(blocked.headers["location"], "/dashboard/login/mfa");
    let form = second.get(addr, "/dashboard/login/mfa").await;
    assert!(form.text().contains("name=\"code\""));
    let bad = second
        .post(
            addr,
            "/dashboard/login/mfa",
            &[("csrf", &csrf(&form)), ("code", "000000")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    let good = second
        .post(
            addr,
            "/dashboard/login/mfa",
            &[
                ("csrf", &csrf(&form)),
                ("code", &herald::users::totp::code(&secret, now())),
            ],
        )
        .await;
    assert_eq!(good.headers["location"], "/dashboard/emails");
    assert_eq!(second.get(addr, "/dashboard/emails").await.status, StatusCode::OK);

    // A recovery code works once.
    for (attempt, wanted) in [(1, StatusCode::SEE_OTHER), (2, StatusCode::UNAUTHORIZED)] {
        let (mut third, _) = sign_in(addr, "ann@example.com", PASSWORD).await;
        let form = third.get(addr, "/dashboard/login/mfa").await;
        let used = third
            .post(
                addr,
                "/dashboard/login/mfa",
                &[("csrf", &csrf(&form)), ("code", &codes[0])],
            )
            .await;
        assert_eq!(used.status, wanted, "recovery code, attempt {attempt}");
    }
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn invitations_set_a_password_once_and_failures_lock_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let added = call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "bob@example.com" })),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    let url = added.json()["invitation_url"]
        .as_str()
        .expect("an invitation")
        .to_owned();
    assert!(url.starts_with(&format!("http://{addr}/dashboard/invite/")), "{url}");
    let path = url.trim_start_matches(&format!("http://{addr}"));
    // Not signed in until the password is set.
    let (_, early) = sign_in(addr, "bob@example.com", PASSWORD).await;
    assert_eq!(early.status, StatusCode::UNAUTHORIZED);
    let mut browser = Browser::default();
    let page = browser.get(addr, path).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("bob@example.com"));
    let too_short = browser
        .post(addr, path, &[("csrf", &csrf(&page)), ("password", "short")])
        .await;
    assert_eq!(too_short.status, StatusCode::UNPROCESSABLE_ENTITY);
    let set = browser
        .post(addr, path, &[("csrf", &csrf(&page)), ("password", PASSWORD)])
        .await;
    assert_eq!(set.status, StatusCode::SEE_OTHER, "{}", set.text());
    assert_eq!(
        browser.get(addr, path).await.status,
        StatusCode::NOT_FOUND,
        "an invitation works once"
    );
    let (_, signed) = sign_in(addr, "bob@example.com", PASSWORD).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER);

    // Ten failures lock the account: even the right password is refused for a while.
    for _ in 0..10 {
        let (_, failed) = sign_in(addr, "bob@example.com", "not the password").await;
        assert_eq!(failed.status, StatusCode::UNAUTHORIZED);
    }
    let (_, locked) = sign_in(addr, "bob@example.com", PASSWORD).await;
    assert_eq!(locked.status, StatusCode::UNAUTHORIZED, "locked out");

    // A team's own key adds users to its team only.
    let key = other_team(addr).await;
    let operator_team =
        call(addr, Method::GET, "/users", Some(OPERATOR_KEY), None).await.json()["data"][0]["team_id"].clone();
    let refused = call(
        addr,
        Method::POST,
        "/users",
        Some(&key),
        Some(json!({ "email": "eve@example.com", "team_id": operator_team })),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn domains_are_managed_by_admins_and_only_seen_by_members() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    for (email, role) in [
        ("admin@example.com", "admin"),
        ("member@example.com", "member"),
        ("owner@example.com", "owner"),
    ] {
        let added = call(
            addr,
            Method::POST,
            "/users",
            Some(OPERATOR_KEY),
            Some(json!({ "email": email, "role": role, "password": PASSWORD })),
        )
        .await;
        assert_eq!(added.status, StatusCode::CREATED);
    }
    let (mut admin, _) = sign_in(addr, "admin@example.com", PASSWORD).await;
    let page = admin.get(addr, "/dashboard/domains").await;
    assert!(page.text().contains("Add a domain"));
    let added = admin
        .post(
            addr,
            "/dashboard/domains",
            &[("csrf", &csrf(&page)), ("name", "news.example.org")],
        )
        .await;
    assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.text());
    let location = added.headers["location"].to_str().expect("location").to_owned();
    let detail = admin.get(addr, &location).await;
    let text = detail.text();
    assert!(
        text.contains("news.example.org") && text.contains("DKIM") && text.contains("v=DKIM1"),
        "{text}"
    );
    assert!(text.contains("_dmarc"), "the DMARC advice");
    let saved = admin
        .post(
            addr,
            &format!("{location}/config"),
            &[
                ("csrf", &csrf(&detail)),
                ("open_tracking", "on"),
                ("tracking_subdomain", "links"),
            ],
        )
        .await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    let id = location.rsplit('/').next().expect("id");
    let domain = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(
        (domain["open_tracking"].as_bool(), domain["tracking_subdomain"].as_str()),
        (Some(true), Some("links"))
    );

    // A member sees it but cannot change or delete it.
    let (mut member, _) = sign_in(addr, "member@example.com", PASSWORD).await;
    let seen = member.get(addr, &location).await;
    assert_eq!(seen.status, StatusCode::OK);
    assert!(!seen.text().contains("Delete domain"));
    let refused = member
        .post(
            addr,
            &format!("{location}/delete"),
            &[("csrf", &csrf(&seen)), ("confirm", "news.example.org")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let list = member.get(addr, "/dashboard/domains").await;
    assert!(list.text().contains("news.example.org") && !list.text().contains("Add a domain"));

    // API keys: an admin creates one (its token shown once) and deletes it; a member cannot.
    let keys = admin.get(addr, "/dashboard/api-keys").await;
    assert!(keys.text().contains("Create an API key"));
    let created = admin
        .post(
            addr,
            "/dashboard/api-keys",
            &[
                ("csrf", &csrf(&keys)),
                ("name", "deploy"),
                ("permission", "full_access"),
            ],
        )
        .await;
    let text = created.text();
    let at = text.find("id=\"new-token\">").expect("the token, once") + "id=\"new-token\">".len();
    let token = text[at..].split('<').next().expect("token").to_owned();
    assert!(token.starts_with("re_"), "{token}");
    assert_eq!(
        call(addr, Method::GET, "/domains", Some(&token), None).await.status,
        StatusCode::OK
    );
    assert!(
        !admin.get(addr, "/dashboard/api-keys").await.text().contains(&token),
        "shown once"
    );
    let member_keys = member.get(addr, "/dashboard/api-keys").await;
    assert!(member_keys.text().contains("deploy") && !member_keys.text().contains("Create an API key"));
    let refused = member
        .post(
            addr,
            "/dashboard/api-keys",
            &[("csrf", &csrf(&member_keys)), ("name", "mine")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let key_id = call(addr, Method::GET, "/api-keys", Some(OPERATOR_KEY), None)
        .await
        .json()["data"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["name"] == "deploy")
        .expect("the key")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let deleted = admin
        .post(
            addr,
            &format!("/dashboard/api-keys/{key_id}/delete"),
            &[("csrf", &csrf(&keys))],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(
        call(addr, Method::GET, "/domains", Some(&token), None).await.status,
        StatusCode::FORBIDDEN
    );

    // Suppressions: admins add and remove, anyone searches.
    let list = admin.get(addr, "/dashboard/suppressions").await;
    let added = admin
        .post(
            addr,
            "/dashboard/suppressions",
            &[("csrf", &csrf(&list)), ("email", "Blocked@Example.org")],
        )
        .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    assert!(
        member
            .get(addr, "/dashboard/suppressions?q=blocked")
            .await
            .text()
            .contains("blocked@example.org")
    );
    assert!(
        !member
            .get(addr, "/dashboard/suppressions?q=zzz")
            .await
            .text()
            .contains("blocked@example.org")
    );
    let refused = member
        .post(
            addr,
            "/dashboard/suppressions",
            &[("csrf", &csrf(&list)), ("email", "x@example.org")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let entry = call(
        addr,
        Method::GET,
        "/suppressions/blocked@example.org",
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    let entry_id = entry["id"].as_str().expect("id").to_owned();
    let removed = admin
        .post(
            addr,
            &format!("/dashboard/suppressions/{entry_id}/delete"),
            &[("csrf", &csrf(&list))],
        )
        .await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(
        call(
            addr,
            Method::GET,
            "/suppressions/blocked@example.org",
            Some(OPERATOR_KEY),
            None
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );

    // The team: owners invite; admins may not.
    let team = admin.get(addr, "/dashboard/team").await;
    assert!(team.text().contains("member@example.com") && !team.text().contains("Invite someone"));
    let refused = admin
        .post(
            addr,
            "/dashboard/team",
            &[("csrf", &csrf(&team)), ("email", "new@example.com")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let (mut owner, _) = sign_in(addr, "owner@example.com", PASSWORD).await;
    let team = owner.get(addr, "/dashboard/team").await;
    let invited = owner
        .post(
            addr,
            "/dashboard/team",
            &[("csrf", &csrf(&team)), ("email", "new@example.com"), ("role", "member")],
        )
        .await;
    let text = invited.text();
    assert!(
        text.contains("id=\"invitation\">http://") && text.contains("/dashboard/invite/"),
        "{text}"
    );
    assert!(text.contains("new@example.com") && text.contains("invited"), "{text}");

    // Deleting asks for the name.
    let wrong = admin
        .post(
            addr,
            &format!("{location}/delete"),
            &[("csrf", &csrf(&detail)), ("confirm", "other.org")],
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNPROCESSABLE_ENTITY);
    let deleted = admin
        .post(
            addr,
            &format!("{location}/delete"),
            &[("csrf", &csrf(&detail)), ("confirm", "news.example.org")],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    assert_eq!(
        call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert!(running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_page_draws_the_counters_with_their_thresholds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(addr, &[("mia@example.com", "member")], PASSWORD).await;
    util::verified_domain(addr, "shop.test").await;
    for n in 0..2 {
        let body = json!({ "from": "a@shop.test", "to": format!("r{n}@example.net"), "subject": "s", "text": "t" });
        call(addr, Method::POST, "/emails", Some(OPERATOR_KEY), Some(body)).await;
    }
    let (mut mia, _) = sign_in(addr, "mia@example.com", PASSWORD).await;
    let page = mia
        .get(addr, "/dashboard/metrics?range=30d&granularity=weekly&tz=Europe/Paris")
        .await;
    assert_eq!(page.status, StatusCode::OK, "members see metrics");
    let text = page.text();
    assert!(text.contains("<svg class=\"chart\""), "{text}");
    assert!(text.contains("4 % threshold") && text.contains("0.08 % threshold"));
    assert!(text.contains("(Europe/Paris)"));
    assert!(text.contains("<td>shop.test</td><td>2</td>"), "sent 2 from shop.test");
    assert!(!text.contains("<script>"), "no inline script");
    // Each vendored file served is the file its README names.
    let readme = std::fs::read_to_string("assets/dashboard/vendor/README.md").expect("README");
    for file in [
        "htmx-2.0.11.min.js",
        "grapesjs-0.23.6.min.js",
        "grapesjs-0.23.6.min.css",
        "grapesjs-mjml-1.0.8.min.js",
    ] {
        let served = util::get(addr, &format!("/dashboard/assets/vendor/{file}")).await;
        assert_eq!(served.status, StatusCode::OK, "{file}");
        let digest: String = <sha2::Sha256 as sha2::Digest>::digest(&served.body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(readme.contains(&format!("`{file}`")), "{file} is listed");
        assert!(readme.contains(&digest), "{file}: sha256 {digest} is recorded");
    }
    // An unknown zone falls back to UTC rather than failing the page.
    let utc = mia.get(addr, "/dashboard/metrics?tz=Nowhere/Special").await;
    assert!(utc.text().contains("(UTC)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emails_page_filters_pages_and_exports_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(addr, &[("ann@example.com", "admin")], PASSWORD).await;
    util::verified_domain(addr, "shop.test").await;
    util::verified_domain(addr, "news.test").await;
    let key = call(
        addr,
        Method::POST,
        "/api-keys",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "newsletter" })),
    )
    .await
    .json();
    let (key_id, token) = (
        key["id"].as_str().expect("id").to_owned(),
        key["token"].as_str().expect("token").to_owned(),
    );
    let send = |key: String, body: serde_json::Value| async move {
        let sent = call(addr, Method::POST, "/emails", Some(&key), Some(body)).await;
        assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
        sent.json()["id"].as_str().expect("id").to_owned()
    };
    for n in 0..52 {
        send(
            OPERATOR_KEY.to_owned(),
            json!({ "from": "a@shop.test", "to": format!("bulk{n}@example.net"), "subject": format!("Bulk {n}"), "text": "t" }),
        )
        .await;
    }
    for n in 0..3 {
        send(
            OPERATOR_KEY.to_owned(),
            json!({ "from": "a@shop.test", "to": format!("new{n}@example.net"), "subject": "Welcome aboard", "text": "t",
                    "tags": [{ "name": "category", "value": "welcome" }] }),
        )
        .await;
    }
    for n in 0..2 {
        send(
            token.clone(),
            json!({ "from": "Letters <l@news.test>", "to": format!("reader{n}@example.org"), "subject": "Issue 12", "text": "t" }),
        )
        .await;
    }
    let later = json!({ "from": "a@shop.test", "to": "later@example.net", "subject": "Later", "text": "t", "html": "<p>Later <img src=\"https://img.example/x.png\"></p>", "scheduled_at": "in 2 days" });
    send(OPERATOR_KEY.to_owned(), later.clone()).await;
    let canceled = send(OPERATOR_KEY.to_owned(), later).await;
    let cancel = call(
        addr,
        Method::POST,
        &format!("/emails/{canceled}/cancel"),
        Some(OPERATOR_KEY),
        None,
    )
    .await;
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text());

    let (mut ann, _) = sign_in(addr, "ann@example.com", PASSWORD).await;
    let rows = |page: &HttpResponse| page.text().matches("<tr><td><a href=\"/dashboard/emails/").count();
    let first = ann.get(addr, "/dashboard/emails").await;
    assert_eq!(rows(&first), 50, "pages of 50");
    let text = first.text();
    let at = text.find("/dashboard/emails?after=").expect("a next page");
    let next = text[at..].split('"').next().expect("href").replace("&amp;", "&");
    let second = ann.get(addr, &next).await;
    assert_eq!(rows(&second), 9, "59 in all");
    assert!(second.text().contains("bulk0@example.net"), "the oldest last");

    for (query, want, must) in [
        ("status=scheduled", 1, "later@example.net"),
        ("status=canceled", 1, "later@example.net"),
        ("domain=news.test", 2, "reader1@example.org"),
        ("tag=category%3Awelcome", 3, "Welcome aboard"),
        ("tag=category", 3, "Welcome aboard"),
        ("q=issue+12", 2, "reader0@example.org"),
        ("status=sent&domain=shop.test&q=welcome", 3, "new2@example.net"),
    ] {
        let page = ann.get(addr, &format!("/dashboard/emails?{query}")).await;
        assert_eq!(page.status, StatusCode::OK);
        assert_eq!(rows(&page), want, "{query}: {}", page.text());
        assert!(page.text().contains(must), "{query}");
    }
    let by_key = ann.get(addr, &format!("/dashboard/emails?key={key_id}")).await;
    assert_eq!(rows(&by_key), 2, "sent with the newsletter key");
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let future = ann.get(addr, &format!("/dashboard/emails?since={tomorrow}")).await;
    assert_eq!(rows(&future), 0);
    let past = ann.get(addr, &format!("/dashboard/emails?until={yesterday}")).await;
    assert_eq!(rows(&past), 0);
    let today = ann
        .get(
            addr,
            &format!("/dashboard/emails?since={yesterday}&until={tomorrow}&domain=news.test"),
        )
        .await;
    assert_eq!(rows(&today), 2);
    let bad = ann.get(addr, "/dashboard/emails?since=last+week").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    // The export: the same filters, every match, as CSV.
    let csv = ann.get(addr, "/dashboard/emails/export.csv?domain=news.test").await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    let text = csv.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "id,created_at,from,to,subject,last_event,tags,api_key_id");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[1].contains("Letters <l@news.test>") && lines[1].contains(&key_id),
        "{text}"
    );
    let all = ann.get(addr, "/dashboard/emails/export.csv").await;
    assert_eq!(all.text().lines().count(), 60, "every email, past the page size");
    let stranger = util::get(addr, "/dashboard/emails/export.csv").await;
    assert_eq!(stranger.status, StatusCode::SEE_OTHER, "no session, no export");

    // From an email to the API request that created it, and back.
    let email = ann.get(addr, &format!("/dashboard/emails/{canceled}")).await;
    let text = email.text();
    assert!(text.contains("Message-ID: &#60;"), "a headers tab: {text}");
    let policy = email.headers["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_owned();
    assert!(
        policy.contains("img-src 'self' data:;"),
        "remote images blocked: {policy}"
    );
    assert!(text.contains("id=\"show-images\""));
    assert!(
        text.contains(&format!("src=\"/dashboard/emails/{canceled}/preview\"")),
        "{text}"
    );
    // The preview is served apart, with its own policy: the email's styles, no scripts,
    // no remote images until asked for, framed by the dashboard only.
    let preview = ann.get(addr, &format!("/dashboard/emails/{canceled}/preview")).await;
    let policy = preview.headers["content-security-policy"].to_str().expect("csp");
    assert!(
        policy.contains("style-src 'unsafe-inline'; img-src data:;") && policy.contains("sandbox"),
        "{policy}"
    );
    assert!(!policy.contains("script-src"), "{policy}");
    assert_eq!(preview.headers["x-frame-options"], "SAMEORIGIN");
    let shown = ann.get(addr, &format!("/dashboard/emails/{canceled}?images=1")).await;
    assert!(
        shown
            .text()
            .contains(&format!("src=\"/dashboard/emails/{canceled}/preview?images=1\""))
    );
    let preview = ann
        .get(addr, &format!("/dashboard/emails/{canceled}/preview?images=1"))
        .await;
    let policy = preview.headers["content-security-policy"].to_str().expect("csp");
    assert!(
        policy.contains("img-src data: https: http:") && policy.contains("sandbox"),
        "{policy}"
    );
    let stranger = util::get(addr, &format!("/dashboard/emails/{canceled}/preview")).await;
    assert_eq!(stranger.status, StatusCode::SEE_OTHER, "no session, no preview");
    let marker = "id=\"api-request\" href=\"";
    let at = text.find(marker).expect("a link to the request") + marker.len();
    let log_path = text[at..].split('"').next().expect("href").to_owned();
    let log = ann.get(addr, &log_path).await;
    assert_eq!(log.status, StatusCode::OK);
    assert!(
        log.text().contains(&format!("href=\"/dashboard/emails/{canceled}\"")),
        "{}",
        log.text()
    );
    // API logs filtered by method and key.
    let by_key = ann
        .get(addr, &format!("/dashboard/logs?method=POST&key={key_id}"))
        .await;
    let rows = by_key.text().matches("<tr><td><a href=\"/dashboard/logs/").count();
    assert_eq!(rows, 2, "the newsletter key's two sends");
    let gets = ann.get(addr, "/dashboard/logs?method=GET").await;
    assert_eq!(gets.text().matches("<tr><td><a href=\"/dashboard/logs/").count(), 0);
}

/// The value of the element with `id` (its text).
/// A new team, "Other"; its full-access key.
async fn other_team(addr: std::net::SocketAddr) -> String {
    let team = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Other" })),
    )
    .await
    .json();
    team["api_key"]["token"].as_str().expect("key").to_owned()
}

fn element_text(page: &HttpResponse, id: &str) -> String {
    let text = page.text();
    let marker = format!("id=\"{id}\">");
    let at = text.find(&marker).unwrap_or_else(|| panic!("no #{id} in {text}")) + marker.len();
    text[at..].split('<').next().expect("text").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_add_edit_rotate_and_delete_webhooks_and_members_cannot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(
        addr,
        &[("ann@example.com", "admin"), ("mia@example.com", "member")],
        PASSWORD,
    )
    .await;
    let (mut ann, _) = sign_in(addr, "ann@example.com", PASSWORD).await;
    let list = ann.get(addr, "/dashboard/webhooks").await;
    assert!(list.text().contains("value=\"email.bounced\""), "every event to choose");
    let token = csrf(&list);
    let none = ann
        .post(
            addr,
            "/dashboard/webhooks",
            &[("csrf", &token), ("endpoint", "http://127.0.0.1:9/hook")],
        )
        .await;
    assert_eq!(none.status, StatusCode::UNPROCESSABLE_ENTITY, "events are required");
    assert!(none.text().contains("events"), "{}", none.text());
    let created = ann
        .post(
            addr,
            "/dashboard/webhooks",
            &[
                ("csrf", &token),
                ("endpoint", "http://127.0.0.1:9/hook"),
                ("events", "email.sent"),
                ("events", "email.bounced"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text());
    let secret = element_text(&created, "signing-secret");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let hooks = call(addr, Method::GET, "/webhooks", Some(OPERATOR_KEY), None)
        .await
        .json();
    let id = hooks["data"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(hooks["data"][0]["events"], json!(["email.sent", "email.bounced"]));
    let again = ann.get(addr, &format!("/dashboard/webhooks/{id}")).await;
    assert!(!again.text().contains(&secret), "the secret is shown once");

    let edited = ann
        .post(
            addr,
            &format!("/dashboard/webhooks/{id}/edit"),
            &[
                ("csrf", &token),
                ("endpoint", "http://127.0.0.1:9/other"),
                ("events", "email.delivered"),
            ],
        )
        .await;
    assert!(edited.text().contains("Saved."), "{}", edited.text());
    let hook = call(addr, Method::GET, &format!("/webhooks/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(hook["events"], json!(["email.delivered"]));
    assert_eq!(hook["endpoint"], "http://127.0.0.1:9/other");

    let rotated = ann
        .post(addr, &format!("/dashboard/webhooks/{id}/rotate"), &[("csrf", &token)])
        .await;
    let new_secret = element_text(&rotated, "signing-secret");
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);

    // A member sees the endpoint but changes nothing.
    let (mut mia, _) = sign_in(addr, "mia@example.com", PASSWORD).await;
    let seen = mia.get(addr, "/dashboard/webhooks").await;
    assert!(!seen.text().contains("id=\"new-webhook\""), "no form for members");
    let refused = mia
        .post(
            addr,
            "/dashboard/webhooks",
            &[
                ("csrf", &csrf(&seen)),
                ("endpoint", "http://127.0.0.1:9/x"),
                ("events", "email.sent"),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    let unconfirmed = ann
        .post(addr, &format!("/dashboard/webhooks/{id}/delete"), &[("csrf", &token)])
        .await;
    assert!(unconfirmed.text().contains("Type delete"));
    let deleted = ann
        .post(
            addr,
            &format!("/dashboard/webhooks/{id}/delete"),
            &[("csrf", &token), ("confirm", "delete")],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    let gone = call(addr, Method::GET, &format!("/webhooks/{id}"), Some(OPERATOR_KEY), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audience_pages_manage_contacts_segments_topics_properties_and_imports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(
        addr,
        &[("ann@example.com", "admin"), ("mia@example.com", "member")],
        PASSWORD,
    )
    .await;
    let (mut ann, _) = sign_in(addr, "ann@example.com", PASSWORD).await;
    let settings = ann.get(addr, "/dashboard/audience").await;
    let token = csrf(&settings);
    for (path, form) in [
        ("/dashboard/audience/segments", vec![("name", "Customers")]),
        (
            "/dashboard/audience/topics",
            vec![
                ("name", "Product news"),
                ("default_subscription", "opt_out"),
                ("visibility", "public"),
            ],
        ),
        (
            "/dashboard/audience/properties",
            vec![("key", "plan"), ("type", "string"), ("fallback_value", "free")],
        ),
    ] {
        let mut fields = vec![("csrf", token.as_str())];
        fields.extend(form);
        let done = ann.post(addr, path, &fields).await;
        assert_eq!(done.status, StatusCode::SEE_OTHER, "{path}: {}", done.text());
    }
    let bad = ann
        .post(
            addr,
            "/dashboard/audience/properties",
            &[("csrf", &token), ("key", "no spaces!"), ("type", "string")],
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    let settings = ann.get(addr, "/dashboard/audience").await.text();
    assert!(settings.contains("Customers") && settings.contains("Product news") && settings.contains(">plan<"));
    let segments = call(addr, Method::GET, "/segments", Some(OPERATOR_KEY), None)
        .await
        .json();
    let segment = segments["data"][0]["id"].as_str().expect("segment").to_owned();
    let topics = call(addr, Method::GET, "/topics", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(topics["data"][0]["default_subscription"], "opt_out");

    // Contacts: add two, one in the segment; filter; edit; delete.
    for (email, segment) in [("kim@example.net", segment.as_str()), ("lee@example.net", "")] {
        let added = ann
            .post(
                addr,
                "/dashboard/contacts",
                &[
                    ("csrf", &token),
                    ("email", email),
                    ("first_name", "Kim"),
                    ("segment", segment),
                ],
            )
            .await;
        assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.text());
    }
    let rows = |page: &HttpResponse| {
        let text = page.text();
        text.matches("<tr><td><a href=\"/dashboard/contacts/").count()
            - text.matches("<tr><td><a href=\"/dashboard/contacts/imports/").count()
    };
    assert_eq!(rows(&ann.get(addr, "/dashboard/contacts").await), 2);
    let in_segment = ann.get(addr, &format!("/dashboard/contacts?segment={segment}")).await;
    assert_eq!(rows(&in_segment), 1);
    assert!(in_segment.text().contains("kim@example.net"));
    let kim = call(addr, Method::GET, "/contacts/kim@example.net", Some(OPERATOR_KEY), None)
        .await
        .json();
    let kim_id = kim["id"].as_str().expect("id").to_owned();
    let page = ann.get(addr, &format!("/dashboard/contacts/{kim_id}")).await;
    assert!(page.text().contains("Customers"), "its segment by name");
    let edited = ann
        .post(
            addr,
            &format!("/dashboard/contacts/{kim_id}"),
            &[
                ("csrf", &token),
                ("first_name", "Kimberly"),
                ("last_name", ""),
                ("unsubscribed", "yes"),
            ],
        )
        .await;
    assert!(edited.text().contains("Saved."), "{}", edited.text());
    let kim = call(
        addr,
        Method::GET,
        &format!("/contacts/{kim_id}"),
        Some(OPERATOR_KEY),
        None,
    )
    .await
    .json();
    assert_eq!(
        (kim["first_name"].as_str(), kim["unsubscribed"].as_bool()),
        (Some("Kimberly"), Some(true))
    );
    let unsubscribed = ann.get(addr, "/dashboard/contacts?unsubscribed=yes").await;
    assert_eq!(rows(&unsubscribed), 1);
    let searched = ann.get(addr, "/dashboard/contacts?q=lee").await;
    assert_eq!(rows(&searched), 1);
    let topic = topics["data"][0]["id"].as_str().expect("topic").to_owned();
    let none = ann.get(addr, &format!("/dashboard/contacts?topic={topic}")).await;
    assert_eq!(rows(&none), 0, "the topic is opt-out by default");
    let chose = call(
        addr,
        Method::PATCH,
        "/contacts/lee@example.net/topics",
        Some(OPERATOR_KEY),
        Some(json!([{ "id": topic, "subscription": "opt_in" }])),
    )
    .await;
    assert_eq!(chose.status, StatusCode::OK, "{}", chose.text());
    let opted_in = ann.get(addr, &format!("/dashboard/contacts?topic={topic}")).await;
    assert_eq!(rows(&opted_in), 1, "lee opted in");

    // A member looks and changes nothing.
    let (mut mia, _) = sign_in(addr, "mia@example.com", PASSWORD).await;
    let seen = mia.get(addr, "/dashboard/contacts").await;
    assert!(!seen.text().contains("id=\"new-contact\""));
    let refused = mia
        .post(
            addr,
            &format!("/dashboard/contacts/{kim_id}/delete"),
            &[("csrf", &csrf(&seen))],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let deleted = ann
        .post(
            addr,
            &format!("/dashboard/contacts/{kim_id}/delete"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::SEE_OTHER);
    assert_eq!(rows(&ann.get(addr, "/dashboard/contacts").await), 1);

    // A CSV import through the form: its progress and the row it refused.
    let csv = "email,first_name\nnew1@example.org,One\nnot-an-address,Two\nnew2@example.org,Three\n";
    let boundary = "herald-test-boundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{token}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"on_conflict\"\r\n\r\nupsert\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"segment\"\r\n\r\n{segment}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"people.csv\"\r\nContent-Type: text/csv\r\n\r\n{csv}\r\n\
         --{boundary}--\r\n"
    );
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let upload = |cookie: String| {
        let body = body.clone();
        let content_type = content_type.clone();
        async move {
            util::call_with_headers(
                addr,
                Method::POST,
                "/dashboard/contacts/import",
                None,
                &[("cookie", &cookie), ("content-type", &content_type)],
                bytes::Bytes::from(body),
            )
            .await
        }
    };
    let stranger = upload(String::new()).await;
    assert_eq!(stranger.status, StatusCode::SEE_OTHER, "no session, no upload");
    let members = upload(mia.cookie_header()).await;
    assert_eq!(members.status, StatusCode::SEE_OTHER, "a member's upload is not read");
    let started = upload(ann.cookie_header()).await;
    assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.text());
    let location = started.headers["location"].to_str().expect("location").to_owned();
    assert!(location.starts_with("/dashboard/contacts/imports/"), "{location}");
    let page = util::eventually(std::time::Duration::from_secs(30), "the import", || {
        let location = location.clone();
        let mut browser = util::cookies::Browser {
            cookies: ann.cookies.clone(),
        };
        async move {
            let page = browser.get(addr, &location).await;
            page.text().contains("id=\"import-status\">completed").then_some(page)
        }
    })
    .await;
    let text = page.text();
    assert!(text.contains("<dt>Created</dt><dd>2</dd>"), "{text}");
    assert!(text.contains("<dt>Refused</dt><dd>1</dd>"), "{text}");
    assert!(text.contains("not-an-address"), "the refused row and why: {text}");
    let in_segment = ann.get(addr, &format!("/dashboard/contacts?segment={segment}")).await;
    assert_eq!(
        rows(&in_segment),
        2,
        "the imported contacts joined the segment: {}",
        in_segment.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_are_written_published_and_duplicated_from_the_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    add_users(addr, &[("ann@example.com", "admin")], PASSWORD).await;
    let (mut ann, _) = sign_in(addr, "ann@example.com", PASSWORD).await;
    let list = ann.get(addr, "/dashboard/templates").await;
    let token = csrf(&list);
    let broken = ann
        .post(
            addr,
            "/dashboard/templates",
            &[
                ("csrf", &token),
                ("name", "Broken"),
                ("html", "<p>Hi {{{FIRST_NAME</p>"),
            ],
        )
        .await;
    assert_eq!(broken.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", broken.text());
    let created = ann
        .post(
            addr,
            "/dashboard/templates",
            &[
                ("csrf", &token),
                ("name", "Welcome"),
                ("subject", "Welcome aboard"),
                ("html", "<p>Hi {{{FIRST_NAME|there}}}</p>"),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.text());
    let path = created.headers["location"].to_str().expect("location").to_owned();
    let id = path.rsplit('/').next().expect("id").to_owned();
    let page = ann.get(addr, &path).await;
    assert!(page.text().contains("status draft\">draft"), "new templates are drafts");
    let published = ann.post(addr, &format!("{path}/publish"), &[("csrf", &token)]).await;
    assert!(published.text().contains("Published"), "{}", published.text());
    let edited = ann
        .post(
            addr,
            &path,
            &[
                ("csrf", &token),
                ("name", "Welcome"),
                ("subject", "Welcome, friend"),
                ("html", "<p>Hello {{{FIRST_NAME|there}}}</p>"),
                ("from", ""),
                ("text", ""),
            ],
        )
        .await;
    assert!(edited.text().contains("draft waiting"), "{}", edited.text());
    let api = call(addr, Method::GET, &format!("/templates/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(api["status"], "published");
    assert_eq!(api["has_unpublished_versions"], true, "{api}");
    let copy = ann.post(addr, &format!("{path}/duplicate"), &[("csrf", &token)]).await;
    assert_eq!(copy.status, StatusCode::SEE_OTHER);
    let all = call(addr, Method::GET, "/templates", Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(all["data"].as_array().expect("list").len(), 2);
    let listed = ann.get(addr, "/dashboard/templates").await;
    assert_eq!(
        listed.text().matches("<tr><td><a href=\"/dashboard/templates/").count(),
        2
    );
}

#[tokio::test]
async fn a_domains_page_shows_its_regions_addresses_and_moves_it_to_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let regions = "[[regions]]\nname = \"us-east-1\"\nsource_addresses = [\"127.0.0.2\", \"127.0.0.4\"]\n\
        ehlo = \"mta-us.herald.test\"\nconnections_per_address = 7\n\
        [[regions.warmup]]\naddress = \"127.0.0.4\"\nstart = \"2099-01-01\"\ndaily_limits = [50, 100, 200]\n\
        [[regions]]\nname = \"eu-west-1\"\nsource_addresses = [\"127.0.0.3\"]\n";
    let running = util::start_api(dir.path(), regions).await;
    let addr = running.http_addr;
    add_users(addr, &[("admin@example.com", "admin")], PASSWORD).await;
    let id = util::verified_domain(addr, "regional.example.org").await;
    let mut admin = signed_in(addr, "admin@example.com", PASSWORD).await;
    let location = format!("/dashboard/domains/{id}");
    let page = admin.get(addr, &location).await;
    let text = page.text();
    assert!(
        text.contains("Region us-east-1") && text.contains("mta-us.herald.test"),
        "{text}"
    );
    assert!(
        text.contains("<code class=\"value\">127.0.0.2</code></td><td>0 / 7</td><td>0</td><td>no daily limit</td>"),
        "{text}"
    );
    assert!(
        text.contains(
            "<code class=\"value\">127.0.0.4</code></td><td>0 / 7</td><td>0</td><td>day 1 of 3: 50 a day</td>"
        ),
        "{text}"
    );
    assert!(
        text.contains("ip4:127.0.0.2 ip4:127.0.0.4 a:mta-us.herald.test"),
        "the SPF record: {text}"
    );

    let moved = admin
        .post(
            addr,
            &format!("{location}/config"),
            &[("csrf", &csrf(&page)), ("region", "eu-west-1")],
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.text());
    assert!(moved.text().contains("Region eu-west-1") && moved.text().contains("127.0.0.3"));
    let domain = call(addr, Method::GET, &format!("/domains/{id}"), Some(OPERATOR_KEY), None)
        .await
        .json();
    assert_eq!(domain["region"], "eu-west-1");

    let refused = admin
        .post(
            addr,
            &format!("{location}/config"),
            &[("csrf", &csrf(&moved)), ("region", "sa-east-1")],
        )
        .await;
    assert!(refused.text().contains("us-east-1, eu-west-1"), "{}", refused.text());
    assert_ne!(refused.status, StatusCode::OK);

    // Another team sees its region's addresses and warm-up, not the host's live counts
    // (they are every team's mail).
    let key = other_team(addr).await;
    let user = call(
        addr,
        Method::POST,
        "/users",
        Some(&key),
        Some(json!({ "email": "olga@example.com", "role": "admin", "password": PASSWORD })),
    )
    .await;
    assert_eq!(user.status, StatusCode::CREATED, "{}", user.text());
    let theirs = call(
        addr,
        Method::POST,
        "/domains",
        Some(&key),
        Some(json!({ "name": "other.example.org" })),
    )
    .await
    .json();
    let mut olga = signed_in(addr, "olga@example.com", PASSWORD).await;
    let page = olga
        .get(
            addr,
            &format!("/dashboard/domains/{}", theirs["id"].as_str().expect("id")),
        )
        .await
        .text();
    assert!(
        page.contains("<code class=\"value\">127.0.0.4</code></td><td>—</td><td>—</td><td>day 1 of 3: 50 a day</td>"),
        "{page}"
    );
}

#[tokio::test]
async fn the_team_page_shows_its_plan_and_what_it_has_sent_against_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plans = "[[plans]]\nname = \"free\"\nmonthly_emails = 3000\ndaily_emails = 100\n";
    let running = util::start_api(dir.path(), plans).await;
    let addr = running.http_addr;
    add_users(addr, &[("owner@example.com", "owner")], PASSWORD).await;
    let mut owner = signed_in(addr, "owner@example.com", PASSWORD).await;
    let page = owner.get(addr, "/dashboard/team").await.text();
    assert!(
        page.contains("This team has no plan: its sending is unlimited."),
        "{page}"
    );
    assert!(
        page.contains("<td>Today (UTC)</td><td>0</td><td>unlimited</td>"),
        "{page}"
    );

    let teams = call(addr, Method::GET, "/teams", Some(OPERATOR_KEY), None).await.json();
    let team = teams["data"][0]["id"].as_str().expect("the operator's team").to_owned();
    let planned = call(
        addr,
        Method::PATCH,
        &format!("/teams/{team}"),
        Some(OPERATOR_KEY),
        Some(json!({ "plan": "free" })),
    )
    .await;
    assert_eq!(planned.status, StatusCode::OK, "{}", planned.text());
    util::verified_domain(addr, "shop.test").await;
    let sent = call(
        addr,
        Method::POST,
        "/emails",
        Some(OPERATOR_KEY),
        Some(json!({ "from": "shop@shop.test", "to": ["a@example.net", "b@example.net"], "subject": "Hi", "text": "Hello" })),
    )
    .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text());
    let page = owner.get(addr, "/dashboard/team").await.text();
    assert!(page.contains("on the <strong>free</strong> plan"), "{page}");
    assert!(page.contains("<td>Today (UTC)</td><td>2</td><td>100</td>"), "{page}");
    assert!(
        page.contains("<td>This month (UTC)</td><td>2</td><td>3000</td>"),
        "{page}"
    );
}

/// A 160×48 PNG of orange and blue squares.
const CHECKS_PNG: &[u8] = include_bytes!("util/images/checks.png");

/// `POST /dashboard/images` as the editor sends it: the body is the image.
async fn upload_image(
    addr: std::net::SocketAddr,
    browser: &Browser,
    csrf: &str,
    name: &str,
    bytes: &[u8],
) -> HttpResponse {
    let cookie = browser.cookie_header();
    let mut headers = vec![
        ("cookie", cookie.as_str()),
        ("content-type", "image/png"),
        ("x-file-name", name),
    ];
    if !csrf.is_empty() {
        headers.push(("x-csrf-token", csrf));
    }
    call_with_headers(
        addr,
        Method::POST,
        "/dashboard/images",
        None,
        &headers,
        Bytes::copy_from_slice(bytes),
    )
    .await
}

/// A new template's editor page as `browser` gets it (it lists the team's images).
async fn template_editor(addr: std::net::SocketAddr, browser: &mut Browser) -> HttpResponse {
    let created = call(
        addr,
        Method::POST,
        "/templates",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "With a logo", "html": "<p>Hi</p>" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let template = created.json()["id"].as_str().expect("id").to_owned();
    browser
        .get(addr, &format!("/dashboard/templates/{template}/design"))
        .await
}

/// herald with Mia, an admin, and Max, a member: Mia signed in, with her form's token.
async fn image_editors(dir: &std::path::Path) -> (herald::server::Running, Browser, String) {
    let running = util::start_api(dir, "").await;
    let addr = running.http_addr;
    add_users(
        addr,
        &[("mia@example.com", "admin"), ("max@example.com", "member")],
        PASSWORD,
    )
    .await;
    let (mut mia, _) = sign_in(addr, "mia@example.com", PASSWORD).await;
    let token = csrf(&mia.get(addr, "/dashboard/templates").await);
    (running, mia, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_uploaded_in_the_editor_are_served_to_anyone_at_an_unguessable_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (running, mut mia, token) = image_editors(dir.path()).await;
    let addr = running.http_addr;
    // A member may not change designs, nor add their images.
    let (mut max, _) = sign_in(addr, "max@example.com", PASSWORD).await;
    let max_token = csrf(&max.get(addr, "/dashboard/templates").await);
    let refused = upload_image(addr, &max, &max_token, "logo.png", CHECKS_PNG).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.json()["message"]
            .as_str()
            .expect("message")
            .contains("ask an owner or admin")
    );

    // An admin uploads; the answer is what the asset manager adds.
    let uploaded = upload_image(addr, &mia, &token, "logo%20one.png", CHECKS_PNG).await;
    assert_eq!(uploaded.status, StatusCode::CREATED, "{}", uploaded.text());
    let asset = uploaded.json()["data"][0].clone();
    assert_eq!(asset["name"], "logo one.png");
    assert_eq!(asset["type"], "image");
    let src = asset["src"].as_str().expect("src").to_owned();
    let public_url = running.state.config().http.public_url.clone();
    let path = src.strip_prefix(&public_url).expect("under public_url").to_owned();
    assert!(path.starts_with("/images/") && path.ends_with(".png"), "{src}");

    // Anyone gets it, without a session or a key, cacheable for good.
    let served = call_with_headers(addr, Method::GET, &path, None, &[], Bytes::new()).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.body.as_ref(), CHECKS_PNG);
    assert_eq!(served.headers["content-type"], "image/png");
    assert_eq!(served.headers["x-content-type-options"], "nosniff");
    assert!(
        served.headers["cache-control"]
            .to_str()
            .expect("ascii")
            .contains("immutable")
    );
    let head = call_with_headers(addr, Method::HEAD, &path, None, &[], Bytes::new()).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    // Another extension, or one character changed, names nothing.
    let as_gif = path.replace(".png", ".gif");
    assert_eq!(
        call_with_headers(addr, Method::GET, &as_gif, None, &[], Bytes::new())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let token_at = "/images/".len();
    let flipped = if &path[token_at..=token_at] == "A" { "B" } else { "A" };
    let altered = format!("{}{flipped}{}", &path[..token_at], &path[token_at + 1..]);
    assert_eq!(
        call_with_headers(addr, Method::GET, &altered, None, &[], Bytes::new())
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // The editor lists the team's images.
    let editor = template_editor(addr, &mut mia).await;
    assert_eq!(editor.status, StatusCode::OK);
    assert!(editor.text().contains(&path), "the asset manager lists the upload");
    let policy = editor.headers["content-security-policy"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        policy.contains(&format!("img-src 'self' data: https: {public_url}")),
        "{policy}"
    );

    // What is refused, and why.
    let svg = upload_image(
        addr,
        &mia,
        &token,
        "x.svg",
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .await;
    assert_eq!(svg.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        svg.json()["message"]
            .as_str()
            .expect("message")
            .contains("PNG, JPEG, GIF and WebP")
    );
    let empty = upload_image(addr, &mia, &token, "x.png", b"").await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Refused on its declared length, before a byte of it is read: the client is told
    // while it would still be sending (a client that sends it all meets a closed socket).
    let declared = format!(
        "POST /dashboard/images HTTP/1.1\r\nHost: herald\r\nCookie: {}\r\nX-CSRF-Token: {token}\r\nContent-Type: image/png\r\nContent-Length: {}\r\n\r\n",
        mia.cookie_header(),
        herald::images::IMAGE_BYTES_MAX + 1
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tokio::io::AsyncWriteExt::write_all(&mut stream, declared.as_bytes())
        .await
        .expect("the headers");
    let mut answer = vec![0; 512];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::io::AsyncReadExt::read(&mut stream, &mut answer),
    )
    .await
    .expect("an answer before the body")
    .expect("read");
    let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let forged = upload_image(addr, &mia, "", "x.png", CHECKS_PNG).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "no token, no upload");
    let stranger = upload_image(addr, &Browser::default(), &token, "x.png", CHECKS_PNG).await;
    assert_eq!(stranger.status, StatusCode::SEE_OTHER, "no session, no upload");

    // Another team has none of them.
    let caller = another_team(addr).await;
    assert!(
        herald::images::list(&running.state, &caller, 10)
            .expect("list")
            .is_empty()
    );
}

/// A new team, as a caller with full access to it.
async fn another_team(addr: std::net::SocketAddr) -> herald::accounts::Caller {
    let other = call(
        addr,
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Other" })),
    )
    .await
    .json();
    let team_id: herald_queue::Id = other["id"].as_str().expect("the team's id").parse().expect("an id");
    herald::accounts::Caller {
        team_id,
        key_id: team_id,
        permission: herald::accounts::Permission::FullAccess,
        domain_id: None,
        operator: false,
    }
}

/// `POST /dashboard/images/{token}/delete` as the editor sends it.
async fn delete_image(addr: std::net::SocketAddr, browser: &Browser, csrf: &str, token: &str) -> HttpResponse {
    let cookie = browser.cookie_header();
    let mut headers = vec![("cookie", cookie.as_str())];
    if !csrf.is_empty() {
        headers.push(("x-csrf-token", csrf));
    }
    let path = format!("/dashboard/images/{token}/delete");
    call_with_headers(addr, Method::POST, &path, None, &headers, Bytes::new()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_removed_in_the_editor_is_served_no_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (running, mut mia, csrf_token) = image_editors(dir.path()).await;
    let addr = running.http_addr;
    let uploaded = upload_image(addr, &mia, &csrf_token, "logo.png", CHECKS_PNG).await;
    assert_eq!(uploaded.status, StatusCode::CREATED, "{}", uploaded.text());
    let kept = upload_image(addr, &mia, &csrf_token, "kept.png", CHECKS_PNG).await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.text());
    let public_url = running.state.config().http.public_url.clone();
    let path_of = |answer: &HttpResponse| {
        let src = answer.json()["data"][0]["src"].as_str().expect("src").to_owned();
        src.strip_prefix(&public_url).expect("under public_url").to_owned()
    };
    let (path, kept_path) = (path_of(&uploaded), path_of(&kept));
    let token = path["/images/".len()..].trim_end_matches(".png").to_owned();
    let served = |path: String| async move {
        call_with_headers(addr, Method::GET, &path, None, &[], Bytes::new())
            .await
            .status
    };
    assert_eq!(served(path.clone()).await, StatusCode::OK);

    // Not a member, not without the form's token, not another team.
    let (mut max, _) = sign_in(addr, "max@example.com", PASSWORD).await;
    let max_token = csrf(&max.get(addr, "/dashboard/templates").await);
    let refused = delete_image(addr, &max, &max_token, &token).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.json()["message"]
            .as_str()
            .expect("message")
            .contains("ask an owner or admin")
    );
    assert_eq!(
        delete_image(addr, &mia, "", &token).await.status,
        StatusCode::FORBIDDEN,
        "no token, no removal"
    );
    let stranger = another_team(addr).await;
    assert!(!herald::images::delete(&running.state, &stranger, &token).expect("delete"));
    assert_eq!(
        served(path.clone()).await,
        StatusCode::OK,
        "still served after every refusal"
    );

    // The admin removes it: no longer served nor listed; the other image stays.
    let removed = delete_image(addr, &mia, &csrf_token, &token).await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text());
    assert_eq!(removed.json()["deleted"], true);
    assert_eq!(served(path.clone()).await, StatusCode::NOT_FOUND);
    assert_eq!(served(kept_path.clone()).await, StatusCode::OK);
    let again = delete_image(addr, &mia, &csrf_token, &token).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert!(
        again.json()["message"]
            .as_str()
            .expect("message")
            .contains("no such image")
    );
    assert_eq!(
        delete_image(addr, &mia, &csrf_token, "not-a-token").await.status,
        StatusCode::NOT_FOUND
    );
    let editor = template_editor(addr, &mut mia).await.text();
    assert!(!editor.contains(&path), "the asset manager no longer lists it");
    assert!(editor.contains(&kept_path));
}

/// A page whose read fails answers `503` and says so, instead of an empty list that
/// would tell the person they have no segments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_read_fails_says_so_instead_of_showing_an_empty_list() {
    use herald_queue::{Batch, Table};

    let dir = tempfile::tempdir().expect("tempdir");
    let running = util::start_api(dir.path(), "").await;
    let addr = running.http_addr;
    let added = call(
        addr,
        Method::POST,
        "/users",
        Some(OPERATOR_KEY),
        Some(json!({ "email": "ann@example.com", "role": "admin", "password": PASSWORD })),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text());
    let team: herald_queue::Id = added.json()["team_id"]
        .as_str()
        .expect("a team")
        .parse()
        .expect("an id");
    let mut browser = signed_in(addr, "ann@example.com", PASSWORD).await;
    let page = browser.get(addr, "/dashboard/audience").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    if util::on_postgres() {
        // The segments' table gone from under the server: they cannot be read.
        util::records_sql(dir.path(), "ALTER TABLE segments RENAME TO segments_away");
    } else {
        // A segment record no decoder takes: the team's segments cannot be read.
        let store = running.state.node().store();
        let mut batch = Batch::new();
        let key = [team.as_bytes().as_slice(), store.next_id().as_bytes()].concat();
        batch.put_raw(Table::SEGMENTS, key, vec![0xff, 0x00, 0x13]);
        store.commit(batch).await.expect("commit");
    }
    let page = browser.get(addr, "/dashboard/audience").await;
    assert_eq!(page.status, StatusCode::SERVICE_UNAVAILABLE, "{}", page.text());
    assert!(page.text().contains("Cannot read"), "{}", page.text());
}
