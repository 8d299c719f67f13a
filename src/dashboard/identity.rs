//! Sign-in by a Google or GitHub identity. `GET /dashboard/auth/{provider}` starts a
//! flow: a random `state` (kept server-side with the PKCE verifier and nonce, and in a
//! short-lived cookie so that only the browser that started it can finish it) and a
//! redirect to the provider. The callback checks both, spends the flow, has [`oauth`]
//! finish the exchange, and signs in the user whose address the identity carries and
//! has verified. An address no user has is refused: identities do not sign up. A user
//! with TOTP still has to give a code.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};

use super::oauth::{OAuth, OAuthError};
use super::{Ctx, SESSION_COOKIE, redirect, redirect_to, text};
use crate::users::{self, sessions};

/// The cookie that ties a flow to the browser that started it.
const FLOW_COOKIE: &str = "herald_oauth";

/// How long a started flow can be finished.
const FLOW_TTL: Duration = Duration::from_secs(10 * 60);

/// Flows pending at most; past it the oldest are dropped.
const FLOWS_MAX: usize = 10_000;

/// A provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Google (or any OpenID Connect issuer).
    Google,
    /// GitHub.
    Github,
}

impl Provider {
    /// The provider's name in paths.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Google => "google",
            Provider::Github => "github",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Provider::Google => "Google",
            Provider::Github => "GitHub",
        }
    }
}

struct Flow {
    provider: Provider,
    verifier: String,
    nonce: String,
    started: Instant,
}

/// Pending flows and the providers' client.
pub struct Identity {
    oauth: OAuth,
    flows: Mutex<HashMap<String, Flow>>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").finish_non_exhaustive()
    }
}

impl Identity {
    /// No flow pending.
    pub fn new() -> Result<Identity, herald_tls::Error> {
        Ok(Identity {
            oauth: OAuth::new()?,
            flows: Mutex::new(HashMap::new()),
        })
    }

    fn keep(&self, state: String, flow: Flow) {
        let mut flows = self.flows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        flows.retain(|_, f| f.started.elapsed() < FLOW_TTL);
        if flows.len() >= FLOWS_MAX
            && let Some(oldest) = flows.iter().min_by_key(|(_, f)| f.started).map(|(k, _)| k.clone())
        {
            flows.remove(&oldest);
        }
        flows.insert(state, flow);
    }

    fn take(&self, state: &str) -> Option<Flow> {
        let mut flows = self.flows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        flows.remove(state).filter(|f| f.started.elapsed() < FLOW_TTL)
    }
}

fn callback_url(ctx: &Ctx<'_>, provider: Provider) -> String {
    format!(
        "{}/dashboard/auth/{}/callback",
        ctx.state.config().http.public_url,
        provider.name()
    )
}

/// `GET /dashboard/auth/{provider}`.
pub(super) fn start(ctx: &Ctx<'_>, provider: Provider) -> Response<Full<Bytes>> {
    let config = &ctx.state.config().dashboard;
    let redirect_uri = callback_url(ctx, provider);
    let oauth = &ctx.state.identity.oauth;
    let started = match provider {
        Provider::Google => config.google.as_ref().map(|c| oauth.google_start(c, &redirect_uri)),
        Provider::Github => config.github.as_ref().map(|c| oauth.github_start(c, &redirect_uri)),
    };
    let started = match started {
        None => return text(StatusCode::NOT_FOUND, "This sign-in method is not configured"),
        Some(Err(error)) => return refused(ctx, provider, &error.to_string()),
        Some(Ok(started)) => started,
    };
    ctx.state.identity.keep(
        started.state.clone(),
        Flow {
            provider,
            verifier: started.verifier,
            nonce: started.nonce,
            started: Instant::now(),
        },
    );
    let mut response = redirect_to(&started.url);
    flow_cookie(ctx, &mut response, &started.state, FLOW_TTL.as_secs());
    response
}

