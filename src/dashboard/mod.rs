//! The dashboard, under `/dashboard` on the HTTP listener: server-rendered pages
//! ([`pages`], askama) over the service layer, behind a sign-in by email and password
//! with an optional second factor (TOTP or a recovery code).
//!
//! Sessions are cookies (`herald_session`: `HttpOnly`, `SameSite=Lax`, `Secure` when
//! `[http] public_url` is https) holding a random token kept only as its digest
//! ([`crate::users::sessions`]). Every state-changing request carries a CSRF token: the
//! session's, or before sign-in a double-submit cookie (`herald_csrf`). API keys never
//! work here, and session cookies never work on the API. Sign-in and second-factor
//! failures are throttled per account and per address ([`guard`]), with one answer
//! whatever was wrong. Pages carry a strict Content-Security-Policy (same-origin
//! stylesheets, no scripts inline or otherwise yet, images from `data:` for the QR code),
//! `frame-ancestors 'none'`, `nosniff` and `Referrer-Policy: same-origin`.

mod audience;
mod broadcasts;
mod charts;
mod design;
mod domains;
mod emails;
pub mod guard;
pub mod identity;
mod keys;
mod metrics_page;
mod oauth;
pub mod pages;
mod preview;
mod team;
mod templates;
mod views;
mod webhooks;

use std::net::IpAddr;
use std::sync::Arc;

use askama::Template;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, LOCATION, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};

use crate::accounts::{Caller, Permission};
use crate::http::{ApiRequest, Body};
use crate::server::AppState;
use crate::users::account::{Enrolment, PasswordChange, SecondFactor};
use crate::users::sessions::{self, Session};
use crate::users::{self, User, totp};

/// The session cookie.
const SESSION_COOKIE: &str = "herald_session";

/// The sign-in form's double-submit CSRF cookie.
const CSRF_COOKIE: &str = "herald_csrf";

/// Largest form accepted.
const FORM_MAX: usize = 64 * 1024;

/// Largest form a design save may post: the MJML, form-encoded (up to three bytes a byte).
const DESIGN_FORM_MAX: usize = 3 * crate::design::MJML_MAX + 1024;

/// The Content-Security-Policy of every page.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The one answer to a failed sign-in, whatever was wrong.
const SIGN_IN_FAILED: &str = "The email or password is not right, or this account is locked for a while. Try again.";

/// The dashboard's stylesheet and scripts, embedded (read from disk in debug builds).
#[derive(rust_embed::RustEmbed)]
#[folder = "assets/dashboard"]
struct Assets;

/// The token of `POST /dashboard/images/{token}/delete`.
fn image_to_delete(path: &str) -> Option<&str> {
    path.strip_prefix("/dashboard/images/")?.strip_suffix("/delete")
}

