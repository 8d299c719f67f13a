//! A browser's cookie jar over the test HTTP client, for dashboard tests.

use std::net::SocketAddr;

use bytes::Bytes;
use hyper::Method;

use super::{HttpResponse, OPERATOR_KEY, call, call_with_headers};

/// A browser's cookie jar, just enough for the dashboard.
#[derive(Default)]
pub struct Browser {
    /// Cookies kept, by name.
    pub cookies: Vec<(String, String)>,
}

impl Browser {
    /// The `Cookie` header to send.
    pub fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Keeps the cookies a response sets.
    pub fn keep(&mut self, response: &HttpResponse) {
        for value in response.headers.get_all("set-cookie") {
            let text = value.to_str().expect("cookie");
            let (pair, attributes) = text.split_once(';').unwrap_or((text, ""));
            let (name, value) = pair.split_once('=').expect("name=value");
            self.cookies.retain(|(k, _)| k != name);
            if !attributes.contains("Max-Age=0") {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
    }

    /// `GET path` with the cookies; keeps what it sets.
    pub async fn get(&mut self, addr: SocketAddr, path: &str) -> HttpResponse {
        let cookie = self.cookie_header();
        let response = call_with_headers(addr, Method::GET, path, None, &[("cookie", &cookie)], Bytes::new()).await;
        self.keep(&response);
        response
    }

    /// `POST path` with a form; keeps what it sets.
    pub async fn post(&mut self, addr: SocketAddr, path: &str, form: &[(&str, &str)]) -> HttpResponse {
        let cookie = self.cookie_header();
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = call_with_headers(
            addr,
            Method::POST,
            path,
            None,
            &[
                ("cookie", &cookie),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            Bytes::from(body),
        )
        .await;
        self.keep(&response);
        response
    }
}

/// The value of the hidden `csrf` field of a page.
pub fn csrf(page: &HttpResponse) -> String {
    let text = page.text();
    let at = text.find("name=\"csrf\" value=\"").expect("a csrf field") + "name=\"csrf\" value=\"".len();
    text[at..].split('"').next().expect("value").to_owned()
}

/// Signs `email` in with `password` through the login form; the browser and the form's
/// answer.
pub async fn sign_in(addr: SocketAddr, email: &str, password: &str) -> (Browser, HttpResponse) {
    let mut browser = Browser::default();
    let page = browser.get(addr, "/dashboard/login").await;
    assert_eq!(page.status, hyper::StatusCode::OK);
    let token = csrf(&page);
    let response = browser
        .post(
            addr,
            "/dashboard/login",
            &[("csrf", &token), ("email", email), ("password", password)],
        )
        .await;
    (browser, response)
}

/// Adds dashboard users with the operator's key: `(email, role)` each, all with `password`.
pub async fn add_users(addr: SocketAddr, users: &[(&str, &str)], password: &str) {
    for (email, role) in users {
        let added = call(
            addr,
            Method::POST,
            "/users",
            Some(OPERATOR_KEY),
            Some(serde_json::json!({ "email": email, "role": role, "password": password })),
        )
        .await;
        assert_eq!(added.status, hyper::StatusCode::CREATED, "{}", added.text());
    }
}

/// A browser signed in as `email` with `password` (the form answered with its redirect).
pub async fn signed_in(addr: SocketAddr, email: &str, password: &str) -> Browser {
    let (browser, done) = sign_in(addr, email, password).await;
    assert_eq!(done.status, hyper::StatusCode::SEE_OTHER, "{}", done.text());
    browser
}

/// A segment named `name` with the operator's team's contacts `(email, first name)`,
/// made through the API; its id.
pub async fn segment_with(addr: SocketAddr, name: &str, contacts: &[(&str, &str)]) -> String {
    let segment = call(
        addr,
        Method::POST,
        "/segments",
        Some(OPERATOR_KEY),
        Some(serde_json::json!({ "name": name })),
    )
    .await
    .json()["id"]
        .as_str()
        .expect("segment")
        .to_owned();
    for (email, first_name) in contacts {
        let made = call(
            addr,
            Method::POST,
            "/contacts",
            Some(OPERATOR_KEY),
            Some(serde_json::json!({ "email": email, "first_name": first_name, "segments": [{ "id": segment }] })),
        )
        .await;
        assert_eq!(made.status, hyper::StatusCode::CREATED, "{}", made.text());
    }
    segment
}
