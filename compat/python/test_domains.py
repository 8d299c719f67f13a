"""Domains through the official Python SDK (PyPI `resend`): resend.Domains.create / list /
get / update / verify / remove, which return dicts and raise resend.exceptions.* on errors."""

import pytest
import resend
from resend.exceptions import ResendError

from conftest import TIMESTAMP_RE, UUID_RE, assert_error, raw, unique_domain

# `tracking_subdomain` is there only when the domain has one (the SDK's `NotRequired[str]`).
LIST_ITEM_FIELDS = {"capabilities", "click_tracking", "created_at", "id", "name", "open_tracking", "region", "status"}
CAPABILITIES = {"sending": "enabled", "receiving": "disabled"}


def assert_records(domain, return_path, status="not_started"):
    """The records herald asks the owner to publish on `domain`, for return-path label
    `return_path`: only the record kinds the SDKs know in `records` (the Rust and .NET
    SDKs decode them strictly), and the recommended DMARC record in `dmarc`."""
    records = domain["records"]
    assert isinstance(records, list) and len(records) == 3, records
    for r in records:
        assert r["ttl"] == "Auto"
        assert r["status"] == status

    dkim = [r for r in records if r["record"] == "DKIM"]
    assert len(dkim) == 1
    assert dkim[0]["type"] == "TXT"
    assert dkim[0]["name"] == "herald._domainkey"
    assert dkim[0]["value"].startswith("v=DKIM1; k=rsa; p="), dkim[0]["value"]
    assert len(dkim[0]["value"]) > len("v=DKIM1; k=rsa; p=") + 200, "an RSA public key"

    mx = [r for r in records if r["record"] == "SPF" and r["type"] == "MX"]
    assert len(mx) == 1
    assert mx[0]["name"] == return_path
    assert mx[0]["value"] == "mail.herald.test"
    assert mx[0]["priority"] == 10

    spf = [r for r in records if r["record"] == "SPF" and r["type"] == "TXT"]
    assert len(spf) == 1
    assert spf[0]["name"] == return_path
    assert spf[0]["value"] == "v=spf1 a:mail.herald.test ~all"

    assert not [r for r in records if r["name"] == "_dmarc"], records
    dmarc = domain["dmarc"]
    assert dmarc["name"] == "_dmarc"
    assert dmarc["type"] == "TXT"
    assert dmarc["recommended"] is True
    assert dmarc["value"].startswith("v=DMARC1;")


def create(label, **options):
    name = unique_domain(label)
    params: resend.Domains.CreateParams = {"name": name, **options}
    return name, resend.Domains.create(params)


def test_create_returns_the_domain_with_its_records():
    name, domain = create("create")
    assert UUID_RE.match(domain["id"])
    assert domain["object"] == "domain"
    assert domain["name"] == name
    assert domain["status"] == "not_started"
    assert TIMESTAMP_RE.match(domain["created_at"]), domain["created_at"]
    assert domain["region"] == "us-east-1"
    assert domain["open_tracking"] is False
    assert domain["click_tracking"] is False
    assert domain["capabilities"] == CAPABILITIES
    assert_records(domain, "send")
    # Attribute access works as on any SDK response.
    assert domain.id == domain["id"]


def test_create_passes_options_through():
    _, domain = create(
        "options",
        region="sa-east-1",
        custom_return_path="bounces",
        open_tracking=True,
        click_tracking=True,
        tls="enforced",
    )
    assert domain["region"] == "sa-east-1"
    assert domain["open_tracking"] is True
    assert domain["click_tracking"] is True
    assert_records(domain, "bounces")
    got = resend.Domains.get(domain["id"])
    assert got["tls"] == "enforced"
    assert got["custom_return_path"] == "bounces"


def test_create_answers_201_on_the_wire():
    name = unique_domain("status")
    response = raw("POST", "/domains", json={"name": name})
    assert response.status_code == 201
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["name"] == name
    resend.Domains.remove(response.json()["id"])


def test_get_returns_the_full_domain():
    name, created = create("get")
    domain = resend.Domains.get(created["id"])
    assert domain["object"] == "domain"
    assert domain["id"] == created["id"]
    assert domain["name"] == name
    assert domain["status"] == "not_started"
    assert domain["created_at"] == created["created_at"]
    assert domain["region"] == "us-east-1"
    assert domain["open_tracking"] is False
    assert domain["click_tracking"] is False
    assert domain["capabilities"] == CAPABILITIES
    assert_records(domain, "send")
    assert domain["records"] == created["records"]


