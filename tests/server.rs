//! The server shell over real sockets: HTTP health and metrics, SMTP listeners with TLS,
//! the first start's bootstrap key, certificate reload and shutdown.

mod util;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use herald::accounts::{Bootstrap, Token};
use hyper::{Method, StatusCode};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use util::{config, get, http, read_line, start};

#[tokio::test]
async fn healthz_and_metrics_answer_without_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    let health = get(running.http_addr, "/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.content_type(), "application/json; charset=utf-8");
    let body = health.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["spool"]["messages"], 0);

    let metrics = get(running.http_addr, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics.content_type().starts_with("text/plain"),
        "{}",
        metrics.content_type()
    );
    let text = metrics.text();
    assert!(text.contains("herald_http_requests_total"), "{text}");
    assert!(text.contains("route=\"healthz\""), "{text}");
    assert!(
        text.contains("herald_store_table_bytes{table=\"emails\",where=\"memory\"}"),
        "{text}"
    );
    assert!(text.contains("herald_store_table_keys{table=\"due\"}"), "{text}");
    assert!(running.shutdown().await);
}

#[tokio::test]
async fn only_healthz_and_metrics_answer_without_a_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    for path in ["/nope", "/domains", "/api-keys"] {
        let refused = get(running.http_addr, path).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(refused.content_type(), "application/json; charset=utf-8");
        let body = refused.json();
        assert_eq!(body["statusCode"], 401);
        assert_eq!(body["name"], "missing_api_key");
    }
    let wrong = http(running.http_addr, Method::POST, "/healthz").await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong.json()["name"], "method_not_allowed");
    running.shutdown().await;
}

#[tokio::test]
async fn healthz_reports_unavailable_when_the_disk_is_below_the_minimum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = config(dir.path(), "");
    config.spool.min_free_space = u64::MAX;
    let running = start(config).await;
    let health = get(running.http_addr, "/healthz").await;
    assert_eq!(health.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = health.json();
    assert_eq!(body["status"], "unavailable");
    assert!(
        body["reason"]
            .as_str()
            .is_some_and(|r| r.contains("insufficient storage")),
        "{body}"
    );
    running.shutdown().await;
}

#[tokio::test]
async fn first_start_creates_a_private_bootstrap_key_and_restarts_keep_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    let Bootstrap::Created {
        team_id,
        key_file: Some(path),
    } = running.bootstrap.clone()
    else {
        panic!("expected a generated key, got {:?}", running.bootstrap);
    };
    assert_eq!(path, dir.path().join("data").join("bootstrap-api-key"));
    assert_eq!(
        std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("data"))
            .expect("stat")
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let token = Token::parse(std::fs::read_to_string(&path).expect("read").trim()).expect("token");
    assert!(token.expose().starts_with("re_"));
    let found = running
        .state
        .accounts()
        .key_by_digest(&token.digest())
        .expect("get")
        .expect("key indexed by digest");
    assert_eq!(found.team_id, team_id);
    running.shutdown().await;

    let again = start(config(dir.path(), "")).await;
    assert_eq!(again.bootstrap, Bootstrap::Existing { team_id });
    assert_eq!(
        Token::parse(std::fs::read_to_string(&path).expect("read").trim()).expect("token"),
        token
    );
    again.shutdown().await;
}

fn client_config() -> Arc<rustls::ClientConfig> {
    herald_tls::client_config(herald_tls::Verification::Opportunistic, None).expect("client config")
}

async fn smtps_handshake(
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
    name: &str,
) -> (String, Vec<u8>, rustls::ProtocolVersion) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let connector = tokio_rustls::TlsConnector::from(config);
    let server_name = ServerName::try_from(name.to_owned()).expect("server name");
    let mut tls = connector.connect(server_name, stream).await.expect("TLS handshake");
    let (_, session) = tls.get_ref();
    let certificate = session.peer_certificates().expect("certificate")[0].to_vec();
    let version = session.protocol_version().expect("version");
    let line = read_line(&mut tls).await;
    (line, certificate, version)
}

#[tokio::test]
async fn smtp_listeners_greet_in_plaintext_or_after_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    assert_eq!(running.smtp.len(), 2);
    let (starttls, implicit) = (running.smtp[0].1, running.smtp[1].1);

    let plain = TcpStream::connect(starttls).await.expect("connect");
    let greeting = read_line(plain).await;
    assert_eq!(greeting, "220 herald.test ESMTP herald\r\n");

    let (line, certificate, version) = smtps_handshake(implicit, client_config(), "herald.test").await;
    assert_eq!(line, "220 herald.test ESMTP herald\r\n");
    assert!(!certificate.is_empty());
    assert!(matches!(
        version,
        rustls::ProtocolVersion::TLSv1_3 | rustls::ProtocolVersion::TLSv1_2
    ));
    // The generated self-signed pair lives in the data directory and is reused.
    assert!(dir.path().join("data/tls").exists());
    running.shutdown().await;
}

