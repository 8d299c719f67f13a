//! Rewriting a message's bodies for tracking, once, at acceptance: every `http(s)` link
//! of the HTML part through a streaming HTML rewriter (`lol_html`: attributes are
//! parsed, never matched by pattern), the open pixel before `</body>`, and the URLs of a
//! text-only message.

use std::cell::{Cell, RefCell};

use lol_html::html_content::ContentType;
use lol_html::{RewriteStrSettings, element, end, rewrite_str};

/// Makes the tracked URL of link `index` leading to `target`, or `None` to leave it.
pub type Click<'a> = &'a dyn Fn(u16, &str) -> Option<String>;

/// Why an HTML part could not be rewritten (it is then sent as it was).
#[derive(Debug, thiserror::Error)]
#[error("cannot rewrite the HTML for tracking: {0}")]
pub struct RewriteError(String);

/// Whether `href` is a link to follow: `http:` or `https:`, not `mailto:`, not an anchor.
fn trackable(href: &str) -> bool {
    let href = href.trim_start();
    href.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        || href.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"))
}

/// `html` with each trackable link's `href` replaced through `click` (when given) and
/// `pixel` (an image URL, when given) before `</body>`, or at the end when there is none.
pub fn html(html: &str, click: Option<Click<'_>>, pixel: Option<&str>) -> Result<String, RewriteError> {
    let index = Cell::new(0u16);
    let body_seen = Cell::new(false);
    let failed: RefCell<Option<String>> = RefCell::new(None);
    let image = pixel.map(|url| {
        format!(
            "<img src=\"{}\" width=\"1\" height=\"1\" alt=\"\" style=\"display:block;border:0;width:1px;height:1px\">",
            attribute(url)
        )
    });
    let mut elements = Vec::new();
    if let Some(click) = click {
        elements.push(element!("a[href]", |el| {
            let Some(href) = el.get_attribute("href") else {
                return Ok(());
            };
            if !trackable(&href) {
                return Ok(());
            }
            let at = index.get();
            index.set(at.saturating_add(1));
            // The attribute as written: `&amp;` in the HTML is `&` in the URL followed.
            if let Some(url) = click(at, &unescape(href.trim()))
                && let Err(error) = el.set_attribute("href", &url)
            {
                *failed.borrow_mut() = Some(error.to_string());
            }
            Ok(())
        }));
    }
    if let Some(image) = &image {
        elements.push(element!("body", |el| {
            body_seen.set(true);
            el.append(image, ContentType::Html);
            Ok(())
        }));
    }
    let mut document = Vec::new();
    if let Some(image) = &image {
        document.push(end!(|end| {
            if !body_seen.get() {
                end.append(image, ContentType::Html);
            }
            Ok(())
        }));
    }
    let out = rewrite_str(
        html,
        RewriteStrSettings {
            element_content_handlers: elements,
            document_content_handlers: document,
            ..RewriteStrSettings::new()
        },
    )
    .map_err(|e| RewriteError(e.to_string()))?;
    match failed.into_inner() {
        Some(why) => Err(RewriteError(why)),
        None => Ok(out),
    }
}

/// `text` with each `http(s)://` URL replaced through `click`. A URL ends at white
/// space or `<`, `>`, `"`, and loses trailing punctuation (`.`, `,`, `)`, ...).
pub fn text(text: &str, click: Click<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut index = 0u16;
    while let Some(start) = find_url(rest) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"'))
            .unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '\'']);
        match click(index, url) {
            Some(tracked) => out.push_str(&tracked),
            None => out.push_str(url),
        }
        index = index.saturating_add(1);
        rest = &tail[url.len()..];
    }
    out.push_str(rest);
    out
}

fn find_url(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    match (lower.find("http://"), lower.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An attribute value's character references decoded: the named ones a URL can hold
/// (`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`) and numeric ones. Anything else stays
/// as written.
fn unescape(value: &str) -> String {
    if !value.contains('&') {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let decoded = tail.find(';').filter(|end| *end <= 10).and_then(|end| {
            let name = &tail[1..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                    .and_then(char::from_u32),
            }?;
            Some((c, end + 1))
        });
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &tail[used..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` for a double-quoted attribute.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracked(index: u16, target: &str) -> Option<String> {
        Some(format!("https://t.test/{index}?u={target}"))
    }

    #[test]
    fn links_are_rewritten_and_the_pixel_added() {
        let source = "<html><body><a href=\"https://a.test/x\">A</a> <a href='mailto:x@y'>m</a> <a href=\"#top\">t</a> <A HREF=\"HTTP://b.test\">B</A></body></html>";
        let out = html(source, Some(&tracked), Some("https://t.test/o")).expect("rewrites");
        assert!(out.contains("href=\"https://t.test/0?u=https://a.test/x\""), "{out}");
        assert!(out.contains("\"https://t.test/1?u=HTTP://b.test\""), "{out}");
        assert!(out.contains("mailto:x@y") && out.contains("#top"), "{out}");
        assert!(
            out.contains("<img src=\"https://t.test/o\"") && out.ends_with("</body></html>"),
            "{out}"
        );
        let fragment = html("<p>no body</p>", None, Some("https://t.test/o")).expect("rewrites");
        assert!(fragment.starts_with("<p>no body</p><img"), "{fragment}");
    }

    #[test]
    fn attribute_references_are_decoded() {
        assert_eq!(
            unescape("https://a.test/?a=1&amp;b=2&#38;c=&#x33;"),
            "https://a.test/?a=1&b=2&c=3"
        );
        assert_eq!(unescape("a&b &unknown; &amp"), "a&b &unknown; &amp");
    }

    #[test]
    fn text_urls_are_rewritten_without_their_punctuation() {
        let out = text("See https://a.test/x. Or (http://b.test/y), or none.", &tracked);
        assert_eq!(
            out,
            "See https://t.test/0?u=https://a.test/x. Or (https://t.test/1?u=http://b.test/y), or none."
        );
    }
}
