//! When webhook messages and their attempts leave the store (`[retention]
//! webhook_messages`): a message counted from its final outcome (delivered, or failed
//! after its last retry), so a message still being retried is never expired; an attempt
//! from when it was made. The webhook log ([`super::log`]) arms each entry in the write
//! that makes a message final or records an attempt.

use herald_queue::{Batch, Due, DueIndex, Store};

use crate::retention::Expiry;
use crate::storage::Error;

/// `[retention] webhook_messages`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Messages;

impl Expiry for Messages {
    const KIND: &'static str = "webhook_messages";
    const INDEX: DueIndex = super::log::EXPIRY;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        super::log::expire(store, due, batch)
    }
}
