//! When webhook messages and their attempts leave the store (`[retention]
//! webhook_messages`): a message counted from its final outcome (delivered, or failed
//! after its last retry), so a message still being retried is never expired; an attempt
//! from when it was made.

use crate::storage::Error;
use herald_queue::{Batch, Due, DueIndex, Store, Table, Timestamp};

use super::dispatch::{MessageState, WebhookAttempt, WebhookMessage};
use crate::retention::Expiry;

/// Messages and attempts, by the time their retention counts from. Item keys are a tag
/// byte and the record's key, as the two kinds share the index.
const INDEX: DueIndex = DueIndex::new(Table::WEBHOOK_EXPIRY);

const MESSAGE: u8 = b'm';
const ATTEMPT: u8 = b'a';

fn tagged(tag: u8, key: &[u8]) -> Vec<u8> {
    let mut tagged = Vec::with_capacity(1 + key.len());
    tagged.push(tag);
    tagged.extend_from_slice(key);
    tagged
}

/// Marks `message` final at `at` and starts its retention, in the batch that writes it.
pub fn finish(batch: &mut Batch, message: &mut WebhookMessage, state: MessageState, at: Timestamp) {
    message.state = state;
    message.finished_at = Some(at);
    INDEX.arm(batch, at, &tagged(MESSAGE, &message.key()));
}

/// Starts the retention of the attempt under `key`, made at `at`, in the batch that
/// writes it.
pub fn arm_attempt(batch: &mut Batch, key: &[u8], at: Timestamp) {
    INDEX.arm(batch, at, &tagged(ATTEMPT, key));
}

/// `[retention] webhook_messages`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Messages;

impl Expiry for Messages {
    const KIND: &'static str = "webhook_messages";
    const INDEX: DueIndex = INDEX;

    fn expire(&self, store: &Store, due: &Due, batch: &mut Batch) -> Result<(), Error> {
        match due.key.split_first() {
            Some((&MESSAGE, key)) => {
                // A message replayed since is pending again, or final at another time: this
                // entry is stale, and the message's current one decides.
                let current = store
                    .get::<WebhookMessage>(key)?
                    .filter(|message| message.state != MessageState::Pending && message.finished_at == Some(due.at));
                if current.is_some() {
                    batch.delete::<WebhookMessage>(key);
                }
            }
            Some((&ATTEMPT, key)) => batch.delete::<WebhookAttempt>(key),
            _ => {}
        }
        Ok(())
    }
}
