//! One-click unsubscribe (RFC 8058, RFC 2369) and the preferences page.
//!
//! Mail sent to a contact (a send with `topic_id`, or whose body uses
//! `{{{RESEND_UNSUBSCRIBE_URL}}}`) carries a signed link, `<[http] public_url>/unsubscribe/
//! <token>`, in its body where asked and in `List-Unsubscribe` (with
//! `List-Unsubscribe-Post: List-Unsubscribe=One-Click` when `public_url` is https, as
//! RFC 8058 requires), both DKIM-signed. The token ([`token`]) names the team, the email,
//! the topic (if any) and the recipient's address, signed with the node's tracking key:
//! nothing is stored per link, a forged or altered token is a 404, and tokens never
//! expire (RFC 8058 asks that they keep working; erasing the team is what ends them).
//!
//! `GET` never changes anything (link scanners follow GETs): it shows a page
//! ([`page`]) with a button and, where the team has public topics, the contact's choices.
//! `POST` changes: a one-click POST (or the page's button) unsubscribes at once, from the
//! token's topic when it names one, else from everything; the page's preferences form
//! sets each public topic. A change fires `contact.updated` (and
//! `contact.topics.updated` for topics) through the contacts service; an address that is
//! no contact yet becomes one, unsubscribed, so later broadcasts skip it.

pub mod page;
pub mod token;

use std::borrow::Cow;

use herald_queue::Id;

pub use token::Unsubscribe;

use crate::accounts::{Caller, Permission};
use crate::contacts::service as contacts;
use crate::contacts::topics::{Subscription, Topic, TopicChoice, Visibility};
use crate::emails::Email;
use crate::services::{Error, Services};

/// Where a body asks for its unsubscribe link (Resend's merge tag); templates render
/// their reserved unsubscribe names to it, and acceptance replaces it with the link.
pub const MARKER: &str = "{{{RESEND_UNSUBSCRIBE_URL}}}";

/// The path under which unsubscribe links live.
pub const PATH: &str = "/unsubscribe/";

/// The prefix of every unsubscribe link of this node, which click tracking leaves alone.
pub fn prefix(services: &Services) -> String {
    format!("{}{PATH}", services.config().http.public_url)
}

/// Whether `email`'s bodies ask for the unsubscribe link.
fn marked(email: &Email) -> bool {
    [&email.html, &email.text]
        .into_iter()
        .any(|body| body.as_deref().is_some_and(|b| b.contains(MARKER)))
}

/// Refuses an email whose bodies ask for the unsubscribe link but that goes to more than
/// one recipient: a message is one copy for all of them, and the link is personal (it
/// names the recipient it unsubscribes). A `topic_id` send to several recipients goes
/// without the link and headers.
pub fn check_recipients(email: &Email) -> Result<(), Error> {
    if marked(email) && email.recipients().len() > 1 {
        return Err(Error::invalid(
            "{{{RESEND_UNSUBSCRIBE_URL}}} needs an email with one recipient: the link is personal. Send one email per recipient (POST /emails/batch takes 100 at once)",
        ));
    }
    Ok(())
}

/// `email` (accepted as `email_id`) with its unsubscribe link, when it needs one: the
/// marker in its bodies replaced and the `List-Unsubscribe` headers added (unless the
/// sender set `List-Unsubscribe` itself). Only an email with one recipient gets one: the
/// link names the recipient it unsubscribes, and a message is one copy for all.
///
/// # Errors
///
/// When the link is needed but cannot be signed (the tracking key could not be read):
/// such an email is not sent without it.
pub fn apply<'a>(services: &Services, team_id: Id, email_id: Id, email: &'a Email) -> Result<Cow<'a, Email>, String> {
    if !email.unsubscribe && email.topic_id.is_none() && !marked(email) {
        return Ok(Cow::Borrowed(email));
    }
    if email.recipients().len() != 1 {
        return Ok(Cow::Borrowed(email));
    }
    if services.tracking_signer().is_none() {
        return Err(
            "the unsubscribe link cannot be signed: the tracking key in the data directory cannot be read".into(),
        );
    }
    let mut linked = email.clone();
    let first = email.to.iter().chain(&email.cc).chain(&email.bcc).next();
    let link = match (services.tracking_signer(), first) {
        (Some(signer), Some(to)) => {
            let unsubscribe = Unsubscribe {
                team_id,
                email_id,
                topic_id: email.topic_id,
                address: to.address.clone(),
            };
            Some(format!("{}{}", prefix(services), unsubscribe.token(signer)))
        }
        _ => None,
    };
    for body in [&mut linked.html, &mut linked.text].into_iter().flatten() {
        if body.contains(MARKER) {
            *body = body.replace(MARKER, link.as_deref().unwrap_or_default());
        }
    }
    let own = email
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("list-unsubscribe"));
    if let Some(link) = link.filter(|_| !own) {
        linked.headers.push(("List-Unsubscribe".into(), format!("<{link}>")));
        if link.starts_with("https://") {
            linked
                .headers
                .push(("List-Unsubscribe-Post".into(), "List-Unsubscribe=One-Click".into()));
        }
    }
    Ok(Cow::Owned(linked))
}

