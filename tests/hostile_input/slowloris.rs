//! Slowloris: clients that trickle, stall or never finish, on SMTP and HTTP, while a
//! well-behaved client is served beside them.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::{Client, Wire, connect, read_responses};
use super::server::Server;
use super::smtp::{OPENED, transaction};
use crate::util::{self, OPERATOR_KEY};
use crate::{LOCAL, REPLY_WAIT, SENDER, message};

#[tokio::test]
async fn slowloris_clients_are_answered_or_dropped_while_others_are_served() {
    let mut server = Server::start("idle_timeout = \"1s\"\nsession_time_max = \"4s\"\n").await;
    let slow = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 5));
    let (trickled, stalled, endless, bdat, data, http, body, served) = tokio::join!(
        trickled_commands_are_answered(&server, slow),
        stalled_line_times_out(&server, slow),
        endless_trickle_is_cut_at_session_time_max(&server, slow),
        bdat_chunk_that_never_arrives_times_out(&server, slow),
        data_that_stops_midway_times_out(&server, slow),
        trickled_http_request_is_answered(&server),
        stalled_http_body_is_refused(&server),
        async {
            // While the slow clients hold their connections, a normal one is served.
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.serves(LOCAL).await
        },
    );
    let mut failures = Vec::new();
    for (name, outcome) in [
        ("a command sent a byte at a time is answered", trickled),
        ("a client that stops mid-line is dropped at idle_timeout", stalled),
        ("a client that never ends its line is cut at session_time_max", endless),
        ("a BDAT chunk that never arrives times out", bdat),
        ("DATA that stops midway times out", data),
        ("an HTTP request sent a byte at a time is answered", http),
        ("an HTTP body that stops midway is refused", body),
        ("a normal client is served meanwhile", served.map(drop)),
    ] {
        if let Err(why) = outcome {
            failures.push(format!("[{name}] {why}"));
        }
    }
    server.expected += 1;
    if let Err(why) = server.check_recorded().await {
        failures.push(format!("[recorded] {why}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    server.check_healthy(LOCAL).await.expect("healthy");
    server.running.shutdown().await;
}

/// Writes `bytes` one at a time, `gap` apart.
async fn trickle<S: Wire>(client: &mut Client<S>, bytes: &[u8], gap: Duration) {
    for byte in bytes {
        client.send(std::slice::from_ref(byte)).await;
        tokio::time::sleep(gap).await;
    }
}

async fn trickled_commands_are_answered(server: &Server, from: IpAddr) -> Result<(), String> {
    let mut client = Client::plain(server.starttls(), from).await?;
    let outcome = async {
        // Each byte comes well within idle_timeout; the whole line takes longer than it.
        trickle(&mut client, b"EHLO slow.test\r\n", Duration::from_millis(90)).await;
        client.expect_reply(250, "").await?;
        trickle(&mut client, b"NOOP\r\n", Duration::from_millis(90)).await;
        client.expect_reply(250, "2.0.0").await?;
        client.command("QUIT", 221, "2.0.0").await.map(drop)
    }
    .await;
    outcome.map_err(|why| format!("{why}\n{}", client.transcript))
}

async fn stalled_line_times_out(server: &Server, from: IpAddr) -> Result<(), String> {
    let mut client = Client::plain(server.starttls(), from).await?;
    let outcome = async {
        client.send(b"NOO").await;
        let started = Instant::now();
        client.expect_reply(421, "4.4.2").await?;
        if started.elapsed() < Duration::from_secs(1) {
            return Err(format!("dropped after {:?}, before idle_timeout", started.elapsed()));
        }
        client.expect_closed().await
    }
    .await;
    outcome.map_err(|why| format!("{why}\n{}", client.transcript))
}

/// At `session_time_max` a client, abusive or just slow, is told why with a `421`, as at
/// `idle_timeout` (herald once dropped the connection without a word).
async fn endless_trickle_is_cut_at_session_time_max(server: &Server, from: IpAddr) -> Result<(), String> {
    // Herald's clock for the session starts when it accepts, after this one.
    let started = Instant::now();
    let client = Client::plain(server.starttls(), from).await?;
    let (mut reader, mut writer) = tokio::io::split(client.stream);
    let write = async {
        // A byte every 300 ms keeps idle_timeout (1 s) from ever firing, and never
        // completes a line before session_time_max (4 s).
        for _ in 0..40 {
            if writer.write_all(b"X").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        std::future::pending::<()>().await;
    };
    let read = async {
        let mut received = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(4) + REPLY_WAIT;
        loop {
            let mut chunk = [0u8; 1024];
            match tokio::time::timeout_at(deadline, reader.read(&mut chunk)).await {
                Err(_) => return (received, false),
                Ok(Ok(0) | Err(_)) => return (received, true),
                Ok(Ok(n)) => received.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let (received, closed) = tokio::select! {
        () = write => unreachable!("the writer never finishes"),
        outcome = read => outcome,
    };
    let received = String::from_utf8_lossy(&received);
    if !closed {
        return Err(format!("still connected after {:?}", started.elapsed()));
    }
    if started.elapsed() < Duration::from_secs(4) {
        return Err(format!("closed after {:?}, before session_time_max", started.elapsed()));
    }
    if !received.starts_with("421 ") {
        return Err(format!(
            "closed after {:?} without a 421 reply; herald said {received:?}",
            started.elapsed()
        ));
    }
    Ok(())
}

async fn bdat_chunk_that_never_arrives_times_out(server: &Server, from: IpAddr) -> Result<(), String> {
    let mut client = Client::implicit(server.implicit(), from).await?;
    let outcome = async {
        client.command("EHLO slow.test", 250, "").await?;
        let auth = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));
        client.command(&auth, 235, "2.7.0").await?;
        let promise = format!(
            "MAIL FROM:<{SENDER}>\r\nRCPT TO:<user@example.org>\r\nBDAT 100000 LAST\r\n{}",
            message(SENDER, "never")
        );
        client.send(promise.as_bytes()).await;
        client.expect_reply(250, "2.1.0").await?;
        client.expect_reply(250, "2.1.5").await?;
        client.expect_reply(421, "4.4.2").await?;
        client.expect_closed().await
    }
    .await;
    outcome.map_err(|why| format!("{why}\n{}", client.transcript))
}

async fn data_that_stops_midway_times_out(server: &Server, from: IpAddr) -> Result<(), String> {
    let mut client = Client::implicit(server.implicit(), from).await?;
    let outcome = async {
        client.command("EHLO slow.test", 250, "").await?;
        let auth = format!("AUTH PLAIN {}", util::auth_plain(OPERATOR_KEY));
        client.command(&auth, 235, "2.7.0").await?;
        let partial = format!("{}{}", transaction("user@example.org"), message(SENDER, "partial"));
        client.send(partial.as_bytes()).await;
        for (code, enhanced) in OPENED {
            client.expect_reply(*code, enhanced).await?;
        }
        client.expect_reply(421, "4.4.2").await?;
        client.expect_closed().await
    }
    .await;
    outcome.map_err(|why| format!("{why}\n{}", client.transcript))
}

/// A request whose body stops after 10 of its 100 bytes is refused with `400` once
/// nothing has arrived for 30 s, not held for ever.
async fn stalled_http_body_is_refused(server: &Server) -> Result<(), String> {
    let mut stream = connect(server.http(), LOCAL).await?;
    let head = format!(
        "POST /emails HTTP/1.1\r\nHost: herald.test\r\nAuthorization: Bearer {OPERATOR_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"from\": \""
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("write: {e}"))?;
    let started = Instant::now();
    // Longer than the reply wait of the other checks: the body's idle limit is 30 s.
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(40), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    match answer.split_once(' ').and_then(|(_, rest)| rest.get(..3)) {
        Some("400") if answer.contains("stalled") && started.elapsed() >= Duration::from_secs(29) => Ok(()),
        _ => Err(format!(
            "wanted a 400 saying the body stalled after 30 s, got {answer:?} after {:?}",
            started.elapsed()
        )),
    }
}

async fn trickled_http_request_is_answered(server: &Server) -> Result<(), String> {
    let mut stream = connect(server.http(), LOCAL).await?;
    let request = b"GET /healthz HTTP/1.1\r\nHost: herald.test\r\nConnection: close\r\n\r\n";
    for byte in request {
        stream
            .write_all(std::slice::from_ref(byte))
            .await
            .map_err(|e| format!("write: {e}"))?;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (responses, _) = read_responses(&mut stream).await;
    match responses.as_slice() {
        [(200, _)] => Ok(()),
        other => Err(format!("wanted one 200 response, got {other:?}")),
    }
}
