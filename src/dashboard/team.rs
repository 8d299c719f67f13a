//! The Suppressions page (search, add, remove: owners and admins) and the Team page
//! (members, roles, invitations: owners).

use askama::Template;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::{Ctx, Signed, answer_status, html, pages, text};
use crate::storage::page::{Cursor, PageRequest};
use crate::suppressions::service as suppressions;
use crate::users::{self, NewUser, Role};

/// Entries read at most to fill a searched page.
const SEARCHED_MAX: usize = 100;

/// Answers `/dashboard/suppressions[/...]`.
pub fn suppressions(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => suppressions_page(ctx, signed, None),
        (&Method::POST, []) if manage => match suppressions::add(ctx.state, &signed.caller(), ctx.form("email")) {
            Ok(_) => suppressions_page(ctx, signed, None),
            Err(error) => suppressions_page(ctx, signed, Some(error.to_string())),
        },
        (&Method::POST, [id, "delete"]) if manage => match suppressions::remove(ctx.state, &signed.caller(), id) {
            Ok(_) => suppressions_page(ctx, signed, None),
            Err(error) => suppressions_page(ctx, signed, Some(error.to_string())),
        },
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change suppressions; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn suppressions_page(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let query = ctx.request.query("q").unwrap_or_default().trim().to_ascii_lowercase();
    let page = PageRequest {
        limit: if query.is_empty() { 50 } else { SEARCHED_MAX },
        cursor: Cursor::Start,
    };
    let found = match suppressions::list(ctx.state, &signed.caller(), &page, None) {
        Ok((found, _)) => found,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let rows = found
        .iter()
        .filter(|s| query.is_empty() || s.email.contains(&query))
        .map(|s| pages::SuppressionRow {
            id: s.id.to_string(),
            email: s.email.clone(),
            origin: serde_json::to_value(s.origin)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            created: super::when(s.created_at),
        })
        .collect();
    let status = answer_status(error.is_some());
    let page = pages::Suppressions {
        chrome: signed.chrome("suppressions"),
        can_manage: signed.user.role >= Role::Admin,
        query,
        rows,
        error,
    };
    html(status, page.render())
}

/// Answers `/dashboard/team`.
pub fn team(ctx: &Ctx<'_>, signed: &Signed, method: &Method) -> Response<Full<Bytes>> {
    match *method {
        Method::GET => team_page(ctx, signed, None, None),
        Method::POST if signed.user.role == Role::Owner => invite(ctx, signed),
        Method::POST => text(StatusCode::FORBIDDEN, "Only the team's owners invite members"),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn invite(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    let role = ctx.form("role").as_deref().and_then(Role::parse);
    let new = NewUser {
        email: ctx.form("email"),
        team_id: None,
        role,
        password: None,
    };
    match users::add(ctx.state, &signed.caller(), new) {
        Ok((_, Some(token))) => {
            let link = format!("{}/dashboard/invite/{token}", ctx.state.config().http.public_url);
            team_page(ctx, signed, Some(link), None)
        }
        Ok((_, None)) => team_page(ctx, signed, None, None),
        Err(error) => team_page(ctx, signed, None, Some(error.to_string())),
    }
}

/// The team's plan and its day's and month's sending against it.
fn usage(
    ctx: &Ctx<'_>,
    team: herald_queue::Id,
) -> Result<(Option<String>, Vec<pages::UsageRow>), crate::storage::Error> {
    use crate::quotas::{Allowance, Period, resets_at};
    let plan = ctx.state.plan_of(team)?;
    let allowance = Allowance::of(plan);
    let now = ctx.state.now();
    let used = ctx.state.quotas().used(ctx.state.counters(), team, now)?;
    let limit = |limit: Option<u64>| limit.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
    let resets = |period| resets_at(period, now).replace('T', " ").replace(":00.000Z", " UTC");
    let rows = vec![
        pages::UsageRow {
            period: "Today (UTC)",
            used: used.daily,
            limit: limit(allowance.daily),
            resets: resets(Period::Daily),
        },
        pages::UsageRow {
            period: "This month (UTC)",
            used: used.monthly,
            limit: limit(allowance.monthly),
            resets: resets(Period::Monthly),
        },
    ];
    Ok((plan.map(|p| p.name.clone()), rows))
}

fn team_page(
    ctx: &Ctx<'_>,
    signed: &Signed,
    invitation: Option<String>,
    error: Option<String>,
) -> Response<Full<Bytes>> {
    let members = match users::list(ctx.state, &signed.caller()) {
        Ok(members) => members,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let members = members
        .iter()
        .map(|u| pages::MemberRow {
            email: u.email.clone(),
            role: u.role.name().to_owned(),
            mfa: u.totp_secret.is_some(),
            invited: u.password_hash.is_none(),
        })
        .collect();
    let team = signed.user.team_id;
    let (plan, usage) = match usage(ctx, team) {
        Ok(found) => found,
        Err(error) => return text(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    };
    let status = answer_status(error.is_some());
    let page = pages::Team {
        chrome: signed.chrome("team"),
        can_manage: signed.user.role == Role::Owner,
        members,
        invitation,
        plan,
        usage,
        error,
    };
    html(status, page.render())
}
