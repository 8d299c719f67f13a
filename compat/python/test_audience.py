"""A team's audience through the official Python SDK (PyPI `resend`): resend.Segments,
resend.Contacts with segments, topics and properties (and `audience_id`, which the SDK posts
to the legacy `/audiences/{id}/contacts`), resend.Contacts.Segments, resend.Contacts.Topics,
resend.Topics, resend.ContactProperties and resend.Contacts.Imports; and the legacy
`/audiences` paths raw, shaped as the Java and .NET SDKs send them (resend-java builds its
bodies with Jackson's defaults, nulls included, and sends DELETE with an empty body and no
Content-Type; resend-dotnet leaves nulls out, except `email`, and puts an address into the
path unencoded). Every test runs in a team of its own (made with the suite's operator key):
a contact's topics list every topic of its team, and the lists here must show only the
test's own items."""

import secrets
import time

import pytest
import requests
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError, ValidationError

from conftest import BASE_URL, TIMESTAMP_RE, UUID_RE, assert_error, key_name, random_id, raw, using_key

CONTACT_KEYS = ["created_at", "email", "first_name", "id", "last_name", "unsubscribed"]


def unique_address(label):
    """An address no other test (Python, Node or Rust) uses."""
    return f"py-{label}-{secrets.token_hex(5)}@compat.herald.test"


def team_key(label):
    """The first key of a new team of its own."""
    response = raw("POST", "/teams", json={"name": key_name(label)})
    assert response.status_code == 201, response.text
    return response.json()["api_key"]["token"]


def body(answer):
    """An SDK answer without the `http_headers` the SDK adds to it."""
    return {k: v for k, v in answer.items() if k != "http_headers"}


def ids(items):
    return [item["id"] for item in items]


def fails(call, code, name, exc_type=ResendError):
    """Runs `call`, which must raise the given Resend error."""
    with pytest.raises(ResendError) as excinfo:
        call()
    return assert_error(excinfo, code, name, exc_type)


def raw_refusal(response, code, name):
    assert response.status_code == code, response.text
    assert response.json()["name"] == name, response.text


def completed_import(import_id):
    """Polls resend.Contacts.Imports.get until the import is completed (imports run in the
    background)."""
    deadline = time.monotonic() + 30
    while True:
        current = resend.Contacts.Imports.get(import_id)
        assert current["status"] in ("queued", "in_progress", "completed"), current
        if current["status"] == "completed":
            return current
        assert time.monotonic() < deadline, f"import {import_id} did not complete within 30 s: {current}"
        time.sleep(0.2)


def csv_bytes(*lines):
    return ("\n".join(lines) + "\n").encode()


def test_segments_create_get_list_update_remove():
    key = team_key("segments")
    wire_name = f"Wire {secrets.token_hex(4)}"
    on_wire = raw("POST", "/segments", key=key, json={"name": wire_name})
    assert on_wire.status_code == 201, on_wire.text
    wire = on_wire.json()
    assert wire == {"object": "segment", "id": wire["id"], "name": wire_name}
    with using_key(key):
        name = f"Newsletter {secrets.token_hex(4)}"
        created = body(resend.Segments.create({"name": name}))
        assert created == {"object": "segment", "id": created["id"], "name": name}
        assert UUID_RE.match(created["id"])

        segment = body(resend.Segments.get(created["id"]))
        assert sorted(segment) == ["created_at", "id", "name", "object"]
        assert (segment["object"], segment["id"], segment["name"]) == ("segment", created["id"], name)
        assert TIMESTAMP_RE.match(segment["created_at"]), segment["created_at"]

        listed = resend.Segments.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert ids(listed["data"]) == [created["id"], wire["id"]], "newest first"
        assert listed["data"][0] == {"id": created["id"], "name": name, "created_at": segment["created_at"]}
        first = resend.Segments.list({"limit": 1})
        assert first["has_more"] is True
        assert ids(first["data"]) == [created["id"]]
        second = resend.Segments.list({"limit": 1, "after": created["id"]})
        assert second["has_more"] is False
        assert ids(second["data"]) == [wire["id"]]
        assert ids(resend.Segments.list({"limit": 1, "before": wire["id"]})["data"]) == [created["id"]]
        fails(lambda: resend.Segments.list({"limit": 101}), 422, "validation_error", ValidationError)

        renamed = f"Renamed {secrets.token_hex(4)}"
        assert body(resend.Segments.update(created["id"], {"name": renamed})) == {"object": "segment", "id": created["id"]}
        assert resend.Segments.get(created["id"])["name"] == renamed

        removed = body(resend.Segments.remove(created["id"]))
        assert removed == {"object": "segment", "id": created["id"], "deleted": True}
        fails(lambda: resend.Segments.get(created["id"]), 404, "not_found")
        assert ids(resend.Segments.list()["data"]) == [wire["id"]]

        fails(lambda: resend.Segments.get(random_id()), 404, "not_found")
        fails(lambda: resend.Segments.get("not-a-segment"), 422, "invalid_parameter")
        fails(lambda: resend.Segments.create({}), 422, "missing_required_field", MissingRequiredFieldsError)


