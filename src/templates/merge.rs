//! The merge language of templates: Resend's triple braces, `{{{KEY}}}` and
//! `{{{KEY|fallback}}}`, and nothing else (everything outside them is literal text).
//! A template is parsed once, when it is saved (a template that does not parse is
//! refused there, with the position), and rendered many times. Rendering is pure: a
//! lookup gives each variable's value, and values are HTML-escaped in HTML, so no value
//! can add markup in element text or a quoted attribute value; [`check_html`] refuses,
//! when a template is saved, a variable anywhere else inside a tag.

use std::borrow::Cow;

/// Longest variable name, in bytes.
pub const KEY_MAX: usize = 50;

/// Longest inline fallback (`{{{KEY|fallback}}}`), in bytes.
pub const FALLBACK_MAX: usize = 2_000;

/// Longest rendered part, in bytes: a template of 1 MiB whose variables hold long values
/// must not make a render allocate without bound.
pub const RENDERED_MAX: usize = 4 * 1024 * 1024;

const OPEN: &str = "{{{";
const CLOSE: &str = "}}}";

/// A parsed template: literal text and variables, in order. Each distinct variable has a
/// slot, so a render looks each one up and escapes it once, however often it is used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    parts: Vec<Part>,
    /// The distinct variable names, by slot, in order of first use.
    names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Variable { slot: usize, fallback: Option<String> },
}

/// Why a template does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct ParseError {
    /// Byte offset of the offending `{{{`.
    pub offset: usize,
    /// Its line, from 1.
    pub line: usize,
    /// Its column in characters, from 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// How values are written into the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// As they are (subjects, text parts).
    None,
    /// HTML-escaped (HTML parts).
    Html,
}

/// Why a render failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A variable the template uses has no value and no fallback.
    #[error("the variable {0} has no value and no fallback")]
    Missing(String),
    /// The output would pass [`RENDERED_MAX`].
    #[error("the rendered text would be longer than {RENDERED_MAX} bytes")]
    TooLarge,
}

/// Parses `source`.
pub fn parse(source: &str) -> Result<Parsed, ParseError> {
    let mut parts = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut rest = 0;
    while let Some(found) = source[rest..].find(OPEN) {
        let open = rest + found;
        if open > rest {
            parts.push(Part::Text(source[rest..open].to_owned()));
        }
        let inner_start = open + OPEN.len();
        let Some(length) = source[inner_start..].find(CLOSE) else {
            return Err(error(source, open, "`{{{` is never closed by `}}}`".to_owned()));
        };
        let inner = &source[inner_start..inner_start + length];
        if inner.contains(OPEN) {
            return Err(error(
                source,
                open,
                "a `{{{` inside `{{{...}}}`: a fallback cannot hold a variable".to_owned(),
            ));
        }
        let (name, fallback) = match inner.split_once('|') {
            Some((name, fallback)) => (name.trim(), Some(fallback.trim())),
            None => (inner.trim(), None),
        };
        if let Err(why) = check_name(name) {
            return Err(error(source, open, why));
        }
        if fallback.is_some_and(|f| f.len() > FALLBACK_MAX) {
            return Err(error(
                source,
                open,
                format!("the fallback of {name} is longer than {FALLBACK_MAX} bytes"),
            ));
        }
        let slot = names.iter().position(|n| n == name).unwrap_or_else(|| {
            names.push(name.to_owned());
            names.len() - 1
        });
        parts.push(Part::Variable {
            slot,
            fallback: fallback.map(str::to_owned),
        });
        rest = inner_start + length + CLOSE.len();
    }
    if rest < source.len() {
        parts.push(Part::Text(source[rest..].to_owned()));
    }
    Ok(Parsed { parts, names })
}

/// Whether `name` may name a variable: letters, digits and `_`, with `.` between parts
/// (`contact.first_name`), at most [`KEY_MAX`] bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a variable needs a name, as in {{{FIRST_NAME}}}".to_owned());
    }
    if name.len() > KEY_MAX {
        return Err(format!("the variable name {name:?} is longer than {KEY_MAX} bytes"));
    }
    let valid = name
        .split('.')
        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    if !valid {
        return Err(format!(
            "{name:?} is not a variable name (letters, digits and _, parts joined by .)"
        ));
    }
    Ok(())
}

