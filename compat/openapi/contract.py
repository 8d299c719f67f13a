"""Resend's OpenAPI document as a contract test against a running herald.

Usage: RESEND_BASE_URL=http://127.0.0.1:PORT RESEND_API_KEY=<operator key> \
       python compat/openapi/contract.py [--work DIR]

1. Prepares the server the way a user of the document would find Resend: the document's
   example senders (`resend.dev`, `example.com`) on domains verified without DNS (the
   operator's key may), a key of the test's own and a spare, and one resource of each
   kind, whose ids schemathesis uses for half of the requests that take an id.
2. Prints every operation it leaves out (exclusions.yaml) with its reason, and checks
   each still answers `404 not_found`.
3. Runs schemathesis over every other operation (examples, coverage, fuzzing and stateful
   phases; deterministic; bounded in examples, and in time by --timeout) with three
   checks: no `5xx`, every `2xx` body valid under the document's schema (with the overlay
   applied, see overlay.py), content types as documented.
4. Checks the server is still healthy, and says whether the spare key had to take over.

The server must be the test's own: generated requests create, change and delete its
resources freely (all but the keys and domains this script made or found).
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import requests
import yaml

HERE = Path(__file__).resolve().parent
CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance"
PHASES = "examples,coverage,fuzzing,stateful"
# The document's own example senders, so that its example requests can succeed.
SENDING_DOMAINS = ("resend.dev", "example.com")


class Api:
    """Raw requests to herald with one key."""

    def __init__(self, base, key):
        self.base, self.key = base.rstrip("/"), key

    def call(self, method, path, body=None, expect=None):
        response = requests.request(
            method,
            f"{self.base}{path}",
            headers={"Authorization": f"Bearer {self.key}", "User-Agent": "herald-contract"},
            json=body,
            timeout=30,
        )
        if expect is not None and response.status_code != expect:
            raise SystemExit(f"contract: {method} {path} answered {response.status_code}, not {expect}: {response.text}")
        return response


def prepare(api):
    """Makes the sending domains and keys; returns the ids generated requests must leave
    alone, the test's key and the spare."""
    protected = {key["id"] for key in api.call("GET", "/api-keys", expect=200).json()["data"]}
    keys = []
    for role in ("contract", "spare"):
        created = api.call(
            "POST", "/api-keys", {"name": f"{role}-{secrets.token_hex(4)}", "permission": "full_access"}, expect=201
        ).json()
        protected.add(created["id"])
        keys.append(created["token"])
    existing = {d["name"]: d["id"] for d in api.call("GET", "/domains", expect=200).json()["data"]}
    for name in SENDING_DOMAINS:
        domain_id = existing.get(name) or api.call("POST", "/domains", {"name": name}, expect=201).json()["id"]
        api.call("POST", f"/domains/{domain_id}/verify", {"skip_dns": True}, expect=200)
        status = api.call("GET", f"/domains/{domain_id}", expect=200).json()["status"]
        if status != "verified":
            raise SystemExit(f"contract: {name} is {status} after a verification without DNS")
        protected.add(domain_id)
    return protected, keys[0], keys[1]


