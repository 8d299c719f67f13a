//! Parsing one command line (without its CRLF) into a [`Command`].

/// An ESMTP parameter: `SIZE=1000`, `BODY=8BITMIME`, `SMTPUTF8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The keyword, upper case.
    pub keyword: String,
    /// The value, if any.
    pub value: Option<String>,
}

/// A command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `EHLO domain`.
    Ehlo(String),
    /// `HELO domain`.
    Helo(String),
    /// `MAIL FROM:<path> params`; the path is empty for the null sender.
    Mail {
        /// The reverse path, without angle brackets.
        from: String,
        /// Parameters.
        params: Vec<Param>,
    },
    /// `RCPT TO:<path> params`.
    Rcpt {
        /// The forward path, without angle brackets.
        to: String,
        /// Parameters.
        params: Vec<Param>,
    },
    /// `DATA`.
    Data,
    /// `BDAT size [LAST]`.
    Bdat {
        /// Chunk size in bytes.
        size: u64,
        /// Whether this is the last chunk.
        last: bool,
    },
    /// `RSET`.
    Rset,
    /// `NOOP`.
    Noop,
    /// `QUIT`.
    Quit,
    /// `VRFY string`.
    Vrfy(String),
    /// `HELP [topic]`.
    Help,
    /// `STARTTLS`.
    StartTls,
    /// `AUTH mechanism [initial-response]`.
    Auth {
        /// The mechanism, upper case.
        mechanism: String,
        /// The initial response (base64), if given.
        initial: Option<String>,
    },
}

/// Why a line is not a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Not a command herald knows (`500 5.5.1`).
    #[error("unknown command")]
    Unknown,
    /// A known command with bad arguments (`501 5.5.4`); the text says what is wrong.
    #[error("{0}")]
    Syntax(&'static str),
    /// Bytes that are not text (`500 5.5.2`).
    #[error("the command is not valid UTF-8 text")]
    NotText,
}

/// Parses `line`.
pub fn parse(line: &[u8]) -> Result<Command, CommandError> {
    let line = std::str::from_utf8(line).map_err(|_| CommandError::NotText)?;
    if line.bytes().any(|b| b == 0 || (b.is_ascii_control() && b != b'\t')) {
        return Err(CommandError::NotText);
    }
    let (verb, rest) = match line.split_once(' ') {
        Some((verb, rest)) => (verb, rest.trim()),
        None => (line, ""),
    };
    let none = |command: Command| {
        if rest.is_empty() {
            Ok(command)
        } else {
            Err(CommandError::Syntax("this command takes no arguments"))
        }
    };
    match verb.to_ascii_uppercase().as_str() {
        "EHLO" => domain(rest).map(Command::Ehlo),
        "HELO" => domain(rest).map(Command::Helo),
        "MAIL" => {
            let (from, params) = path(rest, "FROM:")?;
            Ok(Command::Mail { from, params })
        }
        "RCPT" => {
            let (to, params) = path(rest, "TO:")?;
            if to.is_empty() {
                return Err(CommandError::Syntax("RCPT needs a recipient address"));
            }
            Ok(Command::Rcpt { to, params })
        }
        "DATA" => none(Command::Data),
        "BDAT" => bdat(rest),
        "RSET" => none(Command::Rset),
        "NOOP" => Ok(Command::Noop),
        "QUIT" => none(Command::Quit),
        "VRFY" => Ok(Command::Vrfy(rest.to_owned())),
        "HELP" => Ok(Command::Help),
        "STARTTLS" => none(Command::StartTls),
        "AUTH" => {
            let mut words = rest.split_ascii_whitespace();
            let mechanism = words
                .next()
                .ok_or(CommandError::Syntax("AUTH needs a mechanism"))?
                .to_ascii_uppercase();
            let initial = words.next().map(str::to_owned);
            if words.next().is_some() {
                return Err(CommandError::Syntax(
                    "AUTH takes a mechanism and at most one initial response",
                ));
            }
            Ok(Command::Auth { mechanism, initial })
        }
        _ => Err(CommandError::Unknown),
    }
}

fn domain(rest: &str) -> Result<String, CommandError> {
    if rest.is_empty() || rest.contains(char::is_whitespace) {
        return Err(CommandError::Syntax(
            "EHLO/HELO needs exactly one domain or address literal",
        ));
    }
    Ok(rest.to_owned())
}

