//! The Broadcasts pages: the team's broadcasts; a new one (name, sender, subject, segment,
//! topic, HTML with merge tags); while a draft, edit it, **test send** it to a few
//! addresses (rendered as for a contact, a "[Test]" subject) and **review** it: the
//! recipients after unsubscribes and suppressions, and the deliverability insights of the
//! latest test email; then send now or schedule. While sending, its progress (followed
//! live) and cancel; afterwards delivered, opened, clicked, bounced and complained with
//! their rates, and the most clicked links. Through the broadcasts service.

use askama::Template as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Response, StatusCode};

use super::design::Target;
use super::{Ctx, Signed, answer_status, html, pages, redirect, redirect_to, text};
use crate::accounts::Permission;
use crate::broadcasts::service::{self as broadcasts, Fields};
use crate::broadcasts::{Broadcast, Status};
use crate::contacts::{Contact, segments, topics};
use crate::emails::Source;
use crate::emails::submit::{self, Sender};
use crate::storage::page::{Cursor, PageRequest};
use crate::users::Role;

/// Addresses one test send may go to.
const TEST_ADDRESSES_MAX: usize = 5;

/// Recipients read at most to count a broadcast's outcomes.
const COUNTED_MAX: usize = 100_000;

/// Answers `/dashboard/broadcasts[/...]`.
pub fn route(ctx: &Ctx<'_>, signed: &Signed, method: &Method, rest: &str) -> Response<Full<Bytes>> {
    let manage = signed.user.role >= Role::Admin;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    let caller = signed.caller();
    match (method, parts.as_slice()) {
        (&Method::GET, []) => list(ctx, signed, None),
        (&Method::POST, []) if manage => match broadcasts::create(ctx.state, &caller, fields(ctx), false, None) {
            Ok(id) => redirect_to(&format!("/dashboard/broadcasts/{id}")),
            Err(error) => list(ctx, signed, Some(error.to_string())),
        },
        (&Method::GET, [id]) => detail(ctx, signed, id, None, None, None),
        (&Method::POST, [id]) if manage => match broadcasts::update(ctx.state, &caller, id, fields(ctx)) {
            Ok(_) => detail(ctx, signed, id, Some("Saved."), None, None),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string()), None),
        },
        (&Method::GET, [id, "design"]) => super::design::page(ctx, signed, Target::Broadcast, id),
        (&Method::GET, [id, "preview"]) => preview(ctx, signed, id),
        (&Method::POST, [id, "design"]) if manage => super::design::save(ctx, signed, Target::Broadcast, id),
        (&Method::POST, [id, "test"]) if manage => test_send(ctx, signed, id),
        (&Method::POST, [id, "send"]) if manage => {
            let when = ctx.form("scheduled_at").filter(|w| !w.trim().is_empty());
            match broadcasts::send(ctx.state, &caller, id, when) {
                Ok(_) => redirect_to(&format!("/dashboard/broadcasts/{id}")),
                Err(error) => detail(ctx, signed, id, None, Some(error.to_string()), None),
            }
        }
        (&Method::POST, [id, "cancel"]) if manage => match broadcasts::cancel(ctx.state, &caller, id) {
            Ok(_) => detail(
                ctx,
                signed,
                id,
                Some("Canceled: no more of its emails go out."),
                None,
                None,
            ),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string()), None),
        },
        (&Method::POST, [id, "delete"]) if manage => match broadcasts::delete(ctx.state, &caller, id) {
            Ok(_) => redirect("/dashboard/broadcasts"),
            Err(error) => detail(ctx, signed, id, None, Some(error.to_string()), None),
        },
        (&Method::POST, _) => text(
            StatusCode::FORBIDDEN,
            "Your role may not change broadcasts; ask an owner or admin",
        ),
        _ => text(StatusCode::NOT_FOUND, "No such page"),
    }
}

fn fields(ctx: &Ctx<'_>) -> Fields {
    let given = |name: &str| ctx.form(name).filter(|v| !v.trim().is_empty());
    Fields {
        name: given("name"),
        segment_id: given("segment_id"),
        from: given("from"),
        subject: given("subject"),
        // A textarea posts CRLF line ends: the HTML as stored has LF.
        html: given("html").map(|h| h.replace("\r\n", "\n")),
        text: given("text"),
        topic_id: Some(given("topic_id")),
        ..Fields::default()
    }
}