/// The session ticket is held back until the `EHLO` reply (one write instead of two),
/// still reaches the client, and resumes the next session; `QUIT` gets its `221` and a
/// clean `close_notify`.
#[tokio::test]
async fn tls_1_3_tickets_ride_with_the_first_reply_and_resume_the_next_session() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    let implicit = running.smtp[1].1;
    let mut client = rustls::ClientConfig::clone(&client_config());
    client.resumption = rustls::client::Resumption::in_memory_sessions(4);
    let client = Arc::new(client);
    let connect = || async {
        let stream = TcpStream::connect(implicit).await.expect("connect");
        let name = ServerName::try_from("herald.test").expect("server name");
        tokio_rustls::TlsConnector::from(Arc::clone(&client))
            .connect(name, stream)
            .await
            .expect("TLS handshake")
    };

    let mut first = BufReader::new(connect().await);
    assert_eq!(
        first.get_ref().get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    let mut line = String::new();
    first.read_line(&mut line).await.expect("greeting");
    assert!(line.starts_with("220 "), "{line}");
    // Nothing follows the greeting until the client speaks: the ticket waits.
    let mut peek = [0; 1];
    let early = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        first.get_ref().get_ref().0.peek(&mut peek),
    )
    .await;
    assert!(
        early.is_err(),
        "the server wrote before the client's first command: {early:?}"
    );
    first.get_mut().write_all(b"EHLO client.test\r\n").await.expect("write");
    loop {
        line.clear();
        first.read_line(&mut line).await.expect("EHLO reply");
        assert!(line.starts_with("250"), "{line}");
        if line.as_bytes()[3] == b' ' {
            break;
        }
    }
    first.get_mut().write_all(b"QUIT\r\n").await.expect("write");
    let mut rest = String::new();
    first
        .read_to_string(&mut rest)
        .await
        .expect("221, then a clean close_notify");
    assert!(rest.starts_with("221 "), "{rest}");

    let second = connect().await;
    assert_eq!(
        second.get_ref().1.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
    drop(second);
    running.shutdown().await;
}

#[tokio::test]
async fn tls_1_2_clients_are_served_and_reload_swaps_the_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert_a, key_a) = util::certificate("a.herald.test");
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, &cert_a).expect("write");
    std::fs::write(&key_path, &key_a).expect("write");
    let extra = format!(
        "[tls]\ncert = \"{}\"\nkey = \"{}\"\n",
        cert_path.display(),
        key_path.display()
    );
    let running = start(config(dir.path(), &extra)).await;
    let implicit = running.smtp[1].1;

    let tls12_only = {
        use rustls::pki_types::pem::PemObject;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from_pem_slice(cert_a.as_bytes()).expect("PEM"))
            .expect("root");
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS12])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Arc::new(config)
    };
    let (_, first, version) = smtps_handshake(implicit, tls12_only, "a.herald.test").await;
    assert_eq!(version, rustls::ProtocolVersion::TLSv1_2);
    assert_eq!(first, pem_der(&cert_a));

    let (cert_b, key_b) = util::certificate("b.herald.test");
    std::fs::write(&cert_path, &cert_b).expect("write");
    std::fs::write(&key_path, &key_b).expect("write");
    running.reload_tls().expect("reload");
    let (_, second, _) = smtps_handshake(implicit, client_config(), "a.herald.test").await;
    assert_eq!(second, pem_der(&cert_b));

    std::fs::write(&key_path, "not a key").expect("write");
    assert!(running.reload_tls().is_err(), "a broken key must not be loaded");
    let (_, third, _) = smtps_handshake(implicit, client_config(), "a.herald.test").await;
    assert_eq!(third, pem_der(&cert_b), "a failed reload keeps the current certificate");
    running.shutdown().await;
}

fn pem_der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("valid PEM")
        .to_vec()
}

#[tokio::test]
async fn shutdown_closes_the_listeners() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    let http_addr = running.http_addr;
    let smtp_addr = running.smtp[0].1;
    assert!(running.shutdown().await);
    assert!(TcpStream::connect(http_addr).await.is_err());
    assert!(TcpStream::connect(smtp_addr).await.is_err());
}

#[tokio::test]
async fn a_store_written_by_a_newer_build_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(config(dir.path(), "")).await;
    // What a newer build leaves: a store format this build does not know.
    let newer = herald::storage::format::FORMAT + 1;
    let mut batch = herald_queue::Batch::new();
    batch.put_raw(
        herald_queue::Table::META,
        b"store.format".to_vec(),
        newer.to_string().into_bytes(),
    );
    running.state.node().store().commit(batch).await.expect("written");
    assert!(running.shutdown().await, "a clean stop");

    let refused = herald::server::start(herald::server::Options {
        config: config(dir.path(), ""),
        clock: Arc::new(herald_queue::SystemClock),
        bootstrap_api_key: None,
    })
    .await
    .err()
    .expect("a newer store is refused");
    let message = format!("{refused:#}");
    assert!(
        message.contains(&format!("store format {newer}")) && message.contains("newer herald"),
        "{message}"
    );
}
