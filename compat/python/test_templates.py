"""Templates through the official Python SDK (PyPI `resend`): resend.Templates.create / get
(by id and by alias) / list / update / publish / duplicate / remove, and resend.Emails.send
and resend.Batch.send with `template` (variables, fallbacks, escaping, what the template
gives, version pinning), with the refusals and their exact errors. The SDK sends `{}` as
the body of its GET, DELETE, publish and duplicate requests, and `update` leaves the `id`
out of the body.

The template management tests run in teams of their own (made with the suite's operator
key), so that the lists show only their own templates. The send tests run in the
operator's team: only the operator's key may mark a domain verified without DNS, and only
for its own team's domains."""

import secrets

import pytest
import resend
from resend.exceptions import MissingRequiredFieldsError, ResendError, ValidationError

from conftest import (TIMESTAMP_RE, UUID_RE, assert_error, key_name, parse_timestamp, random_id, raw,
                      unique_domain, using_key, verify_without_dns)

RECIPIENT = "someone@recipient.test"

TEMPLATE_KEYS = [
    "alias",
    "created_at",
    "current_version_id",
    "from",
    "has_unpublished_versions",
    "html",
    "id",
    "name",
    "object",
    "published_at",
    "reply_to",
    "status",
    "subject",
    "text",
    "updated_at",
    "variables",
]
LIST_KEYS = ["alias", "created_at", "id", "name", "published_at", "status", "updated_at"]
VARIABLE_KEYS = ["created_at", "fallback_value", "id", "key", "type", "updated_at"]


@pytest.fixture(scope="module")
def domain():
    """The verified domain of the operator's team the send tests send from."""
    name = unique_domain("templates")
    created = resend.Domains.create({"name": name})
    verify_without_dns(created["id"])
    return name


def sender(domain):
    return f"Compat Sender <hello@{domain}>"


def unique_alias(label):
    return f"py-{label}-{secrets.token_hex(4)}"


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


def variables_of(template):
    return [(v["key"], v["type"], v["fallback_value"]) for v in template["variables"]]


def fails(call, code, name, exc_type=ResendError, message=None):
    """Runs `call`, which must raise the given Resend error (with `message`, if given)."""
    with pytest.raises(ResendError) as excinfo:
        call()
    error = assert_error(excinfo, code, name, exc_type)
    if message is not None:
        assert error.message == message, error.message
    return error


def escape_html(text):
    """What herald's HTML escaping makes of a value."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def published_template(label, **params):
    """A published template in the operator's team: its id, alias and published version."""
    alias = unique_alias(label)
    created = resend.Templates.create({"name": f"Py {label}", "alias": alias, **params})  # type: ignore[typeddict-item]
    assert body(resend.Templates.publish(created["id"])) == {"object": "template", "id": created["id"]}
    got = resend.Templates.get(created["id"])
    assert got["status"] == "published"
    return {"id": created["id"], "alias": alias, "version": got["current_version_id"]}


def listed_with_subject(wanted):
    return [e for e in resend.Emails.list({"limit": 100})["data"] if e["subject"] == wanted]