/// Answers one request under `/dashboard`.
pub async fn handle(state: &Arc<AppState>, request: Request<Incoming>, peer: IpAddr) -> Response<Body> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    if let Some(file) = path.strip_prefix("/dashboard/assets/") {
        return asset(file).map(BodyExt::boxed_unsync);
    }
    let import = method == Method::POST && path == "/dashboard/contacts/import";
    let image = method == Method::POST && path == "/dashboard/images";
    // Only a signed-in owner or admin's browser gets to stream a file to disk, and only a
    // signed-in user's to send an image's megabytes (a member is then told why not).
    let allowed = match (import, image) {
        (true, _) => session_role(state, &request)
            .await
            .is_some_and(|role| role >= users::Role::Admin),
        (_, true) => session_role(state, &request).await.is_some(),
        _ => true,
    };
    if !allowed {
        return redirect("/dashboard/login").map(BodyExt::boxed_unsync);
    }
    let read = if import {
        crate::http::upload::read_import(state, request).await
    } else {
        let max = if method == Method::POST && path.ends_with("/design") {
            DESIGN_FORM_MAX
        } else if image {
            crate::images::IMAGE_BYTES_MAX
        } else {
            FORM_MAX
        };
        ApiRequest::read(request, max).await
    };
    let request = match read {
        Ok(request) => request,
        Err(error) => return error.into_response().map(BodyExt::boxed_unsync),
    };
    let state = Arc::clone(state);
    let answer = tokio::task::spawn_blocking(move || {
        let ctx = Ctx {
            state: &state,
            request: &request,
            peer,
            https: state.config().http.public_url.starts_with("https://"),
        };
        if import {
            return match signed_in(&ctx) {
                Ok(signed) => {
                    let given = request.upload.as_ref().and_then(|u| u.field("csrf"));
                    if csrf_ok(given, &signed.session.csrf) {
                        audience::start_import(&ctx, &signed)
                    } else {
                        text(StatusCode::FORBIDDEN, "The form expired; reload the page and try again")
                    }
                }
                Err(to) => redirect(to),
            }
            .map(BodyExt::boxed_unsync);
        }
        if method == Method::GET && path == "/dashboard/emails/export.csv" {
            // Streamed: the export runs on past this task.
            return match signed_in(&ctx) {
                Ok(signed) => emails::export(Arc::clone(&state), &signed, &ctx),
                Err(to) => redirect(to).map(BodyExt::boxed_unsync),
            };
        }
        route(&ctx, &method, &path).map(BodyExt::boxed_unsync)
    })
    .await;
    let mut response = answer.unwrap_or_else(|error| {
        tracing::error!(%error, "a dashboard task failed");
        text(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong").map(BodyExt::boxed_unsync)
    });
    secure(response.headers_mut());
    response
}

/// The role of the request's session, past the second factor: checked before an upload
/// is read, as the API checks its key first.
async fn session_role(state: &Arc<AppState>, request: &Request<Incoming>) -> Option<users::Role> {
    let token = request
        .headers()
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == SESSION_COOKIE).then(|| value.to_owned())
        });
    let token = token?;
    let state = Arc::clone(state);
    tokio::task::spawn_blocking(move || {
        sessions::find(&state, &token)
            .ok()
            .flatten()
            .filter(|(session, _)| session.mfa_passed)
            .map(|(_, user)| user.role)
    })
    .await
    .ok()
    .flatten()
}

/// The signed-in user past the second factor, or the page to send the browser to.
fn signed_in(ctx: &Ctx<'_>) -> Result<Signed, &'static str> {
    let Some((token, session, user)) = ctx.session() else {
        return Err("/dashboard/login");
    };
    if !session.mfa_passed {
        return Err("/dashboard/login/mfa");
    }
    Ok(Signed { token, session, user })
}

/// What a page handler has.
struct Ctx<'a> {
    state: &'a AppState,
    request: &'a ApiRequest,
    peer: IpAddr,
    https: bool,
}

impl Ctx<'_> {
    fn cookie(&self, name: &str) -> Option<String> {
        self.request
            .headers
            .get_all(hyper::header::COOKIE)
            .iter()
            .find_map(|value| {
                value.to_str().ok()?.split(';').find_map(|pair| {
                    let (key, value) = pair.trim().split_once('=')?;
                    (key == name).then(|| value.to_owned())
                })
            })
    }

    fn form(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(&self.request.body)
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }

    fn set_cookie(&self, response: &mut Response<Full<Bytes>>, name: &str, value: &str, max_age: Option<u64>) {
        let secure = if self.https { "; Secure" } else { "" };
        let age = max_age.map_or_else(String::new, |s| format!("; Max-Age={s}"));
        let cookie = format!("{name}={value}; Path=/dashboard; HttpOnly; SameSite=Lax{secure}{age}");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }

    /// The signed-in session and user, if any.
    fn session(&self) -> Option<(String, Session, User)> {
        let token = self.cookie(SESSION_COOKIE)?;
        let (session, user) = sessions::find(self.state, &token).ok()??;
        Some((token, session, user))
    }
}

/// A signed-in user past the second factor.
struct Signed {
    token: String,
    session: Session,
    user: User,
}

impl Signed {
    /// The frame of a page, with `nav` its current page.
    fn chrome<'a>(&'a self, nav: &'a str) -> pages::Chrome<'a> {
        pages::Chrome {
            nav,
            csrf: &self.session.csrf,
            email: &self.user.email,
            role: self.user.role.name(),
        }
    }