def test_contacts_with_segments_topics_and_properties():
    key = team_key("contacts-audience")
    with using_key(key):
        vip = resend.Segments.create({"name": "VIP"})
        trial = resend.Segments.create({"name": "Trial"})
        news = resend.Topics.create({"name": "News", "default_subscription": "opt_out"})
        resend.ContactProperties.create({"key": "plan", "type": "string", "fallback_value": "free"})
        resend.ContactProperties.create({"key": "seats", "type": "number"})
        resend.ContactProperties.create({"key": "nickname", "type": "string"})

        email = unique_address("full")
        created = body(
            resend.Contacts.create(
                {
                    "email": email,
                    "first_name": "Ada",
                    "segments": [{"id": vip["id"]}, {"id": trial["id"]}],
                    "topics": [{"id": news["id"], "subscription": "opt_in"}],
                    "properties": {"seats": 3},
                }
            )
        )
        assert created == {"object": "contact", "id": created["id"]}
        outsider = resend.Contacts.create({"email": unique_address("outsider")})

        contact = resend.Contacts.get(id=created["id"])
        assert contact["email"] == email
        assert contact["first_name"] == "Ada"
        assert contact["last_name"] is None
        assert contact["unsubscribed"] is False
        # Every defined property with a value, or its fallback; values always as strings.
        assert contact["properties"] == {
            "plan": {"type": "string", "value": "free"},
            "seats": {"type": "number", "value": "3"},
        }

        memberships = resend.Contacts.Segments.list({"contact_id": created["id"]})
        assert memberships["object"] == "list"
        assert memberships["has_more"] is False
        assert sorted(ids(memberships["data"])) == sorted([vip["id"], trial["id"]])
        vip_entry = next(s for s in memberships["data"] if s["id"] == vip["id"])
        assert sorted(vip_entry) == ["created_at", "id", "name"]
        assert vip_entry["name"] == "VIP"
        # By address: the SDK percent-encodes it.
        by_email = resend.Contacts.Segments.list({"email": email})
        assert sorted(ids(by_email["data"])) == sorted([vip["id"], trial["id"]])

        # A segment's contacts: GET /segments/{id}/contacts, and GET /contacts?segment_id=.
        in_vip = resend.Contacts.list(segment_id=vip["id"])
        assert in_vip["object"] == "list"
        assert in_vip["has_more"] is False
        assert ids(in_vip["data"]) == [created["id"]]
        assert sorted(in_vip["data"][0]) == CONTACT_KEYS
        filtered = raw("GET", f"/contacts?segment_id={trial['id']}", key=key)
        assert filtered.status_code == 200, filtered.text
        assert ids(filtered.json()["data"]) == [created["id"]]
        assert sorted(ids(resend.Contacts.list()["data"])) == sorted([created["id"], outsider["id"]])

        topics = resend.Contacts.Topics.list(contact_id=created["id"])
        assert topics["object"] == "list"
        assert topics["has_more"] is False
        assert len(topics["data"]) == 1
        topic = topics["data"][0]
        assert sorted(topic) == ["created_at", "description", "id", "name", "subscription"]
        assert (topic["id"], topic["name"], topic["description"], topic["subscription"]) == (
            news["id"],
            "News",
            None,
            "opt_in",
        )
        assert TIMESTAMP_RE.match(topic["created_at"]), topic["created_at"]

        # PATCH properties: a value replaces, null removes. The SDK sends the id in the body too.
        updated = resend.Contacts.update(
            {"id": created["id"], "properties": {"plan": "pro", "seats": None, "nickname": "Countess"}}
        )
        assert body(updated) == {"object": "contact", "id": created["id"]}
        assert resend.Contacts.get(email=email)["properties"] == {
            "plan": {"type": "string", "value": "pro"},
            "nickname": {"type": "string", "value": "Countess"},
        }
        resend.Contacts.update({"email": email, "properties": {"plan": None, "seats": 12}})
        assert resend.Contacts.get(id=created["id"])["properties"] == {
            "plan": {"type": "string", "value": "free"},
            "seats": {"type": "number", "value": "12"},
            "nickname": {"type": "string", "value": "Countess"},
        }
        for properties in ({"unknown_key": "x"}, {"seats": "lots"}):
            fails(lambda: resend.Contacts.update({"id": created["id"], "properties": properties}), 422, "validation_error")

        refused = unique_address("refused")
        fails(lambda: resend.Contacts.create({"email": refused, "segments": [{"id": random_id()}]}), 404, "not_found")
        fails(
            lambda: resend.Contacts.create({"email": refused, "topics": [{"id": random_id(), "subscription": "opt_in"}]}),
            404,
            "not_found",
        )
        for properties in ({"unknown_key": "x"}, {"seats": "lots"}):
            fails(lambda: resend.Contacts.create({"email": refused, "properties": properties}), 422, "validation_error")
        fails(lambda: resend.Contacts.get(email=refused), 404, "not_found")


