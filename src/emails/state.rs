//! Where an email stands, as its `last_event` and the kinds on its timeline say it.

/// An email's latest event (`GET /emails/{id}` `last_event`) and the kind of each event
/// on its timeline, in Resend's vocabulary, plus `canceled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmailState {
    /// Accepted, to be sent at `scheduled_at`.
    Scheduled,
    /// Accepted for delivery now.
    Sent,
    /// A receiver accepted it.
    Delivered,
    /// A receiver deferred it; it is tried again.
    DeliveryDelayed,
    /// A receiver refused it for good, or its lifetime ran out.
    Bounced,
    /// A recipient marked it as spam.
    Complained,
    /// Opened.
    Opened,
    /// A link was clicked.
    Clicked,
    /// herald could not send it.
    Failed,
    /// Not sent: the address is on the suppression list.
    Suppressed,
    /// Canceled before delivery (over the API, or deleted from the queue).
    Canceled,
}

impl EmailState {
    /// Every state, in the order of their codes ([`EmailState::code`]).
    pub const ALL: [EmailState; 11] = [
        EmailState::Scheduled,
        EmailState::Sent,
        EmailState::Delivered,
        EmailState::DeliveryDelayed,
        EmailState::Bounced,
        EmailState::Complained,
        EmailState::Opened,
        EmailState::Clicked,
        EmailState::Failed,
        EmailState::Suppressed,
        EmailState::Canceled,
    ];

    /// The state's one-byte code, as stored keys carry it.
    pub fn code(self) -> u8 {
        EmailState::ALL
            .iter()
            .position(|s| *s == self)
            .and_then(|p| u8::try_from(p).ok())
            .unwrap_or(u8::MAX)
    }

    /// The state whose code is `code`.
    pub fn from_code(code: u8) -> Option<EmailState> {
        EmailState::ALL.get(usize::from(code)).copied()
    }

    /// The email's `last_event` once an event of kind `incoming` is recorded while it is
    /// `self`: the one precedence rule of every writer
    /// ([`crate::emails::store::EmailStore::record_event`]). The latest event wins, except that
    ///
    /// - a delay never takes back an outcome (a late report of a deferral);
    /// - `delivered` never takes back an open or a click (the receiver showed the
    ///   message before the outcome of its delivery was written);
    /// - `canceled` never takes back an outcome: only mail not yet out is canceled;
    /// - nothing takes an email back to `scheduled` or `sent` once it is past them.
    pub fn after(self, incoming: EmailState) -> EmailState {
        use EmailState::*;
        let outcome = matches!(
            self,
            Delivered | Bounced | Complained | Opened | Clicked | Failed | Suppressed | Canceled
        );
        let keeps = match incoming {
            DeliveryDelayed | Canceled => outcome,
            Delivered => matches!(self, Opened | Clicked),
            Scheduled | Sent => !matches!(self, Scheduled | Sent),
            _ => false,
        };
        if keeps { self } else { incoming }
    }

    /// The wire name, as `last_event` shows it.
    pub fn name(self) -> &'static str {
        match self {
            EmailState::Scheduled => "scheduled",
            EmailState::Sent => "sent",
            EmailState::Delivered => "delivered",
            EmailState::DeliveryDelayed => "delivery_delayed",
            EmailState::Bounced => "bounced",
            EmailState::Complained => "complained",
            EmailState::Opened => "opened",
            EmailState::Clicked => "clicked",
            EmailState::Failed => "failed",
            EmailState::Suppressed => "suppressed",
            EmailState::Canceled => "canceled",
        }
    }

    /// The webhook event reporting that the email reached this state, if there is one
    /// (`canceled` has none in Resend's vocabulary).
    pub fn event_kind(self) -> Option<crate::events::EventKind> {
        use crate::events::EventKind;
        Some(match self {
            EmailState::Scheduled => EventKind::EmailScheduled,
            EmailState::Sent => EventKind::EmailSent,
            EmailState::Delivered => EventKind::EmailDelivered,
            EmailState::DeliveryDelayed => EventKind::EmailDeliveryDelayed,
            EmailState::Bounced => EventKind::EmailBounced,
            EmailState::Complained => EventKind::EmailComplained,
            EmailState::Opened => EventKind::EmailOpened,
            EmailState::Clicked => EventKind::EmailClicked,
            EmailState::Failed => EventKind::EmailFailed,
            EmailState::Suppressed => EventKind::EmailSuppressed,
            EmailState::Canceled => return None,
        })
    }
}

impl std::fmt::Display for EmailState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_keep_the_names_records_were_stored_with() {
        for (state, name) in [
            (EmailState::Scheduled, "scheduled"),
            (EmailState::DeliveryDelayed, "delivery_delayed"),
            (EmailState::Canceled, "canceled"),
        ] {
            assert_eq!(serde_json::to_string(&state).expect("encode"), format!("\"{name}\""));
            assert_eq!(state.name(), name);
            let decoded: EmailState = serde_json::from_str(&format!("\"{name}\"")).expect("decode");
            assert_eq!(decoded, state);
        }
        assert_eq!(
            EmailState::DeliveryDelayed.event_kind().map(|k| k.name()),
            Some("email.delivery_delayed")
        );
        assert_eq!(EmailState::Canceled.event_kind(), None);
    }

    /// The precedence rule, row by row: `(last_event, incoming, last_event after)`.
    #[test]
    fn the_one_precedence_rule() {
        use EmailState::*;
        let rows = [
            // The latest event wins...
            (Sent, Delivered, Delivered),
            (Scheduled, Sent, Sent),
            (Sent, DeliveryDelayed, DeliveryDelayed),
            (DeliveryDelayed, Delivered, Delivered),
            (DeliveryDelayed, Bounced, Bounced),
            (Delivered, Opened, Opened),
            (Opened, Clicked, Clicked),
            (Clicked, Opened, Opened),
            (Delivered, Complained, Complained),
            (Delivered, Bounced, Bounced),
            (Bounced, Delivered, Delivered),
            (Sent, Failed, Failed),
            (Scheduled, Canceled, Canceled),
            (Sent, Canceled, Canceled),
            (DeliveryDelayed, Canceled, Canceled),
            (Sent, Suppressed, Suppressed),
            (Delivered, Delivered, Delivered),
            // ...but a delay never takes back an outcome,
            (Delivered, DeliveryDelayed, Delivered),
            (Opened, DeliveryDelayed, Opened),
            (Clicked, DeliveryDelayed, Clicked),
            (Bounced, DeliveryDelayed, Bounced),
            (Complained, DeliveryDelayed, Complained),
            (Failed, DeliveryDelayed, Failed),
            (Canceled, DeliveryDelayed, Canceled),
            // delivered never takes back an open or a click,
            (Opened, Delivered, Opened),
            (Clicked, Delivered, Clicked),
            // canceled never takes back an outcome,
            (Delivered, Canceled, Delivered),
            (Bounced, Canceled, Bounced),
            (Failed, Canceled, Failed),
            (Suppressed, Canceled, Suppressed),
            // and nothing goes back to scheduled or sent.
            (Delivered, Sent, Delivered),
            (DeliveryDelayed, Scheduled, DeliveryDelayed),
            (Canceled, Sent, Canceled),
            (Sent, Scheduled, Scheduled),
        ];
        for (current, incoming, expected) in rows {
            assert_eq!(current.after(incoming), expected, "{current} then {incoming}");
        }
    }
}