    /// The caller the service layer sees: the user's team, with full access (the user's
    /// role is checked by each page).
    fn caller(&self) -> Caller {
        Caller {
            team_id: self.user.team_id,
            key_id: self.user.id,
            permission: Permission::FullAccess,
            domain_id: None,
            operator: false,
        }
    }
}

fn route(ctx: &Ctx<'_>, method: &Method, path: &str) -> Response<Full<Bytes>> {
    match (method, path) {
        (&Method::GET, "/dashboard/login") => login_page(ctx, None, ""),
        (&Method::POST, "/dashboard/login") => login(ctx),
        (&Method::GET, "/dashboard/login/mfa") => mfa_page(ctx, None),
        (&Method::POST, "/dashboard/login/mfa") => mfa(ctx),
        (&Method::POST, "/dashboard/logout") => logout(ctx),
        (&Method::GET, "/dashboard/auth/google") => identity::start(ctx, identity::Provider::Google),
        (&Method::GET, "/dashboard/auth/github") => identity::start(ctx, identity::Provider::Github),
        (&Method::GET, "/dashboard/auth/google/callback") => identity::callback(ctx, identity::Provider::Google),
        (&Method::GET, "/dashboard/auth/github/callback") => identity::callback(ctx, identity::Provider::Github),
        (&Method::GET | &Method::POST, path) if path.starts_with("/dashboard/invite/") => {
            invite(ctx, method, &path["/dashboard/invite/".len()..])
        }
        _ => {
            let signed = match signed_in(ctx) {
                Ok(signed) => signed,
                Err(to) => return redirect(to),
            };
            // Forms carry the token in a field; the editor's image upload, whose body is
            // the image (not parsed as a form), in a header.
            let given = ctx
                .request
                .headers
                .get("x-csrf-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .or_else(|| ctx.form("csrf"));
            if method == Method::POST && !csrf_ok(given.as_deref(), &signed.session.csrf) {
                return text(StatusCode::FORBIDDEN, "The form expired; reload the page and try again");
            }
            match (method, path) {
                (&Method::GET, "/dashboard" | "/dashboard/") => redirect("/dashboard/emails"),
                (&Method::GET, "/dashboard/emails") => emails::list(ctx, &signed),
                (&Method::POST, "/dashboard/images") => design::upload_image(ctx, &signed),
                (&Method::POST, path) if image_to_delete(path).is_some() => {
                    design::delete_image(ctx, &signed, image_to_delete(path).unwrap_or_default())
                }
                (&Method::GET, "/dashboard/logs") => views::logs(ctx, &signed),
                (&Method::GET, "/dashboard/metrics") => metrics_page::page(ctx, &signed),
                (&Method::GET, path) if path.starts_with("/dashboard/emails/") && path.ends_with("/insights") => {
                    let id = &path["/dashboard/emails/".len()..path.len() - "/insights".len()];
                    views::insights(ctx, &signed, id)
                }
                (&Method::GET, path) if path.starts_with("/dashboard/emails/") && path.ends_with("/preview") => {
                    let id = &path["/dashboard/emails/".len()..path.len() - "/preview".len()];
                    views::preview(ctx, &signed, id)
                }
                (&Method::GET, path) if path.starts_with("/dashboard/emails/") => {
                    views::email(ctx, &signed, &path["/dashboard/emails/".len()..])
                }
                (&Method::GET, path) if path.starts_with("/dashboard/logs/") => {
                    views::log(ctx, &signed, &path["/dashboard/logs/".len()..])
                }
                (&Method::GET, "/dashboard/profile") => profile(ctx, &signed, None, None, Vec::new()),
                (&Method::POST, "/dashboard/profile/password") => change_password(ctx, &signed),
                (&Method::POST, "/dashboard/profile/totp") => enrol(ctx, &signed),
                (_, "/dashboard/team") => team::team(ctx, &signed, method),
                (_, path) if path == "/dashboard/contacts" || path.starts_with("/dashboard/contacts/") => {
                    audience::contacts_route(ctx, &signed, method, &path["/dashboard/contacts".len()..])
                }
                (_, path) if path == "/dashboard/broadcasts" || path.starts_with("/dashboard/broadcasts/") => {
                    broadcasts::route(ctx, &signed, method, &path["/dashboard/broadcasts".len()..])
                }
                (_, path) if path == "/dashboard/templates" || path.starts_with("/dashboard/templates/") => {
                    templates::route(ctx, &signed, method, &path["/dashboard/templates".len()..])
                }
                (_, path) if path == "/dashboard/audience" || path.starts_with("/dashboard/audience/") => {
                    audience::settings_route(ctx, &signed, method, &path["/dashboard/audience".len()..])
                }
                (_, path) if path == "/dashboard/webhooks" || path.starts_with("/dashboard/webhooks/") => {
                    webhooks::route(ctx, &signed, method, &path["/dashboard/webhooks".len()..])
                }
                (_, path) if path == "/dashboard/suppressions" || path.starts_with("/dashboard/suppressions/") => {
                    team::suppressions(ctx, &signed, method, &path["/dashboard/suppressions".len()..])
                }
                (_, path) if path == "/dashboard/api-keys" || path.starts_with("/dashboard/api-keys/") => {
                    keys::route(ctx, &signed, method, &path["/dashboard/api-keys".len()..])
                }
                (_, path) if path == "/dashboard/domains" || path.starts_with("/dashboard/domains/") => {
                    domains::route(ctx, &signed, method, &path["/dashboard/domains".len()..])
                }
                _ => text(StatusCode::NOT_FOUND, "No such page"),
            }
        }
    }
}

/// Whether a form's CSRF token is the expected one (compared in constant time).
fn csrf_ok(given: Option<&str>, expected: &str) -> bool {
    given.is_some_and(|given| {
        !expected.is_empty()
            && aws_lc_rs::constant_time::verify_slices_are_equal(given.as_bytes(), expected.as_bytes()).is_ok()
    })
}

fn login_page(ctx: &Ctx<'_>, error: Option<&str>, email: &str) -> Response<Full<Bytes>> {
    if error.is_none() && ctx.session().is_some_and(|(_, s, _)| s.mfa_passed) {
        return redirect("/dashboard/emails");
    }
    let csrf = ctx
        .cookie(CSRF_COOKIE)
        .filter(|c| c.len() == 43)
        .unwrap_or_else(sessions::token);
    let dashboard = &ctx.state.config().dashboard;
    let page = pages::Login {
        csrf: &csrf,
        email,
        error,
        google: dashboard.google.is_some(),
        github: dashboard.github.is_some(),
    };
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    let mut response = html(status, page.render());
    ctx.set_cookie(&mut response, CSRF_COOKIE, &csrf, None);
    response
}

fn login(ctx: &Ctx<'_>) -> Response<Full<Bytes>> {
    let email = ctx.form("email").unwrap_or_default();
    let password = ctx.form("password").unwrap_or_default();
    let cookie = ctx.cookie(CSRF_COOKIE).unwrap_or_default();
    if !csrf_ok(ctx.form("csrf").as_deref(), &cookie) {
        return login_page(ctx, Some("The form expired; try again."), &email);
    }
    let keys = [format!("ip:{}", ctx.peer), format!("user:{}", users::normalize(&email))];
    let guard = &ctx.state.dashboard_guard;
    let locked = guard.locked(&keys);
    // The password is checked even when locked or unknown: the time taken says nothing.
    let signed_in = match users::account::sign_in(ctx.state, &email, &password) {
        Ok(signed_in) => signed_in,
        Err(error) => {
            tracing::error!(%error, "cannot sign in to the dashboard");
            return text(StatusCode::SERVICE_UNAVAILABLE, "Cannot sign in now; try again shortly");
        }
    };
    let Some(users::account::SignedIn { user, token }) = signed_in.filter(|_| !locked) else {
        guard.fail(&keys);
        metrics::counter!("herald_dashboard_sign_ins_total", "outcome" => "failed").increment(1);
        return login_page(ctx, Some(SIGN_IN_FAILED), &email);
    };
    guard.succeed(&keys[1]);
    metrics::counter!("herald_dashboard_sign_ins_total", "outcome" => "password").increment(1);
    let next = if user.totp_secret.is_some() {
        "/dashboard/login/mfa"
    } else {
        "/dashboard/emails"
    };
    let mut response = redirect(next);
    ctx.set_cookie(
        &mut response,
        SESSION_COOKIE,
        &token,
        Some(sessions::ABSOLUTE.as_secs()),
    );
    response
}

fn mfa_page(ctx: &Ctx<'_>, error: Option<&str>) -> Response<Full<Bytes>> {
    let Some((_, session, _)) = ctx.session() else {
        return redirect("/dashboard/login");
    };
    if session.mfa_passed {
        return redirect("/dashboard/emails");
    }
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    html(
        status,
        pages::Mfa {
            csrf: &session.csrf,
            error,
        }
        .render(),
    )
}

fn mfa(ctx: &Ctx<'_>) -> Response<Full<Bytes>> {
    let Some((token, session, user)) = ctx.session() else {
        return redirect("/dashboard/login");
    };
    if session.mfa_passed {
        return redirect("/dashboard/emails");
    }
    if !csrf_ok(ctx.form("csrf").as_deref(), &session.csrf) {
        return mfa_page(ctx, Some("The form expired; try again."));
    }
    let keys = [
        format!("ip:{}", ctx.peer),
        format!("user:{}", users::normalize(&user.email)),
    ];
    let guard = &ctx.state.dashboard_guard;
    let code = ctx.form("code").unwrap_or_default();
    let wrong = "That code is not right, or this account is locked for a while.";
    if guard.locked(&keys) {
        guard.fail(&keys);
        return mfa_page(ctx, Some(wrong));
    }
    match users::account::pass_second_factor(ctx.state, &token, &code) {
        Ok(SecondFactor::Passed | SecondFactor::AlreadyPassed) => {
            guard.succeed(&keys[1]);
            redirect("/dashboard/emails")
        }
        Ok(SecondFactor::Wrong) => {
            guard.fail(&keys);
            mfa_page(ctx, Some(wrong))
        }
        Ok(SecondFactor::NoSession) => redirect("/dashboard/login"),
        Err(error) => {
            tracing::error!(%error, "cannot check a second factor");
            text(StatusCode::SERVICE_UNAVAILABLE, "Cannot sign in now; try again shortly")
        }
    }
}

fn logout(ctx: &Ctx<'_>) -> Response<Full<Bytes>> {
    if let Some((token, session, _)) = ctx.session()
        && csrf_ok(ctx.form("csrf").as_deref(), &session.csrf)
    {
        let _ = sessions::end(ctx.state, &token);
    }
    let mut response = redirect("/dashboard/login");
    ctx.set_cookie(&mut response, SESSION_COOKIE, "", Some(0));
    response
}

fn invite(ctx: &Ctx<'_>, method: &Method, token: &str) -> Response<Full<Bytes>> {
    let invalid = || {
        text(
            StatusCode::NOT_FOUND,
            "This invitation link is not valid: it was used, or it expired",
        )
    };
    let user = match users::account::invited(ctx.state, token) {
        Ok(Some(user)) => user,
        Ok(None) => return invalid(),
        Err(error) => {
            tracing::error!(%error, "cannot read an invitation");
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "Cannot read the invitation now; try again shortly",
            );
        }
    };
    let csrf = ctx
        .cookie(CSRF_COOKIE)
        .filter(|c| c.len() == 43)
        .unwrap_or_else(sessions::token);
    let page = |error: Option<&str>| {
        let status = answer_status(error.is_some());
        let page = pages::Invite {
            csrf: &csrf,
            email: &user.email,
            min: users::PASSWORD_MIN,
            error,
        };
        let mut response = html(status, page.render());
        ctx.set_cookie(&mut response, CSRF_COOKIE, &csrf, None);
        response
    };
    if method == Method::GET {
        return page(None);
    }
    if !csrf_ok(
        ctx.form("csrf").as_deref(),
        &ctx.cookie(CSRF_COOKIE).unwrap_or_default(),
    ) {
        return page(Some("The form expired; try again."));
    }
    let password = ctx.form("password").unwrap_or_default();
    match users::account::accept_invitation(ctx.state, token, &password) {
        Ok(Some(_)) => redirect("/dashboard/login"),
        Ok(None) => invalid(),
        Err(error @ crate::services::Error::Invalid { .. }) => page(Some(&error.to_string())),
        Err(error) => {
            tracing::error!(%error, "cannot accept an invitation");
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "Cannot set the password now; try again shortly",
            )
        }
    }
}

