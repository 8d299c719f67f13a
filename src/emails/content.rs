//! An email's bodies (`html`, `text`) as its record shows them. An SMTP submission that
//! holds only its bodies and sends them unchanged (no tracking rewrote them) keeps them
//! only in the message the spool retains ([`herald_queue::NewMessage::retain`]), removed
//! by retention with [`Spool::forget`]: storing them in the record too wrote every such
//! message twice, which at 100 KB cost 10-20 % of its CPU.

use herald_queue::{Error, Spool};
use mail_parser::{MessageParser, PartType};

use super::record::EmailRecord;

/// Fills in `record`'s `html` and `text` from its retained message, when it keeps them
/// there and retention has not removed them.
pub fn fill(spool: &Spool, record: &mut EmailRecord) -> Result<(), Error> {
    if !record.content_in_message || record.content_expired {
        return Ok(());
    }
    let Some(raw) = spool.retained(record.id)? else {
        // Gone with retention: the bodies expired, whether or not the record says so yet.
        record.content_expired = true;
        return Ok(());
    };
    if let Some(parsed) = MessageParser::default().parse(&raw) {
        record.html = html_body(&parsed);
        record.text = text_body(&parsed);
    }
    Ok(())
}

/// The message's HTML body, when it has one. mail-parser would make one up from a
/// text-only message; the record keeps what the sender wrote, not a conversion of it (the
/// conversion cost as much to store as the message itself).
pub fn html_body(message: &mail_parser::Message<'_>) -> Option<String> {
    match &message.html_part(0)?.body {
        PartType::Html(html) => Some(html.clone().into_owned()),
        _ => None,
    }
}

/// The message's plain-text body, when it has one (not a conversion of its HTML).
pub fn text_body(message: &mail_parser::Message<'_>) -> Option<String> {
    match &message.text_part(0)?.body {
        PartType::Text(text) => Some(text.clone().into_owned()),
        _ => None,
    }
}
