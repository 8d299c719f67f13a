"""Topics and unsubscribing through the official Python SDK (PyPI `resend`): `topic_id` in
resend.Emails.send and resend.Batch.send, shown again by resend.Emails.get; an unknown
topic or another team's refused; recipients who opted out of the topic
(resend.Contacts.Topics.update) or unsubscribed left out, and a send left with nobody
refused. Then the link, read from the message the delivering herald hands the suite's SMTP
sink (HERALD_DELIVERING_URL, HERALD_SINK_DIR; skipped without them) and parsed with the
standard library's `email`: `List-Unsubscribe` (no `List-Unsubscribe-Post` on an http
public_url), a GET that shows a page and changes nothing, RFC 8058's one-click POST (out of
the topic, or unsubscribed from everything for a `{{{RESEND_UNSUBSCRIBE_URL}}}` email), and
a forged token's 404. Sends run in the operator's team, the only one whose domains the
suite can verify without DNS; every topic and address is the test's own."""

import email
import email.policy
import glob
import json
import os
import re
import secrets
import time
import urllib.error
import urllib.request

import pytest
import resend
from resend.exceptions import ResendError

from conftest import API_KEY, assert_error, key_name, random_id, raw, unique_domain, using_key, verify_without_dns

DELIVERING = os.environ.get("HERALD_DELIVERING_URL", "")
SINK = os.environ.get("HERALD_SINK_DIR", "")
WAIT_S = 30
needs_sink = pytest.mark.skipif(
    not (DELIVERING and SINK), reason="needs HERALD_DELIVERING_URL and HERALD_SINK_DIR (the delivering herald)"
)


def address(label):
    """An address no other test uses (lower case: a local part is compared as written)."""
    return f"py-unsub-{label}-{secrets.token_hex(5)}@inbox.test"


def fetch(method, url, data=None, headers=None):
    """A raw request with urllib: (status, headers, body); an HTTP error is an answer too."""
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def one_click(url):
    """RFC 8058's one-click POST."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    return fetch("POST", url, b"List-Unsubscribe=One-Click", form)


def sender(base=None):
    """A domain of the operator's team verified without DNS (on `base` when given), and a
    `from` on it."""
    name = unique_domain("unsub")
    domain_id = resend.Domains.create({"name": name})["id"]
    if base is None:
        verify_without_dns(domain_id)
    else:
        status, _, text = fetch(
            "POST",
            f"{base}/domains/{domain_id}/verify",
            json.dumps({"skip_dns": True}).encode(),
            {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        )
        assert status == 200, text
    return f"News <news@{name}>"


def topic(default_subscription):
    return resend.Topics.create({"name": f"Unsub {secrets.token_hex(5)}", "default_subscription": default_subscription})["id"]


def subscription(contact, topic_id):
    """The contact's subscription to `topic_id`, as resend.Contacts.Topics.list shows it."""
    listed = resend.Contacts.Topics.list(email=contact)
    assert listed["object"] == "list"
    found = [t for t in listed["data"] if t["id"] == topic_id]
    assert len(found) == 1, listed["data"]
    return found[0]["subscription"]


def refused(params, pattern):
    """Sends `params`, which must be refused with 422 validation_error matching `pattern`."""
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.send(params)
    error = assert_error(excinfo, 422, "validation_error")
    assert re.search(pattern, error.message), error.message