def seed(api):
    """One resource of each kind, for the operations that take an id: schemathesis picks
    their ids half of the time (and generates the rest), so that those operations answer
    `2xx` bodies to check, not only `404`s. Returns (dictionaries, parameter bindings):
    the path parameters that name one kind everywhere are bound globally, `{id}` per path."""
    def created(path, body, status=201):
        return api.call("POST", path, body, expect=status).json()

    tag = secrets.token_hex(4)
    sender = "Acme <onboarding@resend.dev>"
    sent = created("/emails", {
        "from": sender, "to": ["delivered@resend.dev"], "cc": ["cc@example.com"],
        "subject": "Contract", "html": "<p>Hello</p>", "text": "Hello",
        "tags": [{"name": "kind", "value": "contract"}],
    }, 200)
    scheduled = created("/emails", {
        "from": sender, "to": "delivered@resend.dev", "subject": "Later", "html": "<p>Later</p>",
        "scheduled_at": "in 2 days",
    }, 200)
    domain = created("/domains", {"name": f"contract-{tag}.example.com"})
    key = created("/api-keys", {"name": f"contract-{tag}", "permission": "sending_access"})
    segment = created("/segments", {"name": f"contract-{tag}"})
    topic = created("/topics", {"name": f"contract-{tag}", "default_subscription": "opt_in"})
    prop = created("/contact-properties", {"key": f"contract_{tag}", "type": "string"})
    address = f"contract-{tag}@example.com"
    contact = created("/contacts", {"email": address, "segments": [{"id": segment["id"]}]})
    template = created("/templates", {"name": f"contract-{tag}", "html": "<p>Hi {{{NAME|there}}}</p>", "alias": f"contract-{tag}"})
    api.call("POST", f"/templates/{template['id']}/publish", expect=200)
    broadcast = created("/broadcasts", {"segment_id": segment["id"], "from": sender, "subject": "News", "html": "<p>News</p>"})
    webhook = created("/webhooks", {"endpoint": "https://93.184.216.34/contract", "events": ["email.sent"]})
    suppression = created("/suppressions", {"email": f"suppressed-{tag}@example.com"})
    imported = requests.post(
        f"{api.base}/contacts/imports",
        headers={"Authorization": f"Bearer {api.key}", "User-Agent": "herald-contract"},
        files={"file": ("contacts.csv", f"email,first_name\nimported-{tag}@example.com,Ann\n", "text/csv")},
        timeout=30,
    )
    if imported.status_code not in (200, 201, 202):
        raise SystemExit(f"contract: POST /contacts/imports answered {imported.status_code}: {imported.text}")
    logs = api.call("GET", "/logs?limit=1", expect=200).json()["data"]

    dictionaries = {
        "emails": [sent["id"], scheduled["id"]],
        "domains": [domain["id"]],
        "api_keys": [key["id"]],
        "webhooks": [webhook["id"]],
        "contacts": [contact["id"], address],
        "segments": [segment["id"]],
        "topics": [topic["id"]],
        "properties": [prop["id"]],
        "templates": [template["id"], f"contract-{tag}"],
        "broadcasts": [broadcast["id"]],
        "imports": [imported.json()["id"]],
        "logs": [log["id"] for log in logs],
        "suppressions": [suppression["id"], f"suppressed-{tag}@example.com"],
    }
    global_bindings = {
        "email_id": "emails", "domain_id": "domains", "api_key_id": "api_keys", "webhook_id": "webhooks",
        "contact_id": "contacts", "segment_id": "segments", "log_id": "logs", "suppression": "suppressions",
    }
    by_path = {
        r"^/templates/\{id\}": "templates", r"^/(audiences|segments)/\{id\}": "segments",
        r"^/contacts/imports/\{id\}": "imports", r"^/contacts/\{id\}": "contacts",
        r"^/broadcasts/\{id\}": "broadcasts", r"^/topics/\{id\}": "topics",
        r"^/contact-properties/\{id\}": "properties",
    }
    return dictionaries, global_bindings, by_path


def config_file(path, dictionaries, global_bindings, by_path):
    """Writes schemathesis' configuration: the seeded ids as dictionaries, each bound with
    probability one half."""
    def binding(name):
        return f'{{ dictionary = "{name}", probability = 0.5 }}'

    lines = []
    for name, values in dictionaries.items():
        if values:
            lines += [f"[dictionaries.{name}]", f"values = {json.dumps(values)}"]
    lines.append("[parameters]")
    lines += [f'"path.{param}" = {binding(name)}' for param, name in global_bindings.items() if dictionaries[name]]
    for regex, name in by_path.items():
        lines += ["[[operations]]", f"include-path-regex = {json.dumps(regex)}", f'parameters = {{ "path.id" = {binding(name)} }}']
    path.write_text("\n".join(lines) + "\n")


