//! The webhook events of the audience API, as herald posts them, decoded with the official
//! Rust SDK's (crates.io `resend-rs`) own event types: `events::ContactEvent`,
//! `ContactTopicsEvent` and `TopicEvent` (serde), and `events::try_parse_event`, which
//! picks the `Event` variant. Those types have no catch-all: every field they require must
//! be there with the type they expect (`audience_id` a string, `""` for a contact in no
//! segment; `updated_at` and a topic's `deleted` always present), and every enum value
//! (event type, subscription) one they know. A receiver of the test's own on 127.0.0.2 (the
//! only private network the suite's herald posts to) answers each request 200 and hands
//! its body to the test. The SDK drives the changes, in a team of its own.

use std::time::Duration;

use chrono::{DateTime, Utc};
use herald_compat_rust::{team_client, unique_address};
use resend_rs::events::{
    ContactEvent, ContactEventType, ContactTopicsEvent, ContactTopicsEventType, Event, EventType, TopicEvent,
    TopicEventType, try_parse_event,
};
use resend_rs::types::{
    ContactChanges, CreateContactOptions, CreateTopicOptions, CreateWebhookOptions, SubscriptionType,
    UpdateContactTopicOptions, UpdateTopicOptions,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How long herald has to post every expected event (it retries a failed post after 1 s).
const DEADLINE: Duration = Duration::from_secs(30);

/// What the receiver answers every request.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";

/// One request the receiver read.
#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    /// Header names lowercased, in the order sent.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A webhook receiver on 127.0.0.2: its endpoint URL and the requests it read (or why it
/// could not read one).
async fn receiver() -> (String, mpsc::UnboundedReceiver<Result<Request, String>>) {
    let listener = TcpListener::bind("127.0.0.2:0")
        .await
        .expect("a receiver binds 127.0.0.2 (any 127/8 address is loopback)");
    let port = listener.local_addr().expect("the receiver's address").port();
    let (sender, requests) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, sender.clone()));
        }
    });
    (format!("http://127.0.0.2:{port}/hook"), requests)
}

/// Reads HTTP/1.1 requests off one connection (herald may keep it open for the next) and
/// answers each 200, until the peer closes it.
async fn serve(stream: TcpStream, requests: mpsc::UnboundedSender<Result<Request, String>>) {
    let mut stream = BufReader::new(stream);
    loop {
        match read_request(&mut stream).await {
            Ok(Some(request)) => {
                if stream.get_mut().write_all(OK).await.is_err() {
                    // herald saw no answer and posts again: the test takes that one.
                    return;
                }
                let _ = requests.send(Ok(request));
            }
            Ok(None) => return,
            Err(error) => {
                let _ = requests.send(Err(error));
                return;
            }
        }
    }
}