fn error(source: &str, offset: usize, message: String) -> ParseError {
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ParseError {
        offset,
        line,
        column,
        message,
    }
}

impl Parsed {
    /// The variables used, in order of first use.
    pub fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The variables used at least once without an inline fallback: those a render needs
    /// a value for.
    pub fn required(&self) -> Vec<&str> {
        let mut required: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let Part::Variable { slot, fallback: None } = part {
                let name = self.names[*slot].as_str();
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
        required
    }

    /// Renders with each variable's value from `lookup`, else its inline fallback; a
    /// variable with neither is [`RenderError::Missing`].
    pub fn render<'v>(
        &self,
        escape: Escape,
        lookup: impl Fn(&str) -> Option<Cow<'v, str>>,
    ) -> Result<String, RenderError> {
        // Each variable once: looked up, escaped, then copied wherever it is used.
        let values: Vec<Option<Cow<'v, str>>> = self
            .names
            .iter()
            .map(|name| {
                lookup(name).map(|value| match escape {
                    Escape::None => value,
                    Escape::Html => escaped(value),
                })
            })
            .collect();
        // The size is known before anything is allocated: a fallback counts at its
        // longest escaped length (six bytes a character).
        let mut size: usize = 0;
        for part in &self.parts {
            let len = match part {
                Part::Text(text) => text.len(),
                Part::Variable { slot, fallback } => match (&values[*slot], fallback) {
                    (Some(value), _) => value.len(),
                    (None, Some(fallback)) => fallback.len().saturating_mul(6),
                    (None, None) => 0,
                },
            };
            size = size.saturating_add(len);
            if size > RENDERED_MAX.saturating_mul(6) {
                return Err(RenderError::TooLarge);
            }
        }
        let mut out = String::with_capacity(size);
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Variable { slot, fallback } => match (&values[*slot], fallback) {
                    (Some(value), _) => out.push_str(value),
                    (None, Some(fallback)) => match escape {
                        Escape::None => out.push_str(fallback),
                        Escape::Html => escape_html(fallback, &mut out),
                    },
                    (None, None) => return Err(RenderError::Missing(self.names[*slot].clone())),
                },
            }
            if out.len() > RENDERED_MAX {
                return Err(RenderError::TooLarge);
            }
        }
        Ok(out)
    }
}

/// `value` HTML-escaped, borrowed when there is nothing to escape.
fn escaped(value: Cow<'_, str>) -> Cow<'_, str> {
    if !value.bytes().any(|b| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'')) {
        return value;
    }
    let mut out = String::with_capacity(value.len() + 16);
    escape_html(&value, &mut out);
    Cow::Owned(out)
}

/// Appends `text` to `out` with `&`, `<`, `>`, `"` and `'` as character references, so
/// it reads as text in element content and in quoted attributes alike.
pub fn escape_html(text: &str, out: &mut String) {
    let mut last = 0;
    for (at, byte) in text.bytes().enumerate() {
        let entity = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&text[last..at]);
        out.push_str(entity);
        last = at + 1;
    }
    out.push_str(&text[last..]);
}

/// Checks that every variable of `html` sits in element text or inside a quoted
/// attribute value, where escaping keeps its value text: a variable elsewhere in a tag
/// (`<a href={{{URL}}}>`, `<p {{{ATTRS}}}>`) could add attributes, and is refused with its
/// position.
pub fn check_html(html: &str) -> Result<(), ParseError> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Text,
        Tag,
        Quoted(u8),
        Comment,
    }
    let bytes = html.as_bytes();
    let mut state = State::Text;
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        match state {
            State::Text if rest.starts_with(b"<!--") => {
                state = State::Comment;
                at += 4;
                continue;
            }
            State::Text if rest[0] == b'<' && rest.get(1).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'/') => {
                state = State::Tag;
            }
            State::Comment if rest.starts_with(b"-->") => {
                state = State::Text;
                at += 3;
                continue;
            }
            State::Tag if rest.starts_with(OPEN.as_bytes()) => {
                return Err(error(
                    html,
                    at,
                    "a variable inside a tag must be inside a quoted attribute value, as in href=\"{{{URL}}}\""
                        .to_owned(),
                ));
            }
            State::Tag if rest[0] == b'"' || rest[0] == b'\'' => state = State::Quoted(rest[0]),
            State::Tag if rest[0] == b'>' => state = State::Text,
            State::Quoted(quote) if rest[0] == quote => state = State::Tag,
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