def exclusions(api, document):
    """The excluded operation ids; fails when herald answers one of them."""
    listed = yaml.safe_load((HERE / "exclusions.yaml").read_text())
    operations = {
        op["operationId"]: (method, path)
        for path, methods in document["paths"].items()
        for method, op in methods.items()
        if isinstance(op, dict) and "operationId" in op
    }
    print(f"contract: {len(listed)} of {len(operations)} operations left out:", file=sys.stderr)
    learned = []
    for entry in listed:
        operation_id, reason = entry["operationId"], entry["reason"]
        if operation_id not in operations:
            raise SystemExit(f"contract: exclusions.yaml names {operation_id}, which the document does not have")
        method, path = operations[operation_id]
        print(f"  {operation_id} ({method.upper()} {path}): {reason}", file=sys.stderr)
        concrete = path
        while "{" in concrete:
            start, end = concrete.index("{"), concrete.index("}")
            concrete = concrete[:start] + str(uuid.uuid4()) + concrete[end + 1 :]
        response = api.call(method.upper(), concrete, {} if method in ("post", "patch") else None)
        name = response.json().get("name") if "json" in response.headers.get("content-type", "") else None
        if response.status_code != 404 or name != "not_found":
            learned.append(f"{operation_id} answers {response.status_code} {name}")
    if learned:
        raise SystemExit(
            "contract: herald now implements excluded operations; take them out of exclusions.yaml: "
            + "; ".join(learned)
        )
    return [entry["operationId"] for entry in listed]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", help="schemathesis' working folder (reports); a temporary one by default")
    parser.add_argument("--max-examples", type=int, default=int(os.environ.get("HERALD_CONTRACT_EXAMPLES", "50")))
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--timeout", type=int, default=900, help="seconds the schemathesis run may take")
    args = parser.parse_args()
    base, operator_key = os.environ["RESEND_BASE_URL"], os.environ["RESEND_API_KEY"]
    api = Api(base, operator_key)
    document = yaml.safe_load((HERE / "resend-openapi.yaml").read_text())

    protected, key, spare = prepare(api)
    excluded = exclusions(api, document)
    work = Path(args.work or tempfile.mkdtemp(prefix="herald-contract-"))
    work.mkdir(parents=True, exist_ok=True)
    config_file(work / "schemathesis.toml", *seed(Api(base, key)))
    spare_used = work / "spare-used"
    spare_used.unlink(missing_ok=True)
    env = dict(
        os.environ,
        SCHEMATHESIS_HOOKS=str(HERE / "hooks.py"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        HERALD_CONTRACT_PROTECTED=",".join(sorted(protected)),
        HERALD_CONTRACT_SPARE_KEY=spare,
        HERALD_CONTRACT_SPARE_USED=str(spare_used),
    )
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(work / "schemathesis.toml"),
        "run", str(HERE / "resend-openapi.yaml"),
        "--url", base,
        "--header", f"Authorization: Bearer {key}",
        "--header", "User-Agent: herald-contract",
        "--checks", CHECKS,
        "--phases", PHASES,
        "--max-examples", str(args.max_examples),
        "--seed", str(args.seed),
        "--generation-deterministic",
        "--generation-with-security-parameters", "false",
        "--workers", "2",
        "--request-timeout", "30",
        "--continue-on-failure",
        "--suppress-health-check", "all",
        "--report", "junit",
        "--report-dir", str(work / "report"),
        "--no-color",
    ]  # fmt: skip
    for operation_id in excluded:
        command += ["--exclude-operation-id", operation_id]
    print(f"contract: schemathesis over {base} (seed {args.seed}, {args.max_examples} examples an operation)", file=sys.stderr)
    try:
        status = subprocess.run(command, env=env, cwd=work, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        raise SystemExit(f"contract: schemathesis did not finish within {args.timeout} s")
    if spare_used.exists():
        print(f"contract: the test's key stopped working at {spare_used.read_text().strip()}; the spare took over", file=sys.stderr)
    health = requests.get(f"{base.rstrip('/')}/healthz", timeout=10)
    if health.status_code != 200:
        raise SystemExit(f"contract: herald's /healthz answers {health.status_code} after the run")
    if status != 0:
        raise SystemExit(f"contract: schemathesis found failures (exit {status}); the JUnit report is in {work / 'report'}")
    print("contract: every operation conforms", file=sys.stderr)


if __name__ == "__main__":
    main()