def delivered(recipient):
    """The message the sink received for `recipient`, parsed, once it has arrived."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for path in glob.glob(os.path.join(SINK, "*.json")):
            with open(path) as f:
                envelope = json.load(f)
            if recipient in envelope["rcpt_to"]:
                with open(path[: -len(".json")] + ".eml", "rb") as f:
                    return email.message_from_bytes(f.read(), policy=email.policy.default)
        time.sleep(0.1)
    raise AssertionError(f"nothing reached the sink for {recipient} within {WAIT_S} s")


def unsubscribe_url(message):
    """The URL in a delivered message's `List-Unsubscribe`, the delivering herald's."""
    found = message.get_all("List-Unsubscribe") or []
    assert len(found) == 1, message.items()
    assert message.get_all("List-Unsubscribe-Post") is None, "no one-click header on an http public_url"
    match = re.fullmatch(r"<([^<>\s]+)>", str(found[0]).strip())
    assert match, found[0]
    assert match.group(1).startswith(f"{DELIVERING}/unsubscribe/"), match.group(1)
    return match.group(1)


def page_and_forgery(url):
    """A GET of the link: a page, no change; the forged link (an `x` more) a 404 either way."""
    status, headers, page = fetch("GET", url)
    assert status == 200, page
    assert headers["Content-Type"].startswith("text/html"), headers["Content-Type"]
    assert re.search(rb'<form[^>]*method="post"', page), page
    assert fetch("GET", url + "x")[0] == 404
    assert one_click(url + "x")[0] == 404


def test_topic_id_on_send_and_batch_shown_by_get_unknown_topics_refused():
    source = sender()
    topic_id = topic("opt_in")

    def params(**extra):
        return {"from": source, "to": address("to"), "subject": "Topic", "html": "<p>News</p>", **extra}

    sent = resend.Emails.send(params(topic_id=topic_id))
    assert resend.Emails.get(sent["id"])["topic_id"] == topic_id
    plain = resend.Emails.send(params())
    assert resend.Emails.get(plain["id"]).get("topic_id") is None

    batch = resend.Batch.send([params(topic_id=topic_id), params(topic_id=topic_id)])
    assert len(batch["data"]) == 2
    for item in batch["data"]:
        assert resend.Emails.get(item["id"])["topic_id"] == topic_id

    # Another team's topic is no topic of this one.
    team = raw("POST", "/teams", json={"name": key_name("unsub")})
    assert team.status_code == 201, team.text
    with using_key(team.json()["api_key"]["token"]):
        foreign = topic("opt_in")
    for wrong in (random_id(), "not-a-topic", foreign):
        refused(params(topic_id=wrong), "topic_id")


def test_opted_out_and_unsubscribed_recipients_left_out_nobody_left_is_422():
    source = sender()
    topic_id = topic("opt_in")

    def params(to, tid=topic_id):
        return {"from": source, "to": to, "subject": "Topic", "text": "News", "topic_id": tid}

    out = address("out")
    out_id = resend.Contacts.create({"email": out})["id"]
    resend.Contacts.Topics.update({"id": out_id, "topics": [{"id": topic_id, "subscription": "opt_out"}]})
    assert subscription(out, topic_id) == "opt_out"
    refused(params(out), "opted out")
    gone = address("gone")
    resend.Contacts.create({"email": gone, "unsubscribed": True})
    refused(params([gone]), "opted out")

    # A mix: the opted-out and the unsubscribed are dropped, a contact on the topic's default
    # and an address that is no contact (the topic is opt-in by default) receive it.
    reader = address("reader")
    resend.Contacts.create({"email": reader})
    stranger = address("stranger")
    mixed = resend.Emails.send(params([out, reader, gone, stranger]))
    got = resend.Emails.get(mixed["id"])
    assert got["to"] == [reader, stranger]
    assert got["topic_id"] == topic_id

    # An opt-out topic reaches only the contacts who opted in.
    opt_out = topic("opt_out")
    refused(params(stranger, opt_out), "opted out")
    refused(params(reader, opt_out), "opted out")
    resend.Contacts.Topics.update({"email": reader, "topics": [{"id": opt_out, "subscription": "opt_in"}]})
    chosen = resend.Emails.send(params([stranger, reader], opt_out))
    assert resend.Emails.get(chosen["id"])["to"] == [reader]


@needs_sink
def test_topic_email_list_unsubscribe_get_shows_page_one_click_opts_out():
    resend.api_url = DELIVERING  # the sdk_config fixture puts it back
    source = sender(DELIVERING)
    topic_id = topic("opt_in")
    reader = address("topic-link")
    resend.Contacts.create({"email": reader})
    sent = resend.Emails.send({"from": source, "to": reader, "subject": "Weekly", "html": "<p>News</p>", "topic_id": topic_id})
    assert resend.Emails.get(sent["id"])["topic_id"] == topic_id

    url = unsubscribe_url(delivered(reader))
    page_and_forgery(url)
    assert subscription(reader, topic_id) == "opt_in", "a GET changes nothing"

    status, _, body = one_click(url)
    assert (status, body) == (200, b"")
    assert subscription(reader, topic_id) == "opt_out"
    assert resend.Contacts.get(email=reader)["unsubscribed"] is False, "out of the topic only"
    refused({"from": source, "to": reader, "subject": "Weekly", "text": "Again", "topic_id": topic_id}, "opted out")


@needs_sink
def test_unsubscribe_merge_tag_without_topic_links_header_url_one_click_unsubscribes():
    resend.api_url = DELIVERING  # the sdk_config fixture puts it back
    source = sender(DELIVERING)
    html = '<p>Hello</p><p><a href="{{{RESEND_UNSUBSCRIBE_URL}}}">Unsubscribe</a></p>'
    contact = address("marker")
    resend.Contacts.create({"email": contact})
    stranger = address("marker-new")

    for to in (contact, stranger):
        sent = resend.Emails.send({"from": source, "to": to, "subject": "Hello", "html": html})
        record = resend.Emails.get(sent["id"])
        assert record.get("topic_id") is None
        assert "{{{RESEND_UNSUBSCRIBE_URL}}}" in record["html"], "the record keeps the email as given"

        message = delivered(to)
        url = unsubscribe_url(message)
        body = message.get_body(preferencelist=("html",)).get_content()
        assert [h.replace("&amp;", "&") for h in re.findall(r'href="([^"]*)"', body)] == [url]
        assert "RESEND_UNSUBSCRIBE_URL" not in body

        page_and_forgery(url)
        if to == contact:
            assert resend.Contacts.get(email=to)["unsubscribed"] is False, "a GET changes nothing"
        else:
            with pytest.raises(ResendError) as excinfo:
                resend.Contacts.get(email=to)
            assert_error(excinfo, 404, "not_found")

        status, _, answer = one_click(url)
        assert (status, answer) == (200, b"")
        # The contact is unsubscribed; an address that was no contact becomes one, unsubscribed.
        assert resend.Contacts.get(email=to)["unsubscribed"] is True
