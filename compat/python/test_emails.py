"""Emails through the official Python SDK (PyPI `resend`): resend.Emails.send / get / list /
update / cancel and resend.Batch.send, from a domain the suite verifies without DNS."""

import base64
import secrets
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError, ValidationError

from conftest import (TIMESTAMP_RE, UUID_RE, assert_error, key_name, parse_timestamp, raw,
                      unique_domain, using_key, verify_without_dns)


@pytest.fixture(scope="module")
def domain():
    """The verified domain every test sends from: its name and id."""
    name = unique_domain("emails")
    created = resend.Domains.create({"name": name})
    verify_without_dns(created["id"])
    assert resend.Domains.get(created["id"])["status"] == "verified"
    return {"name": name, "id": created["id"]}


def sender(domain):
    return f"Compat Sender <hello@{domain['name']}>"


def subject(label):
    """A subject no other test uses, to find an email again in lists."""
    return f"py {label} {secrets.token_hex(6)}"


def email(domain, label, **extra) -> resend.Emails.SendParams:
    """A minimal valid email."""
    params: resend.Emails.SendParams = {
        "from": sender(domain),
        "to": "someone@recipient.test",
        "subject": subject(label),
        "text": f"Body of {label}",
    }
    params.update(extra)  # type: ignore[typeddict-item]
    return params


def listed_with_subject(wanted):
    """The emails with `wanted` as subject among the newest 100 of the team."""
    return [e for e in resend.Emails.list({"limit": 100})["data"] if e["subject"] == wanted]


def test_send_accepts_every_field_and_get_returns_them(domain):
    params: resend.Emails.SendParams = {
        "from": sender(domain),
        "to": ["alice@recipient.test", "bob@recipient.test"],
        "cc": "carol@recipient.test",
        "bcc": ["dave@recipient.test", "erin@recipient.test"],
        "reply_to": "replies@recipient.test",
        "subject": subject("every field"),
        "html": "<p>Hello <strong>there</strong></p>",
        "text": "Hello there",
        "headers": {"X-Entity-Ref-ID": "ref-123", "List-Unsubscribe": "<mailto:unsubscribe@recipient.test>"},
        "tags": [{"name": "category", "value": "welcome"}, {"name": "user_id", "value": "u-42"}],
    }
    sent = resend.Emails.send(params)
    assert UUID_RE.match(sent["id"])
    assert set(sent) - {"http_headers"} == {"id"}

    got = resend.Emails.get(sent["id"])
    assert got["object"] == "email"
    assert got["id"] == sent["id"]
    assert got["from"] == params["from"]
    assert got["to"] == params["to"]
    assert got["cc"] == ["carol@recipient.test"]
    assert got["bcc"] == params["bcc"]
    assert got["reply_to"] == ["replies@recipient.test"]
    assert got["subject"] == params["subject"]
    assert got["html"] == params["html"]
    assert got["text"] == params["text"]
    assert got["tags"] == params["tags"]
    assert got["last_event"] == "sent"
    assert got["scheduled_at"] is None
    assert got["message_id"] == f"<{sent['id']}@mail.herald.test>"
    assert TIMESTAMP_RE.match(got["created_at"]), got["created_at"]
    age = datetime.now(timezone.utc) - parse_timestamp(got["created_at"])
    assert timedelta(seconds=-5) <= age < timedelta(seconds=60), got["created_at"]
    # Attribute access works as on any SDK response.
    assert got.last_event == "sent"


def test_send_takes_to_as_one_string_and_absent_lists_read_as_null(domain):
    params = email(domain, "one recipient", to="single@recipient.test", html="<p>only html</p>")
    del params["text"]
    sent = resend.Emails.send(params)
    got = resend.Emails.get(sent["id"])
    assert got["to"] == ["single@recipient.test"]
    assert got["cc"] is None
    assert got["bcc"] is None
    assert got["reply_to"] is None
    assert got["html"] == "<p>only html</p>"
    assert got["text"] is None
    assert got["last_event"] == "sent"