def test_templates_create_get_list_update_remove():
    key = team_key("templates")
    on_wire = raw("POST", "/templates", key=key, json={"name": "Wire", "html": "<p>wire</p>"})
    assert on_wire.status_code == 201, on_wire.text
    wire = on_wire.json()
    assert wire == {"object": "template", "id": wire["id"]}
    with using_key(key):
        alias = unique_alias("welcome")
        params: resend.Templates.CreateParams = {
            "name": "Welcome",
            "alias": alias,
            "from": "Acme <hello@acme.test>",
            "subject": "Welcome, {{{NAME}}}!",
            "reply_to": "support@acme.test",
            "html": "<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>",
            "text": "Hi {{{NAME}}}, {{{SEATS}}} seats",
            "variables": [
                {"key": "NAME", "type": "string", "fallback_value": "there"},
                {"key": "SEATS", "type": "number", "fallback_value": 1},
                {"key": "PLAN", "type": "string"},
            ],
        }
        created = body(resend.Templates.create(params))
        assert created == {"object": "template", "id": created["id"]}
        assert UUID_RE.match(created["id"])

        got = body(resend.Templates.get(created["id"]))
        assert sorted(got) == TEMPLATE_KEYS
        assert (got["object"], got["id"], got["name"], got["alias"]) == ("template", created["id"], "Welcome", alias)
        assert got["from"] == "Acme <hello@acme.test>"
        assert got["subject"] == "Welcome, {{{NAME}}}!"
        assert got["reply_to"] == ["support@acme.test"]
        assert got["html"] == "<p>Hi {{{NAME}}}, {{{SEATS}}} seats</p>"
        assert got["text"] == "Hi {{{NAME}}}, {{{SEATS}}} seats"
        assert (got["status"], got["published_at"], got["has_unpublished_versions"]) == ("draft", None, False)
        assert UUID_RE.match(got["current_version_id"])
        assert TIMESTAMP_RE.match(got["created_at"]), got["created_at"]
        assert got["updated_at"] == got["created_at"]
        assert variables_of(got) == [("NAME", "string", "there"), ("SEATS", "number", 1), ("PLAN", "string", None)]
        for variable in got["variables"]:
            assert sorted(variable) == VARIABLE_KEYS
            assert UUID_RE.match(variable["id"])
            assert TIMESTAMP_RE.match(variable["created_at"])
        assert body(resend.Templates.get(alias)) == got

        listed = resend.Templates.list()
        assert listed["object"] == "list"
        assert listed["has_more"] is False
        assert ids(listed["data"]) == [created["id"], wire["id"]], "newest first"
        assert sorted(listed["data"][0]) == LIST_KEYS
        assert listed["data"][0] == {
            "id": created["id"],
            "name": "Welcome",
            "status": "draft",
            "published_at": None,
            "created_at": got["created_at"],
            "updated_at": got["updated_at"],
            "alias": alias,
        }
        first = resend.Templates.list({"limit": 1})
        assert first["has_more"] is True
        assert ids(first["data"]) == [created["id"]]
        second = resend.Templates.list({"limit": 1, "after": created["id"]})
        assert second["has_more"] is False
        assert ids(second["data"]) == [wire["id"]]
        assert ids(resend.Templates.list({"limit": 1, "before": wire["id"]})["data"]) == [created["id"]]
        fails(lambda: resend.Templates.list({"limit": 101}), 422, "validation_error", ValidationError)

        # The SDK takes the id in the params and sends the rest.
        new_alias = unique_alias("renamed")
        updated = resend.Templates.update(
            {
                "id": created["id"],
                "name": "Welcome aboard",
                "alias": new_alias,
                "reply_to": ["a@acme.test", "b@acme.test"],
                "variables": [{"key": "NAME", "type": "string", "fallback_value": "friend"}],
            }
        )
        assert body(updated) == {"object": "template", "id": created["id"]}
        edited = resend.Templates.get(new_alias)
        assert (edited["name"], edited["alias"]) == ("Welcome aboard", new_alias)
        assert edited["reply_to"] == ["a@acme.test", "b@acme.test"]
        assert variables_of(edited) == [("NAME", "string", "friend")]
        assert edited["variables"][0]["id"] == got["variables"][0]["id"], "a kept key keeps its id"
        assert edited["html"] == got["html"]
        assert edited["current_version_id"] == got["current_version_id"], "a draft is edited in place"
        assert parse_timestamp(edited["updated_at"]) >= parse_timestamp(got["updated_at"])
        fails(lambda: resend.Templates.get(alias), 404, "not_found")

        removed = body(resend.Templates.remove(new_alias))
        assert removed == {"object": "template", "id": created["id"], "deleted": True}
        fails(lambda: resend.Templates.get(created["id"]), 404, "not_found")
        fails(lambda: resend.Templates.remove(created["id"]), 404, "not_found")
        assert ids(resend.Templates.list()["data"]) == [wire["id"]]
        fails(lambda: resend.Templates.get(random_id()), 404, "not_found")
        fails(lambda: resend.Templates.get("no-such-alias"), 404, "not_found")
        fails(lambda: resend.Templates.update({"id": random_id(), "name": "x"}), 404, "not_found")


