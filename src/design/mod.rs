//! Designs: emails composed in the dashboard's no-code editor, kept as MJML beside the
//! HTML compiled from it. The server compiles the MJML itself (`mrml`), so a stored design
//! renders without a browser and the editor's own output is never trusted: what is kept
//! is what [`compile`] made of the MJML, sanitised ([`sanitise`]).
//!
//! The compiled HTML imports no web fonts (MJML's defaults would pull Google Fonts into
//! every email): a design that wants one says so with `<mj-font>`.

mod sanitise;

pub use sanitise::sanitise;

use mrml::prelude::parser::{Error as ParseError, ParserOptions};
use mrml::prelude::render::RenderOptions;

/// Largest MJML accepted, in bytes (Gmail clips HTML past 102 KB; designs stay well below).
pub const MJML_MAX: usize = 512 * 1024;

/// Why a design was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignError {
    /// The MJML does not parse; `line` and `column` (1-based, column in characters) point
    /// at the fault.
    #[error("The design's MJML does not compile: {message} at line {line}, column {column}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// The line.
        line: usize,
        /// The column.
        column: usize,
    },
    /// The MJML parses but does not render, or is not MJML at all.
    #[error("The design's MJML does not compile: {0}")]
    Invalid(String),
    /// Over [`MJML_MAX`].
    #[error("The design is {0} bytes; the most is {MJML_MAX}")]
    TooLarge(usize),
}

/// A design compiled: the sanitised HTML of the MJML it came from. Only [`compile`]
/// makes one, so a service given one knows the HTML is the server's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    mjml: String,
    html: String,
}

impl Compiled {
    /// The MJML, as given.
    pub fn mjml(&self) -> &str {
        &self.mjml
    }

    /// The HTML compiled from it, sanitised.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// The MJML and the HTML.
    pub fn into_parts(self) -> (String, String) {
        (self.mjml, self.html)
    }
}

/// Compiles `mjml` to sanitised HTML, or says where it is wrong.
pub fn compile(mjml: &str) -> Result<Compiled, DesignError> {
    if mjml.len() > MJML_MAX {
        return Err(DesignError::TooLarge(mjml.len()));
    }
    if !mjml.trim_start().starts_with("<mjml") {
        return Err(DesignError::Invalid("a design starts with <mjml>".into()));
    }
    unknown_element(mjml)?;
    let parsed = mrml::parse_with_options(mjml, &ParserOptions::default()).map_err(|e| located(mjml, &e))?;
    let options = RenderOptions {
        disable_comments: true,
        fonts: Default::default(),
        ..RenderOptions::default()
    };
    let html = parsed
        .element
        .render(&options)
        .map_err(|e| DesignError::Invalid(e.to_string()))?;
    Ok(Compiled {
        mjml: mjml.to_owned(),
        html: sanitise(&html),
    })
}

/// MJML's elements (mrml renders an unknown `mj-` element as if it were HTML).
const ELEMENTS: [&str; 35] = [
    "accordion",
    "accordion-element",
    "accordion-text",
    "accordion-title",
    "attributes",
    "all",
    "class",
    "body",
    "breakpoint",
    "button",
    "carousel",
    "carousel-image",
    "column",
    "divider",
    "font",
    "group",
    "head",
    "hero",
    "image",
    "include",
    "navbar",
    "navbar-link",
    "preview",
    "raw",
    "section",
    "social",
    "social-element",
    "spacer",
    "style",
    "table",
    "text",
    "title",
    "wrapper",
    "html-attributes",
    "selector",
];

