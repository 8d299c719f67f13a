"""Suppressions through the official Python SDK (PyPI `resend`): resend.Suppressions.add /
list / get / remove and resend.Suppressions.Batch.add / remove. Listing runs in a team of its
own (made with the suite's operator key), so other tests' entries never show."""

import secrets

import pytest
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError

from conftest import TIMESTAMP_RE, UUID_RE, assert_error, key_name, raw, using_key


def unique_address(label):
    """An address no other test (Python or Node) uses."""
    return f"py-{label}-{secrets.token_hex(5)}@compat.herald.test"


def team_key(label):
    """The first key of a new team of its own."""
    response = raw("POST", "/teams", json={"name": key_name(label)})
    assert response.status_code == 201, response.text
    return response.json()["api_key"]["token"]


def test_add_get_by_id_and_by_address_remove():
    email = unique_address("single")
    added = resend.Suppressions.add({"email": email})
    assert added["object"] == "suppression"
    assert UUID_RE.match(added["id"])
    assert resend.Suppressions.add({"email": email.upper()})["id"] == added["id"]

    by_id = resend.Suppressions.get(added["id"])
    assert by_id["object"] == "suppression"
    assert by_id["id"] == added["id"]
    assert by_id["email"] == email
    assert by_id["origin"] == "manual"
    assert by_id["source_id"] is None
    assert TIMESTAMP_RE.match(by_id["created_at"]), by_id["created_at"]
    # The SDK quotes the address into the path (`%40` for `@`).
    by_address = resend.Suppressions.get(email)
    assert by_address["id"] == added["id"]
    assert by_address["email"] == email

    removed = resend.Suppressions.remove(email)
    assert removed["object"] == "suppression"
    assert removed["id"] == added["id"]
    assert removed["deleted"] is True
    for call in (lambda: resend.Suppressions.get(added["id"]), lambda: resend.Suppressions.remove(email)):
        with pytest.raises(ResendError) as excinfo:
            call()
        assert_error(excinfo, 404, "not_found")


def test_list_pages_newest_first_and_filters_by_origin():
    with using_key(team_key("suppressions-list")):
        emails = [unique_address(f"list-{n}") for n in range(3)]
        for email in emails:
            resend.Suppressions.add({"email": email})
        first = resend.Suppressions.list({"limit": 2})
        assert first["object"] == "list"
        assert first["has_more"] is True
        assert [s["email"] for s in first["data"]] == [emails[2], emails[1]]
        assert sorted(first["data"][0]) == ["created_at", "email", "id", "origin", "source_id"]
        second = resend.Suppressions.list({"limit": 2, "after": first["data"][1]["id"]})
        assert second["has_more"] is False
        assert [s["email"] for s in second["data"]] == [emails[0]]
        assert len(resend.Suppressions.list({"origin": "manual"})["data"]) == 3
        assert resend.Suppressions.list({"origin": "bounce"})["data"] == []


def test_batch_add_and_remove():
    a, b = unique_address("batch-a"), unique_address("batch-b")
    existing = resend.Suppressions.add({"email": b})
    added = resend.Suppressions.Batch.add({"emails": [a, b, a.upper()]})
    assert len(added["data"]) == 2, "duplicates collapse"
    assert all(entry["object"] == "suppression" and UUID_RE.match(entry["id"]) for entry in added["data"])
    assert added["data"][1]["id"] == existing["id"]

    by_email = resend.Suppressions.Batch.remove({"emails": [a, unique_address("never")]})
    assert by_email["data"] == [{"object": "suppression", "id": added["data"][0]["id"], "deleted": True}]
    by_id = resend.Suppressions.Batch.remove({"ids": [existing["id"]]})
    assert by_id["data"] == [{"object": "suppression", "id": existing["id"], "deleted": True}]


def test_errors_have_resend_names():
    with pytest.raises(ResendError) as excinfo:
        resend.Suppressions.add({"email": "not an address"})
    assert_error(excinfo, 422, "validation_error")
    with pytest.raises(ResendError) as excinfo:
        resend.Suppressions.add({})
    assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)
    with pytest.raises(ResendError) as excinfo:
        resend.Suppressions.Batch.add({"emails": [unique_address(f"many-{n}") for n in range(101)]})
    assert_error(excinfo, 422, "validation_error")
    with pytest.raises(ResendError) as excinfo:
        resend.Suppressions.get(unique_address("missing"))
    assert_error(excinfo, 404, "not_found")


def test_suppressions_belong_to_one_team_and_sending_keys_are_refused():
    email = unique_address("team")
    added = resend.Suppressions.add({"email": email})
    with using_key(team_key("suppressions-other")):
        for call in (lambda: resend.Suppressions.get(added["id"]), lambda: resend.Suppressions.get(email)):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 404, "not_found")
    key = resend.ApiKeys.create({"name": key_name("sending"), "permission": "sending_access"})
    with using_key(key["token"]):
        for call in (resend.Suppressions.list, lambda: resend.Suppressions.add({"email": email})):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 401, "restricted_api_key")
    resend.ApiKeys.remove(key["id"])
    resend.Suppressions.remove(added["id"])