#[doc(hidden)]
/// The fuzz target's entry: parse anything, render what parses with every variable set
/// to the input itself.
pub fn fuzz(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = parse(source) {
        let _ = parsed.render(Escape::Html, |_| Some(Cow::Borrowed(source)));
        let _ = parsed.render(Escape::None, |_| None);
    }
    let _ = check_html(source);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn render(source: &str, vars: &[(&str, &str)], escape: Escape) -> Result<String, RenderError> {
        parse(source).expect("parses").render(escape, |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| Cow::Owned((*v).to_owned()))
        })
    }

    #[test]
    fn variables_take_values_then_fallbacks() {
        let vars = [("NAME", "Ann"), ("contact.first_name", "Bo")];
        assert_eq!(
            render("Hi {{{ NAME }}}, {{{contact.first_name}}}!", &vars, Escape::None),
            Ok("Hi Ann, Bo!".into())
        );
        assert_eq!(
            render("Hi {{{CITY|there}}}", &vars, Escape::None),
            Ok("Hi there".into())
        );
        assert_eq!(
            render("{{{CITY}}}", &vars, Escape::None),
            Err(RenderError::Missing("CITY".into()))
        );
        let huge = parse(&"{{{A}}}".repeat(1_000)).expect("parses");
        let value = "x".repeat(10_000);
        assert_eq!(
            huge.render(Escape::None, |_| Some(Cow::Borrowed(value.as_str()))),
            Err(RenderError::TooLarge)
        );
        assert!(parse("{{{A|{{{B}}}}}}").is_err(), "a fallback holds no variable");
        assert_eq!(
            render("{{not one}} {x}", &[], Escape::None),
            Ok("{{not one}} {x}".into())
        );
        assert_eq!(
            parse("a {{{A}}} {{{B|b}}} {{{A}}}").expect("parses").names(),
            ["A", "B"]
        );
    }

    #[test]
    fn values_are_escaped_in_html_only() {
        let vars = [("X", "<b>\"Tom\" & 'Jerry'</b>")];
        assert_eq!(
            render("<p title=\"{{{X}}}\">{{{X}}}</p>", &vars, Escape::Html),
            Ok("<p title=\"&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;\">&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;</p>".into())
        );
        assert_eq!(render("{{{X}}}", &vars, Escape::None), Ok(vars[0].1.into()));
    }

    #[test]
    fn bad_templates_say_where() {
        let err = parse("line one\n  hello {{{NAME").expect_err("unclosed");
        assert_eq!((err.line, err.column, err.offset), (2, 9, 17));
        assert!(err.to_string().contains("never closed"), "{err}");
        assert!(parse("{{{}}}").is_err());
        assert!(parse("{{{a b}}}").is_err());
        assert!(parse("{{{a..b}}}").is_err());
        assert!(parse(&format!("{{{{{{{}}}}}}}", "k".repeat(KEY_MAX + 1))).is_err());
    }

    fn unescape(text: &str) -> String {
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    proptest! {
        #[test]
        fn rendering_never_panics(source in ".*", value in ".*") {
            if let Ok(parsed) = parse(&source) {
                let _ = parsed.render(Escape::Html, |_| Some(Cow::Borrowed(value.as_str())));
            }
        }

        #[test]
        fn escaping_round_trips(text in ".*") {
            let mut out = String::new();
            escape_html(&text, &mut out);
            prop_assert_eq!(unescape(&out), text);
        }

        #[test]
        fn no_value_adds_markup(value in ".*") {
            let out = render("<p class=\"{{{V}}}\">{{{V}}}</p>", &[("V", &value)], Escape::Html).expect("renders");
            prop_assert_eq!(out.matches('<').count(), 2);
            prop_assert_eq!(out.matches('>').count(), 2);
            prop_assert_eq!(out.matches('"').count(), 2);
        }

        #[test]
        fn text_without_braces_is_itself(text in "[^{]*") {
            prop_assert_eq!(render(&text, &[], Escape::Html), Ok(text));
        }
    }
}
