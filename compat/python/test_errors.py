"""Errors and headers as the official Python SDK (PyPI `resend`) sees them: non-2xx answers
raise resend.exceptions.* carrying the status (`code`), the Resend error name
(`error_type`), the message and the response headers."""

import secrets

import pytest
import resend
from resend.exceptions import (InvalidApiKeyError, MissingApiKeyError,
                               MissingRequiredFieldsError, ResendError,
                               ValidationError)

from conftest import (assert_error, assert_rate_limit_headers, key_name, random_id, raw,
                      unique_domain, using_key)


def test_wrong_api_key_gets_403_invalid_api_key():
    with using_key(f"re_{secrets.token_hex(16)}"):
        for call in (
            resend.Domains.list,
            resend.ApiKeys.list,
            lambda: resend.Domains.create({"name": unique_domain("wrong-key")}),
        ):
            with pytest.raises(ResendError) as excinfo:
                call()
            assert_error(excinfo, 403, "invalid_api_key", InvalidApiKeyError)


def test_missing_api_key_gets_401_missing_api_key():
    # The SDK sends `Authorization: Bearer <key>` whatever the key; an empty one is the
    # closest it gets to sending none.
    with using_key(""):
        with pytest.raises(ResendError) as excinfo:
            resend.Domains.list()
        assert_error(excinfo, 401, "missing_api_key", MissingApiKeyError)
    for path in ("/domains", "/api-keys"):
        response = raw("GET", path, key=None)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("application/json")
        body = response.json()
        assert body["statusCode"] == 401
        assert body["name"] == "missing_api_key"
        assert isinstance(body["message"], str) and body["message"]


def test_unknown_ids_get_404_not_found():
    unknown = random_id()
    for call in (
        lambda: resend.Domains.get(unknown),
        lambda: resend.Domains.update({"id": unknown, "open_tracking": True}),
        lambda: resend.Domains.verify(unknown),
        lambda: resend.Domains.remove(unknown),
        lambda: resend.ApiKeys.remove(unknown),
    ):
        with pytest.raises(ResendError) as excinfo:
            call()
        assert_error(excinfo, 404, "not_found")


def test_create_domain_without_name_gets_422_missing_required_field():
    for params in ({}, {"name": ""}):
        with pytest.raises(ResendError) as excinfo:
            resend.Domains.create(params)  # type: ignore[arg-type]
        assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)


def test_create_domain_with_invalid_name_gets_422_validation_error():
    for name in ("not a domain", "localhost"):
        with pytest.raises(ResendError) as excinfo:
            resend.Domains.create({"name": name})
        assert_error(excinfo, 422, "validation_error", ValidationError)


def test_creating_the_same_domain_twice_gets_422_validation_error():
    name = unique_domain("twice")
    first = resend.Domains.create({"name": name})
    with pytest.raises(ResendError) as excinfo:
        resend.Domains.create({"name": name})
    error = assert_error(excinfo, 422, "validation_error", ValidationError)
    assert name in error.message
    assert resend.Domains.get(first["id"])["name"] == name


def test_create_api_key_without_name_gets_422_missing_required_field():
    for params in ({}, {"name": "   "}):
        with pytest.raises(ResendError) as excinfo:
            resend.ApiKeys.create(params)  # type: ignore[arg-type]
        assert_error(excinfo, 422, "missing_required_field", MissingRequiredFieldsError)


def test_create_full_access_key_with_domain_gets_422_validation_error():
    domain = resend.Domains.create({"name": unique_domain("full-with-domain")})
    with pytest.raises(ResendError) as excinfo:
        resend.ApiKeys.create({"name": key_name("full-with-domain"), "permission": "full_access", "domain_id": domain["id"]})
    assert_error(excinfo, 422, "validation_error", ValidationError)


def test_responses_carry_the_rate_limit_headers():
    listed = raw("GET", "/domains")
    assert listed.status_code == 200
    assert listed.headers["content-type"].startswith("application/json")
    assert_rate_limit_headers(listed.headers)
    assert listed.headers["ratelimit-policy"] == "1000;w=1", "the configured 1000/s"

    missing = raw("GET", f"/domains/{random_id()}")
    assert missing.status_code == 404
    assert_rate_limit_headers(missing.headers)

    created = raw("POST", "/api-keys", json={"name": key_name("headers")})
    assert created.status_code == 201
    assert_rate_limit_headers(created.headers)
    raw("DELETE", f"/api-keys/{created.json()['id']}", json={})

    # The SDK hands the headers back too: on responses as `http_headers`, on errors as `headers`.
    assert_rate_limit_headers(resend.Domains.list()["http_headers"])
    with pytest.raises(ResendError) as excinfo:
        resend.Domains.get(random_id())
    assert_rate_limit_headers(assert_error(excinfo, 404, "not_found").headers)

