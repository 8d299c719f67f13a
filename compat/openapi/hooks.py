"""schemathesis hooks for the contract test (loaded through SCHEMATHESIS_HOOKS by
contract.py, which sets the environment they read).

- The overlay is applied to the document as schemathesis loads it.
- The test's own API key, its spare and the verified sending domains are never deleted
  (nor the domains verified again, which would make them pending) by generated requests:
  a stateful run follows links from `GET /api-keys` and `GET /domains` into `DELETE`, and
  once the key is gone every later request would be a `403` that passes every check
  while testing nothing.
- Should the key still stop working (a generated request found another way to revoke it),
  the spare takes over for the rest of the run, and contract.py reports that it did.
"""

import os

import schemathesis

import overlay

PROTECTED = frozenset(filter(None, os.environ.get("HERALD_CONTRACT_PROTECTED", "").split(",")))
SPARE_KEY = os.environ.get("HERALD_CONTRACT_SPARE_KEY", "")
SPARE_USED_FILE = os.environ.get("HERALD_CONTRACT_SPARE_USED", "")
_state = {"spare": False}


@schemathesis.hook
def before_load_schema(context, raw_schema):
    document, _ = overlay.load()
    raw_schema.clear()
    raw_schema.update(document)


@schemathesis.hook
def filter_case(context, case):
    if case.method.upper() != "DELETE" and not case.path.endswith("/verify"):
        return True
    return not any(str(value) in PROTECTED for value in (case.path_parameters or {}).values())


@schemathesis.hook
def before_call(context, case, kwargs):
    if _state["spare"]:
        headers = dict(kwargs.get("headers") or {})
        headers["Authorization"] = f"Bearer {SPARE_KEY}"
        kwargs["headers"] = headers


@schemathesis.hook
def after_call(context, case, response):
    if response.status_code != 403 or _state["spare"] or not SPARE_KEY:
        return
    try:
        name = response.json().get("name")
    except ValueError:
        return
    # A key that was deleted reads as `403 invalid_api_key`; any other 403 (a sender on
    # an unverified domain) is an answer to the request, not the loss of the key.
    if name == "invalid_api_key":
        _state["spare"] = True
        if SPARE_USED_FILE:
            with open(SPARE_USED_FILE, "w") as f:
                f.write(f"{case.method} {case.formatted_path}\n")