def test_contacts_list_by_audience_id_and_create_with_audience_id():
    """The SDK's `audience_id` paths: POST /audiences/{id}/contacts (with `audience_id` in
    the body too), GET /audiences/{id}/contacts and /audiences/{id}/contacts/{address}."""
    with using_key(team_key("contacts-legacy-sdk")):
        audience = resend.Segments.create({"name": f"Legacy {secrets.token_hex(4)}"})
        email = unique_address("legacy-sdk")
        created = body(resend.Contacts.create({"audience_id": audience["id"], "email": email, "first_name": "Lin"}))
        assert created == {"object": "contact", "id": created["id"]}
        assert UUID_RE.match(created["id"])
        listed = resend.Contacts.list(audience_id=audience["id"])
        assert listed["object"] == "list"
        assert ids(listed["data"]) == [created["id"]]
        via_audience = resend.Contacts.get(audience_id=audience["id"], email=email)
        assert body(via_audience) == body(resend.Contacts.get(id=created["id"]))
        assert via_audience["first_name"] == "Lin"
        updated = resend.Contacts.update({"audience_id": audience["id"], "id": created["id"], "last_name": "Wu"})
        assert body(updated) == {"object": "contact", "id": created["id"]}
        assert resend.Contacts.get(id=created["id"])["last_name"] == "Wu"
        removed = resend.Contacts.remove(audience_id=audience["id"], id=created["id"])
        assert body(removed) == {"object": "contact", "contact": created["id"], "id": created["id"], "deleted": True}
        fails(lambda: resend.Contacts.get(id=created["id"]), 404, "not_found")