/// One request: the request line, the headers up to the empty line, and a body of exactly
/// `Content-Length` bytes. `None` when the connection ends before a request starts.
async fn read_request(stream: &mut BufReader<TcpStream>) -> Result<Option<Request>, String> {
    let mut line = String::new();
    let read = stream.read_line(&mut line).await.map_err(|e| e.to_string())?;
    if read == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("not an HTTP request line: {line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not HTTP/1.x: {line:?}"));
    }
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if stream.read_line(&mut line).await.map_err(|e| e.to_string())? == 0 {
            return Err("the connection ended inside the headers".to_owned());
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| format!("not a header: {header:?}"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if request.header("transfer-encoding").is_some() {
        return Err(format!(
            "a chunked body, not a Content-Length one: {:?}",
            request.headers
        ));
    }
    let length = request
        .header("content-length")
        .ok_or_else(|| format!("no Content-Length: {:?}", request.headers))?
        .parse::<usize>()
        .map_err(|e| format!("a bad Content-Length: {e}"))?;
    request.body = vec![0; length];
    stream
        .read_exact(&mut request.body)
        .await
        .map_err(|e| format!("the body ended early: {e}"))?;
    Ok(Some(request))
}

/// The bodies herald posted, each with its event type and the id of the contact or topic
/// in its `data`.
struct Deliveries(Vec<(String, String, Vec<u8>)>);

impl Deliveries {
    /// Reads requests until one of each `(type, id)` of `expected` came, or panics after
    /// [`DEADLINE`] naming those that did not.
    async fn collect(
        requests: &mut mpsc::UnboundedReceiver<Result<Request, String>>,
        expected: &[(&str, &str)],
    ) -> Self {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        let mut deliveries = Deliveries(Vec::new());
        loop {
            let missing: Vec<&(&str, &str)> = expected
                .iter()
                .filter(|(kind, id)| deliveries.find(kind, id).is_none())
                .collect();
            if missing.is_empty() {
                return deliveries;
            }
            let request = match tokio::time::timeout_at(deadline, requests.recv()).await {
                Ok(Some(Ok(request))) => request,
                Ok(Some(Err(error))) => panic!("the receiver could not read herald's request: {error}"),
                Ok(None) => panic!("the receiver stopped"),
                Err(_) => panic!(
                    "after {DEADLINE:?} herald had not posted {missing:?}; it posted {:?}",
                    deliveries.0.iter().map(|(kind, id, _)| (kind, id)).collect::<Vec<_>>()
                ),
            };
            assert_eq!(request.method, "POST", "{request:?}");
            assert_eq!(request.path, "/hook", "{request:?}");
            assert_eq!(request.header("content-type"), Some("application/json"), "{request:?}");
            for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
                assert!(request.header(name).is_some(), "no {name}: {request:?}");
            }
            let json: Value = serde_json::from_slice(&request.body)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&request.body)));
            let kind = json["type"].as_str().expect("an event has a string type").to_owned();
            let id = json["data"]["id"]
                .as_str()
                .expect("an event's data has a string id")
                .to_owned();
            deliveries.0.push((kind, id, request.body));
        }
    }

    fn find(&self, kind: &str, id: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(k, i, _)| k == kind && i == id)
            .map(|(_, _, body)| body.as_slice())
    }

    /// The body of the event `kind` about `id` (a retried post repeats the same body).
    #[track_caller]
    fn body(&self, kind: &str, id: &str) -> &[u8] {
        self.find(kind, id).unwrap_or_else(|| panic!("no {kind} for {id}"))
    }

    /// A `contact.*` body through resend-rs: `ContactEvent`, and `Event::ContactEvent`.
    #[track_caller]
    fn contact(&self, kind: &str, id: &str) -> ContactEvent {
        let body = self.body(kind, id);
        let event: ContactEvent = serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "resend-rs's ContactEvent does not decode {}: {e}",
                String::from_utf8_lossy(body)
            )
        });
        let parsed = try_parse_event(&String::from_utf8_lossy(body));
        assert!(matches!(parsed, Ok(Event::ContactEvent(_))), "{parsed:?}");
        event
    }

    /// A `contact.topics.updated` body through resend-rs: `ContactTopicsEvent`, and
    /// `Event::ContactTopicsEvent`.
    #[track_caller]
    fn contact_topics(&self, id: &str) -> ContactTopicsEvent {
        let body = self.body("contact.topics.updated", id);
        let event: ContactTopicsEvent = serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "resend-rs's ContactTopicsEvent does not decode {}: {e}",
                String::from_utf8_lossy(body)
            )
        });
        let parsed = try_parse_event(&String::from_utf8_lossy(body));
        assert!(matches!(parsed, Ok(Event::ContactTopicsEvent(_))), "{parsed:?}");
        event
    }

    /// A `topic.*` body through resend-rs: `TopicEvent`, and `Event::TopicEvent`.
    #[track_caller]
    fn topic(&self, kind: &str, id: &str) -> TopicEvent {
        let body = self.body(kind, id);
        let event: TopicEvent = serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "resend-rs's TopicEvent does not decode {}: {e}",
                String::from_utf8_lossy(body)
            )
        });
        let parsed = try_parse_event(&String::from_utf8_lossy(body));
        assert!(matches!(parsed, Ok(Event::TopicEvent(_))), "{parsed:?}");
        event
    }
}

/// Parses an event timestamp: ISO 8601 in UTC with milliseconds (`2026-02-12T10:00:00.000Z`),
/// as Resend's webhooks send them.
#[track_caller]
fn iso8601(text: &str) -> DateTime<Utc> {
    assert!(
        text.len() == 24 && text.ends_with('Z') && text.as_bytes()[19] == b'.',
        "{text:?} is not YYYY-MM-DDTHH:MM:SS.sssZ"
    );
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text:?} is not ISO 8601: {e}"))
        .with_timezone(&Utc)
}

/// Asserts `text` is an event timestamp within a minute of now.
#[track_caller]
fn assert_recent_iso8601(text: &str) {
    let age = Utc::now() - iso8601(text);
    assert!(
        age > chrono::TimeDelta::seconds(-5) && age < chrono::TimeDelta::seconds(60),
        "{text} is not now"
    );
}

/// The segment ids of a contact event, as text.
fn segment_ids(event: &ContactEvent) -> Vec<&str> {
    event.data.segment_ids.iter().map(|id| &**id).collect()
}

