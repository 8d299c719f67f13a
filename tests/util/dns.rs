//! A real authoritative DNS server for integration tests, on `127.0.0.1` and an ephemeral
//! port, answering over UDP and TCP on the same port from a table that tests change while
//! it runs.
//!
//! The table maps lower-cased names without the trailing dot to their TXT and MX records.
//! Answers follow RFC 1035 and RFC 2308 as far as a resolver can tell: the AA flag is set,
//! a name with records of other types only answers NOERROR with no answers (NODATA), an
//! unknown name answers NXDOMAIN, and a UDP answer larger than the client's payload size
//! is sent truncated (TC) so the client retries over TCP. Records carry a long TTL, so a
//! test that sees a changed record proves the client did not cache the old one.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, CNAME, MX, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::{JoinHandle, JoinSet};

/// TTL of every record served: long enough that a caching client would keep it for the
/// whole test.
const TTL: u32 = 3600;

/// The longest character-string a TXT record can hold (RFC 1035 §3.3: a length byte).
const CHARACTER_STRING_LEN_MAX: usize = 255;

/// The payload size this server advertises in its EDNS answers (the DNS Flag Day 2020
/// value).
const EDNS_PAYLOAD_LEN: u16 = 1232;

/// Attempts to find a port free for both UDP and TCP before giving up.
const BIND_ATTEMPTS: usize = 50;

/// The record of kind `kind` (`DKIM`, `SPF`) and DNS type `rtype` in a domain as
/// `POST /domains` answers it.
pub fn domain_record<'a>(domain: &'a serde_json::Value, kind: &str, rtype: &str) -> &'a serde_json::Value {
    domain["records"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["record"] == kind && r["type"] == rtype)
        .unwrap_or_else(|| panic!("no {kind} {rtype} record in {domain}"))
}

/// A running test DNS server. Dropping it stops the server.
pub struct TestDns {
    addr: SocketAddr,
    state: Arc<State>,
    tasks: Vec<JoinHandle<()>>,
}

impl TestDns {
    /// Starts a server on `127.0.0.1` and a port free for both UDP and TCP.
    pub async fn start() -> TestDns {
        let (udp, tcp) = bind().await;
        let addr = udp.local_addr().expect("UDP socket has an address");
        let state = Arc::new(State::default());
        let tasks = vec![
            tokio::spawn(serve_udp(udp, state.clone())),
            tokio::spawn(serve_tcp(tcp, state.clone())),
        ];
        TestDns { addr, state, tasks }
    }

    /// The address to use as a nameserver, UDP and TCP alike.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the TXT records at `name` with one record per value. A value longer
    /// than 255 bytes is split into several character-strings, as DKIM keys are.
    pub fn set_txt(&self, name: &str, values: &[&str]) {
        let records = values.iter().map(|value| txt(value)).collect();
        self.state.zone().entry(key(name)).or_default().txt = records;
    }

    /// Replaces the MX records at `name` with `(preference, exchange)` pairs.
    pub fn set_mx(&self, name: &str, records: &[(u16, &str)]) {
        let records = records
            .iter()
            .map(|&(preference, exchange)| {
                let exchange = Name::from_ascii(exchange).expect("test MX exchange is a valid name");
                MX::new(preference, exchange)
            })
            .collect();
        self.state.zone().entry(key(name)).or_default().mx = records;
    }

    /// Sets the CNAME at `name` to `target`.
    pub fn set_cname(&self, name: &str, target: &str) {
        let target = Name::from_ascii(target).expect("test CNAME target is a valid name");
        self.state.zone().entry(key(name)).or_default().cname = Some(target);
    }

    /// Replaces the A records at `name`.
    pub fn set_a(&self, name: &str, addresses: &[Ipv4Addr]) {
        self.state.zone().entry(key(name)).or_default().a = addresses.to_vec();
    }

    /// Deletes every record at `name` and clears [`TestDns::fail`]: the name then
    /// answers NXDOMAIN.
    pub fn remove(&self, name: &str) {
        self.state.zone().remove(&key(name));
    }

    /// Makes every query for `name` answer SERVFAIL until [`TestDns::remove`].
    pub fn fail(&self, name: &str) {
        self.state.zone().entry(key(name)).or_default().failing = true;
    }

    /// Publishes the records `domain` (a domain as `POST /domains` answers it) asks for:
    /// its DKIM TXT record, and the SPF TXT and MX records of its return path.
    pub fn publish_domain(&self, domain: &serde_json::Value) {
        let name = domain["name"].as_str().expect("name");
        let record = |kind: &str, rtype: &str| domain_record(domain, kind, rtype).clone();
        let host = |record: &serde_json::Value| format!("{}.{name}", record["name"].as_str().expect("name"));
        let value = |record: &serde_json::Value| record["value"].as_str().expect("value").to_owned();
        let dkim = record("DKIM", "TXT");
        self.set_txt(&host(&dkim), &[&value(&dkim)]);
        let spf = record("SPF", "TXT");
        self.set_txt(&host(&spf), &[&value(&spf)]);
        let mx = record("SPF", "MX");
        self.set_mx(&host(&mx), &[(10, &value(&mx))]);
    }

    /// How many queries arrived over TCP, to tell that a client fell back from UDP.
    pub fn tcp_queries(&self) -> usize {
        self.state.tcp_queries.load(Ordering::Relaxed)
    }
}

