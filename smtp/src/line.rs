//! Command lines: bytes up to CRLF, with no bare CR or LF anywhere. A bare line ending is
//! refused rather than repaired, so that no byte sequence can mean one thing to herald
//! and another to a server down the line (CVE-2023-51764, CVE-2011-0411's cousins).

/// Why a line cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// A LF not preceded by CR.
    #[error("bare LF in a command line")]
    BareLf,
    /// A CR not followed by LF.
    #[error("bare CR in a command line")]
    BareCr,
    /// No CRLF within the limit.
    #[error("command line longer than {0} bytes")]
    TooLong(usize),
}

/// Reads one line from the front of `input`: `Ok(Some((line, consumed)))` with the line
/// without its CRLF, `Ok(None)` when more bytes are needed, or the error. `max` bounds the
/// line, CRLF included (RFC 5321 says 512 for commands).
pub fn read_line(input: &[u8], max: usize) -> Result<Option<(&[u8], usize)>, LineError> {
    for (i, &byte) in input.iter().enumerate() {
        if i >= max {
            return Err(LineError::TooLong(max));
        }
        match byte {
            b'\n' => return Err(LineError::BareLf),
            b'\r' => match input.get(i + 1) {
                Some(b'\n') if i + 2 > max => return Err(LineError::TooLong(max)),
                Some(b'\n') => return Ok(Some((&input[..i], i + 2))),
                Some(_) => return Err(LineError::BareCr),
                None => return Ok(None),
            },
            _ => {}
        }
    }
    if input.len() >= max {
        return Err(LineError::TooLong(max));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_partial_and_pipelined_lines() {
        assert_eq!(read_line(b"NOOP\r\n", 512), Ok(Some((&b"NOOP"[..], 6))));
        assert_eq!(read_line(b"NOOP\r\nQUIT\r\n", 512), Ok(Some((&b"NOOP"[..], 6))));
        assert_eq!(read_line(b"NOO", 512), Ok(None));
        assert_eq!(
            read_line(b"NOOP\r", 512),
            Ok(None),
            "CR at the end may be followed by LF"
        );
        assert_eq!(read_line(b"", 512), Ok(None));
    }

    #[test]
    fn bare_line_endings_and_overlong_lines_are_refused() {
        assert_eq!(read_line(b"NOOP\n", 512), Err(LineError::BareLf));
        assert_eq!(read_line(b"NO\rOP\r\n", 512), Err(LineError::BareCr));
        assert_eq!(read_line(b"\n", 512), Err(LineError::BareLf));
        assert_eq!(read_line(&[b'a'; 600], 512), Err(LineError::TooLong(512)));
        let mut exact = vec![b'a'; 510];
        exact.extend_from_slice(b"\r\n");
        assert!(matches!(read_line(&exact, 512), Ok(Some(_))));
        exact.insert(0, b'a');
        assert_eq!(read_line(&exact, 512), Err(LineError::TooLong(512)));
    }
}
