"""Applies compat/openapi/overlay.yaml (an OpenAPI Overlay 1.0 document) to Resend's OpenAPI
document before the contract test reads it.

Every action must say why in `description` and where the fact comes from in `x-source`
(recorded traffic, an SDK's type, Resend's docs): the overlay records where Resend's servers
differ from Resend's own document, never where herald does. Every target must match
something, so an overlay that no longer fits the document fails loudly instead of doing
nothing. Targets are written in the subset of JSONPath (RFC 9535) that the Rust tests'
reader also understands: `$`, then `.name` or `['name']` segments, no wildcards or filters.
"""

import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DOCUMENT = HERE / "resend-openapi.yaml"
OVERLAY = HERE / "overlay.yaml"

_SEGMENT = re.compile(r"\.([^.\[]+)|\['([^']*)'\]")


class OverlayError(Exception):
    """The overlay does not fit the document, or an action lacks its reason or source."""


def path_segments(target):
    """The names a target selects, one per segment; refuses anything outside the subset."""
    if not target.startswith("$"):
        raise OverlayError(f"target {target!r} does not start with $")
    names, position = [], 1
    while position < len(target):
        match = _SEGMENT.match(target, position)
        if match is None:
            raise OverlayError(f"target {target!r}: only .name and ['name'] segments are supported")
        names.append(match.group(1) if match.group(1) is not None else match.group(2))
        position = match.end()
    return names


def merge(target, update):
    """Overlay 1.0's update: objects merge recursively, arrays are appended to, anything
    else is replaced."""
    for key, value in update.items():
        if isinstance(target.get(key), dict) and isinstance(value, dict):
            merge(target[key], value)
        elif isinstance(target.get(key), list) and isinstance(value, list):
            target[key].extend(value)
        else:
            target[key] = value


def apply(document, overlay):
    """Applies every action of `overlay` to `document` in place; returns the actions."""
    if str(overlay.get("overlay", "")).split(".")[0] != "1":
        raise OverlayError("the overlay must declare `overlay: 1.x`")
    actions = overlay.get("actions") or []
    for number, action in enumerate(actions, 1):
        where = f"action {number} ({action.get('target')})"
        for field in ("target", "description", "x-source"):
            if not str(action.get(field) or "").strip():
                raise OverlayError(f"{where} has no `{field}`")
        if ("update" in action) == bool(action.get("remove")):
            raise OverlayError(f"{where} must have exactly one of `update` and `remove: true`")
        names = path_segments(action["target"])
        parent, node = None, document
        for name in names:
            if not isinstance(node, dict) or name not in node:
                raise OverlayError(f"{where} matches nothing in the document (no {name!r})")
            parent, node = node, node[name]
        if action.get("remove"):
            if parent is None:
                raise OverlayError(f"{where} would remove the whole document")
            del parent[names[-1]]
        elif isinstance(node, dict) and isinstance(action["update"], dict):
            merge(node, action["update"])
        else:
            raise OverlayError(f"{where}: an update applies to an object")
    return actions


def load():
    """Resend's document with the overlay applied, and the overlay's actions."""
    document = yaml.safe_load(DOCUMENT.read_text())
    actions = apply(document, yaml.safe_load(OVERLAY.read_text()))
    return document, actions


if __name__ == "__main__":
    # `python overlay.py` prints each change with its source; `--write FILE` also writes the
    # document as the contract test reads it.
    document, actions = load()
    for action in actions:
        print(f"{action['target']}: {action['description'].strip()} [{action['x-source'].strip()}]")
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        Path(sys.argv[2]).write_text(yaml.safe_dump(document, sort_keys=False))
