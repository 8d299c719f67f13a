//! The no-code editor's page, for a draft broadcast or a template: GrapesJS with its MJML
//! plugin (vendored, see `assets/dashboard/vendor/README.md`), started by `editor.js`
//! with the stored design, the merge tags and where to save. Saving posts the MJML; the
//! server compiles and sanitises it ([`crate::design`]) and stores both through the
//! broadcasts or templates service, answering JSON: what it made, or the fault with its
//! line and column. The page's Content-Security-Policy, unlike every other page's, allows
//! inline styles (GrapesJS styles its canvas inline) and images from `https:` and
//! `[http] public_url` (the ones a design uses); scripts stay same-origin files.
//!
//! Images are uploaded from the editor's asset manager ([`upload_image`]: the body is the
//! image, the form's token in `X-CSRF-Token`) and served from `public_url`
//! ([`crate::images`]); the page lists the team's newest ones.

use askama::Template as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::{Ctx, Signed, html, pages, text};
use crate::broadcasts::Status;
use crate::broadcasts::service::{self as broadcasts, Fields};
use crate::design::{self, DesignError};
use crate::images;
use crate::services::Error;
use crate::templates::service::{self as templates, TemplateChange};

/// The editor page's Content-Security-Policy, but for `img-src`'s `public_url`.
const CSP_EDITOR: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self' data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The same with images from `https:` only, should `public_url` not fit in a header.
const CSP_EDITOR_HTTPS: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self' data:; connect-src 'self'; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; img-src 'self' data: https:";

/// Images the editor's asset manager lists at most: the team's newest.
const IMAGES_LISTED: usize = 200;

/// What a design belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A draft broadcast: its design keeps the unsubscribe block.
    Broadcast,
    /// A template: the design is its draft.
    Template,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Broadcast => "broadcast",
            Target::Template => "template",
        }
    }

    fn back(self, id: &str) -> String {
        match self {
            Target::Broadcast => format!("/dashboard/broadcasts/{id}"),
            Target::Template => format!("/dashboard/templates/{id}"),
        }
    }
}

/// `GET .../{id}/design`: the editor, with the stored design (none yet: a starter).
pub fn page(ctx: &Ctx<'_>, signed: &Signed, target: Target, id: &str) -> Response<Full<Bytes>> {
    let caller = signed.caller();
    let (name, mjml, merge_tags) = match target {
        Target::Broadcast => match broadcasts::get(ctx.state, &caller, id) {
            Ok(b) if b.status != Status::Draft => {
                return text(StatusCode::CONFLICT, "Only a draft broadcast can be designed");
            }
            Ok(b) => (
                b.name.clone(),
                b.mjml.clone(),
                super::broadcasts::merge_tags(ctx, b.team_id),
            ),
            Err(_) => return text(StatusCode::NOT_FOUND, "No such broadcast"),
        },
        Target::Template => match templates::get(ctx.state, &caller, id) {
            Ok(t) => {
                let current = t.current();
                (
                    t.name.clone(),
                    current.mjml.clone(),
                    super::templates::merge_tags(current),
                )
            }
            Err(_) => return text(StatusCode::NOT_FOUND, "No such template"),
        },
    };
    let page = pages::DesignPage {
        chrome: signed.chrome(match target {
            Target::Broadcast => "broadcasts",
            Target::Template => "templates",
        }),
        kind: target.name(),
        back: target.back(id),
        name,
        mjml: mjml.unwrap_or_default(),
        merge_tags_json: serde_json::to_string(&merge_tags).unwrap_or_else(|_| "[]".into()),
        merge_tags,
        images_json: images_json(ctx, &caller),
    };
    let mut response = html(StatusCode::OK, page.render());
    let public_url = &ctx.state.config().http.public_url;
    let policy = HeaderValue::from_str(&format!("{CSP_EDITOR}; img-src 'self' data: https: {public_url}"))
        .unwrap_or_else(|_| HeaderValue::from_static(CSP_EDITOR_HTTPS));
    response.headers_mut().insert(CONTENT_SECURITY_POLICY, policy);
    response
}

/// The team's newest images, as the asset manager lists them.
fn images_json(ctx: &Ctx<'_>, caller: &crate::accounts::Caller) -> String {
    let public_url = &ctx.state.config().http.public_url;
    let images = images::list(ctx.state, caller, IMAGES_LISTED).unwrap_or_else(|error| {
        tracing::warn!(%error, "cannot list the team's images");
        Vec::new()
    });
    let listed: Vec<_> = images.iter().map(|image| asset(image, public_url)).collect();
    serde_json::Value::Array(listed).to_string()
}

