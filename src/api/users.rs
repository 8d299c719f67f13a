//! `/users` (herald's own): the people who sign in to the dashboard. The rules are
//! [`crate::users`]'.

use serde_json::json;

use super::{Ctx, Reply};
use crate::http::ApiError;
use crate::http::pagination::envelope;
use crate::users::{self, NewUser, Role};

#[derive(Debug, serde::Deserialize)]
struct CreateBody {
    email: Option<String>,
    team_id: Option<String>,
    role: Option<String>,
    password: Option<String>,
}

/// `POST /users`: with `password`, the user signs in at once; without, the answer
/// carries a one-time `invitation_url` (valid seven days).
pub fn create(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let body: CreateBody = ctx.request.json()?;
    let role = body
        .role
        .as_deref()
        .map(|r| {
            Role::parse(r)
                .ok_or_else(|| ApiError::validation(format!("Invalid `role` field {r:?}: owner, admin or member")))
        })
        .transpose()?;
    let team_id = body
        .team_id
        .as_deref()
        .map(|t| crate::services::parse_id(t, "team"))
        .transpose()?;
    let (user, invitation) = users::add(
        ctx.state,
        ctx.caller,
        NewUser {
            email: body.email,
            team_id,
            role,
            password: body.password,
        },
    )?;
    let mut answer = user.to_json();
    if let Some(token) = invitation {
        answer["invitation_url"] = json!(format!(
            "{}/dashboard/invite/{token}",
            ctx.state.config().http.public_url
        ));
    }
    Ok(Reply::created(answer))
}

/// `GET /users`: the team's users.
pub fn list(ctx: &Ctx<'_>) -> Result<Reply, ApiError> {
    let found = users::list(ctx.state, ctx.caller)?;
    Ok(Reply::ok(envelope(
        found.iter().map(users::User::to_json).collect(),
        false,
    )))
}