def test_templates_publish_versions_and_duplicate():
    key = team_key("templates-versions")
    with using_key(key):
        alias = unique_alias("receipt")
        created = resend.Templates.create({"name": "Receipt", "alias": alias, "subject": "Receipt", "html": "<p>v1</p>"})
        published = body(resend.Templates.publish(alias))
        assert published == {"object": "template", "id": created["id"]}
        v1 = resend.Templates.get(created["id"])
        assert (v1["status"], v1["has_unpublished_versions"]) == ("published", False)
        assert TIMESTAMP_RE.match(v1["published_at"]), v1["published_at"]
        assert resend.Templates.list()["data"][0]["published_at"] == v1["published_at"]

        resend.Templates.update({"id": alias, "html": "<p>v2</p>"})
        drafted = resend.Templates.get(alias)
        assert (drafted["status"], drafted["has_unpublished_versions"]) == ("published", True)
        assert drafted["current_version_id"] != v1["current_version_id"]
        assert drafted["html"] == "<p>v2</p>"
        assert drafted["published_at"] == v1["published_at"]
        resend.Templates.update({"id": created["id"], "text": "v2 text"})
        assert resend.Templates.get(created["id"])["current_version_id"] == drafted["current_version_id"]

        assert body(resend.Templates.publish(created["id"])) == {"object": "template", "id": created["id"]}
        v2 = body(resend.Templates.get(created["id"]))
        assert (v2["status"], v2["has_unpublished_versions"]) == ("published", False)
        assert v2["current_version_id"] == drafted["current_version_id"]
        assert (v2["html"], v2["text"]) == ("<p>v2</p>", "v2 text")
        assert parse_timestamp(v2["published_at"]) >= parse_timestamp(v1["published_at"])
        # Nothing new to publish: nothing changes.
        resend.Templates.publish(created["id"])
        assert body(resend.Templates.get(created["id"])) == v2

        copy = body(resend.Templates.duplicate(alias))
        assert copy == {"object": "template", "id": copy["id"]}
        assert UUID_RE.match(copy["id"]) and copy["id"] != created["id"]
        duplicate = resend.Templates.get(copy["id"])
        assert duplicate["name"] == "Receipt (copy)"
        assert (duplicate["alias"], duplicate["status"], duplicate["published_at"]) == (None, "draft", None)
        assert (duplicate["html"], duplicate["subject"], duplicate["text"]) == ("<p>v2</p>", "Receipt", "v2 text")
        assert duplicate["current_version_id"] != v2["current_version_id"]
        assert ids(resend.Templates.list()["data"]) == [copy["id"], created["id"]]

        fails(lambda: resend.Templates.publish(random_id()), 404, "not_found")
        fails(lambda: resend.Templates.duplicate("no-such-alias"), 404, "not_found")


def test_refused_templates():
    with using_key(team_key("templates-refused")):
        fails(
            lambda: resend.Templates.create({"html": "<p>x</p>"}),  # type: ignore[typeddict-item]
            422,
            "missing_required_field",
            MissingRequiredFieldsError,
            "Missing `name` field.",
        )
        fails(
            lambda: resend.Templates.create({"name": "No html"}),  # type: ignore[typeddict-item]
            422,
            "missing_required_field",
            MissingRequiredFieldsError,
            "Missing `html` field.",
        )
        fails(
            lambda: resend.Templates.create({"name": "Unclosed", "html": "<p>\n  Hi {{{NAME</p>"}),
            422,
            "validation_error",
            ValidationError,
            "Invalid `html` field: `{{{` is never closed by `}}}` at line 2, column 6",
        )
        for reserved in ("FIRST_NAME", "LAST_NAME", "EMAIL", "UNSUBSCRIBE_URL", "RESEND_UNSUBSCRIBE_URL", "contact", "this"):
            fails(
                lambda: resend.Templates.create(
                    {"name": "Reserved", "html": "<p>x</p>", "variables": [{"key": reserved, "type": "string"}]}
                ),
                422,
                "validation_error",
                ValidationError,
                f"Invalid `variables[0].key` field: {reserved} is reserved; herald fills it in",
            )
        many = [{"key": f"VAR_{i}", "type": "string"} for i in range(51)]
        fails(
            lambda: resend.Templates.create({"name": "Too many", "html": "<p>x</p>", "variables": many}),  # type: ignore[typeddict-item]
            422,
            "validation_error",
            ValidationError,
            "Invalid `variables` field: at most 50 variables, got 51",
        )
        error = fails(
            lambda: resend.Templates.create(
                {"name": "Typed", "html": "<p>x</p>", "variables": [{"key": "SEATS", "type": "number", "fallback_value": "many"}]}
            ),
            422,
            "validation_error",
            ValidationError,
        )
        assert error.message.startswith("Invalid `variables[0].fallback_value` field: the variable is a number"), error.message

        alias = unique_alias("taken")
        resend.Templates.create({"name": "Owner", "alias": alias, "html": "<p>x</p>"})
        fails(
            lambda: resend.Templates.create({"name": "Same", "alias": alias.upper(), "html": "<p>x</p>"}),
            409,
            "conflict",
            message=f"A template with the alias {alias.upper()} already exists",
        )
        assert [t["name"] for t in resend.Templates.list()["data"]] == ["Owner"], "nothing refused was created"