fn profile(
    ctx: &Ctx<'_>,
    signed: &Signed,
    notice: Option<&str>,
    error: Option<&str>,
    recovery: Vec<String>,
) -> Response<Full<Bytes>> {
    let mfa = signed.user.totp_secret.is_some();
    // A secret to enrol is made once per session and kept there until a code confirms it.
    let pending = match users::account::pending_totp(ctx.state, &signed.token, &signed.session, &signed.user) {
        Ok(pending) => pending,
        Err(error) => {
            tracing::error!(%error, "cannot keep a TOTP secret to enrol");
            return text(StatusCode::SERVICE_UNAVAILABLE, "Cannot show the profile now");
        }
    };
    let qr = pending
        .as_deref()
        .map(|s| totp::qr_data_url(&totp::url(s, &signed.user.email, "herald")))
        .unwrap_or_default();
    let page = pages::Profile {
        chrome: signed.chrome("profile"),
        min: users::PASSWORD_MIN,
        mfa,
        secret: pending.as_deref().map(totp::base32),
        qr,
        recovery,
        notice,
        error,
    };
    let status = answer_status(error.is_some());
    html(status, page.render())
}

fn change_password(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let keys = [
        format!("ip:{}", ctx.peer),
        format!("user:{}", users::normalize(&signed.user.email)),
    ];
    let guard = &ctx.state.dashboard_guard;
    let current = ctx.form("current").unwrap_or_default();
    let new = ctx.form("password").unwrap_or_default();
    let wrong = |ctx: &Ctx<'_>, signed: &Signed| {
        profile(
            ctx,
            signed,
            None,
            Some("The current password is not right."),
            Vec::new(),
        )
    };
    if guard.locked(&keys) {
        guard.fail(&keys);
        return wrong(ctx, signed);
    }
    let user = match users::account::change_password(ctx.state, &signed.user, &current, &new) {
        Ok(PasswordChange::Changed(user)) => user,
        Ok(PasswordChange::WrongPassword) => {
            guard.fail(&keys);
            return wrong(ctx, signed);
        }
        Err(error @ crate::services::Error::Invalid { .. }) => {
            return profile(ctx, signed, None, Some(&error.to_string()), Vec::new());
        }
        Err(error) => {
            tracing::error!(%error, "cannot change a password");
            return text(StatusCode::SERVICE_UNAVAILABLE, "Cannot change the password now");
        }
    };
    let signed = Signed {
        user,
        token: signed.token.clone(),
        session: signed.session.clone(),
    };
    profile(ctx, &signed, Some("Password changed."), None, Vec::new())
}