def test_list_returns_the_envelope_newest_first():
    _, first = create("list-a")
    second_name, second = create("list-b")
    listed = resend.Domains.list()
    assert listed["object"] == "list"
    assert listed["has_more"] is False
    ids = [d["id"] for d in listed["data"]]
    assert first["id"] in ids and second["id"] in ids
    assert ids.index(second["id"]) < ids.index(first["id"]), "the newer domain comes first"
    item = listed["data"][ids.index(second["id"])]
    assert LIST_ITEM_FIELDS <= set(item), sorted(item)
    assert "tracking_subdomain" not in item, "no tracking_subdomain without one"
    assert item["name"] == second_name
    assert item["status"] == "not_started"
    assert item["created_at"] == second["created_at"]
    assert item["region"] == "us-east-1"
    assert item["open_tracking"] is False
    assert item["click_tracking"] is False
    assert item["capabilities"] == CAPABILITIES
    assert "records" not in item


def test_list_paginates_with_limit_and_after():
    created = [create(label)[1]["id"] for label in ("page-1", "page-2", "page-3")]
    page = resend.Domains.list({"limit": 2})
    assert page["object"] == "list"
    assert len(page["data"]) == 2
    assert page["has_more"] is True

    seen = [d["id"] for d in page["data"]]
    last = page
    for _ in range(1000):
        if not last["has_more"]:
            break
        after = last["data"][-1]["id"]
        last = resend.Domains.list({"limit": 2, "after": after})
        assert len(last["data"]) <= 2
        assert after not in [d["id"] for d in last["data"]]
        seen.extend(d["id"] for d in last["data"])
    else:
        pytest.fail("pagination does not terminate")
    assert len(set(seen)) == len(seen), "no domain appears twice"
    positions = [seen.index(i) for i in created]
    assert positions[2] < positions[1] < positions[0], "newest first across pages"

    nxt = resend.Domains.list({"limit": 2, "after": created[2]})
    assert len(nxt["data"]) == 2
    order = [seen.index(d["id"]) for d in nxt["data"]]
    assert all(p > positions[2] for p in order), "only domains older than the cursor"
    assert order[0] < order[1]
    assert order[0] <= positions[1], "continues right after the cursor"


def test_update_changes_tracking_and_tls():
    _, created = create("update")
    params: resend.Domains.UpdateParams = {
        "id": created["id"],
        "open_tracking": True,
        "click_tracking": True,
        "tls": "enforced",
    }
    updated = resend.Domains.update(params)
    assert updated["object"] == "domain"
    assert updated["id"] == created["id"]
    got = resend.Domains.get(created["id"])
    assert got["open_tracking"] is True
    assert got["click_tracking"] is True
    assert got["tls"] == "enforced"

    resend.Domains.update({"id": created["id"], "click_tracking": False})
    again = resend.Domains.get(created["id"])
    assert again["open_tracking"] is True
    assert again["click_tracking"] is False
    assert again["tls"] == "enforced"


def test_verify_starts_verification():
    _, created = create("verify")
    verified = resend.Domains.verify(created["id"])
    assert verified["object"] == "domain"
    assert verified["id"] == created["id"]
    got = resend.Domains.get(created["id"])
    assert isinstance(got["status"], str)
    assert got["status"] != "not_started"


def test_remove_deletes_the_domain():
    name, created = create("remove")
    removed = resend.Domains.remove(created["id"])
    assert removed["object"] == "domain"
    assert removed["id"] == created["id"]
    assert removed["deleted"] is True
    with pytest.raises(ResendError) as excinfo:
        resend.Domains.get(created["id"])
    assert_error(excinfo, 404, "not_found")
    with pytest.raises(ResendError) as excinfo:
        resend.Domains.remove(created["id"])
    assert_error(excinfo, 404, "not_found")
    assert created["id"] not in [d["id"] for d in resend.Domains.list()["data"]]
    again = resend.Domains.create({"name": name})
    assert again["id"] != created["id"]
