"""Broadcasts through the official Python SDK (PyPI `resend`): resend.Broadcasts.create /
get / update / list / send (now and `scheduled_at`) / cancel / duplicate / remove /
recipients / clicked_links. A draft's every field and herald's own `progress`; a scheduled
broadcast `queued` until canceled; `send: True` to a segment expanded into one personalised
email per contact (a contact field, `contact.first_name` and a custom property, read back
with resend.Emails.get), skipping the unsubscribed, the suppressed and a contact missing a
value without fallback; the refusals with their statuses and the SDK's error classes. The
SDK puts `broadcast_id` into the bodies of update and send, and sends `{}` with cancel,
duplicate and remove.

Everything runs in the operator's team: a broadcast's `from` must be on a verified domain
even as a draft, and only the operator's key may mark one verified without DNS. Every
segment, contact, topic and property is the test's own; lists are searched page by page."""

import re
import secrets
import time
from datetime import datetime, timezone

import pytest
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError, ValidationError

from conftest import UUID_RE, assert_error, random_id, raw, unique_domain, verify_without_dns

DRAFT_PROGRESS = {
    "status": "draft", "total": 0, "sent": 0, "unsubscribed": 0, "suppressed": 0, "failed": 0, "canceled": 0,
    "finished_at": None,
}
# herald writes a broadcast's times in ISO 8601 (`…T…Z`); Resend's other resources `… +00`.
BROADCAST_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00)$")


@pytest.fixture(scope="module")
def sender():
    """A `from` on a verified domain of the operator's team."""
    name = unique_domain("broadcasts")
    verify_without_dns(resend.Domains.create({"name": name})["id"])
    return f"Compat News <news@{name}>"


def address(label):
    """An address no other test uses (lower case: a local part is compared as written)."""
    return f"py-bc-{label}-{secrets.token_hex(5)}@inbox.test"


def body(answer):
    """An SDK answer without the `http_headers` the SDK adds to it."""
    return {k: v for k, v in answer.items() if k != "http_headers"}


def instant(text):
    assert BROADCAST_TIME_RE.match(text), text
    text = text.replace(" ", "T")
    return datetime.fromisoformat((text[:-1] if text.endswith("Z") else text[:-3]) + "+00:00")


def assert_recent(text):
    age = (datetime.now(timezone.utc) - instant(text)).total_seconds()
    assert -5 < age < 60, f"{text} is not now"


def fails(call, code, name, exc_type=ResendError):
    """Runs `call`, which must raise the given Resend error; the error."""
    with pytest.raises(ResendError) as excinfo:
        call()
    return assert_error(excinfo, code, name, exc_type)


def segment_of(*people):
    """A new segment holding a new contact for each of `people`: its id and the contacts' ids."""
    segment = resend.Segments.create({"name": f"Broadcast {secrets.token_hex(4)}"})
    ids = {}
    for person in people:
        ids[person["email"]] = resend.Contacts.create({**person, "segments": [{"id": segment["id"]}]})["id"]
    return segment["id"], ids