/// Checks `email`'s `topic_id` (a topic of the team) and leaves out the recipients who
/// are not subscribed to it: contacts that opted out of it or unsubscribed from
/// everything, and addresses that are no contact when the topic is opt-in only. An email
/// left with no recipient is refused, saying why.
pub fn filter_topic(services: &Services, team_id: Id, email: &mut Email) -> Result<(), Error> {
    let Some(topic_id) = email.topic_id else {
        return Ok(());
    };
    let topic = services
        .audience()
        .topic(team_id, topic_id)?
        .ok_or_else(|| Error::invalid(format!("Invalid `topic_id` field: the team has no topic {topic_id}")))?;
    let contacts = services.contacts();
    let receives = |address: &str| -> Result<bool, Error> {
        Ok(match contacts.by_email(team_id, address)? {
            Some(contact) => contact.receives(Some(&topic)),
            None => topic.default_subscription == Subscription::OptIn,
        })
    };
    for list in [&mut email.to, &mut email.cc, &mut email.bcc] {
        let mut kept = Vec::with_capacity(list.len());
        for mailbox in list.drain(..) {
            if receives(&mailbox.address)? {
                kept.push(mailbox);
            }
        }
        *list = kept;
    }
    if email.to.is_empty() && email.cc.is_empty() && email.bcc.is_empty() {
        return Err(Error::invalid(format!(
            "Every recipient has opted out of the topic {} ({topic_id}): nothing to send",
            topic.name
        )));
    }
    // A message whose `To` recipients all opted out goes without `To` (RFC 5322 allows
    // it): moving a `Bcc` recipient there would disclose it.
    Ok(())
}

/// What a `POST` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// RFC 8058's one-click (or the page's button): out of the token's topic when it
    /// names one, else out of everything.
    OneClick,
    /// The page's preferences form: subscribed to exactly these public topics, and back
    /// in (or out of) mail as a whole.
    Preferences {
        /// The public topics ticked.
        topics: Vec<Id>,
        /// Whether the "everything" box was ticked.
        all: bool,
    },
}

/// What the page shows of the recipient.
#[derive(Debug, Clone)]
pub struct Preferences {
    /// The address.
    pub address: String,
    /// Whether it is unsubscribed from everything.
    pub unsubscribed: bool,
    /// The topic the email was sent on, if it still exists.
    pub topic: Option<Topic>,
    /// The team's public topics and the address's subscription to each.
    pub topics: Vec<(Topic, bool)>,
}

/// A caller acting for the recipient on the team's audience: it may change contacts,
/// and nothing else uses it.
fn recipient(team_id: Id) -> Caller {
    Caller {
        team_id,
        key_id: Id::from_bytes([0; 16]),
        permission: Permission::FullAccess,
        domain_id: None,
        operator: false,
    }
}

/// Refuses a link of a team that is deleted (being erased or gone): nothing of its
/// audience may come back.
fn live_team(services: &Services, team_id: Id) -> Result<(), Error> {
    match services.accounts().team(team_id)? {
        Some(team) if team.deleted_at.is_none() => Ok(()),
        _ => Err(Error::NotFound("No such unsubscribe link")),
    }
}

/// What the page shows for `unsubscribe`.
pub fn preferences(services: &Services, unsubscribe: &Unsubscribe) -> Result<Preferences, Error> {
    let team = unsubscribe.team_id;
    live_team(services, team)?;
    let contact = services.contacts().by_email(team, &unsubscribe.address)?;
    let topics = services.audience().topics(team)?;
    let subscribed = |topic: &Topic| match &contact {
        Some(contact) => contact.subscription(topic) == Subscription::OptIn,
        None => topic.default_subscription == Subscription::OptIn,
    };
    Ok(Preferences {
        address: unsubscribe.address.clone(),
        unsubscribed: contact.as_ref().is_some_and(|c| c.unsubscribed),
        topic: unsubscribe
            .topic_id
            .and_then(|id| topics.iter().find(|t| t.id == id).cloned()),
        topics: topics
            .iter()
            .filter(|t| t.visibility == Visibility::Public)
            .map(|t| (t.clone(), subscribed(t)))
            .collect(),
    })
}

/// Carries out `choice` for `unsubscribe`'s address, and counts an unsubscription from
/// everything (or the email's topic) under the email's sending domain, in the same write
/// as the contact's change: a choice that changes nothing is not counted again.
pub fn apply_choice(services: &Services, unsubscribe: &Unsubscribe, choice: &Choice) -> Result<(), Error> {
    live_team(services, unsubscribe.team_id)?;
    let caller = recipient(unsubscribe.team_id);
    let topics = services.audience().topics(unsubscribe.team_id)?;
    let (unsubscribed, choices) = match choice {
        Choice::OneClick => match unsubscribe.topic_id.filter(|id| topics.iter().any(|t| t.id == *id)) {
            Some(id) => (None, vec![out(id)]),
            None => (Some(true), Vec::new()),
        },
        Choice::Preferences { topics: ticked, all } => (
            Some(!all),
            topics
                .iter()
                .filter(|t| t.visibility == Visibility::Public)
                .map(|t| TopicChoice {
                    id: t.id,
                    subscription: if ticked.contains(&t.id) {
                        Subscription::OptIn
                    } else {
                        Subscription::OptOut
                    },
                })
                .collect(),
        ),
    };
    let counted = match choice {
        Choice::OneClick => true,
        Choice::Preferences { all, .. } => !all,
    };
    let from = match counted {
        true => services
            .emails()
            .status(unsubscribe.team_id, unsubscribe.email_id)?
            .map(|status| status.from),
        false => None,
    };
    let now = services.now();
    contacts::choose(
        services,
        &caller,
        &unsubscribe.address,
        unsubscribed,
        &choices,
        |change| {
            if let Some(from) = &from {
                let metric = crate::counters::Metric::Unsubscribed;
                services
                    .counters()
                    .count(change, unsubscribe.team_id, from, now, metric);
            }
        },
    )?;
    Ok(())
}

fn out(id: Id) -> TopicChoice {
    TopicChoice {
        id,
        subscription: Subscription::OptOut,
    }
}
