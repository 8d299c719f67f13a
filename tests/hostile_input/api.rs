//! Bad REST API input, row by row: bodies through a real HTTP client, and malformed
//! requests written to the socket as they are.

use std::net::SocketAddr;

use bytes::Bytes;
use herald::http::BODY_MAX;
use hyper::Method;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::client::{connect, read_responses};
use super::server::{Server, assert_rows_passed};
use crate::util::{self, OPERATOR_KEY};
use crate::{LOCAL, SENDER};

// ---------------------------------------------------------------------------------------
// The REST API: the table
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn bad_api_input_gets_a_clear_error_and_the_server_keeps_serving() {
    let mut server = Server::start("").await;
    let cases = api_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = run_api_case(server.http(), case).await;
        server.after_row(case.name, outcome, &mut failures).await;
    }
    assert_rows_passed("API", cases.len(), &failures);
    server.running.shutdown().await;
}

/// What an API row sends.
enum Request {
    /// A body (possibly not JSON at all) with the operator's key, through a real HTTP client.
    Body(Method, &'static str, Bytes),
    /// Bytes written to the socket as they are: a whole request, malformed on purpose. The
    /// server must answer it once and close the connection.
    Wire(Vec<u8>),
    /// `POST /emails` with a chunked body that grows until the server stops it.
    Flood,
}

struct ApiCase {
    name: &'static str,
    request: Request,
    status: u16,
    /// Resend's error `name` in the JSON body; `None` where the HTTP layer answers before
    /// herald's router (`400`, `431`) with an empty body.
    error: Option<&'static str>,
}

/// A valid email with the fields of `patch` replaced.
fn email(patch: &Value) -> Value {
    let mut email = json!({
        "from": SENDER,
        "to": "user@example.org",
        "subject": "Hello",
        "text": "Hello.",
    });
    for (key, value) in patch.as_object().expect("patch is an object") {
        email[key] = value.clone();
    }
    email
}

fn send(name: &'static str, patch: &Value, status: u16, error: &'static str) -> ApiCase {
    ApiCase {
        name,
        request: Request::Body(Method::POST, "/emails", Bytes::from(email(patch).to_string())),
        status,
        error: Some(error),
    }
}

fn raw(name: &'static str, body: impl Into<Bytes>, status: u16, error: &'static str) -> ApiCase {
    ApiCase {
        name,
        request: Request::Body(Method::POST, "/emails", body.into()),
        status,
        error: Some(error),
    }
}

fn wire(name: &'static str, request: Vec<u8>, status: u16, error: Option<&'static str>) -> ApiCase {
    ApiCase {
        name,
        request: Request::Wire(request),
        status,
        error,
    }
}

/// `POST /emails` with the operator's key, `headers` (each ending in CRLF) and `body`.
fn post(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST /emails HTTP/1.1\r\nHost: herald.test\r\nAuthorization: Bearer {OPERATOR_KEY}\r\n\
         Content-Type: application/json\r\n{headers}\r\n"
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

fn api_cases() -> Vec<ApiCase> {
    const CRLF_BCC: &str = "\r\nBcc: victim@example.org";
    let huge_attachment = {
        use base64::Engine as _;
        let decoded = vec![0u8; herald::emails::validate::CONTENT_MAX + 1024];
        base64::engine::general_purpose::STANDARD.encode(decoded)
    };
    let nested =
        |open: &str, inner: &str, close: &str| format!("{}{inner}{}", open.repeat(100_000), close.repeat(100_000));
    vec![
        // Size.
        wire(
            "Content-Length over the body limit, body not sent",
            post(
                &format!("Content-Length: {}\r\nConnection: close\r\n", BODY_MAX + 1),
                b"",
            ),
            413,
            Some("payload_too_large"),
        ),
        wire(
            // The key is in the headers: herald refuses before reading the body, so a client
            // without a key cannot make it buffer up to 60 MiB per connection (it once did).
            "request without a key announcing a 50 MB body is refused before the body",
            b"POST /emails HTTP/1.1\r\nHost: herald.test\r\nContent-Type: application/json\r\n\
              Content-Length: 50000000\r\nConnection: close\r\n\r\n"
                .to_vec(),
            401,
            Some("missing_api_key"),
        ),
        ApiCase {
            name: "chunked body that grows past the body limit",
            request: Request::Flood,
            status: 413,
            error: Some("payload_too_large"),
        },
        send(
            "attachments over 40 MB once decoded, under the body limit",
            &json!({ "attachments": [{ "filename": "big.bin", "content": huge_attachment }] }),
            422,
            "validation_error",
        ),
        // JSON that is not what it seems.
        raw("100,000 nested arrays", nested("[", "", "]"), 400, "validation_error"),
        raw(
            "100,000 nested objects",
            nested("{\"a\":", "1", "}"),
            400,
            "validation_error",
        ),
        raw(
            "deep nesting inside a field",
            format!(
                r#"{{"from":"{SENDER}","to":"user@example.org","subject":"s","text":"t","headers":{{"X-A":{}}}}}"#,
                nested("[", "", "]")
            ),
            400,
            "validation_error",
        ),
        raw(
            "invalid UTF-8 in a JSON string",
            &b"{\"from\":\"hello@example.test\",\"to\":\"user@example.org\",\"subject\":\"\xff\xfe\",\"text\":\"t\"}"[..],
            400,
            "validation_error",
        ),
        raw(
            "lone UTF-16 surrogate escape",
            format!(r#"{{"from":"{SENDER}","to":"user@example.org","subject":"\ud800","text":"t"}}"#),
            400,
            "validation_error",
        ),
        raw(
            "number beyond any type",
            format!(r#"{{"from":"{SENDER}","to":1e999999,"subject":"s","text":"t"}}"#),
            400,
            "validation_error",
        ),
        raw("two JSON documents in one body", "{}{}", 400, "validation_error"),
        // Header injection through fields.
        send(
            "CRLF and Bcc in subject",
            &json!({ "subject": format!("Hello{CRLF_BCC}") }),
            422,
            "validation_error",
        ),
        send(
            "NUL in subject",
            &json!({ "subject": "Hel\0lo" }),
            422,
            "validation_error",
        ),
        send(
            "subject over 998 characters",
            &json!({ "subject": "s".repeat(999) }),
            422,
            "validation_error",
        ),
        send(
            "CRLF and Bcc in from",
            &json!({ "from": format!("{SENDER}{CRLF_BCC}") }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in the display name of from",
            &json!({ "from": format!("Evil{CRLF_BCC} <{SENDER}>") }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in to",
            &json!({ "to": format!("user@example.org{CRLF_BCC}") }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in reply_to",
            &json!({ "reply_to": format!("user@example.org{CRLF_BCC}") }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in a custom header value",
            &json!({ "headers": { "X-Note": format!("a{CRLF_BCC}") } }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in a custom header name",
            &json!({ "headers": { "X-Note\r\nBcc": "victim@example.org" } }),
            422,
            "validation_error",
        ),
        send(
            "custom header that replaces Bcc",
            &json!({ "headers": { "Bcc": "victim@example.org" } }),
            422,
            "validation_error",
        ),
        send(
            "custom header value over 2,000 characters",
            &json!({ "headers": { "X-Long": "v".repeat(2_001) } }),
            422,
            "validation_error",
        ),
        send(
            "1,000 custom headers",
            &json!({ "headers": (0..1_000).map(|i| (format!("X-H{i}"), json!("v"))).collect::<serde_json::Map<_, _>>() }),
            422,
            "validation_error",
        ),
        send(
            "100,000 recipients",
            &json!({ "to": (0..100_000).map(|i| format!("u{i}@example.org")).collect::<Vec<_>>() }),
            422,
            "validation_error",
        ),
        send(
            "CRLF in a tag",
            &json!({ "tags": [{ "name": "a\r\nb", "value": "c" }] }),
            422,
            "validation_error",
        ),
        // Attachments that lie.
        send(
            "CRLF in an attachment file name",
            &json!({ "attachments": [{ "filename": "a.txt\r\nContent-Type: text/html", "content": "aGk=" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "CRLF in an attachment content type",
            &json!({ "attachments": [{ "filename": "a.txt", "content_type": "text/plain\r\nX-Evil: 1", "content": "aGk=" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "CRLF in an attachment content_id",
            &json!({ "attachments": [{ "filename": "a.png", "content_id": "a\r\nb", "content": "aGk=" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "attachment content that is not base64",
            &json!({ "attachments": [{ "filename": "a.txt", "content": "!!not base64!!" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "attachment Buffer holding a byte over 255",
            &json!({ "attachments": [{ "filename": "a.txt", "content": { "type": "Buffer", "data": [104, 256] } }] }),
            422,
            "validation_error",
        ),
        send(
            "attachment Buffer claiming another type",
            &json!({ "attachments": [{ "filename": "a.txt", "content": { "type": "Blob", "data": [104] } }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "attachment with neither content nor path",
            &json!({ "attachments": [{ "filename": "a.txt" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "attachment path to a local file",
            &json!({ "attachments": [{ "filename": "passwd", "path": "file:///etc/passwd" }] }),
            422,
            "invalid_attachment",
        ),
        send(
            "101 attachments",
            &json!({ "attachments": vec![json!({ "filename": "a.txt", "content": "aGk=" }); 101] }),
            422,
            "invalid_attachment",
        ),
        // The HTTP layer.
        wire(
            "1 MB request header",
            post(
                &format!(
                    "X-Huge: {}\r\nContent-Length: 2\r\nConnection: close\r\n",
                    "h".repeat(1 << 20)
                ),
                b"{}",
            ),
            431,
            None,
        ),
        wire(
            "500 request headers",
            post(
                &format!(
                    "{}Content-Length: 2\r\nConnection: close\r\n",
                    (0..500).map(|i| format!("X-H{i}: v\r\n")).collect::<String>()
                ),
                b"{}",
            ),
            431,
            None,
        ),
        // A key was sent, just not a valid one.
        wire(
            "invalid UTF-8 in the Authorization header",
            b"POST /emails HTTP/1.1\r\nHost: herald.test\r\nAuthorization: Bearer re_\xff\xfe\r\n\
              Content-Length: 2\r\nConnection: close\r\n\r\n{}"
                .to_vec(),
            403,
            Some("invalid_api_key"),
        ),
        wire(
            "invalid UTF-8 in the path",
            [
                &b"GET /emails/\xff\xfe HTTP/1.1\r\n"[..],
                format!("Host: herald.test\r\nAuthorization: Bearer {OPERATOR_KEY}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            ]
            .concat(),
            400,
            None,
        ),
        wire(
            // RFC 9112 6.3: the body is chunked (empty here), and the connection must close
            // after the answer, so the request hidden behind it is never read.
            "Content-Length and Transfer-Encoding together (request smuggling)",
            post(
                "Content-Length: 60\r\nTransfer-Encoding: chunked\r\n",
                b"0\r\n\r\nGET /emails HTTP/1.1\r\nHost: herald.test\r\nConnection: close\r\n\r\n",
            ),
            422,
            Some("missing_required_field"),
        ),
        wire(
            "two different Content-Lengths",
            post(
                "Content-Length: 2\r\nContent-Length: 40\r\nConnection: close\r\n",
                b"{}",
            ),
            400,
            None,
        ),
    ]
}

/// Runs one API row; checks the status and the Resend error body.
async fn run_api_case(addr: SocketAddr, case: &ApiCase) -> Result<(), String> {
    let (status, body) = match &case.request {
        Request::Body(method, path, body) => {
            let response = util::call_raw(addr, method.clone(), path, Some(OPERATOR_KEY), body.clone()).await;
            (response.status.as_u16(), response.body)
        }
        Request::Wire(bytes) => {
            let mut stream = connect(addr, LOCAL).await?;
            // The server may answer and close before reading everything; that is fine.
            let _ = stream.write_all(bytes).await;
            let (responses, closed) = read_responses(&mut stream).await;
            if !closed {
                return Err(format!("the connection stayed open after {responses:?}"));
            }
            match <[_; 1]>::try_from(responses) {
                Ok([response]) => response,
                Err(responses) => return Err(format!("wanted one response, got {responses:?}")),
            }
        }
        Request::Flood => flood(addr).await?,
    };
    let text = String::from_utf8_lossy(&body);
    if status != case.status {
        return Err(format!("wanted status {}, got {status}: {text}", case.status));
    }
    let Some(name) = case.error else {
        return Ok(());
    };
    let error: Value =
        serde_json::from_slice(&body).map_err(|e| format!("the error body is not JSON ({e}): {text}"))?;
    let message = error["message"].as_str().unwrap_or_default();
    if error["name"] != name || error["statusCode"] != status || message.is_empty() {
        return Err(format!("wanted a Resend error named {name}, got {error}"));
    }
    Ok(())
}

/// `POST /emails` with a chunked body of spaces, a mebibyte a chunk, until the server
/// answers or 70 MiB (more than [`BODY_MAX`]) are sent.
async fn flood(addr: SocketAddr) -> Result<(u16, Bytes), String> {
    let stream = connect(addr, LOCAL).await?;
    let (mut reader, mut writer) = stream.into_split();
    let head = post("Transfer-Encoding: chunked\r\nConnection: close\r\n", b"");
    let write = async move {
        let chunk = [
            format!("{:x}\r\n", 1 << 20).into_bytes(),
            vec![b' '; 1 << 20],
            b"\r\n".to_vec(),
        ]
        .concat();
        // Once the server stops reading, writes fail; the answer is read below.
        if writer.write_all(&head).await.is_ok() {
            for _ in 0..70 {
                if writer.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        }
        std::future::pending::<()>().await;
    };
    let (responses, _) = tokio::select! {
        () = write => unreachable!("the writer never finishes"),
        outcome = read_responses(&mut reader) => outcome,
    };
    match <[_; 1]>::try_from(responses) {
        Ok([response]) => Ok(response),
        Err(responses) => Err(format!("wanted one response, got {responses:?}")),
    }
}