/// `GET /dashboard/auth/{provider}/callback`.
pub(super) fn callback(ctx: &Ctx<'_>, provider: Provider) -> Response<Full<Bytes>> {
    let keys = [format!("ip:{}", ctx.peer)];
    let guard = &ctx.state.dashboard_guard;
    if guard.locked(&keys) {
        return refused(
            ctx,
            provider,
            "too many failed sign-ins from this address; wait a while",
        );
    }
    if let Some(error) = ctx.request.query("error") {
        return refused(ctx, provider, &format!("the provider answered {error:?}"));
    }
    let state = ctx.request.query("state").unwrap_or_default();
    let cookie = ctx.cookie(FLOW_COOKIE).unwrap_or_default();
    let same_browser = !state.is_empty()
        && aws_lc_rs::constant_time::verify_slices_are_equal(state.as_bytes(), cookie.as_bytes()).is_ok();
    let flow = if same_browser {
        ctx.state.identity.take(state)
    } else {
        None
    };
    let Some(flow) = flow.filter(|f| f.provider == provider) else {
        guard.fail(&keys);
        return refused(
            ctx,
            provider,
            "the sign-in expired or was started elsewhere; start again",
        );
    };
    let code = ctx.request.query("code").unwrap_or_default();
    let config = &ctx.state.config().dashboard;
    let redirect_uri = callback_url(ctx, provider);
    let oauth = &ctx.state.identity.oauth;
    let addresses = match provider {
        Provider::Google => config
            .google
            .as_ref()
            .map(|c| oauth.google_finish(c, &redirect_uri, code, flow.verifier, &flow.nonce)),
        Provider::Github => config
            .github
            .as_ref()
            .map(|c| oauth.github_finish(c, &redirect_uri, code, flow.verifier)),
    };
    let addresses = match addresses {
        None => return text(StatusCode::NOT_FOUND, "This sign-in method is not configured"),
        Some(Err(error)) => {
            if matches!(error, OAuthError::Provider(_)) {
                tracing::warn!(provider = provider.name(), %error, "an identity sign-in failed");
            }
            guard.fail(&keys);
            return refused(ctx, provider, &error.to_string());
        }
        Some(Ok(addresses)) => addresses,
    };
    let signed_in = match users::account::sign_in_as(ctx.state, &addresses) {
        Ok(signed_in) => signed_in,
        Err(error) => {
            tracing::error!(%error, "cannot start a dashboard session");
            return text(StatusCode::SERVICE_UNAVAILABLE, "Cannot sign in now; try again shortly");
        }
    };
    let Some(users::account::SignedIn { user, token }) = signed_in else {
        guard.fail(&keys);
        metrics::counter!("herald_dashboard_sign_ins_total", "outcome" => "failed").increment(1);
        let shown = addresses.first().map(String::as_str).unwrap_or_default();
        return refused(
            ctx,
            provider,
            &format!("no herald user has the address {shown}; ask an owner of your team for an invitation"),
        );
    };
    metrics::counter!("herald_dashboard_sign_ins_total", "outcome" => provider.name()).increment(1);
    let mut response = redirect(if user.totp_secret.is_some() {
        "/dashboard/login/mfa"
    } else {
        "/dashboard/emails"
    });
    ctx.set_cookie(
        &mut response,
        SESSION_COOKIE,
        &token,
        Some(sessions::ABSOLUTE.as_secs()),
    );
    flow_cookie(ctx, &mut response, "", 0);
    response
}

/// The sign-in page with why the identity sign-in did not work.
fn refused(ctx: &Ctx<'_>, provider: Provider, why: &str) -> Response<Full<Bytes>> {
    let message = format!("Sign-in with {} did not work: {why}.", provider.label());
    let mut response = super::login_page(ctx, Some(&message), "");
    *response.status_mut() = StatusCode::FORBIDDEN;
    flow_cookie(ctx, &mut response, "", 0);
    response
}

fn flow_cookie(ctx: &Ctx<'_>, response: &mut Response<Full<Bytes>>, value: &str, max_age: u64) {
    let secure = if ctx.https { "; Secure" } else { "" };
    let cookie =
        format!("{FLOW_COOKIE}={value}; Path=/dashboard/auth; HttpOnly; SameSite=Lax{secure}; Max-Age={max_age}");
    if let Ok(value) = hyper::header::HeaderValue::from_str(&cookie) {
        response.headers_mut().append(hyper::header::SET_COOKIE, value);
    }
}