fn enrol(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let code = ctx.form("code").unwrap_or_default();
    match users::account::enrol_totp(ctx.state, &signed.token, &signed.session, &code) {
        Ok(Enrolment::Enrolled(enrolled)) => {
            let signed = Signed {
                user: enrolled.user,
                session: enrolled.session,
                token: signed.token.clone(),
            };
            profile(
                ctx,
                &signed,
                Some("Two-factor authentication is on."),
                None,
                enrolled.recovery_codes,
            )
        }
        Ok(Enrolment::WrongCode) => profile(
            ctx,
            signed,
            None,
            Some("That code is not right; check the time on your device and try again."),
            Vec::new(),
        ),
        Ok(Enrolment::NothingPending) => redirect("/dashboard/profile"),
        Err(error) => {
            tracing::error!(%error, "cannot turn on two-factor authentication");
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "Cannot turn on two-factor authentication now",
            )
        }
    }
}

fn asset(file: &str) -> Response<Full<Bytes>> {
    let Some(found) = Assets::get(file) else {
        return text(StatusCode::NOT_FOUND, "No such file");
    };
    let mut response = Response::new(Full::new(Bytes::from(found.data.into_owned())));
    let kind = mime_guess::from_path(file).first_or_octet_stream();
    if let Ok(value) = HeaderValue::from_str(kind.as_ref()) {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
    }
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    secure(response.headers_mut());
    response
}

