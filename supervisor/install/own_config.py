"""donebell's own files touched by install: the config (``chain_notify``) and the install record.

The config is JSON that may hold the ntfy token: it is edited span-preserving (other keys and
their formatting stay), always written 0600 in a 0700 folder, and its diff is printed with the
secrets redacted. The install record (``install-record.json`` beside it, also 0600) remembers what
cannot be recognized from the files alone: which agent files install created (uninstall deletes
them again) and the exact TOML text of the user's previous ``notify`` (restored byte for byte).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.shared.config.model import DEFAULT_SERVER, random_topic
from donebell.workers.kit.install.edits import EditError, FileChange, read_text, split_bom, target_of
from donebell.workers.kit.install.jsonedit import JsonDocument, JsonEditError
from donebell.workers.kit.install.plans import KEEP

RECORD_NAME = "install-record.json"
RECORD_SCHEMA = 1


def new_config_text(server: str = DEFAULT_SERVER) -> str:
    """A fresh config like ``donebell config init`` writes: server + unguessable topics."""
    return json.dumps({"server": server, "topic": random_topic(), "wake_topic": random_topic()}, indent=2) + "\n"


def parse_config_document(path: Path, text: str) -> tuple[str, JsonDocument]:
    bom, body = split_bom(text)
    try:
        doc = JsonDocument(body)
    except JsonEditError as exc:
        raise EditError(f"{path}: not valid JSON ({exc}); fix it, nothing was changed") from None
    if doc.root.kind != "object":
        raise EditError(f"{path}: the top level must be a JSON object; nothing was changed")
    return bom, doc


def current_chain(path: Path) -> list[str] | None:
    """``chain_notify`` from the config file itself (not the environment), if it is a string list."""
    text = read_text(target_of(path))
    if text is None:
        return None
    _, doc = parse_config_document(path, text)
    value = doc.value(("chain_notify",))
    return value if isinstance(value, list) and value and all(isinstance(v, str) for v in value) else None


def plan_config(path: Path, *, chain: Any = KEEP, create: bool = True) -> FileChange:
    """The config change: created if missing (when ``create``), ``chain_notify`` set/removed."""
    target = target_of(path)
    old = read_text(target)
    text = old if old is not None else (new_config_text() if create else None)
    if text is not None and chain is not KEEP:
        bom, doc = parse_config_document(target, text)
        present = doc.find(("chain_notify",)) is not None
        if chain is None and present:
            doc.remove(("chain_notify",))
        elif chain is not None and not present:
            doc.add_member((), "chain_notify", chain)
        elif chain is not None and doc.value(("chain_notify",)) != chain:
            doc.replace(("chain_notify",), chain)
        text = bom + doc.text
    return FileChange(target, old, text, "donebell config", new_file_mode=0o600, force_mode=0o600, secret=True)


def record_path(config_file: Path) -> Path:
    return config_file.parent / RECORD_NAME


def read_record(config_file: Path) -> dict[str, Any]:
    """The install record, or an empty one if it is missing or unreadable (uninstall then
    falls back to recognizing entries by their shape)."""
    try:
        data = json.loads(record_path(config_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"schema": RECORD_SCHEMA}
    return data if isinstance(data, dict) else {"schema": RECORD_SCHEMA}


def plan_record(config_file: Path, record: dict[str, Any]) -> FileChange:
    """Write the record, or delete it once it holds nothing but its schema."""
    path = record_path(config_file)
    old = read_text(path)
    meaningful = {k: v for k, v in record.items() if k != "schema" and v}
    new = json.dumps({"schema": RECORD_SCHEMA, **meaningful}, indent=2) + "\n" if meaningful else None
    if old is not None and new is not None and _same_json(old, new):
        new = old  # same content: not a change (no rewrite)
    return FileChange(path, old, new, "install record", new_file_mode=0o600, force_mode=0o600, backup=False)


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False