/// (id, name) pairs for a select.
type Options = Vec<(String, String)>;

/// The team's segments and topics, for the forms.
fn choices(ctx: &Ctx<'_>, signed: &Signed) -> Result<(Options, Options), crate::services::Error> {
    let caller = signed.caller();
    let segments = segments::list(ctx.state, &caller, &super::first_page())
        .map(|(list, _)| list.into_iter().map(|s| (s.id.to_string(), s.name)).collect())?;
    let topics = topics::list(ctx.state, &caller, &super::first_page())
        .map(|(list, _)| list.into_iter().map(|t| (t.id.to_string(), t.name)).collect())?;
    Ok((segments, topics))
}

fn list(ctx: &Ctx<'_>, signed: &Signed, error: Option<String>) -> Response<Full<Bytes>> {
    let (segments, topics) = match choices(ctx, signed) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let rows = match broadcasts::list(ctx.state, &signed.caller(), &super::first_page()).map(|(found, _)| {
        found
            .into_iter()
            .map(|b| pages::BroadcastRow {
                id: b.id.to_string(),
                name: b.name.clone(),
                status: b.status.name(),
                segment: segments
                    .iter()
                    .find(|(id, _)| *id == b.segment_id.to_string())
                    .map_or_else(|| b.segment_id.to_string(), |(_, n)| n.clone()),
                sent: b.counts.sent,
                created: super::when(b.created_at),
            })
            .collect()
    }) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let status = answer_status(error.is_some());
    let page = pages::Broadcasts {
        chrome: signed.chrome("broadcasts"),
        can_manage: signed.user.role >= Role::Admin,
        rows,
        segments,
        topics,
        merge_tags: merge_tags(ctx, signed.user.team_id),
        error,
    };
    html(status, page.render())
}

/// Sends the draft to a few addresses as ordinary emails, each rendered as for the contact
/// with that address (or for a stranger with it), under a "[Test]" subject.
fn test_send(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let caller = signed.caller();
    let Ok(broadcast) = broadcasts::get(ctx.state, &caller, id) else {
        return text(StatusCode::NOT_FOUND, "No such broadcast");
    };
    let addresses: Vec<String> = ctx
        .form("to")
        .unwrap_or_default()
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if addresses.is_empty() || addresses.len() > TEST_ADDRESSES_MAX {
        let why = format!("Give between 1 and {TEST_ADDRESSES_MAX} addresses, separated by commas.");
        return detail(ctx, signed, id, None, Some(why), None);
    }
    match send_tests(ctx, &broadcast, &addresses) {
        Ok(last) => detail(
            ctx,
            signed,
            id,
            Some("Test sent. Its deliverability review is below."),
            None,
            Some(last),
        ),
        Err(why) => detail(ctx, signed, id, None, Some(why), None),
    }
}

fn send_tests(ctx: &Ctx<'_>, broadcast: &Broadcast, addresses: &[String]) -> Result<String, String> {
    let services = ctx.state;
    let team = broadcast.team_id;
    let properties = services.audience().properties(team).map_err(|e| e.to_string())?;
    let prepared = crate::broadcasts::personalise::prepare(broadcast, properties).map_err(|e| e.to_string())?;
    let sender = Sender {
        team_id: team,
        api_key_id: None,
        permission: Permission::FullAccess,
        domain_id: None,
        request_log_id: None,
    };
    let mut last = String::new();
    for address in addresses {
        let contact = contact_for(ctx, team, address)?;
        let mut email = prepared.render(broadcast, &contact)?;
        // A test is not part of the broadcast: not counted, never canceled with it.
        email.broadcast_id = None;
        email.subject = format!("[Test] {}", email.subject);
        let domain = submit::authorize(services, &sender, &email).map_err(|e| e.to_string())?;
        let made = submit::prepare(services, &sender, &email, &domain, Source::Api).map_err(|e| e.to_string())?;
        last = made.id.to_string();
        crate::emails::accept::accept(services, vec![made], None, Source::Api)
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
    }
    Ok(last)
}