impl Drop for TestDns {
    fn drop(&mut self) {
        // Aborting the TCP task also drops its `JoinSet`, which aborts every connection.
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What the server tasks share with the test.
#[derive(Default)]
struct State {
    zone: Mutex<HashMap<String, Entry>>,
    tcp_queries: AtomicUsize,
}

impl State {
    fn zone(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panicking test thread cannot leave the table half-written: every change is a
        // single assignment or removal.
        self.zone.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Everything at one name.
#[derive(Default)]
struct Entry {
    txt: Vec<TXT>,
    mx: Vec<MX>,
    a: Vec<Ipv4Addr>,
    cname: Option<Name>,
    failing: bool,
}

impl Entry {
    /// Whether the name exists: it owns at least one record.
    fn exists(&self) -> bool {
        !self.txt.is_empty() || !self.mx.is_empty() || !self.a.is_empty() || self.cname.is_some()
    }

    fn records(&self, record_type: RecordType) -> Vec<RData> {
        match record_type {
            RecordType::TXT => self.txt.iter().cloned().map(RData::TXT).collect(),
            RecordType::MX => self.mx.iter().cloned().map(RData::MX).collect(),
            RecordType::A => self.a.iter().map(|ip| RData::A(A(*ip))).collect(),
            RecordType::CNAME => self.cname.iter().cloned().map(|n| RData::CNAME(CNAME(n))).collect(),
            _ => Vec::new(),
        }
    }
}

/// The table's key for `name`: DNS names compare case-insensitively, and the trailing
/// dot is implied.
fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// One TXT record holding `value`, split into character-strings of at most 255 bytes.
fn txt(value: &str) -> TXT {
    let mut strings: Vec<&[u8]> = value.as_bytes().chunks(CHARACTER_STRING_LEN_MAX).collect();
    if strings.is_empty() {
        // A TXT record holds at least one character-string, possibly empty.
        strings.push(b"");
    }
    TXT::from_bytes(strings)
}

/// Binds UDP on port 0, then TCP on the same port, trying again when another process
/// already holds that port for TCP.
async fn bind() -> (UdpSocket, TcpListener) {
    let mut last_error = None;
    for _ in 0..BIND_ATTEMPTS {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("bind UDP on 127.0.0.1");
        let addr = udp.local_addr().expect("UDP socket has an address");
        match TcpListener::bind(addr).await {
            Ok(tcp) => return (udp, tcp),
            Err(error) if error.kind() == io::ErrorKind::AddrInUse => last_error = Some(error),
            Err(error) => panic!("bind TCP on {addr}: {error}"),
        }
    }
    panic!("no port free for both UDP and TCP after {BIND_ATTEMPTS} attempts: {last_error:?}");
}

async fn serve_udp(socket: UdpSocket, state: Arc<State>) {
    // The largest UDP payload; queries are far smaller, but a short buffer would cut them.
    let mut buffer = vec![0; usize::from(u16::MAX)];
    loop {
        let Ok((len, peer)) = socket.recv_from(&mut buffer).await else {
            // Errors on an unconnected UDP socket concern one datagram, not the socket.
            continue;
        };
        if let Some(reply) = answer(&state, &buffer[..len], Transport::Udp) {
            let _ = socket.send_to(&reply, peer).await;
        }
    }
}

async fn serve_tcp(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        while connections.try_join_next().is_some() {}
        connections.spawn(serve_tcp_connection(stream, state.clone()));
    }
}

/// Answers length-prefixed queries (RFC 1035 §4.2.2) until the client closes.
async fn serve_tcp_connection(mut stream: TcpStream, state: Arc<State>) {
    loop {
        let Ok(len) = stream.read_u16().await else {
            return;
        };
        let mut query = vec![0; usize::from(len)];
        if stream.read_exact(&mut query).await.is_err() {
            return;
        }
        state.tcp_queries.fetch_add(1, Ordering::Relaxed);
        let Some(reply) = answer(&state, &query, Transport::Tcp) else {
            return;
        };
        let len = u16::try_from(reply.len()).expect("test answers fit a TCP DNS message");
        if stream.write_u16(len).await.is_err() || stream.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// How a query arrived, which decides whether a large answer must be truncated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// The encoded answer to the encoded `query`, or `None` for bytes that are not a DNS
/// query (they get no answer, as from a real server).
fn answer(state: &State, query: &[u8], transport: Transport) -> Option<Vec<u8>> {
    let query = Message::from_vec(query).ok()?;
    if query.metadata.message_type != MessageType::Query {
        return None;
    }
    let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
    reply.metadata.authoritative = true;
    reply.metadata.recursion_desired = query.metadata.recursion_desired;
    reply.add_queries(query.queries.iter().cloned());
    if query.edns.is_some() {
        // RFC 6891 §6.1.1: a query with OPT gets an answer with OPT.
        let mut edns = Edns::new();
        edns.set_max_payload(EDNS_PAYLOAD_LEN);
        reply.set_edns(edns);
    }
    match (query.metadata.op_code, query.queries.as_slice()) {
        (OpCode::Query, [question]) => {
            let name = question.name();
            let zone = state.zone();
            match zone.get(&key(&name.to_ascii())) {
                Some(entry) if entry.failing => reply.metadata.response_code = ResponseCode::ServFail,
                Some(entry) if entry.exists() => {
                    let records = entry.records(question.query_type());
                    // Answers repeat the question's name byte for byte, case included.
                    reply.add_answers(
                        records
                            .into_iter()
                            .map(|data| Record::from_rdata(name.clone(), TTL, data)),
                    );
                }
                _ => reply.metadata.response_code = ResponseCode::NXDomain,
            }
        }
        (OpCode::Query, _) => reply.metadata.response_code = ResponseCode::FormErr,
        _ => reply.metadata.response_code = ResponseCode::NotImp,
    }
    let encoded = reply.to_vec().expect("test answers encode");
    if transport == Transport::Udp && encoded.len() > usize::from(query.max_payload()) {
        return Some(reply.truncate().to_vec().expect("truncated answers encode"));
    }
    Some(encoded)
}