def test_legacy_audiences_as_the_java_and_dotnet_sdks_send_them():
    key = team_key("audiences")
    name = f"Legacy {secrets.token_hex(4)}"

    # POST /audiences {"name"}: both SDKs.
    created = raw("POST", "/audiences", key=key, json={"name": name})
    assert created.status_code == 201, created.text
    audience = created.json()
    assert audience == {"object": "audience", "id": audience["id"], "name": name}
    assert UUID_RE.match(audience["id"])
    audience_path = f"/audiences/{audience['id']}"

    got = raw("GET", audience_path, key=key)
    assert got.status_code == 200, got.text
    assert sorted(got.json()) == ["created_at", "id", "name", "object"]
    assert (got.json()["object"], got.json()["id"], got.json()["name"]) == ("audience", audience["id"], name)
    created_at = got.json()["created_at"]
    assert TIMESTAMP_RE.match(created_at), created_at
    listed = raw("GET", "/audiences", key=key)
    assert listed.status_code == 200, listed.text
    assert listed.json() == {
        "object": "list",
        "has_more": False,
        "data": [{"id": audience["id"], "name": name, "created_at": created_at}],
    }
    # The same store as /segments, both ways.
    with using_key(key):
        segment = body(resend.Segments.get(audience["id"]))
        assert segment == {"object": "segment", "id": audience["id"], "name": name, "created_at": created_at}
        other = resend.Segments.create({"name": "Made as a segment"})
    as_audience = raw("GET", f"/audiences/{other['id']}", key=key)
    assert as_audience.status_code == 200, as_audience.text
    assert as_audience.json()["object"] == "audience"
    assert [a["id"] for a in raw("GET", "/audiences", key=key).json()["data"]] == [other["id"], audience["id"]]

    # POST /audiences/{id}/contacts as resend-java sends it: every field, nulls included.
    java_email = unique_address("java")
    java = raw(
        "POST",
        f"{audience_path}/contacts",
        key=key,
        json={"audience_id": audience["id"], "email": java_email, "unsubscribed": False, "first_name": "Jo", "last_name": None},
    )
    assert java.status_code == 201, java.text
    java_id = java.json()["id"]
    assert java.json() == {"object": "contact", "id": java_id}
    # As resend-dotnet sends it: nulls left out.
    dotnet_email = unique_address("dotnet")
    dotnet = raw(
        "POST",
        f"{audience_path}/contacts",
        key=key,
        json={"email": dotnet_email, "first_name": "Dee", "unsubscribed": True},
    )
    assert dotnet.status_code == 201, dotnet.text
    dotnet_id = dotnet.json()["id"]
    assert dotnet.json() == {"object": "contact", "id": dotnet_id}
    # An address that is already a contact is found, and added to the audience.
    existing_email = unique_address("existing")
    with using_key(key):
        existing = resend.Contacts.create({"email": existing_email, "first_name": "Kai"})
        loner = resend.Contacts.create({"email": unique_address("loner")})
    again = raw("POST", f"{audience_path}/contacts", key=key, json={"email": existing_email})
    assert again.status_code == 201, again.text
    assert again.json() == {"object": "contact", "id": existing["id"]}
    missing = raw("POST", f"/audiences/{random_id()}/contacts", key=key, json={"email": unique_address("nowhere")})
    raw_refusal(missing, 404, "not_found")
    raw_refusal(raw("POST", f"{audience_path}/contacts", key=key, json={"first_name": "No address"}), 422, "missing_required_field")

    # GET /audiences/{id}/contacts: the audience's contacts only, newest first.
    members = raw("GET", f"{audience_path}/contacts", key=key)
    assert members.status_code == 200, members.text
    assert members.json()["object"] == "list"
    assert members.json()["has_more"] is False
    assert ids(members.json()["data"]) == [existing["id"], dotnet_id, java_id]
    assert loner["id"] not in ids(members.json()["data"])
    java_entry = members.json()["data"][2]
    assert sorted(java_entry) == CONTACT_KEYS
    assert (java_entry["email"], java_entry["first_name"], java_entry["last_name"], java_entry["unsubscribed"]) == (
        java_email,
        "Jo",
        None,
        False,
    )
    page = raw("GET", f"{audience_path}/contacts?limit=1", key=key)
    assert page.status_code == 200, page.text
    assert page.json()["has_more"] is True
    assert ids(page.json()["data"]) == [existing["id"]]

    # GET /audiences/{id}/contacts/{id} (both SDKs) and /{address} (resend-dotnet, unencoded).
    with using_key(key):
        expected = body(resend.Contacts.get(id=java_id))
    by_id = raw("GET", f"{audience_path}/contacts/{java_id}", key=key)
    assert by_id.status_code == 200, by_id.text
    assert by_id.json() == expected
    by_address = raw("GET", f"{audience_path}/contacts/{java_email}", key=key)
    assert by_address.status_code == 200, by_address.text
    assert by_address.json() == expected
    assert expected["object"] == "contact"
    assert expected["properties"] == {}

    # PATCH as resend-java sends it: `id` and `audience_id` in the body, every field set.
    java_patch = raw(
        "PATCH",
        f"{audience_path}/contacts/{java_id}",
        key=key,
        json={"id": java_id, "audience_id": audience["id"], "unsubscribed": True, "first_name": "Joan", "last_name": "Doe"},
    )
    assert java_patch.status_code == 200, java_patch.text
    assert java_patch.json() == {"object": "contact", "id": java_id}
    # As resend-dotnet sends it, by address: `email` is always written, null when not set.
    dotnet_patch = raw(
        "PATCH", f"{audience_path}/contacts/{dotnet_email}", key=key, json={"email": None, "unsubscribed": False}
    )
    assert dotnet_patch.status_code == 200, dotnet_patch.text
    assert dotnet_patch.json() == {"object": "contact", "id": dotnet_id}
    with using_key(key):
        joan = resend.Contacts.get(id=java_id)
        assert (joan["first_name"], joan["last_name"], joan["unsubscribed"]) == ("Joan", "Doe", True)
        dee = resend.Contacts.get(id=dotnet_id)
        assert (dee["email"], dee["first_name"], dee["unsubscribed"]) == (dotnet_email, "Dee", False)

    # DELETE /audiences/{id}/contacts/{address} (resend-dotnet: no body) and /{id}
    # (resend-java: an empty body without a Content-Type).
    gone = raw("DELETE", f"{audience_path}/contacts/{dotnet_email}", key=key)
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"object": "contact", "contact": dotnet_email, "id": dotnet_id, "deleted": True}
    gone = java_style("DELETE", f"{audience_path}/contacts/{java_id}", key)
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"object": "contact", "contact": java_id, "id": java_id, "deleted": True}
    raw_refusal(raw("GET", f"/contacts/{java_id}", key=key), 404, "not_found")
    assert ids(raw("GET", f"{audience_path}/contacts", key=key).json()["data"]) == [existing["id"]]

    # DELETE /audiences/{id}.
    deleted = java_style("DELETE", audience_path, key)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"object": "audience", "id": audience["id"], "deleted": True}
    raw_refusal(raw("GET", audience_path, key=key), 404, "not_found")
    raw_refusal(raw("GET", f"/audiences/{random_id()}", key=key), 404, "not_found")
    raw_refusal(raw("GET", "/audiences/not-an-audience", key=key), 422, "invalid_parameter")
    raw_refusal(raw("POST", "/audiences", key=key, json={}), 422, "missing_required_field")
    # The contact that was in it stays a contact.
    assert raw("GET", f"/contacts/{existing['id']}", key=key).status_code == 200


def java_style(method, path, key):
    """A request as resend-java sends a DELETE: an empty body, no Content-Type."""
    headers = {"User-Agent": "resend-java/4.3.0", "Accept": "application/json", "Authorization": f"Bearer {key}"}
    return requests.request(method, f"{BASE_URL}{path}", headers=headers, data=b"", timeout=30)