def test_send_with_a_template(domain):
    template = published_template(
        "receipt",
        **{
            "from": f"{{{{{{SHOP}}}}}} <shop@{domain}>",
            "subject": "Receipt for {{{NAME}}}",
            "reply_to": [f"support@{domain}"],
            "html": '<p title="{{{NAME}}}">Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.</p>',
            "text": "Hi {{{NAME}}}, you paid {{{PRICE}}} for {{{PRODUCT|your order}}} in {{{CITY}}}.",
            "variables": [
                {"key": "SHOP", "type": "string", "fallback_value": "Compat Shop"},
                {"key": "NAME", "type": "string"},
                {"key": "PRICE", "type": "number"},
                {"key": "CITY", "type": "string", "fallback_value": "Paris"},
            ],
        },
    )
    assert resend.Templates.get(template["id"])["from"] == f"{{{{{{SHOP}}}}}} <shop@{domain}>"
    name = "<b>\"Ann\" & 'Co'</b>"
    sent = resend.Emails.send(
        {"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": name, "PRICE": 499}}}  # type: ignore[typeddict-item]
    )
    assert UUID_RE.match(sent["id"])
    got = resend.Emails.get(sent["id"])
    assert got["from"] == f"Compat Shop <shop@{domain}>"
    assert got["to"] == [RECIPIENT]
    assert got["subject"] == f"Receipt for {name}"
    assert got["reply_to"] == [f"support@{domain}"]
    assert got["html"] == f'<p title="{escape_html(name)}">Hi {escape_html(name)}, you paid 499 for your order in Paris.</p>'
    assert got["text"] == f"Hi {name}, you paid 499 for your order in Paris."
    assert got["template"] == {"id": template["id"], "version_id": template["version"]}
    assert got["last_event"] == "sent"

    # By alias; the send's own from and subject win, and an empty subject counts as absent.
    own = resend.Emails.send(
        {
            "from": sender(domain),
            "to": RECIPIENT,
            "subject": "",
            "template": {"id": template["alias"], "variables": {"NAME": "Bo", "PRICE": 2.5, "CITY": "Oslo", "PRODUCT": "tea"}},
        }
    )
    own_got = resend.Emails.get(own["id"])
    assert own_got["from"] == sender(domain)
    assert own_got["subject"] == "Receipt for Bo"
    assert own_got["html"] == '<p title="Bo">Hi Bo, you paid 2.5 for tea in Oslo.</p>'

    # The published version keeps sending until the draft is published.
    resend.Templates.update({"id": template["id"], "html": "<p>v2 {{{NAME}}}</p>"})
    draft_version = resend.Templates.get(template["id"])["current_version_id"]
    pinned = resend.Emails.send({"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": "Cy", "PRICE": 1}}})  # type: ignore[typeddict-item]
    pinned_got = resend.Emails.get(pinned["id"])
    assert pinned_got["html"] == '<p title="Cy">Hi Cy, you paid 1 for your order in Paris.</p>'
    assert pinned_got["template"] == {"id": template["id"], "version_id": template["version"]}
    resend.Templates.publish(template["alias"])
    fresh = resend.Emails.send({"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": "Di", "PRICE": 1}}})  # type: ignore[typeddict-item]
    fresh_got = resend.Emails.get(fresh["id"])
    assert fresh_got["html"] == "<p>v2 Di</p>"
    assert fresh_got["template"] == {"id": template["id"], "version_id": draft_version}


