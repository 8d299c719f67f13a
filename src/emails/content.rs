//! An email's bodies (`html`, `text`) as its record shows them. An SMTP submission whose
//! bodies go out unchanged (no tracking rewrote them) keeps them only in the message the
//! spool retains ([`herald_queue::NewMessage::retain`]): storing them in the record too
//! wrote every such message twice, and at 100 KB that second copy cost as much CPU as
//! the rest of its acceptance.

use herald_queue::{Batch, Error, Id, Spool, Store};
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

/// Adds to `batch` the removal of email `id`'s retained message, once it has left the
/// spool (retention of the content or of the record).
pub fn forget(store: &Store, id: Id, batch: &mut Batch) -> Result<(), Error> {
    Spool::forget(store, id, batch)
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