def test_contact_segments_add_list_remove():
    key = team_key("contact-segments")
    with using_key(key):
        a, b, c = (resend.Segments.create({"name": name}) for name in ("A", "B", "C"))
        email = unique_address("member")
        contact = resend.Contacts.create({"email": email})
        assert resend.Contacts.Segments.list({"contact_id": contact["id"]})["data"] == []

        # The SDK posts {"contact_id", "segment_id"} as a body, which changes nothing.
        added = body(resend.Contacts.Segments.add({"contact_id": contact["id"], "segment_id": a["id"]}))
        assert added == {"object": "contact_segment", "id": a["id"], "contact_id": contact["id"], "segment_id": a["id"]}
        by_email = body(resend.Contacts.Segments.add({"email": email, "segment_id": b["id"]}))
        assert by_email == {"object": "contact_segment", "id": b["id"], "contact_id": contact["id"], "segment_id": b["id"]}
    # As resend-dotnet adds one: POST without a body. 201 on the wire.
    on_wire = raw("POST", f"/contacts/{contact['id']}/segments/{c['id']}", key=key)
    assert on_wire.status_code == 201, on_wire.text
    assert on_wire.json() == {"object": "contact_segment", "id": c["id"], "contact_id": contact["id"], "segment_id": c["id"]}
    with using_key(key):
        listed = resend.Contacts.Segments.list({"contact_id": contact["id"]})
        assert sorted(ids(listed["data"])) == sorted([a["id"], b["id"], c["id"]])
        assert ids(resend.Contacts.list(segment_id=b["id"])["data"]) == [contact["id"]]

        removed = body(resend.Contacts.Segments.remove({"contact_id": contact["id"], "segment_id": a["id"]}))
        assert removed == {
            "object": "contact_segment",
            "id": a["id"],
            "contact_id": contact["id"],
            "segment_id": a["id"],
            "deleted": True,
        }
        removed = body(resend.Contacts.Segments.remove({"email": email, "segment_id": b["id"]}))
        assert removed["id"] == b["id"] and removed["deleted"] is True
        assert ids(resend.Contacts.Segments.list({"email": email})["data"]) == [c["id"]]
        assert resend.Contacts.list(segment_id=a["id"])["data"] == []

        # A deleted segment leaves its contacts' lists.
        resend.Segments.remove(c["id"])
        assert resend.Contacts.Segments.list({"contact_id": contact["id"]})["data"] == []

        fails(lambda: resend.Contacts.Segments.add({"contact_id": contact["id"], "segment_id": random_id()}), 404, "not_found")
        fails(lambda: resend.Contacts.Segments.add({"contact_id": random_id(), "segment_id": a["id"]}), 404, "not_found")
    # The trailing-slash form resend-rs asks for.
    slash = raw("GET", f"/contacts/{contact['id']}/segments/", key=key)
    assert slash.status_code == 200, slash.text
    assert slash.json() == {"object": "list", "has_more": False, "data": []}


def test_contact_topics_list_and_update():
    key = team_key("contact-topics")
    with using_key(key):
        weekly = resend.Topics.create({"name": "Weekly", "default_subscription": "opt_in", "description": "Every Monday"})
        offers = resend.Topics.create({"name": "Offers", "default_subscription": "opt_out"})
        email = unique_address("topics")
        contact = resend.Contacts.create({"email": email})

        def subscriptions(**where):
            listed = resend.Contacts.Topics.list(**where)
            assert listed["object"] == "list"
            assert listed["has_more"] is False
            return {t["id"]: t for t in listed["data"]}

        before = subscriptions(contact_id=contact["id"])
        assert sorted(before) == sorted([weekly["id"], offers["id"]])
        assert before[weekly["id"]]["name"] == "Weekly"
        assert before[weekly["id"]]["description"] == "Every Monday"
        assert before[weekly["id"]]["subscription"] == "opt_in", "the topic's default"
        assert before[offers["id"]]["description"] is None
        assert before[offers["id"]]["subscription"] == "opt_out", "the topic's default"

        choices = [{"id": weekly["id"], "subscription": "opt_out"}, {"id": offers["id"], "subscription": "opt_in"}]
        # The SDK sends the bare array.
        updated = resend.Contacts.Topics.update({"id": contact["id"], "topics": choices})
        assert sorted(body(updated)) == ["contact_id", "id", "object", "topics"]
        assert (updated["object"], updated["id"], updated["contact_id"]) == ("contact_topics", contact["id"], contact["id"])
        assert sorted(updated["topics"], key=lambda t: t["id"]) == sorted(choices, key=lambda t: t["id"])
        after = subscriptions(email=email)
        assert after[weekly["id"]]["subscription"] == "opt_out"
        assert after[offers["id"]]["subscription"] == "opt_in"

        resend.Contacts.Topics.update({"email": email, "topics": [{"id": weekly["id"], "subscription": "opt_in"}]})
        after = subscriptions(contact_id=contact["id"])
        assert after[weekly["id"]]["subscription"] == "opt_in"
        assert after[offers["id"]]["subscription"] == "opt_in", "a topic not sent is kept"

        unknown = [{"id": random_id(), "subscription": "opt_in"}]
        fails(lambda: resend.Contacts.Topics.update({"id": contact["id"], "topics": unknown}), 404, "not_found")
        bad = [{"id": weekly["id"], "subscription": "maybe"}]
        fails(lambda: resend.Contacts.Topics.update({"id": contact["id"], "topics": bad}), 422, "validation_error")
    wrapped = raw(
        "PATCH",
        f"/contacts/{contact['id']}/topics",
        key=key,
        json={"topics": [{"id": offers["id"], "subscription": "opt_out"}]},
    )
    assert wrapped.status_code == 200, wrapped.text
    assert wrapped.json()["object"] == "contact_topics"
    with using_key(key):
        assert subscriptions(contact_id=contact["id"])[offers["id"]]["subscription"] == "opt_out"