/// `FROM:<path> params` or `TO:<path> params`; tolerates a space after the colon, as
/// many clients send one.
fn path(rest: &str, prefix: &str) -> Result<(String, Vec<Param>), CommandError> {
    let has_prefix = rest.len() >= prefix.len() && rest[..prefix.len()].eq_ignore_ascii_case(prefix);
    if !has_prefix {
        return Err(CommandError::Syntax("expected FROM:<address> or TO:<address>"));
    }
    let rest = rest[prefix.len()..].trim_start();
    let Some(rest) = rest.strip_prefix('<') else {
        return Err(CommandError::Syntax("the address must be in angle brackets"));
    };
    let Some(end) = rest.find('>') else {
        return Err(CommandError::Syntax("the address has no closing angle bracket"));
    };
    let address = &rest[..end];
    // A source route (`<@a,@b:user@c>`) is obsolete; RFC 5321 says to accept and ignore it.
    let address = match address.strip_prefix('@') {
        Some(route) => route.split_once(':').map_or("", |(_, mailbox)| mailbox),
        None => address,
    };
    if address.contains(['<', '>', ' ']) {
        return Err(CommandError::Syntax(
            "the address contains characters that are not allowed",
        ));
    }
    let params = rest[end + 1..]
        .split_ascii_whitespace()
        .map(|param| match param.split_once('=') {
            Some((keyword, value)) => Param {
                keyword: keyword.to_ascii_uppercase(),
                value: Some(value.to_owned()),
            },
            None => Param {
                keyword: param.to_ascii_uppercase(),
                value: None,
            },
        })
        .collect();
    Ok((address.to_owned(), params))
}

fn bdat(rest: &str) -> Result<Command, CommandError> {
    let mut words = rest.split_ascii_whitespace();
    let size = words
        .next()
        .and_then(|w| {
            if w.bytes().all(|b| b.is_ascii_digit()) {
                w.parse::<u64>().ok()
            } else {
                None
            }
        })
        .ok_or(CommandError::Syntax("BDAT needs a chunk size in bytes"))?;
    let last = match words.next() {
        None => false,
        Some(word) if word.eq_ignore_ascii_case("LAST") => true,
        Some(_) => return Err(CommandError::Syntax("BDAT takes a size and optionally LAST")),
    };
    if words.next().is_some() {
        return Err(CommandError::Syntax("BDAT takes a size and optionally LAST"));
    }
    Ok(Command::Bdat { size, last })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(keyword: &str, value: Option<&str>) -> Param {
        Param {
            keyword: keyword.into(),
            value: value.map(Into::into),
        }
    }

    #[test]
    fn envelope_commands() {
        assert_eq!(
            parse(b"EHLO client.example"),
            Ok(Command::Ehlo("client.example".into()))
        );
        assert_eq!(parse(b"ehlo [127.0.0.1]"), Ok(Command::Ehlo("[127.0.0.1]".into())));
        assert_eq!(
            parse(b"MAIL FROM:<a@b.test> SIZE=1000 body=8bitmime SMTPUTF8"),
            Ok(Command::Mail {
                from: "a@b.test".into(),
                params: vec![
                    param("SIZE", Some("1000")),
                    param("BODY", Some("8bitmime")),
                    param("SMTPUTF8", None)
                ],
            })
        );
        assert_eq!(
            parse(b"MAIL FROM:<>"),
            Ok(Command::Mail {
                from: String::new(),
                params: vec![]
            })
        );
        assert_eq!(
            parse(b"mail from: <a@b.test>"),
            Ok(Command::Mail {
                from: "a@b.test".into(),
                params: vec![]
            })
        );
        assert_eq!(
            parse(b"RCPT TO:<@relay.test:u@d.test>"),
            Ok(Command::Rcpt {
                to: "u@d.test".into(),
                params: vec![]
            })
        );
        assert_eq!(
            parse("RCPT TO:<用户@例子.广告>".as_bytes()),
            Ok(Command::Rcpt {
                to: "用户@例子.广告".into(),
                params: vec![]
            })
        );
    }

    #[test]
    fn data_and_session_commands() {
        assert_eq!(parse(b"DATA"), Ok(Command::Data));
        assert_eq!(parse(b"BDAT 1000 LAST"), Ok(Command::Bdat { size: 1000, last: true }));
        assert_eq!(parse(b"bdat 0"), Ok(Command::Bdat { size: 0, last: false }));
        assert_eq!(
            parse(b"AUTH PLAIN AGEAYg=="),
            Ok(Command::Auth {
                mechanism: "PLAIN".into(),
                initial: Some("AGEAYg==".into())
            })
        );
        assert_eq!(
            parse(b"auth login"),
            Ok(Command::Auth {
                mechanism: "LOGIN".into(),
                initial: None
            })
        );
        for (line, command) in [
            ("RSET", Command::Rset),
            ("NOOP", Command::Noop),
            ("QUIT", Command::Quit),
            ("STARTTLS", Command::StartTls),
            ("HELP", Command::Help),
        ] {
            assert_eq!(parse(line.as_bytes()), Ok(command));
        }
    }

    #[test]
    fn malformed_commands_say_what_is_wrong() {
        assert_eq!(parse(b"FOO"), Err(CommandError::Unknown));
        assert_eq!(parse(b""), Err(CommandError::Unknown));
        assert!(matches!(parse(b"EHLO"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"MAIL FROM:a@b.test"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"MAIL TO:<a@b.test>"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"MAIL FROM:<a@b.test"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"RCPT TO:<>"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"BDAT -1"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"BDAT 10 FIRST"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"DATA now"), Err(CommandError::Syntax(_))));
        assert!(matches!(parse(b"STARTTLS\x00"), Err(CommandError::NotText)));
        assert_eq!(parse(b"\xff\xfe"), Err(CommandError::NotText));
    }
}
