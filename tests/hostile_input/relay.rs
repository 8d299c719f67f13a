//! The open-relay matrix: every source address, listener, TLS state, credential, sender
//! and external recipient, and only the own key over TLS from the verified domain may
//! send; the same again with both listeners `mx = true`, where a client without AUTH
//! opens an inbound transaction and every external recipient is refused at `RCPT`. One
//! source is a trusted network (`[[smtp.trusted]]`, `127.0.0.3/32`, as the own key): from
//! it, a client without AUTH (or whose AUTH failed) submits as that key, from the verified
//! domain only, on every listener (a loopback network is trusted on `mx` listeners too).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hyper::{Method, StatusCode};
use serde_json::json;

use super::client::{Client, Reply};
use super::server::Server;
use crate::util::{self, OPERATOR_KEY};
use crate::{LOCAL, SENDER, WRONG_KEY, message};

// ---------------------------------------------------------------------------------------
// Open relay
// ---------------------------------------------------------------------------------------

/// Where the client connects from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// An address no entry trusts.
    Untrusted,
    /// `127.0.0.3`, in the trusted network.
    Trusted,
}

/// The trusted client's address.
const TRUSTED: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));

/// How the client reaches herald.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listener {
    /// The STARTTLS port, never upgraded.
    Plaintext,
    /// The STARTTLS port after STARTTLS.
    AfterStartTls,
    /// The implicit-TLS port.
    ImplicitTls,
}

/// What the client authenticates with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credentials {
    None,
    WrongKey,
    /// A valid key of a team that has no domain.
    OtherTeamKey,
    /// A valid key of the team that owns `example.test`.
    OwnKey,
}

/// The envelope sender and the `From:` header.
#[derive(Debug, Clone, Copy)]
struct Sender {
    name: &'static str,
    envelope: &'static str,
    header: &'static str,
}

const SENDERS: [Sender; 5] = [
    Sender {
        name: "verified",
        envelope: SENDER,
        header: SENDER,
    },
    Sender {
        name: "unverified",
        envelope: "someone@unverified.example",
        header: "someone@unverified.example",
    },
    Sender {
        name: "null <>",
        envelope: "",
        header: SENDER,
    },
    Sender {
        name: "verified envelope, unverified From:",
        envelope: SENDER,
        header: "someone@unverified.example",
    },
    Sender {
        name: "unverified envelope, verified From:",
        envelope: "someone@unverified.example",
        header: SENDER,
    },
];

/// External recipients, plainly and in the old relay tricks (a source route, the
/// percent hack).
const RECIPIENTS: [&str; 3] = [
    "victim@external.example",
    "@example.test:victim@external.example",
    "victim%external.example@example.test",
];

#[derive(Debug, Clone, Copy)]
struct Combination {
    source: Source,
    listener: Listener,
    credentials: Credentials,
    sender: Sender,
    recipient: &'static str,
}

impl fmt::Display for Combination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}, {:?}, {:?}, {} sender, RCPT TO:<{}>",
            self.source, self.listener, self.credentials, self.sender.name, self.recipient
        )
    }
}