/// Refuses the first `<mj-...>` element MJML does not have, with its position.
fn unknown_element(source: &str) -> Result<(), DesignError> {
    for (at, _) in source.match_indices("<mj-") {
        let name: String = source[at + 4..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !ELEMENTS.contains(&name.as_str()) {
            let (line, column) = line_column(source, at);
            return Err(DesignError::Syntax {
                message: format!("unknown element <mj-{name}>"),
                line,
                column,
            });
        }
    }
    Ok(())
}

/// `error` with its position as a line and column of `source`.
fn located(source: &str, error: &ParseError) -> DesignError {
    let offset = match error {
        ParseError::UnexpectedElement { position, .. }
        | ParseError::UnexpectedToken { position, .. }
        | ParseError::MissingAttribute { position, .. }
        | ParseError::InvalidAttribute { position, .. }
        | ParseError::InvalidFormat { position, .. }
        | ParseError::IncludeLoaderError { position, .. } => Some(position.start),
        ParseError::EndOfStream { .. } => Some(source.len()),
        ParseError::ParserError { source: inner, .. } => {
            let at = inner.pos();
            return DesignError::Syntax {
                message: describe(error),
                line: at.row as usize,
                column: at.col as usize,
            };
        }
        ParseError::SizeLimit { .. } | ParseError::NoRootNode => None,
    };
    match offset {
        Some(offset) => {
            let (line, column) = line_column(source, offset);
            DesignError::Syntax {
                message: describe(error),
                line,
                column,
            }
        }
        None => DesignError::Invalid(describe(error)),
    }
}

/// `error`'s words without mrml's own byte span (the answer gives a line and column).
fn describe(error: &ParseError) -> String {
    let words = match error {
        // htmlparser's words: "invalid attribute at 3:12 cause unexpected end of stream".
        ParseError::ParserError { source, .. } => {
            let words = source.to_string();
            match (words.find(" at "), words.find(" cause ")) {
                (Some(at), Some(cause)) if at < cause => format!("{}, {}", &words[..at], &words[cause + 7..]),
                _ => words,
            }
        }
        other => other.to_string(),
    };
    match words.find(" at position ") {
        Some(cut) => words[..cut].to_owned(),
        None => words,
    }
}

/// The 1-based line and character column of byte `offset` in `source`.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_a_design_without_web_fonts() {
        let design = "<mjml><mj-body><mj-section><mj-column><mj-text font-family=\"Ubuntu\">Hi {{{FIRST_NAME|there}}}</mj-text>\
            <mj-button href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\">Unsubscribe</mj-button></mj-column></mj-section></mj-body></mjml>";
        let compiled = compile(design).expect("compiles");
        assert!(compiled.html.contains("Hi {{{FIRST_NAME|there}}}"), "{}", compiled.html);
        assert!(compiled.html.contains("href=\"{{{RESEND_UNSUBSCRIBE_URL}}}\""));
        assert!(!compiled.html.contains("fonts.googleapis.com"));
        assert_eq!(compiled.mjml, design);
    }

    #[test]
    fn a_fault_is_placed_by_line_and_column() {
        let design = "<mjml>\n  <mj-body>\n    <mj-section><mj-colum></mj-colum></mj-section>\n  </mj-body>\n</mjml>";
        match compile(design) {
            Err(DesignError::Syntax { line, column, message }) => {
                assert_eq!((line, column), (3, 17), "{message}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
        let quote = "<mjml>\n<mj-body>\n<mj-section padding=\"10px>\n</mj-section></mj-body></mjml>";
        assert_eq!(
            compile(quote),
            Err(DesignError::Syntax {
                message: "invalid attribute, unexpected end of stream".into(),
                line: 3,
                column: 12
            })
        );
        let unclosed = "<mjml>\n<mj-body>\n<mj-section>\n<mj-column>\n</mj-section></mj-body></mjml>";
        match compile(unclosed) {
            Err(DesignError::Syntax { line, message, .. }) => assert_eq!(line, 5, "{message}"),
            other => panic!("expected a syntax error, got {other:?}"),
        }
        assert!(matches!(compile("<p>not mjml</p>"), Err(DesignError::Invalid(_))));
        assert!(matches!(
            compile(&format!("<mjml>{}</mjml>", " ".repeat(MJML_MAX))),
            Err(DesignError::TooLarge(_))
        ));
    }

    #[test]
    fn raw_html_is_sanitised() {
        let design = "<mjml><mj-body><mj-raw><script>alert(1)</script><a href=\"javascript:alert(1)\" onclick=\"x()\">x</a></mj-raw></mj-body></mjml>";
        let compiled = compile(design).expect("compiles");
        assert!(!compiled.html.contains("<script"), "{}", compiled.html);
        assert!(!compiled.html.contains("javascript:"));
        assert!(!compiled.html.contains("onclick"));
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_column("é\nab", 4), (2, 2));
        assert_eq!(line_column("abc", 1), (1, 2));
    }
}
