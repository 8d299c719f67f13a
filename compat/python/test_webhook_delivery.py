"""Webhook requests as receivers see them, checked with independent code: the PyPI
`standardwebhooks` package (the scheme's reference implementation). A receiver on 127.0.0.2
fails the first try of each message with a 500; herald retries it with the same id (the
suite's herald allows that one private address in `[webhooks] allowed_networks` and
retries after 1 s). The event log is read back
through the SDK's `Webhooks.list_events` / `get_event` / `list_event_attempts`."""

import base64
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import resend
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from conftest import unique_domain, verify_without_dns


class Receiver(BaseHTTPRequestHandler):
    """Records every request; answers 500 to the first of each `webhook-id`."""

    requests = []
    seen = set()
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with self.lock:
            message_id = self.headers.get("webhook-id")
            status = 200 if message_id in self.seen else 500
            self.seen.add(message_id)
            self.requests.append({"headers": dict(self.headers), "body": body})
        self.send_response(status)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok" if status == 200 else b"no")

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Receiver.requests = []
    Receiver.seen = set()
    server = ThreadingHTTPServer(("127.0.0.2", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.2:{server.server_address[1]}/hook"
    server.shutdown()


def wait_for(count):
    deadline = time.monotonic() + 30
    while len(Receiver.requests) < count:
        assert time.monotonic() < deadline, f"expected {count} webhook requests within 30 s, got {len(Receiver.requests)}"
        time.sleep(0.05)


def sw_headers(request):
    headers = {k.lower(): v for k, v in request["headers"].items()}
    return {name: headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")}


def test_requests_verify_with_standardwebhooks_and_retries_keep_their_id(receiver):
    domain = resend.Domains.create({"name": unique_domain("hooks")})
    verify_without_dns(domain["id"])
    webhook = resend.Webhooks.create({"endpoint": receiver, "events": ["email.sent"]})
    secret = webhook["signing_secret"]
    sent = resend.Emails.send(
        {
            "from": f"Hooks <hooks@{domain['name']}>",
            "to": ["someone@example.com"],
            "subject": "webhook signatures",
            "text": "hello",
        }
    )

    wait_for(2)
    first, retry = Receiver.requests[:2]
    assert sw_headers(first)["webhook-id"] == sw_headers(retry)["webhook-id"]
    assert first["body"] == retry["body"]
    for request in (first, retry):
        payload = Webhook(secret).verify(request["body"], sw_headers(request))
        assert payload["type"] == "email.sent"
        assert payload["data"]["email_id"] == sent["id"]
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(first["body"] + b" ", sw_headers(first))
    with pytest.raises(WebhookVerificationError):
        other = "whsec_" + base64.b64encode(bytes([7] * 32)).decode()
        Webhook(other).verify(first["body"], sw_headers(first))

    event_id = sw_headers(first)["webhook-id"].removeprefix("msg_")
    deadline = time.monotonic() + 10
    events = resend.Webhooks.list_events(webhook["id"])
    while events["data"][0]["status"] != "success" and time.monotonic() < deadline:
        time.sleep(0.05)
        events = resend.Webhooks.list_events(webhook["id"])
    assert [(e["id"], e["type"], e["status"]) for e in events["data"]] == [(event_id, "email.sent", "success")]
    event = resend.Webhooks.get_event(webhook["id"], event_id)
    assert event["payload"]["data"]["email_id"] == sent["id"]
    attempts = resend.Webhooks.list_event_attempts(webhook["id"], event_id)
    assert [(a["http_status_code"], a["response"]) for a in attempts["data"]] == [(200, "ok"), (500, "no")]