/// The email id, or the stage (`MAIL`, `RCPT`, `DATA`, `end of DATA`) and the reply that
/// refused the message.
type Outcome = Result<String, (&'static str, Reply)>;

/// What one attempt got.
#[derive(Debug)]
struct Attempt {
    /// The reply to AUTH, when the client tried.
    auth: Option<Reply>,
    outcome: Outcome,
    transcript: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_combination_of_listener_tls_and_credentials_relays() {
    matrix(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_combination_relays_through_mx_listeners_either() {
    matrix(true).await;
}

/// Runs every combination against listeners with `mx` as given.
async fn matrix(mx: bool) {
    // Wrong keys come from their own address, with no lockout, so that guessing does not
    // lock out the valid combinations running beside them.
    let limits = "auth_failures_max = 1000\nconnections_per_address_max = 1000\n";
    let mut server = Server::start_trusted(limits, mx, "127.0.0.3/32").await;
    let other_team = util::call(
        server.http(),
        Method::POST,
        "/teams",
        Some(OPERATOR_KEY),
        Some(json!({ "name": "Other" })),
    )
    .await;
    assert_eq!(other_team.status, StatusCode::CREATED, "{}", other_team.text());
    let other_key = other_team.json()["api_key"]["token"]
        .as_str()
        .expect("the new team's key")
        .to_owned();

    let smtp = [server.starttls(), server.implicit()];
    let limit = Arc::new(tokio::sync::Semaphore::new(24));
    let mut attempts = tokio::task::JoinSet::new();
    let mut allowed = 0;
    for source in [Source::Untrusted, Source::Trusted] {
        for listener in [Listener::Plaintext, Listener::AfterStartTls, Listener::ImplicitTls] {
            for credentials in [
                Credentials::None,
                Credentials::WrongKey,
                Credentials::OtherTeamKey,
                Credentials::OwnKey,
            ] {
                for sender in SENDERS {
                    for recipient in RECIPIENTS {
                        let combination = Combination {
                            source,
                            listener,
                            credentials,
                            sender,
                            recipient,
                        };
                        allowed += usize::from(combination.allowed());
                        let key = match credentials {
                            Credentials::None => None,
                            Credentials::WrongKey => Some(WRONG_KEY.to_owned()),
                            Credentials::OtherTeamKey => Some(other_key.clone()),
                            Credentials::OwnKey => Some(OPERATOR_KEY.to_owned()),
                        };
                        let limit = Arc::clone(&limit);
                        attempts.spawn(async move {
                            let _permit = limit.acquire_owned().await.expect("semaphore");
                            (combination, attempt(smtp, combination, key).await)
                        });
                    }
                }
            }
        }
    }
    let mut failures = Vec::new();
    let mut accepted = Vec::new();
    let mut tried = 0;
    while let Some(joined) = attempts.join_next().await {
        let (combination, attempt) = joined.expect("attempt task");
        tried += 1;
        match attempt {
            Err(why) => failures.push(format!("[{combination}] {why}")),
            Ok(attempt) => {
                if let Err(why) = judge(&combination, &attempt, mx) {
                    failures.push(format!("[{combination}] {why}\n{}", attempt.transcript));
                }
                if let Ok(id) = attempt.outcome {
                    accepted.push(id);
                }
            }
        }
    }
    assert_eq!(tried, 2 * 3 * 4 * SENDERS.len() * RECIPIENTS.len());
    assert!(
        failures.is_empty(),
        "{} of {tried} combinations failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // Untrusted, only the own key over TLS from the verified domain: two TLS states, three
    // recipients. Trusted, whatever speaks as the own key from the verified domain: no
    // AUTH, a wrong key or the own key on all three, the other team's key in plain text.
    assert_eq!(allowed, (2 + 3 * 3 + 1) * RECIPIENTS.len());
    assert_eq!(accepted.len(), allowed, "{accepted:?}");
    server.expected = accepted.len();
    server
        .check_recorded()
        .await
        .expect("only the accepted messages are recorded");
    let (mut recorded, _) = server.recorded().await;
    recorded.sort();
    accepted.sort();
    assert_eq!(recorded, accepted);
    server.check_healthy(LOCAL).await.expect("healthy");
    server.running.shutdown().await;
}

impl Combination {
    /// The key the client speaks as: the one it authenticated with (over TLS), else, from
    /// the trusted network, the network's (the own key).
    fn speaks_as(&self) -> Option<Credentials> {
        let tls = self.listener != Listener::Plaintext;
        match self.credentials {
            Credentials::OtherTeamKey | Credentials::OwnKey if tls => Some(self.credentials),
            _ if self.source == Source::Trusted => Some(Credentials::OwnKey),
            _ => None,
        }
    }

    /// Whether it may send: as the own key, from the verified domain.
    fn allowed(&self) -> bool {
        self.speaks_as() == Some(Credentials::OwnKey) && self.sender.envelope == SENDER && self.sender.header == SENDER
    }
}

/// The combinations allowed to send, and the refusal every other one must get. On an
/// `mx` listener, an untrusted client that did not authenticate is an MX handing in mail:
/// `MAIL` is taken and each external recipient refused at `RCPT` with `550 5.7.1`.
fn judge(combination: &Combination, attempt: &Attempt, mx: bool) -> Result<(), String> {
    let tls = combination.listener != Listener::Plaintext;
    let auth = attempt.auth.as_ref().map(|reply| (reply.code, reply.enhanced.as_str()));
    let auth_wanted = match (combination.credentials, tls) {
        (Credentials::None, _) => None,
        (_, false) => Some((530, "5.7.0")),
        (Credentials::WrongKey, true) => Some((535, "5.7.8")),
        (Credentials::OtherTeamKey | Credentials::OwnKey, true) => Some((235, "2.7.0")),
    };
    if auth != auth_wanted {
        return Err(format!("AUTH answered {auth:?}, wanted {auth_wanted:?}"));
    }
    let speaks_as = combination.speaks_as();
    let authenticated = speaks_as.is_some();
    let allowed = combination.allowed();
    match (&attempt.outcome, allowed) {
        (Ok(_), true) => Ok(()),
        (Ok(id), false) => Err(format!("RELAYED: accepted as {id}")),
        (Err((stage, reply)), true) => Err(format!("refused at {stage}: {}", reply.text)),
        (Err((stage, reply)), false) => {
            // The envelope sender is judged at MAIL (as Postfix's
            // `reject_sender_login_mismatch` does), before any of the message is sent; the
            // `From:` header once the message is in.
            let envelope_ours = speaks_as == Some(Credentials::OwnKey) && combination.sender.envelope == SENDER;
            let wanted = if !authenticated && mx {
                ("RCPT", 550, "5.7.1")
            } else if !authenticated {
                ("MAIL", 530, "5.7.0")
            } else if !envelope_ours {
                ("MAIL", 550, "5.7.1")
            } else {
                ("end of DATA", 550, "5.7.1")
            };
            let wanted = Some(wanted);
            match wanted {
                Some(wanted) if (*stage, reply.code, reply.enhanced.as_str()) != wanted => Err(format!(
                    "refused at {stage} with {}; wanted {} {} at {}",
                    reply.text, wanted.1, wanted.2, wanted.0
                )),
                None if reply.code < 500 => Err(format!("refused at {stage} with a transient {}", reply.text)),
                _ => Ok(()),
            }
        }
    }
}

/// One relay attempt, step by step as a careful client would (no pipelining): stops at
/// the first refusal of MAIL, RCPT or DATA.
async fn attempt(smtp: [SocketAddr; 2], combination: Combination, key: Option<String>) -> Result<Attempt, String> {
    let from = match (combination.source, combination.credentials) {
        (Source::Trusted, _) => TRUSTED,
        (Source::Untrusted, Credentials::WrongKey) => IpAddr::V4(Ipv4Addr::new(127, 0, 0, 6)),
        (Source::Untrusted, _) => LOCAL,
    };
    let mut client = match combination.listener {
        Listener::Plaintext => Client::plain(smtp[0], from).await?.boxed(),
        Listener::AfterStartTls => {
            let mut plain = Client::plain(smtp[0], from).await?;
            plain.command("EHLO client.test", 250, "").await?;
            plain.command("STARTTLS", 220, "2.0.0").await?;
            plain.starttls().await?.boxed()
        }
        Listener::ImplicitTls => Client::implicit(smtp[1], from).await?.boxed(),
    };
    let outcome: Result<(Option<Reply>, Outcome), String> = async {
        client.command("EHLO client.test", 250, "").await?;
        let auth = match key {
            Some(key) => {
                client
                    .send(format!("AUTH PLAIN {}\r\n", util::auth_plain(&key)).as_bytes())
                    .await;
                Some(client.reply().await.map_err(|e| format!("AUTH: {e}"))?)
            }
            None => None,
        };
        let sender = combination.sender;
        let steps = [
            ("MAIL", format!("MAIL FROM:<{}>", sender.envelope), 250),
            ("RCPT", format!("RCPT TO:<{}>", combination.recipient), 250),
            ("DATA", "DATA".to_owned(), 354),
        ];
        for (stage, line, code) in steps {
            client.send(format!("{line}\r\n").as_bytes()).await;
            let reply = client.reply().await.map_err(|e| format!("{stage}: {e}"))?;
            if reply.code != code {
                return Ok((auth, Err((stage, reply))));
            }
        }
        client
            .send(format!("{}.\r\n", message(sender.header, "relay")).as_bytes())
            .await;
        let reply = client.reply().await.map_err(|e| format!("end of DATA: {e}"))?;
        let _ = client.command("QUIT", 221, "2.0.0").await;
        match reply.text.strip_prefix("250 2.0.0 OK ") {
            Some(id) => Ok((auth, Ok(id.to_owned()))),
            None => Ok((auth, Err(("end of DATA", reply)))),
        }
    }
    .await;
    match outcome {
        Ok((auth, outcome)) => Ok(Attempt {
            auth,
            outcome,
            transcript: client.transcript,
        }),
        Err(why) => Err(format!("{why}\n{}", client.transcript)),
    }
}