def test_topics_create_get_list_update_remove():
    key = team_key("topics")
    on_wire = raw("POST", "/topics", key=key, json={"name": "Wire", "default_subscription": "opt_out", "visibility": "public"})
    assert on_wire.status_code == 201, on_wire.text
    wire = on_wire.json()
    assert wire == {"object": "topic", "id": wire["id"]}
    with using_key(key):
        created = body(resend.Topics.create({"name": "Product", "default_subscription": "opt_in", "description": "Product news"}))
        assert created == {"object": "topic", "id": created["id"]}
        topic = body(resend.Topics.get(created["id"]))
        assert topic == {
            "object": "topic",
            "id": created["id"],
            "name": "Product",
            "description": "Product news",
            "default_subscription": "opt_in",
            "visibility": "private",
            "created_at": topic["created_at"],
        }
        assert TIMESTAMP_RE.match(topic["created_at"]), topic["created_at"]
        public = resend.Topics.get(wire["id"])
        assert (public["description"], public["visibility"], public["default_subscription"]) == (None, "public", "opt_out")

        listed = resend.Topics.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert ids(listed["data"]) == [created["id"], wire["id"]], "newest first"
        assert listed["data"][0] == {k: v for k, v in topic.items() if k != "object"}
        page = resend.Topics.list({"limit": 1})
        assert page["has_more"] is True
        assert ids(page["data"]) == [created["id"]]

        updated = body(resend.Topics.update(created["id"], {"name": "Products", "description": "All product news"}))
        assert updated == {"object": "topic", "id": created["id"]}
        resend.Topics.update(created["id"], {"visibility": "public"})
        after = resend.Topics.get(created["id"])
        assert (after["name"], after["description"], after["visibility"], after["default_subscription"]) == (
            "Products",
            "All product news",
            "public",
            "opt_in",
        )
        fails(lambda: resend.Topics.update(created["id"], {"default_subscription": "opt_out"}), 422, "validation_error")
        assert resend.Topics.get(created["id"])["default_subscription"] == "opt_in"

        removed = body(resend.Topics.remove(created["id"]))
        assert removed == {"object": "topic", "id": created["id"], "deleted": True}
        fails(lambda: resend.Topics.get(created["id"]), 404, "not_found")
        assert ids(resend.Topics.list()["data"]) == [wire["id"]]

        fails(lambda: resend.Topics.create({"name": "No default"}), 422, "missing_required_field", MissingRequiredFieldsError)
        fails(lambda: resend.Topics.create({"default_subscription": "opt_in"}), 422, "missing_required_field")
        fails(lambda: resend.Topics.create({"name": "Bad", "default_subscription": "sometimes"}), 422, "validation_error")
        fails(
            lambda: resend.Topics.create({"name": "Bad", "default_subscription": "opt_in", "visibility": "secret"}),
            422,
            "validation_error",
        )
        fails(lambda: resend.Topics.get(random_id()), 404, "not_found")
        fails(lambda: resend.Topics.get("not-a-topic"), 422, "invalid_parameter")


