//! Replies: a code, an enhanced status code (RFC 3463) and one or more lines of text.

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
        let mut out = Vec::new();
        self.write_to(&mut out);
        out
    }

    /// Appends the reply as [`Reply::to_bytes`] makes it to `out`, without a buffer of its
    /// own: a session's replies to a pipelined group go out in one write.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut digits = [0; 5];
        let digits = match self.code {
            // Every SMTP code has three digits, written without formatting machinery.
            code @ 100..=999 => {
                digits[..3].copy_from_slice(&[
                    b'0' + (code / 100) as u8,
                    b'0' + (code / 10 % 10) as u8,
                    b'0' + (code % 10) as u8,
                ]);
                &digits[..3]
            }
            // Anything else is written as it is.
            code => {
                let text = code.to_string();
                digits[..text.len()].copy_from_slice(text.as_bytes());
                &digits[..text.len()]
            }
        };
        let lines = if self.lines.is_empty() {
            &[String::new()][..]
        } else {
            &self.lines[..]
        };
        let last = lines.len() - 1;
        for (i, line) in lines.iter().enumerate() {
            out.extend_from_slice(digits);
            out.push(if i == last { b' ' } else { b'-' });
            if let Some(enhanced) = self.enhanced {
                out.extend_from_slice(enhanced.as_bytes());
                out.push(b' ');
            }
            for piece in line.as_bytes().split(|b| *b == b'\r' || *b == b'\n') {
                out.extend_from_slice(piece);
            }
            out.extend_from_slice(b"\r\n");
        }
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
        assert_eq!(Reply::plain(220, Vec::new()).to_bytes(), b"220 \r\n");
        assert_eq!(Reply::new(42, "4.2.0", "odd").to_bytes(), b"42 4.2.0 odd\r\n");
        assert_eq!(Reply::plain(1000, vec!["big".into()]).to_bytes(), b"1000 big\r\n");
        let mut out = b"250 2.1.0 OK\r\n".to_vec();
        Reply::plain(354, vec!["go\nahead".into()]).write_to(&mut out);
        assert_eq!(out, b"250 2.1.0 OK\r\n354 goahead\r\n");
        assert!(!Reply::new(451, "4.3.0", "later").is_positive());
    }
}