def test_send_answers_200_with_only_the_id_on_the_wire(domain):
    response = raw("POST", "/emails", json=email(domain, "wire"))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert list(response.json()) == ["id"]
    assert UUID_RE.match(response.json()["id"])


def test_attachments_as_byte_lists_base64_and_inline_are_accepted(domain):
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    params = email(
        domain,
        "attachments",
        html='<p>Logo: <img src="cid:logo-1" alt="logo"></p>',
        attachments=[
            # The documented way: the bytes as a list of ints (sent as a JSON array).
            {"filename": "bytes.txt", "content": list(b"hello from Python bytes\n")},
            {"filename": "binary.bin", "content": list(bytes([0, 1, 2, 253, 254, 255]))},
            {"filename": "base64.csv", "content": base64.b64encode(b"a,b\n1,2\n").decode(), "content_type": "text/csv"},
            {"filename": "logo.png", "content": list(png), "content_type": "image/png", "content_id": "logo-1"},
        ],
    )
    sent = resend.Emails.send(params)
    assert UUID_RE.match(sent["id"])
    got = resend.Emails.get(sent["id"])
    assert got["subject"] == params["subject"]
    assert got["html"] == params["html"]
    assert got["last_event"] == "sent"


def test_attachment_without_content_or_path_gets_422_invalid_attachment(domain):
    params = email(domain, "bad attachment", attachments=[{"filename": "empty.txt"}])
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(params)
    assert_error(excinfo, 422, "invalid_attachment")


def test_same_idempotency_key_and_payload_send_once_another_payload_gets_409(domain):
    key = f"py-{uuid.uuid4()}"
    params = email(domain, "idempotent")
    first = resend.Emails.send(params, {"idempotency_key": key})
    second = resend.Emails.send(params, {"idempotency_key": key})
    assert second["id"] == first["id"], "the replay answers the first id"
    assert len(listed_with_subject(params["subject"])) == 1, "one email was sent"

    other = {**params, "subject": subject("idempotent other")}
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(other, {"idempotency_key": key})  # type: ignore[arg-type]
    assert_error(excinfo, 409, "invalid_idempotent_request")
    assert listed_with_subject(other["subject"]) == []

    third = resend.Emails.send(params, {"idempotency_key": f"py-{uuid.uuid4()}"})
    assert third["id"] != first["id"]


def test_batch_send_sends_every_email_and_answers_ids_in_order(domain):
    emails = [
        email(domain, "batch 0"),
        email(domain, "batch 1", to=["x@recipient.test", "y@recipient.test"]),
        email(domain, "batch 2"),
    ]
    result = resend.Batch.send(emails)
    assert isinstance(result["data"], list)
    assert len(result["data"]) == 3
    assert "errors" not in result, "strict mode lists no errors"
    ids = [d["id"] for d in result["data"]]
    assert all(UUID_RE.match(i) for i in ids)
    assert len(set(ids)) == 3
    for params, email_id in zip(emails, ids):
        got = resend.Emails.get(email_id)
        assert got["subject"] == params["subject"]
        assert got["last_event"] == "sent"
    assert resend.Emails.get(ids[1])["to"] == ["x@recipient.test", "y@recipient.test"]


def test_batch_send_strict_refuses_the_whole_batch_for_one_invalid_email(domain):
    emails = [email(domain, "strict 0"), email(domain, "strict 1", to="not-an-address"), email(domain, "strict 2")]
    for options in (None, {"batch_validation": "strict"}):
        with pytest.raises(ResendError) as excinfo:
            resend.Batch.send(emails, options)  # type: ignore[arg-type]
        assert_error(excinfo, 422, "validation_error", ValidationError)
    for params in emails:
        assert listed_with_subject(params["subject"]) == [], "nothing was sent"