/// The team's contact with `address`, or a stranger with it (no names, no properties).
fn contact_for(ctx: &Ctx<'_>, team: herald_queue::Id, address: &str) -> Result<Contact, String> {
    let services = ctx.state;
    let now = services.now();
    Ok(services
        .contacts()
        .by_email(team, address)
        .map_err(|e| e.to_string())?
        .unwrap_or_else(|| Contact {
            id: services.next_id(),
            team_id: team,
            email: address.to_owned(),
            first_name: None,
            last_name: None,
            unsubscribed: false,
            created_at: now,
            updated_at: now,
            segments: Vec::new(),
            topics: Vec::new(),
            properties: std::collections::BTreeMap::new(),
        }))
}

/// The merge tags a broadcast may use: the contact's fields, the team's properties and
/// the unsubscribe link.
pub(super) fn merge_tags(ctx: &Ctx<'_>, team: herald_queue::Id) -> Vec<String> {
    let mut tags: Vec<String> = ["FIRST_NAME", "LAST_NAME", "EMAIL"].map(str::to_owned).to_vec();
    if let Ok(properties) = ctx.state.audience().properties(team) {
        tags.extend(properties.into_iter().map(|p| p.key));
    }
    tags.push(crate::unsubscribe::MARKER.trim_matches(['{', '}']).to_owned());
    tags
}

/// The subject and HTML as the contact with `address` (or, when empty, a stranger) would
/// get them, or as written with why they could not be rendered.
fn preview_for(ctx: &Ctx<'_>, broadcast: &Broadcast, address: &str) -> (String, String, Option<String>) {
    let address = if address.is_empty() {
        "someone@example.com"
    } else {
        address
    };
    match rendered(ctx, broadcast, address) {
        Ok((subject, html)) => (subject, html, None),
        Err(why) => (
            broadcast.subject.clone(),
            broadcast.html.clone().unwrap_or_default(),
            Some(format!("Cannot render it for this contact: {why}")),
        ),
    }
}

/// `GET /dashboard/broadcasts/{id}/preview[?preview=address]`: the HTML for the page's
/// preview frame, as that contact would get it.
fn preview(ctx: &Ctx<'_>, signed: &Signed, id: &str) -> Response<Full<Bytes>> {
    let Ok(broadcast) = broadcasts::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such broadcast");
    };
    let address = ctx.request.query("preview").unwrap_or_default();
    let (_, html, _) = preview_for(ctx, &broadcast, address.trim());
    super::preview::answer(html, false)
}

/// The subject and HTML as the contact with `address` would get them.
fn rendered(ctx: &Ctx<'_>, broadcast: &Broadcast, address: &str) -> Result<(String, String), String> {
    let properties = ctx
        .state
        .audience()
        .properties(broadcast.team_id)
        .map_err(|e| e.to_string())?;
    let prepared = crate::broadcasts::personalise::prepare(broadcast, properties).map_err(|e| e.to_string())?;
    let contact = contact_for(ctx, broadcast.team_id, address)?;
    let email = prepared.render(broadcast, &contact)?;
    Ok((email.subject, email.html.unwrap_or_default()))
}

/// Who a draft would go to now: the segment's contacts, those unsubscribed (or opted out
/// of its topic) and those suppressed, read up to [`COUNTED_MAX`].
fn audience(ctx: &Ctx<'_>, broadcast: &Broadcast) -> (u64, u64, u64) {
    let (mut members, mut unsubscribed, mut suppressed) = (0, 0, 0);
    let mut cursor = Cursor::Start;
    let topic = broadcast
        .topic_id
        .and_then(|id| topics::find(ctx.state, broadcast.team_id, id).ok());
    loop {
        let page = PageRequest { limit: 1_000, cursor };
        let Ok((found, more)) = ctx
            .state
            .contacts()
            .segment_page(broadcast.team_id, broadcast.segment_id, &page)
        else {
            break;
        };
        for contact in &found {
            members += 1;
            let opted_out = topic.as_ref().is_some_and(|t| {
                let choice = contact.topics.iter().find(|c| c.id == t.id).map(|c| c.subscription);
                choice.unwrap_or(t.default_subscription) == crate::contacts::Subscription::OptOut
            });
            if contact.unsubscribed || opted_out {
                unsubscribed += 1;
            } else if ctx
                .state
                .suppressions()
                .find(broadcast.team_id, &contact.email)
                .ok()
                .flatten()
                .is_some()
            {
                suppressed += 1;
            }
        }
        match found.last() {
            Some(last) if more && members < COUNTED_MAX as u64 => cursor = Cursor::After(last.id),
            _ => break,
        }
    }
    (members, unsubscribed, suppressed)
}

