//! Sanitising the HTML of a design: what a mail client could run or that reaches
//! beyond the message goes (scripts, frames, plug-ins, forms, `on*` handlers, `javascript:`
//! and other non-web URLs), what an email is made of stays (tables, inline styles,
//! `<style>` in the head, conditional comments, merge tags). Attributes are parsed by a
//! streaming HTML rewriter (`lol_html`), never matched by pattern.

use lol_html::{RewriteStrSettings, element, rewrite_str};

/// Elements removed with their content.
const REMOVED: &str = "script, iframe, frame, frameset, object, embed, applet, form, input, button, \
    select, textarea, base, meta[http-equiv], portal, template, math";

/// Attributes holding a URL.
const URL_ATTRIBUTES: [&str; 7] = [
    "href",
    "src",
    "action",
    "background",
    "poster",
    "formaction",
    "xlink:href",
];

/// URL schemes a link or image in an email may use.
const SCHEMES: [&str; 5] = ["http", "https", "mailto", "tel", "cid"];

/// `html` without what a mail client could run. Keeps the input when the rewriter
/// cannot read it at all (the compiler's own output always reads).
pub fn sanitise(html: &str) -> String {
    let handlers = vec![
        element!(REMOVED, |el| {
            el.remove();
            Ok(())
        }),
        element!("*", |el| {
            let names: Vec<String> = el.attributes().iter().map(|a| a.name()).collect();
            for name in names {
                let value = el.get_attribute(&name).unwrap_or_default();
                let drop = name.starts_with("on")
                    || name == "srcdoc"
                    || name == "srcset" && !value.split(',').all(|c| safe_url(c.trim(), false))
                    || URL_ATTRIBUTES.contains(&name.as_str()) && !safe_url(&value, name == "src")
                    || name == "style" && unsafe_style(&value);
                if drop {
                    el.remove_attribute(&name);
                }
            }
            Ok(())
        }),
    ];
    rewrite_str(
        html,
        RewriteStrSettings {
            element_content_handlers: handlers,
            ..RewriteStrSettings::new()
        },
    )
    .unwrap_or_else(|error| {
        tracing::warn!(%error, "a design's HTML could not be sanitised; its scripts are escaped instead");
        html.replace("<script", "&lt;script")
    })
}

/// Whether `value` (an attribute as written) is a relative URL, a merge tag, or uses
/// one of [`SCHEMES`] (or, for an image, `data:image/`).
fn safe_url(value: &str, image: bool) -> bool {
    let decoded = decode(value);
    let Some((scheme, rest)) = decoded.split_once(':') else {
        return true;
    };
    if scheme.contains(['/', '?', '#']) || scheme.starts_with("{{") {
        // A colon after the path began (`/a:b`), or inside a merge tag's fallback.
        return true;
    }
    let scheme = scheme.to_ascii_lowercase();
    SCHEMES.contains(&scheme.as_str()) || image && scheme == "data" && rest.to_ascii_lowercase().starts_with("image/")
}

/// Whether an inline style could run something (old IE's `expression()`, `behavior`,
/// `-moz-binding`) or load a non-web URL.
fn unsafe_style(style: &str) -> bool {
    let style = decode(style).to_ascii_lowercase();
    style.contains("expression(")
        || style.contains("behavior:")
        || style.contains("-moz-binding")
        || style.contains("javascript:")
        || style.contains("vbscript:")
}

/// `value` with character references decoded (the ones a scheme could hide behind) and
/// ASCII white space and control characters removed, as a browser reads a URL.
fn decode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (decoded, used) = reference(rest);
        match decoded {
            Some(c) => out.push(c),
            None => out.push('&'),
        }
        rest = &rest[used..];
    }
    out.push_str(rest);
    out.retain(|c| !c.is_ascii_whitespace() && !c.is_ascii_control());
    out
}

/// The character `text` (starting at `&`) refers to and the bytes the reference takes.
fn reference(text: &str) -> (Option<char>, usize) {
    let body = &text[1..];
    let end = body
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
        .unwrap_or(body.len());
    let name = &body[..end];
    let used = 1 + end + usize::from(body[end..].starts_with(';'));
    let decoded = if let Some(number) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
        u32::from_str_radix(number, 16).ok().and_then(char::from_u32)
    } else if let Some(number) = name.strip_prefix('#') {
        number.parse().ok().and_then(char::from_u32)
    } else {
        match name {
            "colon" => Some(':'),
            "Tab" => Some('\t'),
            "NewLine" => Some('\n'),
            "lpar" => Some('('),
            _ => None,
        }
    };
    match decoded {
        Some(c) => (Some(c), used),
        None => (None, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_what_could_run() {
        let dirty = "<html><head><style>p{color:red}</style><base href=\"https://evil.test/\"></head><body>\
            <p onclick=\"x()\" style=\"color:blue\">Hi</p><script>alert(1)</script><iframe src=\"https://x.test\"></iframe>\
            <a href=\" java&#x09;script&colon;alert(1)\">a</a><a href=\"&#106;avascript:alert(1)\">b</a>\
            <a href=\"https://ok.test/a:b\">c</a><a href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">u</a><a href=\"mailto:a@b.test\">m</a>\
            <img src=\"data:image/png;base64,AAAA\"><img src=\"data:text/html,<b>\"><div style=\"width:expression(alert(1))\">d</div>\
            <!--[if mso]><table><tr><td><![endif]--><form action=\"https://x.test\"><input name=q></form></body></html>";
        let clean = sanitise(dirty);
        for gone in [
            "<script",
            "<iframe",
            "onclick",
            "javascript",
            "&colon;",
            "<base",
            "data:text",
            "expression",
            "<form",
            "<input",
        ] {
            assert!(!clean.contains(gone), "{gone} in {clean}");
        }
        for kept in [
            "<style>p{color:red}</style>",
            "style=\"color:blue\"",
            "href=\"https://ok.test/a:b\"",
            "href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\"",
            "href=\"mailto:a@b.test\"",
            "src=\"data:image/png;base64,AAAA\"",
            "<!--[if mso]>",
        ] {
            assert!(clean.contains(kept), "{kept} not in {clean}");
        }
    }
}