def finished(broadcast_id):
    """The broadcast once herald's worker has sent it (progress.status `sent`, within 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        broadcast = resend.Broadcasts.get(broadcast_id)
        assert broadcast["progress"]["status"] != "canceled", broadcast["progress"]
        if broadcast["progress"]["status"] == "sent":
            return broadcast
        assert time.monotonic() < deadline, f"broadcast {broadcast_id} not sent within 30 s: {broadcast['progress']}"
        time.sleep(0.2)


def listed(broadcast_id):
    """The list item of `broadcast_id`, searched page by page (the operator's team has many)."""
    params = {"limit": 100}
    while True:
        page = resend.Broadcasts.list(params)
        assert page["object"] == "list"
        found = [b for b in page["data"] if b["id"] == broadcast_id]
        if found:
            return found[0]
        assert page["has_more"] and page["data"], f"broadcast {broadcast_id} is not listed"
        params = {"limit": 100, "after": page["data"][-1]["id"]}


def test_draft_create_get_update_list_schedule_cancel_duplicate_remove(sender):
    segment_id, _ = segment_of({"email": address("draft")})
    topic_id = resend.Topics.create({"name": f"Broadcast {secrets.token_hex(4)}", "default_subscription": "opt_in"})["id"]
    name = f"Launch {secrets.token_hex(4)}"
    content = {"subject": "Hello {{{FIRST_NAME|there}}}", "html": "<p>Hi {{{FIRST_NAME|there}}}</p>", "text": "Hi"}
    created = body(resend.Broadcasts.create({
        "segment_id": segment_id, "from": sender, "name": name, "reply_to": "reply@example.test",
        "preview_text": "Out now", "topic_id": topic_id, **content,
    }))
    assert created == {"object": "broadcast", "id": created["id"]}
    assert UUID_RE.match(created["id"])
    broadcast_id = created["id"]

    got = body(resend.Broadcasts.get(broadcast_id))
    assert_recent(got.pop("created_at"))
    assert got == {
        "object": "broadcast", "id": broadcast_id, "name": name, "audience_id": segment_id, "segment_id": segment_id,
        "from": sender, **content, "reply_to": ["reply@example.test"], "preview_text": "Out now", "status": "draft",
        "scheduled_at": None, "sent_at": None, "topic_id": topic_id, "progress": DRAFT_PROGRESS,
    }

    # The SDK ignores the status code: 201, raw. `audience_id` names the segment too, and
    # without a name the subject names the broadcast.
    wire = raw("POST", "/broadcasts", json={"audience_id": segment_id, "from": sender, "subject": "Wire", "text": "Wire"})
    assert wire.status_code == 201, wire.text
    wire_id = wire.json()["id"]
    assert wire.json() == {"object": "broadcast", "id": wire_id}
    got = resend.Broadcasts.get(wire_id)
    assert [got[k] for k in ("segment_id", "name", "html", "reply_to", "preview_text", "topic_id")] == [
        segment_id, "Wire", None, None, None, None]

    renamed = f"{name} v2"
    changes = {"name": renamed, "subject": "Updated", "html": "<p>New</p>", "reply_to": ["a@example.test", "b@example.test"]}
    assert body(resend.Broadcasts.update({"broadcast_id": broadcast_id, **changes})) == {
        "object": "broadcast", "id": broadcast_id}
    updated = resend.Broadcasts.get(broadcast_id)
    assert {k: updated[k] for k in changes} == changes
    assert (updated["text"], updated["preview_text"], updated["topic_id"]) == ("Hi", "Out now", topic_id)

    summary = listed(broadcast_id)
    assert summary == {
        "id": broadcast_id, "name": renamed, "audience_id": segment_id, "segment_id": segment_id, "status": "draft",
        "created_at": updated["created_at"], "scheduled_at": None, "sent_at": None, "topic_id": topic_id,
        "progress": DRAFT_PROGRESS,
    }
    one = resend.Broadcasts.list({"limit": 1})
    assert (len(one["data"]), one["has_more"]) == (1, True)
    assert body(resend.Broadcasts.remove(wire_id)) == {"object": "broadcast", "id": wire_id, "deleted": True}

    # Scheduled: Resend's `queued`, herald's `scheduled`; no longer a draft to change.
    sent = resend.Broadcasts.send({"broadcast_id": broadcast_id, "scheduled_at": "in 1 hour"})
    assert body(sent) == {"object": "broadcast", "id": broadcast_id}
    scheduled = resend.Broadcasts.get(broadcast_id)
    assert (scheduled["status"], scheduled["progress"]["status"], scheduled["sent_at"]) == ("queued", "scheduled", None)
    ahead = (instant(scheduled["scheduled_at"]) - datetime.now(timezone.utc)).total_seconds()
    assert 3540 < ahead < 3660, scheduled["scheduled_at"]
    assert listed(broadcast_id)["status"] == "queued"
    fails(lambda: resend.Broadcasts.update({"broadcast_id": broadcast_id, "name": "Late"}), 422, "validation_error", ValidationError)
    fails(lambda: resend.Broadcasts.remove(broadcast_id), 422, "validation_error", ValidationError)
    fails(lambda: resend.Broadcasts.send({"broadcast_id": broadcast_id}), 422, "validation_error", ValidationError)

    # Canceled before its time: nothing was sent, so Resend's `status` reads `draft` again.
    assert body(resend.Broadcasts.cancel(broadcast_id)) == {"object": "broadcast", "id": broadcast_id, "canceled": 0}
    canceled = resend.Broadcasts.get(broadcast_id)
    assert (canceled["status"], canceled["progress"]["status"], canceled["progress"]["canceled"]) == ("draft", "canceled", 0)
    assert_recent(canceled["progress"]["finished_at"])
    fails(lambda: resend.Broadcasts.cancel(broadcast_id), 422, "validation_error", ValidationError)
    fails(lambda: resend.Broadcasts.remove(broadcast_id), 422, "validation_error", ValidationError)

    copy = body(resend.Broadcasts.duplicate(broadcast_id))
    assert copy == {"object": "broadcast", "id": copy["id"]}
    assert copy["id"] != broadcast_id
    duplicate = resend.Broadcasts.get(copy["id"])
    assert duplicate["name"] == f"{renamed} (copy)"
    assert (duplicate["status"], duplicate["scheduled_at"], duplicate["progress"]) == ("draft", None, DRAFT_PROGRESS)
    for field in ("segment_id", "from", "subject", "html", "text", "reply_to", "preview_text", "topic_id"):
        assert duplicate[field] == updated[field], field
    assert body(resend.Broadcasts.remove(copy["id"])) == {"object": "broadcast", "id": copy["id"], "deleted": True}
    fails(lambda: resend.Broadcasts.get(copy["id"]), 404, "not_found")
    fails(lambda: resend.Broadcasts.get(random_id()), 404, "not_found")
    fails(lambda: resend.Broadcasts.get("not-a-broadcast"), 422, "invalid_parameter")


def test_send_personalises_per_contact_and_skips_unsubscribed_suppressed_and_incomplete(sender):
    tier = f"tier_{secrets.token_hex(4)}"
    resend.ContactProperties.create({"key": tier, "type": "string"})
    ann, bo, cy, dee, eve = (address(label) for label in ("ann", "bo", "cy", "dee", "eve"))
    resend.Suppressions.add({"email": dee})
    segment_id, ids = segment_of(
        {"email": ann, "first_name": "Ann", "properties": {tier: "gold <vip>"}},
        {"email": bo, "properties": {tier: "silver"}},
        {"email": cy, "unsubscribed": True, "properties": {tier: "gold"}},
        {"email": dee, "properties": {tier: "gold"}},
        {"email": eve, "first_name": "Eve"},
    )
    broadcast_id = resend.Broadcasts.create({
        "segment_id": segment_id, "from": sender, "subject": "Hi {{{FIRST_NAME|there}}}",
        "html": "<p>{{{contact.first_name|Friend}}} on {{{%s}}}</p>" % tier, "text": "{{{EMAIL}}} on {{{contact.%s}}}" % tier,
        "send": True,
    })["id"]

    broadcast = finished(broadcast_id)
    assert broadcast["status"] == "sent"
    assert_recent(broadcast["sent_at"])
    progress = dict(broadcast["progress"])
    assert_recent(progress.pop("finished_at"))
    assert progress == {"status": "sent", "total": 5, "sent": 2, "unsubscribed": 1, "suppressed": 1, "failed": 1, "canceled": 0}

    recipients = resend.Broadcasts.recipients(broadcast_id, {"type": "sent"})
    assert (recipients["object"], recipients["has_more"]) == ("list", False)
    by_email = {r["email"]: r for r in recipients["data"]}
    assert sorted(by_email) == sorted([ann, bo])
    expected = {ann: ("Hi Ann", "<p>Ann on gold &lt;vip&gt;</p>", f"{ann} on gold <vip>"),
                bo: ("Hi there", "<p>Friend on silver</p>", f"{bo} on silver")}
    for email, (subject, html, text) in expected.items():
        recipient = by_email[email]
        assert sorted(recipient) == ["contact_id", "email", "email_id", "id", "last_event"]
        assert (recipient["id"], recipient["contact_id"], recipient["last_event"]) == (ids[email], ids[email], "sent")
        record = resend.Emails.get(recipient["email_id"])
        assert (record["to"], record["subject"], record["html"], record["text"]) == ([email], subject, html, text)
        assert record["tags"] == [{"name": "broadcast_id", "value": broadcast_id}]
    listed_ = resend.Broadcasts.recipients(broadcast_id, {"type": "unsubscribed"})["data"]
    assert listed_ == [{"id": ids[cy], "contact_id": ids[cy], "email": cy, "email_id": None, "last_event": None}]
    # A suppressed contact's email is recorded, settled as suppressed, as Resend records it.
    listed_ = resend.Broadcasts.recipients(broadcast_id, {"type": "suppressed"})["data"]
    assert len(listed_) == 1 and listed_[0]["email_id"] is not None, listed_
    assert listed_[0] == {"id": ids[dee], "contact_id": ids[dee], "email": dee, "email_id": listed_[0]["email_id"], "last_event": "suppressed"}
    assert resend.Emails.get(listed_[0]["email_id"])["last_event"] == "suppressed"
    assert resend.Broadcasts.recipients(broadcast_id, {"type": "bounced"})["data"] == []
    only = resend.Broadcasts.recipients(broadcast_id, {"type": "sent", "email": bo.split("@")[0]})
    assert [r["email"] for r in only["data"]] == [bo]
    first = resend.Broadcasts.recipients(broadcast_id, {"type": "sent", "limit": 1})
    assert (len(first["data"]), first["has_more"]) == (1, True)
    rest = resend.Broadcasts.recipients(broadcast_id, {"type": "sent", "limit": 1, "after": first["data"][0]["id"]})
    assert sorted([first["data"][0]["email"], rest["data"][0]["email"]]) == sorted([ann, bo])
    assert body(resend.Broadcasts.clicked_links(broadcast_id)) == {"object": "list", "has_more": False, "data": []}
    fails(lambda: resend.Broadcasts.cancel(broadcast_id), 422, "validation_error", ValidationError)


def test_refusals(sender):
    segment_id, _ = segment_of({"email": address("refusals")})
    empty = resend.Segments.create({"name": f"Empty {secrets.token_hex(4)}"})["id"]
    base = {"segment_id": segment_id, "from": sender, "subject": "Hello", "html": "<p>Hello</p>"}

    def refused(call, text, name="validation_error", exc_type=ValidationError):
        error = fails(call, 422, name, exc_type)
        assert text in error.message, error.message

    unverified = unique_domain("unverified")
    resend.Domains.create({"name": unverified})
    tag = "{{{company_%s}}}" % secrets.token_hex(4)
    refused(lambda: resend.Broadcasts.create({**base, "segment_id": random_id()}), "segment")
    refused(lambda: resend.Broadcasts.create({**base, "from": f"News <news@{unverified}>"}), "not verified")
    refused(lambda: resend.Broadcasts.create({**base, "from": f"news@{unique_domain('nowhere')}"}), "not verified")
    refused(lambda: resend.Broadcasts.create({**base, "html": f"<p>Hi {tag}</p>"}), tag)
    refused(lambda: resend.Broadcasts.create({**base, "text": f"Hi {tag}"}), tag)
    resend.Broadcasts.create({**base, "html": "<p>Hi %s</p>" % tag.replace("}}}", "|friend}}}")})
    refused(lambda: resend.Broadcasts.create({**base, "segment_id": empty, "send": True}), "no contacts")
    draft = resend.Broadcasts.create({**base, "segment_id": empty})["id"]
    refused(lambda: resend.Broadcasts.send({"broadcast_id": draft}), "no contacts")
    refused(lambda: resend.Broadcasts.create({**base, "scheduled_at": "in 1 hour"}), "scheduled_at")
    refused(lambda: resend.Broadcasts.create({**base, "send": True, "scheduled_at": "2020-01-01T00:00:00Z"}), "past")
    missing = ("missing_required_field", MissingRequiredFieldsError)
    refused(lambda: resend.Broadcasts.create({k: v for k, v in base.items() if k != "subject"}), "subject", *missing)
    refused(lambda: resend.Broadcasts.create({k: v for k, v in base.items() if k != "segment_id"}), "segment_id", *missing)
    refused(lambda: resend.Broadcasts.create({k: v for k, v in base.items() if k != "html"}), "html", *missing)
    refused(lambda: resend.Broadcasts.update({"broadcast_id": draft, "from": f"news@{unverified}"}), "not verified")
    refused(lambda: resend.Broadcasts.update({"broadcast_id": draft, "subject": f"For {tag}"}), tag)
    fails(lambda: resend.Broadcasts.cancel(draft), 422, "validation_error", ValidationError)
    fails(lambda: resend.Broadcasts.recipients(random_id(), {"type": "sent"}), 404, "not_found")
