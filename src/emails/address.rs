//! Mailboxes: `addr@example.com` or `Name <addr@example.com>`, internationalized
//! addresses included.

use email_address::{EmailAddress, Options};

/// Longest address accepted (RFC 5321's path limit).
const ADDRESS_MAX: usize = 254;
/// Longest display name accepted.
const NAME_MAX: usize = 256;

/// A parsed mailbox.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mailbox {
    /// The display name, if any.
    pub name: Option<String>,
    /// The address, with its domain in lower case.
    pub address: String,
}

impl Mailbox {
    /// Parses `text`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Mailbox, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an address is empty".to_owned());
        }
        if text.chars().any(|c| c.is_control()) {
            return Err(format!("{text:?} contains control characters (CR, LF, NUL, ...)"));
        }
        let (name, address) = match (text.rfind('<'), text.ends_with('>')) {
            (Some(open), true) => {
                let name = text[..open].trim().trim_matches('"').trim();
                (
                    Some(name).filter(|n| !n.is_empty()),
                    text[open + 1..text.len() - 1].trim(),
                )
            }
            (None, false) => (None, text),
            _ => {
                return Err(format!(
                    "{text:?} is not a valid address; write it as addr@example.com or Name <addr@example.com>"
                ));
            }
        };
        if name.is_some_and(|n| n.chars().count() > NAME_MAX) {
            return Err(format!(
                "the display name of {text:?} is longer than {NAME_MAX} characters"
            ));
        }
        if address.len() > ADDRESS_MAX {
            return Err(format!("{address:?} is longer than {ADDRESS_MAX} bytes"));
        }
        let options = Options::default()
            .with_required_tld()
            .without_domain_literal()
            .without_display_text();
        EmailAddress::parse_with_options(address, options)
            .map_err(|e| format!("{address:?} is not a valid email address ({e})"))?;
        let Some((local, domain)) = address.rsplit_once('@') else {
            return Err(format!("{address:?} has no domain"));
        };
        Ok(Mailbox {
            name: name.map(str::to_owned),
            address: format!("{local}@{}", domain.to_lowercase()),
        })
    }

    /// The domain part, lower case.
    pub fn domain(&self) -> &str {
        self.address.rsplit_once('@').map_or("", |(_, domain)| domain)
    }

    /// The mailbox as written in a header: `Name <addr>` or `addr`.
    pub fn display(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} <{}>", self.address),
            None => self.address.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_named_addresses_parse() {
        let plain = Mailbox::parse("a@Example.COM").expect("plain");
        assert_eq!((plain.name.as_deref(), plain.address.as_str()), (None, "a@example.com"));
        let named = Mailbox::parse("Acme Team <team@acme.test>").expect("named");
        assert_eq!(named.name.as_deref(), Some("Acme Team"));
        assert_eq!(named.domain(), "acme.test");
        let quoted = Mailbox::parse("\"Doe, Jane\" <jane@acme.test>").expect("quoted");
        assert_eq!(quoted.name.as_deref(), Some("Doe, Jane"));
        assert_eq!(quoted.display(), "Doe, Jane <jane@acme.test>");
    }

    #[test]
    fn internationalized_addresses_parse() {
        let idn = Mailbox::parse("用户@例子.广告").expect("EAI");
        assert_eq!(idn.domain(), "例子.广告");
        assert!(Mailbox::parse("josé@exámple.test").is_ok());
    }

    #[test]
    fn bad_addresses_are_refused_with_a_reason() {
        for bad in [
            "",
            "nope",
            "a@",
            "@b.test",
            "a b@c.test",
            "Name <a@b.test",
            "a@localhost",
            "x@[127.0.0.1]",
            "a@b.test\r\nBcc: evil@x.test",
        ] {
            assert!(Mailbox::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Mailbox::parse(&format!("{}@b.test", "a".repeat(300))).is_err());
    }
}