def test_contact_properties_create_get_list_update_remove():
    key = team_key("contact-properties")
    with using_key(key):
        company = body(resend.ContactProperties.create({"key": "company", "type": "string", "fallback_value": "Acme"}))
        assert company == {"object": "contact_property", "id": company["id"]}
        assert UUID_RE.match(company["id"])
        score = resend.ContactProperties.create({"key": "score", "type": "number", "fallback_value": 0})
        nickname = resend.ContactProperties.create({"key": "nickname", "type": "string"})

        got = body(resend.ContactProperties.get(company["id"]))
        assert got == {
            "object": "contact_property",
            "id": company["id"],
            "key": "company",
            "type": "string",
            "fallback_value": "Acme",
            "created_at": got["created_at"],
        }
        assert TIMESTAMP_RE.match(got["created_at"]), got["created_at"]
        scored = resend.ContactProperties.get(score["id"])
        assert (scored["type"], scored["fallback_value"]) == ("number", 0)
        assert resend.ContactProperties.get(nickname["id"])["fallback_value"] is None

        listed = resend.ContactProperties.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert [p["key"] for p in listed["data"]] == ["nickname", "score", "company"], "newest first"
        assert listed["data"][2] == {k: v for k, v in got.items() if k != "object"}
        page = resend.ContactProperties.list({"limit": 1, "after": nickname["id"]})
        assert page["has_more"] is True
        assert [p["key"] for p in page["data"]] == ["score"]

        # The SDK sends only fallback_value.
        updated = body(resend.ContactProperties.update({"id": company["id"], "fallback_value": "Initech"}))
        assert updated == {"object": "contact_property", "id": company["id"]}
        assert resend.ContactProperties.get(company["id"])["fallback_value"] == "Initech"
        resend.ContactProperties.update({"id": company["id"], "fallback_value": None})
        assert resend.ContactProperties.get(company["id"])["fallback_value"] is None
        fails(lambda: resend.ContactProperties.update({"id": score["id"], "fallback_value": "ten"}), 422, "validation_error")
    for target, patch in ((company["id"], {"key": "renamed"}), (company["id"], {"type": "number"})):
        raw_refusal(raw("PATCH", f"/contact-properties/{target}", key=key, json=patch), 422, "validation_error")

    with using_key(key):
        fails(lambda: resend.ContactProperties.create({"key": "company", "type": "string"}), 409, "conflict")
        for params in (
            {"key": "has space", "type": "string"},
            {"key": "k" * 51, "type": "string"},
            {"key": "count", "type": "number", "fallback_value": "ten"},
            {"key": "flag", "type": "boolean"},
        ):
            fails(lambda: resend.ContactProperties.create(params), 422, "validation_error")
        fails(lambda: resend.ContactProperties.create({"type": "string"}), 422, "missing_required_field")

        removed = body(resend.ContactProperties.remove(company["id"]))
        assert removed == {"object": "contact_property", "id": company["id"], "deleted": True}
        fails(lambda: resend.ContactProperties.get(company["id"]), 404, "not_found")
        fails(lambda: resend.ContactProperties.get(random_id()), 404, "not_found")
        fails(
            lambda: resend.Contacts.create({"email": unique_address("removed-key"), "properties": {"company": "Acme"}}),
            422,
            "validation_error",
        )


def test_import_with_default_columns_then_poll_and_list():
    key = team_key("imports")
    with using_key(key):
        existing_email = unique_address("import-existing")
        existing = resend.Contacts.create({"email": existing_email, "first_name": "Old"})
        a, b = unique_address("import-a"), unique_address("import-b")
        csv = csv_bytes(
            "email,first_name,last_name,unsubscribed",
            f"{a},Ann,Lee,false",
            "not-an-address,Bad,Row,false",
            f"{b},Bo,Ek,true",
            f"{existing_email},New,Name,false",
        )
        created = body(resend.Contacts.Imports.create({"file": csv, "filename": "contacts.csv"}))
        assert created == {"object": "contact_import", "id": created["id"]}
        assert UUID_RE.match(created["id"])

        done = completed_import(created["id"])
        assert (done["object"], done["id"]) == ("contact_import", created["id"])
        assert TIMESTAMP_RE.match(done["created_at"]), done["created_at"]
        assert TIMESTAMP_RE.match(done["completed_at"]), done["completed_at"]
        # on_conflict defaults to upsert: the existing address is updated.
        assert done["counts"] == {"total": 4, "created": 2, "updated": 1, "skipped": 0, "failed": 1}
        assert done["errors_total"] == 1
        assert len(done["errors"]) == 1
        assert sorted(done["errors"][0]) == ["line", "reason", "row"]
        assert done["errors"][0]["line"] == 3, "the bad row is the file's third line (the header is line 1)"
        assert done["errors"][0]["row"] == 2, "and its second row (the first after the header is row 1)"
        assert isinstance(done["errors"][0]["reason"], str) and done["errors"][0]["reason"]

        ann = resend.Contacts.get(email=a)
        assert (ann["first_name"], ann["last_name"], ann["unsubscribed"]) == ("Ann", "Lee", False)
        bo = resend.Contacts.get(email=b)
        assert (bo["first_name"], bo["unsubscribed"]) == ("Bo", True)
        again = resend.Contacts.get(email=existing_email)
        assert (again["id"], again["first_name"], again["last_name"]) == (existing["id"], "New", "Name")
        assert len(resend.Contacts.list()["data"]) == 3

        listed = resend.Contacts.Imports.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert listed["data"] == [
            {
                "id": created["id"],
                "status": "completed",
                "created_at": done["created_at"],
                "completed_at": done["completed_at"],
                "counts": done["counts"],
            }
        ]
        assert ids(resend.Contacts.Imports.list({"status": "completed"})["data"]) == [created["id"]]
        assert resend.Contacts.Imports.list({"status": "in_progress"})["data"] == []
        fails(lambda: resend.Contacts.Imports.get(random_id()), 404, "not_found")