def test_batch_send_permissive_sends_the_valid_emails_and_lists_the_errors(domain):
    emails = [email(domain, "permissive 0"), email(domain, "permissive 1", to="not-an-address"), email(domain, "permissive 2")]
    result = resend.Batch.send(emails, {"batch_validation": "permissive"})
    assert len(result["data"]) == 2
    assert all(UUID_RE.match(d["id"]) for d in result["data"])
    assert len(result["errors"]) == 1
    assert result["errors"][0]["index"] == 1
    assert isinstance(result["errors"][0]["message"], str) and result["errors"][0]["message"]
    assert resend.Emails.get(result["data"][0]["id"])["subject"] == emails[0]["subject"]
    assert resend.Emails.get(result["data"][1]["id"])["subject"] == emails[2]["subject"]
    assert listed_with_subject(emails[1]["subject"]) == []


def test_batch_send_honours_an_idempotency_key(domain):
    key = f"py-batch-{uuid.uuid4()}"
    emails = [email(domain, "batch idem 0"), email(domain, "batch idem 1")]
    first = resend.Batch.send(emails, {"idempotency_key": key})
    again = resend.Batch.send(emails, {"idempotency_key": key})
    assert again["data"] == first["data"]
    assert len(listed_with_subject(emails[0]["subject"])) == 1
    with pytest.raises(ResendError) as excinfo:
        resend.Batch.send([emails[0]], {"idempotency_key": key})
    assert_error(excinfo, 409, "invalid_idempotent_request")


def iso(at):
    """`at` as ISO 8601 with milliseconds and `Z`."""
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_scheduled_at_in_natural_language_schedules_the_email(domain):
    # Resend documents natural-language times ("in 1 min", "tomorrow at 9am") besides ISO 8601.
    sent = resend.Emails.send(email(domain, "natural language", scheduled_at="in 1 hour"))
    scheduled = resend.Emails.get(sent["id"])
    assert scheduled["last_event"] == "scheduled"
    assert scheduled["scheduled_at"] is not None
    in_an_hour = parse_timestamp(scheduled["scheduled_at"]) - datetime.now(timezone.utc)
    assert abs(in_an_hour - timedelta(hours=1)) < timedelta(minutes=1), scheduled["scheduled_at"]
    resend.Emails.cancel(sent["id"])


def test_scheduled_email_can_be_rescheduled_and_canceled(domain):
    at = datetime.now(timezone.utc) + timedelta(hours=1)
    sent = resend.Emails.send(email(domain, "scheduled", scheduled_at=iso(at)))
    scheduled = resend.Emails.get(sent["id"])
    assert scheduled["last_event"] == "scheduled"
    assert scheduled["scheduled_at"] is not None
    assert abs(parse_timestamp(scheduled["scheduled_at"]) - at) < timedelta(seconds=1), scheduled["scheduled_at"]

    target = datetime.now(timezone.utc) + timedelta(hours=2)
    updated = resend.Emails.update({"id": sent["id"], "scheduled_at": iso(target)})
    assert updated["object"] == "email"
    assert updated["id"] == sent["id"]
    moved = resend.Emails.get(sent["id"])
    assert moved["last_event"] == "scheduled"
    assert abs(parse_timestamp(moved["scheduled_at"]) - target) < timedelta(seconds=1), moved["scheduled_at"]

    canceled = resend.Emails.cancel(sent["id"])
    assert canceled["object"] == "email"
    assert canceled["id"] == sent["id"]
    assert resend.Emails.get(sent["id"])["last_event"] == "canceled"

    with pytest.raises(ResendError) as excinfo:
        resend.Emails.cancel(sent["id"])
    assert_error(excinfo, 422, "validation_error", ValidationError)
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.update({"id": sent["id"], "scheduled_at": iso(target)})
    assert_error(excinfo, 422, "validation_error", ValidationError)


