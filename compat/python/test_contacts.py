"""Contacts through the official Python SDK (PyPI `resend`): resend.Contacts.create / get (by
id and by address, which the SDK percent-encodes) / list / update / remove, in a team of its
own (made with the suite's operator key), so listing sees only this test's contacts."""

import secrets

import pytest
import resend

from conftest import TIMESTAMP_RE, UUID_RE, assert_error, key_name, raw, using_key


def team_key():
    """The first key of a new team of its own."""
    response = raw("POST", "/teams", json={"name": key_name("contacts")})
    assert response.status_code == 201, response.text
    return response.json()["api_key"]["token"]


def test_create_get_list_update_remove():
    email = f"Py.{secrets.token_hex(4)}@Compat.Herald.test"
    with using_key(team_key()):
        created = resend.Contacts.create({"email": email, "first_name": "Ann", "last_name": "Lee"})
        assert created["object"] == "contact"
        assert UUID_RE.match(created["id"])
        with pytest.raises(resend.exceptions.ResendError) as excinfo:
            resend.Contacts.create({"email": email.lower().replace("py.", "Py.")})
        assert_error(excinfo, 409, "conflict")
        second = resend.Contacts.create({"email": f"two.{email}", "unsubscribed": True})

        by_id = resend.Contacts.get(id=created["id"])
        assert by_id["object"] == "contact"
        assert by_id["email"] == email
        assert by_id["first_name"] == "Ann"
        assert by_id["unsubscribed"] is False
        assert TIMESTAMP_RE.match(by_id["created_at"])
        assert by_id["properties"] == {}
        assert resend.Contacts.get(email=email)["id"] == created["id"]

        listed = resend.Contacts.list(params={"limit": 1})
        assert listed["object"] == "list"
        assert listed["has_more"] is True
        assert listed["data"][0]["id"] == second["id"]
        rest = resend.Contacts.list(params={"limit": 1, "after": second["id"]})
        assert [c["id"] for c in rest["data"]] == [created["id"]]

        # The SDK sends the identifier in the body too; it changes nothing.
        updated = resend.Contacts.update({"email": email, "unsubscribed": True, "last_name": None})
        assert (updated["object"], updated["id"]) == ("contact", created["id"])
        after = resend.Contacts.get(id=created["id"])
        assert after["unsubscribed"] is True
        assert after["last_name"] is None
        assert after["first_name"] == "Ann"

        removed = resend.Contacts.remove(email=email)
        assert removed["deleted"] is True
        assert removed["contact"] == email
        with pytest.raises(resend.exceptions.ResendError) as excinfo:
            resend.Contacts.get(id=created["id"])
        assert_error(excinfo, 404, "not_found")
