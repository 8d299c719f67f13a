"""API keys through the official Python SDK (PyPI `resend`): resend.ApiKeys.create / list /
remove, and SDK calls made with the tokens they hand out."""

import pytest
import resend
from resend.exceptions import InvalidApiKeyError, ResendError

from conftest import TIMESTAMP_RE, UUID_RE, assert_error, key_name, raw, unique_domain, using_key


def find(key_id):
    return next((k for k in resend.ApiKeys.list()["data"] if k["id"] == key_id), None)


def test_create_returns_an_id_and_a_token_that_works_at_once():
    params: resend.ApiKeys.CreateParams = {"name": key_name("create")}
    created = resend.ApiKeys.create(params)
    assert UUID_RE.match(created["id"])
    assert isinstance(created["token"], str)
    assert created["token"].startswith("re_"), created["token"]
    assert len(created["token"]) >= 20
    with using_key(created["token"]):
        listed = resend.Domains.list()
    assert listed["object"] == "list"
    assert isinstance(listed["data"], list)
    resend.ApiKeys.remove(created["id"])


def test_create_answers_201_on_the_wire():
    response = raw("POST", "/api-keys", json={"name": key_name("status")})
    assert response.status_code == 201
    body = response.json()
    assert UUID_RE.match(body["id"])
    assert body["token"].startswith("re_")
    resend.ApiKeys.remove(body["id"])


def test_list_shows_keys_without_their_tokens():
    name = key_name("list")
    created = resend.ApiKeys.create({"name": name, "permission": "full_access"})
    listed = resend.ApiKeys.list()
    assert listed["object"] == "list"
    assert isinstance(listed["has_more"], bool)
    key = next((k for k in listed["data"] if k["id"] == created["id"]), None)
    assert key is not None, "the new key is listed"
    assert key["name"] == name
    assert TIMESTAMP_RE.match(key["created_at"]), key["created_at"]
    assert key["last_used_at"] is None or TIMESTAMP_RE.match(key["last_used_at"])
    assert key["permission"] == "full_access"
    assert key["domain_id"] is None
    assert "token" not in key
    assert created["token"] not in repr(listed["data"])
    assert len(listed["data"]) >= 2, "the bootstrap key is listed too"
    resend.ApiKeys.remove(created["id"])


def test_remove_deletes_the_key_and_its_token_stops_working():
    created = resend.ApiKeys.create({"name": key_name("remove")})
    with using_key(created["token"]):
        resend.Domains.list()
    removed = resend.ApiKeys.remove(created["id"])
    assert removed["object"] == "api_key"
    assert removed["id"] == created["id"]
    assert removed["deleted"] is True
    with using_key(created["token"]), pytest.raises(ResendError) as excinfo:
        resend.Domains.list()
    assert_error(excinfo, 403, "invalid_api_key", InvalidApiKeyError)
    with pytest.raises(ResendError) as excinfo:
        resend.ApiKeys.remove(created["id"])
    assert_error(excinfo, 404, "not_found")
    assert find(created["id"]) is None


def test_sending_access_key_is_restricted():
    domain = resend.Domains.create({"name": unique_domain("sending-key")})
    created = resend.ApiKeys.create(
        {"name": key_name("sending"), "permission": "sending_access", "domain_id": domain["id"]}
    )
    assert created["token"].startswith("re_")
    listed = find(created["id"])
    assert listed["permission"] == "sending_access"
    assert listed["domain_id"] == domain["id"]
    with using_key(created["token"]):
        for call in (resend.Domains.list, lambda: resend.Domains.get(domain["id"]), resend.ApiKeys.list):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 401, "restricted_api_key")
    resend.ApiKeys.remove(created["id"])


def test_sending_access_key_without_domain_is_restricted():
    created = resend.ApiKeys.create({"name": key_name("sending-any"), "permission": "sending_access"})
    listed = find(created["id"])
    assert listed["permission"] == "sending_access"
    assert listed["domain_id"] is None
    with using_key(created["token"]), pytest.raises(ResendError) as excinfo:
        resend.Domains.list()
    assert_error(excinfo, 401, "restricted_api_key")
    resend.ApiKeys.remove(created["id"])