def test_batch_send_with_templates(domain):
    template = published_template(
        "batch",
        **{
            "from": sender(domain),
            "subject": "Batch {{{NAME}}}",
            "html": "<p>Hi {{{NAME}}}</p>",
            "variables": [{"key": "NAME", "type": "string"}],
        },
    )
    names = [f"Ann {secrets.token_hex(3)}", f"Bo {secrets.token_hex(3)}"]
    result = resend.Batch.send(
        [
            {"to": "ann@recipient.test", "template": {"id": template["id"], "variables": {"NAME": names[0]}}},  # type: ignore[typeddict-item]
            {"to": "bo@recipient.test", "template": {"id": template["alias"], "variables": {"NAME": names[1]}}},  # type: ignore[typeddict-item]
        ]
    )
    assert len(result["data"]) == 2
    for item, name in zip(result["data"], names):
        got = resend.Emails.get(item["id"])
        assert (got["subject"], got["html"]) == (f"Batch {name}", f"<p>Hi {name}</p>")
        assert got["template"] == {"id": template["id"], "version_id": template["version"]}

    strict_name = f"Strict {secrets.token_hex(3)}"
    with pytest.raises(ResendError) as excinfo:
        resend.Batch.send(
            [
                {"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": strict_name}}},  # type: ignore[typeddict-item]
                {"to": RECIPIENT, "template": {"id": template["id"]}},  # type: ignore[typeddict-item]
            ]
        )
    error = assert_error(excinfo, 422, "validation_error", ValidationError)
    assert error.message.startswith("emails[1]: Missing template variable `NAME`"), error.message
    assert listed_with_subject(f"Batch {strict_name}") == []

    permissive = resend.Batch.send(
        [
            {"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": "Eve"}}},  # type: ignore[typeddict-item]
            {"to": RECIPIENT, "template": {"id": random_id()}},  # type: ignore[typeddict-item]
        ],
        {"batch_validation": "permissive"},
    )
    assert len(permissive["data"]) == 1
    assert permissive["errors"] == [{"index": 1, "message": "Template not found"}]


def test_refused_template_sends(domain):
    template = published_template(
        "refusals",
        **{
            "from": sender(domain),
            "subject": "Hello {{{NAME}}}",
            "html": "<p>Hello {{{NAME}}}</p>",
            "variables": [{"key": "NAME", "type": "string"}, {"key": "SEATS", "type": "number", "fallback_value": 1}],
        },
    )

    def send(**extra):
        params = {"to": RECIPIENT, "template": {"id": template["id"], "variables": {"NAME": "Ann"}}, **extra}
        return lambda: resend.Emails.send(params)  # type: ignore[arg-type]

    for extra in ({"html": "<p>mine</p>"}, {"text": "mine"}):
        error = fails(send(**extra), 422, "validation_error", ValidationError)
        assert "cannot be sent with `template`" in error.message, error.message
    error = fails(send(template={"id": template["id"]}), 422, "validation_error", ValidationError)
    assert error.message.startswith("Missing template variable `NAME`"), error.message
    fails(
        send(template={"id": template["id"], "variables": {"NAME": "Ann", "SEATS": "many"}}),
        422,
        "validation_error",
        ValidationError,
        "Invalid `template.variables.SEATS` field: the template declares it a number",
    )
    fails(
        send(template={"id": template["id"], "variables": {"NAME": "Ann\r\nBcc: victim@recipient.test"}}),
        422,
        "validation_error",
        ValidationError,
        "Invalid `subject` field: must not contain CR, LF or NUL",
    )
    fails(send(template={"id": random_id()}), 404, "not_found", message="Template not found")
    fails(send(template={"id": "no-such-alias"}), 404, "not_found", message="Template not found")
    fails(
        send(template={"variables": {"NAME": "Ann"}}),
        422,
        "missing_required_field",
        MissingRequiredFieldsError,
        "Missing `template.id` field.",
    )
    draft = resend.Templates.create({"name": "Py draft", "from": sender(domain), "subject": "Draft", "html": "<p>d</p>"})
    error = fails(send(template={"id": draft["id"]}), 422, "validation_error", ValidationError)
    assert "not published" in error.message, error.message

    # A sending key may send with a template, not manage templates.
    api_key = resend.ApiKeys.create({"name": key_name("templates-sending"), "permission": "sending_access"})
    with using_key(api_key["token"]):
        sent = resend.Emails.send({"to": RECIPIENT, "template": {"id": template["alias"], "variables": {"NAME": "Key"}}})  # type: ignore[typeddict-item]
        fails(lambda: resend.Templates.list(), 401, "restricted_api_key")
        fails(lambda: resend.Templates.get(template["id"]), 401, "restricted_api_key")
    assert resend.Emails.get(sent["id"])["html"] == "<p>Hello Key</p>"
    resend.ApiKeys.remove(api_key["id"])
