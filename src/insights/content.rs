//! What the insights read in an email's HTML: its links (address and visible text), its
//! images and its text, through lol_html (the parser tracking rewrites with).

use std::cell::RefCell;

use lol_html::{RewriteStrSettings, element, rewrite_str, text};

/// One link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    /// The `href`.
    pub href: String,
    /// The text inside the link.
    pub text: String,
}

/// What the HTML holds.
#[derive(Debug, Clone, Default)]
pub struct Content {
    /// Its links.
    pub links: Vec<Link>,
    /// Its `<img>` elements.
    pub images: usize,
    /// Its visible text, as the derived text part has it.
    pub text: String,
}

/// Reads `html`.
pub fn read(html: &str) -> Content {
    let links = RefCell::new(Vec::<Link>::new());
    let images = RefCell::new(0usize);
    let settings = RewriteStrSettings {
        element_content_handlers: vec![
            element!("a[href]", |el| {
                let href = el.get_attribute("href").unwrap_or_default();
                links.borrow_mut().push(Link {
                    href,
                    text: String::new(),
                });
                Ok(())
            }),
            text!("a[href]", |chunk| {
                if let Some(last) = links.borrow_mut().last_mut() {
                    last.text.push_str(chunk.as_str());
                }
                Ok(())
            }),
            element!("img", |_| {
                *images.borrow_mut() += 1;
                Ok(())
            }),
        ],
        ..RewriteStrSettings::default()
    };
    // Only read: a document lol_html cannot parse has no links or images to report.
    let _ = rewrite_str(html, settings);
    let mut links = links.into_inner();
    for link in &mut links {
        link.text = html_unescape(link.text.trim());
    }
    Content {
        links,
        images: images.into_inner(),
        text: nanohtml2text::html2text(html),
    }
}

fn html_unescape(text: &str) -> String {
    text.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
}

/// The host of an http(s) URL, lower case, without `www.`-stripping.
pub fn host(url: &str) -> Option<String> {
    let rest = url
        .trim()
        .strip_prefix("https://")
        .or_else(|| url.trim().strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    (!host.is_empty()).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

/// The host a link's text shows, when the text looks like an address.
pub fn shown_host(text: &str) -> Option<String> {
    let text = text.trim();
    if text.contains(char::is_whitespace) || !text.contains('.') {
        return None;
    }
    let url = if text.starts_with("http://") || text.starts_with("https://") {
        text.to_owned()
    } else if text.starts_with("www.") {
        format!("https://{text}")
    } else {
        return None;
    };
    host(&url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_images_and_text_are_read() {
        let content = read(
            "<p>Hi &amp; welcome</p><a href=\"https://Shop.test/a\">Your <b>order</b></a>\
             <a href=\"https://evil.test/x\">https://shop.test/login</a><img src=\"x.png\">",
        );
        assert_eq!(content.links.len(), 2);
        assert_eq!(content.links[0].text, "Your order");
        assert_eq!(host(&content.links[0].href).as_deref(), Some("shop.test"));
        assert_eq!(shown_host(&content.links[1].text).as_deref(), Some("shop.test"));
        assert_eq!(content.images, 1);
        assert!(content.text.contains("welcome"));
        assert_eq!(host("mailto:a@b.c"), None);
        assert_eq!(shown_host("Click here"), None);
    }
}
