//! Replies: a code, an enhanced status code (RFC 3463) and one or more lines of text.

use std::fmt::Write as _;

/// One SMTP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit code.
    pub code: u16,
    /// The enhanced status code, such as `2.1.0`; `None` for the greeting and EHLO.
    pub enhanced: Option<&'static str>,
    /// The text, one entry per line; at least one.
    pub lines: Vec<String>,
}

impl Reply {
    /// A one-line reply.
    pub fn new(code: u16, enhanced: &'static str, text: impl Into<String>) -> Reply {
        Reply {
            code,
            enhanced: Some(enhanced),
            lines: vec![text.into()],
        }
    }

    /// A reply without an enhanced code (greeting, EHLO).
    pub fn plain(code: u16, lines: Vec<String>) -> Reply {
        Reply {
            code,
            enhanced: None,
            lines,
        }
    }

    /// Whether the code is a success (2xx or 3xx).
    pub fn is_positive(&self) -> bool {
        self.code < 400
    }

    /// The reply on the wire: `250-first` ... `250 last`, each line CRLF-terminated, the
    /// enhanced code repeated on every line as RFC 2034 asks. Text is stripped of CR and
    /// LF so that no reply can inject another.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        let last = self.lines.len().saturating_sub(1);
        let lines: Vec<&str> = if self.lines.is_empty() {
            vec![""]
        } else {
            self.lines.iter().map(String::as_str).collect()
        };
        for (i, line) in lines.iter().enumerate() {
            let separator = if i == last { ' ' } else { '-' };
            let clean: String = line.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            let _ = match self.enhanced {
                Some(enhanced) => write!(out, "{}{separator}{enhanced} {clean}\r\n", self.code),
                None => write!(out, "{}{separator}{clean}\r\n", self.code),
            };
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_multi_line_replies() {
        assert_eq!(Reply::new(250, "2.1.0", "OK").to_bytes(), b"250 2.1.0 OK\r\n");
        let ehlo = Reply::plain(250, vec!["mail.test".into(), "PIPELINING".into(), "SIZE 100".into()]);
        assert_eq!(ehlo.to_bytes(), b"250-mail.test\r\n250-PIPELINING\r\n250 SIZE 100\r\n");
        let injected = Reply::new(550, "5.7.1", "no\r\n250 OK");
        assert_eq!(injected.to_bytes(), b"550 5.7.1 no250 OK\r\n");
        assert!(!Reply::new(451, "4.3.0", "later").is_positive());
    }
}
