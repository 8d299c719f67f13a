//! SMTP replies from receiving servers and what they mean for a recipient: delivered,
//! try again later, or bounced (with Resend's bounce type and sub-type).

/// One reply: its code and the text of each line (without code and separator).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit code.
    pub code: u16,
    /// The text of each line.
    pub lines: Vec<String>,
}

/// Resend's classification of a bounce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BounceKind {
    /// `Permanent` or `Transient`.
    pub kind: &'static str,
    /// `General`, `NoEmail`, `MailboxFull`, `MessageTooLarge`, `ContentRejected`, ...
    pub sub_type: &'static str,
}

impl BounceKind {
    /// Whether the address itself is bad (`x.1.x`, a disabled mailbox, "no such user"),
    /// so it belongs on the suppression list. Other permanent refusals (policy, spam
    /// blocks, unclassified 5xx) say nothing certain about the address.
    pub fn is_hard(&self) -> bool {
        self.kind == "Permanent" && self.sub_type == "NoEmail"
    }
}

impl Reply {
    /// A reply made up by herald (a connection failure, a local refusal), in the same
    /// shape as a server's.
    pub fn local(code: u16, enhanced: &str, text: &str) -> Reply {
        Reply {
            code,
            lines: vec![format!("{enhanced} {text}")],
        }
    }

    /// Splits `250-text` / `250 text` / `250` into code, whether it is the last line, and
    /// the text.
    pub fn split_line(line: &str) -> Option<(u16, bool, &str)> {
        let code = line.get(..3)?;
        if !code.bytes().all(|b| b.is_ascii_digit()) || !(b'2'..=b'5').contains(&code.as_bytes()[0]) {
            return None;
        }
        let code = code.parse().ok()?;
        match line.as_bytes().get(3) {
            None => Some((code, true, "")),
            Some(b' ') => Some((code, true, &line[4..])),
            Some(b'-') => Some((code, false, &line[4..])),
            Some(_) => None,
        }
    }

    /// A reply from its lines as read; the last line's code is the reply's.
    pub fn from_lines(lines: Vec<(u16, String)>) -> Reply {
        let code = lines.last().map_or(451, |(code, _)| *code);
        Reply {
            code,
            lines: lines.into_iter().map(|(_, text)| text).collect(),
        }
    }

    /// 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// 4xx: try again later.
    pub fn is_transient(&self) -> bool {
        (400..500).contains(&self.code)
    }

    /// The enhanced status code (`5.1.1`) at the start of the first line, if any.
    pub fn enhanced(&self) -> Option<(u8, u16, u16)> {
        let first = self.lines.first()?.split_ascii_whitespace().next()?;
        let mut parts = first.split('.');
        let class = parts.next()?.parse().ok()?;
        let subject = parts.next()?.parse().ok()?;
        let detail = parts.next()?.parse().ok()?;
        (parts.next().is_none() && matches!(class, 2 | 4 | 5)).then_some((class, subject, detail))
    }

    /// Resend's bounce type and sub-type for a permanent refusal, from the enhanced
    /// status code where there is one (RFC 3463), else from the basic code.
    pub fn bounce_kind(&self) -> BounceKind {
        let (kind, sub_type) = match self.enhanced() {
            Some((_, 1, _)) => ("Permanent", "NoEmail"),
            Some((_, 2, 1)) => ("Permanent", "NoEmail"),
            Some((_, 2, 2)) => ("Transient", "MailboxFull"),
            Some((_, 2 | 3, 4) | (_, 2, 3)) => ("Transient", "MessageTooLarge"),
            Some((_, 6, _)) => ("Transient", "ContentRejected"),
            Some((_, 7, _)) => ("Transient", "ContentRejected"),
            Some(_) => ("Permanent", "General"),
            None => match self.code {
                552 => ("Transient", "MessageTooLarge"),
                550 | 551 | 553 => ("Permanent", "NoEmail"),
                _ => ("Permanent", "General"),
            },
        };
        BounceKind { kind, sub_type }
    }

    /// The lines joined by spaces.
    pub fn text(&self) -> String {
        self.lines.join(" ")
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.code, self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(code: u16, text: &str) -> Reply {
        Reply {
            code,
            lines: vec![text.to_owned()],
        }
    }

    #[test]
    fn lines_split_into_code_and_text() {
        assert_eq!(Reply::split_line("250-PIPELINING"), Some((250, false, "PIPELINING")));
        assert_eq!(Reply::split_line("250 OK"), Some((250, true, "OK")));
        assert_eq!(Reply::split_line("220"), Some((220, true, "")));
        assert_eq!(Reply::split_line("2500 x"), None);
        assert_eq!(Reply::split_line("hello"), None);
        assert_eq!(Reply::split_line("150 x"), None);
    }

    #[test]
    fn bounces_are_classified_by_enhanced_code() {
        let cases = [
            (550, "5.1.1 No such user", "Permanent", "NoEmail"),
            (552, "5.2.2 Mailbox full", "Transient", "MailboxFull"),
            (552, "5.3.4 Too big", "Transient", "MessageTooLarge"),
            (554, "5.7.1 Spam", "Transient", "ContentRejected"),
            (554, "5.6.0 Bad content", "Transient", "ContentRejected"),
            (554, "5.0.0 No", "Permanent", "General"),
            (550, "No such user here", "Permanent", "NoEmail"),
            (554, "Transaction failed", "Permanent", "General"),
            (552, "Too much", "Transient", "MessageTooLarge"),
        ];
        for (code, text, kind, sub_type) in cases {
            let got = reply(code, text).bounce_kind();
            assert_eq!((got.kind, got.sub_type), (kind, sub_type), "{code} {text}");
        }
    }

    #[test]
    fn enhanced_codes_need_three_numbers() {
        assert_eq!(reply(550, "5.1.1 x").enhanced(), Some((5, 1, 1)));
        assert_eq!(reply(550, "5.1 x").enhanced(), None);
        assert_eq!(reply(550, "1.1.1 x").enhanced(), None);
        assert_eq!(Reply::local(451, "4.4.1", "down").to_string(), "451 4.4.1 down");
    }
}
