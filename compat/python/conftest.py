"""Shared by the Python SDK tests. The SDK reads RESEND_API_URL and RESEND_API_KEY from the
environment at import time (scripts/compat sets them); raw requests use the same values."""

import os
import re
import secrets
import uuid
from contextlib import contextmanager
from datetime import datetime

import pytest
import requests
import resend

BASE_URL = os.environ.get("RESEND_API_URL", "")
API_KEY = os.environ.get("RESEND_API_KEY", "")

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# Resend's resource timestamps: `2023-04-03 22:13:42.674981+00`.
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00$")


def pytest_configure(config):
    if not BASE_URL or not API_KEY:
        raise pytest.UsageError("RESEND_API_URL and RESEND_API_KEY must be set (run scripts/compat)")


@pytest.fixture(autouse=True)
def sdk_config():
    """Every test starts with the SDK configured from the environment, and whatever a test
    changes in the module globals is put back."""
    assert resend.api_url == BASE_URL, "the SDK took its base URL from RESEND_API_URL"
    assert resend.api_key == API_KEY, "the SDK took its key from RESEND_API_KEY"
    yield
    resend.api_url = BASE_URL
    resend.api_key = API_KEY


@contextmanager
def using_key(key):
    """Runs SDK calls with another API key (the Python SDK's key is a module global)."""
    previous = resend.api_key
    resend.api_key = key
    try:
        yield
    finally:
        resend.api_key = previous


def unique_domain(label):
    """A domain name no other test (Python or Node) uses."""
    return f"py-{label}-{secrets.token_hex(5)}.compat.herald.test"


def key_name(label):
    return f"py-{label}-{secrets.token_hex(4)}"


def random_id():
    return str(uuid.uuid4())


def raw(method, path, key=API_KEY, json=None):
    """A raw request to herald, bypassing the SDK."""
    headers = {"User-Agent": "herald-compat"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return requests.request(method, f"{BASE_URL}{path}", headers=headers, json=json, timeout=30)


def assert_error(excinfo, code, name, exc_type=resend.exceptions.ResendError):
    """Checks a raised SDK error: its class, HTTP status, Resend error name and message."""
    error = excinfo.value
    assert isinstance(error, exc_type), f"{type(error).__name__} is not a {exc_type.__name__}: {error!r}"
    assert int(error.code) == code, (error.code, error.error_type, error.message)
    assert error.error_type == name, (error.code, error.error_type, error.message)
    assert isinstance(error.message, str) and error.message
    return error


def assert_rate_limit_headers(headers):
    """The four RateLimit headers, present and sensible (any mapping of header names)."""
    lower = {k.lower(): v for k, v in headers.items()}
    for name in ("limit", "remaining", "reset", "policy"):
        assert f"ratelimit-{name}" in lower, f"ratelimit-{name} header missing: {sorted(lower)}"
    limit = lower["ratelimit-limit"]
    remaining = lower["ratelimit-remaining"]
    reset = lower["ratelimit-reset"]
    policy = lower["ratelimit-policy"]
    assert limit.isdigit() and int(limit) > 0
    assert remaining.isdigit() and int(remaining) <= int(limit)
    assert reset.isdigit()
    assert re.match(r"^\d+;w=\d+", policy), policy
    assert policy.split(";")[0] == limit, (policy, limit)


def verify_without_dns(domain_id):
    """Marks a domain verified without DNS: `POST /domains/{id}/verify` with
    `{"skip_dns": true}`, which only the operator's key (the suite's) may send. The SDK's
    `Domains.verify()` sends `{}`, so this one goes raw."""
    response = raw("POST", f"/domains/{domain_id}/verify", json={"skip_dns": True})
    assert response.status_code == 200, response.text
    assert response.json() == {"object": "domain", "id": domain_id}


def parse_timestamp(text):
    """Parses a Resend-style timestamp (`2026-11-22 09:00:00.123000+00`) into an aware
    datetime."""
    assert TIMESTAMP_RE.match(text), text
    return datetime.fromisoformat(text[:-3].replace(" ", "T") + "+00:00")