def test_import_with_a_column_map_segments_topics_and_skip():
    key = team_key("imports-mapped")
    with using_key(key):
        segment = resend.Segments.create({"name": "Imported"})
        topic = resend.Topics.create({"name": "Digest", "default_subscription": "opt_out"})
        resend.ContactProperties.create({"key": "plan", "type": "string"})
        resend.ContactProperties.create({"key": "seats", "type": "number"})
        existing_email = unique_address("mapped-existing")
        existing = resend.Contacts.create({"email": existing_email, "first_name": "Old"})
        fresh = unique_address("mapped-new")

        created = resend.Contacts.Imports.create(
            {
                "file": csv_bytes("E-mail,Given,Plan,Seats", f"{fresh},Cy,pro,5", f"{existing_email},Changed,basic,1"),
                "column_map": {
                    "email": "E-mail",
                    "first_name": "Given",
                    "properties": {"plan": {"column": "Plan", "type": "string"}, "seats": {"column": "Seats", "type": "number"}},
                },
                "on_conflict": "skip",
                "segments": [{"id": segment["id"]}],
                "topics": [{"id": topic["id"], "subscription": "opt_in"}],
            }
        )
        done = completed_import(created["id"])
        assert done["counts"] == {"total": 2, "created": 1, "updated": 0, "skipped": 1, "failed": 0}
        assert done["errors"] == []
        assert done["errors_total"] == 0

        cy = resend.Contacts.get(email=fresh)
        assert cy["first_name"] == "Cy"
        assert cy["properties"] == {"plan": {"type": "string", "value": "pro"}, "seats": {"type": "number", "value": "5"}}
        assert ids(resend.Contacts.Segments.list({"contact_id": cy["id"]})["data"]) == [segment["id"]]
        topics = resend.Contacts.Topics.list(contact_id=cy["id"])["data"]
        assert [(t["id"], t["subscription"]) for t in topics] == [(topic["id"], "opt_in")]
        skipped = resend.Contacts.get(email=existing_email)
        assert (skipped["id"], skipped["first_name"], skipped["properties"]) == (existing["id"], "Old", {})

    # The upload without the SDK answers 201.
    response = requests.post(
        f"{BASE_URL}/contacts/imports",
        headers={"Authorization": f"Bearer {key}", "User-Agent": "herald-compat"},
        files={"file": ("contacts.csv", csv_bytes("email", unique_address("raw-import")), "text/csv")},
        data={"on_conflict": "upsert"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    assert response.json() == {"object": "contact_import", "id": response.json()["id"]}
    with using_key(key):
        assert completed_import(response.json()["id"])["counts"] == {
            "total": 1,
            "created": 1,
            "updated": 0,
            "skipped": 0,
            "failed": 0,
        }


def test_webhooks_take_the_contact_and_topic_events():
    with using_key(team_key("audience-webhooks")):
        endpoint = f"https://93.184.216.34/py-audience-{secrets.token_hex(5)}"
        events = ["contact.topics.updated", "topic.created", "topic.updated", "topic.deleted"]
        created = resend.Webhooks.create({"endpoint": endpoint, "events": events})
        assert UUID_RE.match(created["id"])
        assert resend.Webhooks.get(created["id"])["events"] == events
        resend.Webhooks.remove(created["id"])


def test_the_audience_belongs_to_one_team_and_sending_keys_are_refused():
    owner = team_key("audience-owner")
    with using_key(owner):
        segment = resend.Segments.create({"name": "Mine"})
        topic = resend.Topics.create({"name": "Mine", "default_subscription": "opt_in"})
        prop = resend.ContactProperties.create({"key": "mine", "type": "string"})
        contact = resend.Contacts.create({"email": unique_address("owned")})
        sending = resend.ApiKeys.create({"name": key_name("sending"), "permission": "sending_access"})
    with using_key(team_key("audience-other")):
        fails(lambda: resend.Segments.get(segment["id"]), 404, "not_found")
        fails(lambda: resend.Topics.get(topic["id"]), 404, "not_found")
        fails(lambda: resend.ContactProperties.get(prop["id"]), 404, "not_found")
        fails(
            lambda: resend.Contacts.Segments.add({"contact_id": contact["id"], "segment_id": segment["id"]}), 404, "not_found"
        )
        assert raw("GET", f"/audiences/{segment['id']}", key=resend.api_key).status_code == 404
        assert resend.Segments.list()["data"] == []
    with using_key(sending["token"]):
        for call in (
            resend.Segments.list,
            resend.Topics.list,
            resend.ContactProperties.list,
            resend.Contacts.Imports.list,
            lambda: resend.Segments.create({"name": "Nope"}),
            lambda: resend.Contacts.Segments.list({"contact_id": contact["id"]}),
            lambda: resend.Contacts.Topics.list(contact_id=contact["id"]),
        ):
            fails(call, 401, "restricted_api_key")
        assert raw("GET", "/audiences", key=sending["token"]).status_code == 401