fn html(status: StatusCode, rendered: askama::Result<String>) -> Response<Full<Bytes>> {
    let body = match rendered {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(%error, "a dashboard page failed to render");
            return text(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong");
        }
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
        .headers_mut()
        .insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The answer when a page cannot read what it shows: the error logged, the person told
/// to try again; never an empty list, which would read as "there is nothing".
fn unreadable(error: &dyn std::fmt::Display) -> Response<Full<Bytes>> {
    tracing::error!(%error, "a dashboard page cannot read what it shows");
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "Cannot read this page's data now; try again shortly",
    )
}

/// The answer to a service's refusal: the person's mistake with its reason, a fault of
/// herald's as [`unreadable`].
fn refused(error: crate::services::Error) -> Response<Full<Bytes>> {
    use crate::services::Error;
    match error {
        Error::Invalid { .. } | Error::MissingField(_) => text(StatusCode::UNPROCESSABLE_ENTITY, &error.to_string()),
        Error::NotFound(message) => text(StatusCode::NOT_FOUND, message),
        Error::Forbidden(_) | Error::Restricted => text(StatusCode::FORBIDDEN, &error.to_string()),
        Error::Conflict(_) => text(StatusCode::CONFLICT, &error.to_string()),
        other => unreadable(&other),
    }
}

fn text(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A redirect to a URL made at run time (an identity provider's).
fn redirect_to(to: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    match HeaderValue::from_str(to) {
        Ok(value) => {
            response.headers_mut().insert(LOCATION, value);
            response
        }
        Err(_) => text(StatusCode::BAD_GATEWAY, "The identity provider's address is not valid"),
    }
}

fn redirect(to: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::SEE_OTHER;
    response.headers_mut().insert(LOCATION, HeaderValue::from_static(to));
    response
}

/// The security headers every dashboard answer carries.
fn secure(headers: &mut hyper::HeaderMap) {
    // A page that set its own (an email's, with remote images asked for) keeps it.
    if !headers.contains_key(hyper::header::CONTENT_SECURITY_POLICY) {
        headers.insert(hyper::header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    }
    // A preview, framed by the dashboard's own pages, keeps its SAMEORIGIN.
    if !headers.contains_key(hyper::header::X_FRAME_OPTIONS) {
        headers.insert(hyper::header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    headers.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(hyper::header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
}

/// A time as the pages show it: `26 Nov 2026 14:05:40` (UTC, as the column heads say).
fn when(at: herald_queue::Timestamp) -> String {
    let millis = i64::try_from(at.as_millis()).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_millis(millis)
        .unwrap_or_default()
        .format("%d %b %Y %H:%M:%S")
        .to_string()
}

/// A page's status: `422` when it shows why a form was refused, else `200`.
fn answer_status(refused: bool) -> StatusCode {
    if refused {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    }
}

/// The first page of a list the forms choose from (segments, topics, keys, domains).
fn first_page() -> crate::storage::page::PageRequest {
    crate::storage::page::PageRequest {
        limit: 100,
        cursor: crate::storage::page::Cursor::Start,
    }
}

/// The team's API keys as (id, name), for filters and names in lists.
fn key_names(ctx: &Ctx<'_>, signed: &Signed) -> Vec<(String, String)> {
    crate::accounts::keys::list(ctx.state, &signed.caller(), &first_page())
        .map(|(keys, _)| keys.into_iter().map(|k| (k.key.id.to_string(), k.key.name)).collect())
        .unwrap_or_default()
}
