"""Webhooks through the official Python SDK (PyPI `resend`): resend.Webhooks.create / get /
list / update / remove. The suite's herald refuses private endpoints (the default), so
endpoints are a public address literal, which needs no DNS. Listing runs in a team of its
own (made with the suite's operator key), so other tests' webhooks never show."""

import base64
import re
import secrets

import pytest
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError, ValidationError

from conftest import TIMESTAMP_RE, UUID_RE, assert_error, key_name, raw, using_key

SECRET_RE = re.compile(r"^whsec_[A-Za-z0-9+/]+={0,2}$")


def unique_endpoint(label):
    """An endpoint no other test (Python or Node) uses."""
    return f"https://93.184.216.34/py-{label}-{secrets.token_hex(5)}"


def team_key(label):
    """The first key of a new team of its own."""
    response = raw("POST", "/teams", json={"name": key_name(label)})
    assert response.status_code == 201, response.text
    return response.json()["api_key"]["token"]


def test_create_answers_a_signing_secret_and_get_shows_the_webhook():
    endpoint = unique_endpoint("create")
    created = resend.Webhooks.create({"endpoint": endpoint, "events": ["email.sent", "email.bounced"]})
    # The SDK adds the response's headers as `http_headers`.
    assert set(created) - {"http_headers"} == {"id", "object", "signing_secret"}
    assert created["object"] == "webhook"
    assert UUID_RE.match(created["id"])
    secret = created["signing_secret"]
    assert SECRET_RE.match(secret), secret
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32

    webhook = resend.Webhooks.get(created["id"])
    assert set(webhook) - {"http_headers"} == {
        "created_at",
        "endpoint",
        "events",
        "id",
        "object",
        "signing_secret",
        "status",
    }
    assert webhook["object"] == "webhook"
    assert webhook["id"] == created["id"]
    assert webhook["endpoint"] == endpoint
    assert webhook["events"] == ["email.sent", "email.bounced"]
    assert webhook["status"] == "enabled"
    assert webhook["signing_secret"] == secret
    assert TIMESTAMP_RE.match(webhook["created_at"]), webhook["created_at"]
    resend.Webhooks.remove(created["id"])


def test_list_pages_newest_first_without_secrets():
    with using_key(team_key("webhooks-list")):
        endpoints = [unique_endpoint(f"list-{n}") for n in range(3)]
        ids = [resend.Webhooks.create({"endpoint": e, "events": ["domain.created"]})["id"] for e in endpoints]
        listed = resend.Webhooks.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert [w["endpoint"] for w in listed["data"]] == endpoints[::-1]
        assert sorted(listed["data"][0]) == ["created_at", "endpoint", "events", "id", "status"]
        first = resend.Webhooks.list({"limit": 2})
        assert first["has_more"] is True
        assert [w["id"] for w in first["data"]] == [ids[2], ids[1]]
        second = resend.Webhooks.list({"limit": 2, "after": ids[1]})
        assert second["has_more"] is False
        assert [w["id"] for w in second["data"]] == [ids[0]]


def test_update_changes_endpoint_events_and_status_and_remove_deletes():
    created = resend.Webhooks.create({"endpoint": unique_endpoint("update"), "events": ["email.sent"]})
    # The SDK sends `webhook_id` in the body as well as in the path.
    updated = resend.Webhooks.update({"webhook_id": created["id"], "status": "disabled"})
    assert updated["object"] == "webhook"
    assert updated["id"] == created["id"]
    endpoint = unique_endpoint("updated")
    resend.Webhooks.update(
        {"webhook_id": created["id"], "endpoint": endpoint, "events": ["email.delivered", "email.opened"]}
    )
    webhook = resend.Webhooks.get(created["id"])
    assert webhook["status"] == "disabled"
    assert webhook["endpoint"] == endpoint
    assert webhook["events"] == ["email.delivered", "email.opened"]
    assert webhook["signing_secret"] == created["signing_secret"]

    removed = resend.Webhooks.remove(created["id"])
    assert removed["object"] == "webhook"
    assert removed["id"] == created["id"]
    assert removed["deleted"] is True
    for call in (lambda: resend.Webhooks.get(created["id"]), lambda: resend.Webhooks.remove(created["id"])):
        with pytest.raises(ResendError) as excinfo:
            call()
        assert_error(excinfo, 404, "not_found")


def test_errors_have_resend_names():
    endpoint = unique_endpoint("errors")
    with pytest.raises(ResendError) as excinfo:
        resend.Webhooks.create({"endpoint": endpoint})
    assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)
    for events in ([], ["email.exploded"]):
        with pytest.raises(ResendError) as excinfo:
            resend.Webhooks.create({"endpoint": endpoint, "events": events})
        assert_error(excinfo, 422, "validation_error", ValidationError)
    with pytest.raises(ResendError) as excinfo:
        resend.Webhooks.create({"endpoint": "http://169.254.169.254/latest", "events": ["email.sent"]})
    error = assert_error(excinfo, 422, "validation_error", ValidationError)
    assert "refused" in error.message
    with pytest.raises(ResendError) as excinfo:
        resend.Webhooks.get("nope")
    assert_error(excinfo, 422, "invalid_parameter")


def test_webhooks_belong_to_one_team_and_sending_keys_are_refused():
    created = resend.Webhooks.create({"endpoint": unique_endpoint("team"), "events": ["email.sent"]})
    with using_key(team_key("webhooks-other")):
        with pytest.raises(ResendError) as excinfo:
            resend.Webhooks.get(created["id"])
        assert_error(excinfo, 404, "not_found")
        assert resend.Webhooks.list()["data"] == []
    key = resend.ApiKeys.create({"name": key_name("sending"), "permission": "sending_access"})
    with using_key(key["token"]):
        for call in (resend.Webhooks.list, lambda: resend.Webhooks.get(created["id"])):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 401, "restricted_api_key")
    resend.ApiKeys.remove(key["id"])
    resend.Webhooks.remove(created["id"])