def test_email_sent_now_cannot_be_canceled_or_rescheduled(domain):
    sent = resend.Emails.send(email(domain, "not scheduled"))
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.cancel(sent["id"])
    assert_error(excinfo, 422, "validation_error", ValidationError)
    later = iso(datetime.now(timezone.utc) + timedelta(hours=1))
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.update({"id": sent["id"], "scheduled_at": later})
    assert_error(excinfo, 422, "validation_error", ValidationError)
    assert resend.Emails.get(sent["id"])["last_event"] == "sent"


def test_list_returns_the_envelope_newest_first_without_bodies(domain):
    first = resend.Emails.send(email(domain, "list a", html="<p>a</p>"))
    second = resend.Emails.send(email(domain, "list b", html="<p>b</p>", cc="cc@recipient.test"))
    listed = resend.Emails.list()
    assert listed["object"] == "list"
    assert isinstance(listed["has_more"], bool)
    assert isinstance(listed["data"], list)
    assert len(listed["data"]) <= 20, "the default page holds at most 20"
    ids = [e["id"] for e in listed["data"]]
    assert first["id"] in ids and second["id"] in ids
    assert ids.index(second["id"]) < ids.index(first["id"]), "the newer email comes first"

    item = listed["data"][ids.index(second["id"])]
    full = resend.Emails.get(second["id"])
    for field in ("id", "to", "from", "created_at", "subject", "bcc", "cc", "reply_to", "last_event", "scheduled_at", "message_id"):
        assert field in item, field
        assert item[field] == full[field], field
    for field in ("html", "text", "tags", "object"):
        assert field not in item, f"list item has no {field}"

    page = resend.Emails.list({"limit": 1})
    assert len(page["data"]) == 1
    assert page["has_more"] is True
    nxt = resend.Emails.list({"limit": 1, "after": page["data"][0]["id"]})
    assert len(nxt["data"]) == 1
    assert nxt["data"][0]["id"] != page["data"][0]["id"]


def test_unknown_email_gets_404_not_found():
    for call in (lambda: resend.Emails.get(str(uuid.uuid4())), lambda: resend.Emails.cancel(str(uuid.uuid4()))):
        with pytest.raises(ResendError) as excinfo:
            call()
        assert_error(excinfo, 404, "not_found")


def test_sending_from_an_unverified_or_unknown_domain_gets_403_validation_error(domain):
    unverified = unique_domain("unverified")
    resend.Domains.create({"name": unverified})
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(email(domain, "unverified", **{"from": f"Someone <a@{unverified}>"}))
    error = assert_error(excinfo, 403, "validation_error")
    assert unverified in error.message
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(email(domain, "unknown", **{"from": f"a@{unique_domain('unknown')}"}))
    assert_error(excinfo, 403, "validation_error")


def test_missing_subject_gets_422_missing_required_field(domain):
    params = email(domain, "no subject")
    del params["subject"]  # type: ignore[misc]
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(params)
    error = assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)
    assert "subject" in error.message
    params = email(domain, "no to")
    del params["to"]  # type: ignore[misc]
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(params)
    assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)


def test_header_value_with_cr_or_lf_gets_422_validation_error(domain):
    for value in ("a\r\nBcc: victim@recipient.test", "line\nbreak", "carriage\rreturn"):
        params = email(domain, "header injection", headers={"X-Custom": value})
        with pytest.raises(ResendError) as excinfo:
            resend.Emails.send(params)
        error = assert_error(excinfo, 422, "validation_error", ValidationError)
        assert "headers" in error.message


def test_sending_access_key_sends_from_its_domain_but_cannot_read_emails(domain):
    created = resend.ApiKeys.create(
        {"name": key_name("emails-sending"), "permission": "sending_access", "domain_id": domain["id"]}
    )
    with using_key(created["token"]):
        sent = resend.Emails.send(email(domain, "sending key"))
        resend.Batch.send([email(domain, "sending key batch")])
        for call in (lambda: resend.Emails.get(sent["id"]), resend.Emails.list):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 401, "restricted_api_key")
    assert resend.Emails.get(sent["id"])["subject"].startswith("py sending key")
    resend.ApiKeys.remove(created["id"])
