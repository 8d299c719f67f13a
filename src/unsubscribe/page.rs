//! The unsubscribe pages: what a `GET` shows (a button that POSTs, and the public topics
//! as a form) and what the page's `POST` answers. Self-contained HTML with its style in
//! the page (the Content-Security-Policy allows inline styles and no scripts at all).

use std::fmt::Write as _;

use super::Preferences;
use crate::templates::merge::escape_html;

/// The Content-Security-Policy of these pages: no scripts, no requests anywhere, forms
/// post back here only.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;background:#f5f5f4;\
color:#1c1917;margin:0;padding:48px 16px}main{max-width:440px;margin:0 auto;background:#fff;border:1px solid #e7e5e4;\
border-radius:12px;padding:32px}h1{font-size:20px;margin:0 0 12px}p{line-height:1.5;color:#44403c}\
button{font:inherit;background:#1c1917;color:#fff;border:0;border-radius:8px;padding:10px 18px;cursor:pointer}\
fieldset{border:0;padding:0;margin:16px 0}label{display:flex;gap:10px;align-items:flex-start;padding:8px 0}\
small{display:block;color:#78716c}hr{border:0;border-top:1px solid #e7e5e4;margin:24px 0}";

fn document(title: &str, body: &str) -> String {
    let mut title_html = String::new();
    escape_html(title, &mut title_html);
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width,initial-scale=1\"><meta name=\"robots\" content=\"noindex\">\
         <title>{title_html}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>"
    )
}

fn escaped(text: &str) -> String {
    let mut out = String::new();
    escape_html(text, &mut out);
    out
}

/// The page a `GET` shows: never a change, only forms that POST.
pub fn show(preferences: &Preferences) -> String {
    let address = escaped(&preferences.address);
    let mut body = String::new();
    let what = match &preferences.topic {
        Some(topic) => format!("“{}” emails", escaped(&topic.name)),
        None => "all emails from this sender".to_owned(),
    };
    if preferences.unsubscribed {
        let _ = write!(
            body,
            "<h1>You are unsubscribed</h1><p><strong>{address}</strong> receives no more emails from this sender.</p>"
        );
    } else {
        let _ = write!(
            body,
            "<h1>Unsubscribe</h1><p>Stop sending {what} to <strong>{address}</strong>?</p>\
             <form method=\"post\"><input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
             <input type=\"hidden\" name=\"action\" value=\"unsubscribe\">\
             <button type=\"submit\" id=\"unsubscribe\">Unsubscribe</button></form>"
        );
    }
    if !preferences.topics.is_empty() {
        let _ = write!(
            body,
            "<hr><h1>Email preferences</h1><form method=\"post\" id=\"preferences\">\
             <input type=\"hidden\" name=\"action\" value=\"preferences\"><fieldset>"
        );
        for (topic, subscribed) in &preferences.topics {
            let description = topic
                .description
                .as_deref()
                .map(|d| format!("<small>{}</small>", escaped(d)))
                .unwrap_or_default();
            let _ = write!(
                body,
                "<label><input type=\"checkbox\" name=\"topic\" value=\"{}\"{}><span>{}{description}</span></label>",
                topic.id,
                if *subscribed { " checked" } else { "" },
                escaped(&topic.name),
            );
        }
        let _ = write!(
            body,
            "<label><input type=\"checkbox\" name=\"all\" value=\"on\"{}><span>Emails from this sender at all\
             <small>Untick to receive none of them</small></span></label></fieldset>\
             <button type=\"submit\">Save preferences</button></form>",
            if preferences.unsubscribed { "" } else { " checked" }
        );
    }
    document("Unsubscribe", &body)
}

/// The page the page's own forms lead to.
pub fn done(preferences: &Preferences) -> String {
    let address = escaped(&preferences.address);
    let message = if preferences.unsubscribed {
        format!(
            "<h1>You are unsubscribed</h1><p><strong>{address}</strong> receives no more emails from this sender.</p>"
        )
    } else {
        format!("<h1>Preferences saved</h1><p>The choices for <strong>{address}</strong> are saved.</p>")
    };
    document("Unsubscribed", &message)
}

/// The page of a link that is not (or no longer) valid.
pub fn invalid() -> String {
    document(
        "Link not valid",
        "<h1>This link is not valid</h1><p>Use the unsubscribe link of a recent email.</p>",
    )
}