#[tokio::test]
async fn audience_events_decode_with_the_sdk_event_types() {
    let (endpoint, mut requests) = receiver().await;
    let resend = team_client("webhook-events").await;
    let events = [
        EventType::from(ContactEventType::ContactCreated),
        EventType::from(ContactEventType::ContactUpdated),
        EventType::from(ContactEventType::ContactDeleted),
        EventType::from(ContactTopicsEventType::ContactTopicsUpdated),
        EventType::from(TopicEventType::TopicCreated),
        EventType::from(TopicEventType::TopicUpdated),
        EventType::from(TopicEventType::TopicDeleted),
    ];
    let _ = resend
        .webhooks
        .create(CreateWebhookOptions::new(endpoint.as_str(), events))
        .await
        .expect("webhooks.create decodes");

    // topic.created
    let options =
        CreateTopicOptions::new("Product", SubscriptionType::OptIn).with_description("Product news".to_owned());
    let topic = resend.topics.create(options).await.expect("topics.create decodes").id;
    // contact.created: one contact in a segment, one in none (`audience_id` "").
    let segment = resend
        .segments
        .create("Webhooks")
        .await
        .expect("segments.create decodes")
        .id;
    let ada_email = unique_address("webhook-ada");
    let options = CreateContactOptions::new(&ada_email)
        .with_first_name("Ada")
        .with_last_name("Lovelace")
        .with_segment(&segment);
    let ada = resend.contacts.create(options).await.expect("contacts.create decodes");
    let grace_email = unique_address("webhook-grace");
    let grace = resend
        .contacts
        .create(CreateContactOptions::new(&grace_email))
        .await
        .expect("contacts.create decodes");
    // contact.topics.updated, and contact.updated (an opt-out) for Ada.
    let _ = resend
        .contacts
        .update_contact_topics(
            &ada,
            [UpdateContactTopicOptions::new(
                topic.to_string(),
                SubscriptionType::OptOut,
            )],
        )
        .await
        .expect("contacts.update_contact_topics decodes");
    // contact.updated for Grace.
    let _ = resend
        .contacts
        .update(&grace, ContactChanges::new().with_first_name("Grace"))
        .await
        .expect("contacts.update decodes");
    // topic.updated, topic.deleted
    let _ = resend
        .topics
        .update(&topic, UpdateTopicOptions::new().with_name("Products"))
        .await
        .expect("topics.update decodes");
    let deleted = resend.topics.delete(&topic).await.expect("topics.delete decodes");
    assert!(deleted.deleted);
    // contact.deleted, by id and by address.
    assert!(resend.contacts.delete(&ada).await.expect("contacts.delete decodes"));
    assert!(
        resend
            .contacts
            .delete(&grace_email)
            .await
            .expect("contacts.delete decodes")
    );

    let deliveries = Deliveries::collect(
        &mut requests,
        &[
            ("topic.created", &*topic),
            ("contact.created", &*ada),
            ("contact.created", &*grace),
            ("contact.topics.updated", &*ada),
            ("contact.updated", &*ada),
            ("contact.updated", &*grace),
            ("topic.updated", &*topic),
            ("topic.deleted", &*topic),
            ("contact.deleted", &*ada),
            ("contact.deleted", &*grace),
        ],
    )
    .await;

    // contact.created
    let event = deliveries.contact("contact.created", &ada);
    assert!(matches!(event.r#type, ContactEventType::ContactCreated), "{event:?}");
    assert_recent_iso8601(&event.created_at);
    assert_eq!(event.data.id, *ada);
    assert_eq!(event.data.email, ada_email);
    assert_eq!(event.data.audience_id, *segment, "the audience is the first segment");
    assert_eq!(segment_ids(&event), [&*segment]);
    assert_eq!(event.data.first_name.as_deref(), Some("Ada"));
    assert_eq!(event.data.last_name.as_deref(), Some("Lovelace"));
    assert!(!event.data.unsubscribed);
    assert_recent_iso8601(&event.data.created_at);
    assert_eq!(event.data.updated_at, event.data.created_at);
    let ada_created_at = event.data.created_at;

    let event = deliveries.contact("contact.created", &grace);
    assert!(matches!(event.r#type, ContactEventType::ContactCreated), "{event:?}");
    assert_eq!(event.data.id, *grace);
    assert_eq!(event.data.email, grace_email);
    assert_eq!(event.data.audience_id, "", "no segment, no audience: an empty string");
    assert!(event.data.segment_ids.is_empty(), "{event:?}");
    assert_eq!(event.data.first_name, None);
    assert_eq!(event.data.last_name, None);
    assert!(!event.data.unsubscribed);
    assert_recent_iso8601(&event.data.created_at);

    // contact.topics.updated: the contact's own choices (resend-rs keeps `email` and `topics`).
    let event = deliveries.contact_topics(&ada);
    assert!(
        matches!(event.r#type, ContactTopicsEventType::ContactTopicsUpdated),
        "{event:?}"
    );
    assert_recent_iso8601(&event.created_at);
    assert_eq!(event.data.email, ada_email);
    assert_eq!(event.data.topics.len(), 1, "{event:?}");
    assert_eq!(event.data.topics[0].id, topic);
    assert_eq!(event.data.topics[0].subscription, SubscriptionType::OptOut);

    // contact.updated: Ada's with the opt-out, Grace's with her new name.
    let event = deliveries.contact("contact.updated", &ada);
    assert!(matches!(event.r#type, ContactEventType::ContactUpdated), "{event:?}");
    assert_eq!(event.data.id, *ada);
    assert_eq!(event.data.email, ada_email);
    assert_eq!(event.data.audience_id, *segment);
    assert_eq!(segment_ids(&event), [&*segment]);
    assert!(!event.data.unsubscribed, "opting out of a topic is not unsubscribing");
    assert_eq!(event.data.created_at, ada_created_at);
    assert!(
        iso8601(&event.data.updated_at) >= iso8601(&event.data.created_at),
        "{event:?}"
    );

    let event = deliveries.contact("contact.updated", &grace);
    assert!(matches!(event.r#type, ContactEventType::ContactUpdated), "{event:?}");
    assert_eq!(event.data.id, *grace);
    assert_eq!(event.data.audience_id, "");
    assert!(event.data.segment_ids.is_empty(), "{event:?}");
    assert_eq!(event.data.first_name.as_deref(), Some("Grace"));
    assert!(
        iso8601(&event.data.updated_at) >= iso8601(&event.data.created_at),
        "{event:?}"
    );

    // contact.deleted: the contact as it was.
    let event = deliveries.contact("contact.deleted", &ada);
    assert!(matches!(event.r#type, ContactEventType::ContactDeleted), "{event:?}");
    assert_eq!(event.data.id, *ada);
    assert_eq!(event.data.email, ada_email);
    assert_eq!(event.data.audience_id, *segment);
    assert_eq!(segment_ids(&event), [&*segment]);

    let event = deliveries.contact("contact.deleted", &grace);
    assert!(matches!(event.r#type, ContactEventType::ContactDeleted), "{event:?}");
    assert_eq!(event.data.id, *grace);
    assert_eq!(event.data.email, grace_email);
    assert_eq!(event.data.audience_id, "");
    assert_eq!(event.data.first_name.as_deref(), Some("Grace"));

    // topic.created, topic.updated, topic.deleted
    let event = deliveries.topic("topic.created", &topic);
    assert!(matches!(event.r#type, TopicEventType::TopicCreated), "{event:?}");
    assert_recent_iso8601(&event.created_at);
    assert_eq!(event.data.id, topic);
    assert_eq!(event.data.name, "Product");
    assert_eq!(event.data.description.as_deref(), Some("Product news"));
    assert_eq!(event.data.default_subscription, SubscriptionType::OptIn);
    assert!(!event.data.deleted);
    assert_recent_iso8601(&event.data.created_at);
    // herald reads the clock once for each of the two: they may be a millisecond apart.
    let age = iso8601(&event.data.updated_at) - iso8601(&event.data.created_at);
    assert!(
        age >= chrono::TimeDelta::zero() && age < chrono::TimeDelta::seconds(1),
        "{event:?}"
    );
    let topic_created_at = event.data.created_at;

    let event = deliveries.topic("topic.updated", &topic);
    assert!(matches!(event.r#type, TopicEventType::TopicUpdated), "{event:?}");
    assert_eq!(event.data.id, topic);
    assert_eq!(event.data.name, "Products");
    assert_eq!(event.data.description.as_deref(), Some("Product news"));
    assert_eq!(event.data.default_subscription, SubscriptionType::OptIn);
    assert!(!event.data.deleted);
    assert_eq!(event.data.created_at, topic_created_at);
    assert!(
        iso8601(&event.data.updated_at) >= iso8601(&event.data.created_at),
        "{event:?}"
    );

    let event = deliveries.topic("topic.deleted", &topic);
    assert!(matches!(event.r#type, TopicEventType::TopicDeleted), "{event:?}");
    assert_eq!(event.data.id, topic);
    assert_eq!(event.data.name, "Products");
    assert_eq!(event.data.default_subscription, SubscriptionType::OptIn);
    assert!(event.data.deleted, "topic.deleted says deleted");
    assert_eq!(event.data.created_at, topic_created_at);
}