/// Recipients of `kind`, counted up to [`COUNTED_MAX`].
fn detail(
    ctx: &Ctx<'_>,
    signed: &Signed,
    id: &str,
    notice: Option<&str>,
    error: Option<String>,
    tested: Option<String>,
) -> Response<Full<Bytes>> {
    let Ok(broadcast) = broadcasts::get(ctx.state, &signed.caller(), id) else {
        return text(StatusCode::NOT_FOUND, "No such broadcast");
    };
    let (segments, topics) = match choices(ctx, signed) {
        Ok(found) => found,
        Err(error) => return super::unreadable(&error),
    };
    let done = matches!(broadcast.status, Status::Sent | Status::Canceled);
    let outcomes = if done || broadcast.status == Status::Sending {
        let sent = broadcast.counts.sent;
        let rate = |n: u64, of: u64| {
            if of == 0 {
                "—".to_owned()
            } else {
                #[allow(clippy::cast_precision_loss)]
                let percent = n as f64 * 100.0 / of as f64;
                format!("{percent:.1} %")
            }
        };
        let counted = match broadcasts::outcomes(ctx.state, &signed.caller(), id) {
            Ok(found) => found,
            Err(error) => return super::unreadable(&error),
        };
        let delivered = counted.delivered;
        [
            ("Delivered", delivered, rate(delivered, sent)),
            ("Opened", counted.opened, String::new()),
            ("Clicked", counted.clicked, String::new()),
            ("Bounced", counted.bounced, String::new()),
            ("Complained", counted.complained, String::new()),
        ]
        .into_iter()
        .map(|(label, n, r)| {
            let r = match label {
                "Delivered" => r,
                "Complained" | "Opened" | "Clicked" => rate(n, delivered),
                _ => rate(n, sent),
            };
            (label, n, r)
        })
        .collect()
    } else {
        Vec::new()
    };
    let links = if done {
        let clicked = match broadcasts::clicked_links(ctx.state, &signed.caller(), id) {
            Ok(found) => found,
            Err(error) => return super::unreadable(&error),
        };
        clicked
            .into_iter()
            .take(10)
            .map(|l| (l.url, l.clicks, l.unique_clicks))
            .collect()
    } else {
        Vec::new()
    };
    let (members, skipped_unsubscribed, skipped_suppressed) = if broadcast.status == Status::Draft {
        audience(ctx, &broadcast)
    } else {
        (0, 0, 0)
    };
    let status = answer_status(error.is_some());
    let preview_as = ctx.request.query("preview").unwrap_or_default().trim().to_owned();
    let (preview_subject, _, preview_error) = preview_for(ctx, &broadcast, &preview_as);
    let page = pages::BroadcastPage {
        merge_tags: merge_tags(ctx, broadcast.team_id),
        preview_as,
        preview_subject,
        preview_error,
        members,
        skipped_unsubscribed,
        skipped_suppressed,
        recipients: members - skipped_unsubscribed - skipped_suppressed,
        chrome: signed.chrome("broadcasts"),
        can_manage: signed.user.role >= Role::Admin,
        id: broadcast.id.to_string(),
        name: broadcast.name.clone(),
        status: broadcast.status.name(),
        draft: broadcast.status == Status::Draft,
        live: matches!(broadcast.status, Status::Scheduled | Status::Sending),
        from: broadcast.from.clone(),
        subject: broadcast.subject.clone(),
        html: broadcast.html.clone().unwrap_or_default(),
        designed: broadcast.mjml.is_some(),
        text: broadcast.text.clone().unwrap_or_default(),
        segment_id: broadcast.segment_id.to_string(),
        topic_id: broadcast.topic_id.map(|t| t.to_string()).unwrap_or_default(),
        segments,
        topics,
        scheduled_at: broadcast.scheduled_at.map(super::when),
        total: broadcast.counts.total,
        sent: broadcast.counts.sent,
        unsubscribed: broadcast.counts.unsubscribed,
        suppressed: broadcast.counts.suppressed,
        failed: broadcast.counts.failed,
        canceled: broadcast.counts.canceled,
        outcomes,
        links,
        tested,
        notice,
        error,
    };
    html(status, page.render())
}