fn asset(image: &images::Image, public_url: &str) -> serde_json::Value {
    json!({ "src": image.url(public_url), "name": image.name, "type": "image" })
}

/// `POST /dashboard/images`: the body is an image; keeps it for the team and answers
/// the asset manager's JSON (`{"data": [{"src": ...}]}`), or the refusal's message.
pub fn upload_image(ctx: &Ctx<'_>, signed: &Signed) -> Response<Full<Bytes>> {
    // Who may save a design may add its images.
    if signed.user.role < crate::users::Role::Admin {
        return answer(
            StatusCode::FORBIDDEN,
            &json!({ "message": "Your role may not upload images; ask an owner or admin" }),
        );
    }
    let name = ctx
        .request
        .headers
        .get("x-file-name")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            form_urlencoded::parse(format!("n={v}").as_bytes())
                .next()
                .map(|(_, name)| name.into_owned())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    match images::upload(ctx.state, &signed.caller(), &name, &ctx.request.body) {
        Ok(image) => answer(
            StatusCode::CREATED,
            &json!({ "data": [asset(&image, &ctx.state.config().http.public_url)] }),
        ),
        Err(Error::Store(error)) => {
            tracing::error!(%error, "an image could not be kept");
            answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({ "message": "Not uploaded: something went wrong on herald's side" }),
            )
        }
        Err(error) => answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({ "message": error.to_string() }),
        ),
    }
}

/// `POST /dashboard/images/{token}/delete`: removes the team's image whose address has
/// `token` (the asset manager's remove button); answers `{"deleted": true}` or why not.
pub fn delete_image(ctx: &Ctx<'_>, signed: &Signed, token: &str) -> Response<Full<Bytes>> {
    if signed.user.role < crate::users::Role::Admin {
        return answer(
            StatusCode::FORBIDDEN,
            &json!({ "message": "Your role may not remove images; ask an owner or admin" }),
        );
    }
    match images::delete(ctx.state, &signed.caller(), token) {
        Ok(true) => answer(StatusCode::OK, &json!({ "deleted": true })),
        Ok(false) => answer(
            StatusCode::NOT_FOUND,
            &json!({ "message": "The team has no such image; reload the page" }),
        ),
        Err(Error::Store(error)) => {
            tracing::error!(%error, "an image could not be removed");
            answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({ "message": "Not removed: something went wrong on herald's side" }),
            )
        }
        Err(error) => answer(StatusCode::FORBIDDEN, &json!({ "message": error.to_string() })),
    }
}

/// `POST .../{id}/design` with `mjml`: compiles, sanitises and stores the design.
pub fn save(ctx: &Ctx<'_>, signed: &Signed, target: Target, id: &str) -> Response<Full<Bytes>> {
    let Some(mjml) = ctx.form("mjml") else {
        return answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({ "message": "Missing `mjml` field." }),
        );
    };
    let compiled = match design::compile(&mjml) {
        Ok(compiled) => compiled,
        Err(DesignError::Syntax { message, line, column }) => {
            return answer(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({ "message": format!("The MJML does not compile: {message}"), "line": line, "column": column }),
            );
        }
        Err(other) => {
            return answer(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({ "message": other.to_string() }),
            );
        }
    };
    let html_bytes = compiled.html().len();
    let caller = signed.caller();
    let saved = match target {
        Target::Broadcast => broadcasts::update(
            ctx.state,
            &caller,
            id,
            Fields {
                design: Some(compiled),
                ..Fields::default()
            },
        ),
        Target::Template => templates::update(
            ctx.state,
            &caller,
            id,
            TemplateChange {
                design: Some(compiled),
                ..TemplateChange::default()
            },
        ),
    };
    match saved {
        Ok(_) => answer(StatusCode::OK, &json!({ "saved": true, "html_bytes": html_bytes })),
        Err(error) => {
            let status = match &error {
                Error::NotFound(_) => StatusCode::NOT_FOUND,
                Error::Forbidden(_) | Error::Restricted => StatusCode::FORBIDDEN,
                Error::Store(_) | Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                tracing::error!(%error, "a design could not be saved");
                return answer(
                    status,
                    &json!({ "message": "Not saved: something went wrong on herald's side" }),
                );
            }
            answer(status, &json!({ "message": error.to_string() }))
        }
    }
}

fn answer(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
